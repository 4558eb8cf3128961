//! The server's domain types: the states of studies and suggestions with their allowed transitions, the
//! suggestion as stored, and the extras of a stored observation. Each state maps to the same lowercase string in the database and in JSON
//! (`active`/`completed`/`archived`, `open`/`completed`/`abandoned`, `deleted`/`expired`).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use engine::study::Prediction;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// A state name that is not one of the enum's strings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} '{value}'")]
pub struct UnknownState {
    /// Which enum.
    pub kind: &'static str,
    /// The string read.
    pub value: String,
}

/// Implements `as_str`, `Display`, `FromStr` and the sqlx text mapping (any backend whose `String` is text) of a
/// fieldless enum from one table of variant ↔ string.
macro_rules! text_enum {
    ($ty:ident, $kind:literal, { $($variant:ident => $s:literal),+ $(,)? }) => {
        impl $ty {
            /// Every value, in declaration order.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            /// The string stored and shown.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $s),+
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $ty {
            type Err = UnknownState;

            fn from_str(s: &str) -> Result<Self, UnknownState> {
                match s {
                    $($s => Ok($ty::$variant),)+
                    other => Err(UnknownState { kind: $kind, value: other.to_string() }),
                }
            }
        }

        impl<DB: sqlx::Database> sqlx::Type<DB> for $ty
        where
            String: sqlx::Type<DB>,
        {
            fn type_info() -> DB::TypeInfo {
                <String as sqlx::Type<DB>>::type_info()
            }

            fn compatible(ty: &DB::TypeInfo) -> bool {
                <String as sqlx::Type<DB>>::compatible(ty)
            }
        }

        impl<'q, DB: sqlx::Database> sqlx::Encode<'q, DB> for $ty
        where
            String: sqlx::Encode<'q, DB>,
        {
            fn encode_by_ref(
                &self,
                buf: &mut <DB as sqlx::Database>::ArgumentBuffer,
            ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
                <String as sqlx::Encode<'q, DB>>::encode(self.as_str().to_string(), buf)
            }
        }

        impl<'r, DB: sqlx::Database> sqlx::Decode<'r, DB> for $ty
        where
            String: sqlx::Decode<'r, DB>,
        {
            fn decode(value: <DB as sqlx::Database>::ValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
                Ok(<String as sqlx::Decode<'r, DB>>::decode(value)?.parse()?)
            }
        }
    };
}

/// The status of a study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum StudyStatus {
    /// Makes suggestions and accepts observations.
    Active,
    /// Its budget is spent: no more suggestions; observations are still accepted.
    Completed,
    /// Keeps its data but accepts nothing new. Final.
    Archived,
}

text_enum!(StudyStatus, "study status", { Active => "active", Completed => "completed", Archived => "archived" });

/// A transition the state machines refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TransitionError {
    /// The study is archived.
    #[error("the study is archived")]
    StudyArchived,
    /// The suggestion already has an observation.
    #[error("the suggestion is already completed")]
    SuggestionCompleted,
    /// The suggestion was abandoned (deleted or expired).
    #[error("the suggestion was abandoned")]
    SuggestionAbandoned,
    /// A suggestion only closes (to completed or abandoned); it is never reopened.
    #[error("a suggestion is never reopened")]
    Reopen,
}

impl StudyStatus {
    /// Whether the study accepts new suggestions, observations or pairs (everything but archived does).
    pub fn accepts_writes(self) -> Result<(), TransitionError> {
        match self {
            StudyStatus::Archived => Err(TransitionError::StudyArchived),
            StudyStatus::Active | StudyStatus::Completed => Ok(()),
        }
    }

    /// The status after a write, given whether the budget is now spent: archived stays archived, otherwise a spent
    /// budget completes the study (and a budget with room, e.g. none at all, keeps it active).
    pub fn after_write(self, budget_spent: bool) -> StudyStatus {
        match self {
            StudyStatus::Archived => StudyStatus::Archived,
            _ if budget_spent => StudyStatus::Completed,
            _ => StudyStatus::Active,
        }
    }

