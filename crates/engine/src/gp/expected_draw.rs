//! The expectation of one pathwise posterior draw ([`PathwiseSample`]) over fixed samples ξ_m of some input
//! coordinates, `E_ξ[f̃([x, ξ])] ≈ (1/M) Σ_m f̃([x, ξ_m])`, as a function of the other coordinates x (Thompson
//! sampling over control sets, `ts-psq`, seed 000).
//!
//! Evaluated term by term, each of the M points costs F cosines (F random features) and n kernel values. Both
//! terms factorise, so one evaluation costs F sine–cosine pairs and n kernel values whatever M is:
//! - prior draw: `cos(ω_x·x + ω_ξ·ξ_m + b) = cos(ω_x·x) cos(ω_ξ·ξ_m + b) − sin(ω_x·x) sin(ω_ξ·ξ_m + b)`, so the
//!   means over m of `cos(ω_ξ·ξ_m + b)` and `sin(ω_ξ·ξ_m + b)` are computed once per feature;
//! - data term `Σ_i v_i k(x_i, [x, ξ_m])`: [`FixedSamples::mean_weighted`] (for the squared exponential the
//!   kernel splits into a product of an x part and a ξ part).
//!
//! The result equals the per-sample average up to floating-point rounding (tested against it).

use super::{FixedSamples, PathwiseSample};

/// One component's features with the sample coordinates averaged out.
#[derive(Debug, Clone)]
struct AveragedFeatures {
    /// Position in x of every coordinate of the component that x sets, with its column in `omega`.
    free: Vec<(usize, usize)>,
    /// Row stride of `omega` (the component's number of coordinates).
    nd: usize,
    omega: Vec<f64>,
    /// `amp · w_f · mean_m cos(ω_ξ·ξ_m + b_f)` and the same with sin, per feature.
    cos_mean: Vec<f64>,
    sin_mean: Vec<f64>,
}

/// `E_ξ[f̃([x, ξ])]` over fixed samples, see the module docs.
#[derive(Debug, Clone)]
pub struct ExpectedDraw<'a> {
    draw: &'a PathwiseSample,
    split: FixedSamples<'a>,
    features: Vec<AveragedFeatures>,
    q: usize,
}

impl PathwiseSample {
    /// The draw's expectation over `samples` (`M × fixed.len()` row-major) of coordinates `fixed`, x setting
    /// `free` (in x's order). `None` when the two do not partition the inputs or the model has an input-dependent
    /// prior mean (evaluate the draw per sample then).
    pub fn expected(&self, free: &[usize], fixed: &[usize], samples: &[f64]) -> Option<ExpectedDraw<'_>> {
        if self.gp.prior_mean.is_some() {
            return None;
        }
        let split = self.gp.fixed_samples(free, fixed, samples)?;
        let m = split.n_samples();
        let features = self
            .prior
            .comps
            .iter()
            .map(|c| {
                let nd = c.dims.len();
                let mut free_cols = Vec::new();
                let mut fixed_cols = Vec::new();
                for (col, j) in c.dims.iter().enumerate() {
                    match free.iter().position(|v| v == j) {
                        Some(pos) => free_cols.push((pos, col)),
                        None => fixed_cols.push((fixed.iter().position(|v| v == j)?, col)),
                    }
                }
                let (mut cos_mean, mut sin_mean) = (vec![0.0; c.weight.len()], vec![0.0; c.weight.len()]);
                for f in 0..c.weight.len() {
                    let omega = &c.omega[f * nd..(f + 1) * nd];
                    let (mut cs, mut sn) = (0.0, 0.0);
                    for s in 0..m {
                        let xi = &samples[s * fixed.len()..];
                        let arg = fixed_cols.iter().map(|&(r, col)| omega[col] * xi[r]).sum::<f64>() + c.phase[f];
                        let (a, b) = arg.sin_cos();
                        sn += a;
                        cs += b;
                    }
                    let scale = c.amp * c.weight[f] / m as f64;
                    cos_mean[f] = scale * cs;
                    sin_mean[f] = scale * sn;
                }
                Some(AveragedFeatures { free: free_cols, nd, omega: c.omega.clone(), cos_mean, sin_mean })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(ExpectedDraw { draw: self, split, features, q: free.len() })
    }
}

impl ExpectedDraw<'_> {
    /// Number of coordinates x sets.
    pub fn dim(&self) -> usize {
        self.q
    }

    /// The expectation at `x`; with `grad` (length [`ExpectedDraw::dim`]), also its gradient.
    pub fn evaluate(&self, x: &[f64], mut grad: Option<&mut [f64]>) -> f64 {
        if let Some(g) = grad.as_deref_mut() {
            g.iter_mut().for_each(|v| *v = 0.0);
        }
        let mut prior = 0.0;
        for c in &self.features {
            for f in 0..c.cos_mean.len() {
                let omega = &c.omega[f * c.nd..(f + 1) * c.nd];
                let arg: f64 = c.free.iter().map(|&(pos, col)| omega[col] * x[pos]).sum();
                let (sn, cs) = arg.sin_cos();
                prior += cs * c.cos_mean[f] - sn * c.sin_mean[f];
                if let Some(g) = grad.as_deref_mut() {
                    let d = -(sn * c.cos_mean[f] + cs * c.sin_mean[f]);
                    for &(pos, col) in &c.free {
                        g[pos] += d * omega[col];
                    }
                }
            }
        }
        let data = self.split.mean_weighted(x, &self.draw.v, grad.as_deref_mut());
        let gp = &self.draw.gp;
        if let Some(g) = grad {
            g.iter_mut().for_each(|v| *v *= gp.std.scale);
        }
        gp.raw_mean(&[], prior + data)
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng, rngs::StdRng};

