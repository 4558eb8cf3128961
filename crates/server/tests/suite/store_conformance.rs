//! Store conformance: one set of test bodies written against the [`Store`] and [`StudyTx`] traits, each run on a
//! fresh SQLite file and (when `TEST_DATABASE_URL` is set; otherwise it says it skipped) a fresh Postgres schema.

use crate::common;

use std::future::Future;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use server::domain::{AbandonReason, ObservationExtras, StudyStatus, SuggestionState};
use server::store::{IdempotencyRow, ObservationRow, Page, Store, StoreError, StudyRow, SuggestionRow, connect};
use uuid::Uuid;

/// Removes the test database when the case ends (also when it panics).
enum Cleanup {
    Sqlite(std::path::PathBuf),
    Pg { base: String, schema: String },
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        match self {
            Cleanup::Sqlite(path) => {
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
                }
            }
            Cleanup::Pg { base, schema } => common::drop_schema(base, schema),
        }
    }
}

/// Runs `case` on a migrated store of each backend.
fn on_each_backend<F, Fut>(case: F)
where
    F: Fn(Box<dyn Store>) -> Fut,
    Fut: Future<Output = ()>,
{
    let (sqlite_url, path) = common::fresh_sqlite_url();
    let mut targets = vec![(sqlite_url, Cleanup::Sqlite(path))];
    match common::fresh_postgres_url() {
        Some((url, base, schema)) => targets.push((url, Cleanup::Pg { base, schema })),
        None => eprintln!("store conformance: Postgres skipped (TEST_DATABASE_URL is not set)"),
    }
    for (url, cleanup) in targets {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
        rt.block_on(async {
            let store = connect(&url, 4).await.expect("connect");
            store.migrate().await.expect("migrate");
            store.migrate().await.expect("migrating twice is a no-op");
            case(store).await;
        });
        drop(rt);
        drop(cleanup);
    }
}

fn study_row(name: &str) -> StudyRow {
    let now = Utc::now();
    StudyRow {
        id: Uuid::new_v4(),
        seq: 0,
        name: name.into(),
        status: StudyStatus::Active,
        spec: json!({"parameters": [{"name": "x", "type": "float", "low": 0.0, "high": 1.0}], "seed": 3}),
        budget: Some(json!({"max_observations": 10})),
        suggestion_ttl_seconds: Some(60),
        policy_state: json!({"draws": 0, "nested": {"a": [1, 2.5, "z"]}}),
        n_observations: 0,
        n_suggestions: 0,
        total_cost: 0.0,
        created_at: now,
        updated_at: now,
    }
}

fn suggestion_row(study: Uuid, seq: i64, expires_at: Option<DateTime<Utc>>) -> SuggestionRow {
    SuggestionRow {
        id: Uuid::new_v4(),
        study_id: study,
        seq,
        state: SuggestionState::Open,
        client_id: Some(format!("client-{seq}")),
        body: serde_json::from_value(json!({"assignments": {"x": seq as f64 / 10.0}, "algorithm": "sobol"}))
            .expect("a stored suggestion"),
        created_at: Utc::now(),
        expires_at,
        closed_at: None,
        abandon_reason: None,
    }
}

fn observation_row(study: Uuid, seq: i64, suggestion: Option<Uuid>) -> ObservationRow {
    ObservationRow {
        id: Uuid::new_v4(),
        study_id: study,
        seq,
        suggestion_id: suggestion,
        assignments: json!({"x": 0.125 * seq as f64}),
        value: Some(seq as f64 * 1.5),
        value_stddev: Some(0.01),
        cost: Some(2.0),
        failed: false,
        metadata: Some(json!({"operator": "ada", "seq": seq})),
        extra: ObservationExtras { control_set: Some("cheap".into()), ..ObservationExtras::default() },
        created_at: Utc::now(),
    }
}

/// Timestamps agree to the database's precision (Postgres keeps microseconds).
fn same_time(a: DateTime<Utc>, b: DateTime<Utc>) -> bool {
    (a - b).num_microseconds().is_some_and(|d| d.abs() <= 1)
}

