//! Log expected hypervolume improvement (EHVI) of several maximised objectives with independent GP posteriors, in
//! closed form (Emmerich, Giannakoglou & Naujoks 2006; the cell decomposition of Yang et al. 2019).
//!
//! The region above the reference point that the current front does not dominate is cut into boxes `[l, u)`
//! (`u` may be +∞). A new point `y` adds `Σ_cells Π_k max(0, min(y_k, u_k) − l_k)` of hypervolume, and with
//! independent Gaussian `Y_k ~ N(μ_k, σ_k²)` each factor's expectation is `∫_l^u P(Y_k > t) dt = σ_k (h(a) − h(b))`,
//! `a = (μ_k − l)/σ_k`, `b = (μ_k − u)/σ_k`, `h(z) = φ(z) + zΦ(z)` (LogEI's function). The acquisition is the log of
//! the sum over cells, each term computed from `ln h` ([`log_h`]) so that it stays finite far from the front, as
//! LogEI does for one objective (Ament et al. 2023).

use super::Acquisition;
use super::analytic::{floored_sigma, mean_sigma_grad};
use crate::gp::Gp;
use crate::special::{log_h, log_norm_cdf, log1mexp, norm_pdf};

/// One box `[lower, upper)` of the non-dominated region (`upper` may hold +∞).
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Lower corner.
    pub lower: Vec<f64>,
    /// Upper corner.
    pub upper: Vec<f64>,
}

/// The boxes of the region above `reference` that no point of `front` dominates (maximisation). Two objectives: one
/// box per gap of the sorted front; more: the grid of the front's coordinates, its dominated boxes dropped.
pub fn non_dominated_cells(front: &[Vec<f64>], reference: &[f64]) -> Vec<Cell> {
    let k = reference.len();
    let front: Vec<&Vec<f64>> = front.iter().filter(|p| p.iter().zip(reference).all(|(v, r)| v > r)).collect();
    let mut axes: Vec<Vec<f64>> = (0..k)
        .map(|j| {
            let mut a: Vec<f64> = std::iter::once(reference[j]).chain(front.iter().map(|p| p[j])).collect();
            a.sort_by(f64::total_cmp);
            a.dedup();
            a.push(f64::INFINITY);
            a
        })
        .collect();
    if k == 2 {
        // Columns [x_i, x_{i+1}): above the best second objective among the points at or right of x_{i+1}.
        let xs = std::mem::take(&mut axes[0]);
        return xs
            .windows(2)
            .map(|w| {
                let floor = front.iter().filter(|p| p[0] >= w[1]).map(|p| p[1]).fold(reference[1], f64::max);
                Cell { lower: vec![w[0], floor], upper: vec![w[1], f64::INFINITY] }
            })
            .collect();
    }
    let mut cells = Vec::new();
    let mut index = vec![0usize; k];
    loop {
        let lower: Vec<f64> = (0..k).map(|j| axes[j][index[j]]).collect();
        let upper: Vec<f64> = (0..k).map(|j| axes[j][index[j] + 1]).collect();
        if !front.iter().any(|p| p.iter().zip(&upper).all(|(v, u)| v >= u)) {
            cells.push(Cell { lower, upper });
        }
        let mut j = 0;
        loop {
            if j == k {
                return cells;
            }
            index[j] += 1;
            if index[j] + 1 < axes[j].len() {
                break;
            }
            index[j] = 0;
            j += 1;
        }
    }
}

/// Log EHVI over `cells` of the objectives modelled by `models` (engine sign, raw units).
pub struct LogEhvi<'a> {
    /// One model per objective.
    pub models: &'a [Gp],
    /// The non-dominated region's boxes ([`non_dominated_cells`]).
    pub cells: &'a [Cell],
}

/// `ln(σ (h(a) − h(b)))` with a = (μ − l)/σ, b = (μ − u)/σ, and its derivatives in μ and σ.
fn log_factor(mu: f64, sigma: f64, l: f64, u: f64) -> (f64, f64, f64) {
    let a = (mu - l) / sigma;
    let la = log_h(a);
    let (log_diff, phi_b, cdf_b) = if u.is_finite() {
        let b = (mu - u) / sigma;
        (la + log1mexp((log_h(b) - la).min(-1e-300)), norm_pdf(b), log_norm_cdf(b).exp())
    } else {
        (la, 0.0, 0.0)
    };
    let value = sigma.ln() + log_diff;
    // d/dμ σ(h(a) − h(b)) = Φ(a) − Φ(b); d/dσ = φ(a) − φ(b); divided by the factor itself.
    let denominator = value.exp();
    let (d_mu, d_sigma) = if denominator > 0.0 && denominator.is_finite() {
        ((log_norm_cdf(a).exp() - cdf_b) / denominator, (norm_pdf(a) - phi_b) / denominator)
    } else {
        // Far in the tail: the factor behaves like σ h(a), whose log has slope Φ(a)/(σ h(a)) in μ.
        let slope = (log_norm_cdf(a) - la).exp() / sigma;
        (slope, -a * slope + 1.0 / sigma)
    };
    (value, d_mu, d_sigma)
}