    /// Archiving: allowed from every status, harmless when already archived.
    pub fn archive(self) -> StudyStatus {
        StudyStatus::Archived
    }
}

/// The state of a suggestion; an open suggestion past its expiry is shown as abandoned (reason `expired`).
///
/// Stored states can lag: the expiry is written by the next write to the study, and [`shown_state`] is what
/// clients see meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SuggestionState {
    /// Handed out, waiting for its observation; its point is held back from other suggestions.
    Open,
    /// Observed. Final.
    Completed,
    /// Deleted by the client or expired. Final.
    Abandoned,
}

text_enum!(SuggestionState, "suggestion state", { Open => "open", Completed => "completed", Abandoned => "abandoned" });

impl SuggestionState {
    /// Moves a suggestion to `to` (completed or abandoned): `Ok(true)` when the state changes, `Ok(false)` when it
    /// is already there and that is harmless (abandoning twice), an error when the transition is refused
    /// (observing a closed suggestion, abandoning a completed one, reopening).
    pub fn close_to(self, to: SuggestionState) -> Result<bool, TransitionError> {
        use SuggestionState::{Abandoned, Completed, Open};
        match (self, to) {
            (_, Open) => Err(TransitionError::Reopen),
            (Open, Completed | Abandoned) => Ok(true),
            (Abandoned, Abandoned) => Ok(false),
            (Completed, _) => Err(TransitionError::SuggestionCompleted),
            (Abandoned, Completed) => Err(TransitionError::SuggestionAbandoned),
        }
    }
}

/// Why a suggestion was abandoned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum AbandonReason {
    /// The client deleted it.
    Deleted,
    /// Its time-to-live passed while it was open.
    Expired,
}

text_enum!(AbandonReason, "abandon reason", { Deleted => "deleted", Expired => "expired" });

/// True when an open suggestion's expiry (if any) is not after `now`.
pub fn is_expired(state: SuggestionState, expires_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
    state == SuggestionState::Open && expires_at.is_some_and(|t| t <= now)
}

/// The state, abandon reason and closing time a client sees at `now`: an expired open suggestion shows as
/// abandoned (`expired`, closed at its expiry) even before a write stores that.
pub fn shown_state(
    state: SuggestionState,
    expires_at: Option<DateTime<Utc>>,
    closed_at: Option<DateTime<Utc>>,
    reason: Option<AbandonReason>,
    now: DateTime<Utc>,
) -> (SuggestionState, Option<AbandonReason>, Option<DateTime<Utc>>) {
    if is_expired(state, expires_at, now) {
        (SuggestionState::Abandoned, Some(AbandonReason::Expired), expires_at)
    } else {
        (state, reason, closed_at)
    }
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// The engine's suggestion as stored in the suggestions' JSON `body` column: the keys of
/// [`engine::study::Suggestion`]'s serialisation (absent options are left out), so rows written before this type
/// existed read back unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredSuggestion {
    /// Values of the parameters the client sets.
    #[serde(default)]
    pub assignments: Map<String, Value>,
    /// Control set to play, noise level to use, indirect query, cost the algorithm expects (the engine's
    /// [`engine::PointExtras`], flattened: the same keys, absent ones left out).
    #[serde(flatten)]
    pub extras: engine::PointExtras,
    /// The context the request gave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Map<String, Value>>,
    /// Posterior at the suggestion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted: Option<Prediction>,
    /// Algorithm that produced it.
    #[serde(default)]
    pub algorithm: String,
    /// How it was produced (the engine's diagnostics, kept as they were serialised).
    #[serde(default = "empty_object")]
    pub diagnostics: Value,
}

impl StoredSuggestion {
    /// The stored form of an engine suggestion.
    pub fn from_engine(s: &engine::study::Suggestion) -> serde_json::Result<Self> {
        Ok(Self {
            assignments: s.assignments.clone(),
            extras: s.extras.clone(),
            context: s.context.clone(),
            predicted: s.predicted,
            algorithm: s.algorithm.clone(),
            diagnostics: serde_json::to_value(&s.diagnostics)?,
        })
    }