async fn create(store: &dyn Store, row: &StudyRow) -> StudyRow {
    assert!(store.create_study(row, None).await.expect("create").is_none());
    store.get_study(row.id).await.expect("get").expect("the study exists")
}

#[test]
fn studies_are_created_fetched_and_listed_in_pages() {
    on_each_backend(|store| async move {
        let b = store.backend();
        let mut made = Vec::new();
        for i in 0..5 {
            let row = study_row(&format!("s{i}"));
            let got = create(&*store, &row).await;
            assert_eq!(got.id, row.id, "{b}");
            assert_eq!(got.name, row.name, "{b}");
            assert_eq!(got.status, StudyStatus::Active, "{b}");
            assert_eq!(got.spec, row.spec, "{b}");
            assert_eq!(got.budget, row.budget, "{b}");
            assert_eq!(got.suggestion_ttl_seconds, Some(60), "{b}");
            assert_eq!(got.policy_state, row.policy_state, "{b}");
            assert_eq!((got.n_observations, got.n_suggestions, got.total_cost), (0, 0, 0.0), "{b}");
            assert!(same_time(got.created_at, row.created_at) && same_time(got.updated_at, row.updated_at), "{b}");
            made.push(got);
        }
        // Sequence numbers are assigned by the database, increasing in creation order.
        assert!(made.windows(2).all(|w| w[0].seq < w[1].seq), "{b}");
        // A study without budget or ttl round-trips its nulls.
        let mut bare = study_row("bare");
        bare.budget = None;
        bare.suggestion_ttl_seconds = None;
        let got = create(&*store, &bare).await;
        assert_eq!((got.budget, got.suggestion_ttl_seconds), (None, None), "{b}");
        // Paging: seq > after, at most limit, in order.
        let mut names = Vec::new();
        let mut after = 0;
        loop {
            let page = store.list_studies(Page { after, limit: 2 }).await.expect("list");
            assert!(page.len() <= 2, "{b}");
            names.extend(page.iter().map(|s| s.name.clone()));
            match page.last() {
                Some(last) if page.len() == 2 => after = last.seq,
                _ => break,
            }
        }
        assert_eq!(names, ["s0", "s1", "s2", "s3", "s4", "bare"], "{b}");
        assert_eq!(store.list_studies(Page::ALL).await.expect("list").len(), 6, "{b}");
        let tail = store.list_studies(Page { after: made[3].seq, limit: 100 }).await.expect("list");
        assert_eq!(tail.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["s4", "bare"], "{b}");
        assert!(store.get_study(Uuid::new_v4()).await.expect("get").is_none(), "{b}");
        store.ping().await.expect("ping");
    });
}

#[test]
fn creating_a_study_with_a_used_idempotency_key_returns_the_stored_record() {
    on_each_backend(|store| async move {
        let b = store.backend();
        let idem = IdempotencyRow {
            scope: "POST /v1/studies".into(),
            key: "k-1".into(),
            request_hash: "h1".into(),
            status: 201,
            body: json!({"id": "first"}),
            created_at: Utc::now(),
        };
        let first = study_row("first");
        assert!(store.create_study(&first, Some(&idem)).await.expect("create").is_none(), "{b}");
        let second = study_row("second");
        let mut again = idem.clone();
        again.body = json!({"id": "second"});
        let replay = store.create_study(&second, Some(&again)).await.expect("create").expect("the stored record");
        assert_eq!(
            (replay.status, replay.body, replay.request_hash),
            (201, json!({"id": "first"}), "h1".into()),
            "{b}"
        );
        assert!(store.get_study(second.id).await.expect("get").is_none(), "{b}: the second study was not stored");
        assert_eq!(store.list_studies(Page::ALL).await.expect("list").len(), 1, "{b}");
        let got = store.get_idempotency("POST /v1/studies", "k-1").await.expect("get").expect("stored");
        assert_eq!(got.body, json!({"id": "first"}), "{b}");
        assert!(store.get_idempotency("POST /v1/studies", "k-2").await.expect("get").is_none(), "{b}");
        assert!(store.get_idempotency("POST /other", "k-1").await.expect("get").is_none(), "{b}: keys are scoped");
    });
}

