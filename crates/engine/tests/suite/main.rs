//! Engine integration tests in one binary (issue 2, "Must show"):
//! - [`reference`]: kernels, GP posterior and log marginal likelihood against scikit-learn/numpy fixtures
//!   (`tests/fixtures/gen_reference.py` → `tests/fixtures/reference.json`), 1e-9 relative;
//! - [`properties`]: proptest properties (PSD Gram matrices, variance bounds, gradients = central differences,
//!   LogEI = ln EI, Cholesky extension = refit, LogNEI = LogEI without noise and = a Monte-Carlo estimate with it);
//! - [`robustness`]: degenerate studies through `engine::Study` for every GP policy, observation validation,
//!   pending points;
//! - [`contexts`]: context parameters and the seed-002 policies (issue 5);
//! - [`control_sets`]: control-set studies (seed 000): validation, `bocvs` behaviour, baselines;
//! - [`golden`]: the behaviour lock: every algorithm's suggestions, recommendation and predictions, bitwise;
//! - [`local_steps`]: `gp-ei`'s local steps stay in their box around the incumbent, on the stated cycle;
//! - [`noisy_ei`]: `gp-ei` switches to noisy EI on noisy values and keeps LogEI on deterministic ones;
//! - [`recommendation`]: `best`'s recommended point stays next to an observed one;
//! - [`replicates`]: `gp-ei` re-runs observed points on noisy models; the recommendation uses what they show;
//! - [`warp_choice`]: the output warp's choice between raw and warped model on its schedule;
//! - [`options`]: invalid algorithm options named exactly in every family; `best`/`predict` use the policy's model.

mod batches;
mod common;
mod contexts;
mod control_sets;
mod golden;
mod gradients;
mod hyper_elim;
mod indirect;
mod initial_design;
mod local_steps;
mod noisy_ei;
mod options;
mod outcomes;
mod properties;
mod recommendation;
mod reference;
mod replicates;
mod robustness;
mod seed003;
mod strategies;
mod warp_choice;
