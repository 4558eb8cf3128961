//! One-step look-ahead of the posterior variance on a set of points, through the Cholesky factor (TRUVAR,
//! Bogunovic et al., NIPS 2016, App. B, Eqs. 18–20):
//! `σ²_{t−1|x}(M) = σ²_{t−1}(M) − Cov_{t−1}(M, x)² / (σ²(x) + σ²_{t−1}(x))`, with
//! `Cov_{t−1}(M, x) = k(M, x) − (L⁻¹k_{t−1}(M))ᵀ (L⁻¹k_{t−1}(x))`. The solve `L⁻¹k_{t−1}(x)` is O(t²) per candidate;
//! the products with the |M| columns are done for a block of candidates at once.
//!
//! Everything is in the GP's standardised units (raw variances divided by the output scale²), the units of its
//! Cholesky factor; noise variances passed in must be standardised the same way.

use faer::Mat;

use crate::gp::Gp;

/// The posterior on the points M, ready for look-aheads.
#[derive(Debug, Clone)]
pub struct Lookahead<'a> {
    gp: &'a Gp,
    m_points: Vec<f64>,
    /// `L⁻¹ k_{t−1}(M)`, n × |M|.
    a: Mat<f64>,
    /// σ²_{t−1}(M), standardised.
    pub var_m: Vec<f64>,
}

impl<'a> Lookahead<'a> {
    /// Prepares the look-ahead on the row-major points `m_points` (full encoded).
    pub fn new(gp: &'a Gp, m_points: &[f64]) -> Self {
        let d = gp.d().max(1);
        let theta = &gp.hyperparameters().theta;
        let pv = gp.kernel().prior_variance(theta);
        let m = m_points.len() / d;
        let mut a = gp.kernel().cross(theta, gp.x(), m_points);
        let var_m = if gp.n() == 0 {
            vec![pv; m]
        } else {
            gp.cholesky().solve_l_in_place(a.as_mut());
            (0..m).map(|j| (pv - a.col_as_slice(j).iter().map(|v| v * v).sum::<f64>()).max(0.0)).collect()
        };
        Self { gp, m_points: m_points.to_vec(), a, var_m }
    }

    /// Number of points in M.
    pub fn len(&self) -> usize {
        self.var_m.len()
    }

    /// True when M is empty.
    pub fn is_empty(&self) -> bool {
        self.var_m.is_empty()
    }

    /// For candidates `xs` (row-major, full encoded): their posterior variances σ²_{t−1}(x) and the
    /// covariances `Cov_{t−1}(M, x)` as an |M| × |xs| matrix (standardised units).
    pub fn cross(&self, xs: &[f64]) -> (Vec<f64>, Mat<f64>) {
        let gp = self.gp;
        let d = gp.d().max(1);
        let theta = &gp.hyperparameters().theta;
        let pv = gp.kernel().prior_variance(theta);
        let c = xs.len() / d;
        let mut cov = gp.kernel().cross(theta, &self.m_points, xs);
        if gp.n() == 0 {
            return (vec![pv; c], cov);
        }
        let mut b = gp.kernel().cross(theta, gp.x(), xs);
        gp.cholesky().solve_l_in_place(b.as_mut());
        let var_x = (0..c).map(|j| (pv - b.col_as_slice(j).iter().map(|v| v * v).sum::<f64>()).max(0.0)).collect();
        cov -= self.a.transpose() * &b;
        (var_x, cov)
    }

    /// σ²_{t−1|x}(M) for one candidate: `var_x` its variance, `cov_x` its column of [`Lookahead::cross`], `noise`
    /// the (standardised) noise variance it would be observed with.
    pub fn variance_after(&self, var_x: f64, cov_x: &[f64], noise: f64) -> Vec<f64> {
        let denom = noise + var_x;
        self.var_m.iter().zip(cov_x).map(|(v, c)| if denom > 0.0 { (v - c * c / denom).max(0.0) } else { *v }).collect()
    }
}

