//! Test functions drawn from a Gaussian process, as in the synthetic experiments of TRUVAR (Bogunovic et al., NIPS
//! 2016, Sec. 4) and HE-GP-UCB (seed 004): a joint prior draw at given points, and the posterior mean of a GP
//! conditioned on such a draw, with its maximiser.

use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::StandardNormal;

use crate::acquisition::Ucb;
use crate::error::Result;
use crate::gp::{Data, Gp};
use crate::kernel::{Kernel, KernelFamily};
use crate::linalg::Cholesky;
use crate::optim::{OptimConfig, maximize};
use crate::policy::FixedHyperparameters;
use crate::space::{ParameterSpec, Space};

/// A joint draw of f ~ GP(0, k) at the rows of `points` (`d` columns): `L z` with `L` the Cholesky factor of the
/// Gram matrix of the ARD kernel `family` with log-parameters `theta` (log lengthscales, then log output scale) and
/// z standard normal from `rng`.
pub fn gp_prior_draw(points: &[f64], d: usize, family: KernelFamily, theta: &[f64], rng: &mut impl Rng) -> Vec<f64> {
    let chol = Cholesky::factor(Kernel::ard(family, d).gram(theta, points)).expect("a Gram matrix factors with jitter");
    let l = chol.l();
    let n = points.len() / d.max(1);
    let z: Vec<f64> = (0..n).map(|_| rng.sample(StandardNormal)).collect();
    (0..n).map(|i| (0..=i).map(|j| l[(i, j)] * z[j]).sum()).collect()
}

/// A joint draw at 2-D `points` of a unit-variance GP with `lengthscales`, seeded by `seed`.
pub fn sample_gp(points: &[f64], family: KernelFamily, lengthscales: [f64; 2], seed: u64) -> Vec<f64> {
    let mut theta: Vec<f64> = lengthscales.iter().map(|l| l.ln()).collect();
    theta.push(0.0);
    gp_prior_draw(points, 2, family, &theta, &mut StdRng::seed_from_u64(seed))
}

/// TRUVAR's synthetic BO function: the posterior mean of a GP (SE, ℓ = 0.1, unit variance) conditioned on a joint
/// draw at `n_points` uniform random points of [0,1]².
pub struct PosteriorMeanFunction {
    gp: Gp,
}

impl PosteriorMeanFunction {
    /// Function number `seed`.
    pub fn new(seed: u64, n_points: usize) -> Self {
        let mut rng = StdRng::seed_from_u64(seed ^ 0xB0B0);
        let x: Vec<f64> = (0..2 * n_points).map(|_| rng.random()).collect();
        let y = sample_gp(&x, KernelFamily::Rbf, [0.1, 0.1], seed);
        let gp = known_gp(&Data::new(2, x, y), 0.1, 1e-10).expect("the GP of a test function");
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

/// The SE GP with known hyperparameters (one lengthscale `lengthscale`, unit variance, noise variance `noise`, no
/// standardisation) on `data`: the model the TRUVAR experiments score with.
pub fn known_gp(data: &Data, lengthscale: f64, noise: f64) -> Result<Gp> {
    let fixed = FixedHyperparameters {
        lengthscales: vec![lengthscale],
        outputscale: 1.0,
        noise_variance: noise,
        standardize: false,
    };
    fixed.gp(data, KernelFamily::Rbf)
}

/// Maximiser of a GP's posterior mean over [0,1]²: the best of `grid` (row-major) polished by the bounded
/// quasi-Newton method from the 5 best grid points.
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
