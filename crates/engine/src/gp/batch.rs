//! Posterior means and variances at many points with their gradients in a subset of the input coordinates, from
//! one cross-covariance block and two triangular solves with m right-hand sides (BLAS-3), instead of m separate
//! calls of [`Gp::posterior_with_grad`].
//!
//! The expectation and worst-case acquisitions over context samples (seed 002) evaluate the UCB at the same
//! decision x paired with M sampled contexts; this is their hot path.

use faer::Mat;

use super::Gp;
use crate::linalg::dot;

/// Posterior at `m` points with gradients in `q` chosen coordinates (row-major `m × q`), raw units.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BatchPosterior {
    /// Posterior means.
    pub mean: Vec<f64>,
    /// Posterior variances of the latent f.
    pub var: Vec<f64>,
    /// ∂mean/∂x_j for the chosen coordinates, `m × q`.
    pub dmean: Vec<f64>,
    /// ∂var/∂x_j for the chosen coordinates, `m × q` (0 where the variance is clamped at 0).
    pub dvar: Vec<f64>,
}

impl Gp {
    /// Posterior means, variances and their gradients in the coordinates `dims` at `m` row-major points.
    pub fn posterior_batch_grad(&self, xs: &[f64], dims: &[usize]) -> BatchPosterior {
        let (n, d, q) = (self.n(), self.d.max(1), dims.len());
        let m = xs.len() / d;
        let (prepared, train) = (&self.prepared, &self.scaled_x);
        let mut kt = Mat::<f64>::zeros(n, m);
        let mut dk = vec![0.0; m * n * q];
        let mut k = vec![0.0; n];
        let mut g = vec![0.0; n * d];
        for (p, x) in xs.chunks_exact(d).enumerate() {
            prepared.cross_vec_grad(&prepared.scale(x), train, &mut k, &mut g);
            kt.col_as_slice_mut(p).copy_from_slice(&k);
            let block = &mut dk[p * n * q..(p + 1) * n * q];
            for i in 0..n {
                for (c, &j) in dims.iter().enumerate() {
                    block[i * q + c] = g[i * d + j];
                }
            }
        }
        let s = self.std.scale;
        let mut out = BatchPosterior {
            mean: Vec::with_capacity(m),
            var: Vec::with_capacity(m),
            dmean: vec![0.0; m * q],
            dvar: vec![0.0; m * q],
        };
        for (p, x) in xs.chunks_exact(d).enumerate() {
            out.mean.push(self.raw_mean(x, dot(kt.col_as_slice(p), &self.alpha)));
            let dm = &mut out.dmean[p * q..(p + 1) * q];
            for i in 0..n {
                let row = &dk[(p * n + i) * q..(p * n + i + 1) * q];
                for c in 0..q {
                    dm[c] += row[c] * self.alpha[i];
                }
            }
            dm.iter_mut().for_each(|v| *v *= s);
            if let Some(pm) = &self.prior_mean {
                let mut full = vec![0.0; d];
                pm.add_gradient(x, &mut full);
                for (c, &j) in dims.iter().enumerate() {
                    dm[c] += full[j];
                }
            }
        }
        if n == 0 {
            out.var = vec![self.prior_variance(); m];
            return out;
        }
        self.chol.solve_l_in_place(kt.as_mut());
        let pv = self.kernel.prior_variance(&self.hypers.theta);
        let raw_var: Vec<f64> = (0..m).map(|p| pv - kt.col_as_slice(p).iter().map(|a| a * a).sum::<f64>()).collect();
        self.chol.solve_lt_in_place(kt.as_mut()); // now (K + Σ)⁻¹ k(X, x_p) per column
        let s2 = s * s;
        for p in 0..m {
            out.var.push(raw_var[p].max(0.0) * s2);
            if raw_var[p] <= 0.0 {
                continue;
            }
            let kinv_k = kt.col_as_slice(p);
            let dv = &mut out.dvar[p * q..(p + 1) * q];
            for i in 0..n {
                let row = &dk[(p * n + i) * q..(p * n + i + 1) * q];
                for c in 0..q {
                    dv[c] -= 2.0 * row[c] * kinv_k[i];
                }
            }
            dv.iter_mut().for_each(|v| *v *= s2);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Data, GpConfig, Hyperparameters};
    use super::*;

    fn model() -> Gp {
        let x: Vec<f64> = (0..24).map(|i| ((i * 37 + 11) % 23) as f64 / 23.0).collect();
        let y: Vec<f64> = x.chunks_exact(3).map(|p| (3.0 * p[0]).sin() + p[1] * p[2]).collect();
        let config = GpConfig::default_for(3);
        let hypers = Hyperparameters { theta: vec![-1.0, -0.5, -0.2, 0.3], noise_variance: 1e-4, mean: 0.1 };
        Gp::new(&Data::new(3, x, y), &config, hypers).unwrap()
    }

    #[test]
    fn batch_matches_single_point_posteriors() {
        let gp = model();
        let xs = [0.1, 0.2, 0.3, 0.9, 0.5, 0.05, 0.4, 0.4, 0.8];
        let dims = [0, 2];
        let b = gp.posterior_batch_grad(&xs, &dims);
        for (p, x) in xs.chunks_exact(3).enumerate() {
            let (mut dm, mut dv) = (vec![0.0; 3], vec![0.0; 3]);
            let (mu, var) = gp.posterior_with_grad(x, &mut dm, &mut dv);
            assert!((b.mean[p] - mu).abs() < 1e-10 * (1.0 + mu.abs()));
            assert!((b.var[p] - var).abs() < 1e-10);
            for (c, &j) in dims.iter().enumerate() {
                assert!((b.dmean[p * 2 + c] - dm[j]).abs() < 1e-8 * (1.0 + dm[j].abs()));
                assert!((b.dvar[p * 2 + c] - dv[j]).abs() < 1e-8 * (1.0 + dv[j].abs()));
            }
        }
    }
}
