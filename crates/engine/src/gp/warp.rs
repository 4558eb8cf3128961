//! Output warping: a monotone transform of the observed values before the GP sees them, for objectives whose bad
//! values are orders of magnitude worse than the good ones (Rosenbrock-like valleys, ill-conditioned quadratics,
//! runs that fail softly). A GP on such values spends its output scale on the few worst points, and the
//! differences among the good ones vanish after standardisation.
//!
//! The values (maximised) are centred on their median and divided by their interquartile range (÷ 1.349, the
//! normal's), so the good points are spread over O(1) whatever the outliers do. Then the lower half goes through
//! the negative branch of the Yeo–Johnson transform (Yeo & Johnson 2000), `ψ(z) = −((1 − z)^{2−λ} − 1)/(2 − λ)` for
//! z < 0, and the upper half is left as it is (`ψ(z) = z`, so ψ is C¹ at 0). λ ∈ [1, 2] by maximum likelihood (a
//! normal model of ψ(z) with its Jacobian, as scikit-learn's `PowerTransformer` fits the full transform;
//! golden-section search): λ = 1 is the identity, λ = 2 compresses the bad tail logarithmically. One-sided on
//! purpose: the full two-sided transform also stretches or squeezes the good tail, which on `bench robust` cost
//! the plateau and Levy-20 problems up to a factor of three (see `docs/bench/robust.md`). The transform is used only
//! where it is worth it: when the likelihood ratio against λ = 1 exceeds [`MIN_LOG_LIKELIHOOD_GAIN`] (a 5 % χ²₁
//! test) with at least [`MIN_POINTS`] values; the standard model then keeps the warp only where the GP explains the
//! warped values better (`policy::model::choose_warp`). HEBO (Cowen-Rivers et al. 2022) warps its outputs with power
//! transforms in the same spirit.
//!
//! Predictions are mapped back to the objective's units: the posterior mean becomes the inverse transform of the
//! warped mean (the posterior *median* in raw units) and the standard deviation is the delta-method one,
//! `σ_w / ψ'(ψ⁻¹(μ_w))` times the scale.

use serde::{Deserialize, Serialize};

/// Log-likelihood gain over the identity needed to warp (half the 95 % quantile of χ²₁).
pub const MIN_LOG_LIKELIHOOD_GAIN: f64 = 1.92;

/// Fewer values are never warped.
pub const MIN_POINTS: usize = 8;

/// A fitted output warp `w = ψ_λ((y − centre)/scale)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OutputWarp {
    /// Subtracted first (the median).
    pub centre: f64,
    /// Divided by next (interquartile range / 1.349).
    pub scale: f64,
    /// Yeo–Johnson λ.
    pub lambda: f64,
}

/// ψ_λ(z): the Yeo–Johnson negative branch below 0, the identity above.
fn psi(z: f64, l: f64) -> f64 {
    if z >= 0.0 {
        z
    } else if (2.0 - l).abs() < 1e-12 {
        -(-z).ln_1p()
    } else {
        -((1.0 - z).powf(2.0 - l) - 1.0) / (2.0 - l)
    }
}

fn psi_derivative(z: f64, l: f64) -> f64 {
    if z >= 0.0 { 1.0 } else { (1.0 - z).powf(1.0 - l) }
}

fn psi_inverse(w: f64, l: f64) -> f64 {
    if w >= 0.0 {
        w
    } else if (2.0 - l).abs() < 1e-12 {
        -(-w).exp_m1()
    } else {
        1.0 - (1.0 - (2.0 - l) * w).max(f64::MIN_POSITIVE).powf(1.0 / (2.0 - l))
    }
}

/// Profile log-likelihood of λ: a normal with MLE mean and variance for ψ_λ(z), plus the log-Jacobian.
fn log_likelihood(z: &[f64], l: f64) -> f64 {
    let n = z.len() as f64;
    let w: Vec<f64> = z.iter().map(|&v| psi(v, l)).collect();
    let mean = w.iter().sum::<f64>() / n;
    let var = w.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    if !(var > 0.0 && var.is_finite()) {
        return f64::NEG_INFINITY;
    }
    let jac: f64 = z.iter().filter(|v| **v < 0.0).map(|&v| (1.0 - l) * (-v).ln_1p()).sum();
    -0.5 * n * var.ln() + jac
}

