//! Acquisition functions over a GP posterior, each with value and gradient in x.
//!
//! Every acquisition is maximised. Inputs are encoded points of the acquisition's own dimension
//! ([`Acquisition::dim`]); [`Expected`] maps a lower-dimensional input (the variables the learner sets) into the
//! GP's input by appending fixed samples of the others.

mod analytic;
mod constrained;
pub mod context;
mod ehvi;
mod expected;
mod mes;
pub mod mmd_dro;
mod noisy_ei;
mod thompson;
pub mod tv_dro;

pub use analytic::{LogEi, Pi, Ucb};
pub use constrained::{Constrained, Feasibility};
pub use context::{Aggregate, ContextAcquisition, ContextUcb};
pub use ehvi::{Cell, LogEhvi, non_dominated_cells};
pub use expected::{Expected, ExpectedUcb};
pub(crate) use mes::log_term as mes_log_term;
pub use mes::{MaxValueSampler, Mes, gumbel_max_values, sample_max_values};
pub use noisy_ei::LogNei;
pub use thompson::ThompsonSample;

/// A function to maximise over encoded points.
pub trait Acquisition {
    /// Input dimension.
    fn dim(&self) -> usize;

    /// Value at `x`.
    fn value(&self, x: &[f64]) -> f64;

    /// Value at `x`; writes ∂/∂x into `grad` (length [`Acquisition::dim`]).
    fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64;

    /// Values at `m` row-major points. Implementations override this with a batched posterior.
    fn values(&self, xs: &[f64]) -> Vec<f64> {
        xs.chunks_exact(self.dim().max(1)).map(|x| self.value(x)).collect()
    }

    /// Values at `m` row-major points for choosing the best `keep` of them (the optimiser's raw samples): exact
    /// wherever a point can be among the best `keep`, −∞ where the implementation proves it cannot be. Defaults to
    /// [`Acquisition::values`]; [`LogNei`] screens with cheap bounds.
    fn best_values(&self, xs: &[f64], _keep: usize) -> Vec<f64> {
        self.values(xs)
    }
}

impl<A: Acquisition + ?Sized> Acquisition for Box<A> {
    fn dim(&self) -> usize {
        (**self).dim()
    }

    fn value(&self, x: &[f64]) -> f64 {
        (**self).value(x)
    }

    fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        (**self).value_and_grad(x, grad)
    }

    fn values(&self, xs: &[f64]) -> Vec<f64> {
        (**self).values(xs)
    }

    fn best_values(&self, xs: &[f64], keep: usize) -> Vec<f64> {
        (**self).best_values(xs, keep)
    }
}