    /// The engine's record of it while it is open.
    pub fn pending(&self) -> engine::PendingRecord {
        engine::PendingRecord {
            assignments: self.assignments.clone(),
            extras: self.extras.clone(),
            context: self.context.clone(),
        }
    }
}

/// What an observation carries besides its assignments and outcome, as stored in the observations' JSON `extra`
/// column: the keys the service has always written (`control_set`, `noise_level`, `query`; absent ones left out),
/// so rows stored before this type existed read back unchanged. A key of the wrong shape reads as absent, as the
/// reads by key did before.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ObservationExtras {
    /// Control set played.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub control_set: Option<String>,
    /// Noise level used.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub noise_level: Option<String>,
    /// Indirect query whose aggregate was observed.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub query: Option<Map<String, Value>>,
    /// Values of the study's objectives and outcome constraints, by name.
    #[serde(default, deserialize_with = "lenient_map", skip_serializing_if = "BTreeMap::is_empty")]
    pub values: BTreeMap<String, f64>,
    /// Known standard deviations of some of `values`.
    #[serde(default, deserialize_with = "lenient_map", skip_serializing_if = "BTreeMap::is_empty")]
    pub values_stddev: BTreeMap<String, f64>,
    /// Whether the run satisfied every outcome constraint, as the study's constraints judged it when it was stored
    /// (studies with `constraints`; absent for failed runs).
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub feasible: Option<bool>,
}

impl ObservationExtras {
    /// The engine's extras of the observation.
    pub fn to_engine(&self) -> engine::PointExtras {
        engine::PointExtras {
            control_set: self.control_set.clone(),
            noise_level: self.noise_level.clone(),
            query: self.query.clone(),
            expected_cost: None,
        }
    }
}

/// Reads a map of numbers, or an empty one when the stored value is null or of another shape.
fn lenient_map<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, f64>, D::Error> {
    Ok(serde_json::from_value(Value::deserialize(d)?).unwrap_or_default())
}