/// Cost-free truncated variance reduction of Eq. (3):
/// `Σ_{x̄∈M} max{β σ²_{t−1}(x̄), η²} − Σ_{x̄∈M} max{β σ²_{t−1|x}(x̄), η²}`.
pub fn truncated_reduction(var_m: &[f64], cov_x: &[f64], var_x: f64, noise: f64, beta: f64, eta2: f64) -> f64 {
    let denom = noise + var_x;
    if denom <= 0.0 {
        return 0.0;
    }
    var_m
        .iter()
        .zip(cov_x)
        .map(|(v, c)| {
            let before = (beta * v).max(eta2);
            if before <= eta2 {
                return 0.0;
            }
            before - (beta * (v - c * c / denom).max(0.0)).max(eta2)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gp::{Data, GpConfig, Hyperparameters, NoiseModel};
    use crate::kernel::{Kernel, KernelFamily};
    use rand::{Rng, SeedableRng, rngs::StdRng};

    fn gp(n: usize, noise: Option<Vec<f64>>) -> Gp {
        let mut rng = StdRng::seed_from_u64(3);
        let x: Vec<f64> = (0..2 * n).map(|_| rng.random()).collect();
        let y: Vec<f64> = x.chunks(2).map(|p| (6.0 * p[0]).sin() + p[1] * p[1]).collect();
        let mut config = GpConfig::default_for(2);
        config.kernel = Kernel::ard(KernelFamily::Matern52, 2);
        config.noise = NoiseModel::Fixed(1e-3);
        let hypers = Hyperparameters { theta: vec![0.2f64.ln(), 0.3f64.ln(), 0.0], noise_variance: 0.0, mean: 0.0 };
        Gp::new(&Data { d: 2, x, y, noise_var: noise }, &config, hypers).unwrap()
    }

    /// Look-ahead variance = variance of the GP refitted with the extra point (App. B), to 1e-9 relative.
    #[test]
    fn lookahead_variance_equals_the_refitted_posterior() {
        for (n, noise) in [(0, None), (12, None), (12, Some((0..12).map(|i| 0.01 * i as f64).collect()))] {
            let g = gp(n, noise);
            let s2 = g.standardizer().scale.powi(2);
            let m: Vec<f64> = (0..40).flat_map(|i| [(i as f64 * 0.37) % 1.0, (i as f64 * 0.61) % 1.0]).collect();
            let look = Lookahead::new(&g, &m);
            let xs = [0.3, 0.7, 0.9, 0.1];
            let (var_x, cov) = look.cross(&xs);
            for (k, x) in xs.chunks(2).enumerate() {
                let known = 0.02;
                let noise_std = g.hyperparameters().noise_variance + known / s2;
                let after = look.variance_after(var_x[k], cov.col_as_slice(k), noise_std);
                let mut refit = g.clone();
                refit.condition(x, 0.5, Some(known)).unwrap();
                let (_, expect) = refit.posterior_batch(&m);
                for (a, e) in after.iter().zip(&expect) {
                    let a_raw = a * s2;
                    assert!((a_raw - e).abs() <= 1e-9 * e.abs().max(1e-12), "n={n}: {a_raw} vs {e}");
                }
                let (_, before) = g.posterior_batch(&m);
                for (v, b) in look.var_m.iter().zip(&before) {
                    assert!((v * s2 - b).abs() <= 1e-9 * b.abs().max(1e-12));
                }
            }
        }
    }

    #[test]
    fn truncation_ignores_points_already_below_the_target() {
        // Two points in M: one at variance 1 (β σ² = 2 > η² = 0.5), one at 0.1 (β σ² = 0.2 < η²).
        let var_m = [1.0, 0.1];
        let cov = [0.9, 0.3];
        let r = truncated_reduction(&var_m, &cov, 1.0, 0.0, 2.0, 0.5);
        let after0 = (2.0f64 * (1.0 - 0.81)).max(0.5);
        assert!((r - (2.0 - after0)).abs() < 1e-12);
        // A target above every β σ² leaves nothing to reduce.
        assert_eq!(truncated_reduction(&var_m, &cov, 1.0, 0.0, 2.0, 5.0), 0.0);
    }
}