impl LogEhvi<'_> {
    fn evaluate(&self, x: &[f64], grad: Option<&mut [f64]>) -> f64 {
        let k = self.models.len();
        let d = x.len();
        let mut mus = Vec::with_capacity(k);
        let mut sigmas = Vec::with_capacity(k);
        let mut dmus = Vec::new();
        let mut dsigmas = Vec::new();
        for gp in self.models {
            if grad.is_some() {
                let (mut dm, mut ds) = (vec![0.0; d], vec![0.0; d]);
                let (m, s) = mean_sigma_grad(gp, x, &mut dm, &mut ds);
                mus.push(m);
                sigmas.push(s);
                dmus.push(dm);
                dsigmas.push(ds);
            } else {
                let (m, v) = gp.posterior(x);
                mus.push(m);
                sigmas.push(floored_sigma(gp, v));
            }
        }
        let terms: Vec<(f64, Vec<(f64, f64)>)> = self
            .cells
            .iter()
            .map(|c| {
                let parts: Vec<(f64, f64, f64)> =
                    (0..k).map(|j| log_factor(mus[j], sigmas[j], c.lower[j], c.upper[j])).collect();
                (parts.iter().map(|p| p.0).sum(), parts.iter().map(|p| (p.1, p.2)).collect())
            })
            .collect();
        let top = terms.iter().map(|t| t.0).fold(f64::NEG_INFINITY, f64::max);
        if !top.is_finite() {
            if let Some(g) = grad {
                g.iter_mut().for_each(|v| *v = 0.0);
            }
            return top;
        }
        let weights: Vec<f64> = terms.iter().map(|t| (t.0 - top).exp()).collect();
        let total: f64 = weights.iter().sum();
        if let Some(g) = grad {
            g.iter_mut().for_each(|v| *v = 0.0);
            for (w, (_, parts)) in weights.iter().zip(&terms) {
                for (j, (d_mu, d_sigma)) in parts.iter().enumerate() {
                    for i in 0..d {
                        g[i] += w / total * (d_mu * dmus[j][i] + d_sigma * dsigmas[j][i]);
                    }
                }
            }
        }
        top + total.ln()
    }
}

impl Acquisition for LogEhvi<'_> {
    fn dim(&self) -> usize {
        self.models[0].d()
    }

    fn value(&self, x: &[f64]) -> f64 {
        self.evaluate(x, None)
    }

    fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        self.evaluate(x, Some(grad))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pareto::hypervolume;

    #[test]
    fn cells_cover_exactly_the_non_dominated_region() {
        // The hypervolume improvement of a point is the volume of the cells below it; compare with the direct
        // difference of hypervolumes, in two and three objectives.
        // (front, reference, probe points)
        type Case = (Vec<Vec<f64>>, Vec<f64>, Vec<Vec<f64>>);
        let cases: [Case; 2] = [
            (
                vec![vec![1.0, 3.0], vec![2.0, 2.0], vec![3.0, 1.0]],
                vec![0.0, 0.0],
                vec![vec![2.5, 2.5], vec![4.0, 0.5], vec![0.5, 5.0], vec![1.0, 1.0]],
            ),
            (
                vec![vec![1.0, 2.0, 1.0], vec![2.0, 1.0, 1.5], vec![0.5, 0.5, 3.0]],
                vec![0.0, 0.0, 0.0],
                vec![vec![1.5, 1.5, 1.5], vec![3.0, 0.2, 0.2], vec![0.7, 2.5, 2.0]],
            ),
        ];
        for (front, reference, probes) in cases {
            let cells = non_dominated_cells(&front, &reference);
            let base = hypervolume(&front, &reference);
            for y in probes {
                let inside: f64 = cells
                    .iter()
                    .map(|c| (0..y.len()).map(|j| (y[j].min(c.upper[j]) - c.lower[j]).max(0.0)).product::<f64>())
                    .sum();
                let mut with = front.clone();
                with.push(y.clone());
                let direct = hypervolume(&with, &reference) - base;
                assert!((inside - direct).abs() < 1e-12, "{y:?}: cells {inside}, direct {direct}");
            }
        }
    }

    #[test]
    fn a_factor_is_the_expected_clipped_gain() {
        // σ(h(a) − h(b)) = E[max(0, min(Y, u) − l)] for Y ~ N(μ, σ²): against a quadrature of P(Y > t) over [l, u].
        for (mu, sigma, l, u) in [(0.3, 0.5, 0.0, 1.0), (-3.0, 0.2, 0.0, 2.0), (2.0, 1.0, 0.5, f64::INFINITY)] {
            let (log_value, _, _) = log_factor(mu, sigma, l, u);
            let hi = if u.is_finite() { u } else { mu + 12.0 * sigma };
            let n = 200_000;
            let step = (hi - l) / n as f64;
            let integral: f64 = (0..n)
                .map(|i| {
                    let t = l + (i as f64 + 0.5) * step;
                    1.0 - crate::special::norm_cdf((t - mu) / sigma)
                })
                .sum::<f64>()
                * step;
            assert!(
                (log_value.exp() - integral).abs() <= 1e-6 * integral.max(1e-300) + 1e-12,
                "{log_value} {integral}"
            );
        }
    }
}
