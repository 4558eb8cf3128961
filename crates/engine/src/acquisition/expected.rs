//! Expectation of an acquisition over random input dimensions by sample-average approximation with common random
//! numbers: `E_ξ[a([x, ξ])] ≈ (1/M) Σ_m a([x, ξ_m])` with the M samples ξ_m fixed for the whole optimisation, so
//! the optimiser sees a deterministic, differentiable function of the controlled part x. Used for uncontrolled
//! variables (control sets, seed 000) and unknown contexts (seed 002).

use super::Acquisition;

/// `E_ξ[a([x, ξ])]` over fixed samples ξ of the dimensions not in `controlled`.
pub struct Expected<A> {
    inner: A,
    controlled: Vec<usize>,
    others: Vec<usize>,
    samples: Vec<f64>,
    m: usize,
}

impl<A: Acquisition> Expected<A> {
    /// `controlled`: dimensions of the inner input set by x (in x's order); `others`: the remaining ones, with
    /// `samples` an `M × others.len()` row-major matrix of their values.
    pub fn new(inner: A, controlled: Vec<usize>, others: Vec<usize>, samples: Vec<f64>) -> Self {
        debug_assert_eq!(controlled.len() + others.len(), inner.dim());
        let m = if others.is_empty() { 1 } else { samples.len() / others.len() };
        Self { inner, controlled, others, samples, m }
    }

    /// The full inner input for x and sample `s`.
    fn compose(&self, x: &[f64], s: usize, out: &mut [f64]) {
        for (q, &j) in self.controlled.iter().enumerate() {
            out[j] = x[q];
        }
        let k = self.others.len();
        for (q, &j) in self.others.iter().enumerate() {
            out[j] = self.samples[s * k + q];
        }
    }
}

impl<A: Acquisition> Acquisition for Expected<A> {
    fn dim(&self) -> usize {
        self.controlled.len()
    }

    fn value(&self, x: &[f64]) -> f64 {
        self.values(x)[0]
    }

    fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let d = self.inner.dim();
        let mut full = vec![0.0; d];
        let mut g = vec![0.0; d];
        grad.iter_mut().for_each(|v| *v = 0.0);
        let mut total = 0.0;
        for s in 0..self.m {
            self.compose(x, s, &mut full);
            total += self.inner.value_and_grad(&full, &mut g);
            for (q, &j) in self.controlled.iter().enumerate() {
                grad[q] += g[j];
            }
        }
        let inv = 1.0 / self.m as f64;
        grad.iter_mut().for_each(|v| *v *= inv);
        total * inv
    }

    fn values(&self, xs: &[f64]) -> Vec<f64> {
        let d = self.inner.dim();
        let dc = self.controlled.len().max(1);
        let points = xs.len() / dc;
        let mut full = vec![0.0; points * self.m * d];
        for p in 0..points {
            for s in 0..self.m {
                let row = (p * self.m + s) * d;
                self.compose(&xs[p * dc..(p + 1) * dc], s, &mut full[row..row + d]);
            }
        }
        let v = self.inner.values(&full);
        v.chunks_exact(self.m).map(|c| c.iter().sum::<f64>() / self.m as f64).collect()
    }
}