    use crate::gp::{Data, Gp, GpConfig, Hyperparameters};
    use crate::kernel::{Kernel, KernelFamily};

    /// The per-sample average of the draw and of its gradient in the `free` coordinates.
    fn per_sample(
        draw: &crate::gp::PathwiseSample,
        free: &[usize],
        fixed: &[usize],
        samples: &[f64],
        x: &[f64],
    ) -> (f64, Vec<f64>) {
        let d = free.len() + fixed.len();
        let m = samples.len() / fixed.len();
        let (mut value, mut grad) = (0.0, vec![0.0; free.len()]);
        let mut g = vec![0.0; d];
        for s in 0..m {
            let mut p = vec![0.0; d];
            for (q, &j) in free.iter().enumerate() {
                p[j] = x[q];
            }
            for (q, &j) in fixed.iter().enumerate() {
                p[j] = samples[s * fixed.len() + q];
            }
            value += draw.value_and_grad(&p, &mut g) / m as f64;
            assert!((draw.value(&p) - draw.value_and_grad(&p, &mut g)).abs() < 1e-12);
            for (q, &j) in free.iter().enumerate() {
                grad[q] += g[j] / m as f64;
            }
        }
        (value, grad)
    }

    #[test]
    fn factorised_expectation_equals_the_per_sample_average() {
        let mut rng = StdRng::seed_from_u64(3);
        let d = 5;
        for family in [KernelFamily::Rbf, KernelFamily::Matern52, KernelFamily::Matern32] {
            let x: Vec<f64> = (0..30 * d).map(|_| rng.random::<f64>()).collect();
            let y: Vec<f64> = x.chunks_exact(d).map(|p| (5.0 * p[0]).sin() + p[1] * p[3] - p[4]).collect();
            let mut config = GpConfig::default_for(d);
            config.kernel = Kernel::ard(family, d);
            let theta: Vec<f64> = (0..config.kernel.n_params())
                .map(|i| rng.random_range(if i < d { -1.5..0.0 } else { 0.0..0.5 }))
                .collect();
            let hypers = Hyperparameters { theta, noise_variance: 1e-4, mean: 0.3 };
            let gp = Gp::new(&Data::new(d, x, y), &config, hypers).unwrap();
            let draw = gp.pathwise_sample(256, &mut rng).unwrap();
            for (free, fixed) in
                [(vec![3, 0], vec![1, 2, 4]), (vec![4], vec![0, 1, 2, 3]), (vec![0, 1, 2, 3, 4], vec![])]
            {
                let m = if fixed.is_empty() { 1 } else { 23 };
                let samples: Vec<f64> = (0..m * fixed.len()).map(|_| rng.random::<f64>()).collect();
                let expected = draw.expected(&free, &fixed, &samples).unwrap();
                assert_eq!(expected.dim(), free.len());
                for _ in 0..10 {
                    let at: Vec<f64> = (0..free.len()).map(|_| rng.random::<f64>()).collect();
                    let (v1, g1) = if fixed.is_empty() {
                        let mut g = vec![0.0; d];
                        (draw.value_and_grad(&at, &mut g), g)
                    } else {
                        per_sample(&draw, &free, &fixed, &samples, &at)
                    };
                    let mut g2 = vec![0.0; free.len()];
                    let v2 = expected.evaluate(&at, Some(&mut g2));
                    assert!((v1 - v2).abs() < 1e-10 * (1.0 + v1.abs()), "{family:?}: value {v1} vs {v2}");
                    assert_eq!(v2, expected.evaluate(&at, None));
                    let scale = g1.iter().fold(1.0f64, |a, b| a.max(b.abs()));
                    for (a, b) in g1.iter().zip(&g2) {
                        assert!((a - b).abs() < 1e-9 * scale, "{family:?}: gradient {g1:?} vs {g2:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_bad_partition_has_no_factorised_expectation() {
        let mut rng = StdRng::seed_from_u64(5);
        let d = 3;
        let x: Vec<f64> = (0..10 * d).map(|_| rng.random::<f64>()).collect();
        let y: Vec<f64> = x.chunks_exact(d).map(|p| p[0] - p[2]).collect();
        let config = GpConfig::default_for(d);
        let hypers = Hyperparameters { theta: vec![-1.0; config.kernel.n_params()], noise_variance: 1e-4, mean: 0.0 };
        let gp = Gp::new(&Data::new(d, x, y), &config, hypers).unwrap();
        let draw = gp.pathwise_sample(64, &mut rng).unwrap();
        assert!(draw.expected(&[0], &[1], &[0.5]).is_none(), "coordinate 2 is neither free nor fixed");
        assert!(draw.expected(&[0, 1], &[1, 2], &[0.5, 0.5]).is_none(), "coordinate 1 is both");
        assert!(draw.expected(&[0], &[1, 2], &[0.5, 0.5]).is_some());
    }
}