#[test]
fn suggestions_are_inserted_closed_listed_by_shown_state_and_paged() {
    on_each_backend(|store| async move {
        let b = store.backend();
        let study = create(&*store, &study_row("sug")).await;
        let other = create(&*store, &study_row("other")).await;
        let now = Utc::now();
        let past = now - chrono::Duration::seconds(5);
        let future = now + chrono::Duration::seconds(3600);
        // 1: no expiry, 2: expired, 3: expires later, 4: to be completed, 5: to be abandoned.
        let rows: Vec<SuggestionRow> = [None, Some(past), Some(future), None, None]
            .into_iter()
            .enumerate()
            .map(|(i, e)| suggestion_row(study.id, i as i64 + 1, e))
            .collect();
        let mut tx = store.lock_study(study.id).await.expect("lock").expect("exists");
        for r in &rows {
            tx.insert_suggestion(r).await.expect("insert");
        }
        assert_eq!(tx.open_suggestions().await.expect("open").len(), 5, "{b}: stored state, expiry not applied");
        tx.close_suggestion(rows[3].id, SuggestionState::Completed, now, None).await.expect("close");
        tx.close_suggestion(rows[4].id, SuggestionState::Abandoned, now, Some(AbandonReason::Deleted))
            .await
            .expect("close");
        let open: Vec<Uuid> = tx.open_suggestions().await.expect("open").iter().map(|s| s.id).collect();
        assert_eq!(open, [rows[0].id, rows[1].id, rows[2].id], "{b}");
        let got = tx.suggestion(rows[4].id).await.expect("get").expect("exists");
        assert_eq!((got.state, got.abandon_reason), (SuggestionState::Abandoned, Some(AbandonReason::Deleted)), "{b}");
        assert!(tx.suggestion(Uuid::new_v4()).await.expect("get").is_none(), "{b}");
        tx.commit().await.expect("commit");

        let got = store.get_suggestion(study.id, rows[2].id).await.expect("get").expect("exists");
        assert_eq!(got.body, rows[2].body, "{b}");
        assert_eq!(got.client_id.as_deref(), Some("client-3"), "{b}");
        assert!(got.expires_at.is_some_and(|t| same_time(t, future)), "{b}");
        let done = store.get_suggestion(study.id, rows[3].id).await.expect("get").expect("exists");
        assert_eq!(done.state, SuggestionState::Completed, "{b}");
        assert!(done.closed_at.is_some_and(|t| same_time(t, now)), "{b}");
        assert!(store.get_suggestion(other.id, rows[0].id).await.expect("get").is_none(), "{b}: other study");

        let sid = study.id;
        let list = |state: Option<&'static str>, page: Page| {
            let store = &store;
            async move {
                let state = state.map(|s| s.parse::<SuggestionState>().expect("a state"));
                let rows = store.list_suggestions(sid, state, now, page).await.expect("list");
                rows.iter().map(|s| s.seq).collect::<Vec<_>>()
            }
        };
        assert_eq!(list(None, Page::ALL).await, [1, 2, 3, 4, 5], "{b}");
        // The state clients see at `now`: the expired open one (2) is abandoned, not open.
        assert_eq!(list(Some("open"), Page::ALL).await, [1, 3], "{b}");
        assert_eq!(list(Some("abandoned"), Page::ALL).await, [2, 5], "{b}");
        assert_eq!(list(Some("completed"), Page::ALL).await, [4], "{b}");
        // The filter applies before the limit.
        assert_eq!(list(Some("abandoned"), Page { after: 0, limit: 1 }).await, [2], "{b}");
        assert_eq!(list(Some("abandoned"), Page { after: 2, limit: 1 }).await, [5], "{b}");
        assert_eq!(list(Some("completed"), Page { after: 0, limit: 1 }).await, [4], "{b}");
        assert_eq!(list(Some("open"), Page { after: 1, limit: 1 }).await, [3], "{b}");
        assert_eq!(list(None, Page { after: 3, limit: 10 }).await, [4, 5], "{b}");
        // Later, 3 has expired as well.
        let later = future + chrono::Duration::seconds(1);
        let open_later =
            store.list_suggestions(study.id, Some(SuggestionState::Open), later, Page::ALL).await.expect("list");
        assert_eq!(open_later.iter().map(|s| s.seq).collect::<Vec<_>>(), [1], "{b}");
        assert!(store.list_suggestions(other.id, None, now, Page::ALL).await.expect("list").is_empty(), "{b}");
    });
}

