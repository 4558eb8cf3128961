//! Test functions of the seed-003 suite: joint GP samples on a grid, and GP posterior means through random points
//! (TRUVAR, Bogunovic et al., NIPS 2016, Sec. 4).

use engine::acquisition::Ucb;
use engine::gp::{Data, Gp};
use engine::kernel::{Kernel, KernelFamily};
use engine::linalg::Cholesky;
use engine::optim::{OptimConfig, maximize};
use engine::policy::FixedHyperparameters;
use engine::space::{ParameterSpec, Space};
use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, StandardNormal};

/// `n × n` grid of [0,1]² (both edges included), row-major points, x0 varying slowest.
pub fn unit_grid(n: usize) -> Vec<f64> {
    let at = |i: usize| if n == 1 { 0.5 } else { i as f64 / (n - 1) as f64 };
    (0..n).flat_map(|i| (0..n).flat_map(move |j| [at(i), at(j)])).collect()
}

/// Index of the grid point of an `n × n` [`unit_grid`] nearest to `(x0, x1)`.
pub fn grid_index(n: usize, x0: f64, x1: f64) -> usize {
    let r = |v: f64| ((v * (n - 1) as f64).round() as usize).min(n - 1);
    r(x0) * n + r(x1)
}

/// A joint draw of f ~ GP(0, k) at `points` (2-D), k of `family` with `lengthscales` and unit variance.
pub fn sample_gp(points: &[f64], family: KernelFamily, lengthscales: [f64; 2], seed: u64) -> Vec<f64> {
    let mut theta: Vec<f64> = lengthscales.iter().map(|l| l.ln()).collect();
    theta.push(0.0);
    let k = Kernel::ard(family, 2).gram(&theta, points);
    let chol = Cholesky::factor(k).expect("a Gram matrix factors with jitter");
    let l = chol.l();
    let n = points.len() / 2;
    let mut rng = StdRng::seed_from_u64(seed);
    let z: Vec<f64> = (0..n).map(|_| StandardNormal.sample(&mut rng)).collect();
    (0..n).map(|i| (0..=i).map(|j| l[(i, j)] * z[j]).sum()).collect()
}

/// Synthetic BO function: the posterior mean of a GP (SE, ℓ = 0.1, unit variance) conditioned on a joint draw at
/// `n_points` uniform random points of [0,1]².
pub struct PosteriorMeanFunction {
    gp: Gp,
}

impl PosteriorMeanFunction {
    /// Function number `seed`.
    pub fn new(seed: u64, n_points: usize) -> Self {
        let mut rng = StdRng::seed_from_u64(seed ^ 0xB0B0);
        let x: Vec<f64> = (0..2 * n_points).map(|_| rng.random()).collect();
        let y = sample_gp(&x, KernelFamily::Rbf, [0.1, 0.1], seed);
        let fixed = FixedHyperparameters {
            lengthscales: vec![0.1],
            outputscale: 1.0,
            noise_variance: 1e-10,
            standardize: false,
        };
        let gp = fixed.gp(&Data::new(2, x, y), KernelFamily::Rbf).expect("the GP of a test function");
        Self { gp }
    }

    /// f(x).
    pub fn eval(&self, x: &[f64]) -> f64 {
        self.gp.posterior(x).0
    }

    /// The GP whose mean is f.
    pub fn gp(&self) -> &Gp {
        &self.gp
    }
}

/// Maximiser of a GP's posterior mean over [0,1]²: the best of `grid` (row-major) polished by bounded L-BFGS from
/// the 5 best grid points.
pub fn argmax_mean(gp: &Gp, grid: &[f64]) -> Vec<f64> {
    let mean = gp.posterior_batch(grid).0;
    let mut order: Vec<usize> = (0..mean.len()).collect();
    order.sort_by(|&a, &b| mean[b].total_cmp(&mean[a]));
    let starts: Vec<Vec<f64>> = order.iter().take(5).map(|&i| grid[2 * i..2 * i + 2].to_vec()).collect();
    let acq = Ucb::with_multiplier(gp, 0.0);
    let config = OptimConfig { raw_samples: 1, restarts: 0, max_iter: 100 };
    let opt = maximize(&acq, &unit_square(), &config, 0, &starts);
    if opt.value >= mean[order[0]] { opt.x } else { starts[0].clone() }
}

fn unit_square() -> Space {
    let specs: Vec<ParameterSpec> = serde_json::from_value(serde_json::json!([
        {"name": "x0", "type": "float", "low": 0, "high": 1},
        {"name": "x1", "type": "float", "low": 0, "high": 1}
    ]))
    .expect("a valid parameter list");
    Space::new(&specs).expect("a valid space")
}

/// F1 score of the estimated super-level set against the true one.
pub fn f1(estimated: &[bool], truth: &[bool]) -> f64 {
    let tp = estimated.iter().zip(truth).filter(|(e, t)| **e && **t).count() as f64;
    let fp = estimated.iter().zip(truth).filter(|(e, t)| **e && !**t).count() as f64;
    let fneg = estimated.iter().zip(truth).filter(|(e, t)| !**e && **t).count() as f64;
    if tp == 0.0 { 0.0 } else { 2.0 * tp / (2.0 * tp + fp + fneg) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f1_of_a_perfect_and_of_an_empty_estimate() {
        assert_eq!(f1(&[true, false, true], &[true, false, true]), 1.0);
        assert_eq!(f1(&[false, false, false], &[true, false, true]), 0.0);
        assert!((f1(&[true, true, false], &[true, false, true]) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn grid_index_inverts_the_grid() {
        let g = unit_grid(50);
        assert_eq!(grid_index(50, g[2 * 137], g[2 * 137 + 1]), 137);
    }
}
