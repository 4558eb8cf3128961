//! Validated studies, cached by their stored spec: a request does not re-parse and re-validate the spec of a study
//! seen before. The key is the spec's canonical JSON text, so a changed spec (the only input of
//! [`Study::new`]) is a different entry and a cached study can never be stale; the study id is not needed. The
//! cache is bounded: past [`StudyCache::CAPACITY`] entries it starts over (a miss only costs one validation).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use engine::{Study, StudySpec};
use serde_json::Value;

use crate::error::{ApiError, ApiResult};

/// Validated studies by spec text.
#[derive(Default)]
pub struct StudyCache {
    studies: Mutex<HashMap<String, Arc<Study>>>,
    validations: AtomicU64,
}

impl StudyCache {
    /// Entries kept before the cache starts over.
    pub const CAPACITY: usize = 4096;

    /// The validated study of a stored `spec`, validated at most once per distinct spec.
    pub fn get(&self, spec: &Value) -> ApiResult<Arc<Study>> {
        let key = spec.to_string();
        if let Some(study) = self.lock().get(&key) {
            return Ok(Arc::clone(study));
        }
        self.validations.fetch_add(1, Ordering::Relaxed);
        let parsed: StudySpec =
            serde_json::from_value(spec.clone()).map_err(|e| ApiError::internal("stored spec unreadable", e))?;
        let study = Arc::new(Study::new(parsed).map_err(|e| {
            ApiError::internal(
                "stored spec no longer validates",
                e.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "),
            )
        })?);
        let mut studies = self.lock();
        if studies.len() >= Self::CAPACITY {
            studies.clear();
        }
        studies.insert(key, Arc::clone(&study));
        Ok(study)
    }

    /// How many specs were parsed and validated (cache misses).
    pub fn validations(&self) -> u64 {
        self.validations.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Study>>> {
        // A panic while holding the lock cannot leave the map inconsistent (inserts are single calls).
        self.studies.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The process's cache, shared by every request.
pub static STUDIES: LazyLock<StudyCache> = LazyLock::new(StudyCache::default);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(high: f64) -> Value {
        json!({"parameters": [{"name": "x", "type": "float", "low": 0, "high": high}], "seed": 1})
    }

    #[test]
    fn a_spec_is_validated_once_and_a_changed_spec_again() {
        let cache = StudyCache::default();
        let a = cache.get(&spec(1.0)).unwrap();
        let again = cache.get(&spec(1.0)).unwrap();
        assert!(Arc::ptr_eq(&a, &again), "the same spec returns the cached study");
        assert_eq!(cache.validations(), 1);
        let b = cache.get(&spec(2.0)).unwrap();
        assert_eq!(cache.validations(), 2, "a changed spec is validated anew");
        assert!(!Arc::ptr_eq(&a, &b));
        assert_eq!(b.spec().parameters[0].name, "x");
    }

    #[test]
    fn an_invalid_stored_spec_is_an_error_and_not_cached() {
        let cache = StudyCache::default();
        let bad = json!({"parameters": [], "seed": 1});
        assert!(cache.get(&bad).is_err());
        assert!(cache.get(&bad).is_err());
        assert_eq!(cache.validations(), 2);
    }
}
