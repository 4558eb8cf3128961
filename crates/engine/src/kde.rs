//! Kernel density estimate of observed contexts, truncated to their box: density and sampling.
//!
//! Huang, Song, Xue, Qian, "Stochastic Bayesian Optimization with Unknown Continuous Context Distribution via
//! Kernel Density Estimation", AAAI 2024, Eq. (2) and App. B.1: a product Gaussian kernel with the rule-of-thumb
//! bandwidth per dimension (Silverman 1986)
//! `h_j = (4/(D + 2))^{1/(D+4)} · σ̂_j · n^{−1/(D+4)}`,
//! σ̂_j the population standard deviation (ddof 0, as the authors' `sample_kde`) of coordinate j of the n
//! observations.
//!
//! Truncation: every kernel is a product of normals truncated to `[lower_j, upper_j]`, so the density integrates
//! to one over the box and samples never leave it. The paper states p̂ on the context box without saying how the
//! boundary is handled; the authors' code clamps samples to the box, which puts point masses on its faces. We
//! truncate instead (same interior shape, no atoms). The paper prints the kernel as `(2π)^{−D/2}e^{−‖x‖²}`; its
//! code uses the standard normal `e^{−‖x‖²/2}`, as here.

use rand::Rng;

use crate::special::{norm_cdf, norm_pdf, norm_quantile};

/// Smallest bandwidth, relative to the box width: keeps the density finite when every observation is equal.
const MIN_RELATIVE_BANDWIDTH: f64 = 1e-9;

/// A truncated product-Gaussian KDE over a box.
#[derive(Debug, Clone, PartialEq)]
pub struct Kde {
    d: usize,
    points: Vec<f64>,
    bandwidth: Vec<f64>,
    lower: Vec<f64>,
    upper: Vec<f64>,
    /// Per point and dimension: `Φ(a)` and `Φ(b) − Φ(a)` of the kernel's truncation interval.
    cdf_low: Vec<f64>,
    mass: Vec<f64>,
}

/// The rule-of-thumb bandwidth of n row-major `d`-dimensional points (see the module docs).
pub fn rule_of_thumb_bandwidth(points: &[f64], d: usize) -> Vec<f64> {
    let n = points.len() / d.max(1);
    if n == 0 {
        return vec![0.0; d];
    }
    let factor = (4.0 / (d as f64 + 2.0)).powf(1.0 / (d as f64 + 4.0)) * (n as f64).powf(-1.0 / (d as f64 + 4.0));
    (0..d)
        .map(|j| {
            let mean = points.chunks_exact(d).map(|p| p[j]).sum::<f64>() / n as f64;
            let var = points.chunks_exact(d).map(|p| (p[j] - mean).powi(2)).sum::<f64>() / n as f64;
            factor * var.sqrt()
        })
        .collect()
}

impl Kde {
    /// The KDE of `points` (n × d row-major, inside the box) with the rule-of-thumb bandwidth. `None` without
    /// points or with a malformed box.
    pub fn fit(points: &[f64], lower: &[f64], upper: &[f64]) -> Option<Self> {
        let d = lower.len();
        let h = rule_of_thumb_bandwidth(points, d);
        Self::with_bandwidth(points, h, lower, upper)
    }

    /// The KDE of `points` with a given bandwidth per dimension.
    pub fn with_bandwidth(points: &[f64], bandwidth: Vec<f64>, lower: &[f64], upper: &[f64]) -> Option<Self> {
        let d = lower.len();
        if d == 0
            || upper.len() != d
            || bandwidth.len() != d
            || points.is_empty()
            || !points.len().is_multiple_of(d)
            || lower.iter().zip(upper).any(|(l, u)| l.partial_cmp(u) != Some(std::cmp::Ordering::Less))
            || points.iter().chain(&bandwidth).any(|v| !v.is_finite())
        {
            return None;
        }
        let bandwidth: Vec<f64> = bandwidth
            .iter()
            .zip(lower.iter().zip(upper))
            .map(|(h, (l, u))| h.max(MIN_RELATIVE_BANDWIDTH * (u - l)))
            .collect();
        let points: Vec<f64> =
            points.chunks_exact(d).flat_map(|p| (0..d).map(move |j| p[j].clamp(lower[j], upper[j]))).collect();
        let mut cdf_low = Vec::with_capacity(points.len());
        let mut mass = Vec::with_capacity(points.len());
        for p in points.chunks_exact(d) {
            for j in 0..d {
                let a = norm_cdf((lower[j] - p[j]) / bandwidth[j]);
                let b = norm_cdf((upper[j] - p[j]) / bandwidth[j]);
                cdf_low.push(a);
                mass.push((b - a).max(f64::MIN_POSITIVE));
            }
        }
        Some(Self { d, points, bandwidth, lower: lower.to_vec(), upper: upper.to_vec(), cdf_low, mass })
    }

