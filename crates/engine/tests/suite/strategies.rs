//! proptest strategies: random kernels, data sets and test points.

use engine::gp::{Data, Gp, Hyperparameters, MeanModel, NoiseModel};
use engine::kernel::{Kernel, KernelFamily};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;

use crate::common::{FAMILIES, plain_config, random_kernel};

/// A kernel over 1–3 dimensions (one ARD component or two additive ones, any families) with its θ.
pub fn kernel() -> impl Strategy<Value = (Kernel, Vec<f64>)> {
    (1usize..=3, any::<bool>(), select(FAMILIES.to_vec()), select(FAMILIES.to_vec()), vec(0.0f64..1.0, 10))
        .prop_map(|(d, additive, f0, f1, u)| random_kernel(d, additive, [f0, f1], &u))
}

/// A random GP problem: kernel, training data, fixed hyperparameters and a few test points.
#[derive(Debug, Clone)]
pub struct Problem {
    pub kernel: Kernel,
    pub theta: Vec<f64>,
    /// Training points, n × d row-major, in the unit cube.
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    /// Known per-observation noise variances (raw units), when drawn.
    pub noise_var: Option<Vec<f64>>,
    /// Homoscedastic noise variance, standardised units.
    pub noise: f64,
    /// Constant mean, standardised units.
    pub mean: f64,
    pub standardize: bool,
    /// Test points, row-major.
    pub test: Vec<f64>,
}

impl Problem {
    pub fn d(&self) -> usize {
        self.kernel.dim()
    }

    pub fn n(&self) -> usize {
        self.y.len()
    }

    pub fn data(&self) -> Data {
        Data { d: self.d(), x: self.x.clone(), y: self.y.clone(), noise_var: self.noise_var.clone() }
    }

    /// Learned-noise model with the drawn noise and constant mean (nothing is fitted).
    pub fn config(&self) -> engine::gp::GpConfig {
        plain_config(self.kernel.clone(), NoiseModel::Learned { min: 1e-6 }, MeanModel::Constant, self.standardize)
    }

    pub fn hypers(&self) -> Hyperparameters {
        Hyperparameters { theta: self.theta.clone(), noise_variance: self.noise, mean: self.mean }
    }

    pub fn gp(&self) -> Gp {
        Gp::new(&self.data(), &self.config(), self.hypers()).expect("random GP conditions")
    }

    /// Test points whose distance to every training point, scaled by each component's lengthscales, is at least
    /// `min_r` in every component (away from the kink of Matérn-½ at r = 0, where finite differences fail).
    pub fn smooth_test_points(&self, min_r: f64) -> Vec<Vec<f64>> {
        self.test.chunks_exact(self.d()).filter(|t| self.is_smooth_at(t, min_r)).map(<[f64]>::to_vec).collect()
    }

    /// Whether `t` is at least `min_r` (scaled) away from every training point in every non-periodic component.
    pub fn is_smooth_at(&self, t: &[f64], min_r: f64) -> bool {
        self.x.chunks_exact(self.d()).all(|xi| self.component_distances(t, xi).all(|r| r >= min_r))
    }

    /// Whether any component is Matérn-½.
    pub fn has_matern12(&self) -> bool {
        self.kernel.components().iter().any(|c| c.family == KernelFamily::Matern12)
    }

    fn component_distances<'a>(&'a self, a: &'a [f64], b: &'a [f64]) -> impl Iterator<Item = f64> + 'a {
        let mut off = 0;
        self.kernel.components().iter().map(move |c| {
            let th = &self.theta[off..off + c.n_params()];
            off += c.n_params();
            let s: f64 = c.dims.iter().enumerate().map(|(q, &j)| ((a[j] - b[j]) / th[q].exp()).powi(2)).sum();
            if c.family == KernelFamily::Periodic {
                f64::INFINITY // smooth everywhere
            } else {
                s.sqrt()
            }
        })
    }
}

/// A problem with 1..=`max_n` training points, noise in [1e-4, 1e-1] (standardised), |c| ≤ 0.5, optional known
/// noise, standardisation on or off, and four test points.
pub fn problem(max_n: usize) -> impl Strategy<Value = Problem> {
    (kernel(), 1..=max_n, -4.0f64..-1.0, -0.5f64..0.5, any::<bool>(), any::<bool>()).prop_flat_map(
        |((kernel, theta), n, log_noise, mean, standardize, known)| {
            let d = kernel.dim();
            let noise_var = if known { vec(1e-4f64..1e-2, n).prop_map(Some).boxed() } else { Just(None).boxed() };
            (vec(0.0f64..1.0, n * d), vec(-2.0f64..2.0, n), noise_var, vec(0.0f64..1.0, 4 * d)).prop_map(
                move |(x, y, noise_var, test)| Problem {
                    kernel: kernel.clone(),
                    theta: theta.clone(),
                    x,
                    y,
                    noise_var,
                    noise: 10f64.powf(log_noise),
                    mean,
                    standardize,
                    test,
                },
            )
        },
    )
}
