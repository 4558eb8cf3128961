//! The bayesd engine: Gaussian processes, acquisition functions, acquisition optimisers and BO policies.
//!
//! Pure and synchronous: no I/O, no async, deterministic given (study spec, observations, policy state, seed).
//! Data flows `space` → `gp` (with `kernel`, `linalg`) → `acquisition` → `optim` → `policy`; [`study::Study`] is
//! the facade the server and the benchmarks call.

#![warn(missing_docs)]

pub mod acquisition;
pub mod data;
pub mod error;
pub mod gp;
pub mod kernel;
pub mod linalg;
pub mod optim;
pub mod policy;
pub mod sampling;
pub mod space;
pub mod special;
pub mod study;
pub mod testfunctions;

pub use data::{History, ObservationRecord, PendingRecord};
pub use error::{Error, FieldError, Result};
pub use policy::PolicyState;
pub use space::Assignments;
pub use study::{Study, StudySpec, SuggestRequest};