    /// Dimension.
    pub fn dim(&self) -> usize {
        self.d
    }

    /// Number of points.
    pub fn n(&self) -> usize {
        self.points.len() / self.d
    }

    /// Bandwidth per dimension.
    pub fn bandwidth(&self) -> &[f64] {
        &self.bandwidth
    }

    /// Density at `c` (0 outside the box).
    pub fn density(&self, c: &[f64]) -> f64 {
        let d = self.d;
        if c.iter().enumerate().any(|(j, v)| !(self.lower[j]..=self.upper[j]).contains(v)) {
            return 0.0;
        }
        let mut total = 0.0;
        for (i, p) in self.points.chunks_exact(d).enumerate() {
            let mut k = 1.0;
            for j in 0..d {
                let h = self.bandwidth[j];
                k *= norm_pdf((c[j] - p[j]) / h) / (h * self.mass[i * d + j]);
            }
            total += k;
        }
        total / self.n() as f64
    }

    /// `m` samples, `m × d` row-major: an observation uniformly at random, then per dimension a normal around it
    /// truncated to the box, by inversion of its distribution function.
    pub fn sample(&self, m: usize, rng: &mut impl Rng) -> Vec<f64> {
        let d = self.d;
        let mut out = Vec::with_capacity(m * d);
        for _ in 0..m {
            let i = rng.random_range(0..self.n());
            for j in 0..d {
                let (p, h) = (self.points[i * d + j], self.bandwidth[j]);
                let u: f64 = rng.random();
                let z = norm_quantile(self.cdf_low[i * d + j] + u * self.mass[i * d + j]);
                let v = if z.is_finite() { p + h * z } else { p };
                out.push(v.clamp(self.lower[j], self.upper[j]));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use rand::{SeedableRng, rngs::StdRng};
    use rand_distr::{Distribution, StandardNormal};

    use super::*;
    use crate::sampling::Sobol;

    fn normal_points(n: usize, d: usize, mean: f64, sd: f64, seed: u64) -> Vec<f64> {
        let mut rng = StdRng::seed_from_u64(seed);
        (0..n * d)
            .map(|_| {
                let z: f64 = StandardNormal.sample(&mut rng);
                (mean + sd * z).clamp(0.0, 1.0)
            })
            .collect()
    }

    #[test]
    fn bandwidth_is_the_rule_of_thumb() {
        // Two dimensions, four points: σ̂ (ddof 0) of (0.1, 0.2, 0.4, 0.5) is √0.025, of (0, 0, 1, 1) is 0.5.
        let pts = [0.1, 0.0, 0.2, 0.0, 0.4, 1.0, 0.5, 1.0];
        let kde = Kde::fit(&pts, &[0.0, 0.0], &[1.0, 1.0]).unwrap();
        let factor = (4.0f64 / 4.0).powf(1.0 / 6.0) * 4f64.powf(-1.0 / 6.0);
        assert!((kde.bandwidth()[0] - factor * 0.025f64.sqrt()).abs() < 1e-15);
        assert!((kde.bandwidth()[1] - factor * 0.5).abs() < 1e-15);
        // One dimension: (4/3)^{1/5} σ̂ n^{−1/5} — Silverman's 1.06 σ̂ n^{−1/5}.
        let one = normal_points(200, 1, 0.5, 0.1, 3);
        let kde = Kde::fit(&one, &[0.0], &[1.0]).unwrap();
        let mean = one.iter().sum::<f64>() / 200.0;
        let sd = (one.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 200.0).sqrt();
        let expected = (4.0f64 / 3.0).powf(0.2) * sd * 200f64.powf(-0.2);
        assert!((kde.bandwidth()[0] - expected).abs() < 1e-14);
        assert!(((4.0f64 / 3.0).powf(0.2) - 1.0592).abs() < 1e-4);
    }

    #[test]
    fn density_integrates_to_one_over_the_box() {
        // Points near the faces so truncation matters; quasi-Monte Carlo over the box.
        for (d, seed) in [(1, 1), (2, 2), (3, 3)] {
            let pts = normal_points(30, d, 0.15, 0.2, seed);
            let lower = vec![0.0; d];
            let upper = vec![1.0; d];
            let kde = Kde::fit(&pts, &lower, &upper).unwrap();
            let qmc = Sobol::scrambled(d, 11).take(1 << 16);
            let values: Vec<f64> = qmc.chunks_exact(d).map(|c| kde.density(c)).collect();
            let m = values.len() as f64;
            let mean = values.iter().sum::<f64>() / m;
            let se = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (m - 1.0) / m).sqrt();
            assert!((mean - 1.0).abs() < 4.0 * se + 1e-3, "d={d}: ∫p̂ = {mean} ± {se}");
        }
    }

    #[test]
    fn density_on_a_wider_box_integrates_to_one_and_is_zero_outside() {
        let pts = [2.0, 3.0, 9.5, 6.0];
        let kde = Kde::fit(&pts, &[0.0], &[10.0]).unwrap();
        let n = 200_000;
        let integral: f64 =
            (0..n).map(|i| kde.density(&[10.0 * (i as f64 + 0.5) / n as f64])).sum::<f64>() * 10.0 / n as f64;
        assert!((integral - 1.0).abs() < 1e-6, "{integral}");
        assert_eq!(kde.density(&[-0.1]), 0.0);
        assert_eq!(kde.density(&[10.1]), 0.0);
    }

    #[test]
    fn samples_respect_the_box_and_follow_the_density() {
        let pts = normal_points(50, 2, 0.1, 0.15, 5);
        let kde = Kde::fit(&pts, &[0.0, 0.0], &[1.0, 1.0]).unwrap();
        let mut rng = StdRng::seed_from_u64(9);
        let s = kde.sample(20_000, &mut rng);
        assert!(s.iter().all(|v| (0.0..=1.0).contains(v)));
        // P(c₀ < 0.1) from samples vs the density integrated numerically over [0, 0.1] × [0, 1].
        let frac = s.chunks_exact(2).filter(|c| c[0] < 0.1).count() as f64 / 20_000.0;
        let g = 200;
        let mut p = 0.0;
        for i in 0..g {
            for j in 0..g {
                let c = [0.1 * (i as f64 + 0.5) / g as f64, (j as f64 + 0.5) / g as f64];
                p += kde.density(&c) * 0.1 / (g * g) as f64;
            }
        }
        let se = (p * (1.0 - p) / 20_000.0).sqrt();
        assert!((frac - p).abs() < 4.0 * se + 2e-3, "sampled {frac} vs integrated {p}");
    }

    #[test]
    fn identical_observations_give_a_finite_density_and_exact_samples() {
        let kde = Kde::fit(&[0.3, 0.3, 0.3], &[0.0], &[1.0]).unwrap();
        assert!(kde.density(&[0.3]).is_finite());
        let s = kde.sample(10, &mut StdRng::seed_from_u64(1));
        assert!(s.iter().all(|v| (v - 0.3).abs() < 1e-6));
    }

    #[test]
    fn malformed_input_gives_none() {
        assert!(Kde::fit(&[], &[0.0], &[1.0]).is_none());
        assert!(Kde::fit(&[0.5], &[1.0], &[0.0]).is_none());
        assert!(Kde::fit(&[f64::NAN], &[0.0], &[1.0]).is_none());
    }
}
