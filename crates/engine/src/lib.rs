//! The bayesd engine: Gaussian processes, acquisition functions, acquisition optimisers and BO policies.
//!
//! Pure and synchronous: no I/O, no async, deterministic given (study spec, observations, policy state, seed).
//! Data flows `space` → `gp` (with `kernel`, `linalg`) → `acquisition` → `optim` → `policy`; [`study::Study`] is
//! the facade the server and the benchmarks call.
//!
//! **Public API for callers** (the server, `crates/bench`): the [`study`] facade (specs, `Study`, suggestions,
//! recommendations, predictions) and the records of [`data`]; [`testfunctions`] (classic functions and GP-drawn
//! ones); and, for benchmarks that simulate an environment or score with a known model: [`sampling`] (`Sobol`,
//! `derive_seed`), [`special`] (normal cdf/pdf/quantile), [`distribution`], the environment of the blocks
//! ([`blocks::control_sets::ControlSets::realise`], [`blocks::indirect::embedding::truncated_normal`]), and a GP
//! with known hyperparameters ([`policy::FixedHyperparameters::gp`] → [`gp::Gp`], with [`kernel::KernelFamily`]).
//! Everything else is public for the engine's own integration tests and may change.
//!
//! ```
//! use engine::{History, ObservationRecord, PolicyState, Study, StudySpec, SuggestRequest};
//! use serde_json::json;
//!
//! let spec: StudySpec = serde_json::from_value(json!({
//!     "parameters": [
//!         {"name": "x", "type": "float", "low": -5, "high": 10},
//!         {"name": "y", "type": "float", "low": 0, "high": 15}
//!     ],
//!     "objective": {"name": "branin", "goal": "minimize"},
//!     "algorithm": {"name": "gp-ei"},
//!     "seed": 1
//! }))
//! .unwrap();
//! let study = Study::new(spec).unwrap();
//! let (mut history, mut state) = (History::default(), PolicyState::default());
//! for _ in 0..8 {
//!     let out = study.suggest(&history, &state, &SuggestRequest { count: 1, context: None }).unwrap();
//!     state = out.state;
//!     let a = out.suggestions[0].assignments.clone();
//!     let (x, y) = (a["x"].as_f64().unwrap(), a["y"].as_f64().unwrap());
//!     let value = engine::testfunctions::branin(x, y);
//!     history.observations.push(ObservationRecord { assignments: a, value: Some(value), ..Default::default() });
//! }
//! let best = study.recommend(&history, &state).unwrap().unwrap();
//! assert!(best.predicted.mean.is_finite());
//! ```
//!
//! Cost: an exact GP fit is O(n³) per likelihood evaluation; between refits (see `policy::model`) a suggest costs
//! one O(n³/3) factorisation plus O(n²) per acquisition evaluation.

#![warn(missing_docs)]

pub mod acquisition;
pub mod blocks;
pub mod data;
pub mod distribution;
pub mod error;
pub mod gp;
pub mod kde;
pub mod kernel;
pub mod linalg;
pub mod objective;
pub mod optim;
pub mod pareto;
pub mod policy;
pub mod polytope;
pub mod problem;
pub mod quasi_newton;
pub mod sampling;
pub mod space;
pub mod special;
pub mod study;
pub mod testfunctions;

pub use data::{History, ObservationRecord, PairRecord, PendingRecord, PointExtras};
pub use error::{Error, FieldError, Result};
pub use policy::PolicyState;
pub use space::Assignments;
pub use study::{Study, StudySpec, SuggestRequest};