impl OutputWarp {
    /// The warp of `y`, or `None` when it is not worth it (too few values, no spread, or λ = 1 explains the values
    /// about as well).
    pub fn fit(y: &[f64]) -> Option<Self> {
        if y.len() < MIN_POINTS || y.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let mut sorted = y.to_vec();
        sorted.sort_by(f64::total_cmp);
        let q = |p: f64| {
            let pos = p * (sorted.len() - 1) as f64;
            let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
            sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
        };
        let centre = q(0.5);
        let scale = (q(0.75) - q(0.25)) / 1.349;
        if !(scale > 0.0 && scale.is_finite()) {
            return None;
        }
        let z: Vec<f64> = y.iter().map(|v| (v - centre) / scale).collect();
        // Golden-section search of the (unimodal in practice) profile likelihood on [1, 2].
        let phi = (5f64.sqrt() - 1.0) / 2.0;
        let (mut a, mut b) = (1.0f64, 2.0f64);
        let (mut c, mut d) = (b - phi * (b - a), a + phi * (b - a));
        let (mut fc, mut fd) = (log_likelihood(&z, c), log_likelihood(&z, d));
        for _ in 0..48 {
            if fc > fd {
                b = d;
                d = c;
                fd = fc;
                c = b - phi * (b - a);
                fc = log_likelihood(&z, c);
            } else {
                a = c;
                c = d;
                fc = fd;
                d = a + phi * (b - a);
                fd = log_likelihood(&z, d);
            }
        }
        let mut lambda = 0.5 * (a + b);
        // The ends are candidates too (the search never evaluates them exactly).
        for end in [1.0, 2.0] {
            if log_likelihood(&z, end) > log_likelihood(&z, lambda) {
                lambda = end;
            }
        }
        let gain = log_likelihood(&z, lambda) - log_likelihood(&z, 1.0);
        (gain >= MIN_LOG_LIKELIHOOD_GAIN).then_some(Self { centre, scale, lambda })
    }

    /// ψ(y).
    pub fn apply(&self, y: f64) -> f64 {
        psi((y - self.centre) / self.scale, self.lambda)
    }

    /// dψ/dy at `y`.
    pub fn derivative(&self, y: f64) -> f64 {
        psi_derivative((y - self.centre) / self.scale, self.lambda) / self.scale
    }

    /// ψ⁻¹(w).
    pub fn invert(&self, w: f64) -> f64 {
        self.centre + self.scale * psi_inverse(w, self.lambda)
    }

    /// Warps `data` in place: values, and known noise variances by the delta method.
    pub fn warp_data(&self, data: &mut super::Data) {
        if let Some(nv) = &mut data.noise_var {
            for (v, y) in nv.iter_mut().zip(&data.y) {
                *v *= self.derivative(*y).powi(2);
            }
        }
        for y in &mut data.y {
            *y = self.apply(*y);
        }
    }

    /// A warped posterior `(mean, sd)` in the objective's units: the median and the delta-method standard deviation.
    pub fn unwarp(&self, mean: f64, sd: f64) -> (f64, f64) {
        let y = self.invert(mean);
        let slope = self.derivative(y);
        (y, if slope > 0.0 && slope.is_finite() { sd / slope } else { f64::INFINITY })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transform_inverts_and_differentiates() {
        for l in [0.0, 0.3, 1.0, 1.7, 2.0] {
            for z in [-30.0, -2.0, -0.1, 0.0, 0.4, 5.0, 1e3] {
                let w = psi(z, l);
                assert!((psi_inverse(w, l) - z).abs() <= 1e-9 * z.abs().max(1.0), "λ {l}, z {z}");
                let h = 1e-6 * z.abs().max(1.0);
                let numeric = (psi(z + h, l) - psi(z - h, l)) / (2.0 * h);
                assert!((numeric - psi_derivative(z, l)).abs() <= 1e-5 * numeric.abs().max(1.0), "λ {l}, z {z}");
            }
        }
    }

    /// λ and the likelihood gain that `tests/fixtures/gen_warp.py` prints (scipy's Yeo–Johnson on the negative
    /// values and a bounded scalar optimiser, on the same standardised values).
    #[test]
    fn heavy_lower_tail_gets_compressed_and_normal_data_is_left_alone() {
        // A minimisation objective's values (negated): most near the optimum, a few much worse.
        let y: Vec<f64> = (0..40).map(|i| -((i as f64 * 0.37).sin().abs() * 10f64.powf(i as f64 / 60.0))).collect();
        let w = OutputWarp::fit(&y).expect("heavy tail is warped");
        assert!((w.lambda - 1.803_457_638_735_989_7).abs() < 1e-6, "λ {}", w.lambda);
        let z: Vec<f64> = y.iter().map(|v| (v - w.centre) / w.scale).collect();
        let gain = log_likelihood(&z, w.lambda) - log_likelihood(&z, 1.0);
        assert!((gain - 2.670_165_909_549_728).abs() < 1e-6, "gain {gain}");
        for &v in &y {
            assert!((w.invert(w.apply(v)) - v).abs() <= 1e-9 * v.abs().max(1.0));
        }
        let normal: Vec<f64> = (1..=40).map(|i| crate::special::norm_quantile(i as f64 / 41.0)).collect();
        assert!(OutputWarp::fit(&normal).is_none());
        // A heavy upper tail (a few much better points) is left alone: that tail is never compressed.
        let upper: Vec<f64> = y.iter().map(|v| -v).collect();
        assert!(OutputWarp::fit(&upper).is_none());
        assert!(OutputWarp::fit(&[1.0; 20]).is_none());
        assert!(OutputWarp::fit(&y[..MIN_POINTS - 1]).is_none());
    }
}