#[test]
fn observations_are_inserted_once_per_suggestion_listed_paged_and_fetched() {
    on_each_backend(|store| async move {
        let b = store.backend();
        let study = create(&*store, &study_row("obs")).await;
        let other = create(&*store, &study_row("other")).await;
        let sug = suggestion_row(study.id, 1, None);
        let mut tx = store.lock_study(study.id).await.expect("lock").expect("exists");
        tx.insert_suggestion(&sug).await.expect("insert");
        let mut rows = vec![observation_row(study.id, 1, Some(sug.id))];
        for seq in 2..=7 {
            rows.push(observation_row(study.id, seq, None));
        }
        // A failed run: no value, no metadata.
        rows[6].value = None;
        rows[6].failed = true;
        rows[6].metadata = None;
        rows[6].cost = None;
        for r in &rows {
            tx.insert_observation(r).await.expect("insert");
        }
        let dup = observation_row(study.id, 8, Some(sug.id));
        match tx.insert_observation(&dup).await {
            Err(StoreError::Conflict(_)) => {}
            other => panic!("{b}: a second observation of one suggestion must be a conflict, got {other:?}"),
        }
        // (Postgres aborts a transaction after an error: this one is dropped, i.e. rolled back.)
        drop(tx);
        assert!(store.list_observations(study.id, Page::ALL).await.expect("list").is_empty(), "{b}: rolled back");

        let mut tx = store.lock_study(study.id).await.expect("lock").expect("exists");
        tx.insert_suggestion(&sug).await.expect("insert");
        for r in &rows {
            tx.insert_observation(r).await.expect("insert");
        }
        let in_tx = tx.observations().await.expect("observations");
        assert_eq!(in_tx.iter().map(|o| o.seq).collect::<Vec<_>>(), [1, 2, 3, 4, 5, 6, 7], "{b}");
        tx.commit().await.expect("commit");

        let got = store.get_observation(study.id, rows[0].id).await.expect("get").expect("exists");
        assert_eq!(got.suggestion_id, Some(sug.id), "{b}");
        assert_eq!(got.assignments, rows[0].assignments, "{b}");
        assert_eq!(
            (got.value, got.value_stddev, got.cost, got.failed),
            (Some(1.5), Some(0.01), Some(2.0), false),
            "{b}"
        );
        assert_eq!(got.metadata, rows[0].metadata, "{b}");
        assert_eq!(got.extra, rows[0].extra, "{b}");
        assert!(same_time(got.created_at, rows[0].created_at), "{b}");
        let failed = store.get_observation(study.id, rows[6].id).await.expect("get").expect("exists");
        assert_eq!((failed.value, failed.cost, failed.failed, failed.metadata), (None, None, true, None), "{b}");
        assert!(store.get_observation(other.id, rows[0].id).await.expect("get").is_none(), "{b}: other study");
        assert!(store.get_observation(study.id, Uuid::new_v4()).await.expect("get").is_none(), "{b}");

        let mut seqs = Vec::new();
        let mut after = 0;
        loop {
            let page = store.list_observations(study.id, Page { after, limit: 3 }).await.expect("list");
            seqs.extend(page.iter().map(|o| o.seq));
            match page.last() {
                Some(l) if page.len() == 3 => after = l.seq,
                _ => break,
            }
        }
        assert_eq!(seqs, [1, 2, 3, 4, 5, 6, 7], "{b}");
        assert!(store.list_observations(other.id, Page::ALL).await.expect("list").is_empty(), "{b}");
    });
}

