//! Indirect queries with integrated feedback (seed 001: Zhang, Bouabid, Ong, Flaxman, Sejdinovic, "Indirect
//! Query Bayesian Optimization with Integrated Feedback"): the client sets a query a and observes
//! z = g(a) + ε with g(a) = E[f(X) | A = a]; the study optimises f over its own (target) parameters.
//!
//! `spec` (the study block) → `embedding` (g(a) as a weighted sum of f values: the CME estimator from pairs or a
//! known conditional by Monte Carlo) → `cmp` (the conditional mean process posterior of f and g) → `cmes` (the
//! acquisition) and `tree` (CMETS' multi-resolution partition); `model` ties them to a policy context. The
//! policies live in `policy::indirect`.

pub mod cmes;
pub mod cmp;
pub mod embedding;
pub mod model;
pub mod spec;
pub mod tree;

pub use cmes::{CmesVariant, TargetMaxSampler, cmes_value};
pub use cmp::{Cmp, CmpData, CmpHypers, fit_cmp};
pub use embedding::{Embedding, Region, Representer};
pub use model::IndirectModel;
pub use spec::{ConditionalDimension, ConditionalForm, IndirectProblem, IndirectSpec, TreeSpec};
pub use tree::{ActiveSet, Node, Tree};
