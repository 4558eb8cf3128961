//! Group commit of single observations. Every write to a study holds the study's lock until its transaction is
//! durable, so with one transaction per request concurrent observations of one study queue behind each other's
//! WAL flush (a few milliseconds each on an ordinary disk). Instead, concurrent `POST …/observations` requests of
//! one study are queued in this process, and one task per study stores whatever is queued in one study
//! transaction and answers every request after the commit.
//!
//! Nothing a client can see changes: each request is checked, stored and answered exactly as on its own (its own
//! 201, 409 or 422; idempotency keys are read and written inside the same transaction, so a retry racing its
//! original in one group is replayed); a 201 still means committed; the database lock still serialises groups
//! from several server processes. A storage failure fails the whole group (nothing of it is stored).

use std::collections::HashMap;
use std::sync::Mutex;

use axum::http::StatusCode;
use axum::response::Response;
use chrono::Utc;
use tokio::sync::oneshot;
use uuid::Uuid;

use super::tell::{Prepared, apply, count, prepare};
use super::views::observation_resource;
use super::{engine_study, expire_open, json_response, lock, status_for, to_json};
use crate::error::{ApiError, ApiResult};
use crate::idempotency::Idempotency;
use crate::resources::CreateObservation;
use crate::state::AppState;
use crate::store::StoreError;

/// Most observations stored in one transaction.
const MAX_GROUP: usize = 256;

/// One queued request.
struct Queued {
    body: CreateObservation,
    idem: Option<Idempotency>,
    reply: oneshot::Sender<ApiResult<Response>>,
}

/// Requests waiting per study; a study has an entry exactly while its writer task runs.
#[derive(Default)]
pub struct ObservationQueue {
    studies: Mutex<HashMap<Uuid, Vec<Queued>>>,
}

impl std::fmt::Debug for ObservationQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObservationQueue").finish_non_exhaustive()
    }
}

impl ObservationQueue {
    /// Stores one observation (in a group with whatever else is queued for the study) and returns its response.
    pub async fn submit(
        state: &AppState,
        study_id: Uuid,
        body: CreateObservation,
        idem: Option<Idempotency>,
    ) -> ApiResult<Response> {
        let (reply, answer) = oneshot::channel();
        let start_writer = {
            let mut studies = state.observations.studies.lock().map_err(|e| ApiError::internal("queue lock", e))?;
            match studies.get_mut(&study_id) {
                Some(queue) => {
                    queue.push(Queued { body, idem, reply });
                    false
                }
                None => {
                    studies.insert(study_id, vec![Queued { body, idem, reply }]);
                    true
                }
            }
        };
        if start_writer {
            // A task of its own: a client hanging up does not abort a group that others wait for.
            tokio::spawn(writer(state.clone(), study_id));
        }
        answer.await.unwrap_or_else(|_| Err(ApiError::internal("storing an observation", "the writer task ended")))
    }
}

/// Removes the study's entry if the writer ends without doing so (a panic), so the next request starts a new one;
/// the queued requests' senders are dropped and they are answered with 500.
struct EntryGuard<'a> {
    state: &'a AppState,
    study_id: Uuid,
    armed: bool,
}

impl Drop for EntryGuard<'_> {
    fn drop(&mut self) {
        if self.armed
            && let Ok(mut studies) = self.state.observations.studies.lock()
        {
            studies.remove(&self.study_id);
        }
    }
}

/// Stores queued groups until the study's queue is empty.
async fn writer(state: AppState, study_id: Uuid) {
    let mut guard = EntryGuard { state: &state, study_id, armed: true };
    loop {
        let group = {
            let Ok(mut studies) = state.observations.studies.lock() else { return };
            let queue = studies.entry(study_id).or_default();
            if queue.is_empty() {
                studies.remove(&study_id);
                guard.armed = false;
                return;
            }
            if queue.len() > MAX_GROUP { queue.drain(..MAX_GROUP).collect() } else { std::mem::take(queue) }
        };
        store_group(&state, study_id, group).await;
    }
}

type Reply = oneshot::Sender<ApiResult<Response>>;

/// A failure that voids the group's transaction: the error and the requests not reached yet.
type Failure = Box<(ApiError, Vec<Reply>)>;