#[test]
fn idempotency_records_are_put_and_read_inside_and_outside_the_study_lock() {
    on_each_backend(|store| async move {
        let b = store.backend();
        let study = create(&*store, &study_row("idem")).await;
        let scope = format!("POST /v1/studies/{}/observations", study.id);
        let row = IdempotencyRow {
            scope: scope.clone(),
            key: "retry-me".into(),
            request_hash: "abc".into(),
            status: 201,
            body: json!({"id": "o-1", "value": 2.5}),
            created_at: Utc::now(),
        };
        let mut tx = store.lock_study(study.id).await.expect("lock").expect("exists");
        assert!(tx.get_idempotency(&scope, "retry-me").await.expect("get").is_none(), "{b}");
        tx.put_idempotency(&row).await.expect("put");
        let seen = tx.get_idempotency(&scope, "retry-me").await.expect("get").expect("visible in its transaction");
        assert_eq!(seen.body, row.body, "{b}");
        tx.commit().await.expect("commit");
        let got = store.get_idempotency(&scope, "retry-me").await.expect("get").expect("stored");
        assert_eq!((got.status, got.request_hash.as_str(), &got.body), (201, "abc", &row.body), "{b}");
        assert!(same_time(got.created_at, row.created_at), "{b}");
        let mut tx = store.lock_study(study.id).await.expect("lock").expect("exists");
        match tx.put_idempotency(&row).await {
            Err(StoreError::Conflict(_)) => {}
            other => panic!("{b}: a reused key must be a conflict, got {other:?}"),
        }
    });
}

#[test]
fn update_study_writes_the_mutable_columns_and_totals_count_rows() {
    on_each_backend(|store| async move {
        let b = store.backend();
        assert_eq!(store.totals().await.expect("totals"), (0, 0), "{b}");
        let study = create(&*store, &study_row("upd")).await;
        create(&*store, &study_row("second")).await;
        let mut tx = store.lock_study(study.id).await.expect("lock").expect("exists");
        assert_eq!(tx.study().id, study.id, "{b}");
        assert_eq!(tx.study().policy_state, study.policy_state, "{b}");
        for seq in 1..=3 {
            tx.insert_observation(&observation_row(study.id, seq, None)).await.expect("insert");
        }
        let mut changed = tx.study().clone();
        changed.status = StudyStatus::Completed;
        changed.policy_state = json!({"draws": 3, "trace": [0.5, 0.25]});
        changed.n_observations = 3;
        changed.n_suggestions = 4;
        changed.total_cost = 6.5;
        changed.updated_at = Utc::now() + chrono::Duration::seconds(1);
        // Columns that never change after creation are left alone even when the row says otherwise.
        changed.name = "renamed".into();
        tx.update_study(&changed).await.expect("update");
        assert_eq!(tx.study().n_observations, 3, "{b}: the transaction sees its own update");
        tx.commit().await.expect("commit");
        let got = store.get_study(study.id).await.expect("get").expect("exists");
        assert_eq!(got.status, StudyStatus::Completed, "{b}");
        assert_eq!(got.policy_state, changed.policy_state, "{b}");
        assert_eq!((got.n_observations, got.n_suggestions, got.total_cost), (3, 4, 6.5), "{b}");
        assert!(same_time(got.updated_at, changed.updated_at), "{b}");
        assert!(same_time(got.created_at, study.created_at), "{b}");
        assert_eq!((got.name.as_str(), &got.spec, got.seq), ("upd", &study.spec, study.seq), "{b}");
        assert_eq!(store.totals().await.expect("totals"), (2, 3), "{b}");
    });
}

