//! The model: the best observed point with the model's recommendation, and posterior predictions.

use std::collections::BTreeMap;

use engine::PolicyState;
use engine::study::Prediction;
use serde_json::{Map, Value};
use uuid::Uuid;

use super::{engine_study, history, snapshot_pairs};
use crate::error::{ApiError, ApiResult};
use crate::resources::{BestObserved, BestResponse, ParetoFront, ParetoPoint, RecommendedPoint};
use crate::state::AppState;

/// The best observed point and the model's recommendation (null while there is none, or when the model cannot be
/// fitted to the data).
pub async fn best(state: &AppState, study_id: Uuid) -> ApiResult<BestResponse> {
    let snap = state.store.snapshot(study_id).await?.ok_or_else(|| ApiError::not_found("study", study_id))?;
    let (study, rows) = (&snap.study, &snap.observations);
    let engine = engine_study(study)?;
    let sign = engine.problem().goal.sign();
    // With several objectives there is no single best; with outcome constraints the best is a feasible run.
    let several = engine.problem().outcomes.objectives.len() > 1;
    let best_observed = rows
        .iter()
        .filter(|o| !o.failed && !several && o.extra.feasible != Some(false))
        .filter_map(|o| o.value.filter(|v| v.is_finite()).map(|v| (o, v)))
        .max_by(|a, b| (sign * a.1).total_cmp(&(sign * b.1)))
        .map(|(o, v)| BestObserved {
            observation_id: o.id,
            assignments: o.assignments.as_object().cloned().unwrap_or_default(),
            value: v,
        });
    let any_success = rows.iter().any(|o| !o.failed);
    let (recommended, pareto) = if best_observed.is_some() || (several && any_success) {
        let pairs = snapshot_pairs(&snap, &engine)?;
        let slot = state.compute.slot().await?;
        let hist = history(study, rows, &[], pairs);
        let policy_state = PolicyState(study.policy_state.clone());
        let answer = state
            .compute
            .run(slot, "recommend", move || {
                Ok::<_, engine::Error>((engine.recommend(&hist, &policy_state)?, engine.pareto(&hist, &policy_state)?))
            })
            .await?;
        match answer {
            Ok((r, front)) => (
                r.map(|r| RecommendedPoint { assignments: r.assignments, predicted: r.predicted, extra: r.extra }),
                front.map(|f| pareto_resource(f, rows)),
            ),
            // The best observation stands on its own when the data defeat the model (e.g. values near ±1e300).
            Err(engine::Error::Numerical(e)) => {
                tracing::warn!(error = %e, %study_id, "no recommendation: the model could not be fitted");
                (None, None)
            }
            Err(e) => return Err(e.into()),
        }
    } else {
        (None, None)
    };
    Ok(BestResponse { best_observed, recommended, pareto })
}

/// The Pareto front's resource: the engine's observation indices become the stored observations' ids.
fn pareto_resource(front: engine::study::ParetoFront, rows: &[crate::store::ObservationRow]) -> ParetoFront {
    ParetoFront {
        points: front
            .points
            .into_iter()
            .filter_map(|p| {
                Some(ParetoPoint {
                    observation_id: rows.get(p.observation)?.id,
                    assignments: p.assignments,
                    values: p.values,
                    predicted: p.predicted,
                })
            })
            .collect(),
        hypervolume: front.hypervolume,
        reference_point: front.reference_point,
    }
}

/// Posterior predictions of the objective, and of every objective and outcome constraint by name (studies that have
/// several or constraints).
pub type Predictions = (Vec<Prediction>, Option<Vec<BTreeMap<String, Prediction>>>);

/// The posterior at `points` (1–1000, checked by the caller); 409 while there is no model.
pub async fn predict(state: &AppState, study_id: Uuid, points: Vec<Map<String, Value>>) -> ApiResult<Predictions> {
    let snap = state.store.snapshot(study_id).await?.ok_or_else(|| ApiError::not_found("study", study_id))?;
    let engine = engine_study(&snap.study)?;
    let pairs = snapshot_pairs(&snap, &engine)?;
    let no_model = no_model_detail(&engine, pairs.len());
    let slot = state.compute.slot().await?;
    let hist = history(&snap.study, &snap.observations, &[], pairs);
    let policy_state = PolicyState(snap.study.policy_state.clone());
    let out = state
        .compute
        .run(slot, "predict", move || {
            let single = engine.predict(&hist, &policy_state, &points)?;
            Ok::<_, engine::Error>((single, engine.predict_outcomes(&hist, &policy_state, &points)?))
        })
        .await??;
    let predictions = out.0.ok_or_else(|| ApiError::conflict("no-model", no_model))?;
    Ok((predictions, out.1))
}

/// Why a study has no model yet: no successful observation, or (an indirect study learning its conditional from
/// pairs) fewer than two pairs.
fn no_model_detail(engine: &engine::Study, uploaded_pairs: usize) -> String {
    match &engine.spec().indirect {
        Some(b) if b.conditional.is_none() && b.pairs.len() + uploaded_pairs < 2 => {
            "there is no model yet: this indirect study learns p(x | a) from example pairs and has fewer than two; \
             upload them with POST /v1/studies/{study_id}/pairs"
                .into()
        }
        _ => "there is no model yet: tell at least one successful observation first".into(),
    }
}