/// Stores one group in one study transaction and answers every request in it: requests that write nothing
/// (replays, client errors) at once, stored ones after the commit.
async fn store_group(state: &AppState, study_id: Uuid, group: Vec<Queued>) {
    let mut stored: Vec<(Reply, serde_json::Value)> = Vec::new();
    match store_in_transaction(state, study_id, group, &mut stored).await {
        Ok(()) => {
            for (reply, body) in stored {
                let _ = reply.send(Ok(json_response(StatusCode::CREATED, &body)));
            }
        }
        Err(failure) => {
            let (e, rest) = *failure;
            for reply in stored.into_iter().map(|(r, _)| r).chain(rest) {
                let _ = reply.send(Err(e.clone()));
            }
        }
    }
}

/// The transaction of one group; stored requests are pushed to `stored`. On a failure that voids the transaction,
/// returns the error and the requests not reached yet (the caller answers them and `stored` with the error).
async fn store_in_transaction(
    state: &AppState,
    study_id: Uuid,
    group: Vec<Queued>,
    stored: &mut Vec<(Reply, serde_json::Value)>,
) -> Result<(), Failure> {
    let replies = |group: Vec<Queued>| group.into_iter().map(|q| q.reply).collect::<Vec<_>>();
    let mut tx = match lock(state, study_id).await {
        Ok(tx) => tx,
        Err(e) => return Err(Box::new((e, replies(group)))),
    };
    let mut study = tx.study().clone();
    let now = Utc::now();
    let archived = study.status.accepts_writes().is_err();
    let engine = if archived {
        None
    } else {
        let setup = async {
            expire_open(&mut tx, now).await?;
            engine_study(&study)
        };
        match setup.await {
            Ok(engine) => Some(engine),
            Err(e) => return Err(Box::new((e, replies(group)))),
        }
    };
    let mut deferred = Vec::new();
    let mut group = group.into_iter();
    while let Some(Queued { body, idem, reply }) = group.next() {
        let fail = |e: ApiError, reply: Reply, group: std::vec::IntoIter<Queued>| {
            let mut left = vec![reply];
            left.extend(group.map(|q| q.reply));
            Err(Box::new((e, left)))
        };
        // Read inside the transaction, so a key used twice in one group is replayed the second time.
        if let Some(idem) = &idem {
            match tx.get_idempotency(idem.scope(), idem.key()).await {
                Ok(Some(row)) => {
                    let _ = reply.send(idem.replay(&row));
                    continue;
                }
                Ok(None) => {}
                Err(e) => return fail(e.into(), reply, group),
            }
        }
        let Some(engine) = &engine else {
            let _ = reply.send(Err(super::archived("observations")));
            continue;
        };
        let prepared: Prepared = match prepare(&mut tx, &study, engine, body, "", now).await {
            Ok(Ok(p)) => p,
            Ok(Err(client_error)) => {
                let _ = reply.send(Err(client_error));
                continue;
            }
            Err(e) => return fail(e.into(), reply, group),
        };
        let body = match to_json(&observation_resource(&prepared.row)) {
            Ok(b) => b,
            Err(e) => return fail(e, reply, group),
        };
        // Plain observations (no suggestion, no key) are inserted together after the loop: nothing later in the
        // group reads them.
        if prepared.completes.is_none() && idem.is_none() {
            count(&mut study, &prepared.row);
            deferred.push(prepared.row);
            stored.push((reply, body));
            continue;
        }
        if let Err(e) = apply(&mut tx, &mut study, &prepared, now).await {
            return fail(e, reply, group);
        }
        if let Some(idem) = &idem
            && let Err(e) = tx.put_idempotency(&idem.record(StatusCode::CREATED, &body)).await
        {
            return fail(e.into(), reply, group);
        }
        stored.push((reply, body));
    }
    if stored.is_empty() {
        return Ok(());
    }
    if let Err(e) = tx.insert_observations(&deferred).await {
        return Err(Box::new((e.into(), Vec::new())));
    }
    study.status = status_for(&study);
    study.updated_at = Utc::now();
    if let Err(e) = tx.update_study(&study).await {
        return Err(Box::new((e.into(), Vec::new())));
    }
    tx.commit().await.map_err(|e| {
        let e = match e {
            StoreError::Conflict(_) => ApiError::conflict("conflict", "a concurrent request changed the study; retry"),
            other => other.into(),
        };
        Box::new((e, Vec::new()))
    })
}