#[test]
fn a_dropped_study_transaction_rolls_back_and_a_committed_one_persists() {
    on_each_backend(|store| async move {
        let b = store.backend();
        let study = create(&*store, &study_row("tx")).await;
        let sug = suggestion_row(study.id, 1, None);
        let obs = observation_row(study.id, 1, Some(sug.id));
        let idem = IdempotencyRow {
            scope: "POST /x".into(),
            key: "k".into(),
            request_hash: "h".into(),
            status: 201,
            body: json!({}),
            created_at: Utc::now(),
        };
        let write = |commit: bool| {
            let (store, study, sug, obs, idem) = (&store, &study, &sug, &obs, &idem);
            async move {
                let mut tx = store.lock_study(study.id).await.expect("lock").expect("exists");
                tx.insert_suggestion(sug).await.expect("insert suggestion");
                tx.close_suggestion(sug.id, SuggestionState::Completed, Utc::now(), None).await.expect("close");
                tx.insert_observation(obs).await.expect("insert observation");
                tx.put_idempotency(idem).await.expect("put");
                let mut s = tx.study().clone();
                s.n_observations = 1;
                s.n_suggestions = 1;
                s.policy_state = json!({"after": true});
                tx.update_study(&s).await.expect("update");
                if commit {
                    tx.commit().await.expect("commit");
                }
            }
        };
        write(false).await;
        let got = store.get_study(study.id).await.expect("get").expect("exists");
        assert_eq!((got.n_observations, got.n_suggestions, &got.policy_state), (0, 0, &study.policy_state), "{b}");
        assert!(store.get_suggestion(study.id, sug.id).await.expect("get").is_none(), "{b}");
        assert!(store.get_observation(study.id, obs.id).await.expect("get").is_none(), "{b}");
        assert!(store.get_idempotency("POST /x", "k").await.expect("get").is_none(), "{b}");
        assert_eq!(store.totals().await.expect("totals"), (1, 0), "{b}");
        // The lock was released by the rollback: the same writes now commit.
        write(true).await;
        let got = store.get_study(study.id).await.expect("get").expect("exists");
        assert_eq!((got.n_observations, got.n_suggestions, &got.policy_state), (1, 1, &json!({"after": true})), "{b}");
        assert_eq!(
            store.get_suggestion(study.id, sug.id).await.expect("get").expect("exists").state,
            SuggestionState::Completed
        );
        assert!(store.get_observation(study.id, obs.id).await.expect("get").is_some(), "{b}");
        assert!(store.get_idempotency("POST /x", "k").await.expect("get").is_some(), "{b}");
    });
}

#[test]
fn lock_study_on_an_unknown_id_is_none_and_the_lock_serialises_writers() {
    on_each_backend(|store| async move {
        let b = store.backend();
        assert!(store.lock_study(Uuid::new_v4()).await.expect("lock").is_none(), "{b}");
        let study = create(&*store, &study_row("lock")).await;
        let store: std::sync::Arc<dyn Store> = std::sync::Arc::from(store);
        let mut first = store.lock_study(study.id).await.expect("lock").expect("exists");
        // A second writer waits while the first holds the lock …
        let (tx_seen, rx_seen) = tokio::sync::oneshot::channel::<Value>();
        let second = {
            let store = store.clone();
            let id = study.id;
            tokio::spawn(async move {
                let mut tx = store.lock_study(id).await.expect("lock").expect("exists");
                let _ = tx_seen.send(tx.study().policy_state.clone());
                let mut s = tx.study().clone();
                s.n_suggestions += 10;
                tx.update_study(&s).await.expect("update");
                tx.commit().await.expect("commit");
            })
        };
        let mut rx_seen = rx_seen;
        let waited = tokio::time::timeout(Duration::from_millis(300), &mut rx_seen).await;
        assert!(waited.is_err(), "{b}: the second writer got the lock while the first held it");
        let mut s = first.study().clone();
        s.policy_state = json!({"written_by": "first"});
        s.n_suggestions = 1;
        first.update_study(&s).await.expect("update");
        first.commit().await.expect("commit");
        // … and, once it has the lock, reads what the first one committed.
        let seen = rx_seen.await.expect("the second writer ran");
        assert_eq!(seen, json!({"written_by": "first"}), "{b}");
        second.await.expect("second writer");
        assert_eq!(store.get_study(study.id).await.expect("get").expect("exists").n_suggestions, 11, "{b}");
    });
}