/// Reads an optional field as `T`, or as absent when the stored value is null or of another shape.
fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    Ok(serde_json::from_value(Value::deserialize(d)?).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn suggestion_transitions_allow_closing_an_open_one_once() {
        use SuggestionState::{Abandoned, Completed, Open};
        assert_eq!(Open.close_to(Completed), Ok(true));
        assert_eq!(Open.close_to(Abandoned), Ok(true));
        assert_eq!(Abandoned.close_to(Abandoned), Ok(false), "abandoning twice is harmless");
        assert_eq!(Completed.close_to(Completed), Err(TransitionError::SuggestionCompleted));
        assert_eq!(Completed.close_to(Abandoned), Err(TransitionError::SuggestionCompleted));
        assert_eq!(Abandoned.close_to(Completed), Err(TransitionError::SuggestionAbandoned));
        for s in SuggestionState::ALL {
            assert_eq!(s.close_to(Open), Err(TransitionError::Reopen), "{s}");
        }
    }

    #[test]
    fn study_transitions_keep_archived_final() {
        use StudyStatus::{Active, Archived, Completed};
        assert_eq!(Active.accepts_writes(), Ok(()));
        assert_eq!(Completed.accepts_writes(), Ok(()));
        assert_eq!(Archived.accepts_writes(), Err(TransitionError::StudyArchived));
        assert_eq!(Active.after_write(true), Completed);
        assert_eq!(Active.after_write(false), Active);
        assert_eq!(Completed.after_write(false), Active, "a raised budget reopens a completed study");
        assert_eq!(Archived.after_write(false), Archived);
        assert_eq!(Archived.after_write(true), Archived);
        for s in StudyStatus::ALL {
            assert_eq!(s.archive(), Archived);
        }
    }

    #[test]
    fn states_map_to_todays_strings() {
        for (s, name) in [(StudyStatus::Active, "active"), (StudyStatus::Completed, "completed")]
            .into_iter()
            .chain([(StudyStatus::Archived, "archived")])
        {
            assert_eq!(s.as_str(), name);
            assert_eq!(serde_json::to_value(s).unwrap(), json!(name));
            assert_eq!(name.parse::<StudyStatus>(), Ok(s));
        }
        for (s, name) in [
            (SuggestionState::Open, "open"),
            (SuggestionState::Completed, "completed"),
            (SuggestionState::Abandoned, "abandoned"),
        ] {
            assert_eq!(s.as_str(), name);
            assert_eq!(serde_json::to_value(s).unwrap(), json!(name));
            assert_eq!(name.parse::<SuggestionState>(), Ok(s));
        }
        assert_eq!(AbandonReason::Expired.as_str(), "expired");
        assert_eq!("deleted".parse::<AbandonReason>(), Ok(AbandonReason::Deleted));
        assert!("closed".parse::<SuggestionState>().is_err());
    }

    #[test]
    fn an_expired_open_suggestion_shows_as_abandoned() {
        let now = Utc::now();
        let past = Some(now - chrono::Duration::seconds(1));
        assert_eq!(
            shown_state(SuggestionState::Open, past, None, None, now),
            (SuggestionState::Abandoned, Some(AbandonReason::Expired), past)
        );
        let future = Some(now + chrono::Duration::seconds(60));
        assert_eq!(shown_state(SuggestionState::Open, future, None, None, now), (SuggestionState::Open, None, None));
        assert!(!is_expired(SuggestionState::Completed, past, now));
    }

    #[test]
    fn stored_suggestions_read_bodies_written_as_engine_json() {
        let old = json!({
            "assignments": {"x": 0.25, "c": "a"},
            "control_set": "cheap",
            "query": {"a": 1.0},
            "expected_cost": 2.5,
            "predicted": {"mean": 1.0, "stddev": 0.5},
            "algorithm": "gp-ei",
            "diagnostics": {"phase": "model"}
        });
        let s: StoredSuggestion = serde_json::from_value(old.clone()).unwrap();
        assert_eq!(s.assignments.get("c"), Some(&json!("a")));
        assert_eq!(s.extras.control_set.as_deref(), Some("cheap"));
        assert_eq!(s.extras.noise_level, None);
        assert_eq!(s.extras.expected_cost, Some(2.5));
        assert_eq!(s.predicted, Some(Prediction { mean: 1.0, stddev: 0.5 }));
        assert_eq!(serde_json::to_value(&s).unwrap(), old, "writes back the same keys");
        let bare: StoredSuggestion = serde_json::from_value(json!({"assignments": {"x": 1}})).unwrap();
        assert_eq!((bare.algorithm.as_str(), &bare.diagnostics), ("", &json!({})));
    }

    #[test]
    fn observation_extras_read_and_write_the_stored_json() {
        let old = json!({"control_set": "cheap", "noise_level": "fast", "query": {"a1": 0.5}});
        let e: ObservationExtras = serde_json::from_value(old.clone()).unwrap();
        assert_eq!(e.control_set.as_deref(), Some("cheap"));
        assert_eq!(e.noise_level.as_deref(), Some("fast"));
        assert_eq!(e.query.as_ref().and_then(|q| q.get("a1")), Some(&json!(0.5)));
        assert_eq!(serde_json::to_value(&e).unwrap(), old, "writes back the same JSON");
        for stored in [json!({}), json!({"control_set": "cheap"}), json!({"query": {"a": 1}})] {
            let e: ObservationExtras = serde_json::from_value(stored.clone()).unwrap();
            assert_eq!(serde_json::to_value(&e).unwrap(), stored);
        }
        let odd: ObservationExtras =
            serde_json::from_value(json!({"control_set": 3, "noise_level": null, "query": [1], "other": 1})).unwrap();
        assert_eq!(odd, ObservationExtras::default(), "wrong shapes read as absent, unknown keys are ignored");
    }
}
