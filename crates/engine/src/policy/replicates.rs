//! Replicates, and what they tell the recommendation: the share of the model's noise that is structure.
//!
//! A stationary GP explains whatever it cannot resolve, such as ripples shorter than the data's spacing (Rastrigin,
//! Griewank), as noise. Its learned noise variance σ²_n is then the sum of a *nugget* τ², the variation of f below
//! the data's resolution, which a repeated measurement reproduces, and the measurement variance σ²_m, which it does
//! not. The two are not identifiable from one measurement per point; replicates or a declared `value_stddev`
//! identify them (Cressie 1993, *Statistics for Spatial Data*, §3.2.1, the nugget effect: measurement error against
//! micro-scale variation). The posterior mean at an observed point treats all of σ²_n as error and shrinks the
//! observation's part of the nugget away, although it is real: on `bench robust`'s Rastrigin-3 at 1 % noise the best
//! observed point was better than the recommended one in 8 of 10 seeds (`docs/bench/robust.md`).
//!
//! Here f = g + s: g the GP's smooth latent function, s the nugget (independent, variance τ²). At a point observed
//! n times with mean ȳ and measurement variance σ²_m / n, the nugget's conditional mean given g is
//! `w (ȳ − g)`, `w = τ² / (τ² + σ²_m / n)`, so f there is estimated by `μ + w (ȳ − μ)` (μ the GP's posterior mean,
//! which already averages the neighbours) with variance about `(1 − w)² v + w σ²_m / n` (v the GP's posterior
//! variance). The approximation: μ and v come from the GP that treats the nugget as noise, not from a joint model of
//! g and s. Without replicates or declared noise `w = 0` and nothing changes.
//!
//! - **Declared noise** (`value_stddev`): σ²_m is the declared variance, τ² the whole learned noise, which the
//!   model fits on top of the declared part.
//! - **Replicates**: σ²_m is the pooled within-point variance of the values (k degrees of freedom), taken at its
//!   upper 90 % confidence bound `k s² / χ²_{k, 0.1}` so that a few lucky pairs do not turn a smooth problem's
//!   noise into "structure": τ² = max(0, σ²_n − that bound). Replicated points whose values agree exactly
//!   (a deterministic objective) give σ²_m = 0 and w = 1: the observed value is the function's.
//! - **The nugget model** (`super::model`, chosen by likelihood over the homoscedastic one): each replicate group
//!   entered once as its mean with the known variance s² / n ([`collapse`]), so the GP's learned noise is τ²
//!   itself and an observation's noise is τ² + s². The recommendation still takes τ² as that noise less s²'s
//!   upper bound (the caution above), and the challengers' margin and the held-out estimates' variance use τ² + s².
//!
//! **Challengers and held-out estimates.** With measurement noise, the best of many observations is the luckiest
//! as much as the best: its value is biased up (the optimiser's curse: Smith & Winkler 2006, *Management Science*
//! 52(3)), and w above is rarely identified (three replicate degrees of freedom put σ²_m's upper bound at 5.1 s²).
//! So, as SMAC's intensification re-runs a challenger before it replaces the incumbent (Hutter, Hoos &
//! Leyton-Brown 2011, LION 5), the best observation is re-run ([`challenger`]) when it beats the largest
//! posterior mean at the observations by more than [`CHALLENGE_MARGIN`] learned noise standard deviations, and
//! re-run again while its re-runs' mean still beats that mean, up to [`CHALLENGE_RUNS`] re-runs. The re-runs were not
//! what selected the point, so their mean estimates f there without that bias, with variance at most σ²_n / k
//! (σ²_n the learned noise, which bounds the measurement variance); the recommendation takes such a point when
//! that estimate, less [`HELD_OUT_MARGIN`] standard errors, beats the polished point's mean
//! ([`best_held_out`]). Deviation from SMAC: one challenger at a time, re-run only while it leads the model rather
//! than against the incumbent's own runs, and at most [`CHALLENGE_RUNS`] times, since every re-run is an experiment
//! not spent on search (`docs/bench/robust.md`, "Challengers").

use super::Context;
use super::model::{FittedModel, posterior_at};
use crate::gp::OutputWarp;
use statrs::distribution::{ChiSquared, ContinuousCDF};

/// Observations at the same encoded point, within this distance per coordinate, are replicates.
const SAME_POINT: f64 = 1e-9;

/// Lower-tail probability of the χ² quantile in the measurement variance's upper confidence bound.
const BOUND_TAIL: f64 = 0.1;

/// Whether two encoded points are the same point (up to the rounding of decoding and encoding them again).
pub(crate) fn same_point(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(u, v)| (u - v).abs() <= SAME_POINT)
}

/// Groups of observation indices at the same encoded point (singletons included), each group ascending.
pub(crate) fn groups(ctx: &Context<'_>) -> Vec<Vec<usize>> {
    let rows: Vec<&[f64]> = (0..ctx.data.n()).map(|i| ctx.data.row(i)).collect();
    groups_of(&rows)
}

/// [`groups`] of any rows.
fn groups_of(rows: &[&[f64]]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..rows.len()).collect();
    let cmp = |a: &usize, b: &usize| {
        rows[*a].iter().zip(rows[*b]).map(|(u, v)| u.total_cmp(v)).find(|o| o.is_ne()).unwrap_or(a.cmp(b))
    };
    order.sort_by(cmp);
    let mut out: Vec<Vec<usize>> = Vec::new();
    for i in order {
        match out.last_mut() {
            Some(g) if same_point(rows[g[0]], rows[i]) => g.push(i),
            _ => out.push(vec![i]),
        }
    }
    for g in &mut out {
        g.sort_unstable();
    }
    out
}

/// The pooled within-point variance of `y` over the replicated groups, and its degrees of freedom
/// `Σ (n_g − 1)`; `None` without replicates.
pub(crate) fn pooled_variance(groups: &[Vec<usize>], y: &[f64]) -> Option<(f64, usize)> {
    pool(groups.iter().map(|g| (g.len(), moments(g, y).1)))
}

/// A group's mean of `y` and the sum of squared deviations from it.
fn moments(group: &[usize], y: &[f64]) -> (f64, f64) {
    let mean = group.iter().map(|&i| y[i]).sum::<f64>() / group.len() as f64;
    (mean, group.iter().map(|&i| (y[i] - mean).powi(2)).sum())
}

/// [`pooled_variance`] from each group's size and sum of squared deviations (singletons add nothing).
fn pool(groups: impl Iterator<Item = (usize, f64)>) -> Option<(f64, usize)> {
    let (sum, dof) = groups.filter(|&(n, _)| n > 1).fold((0.0, 0), |(sum, dof), (n, ss)| (sum + ss, dof + n - 1));
    (dof > 0).then(|| (sum / dof as f64, dof))
}

/// The data of the nugget model ([`collapse`]): each group of replicates entered once.
pub(crate) struct Collapsed {
    /// One row per distinct point: the group's mean, with the known variance `s² / n`.
    pub data: crate::gp::Data,
    /// s², the replicates' pooled within-point variance (the data's units).
    pub measurement: f64,
    /// The within-group part of the full data's log likelihood, `Σ −(n−1)/2 ln(2π s²) − ½ ln n − SSᵢ / (2 s²)`
    /// over the groups: a GP's log marginal likelihood of the group means plus this is the log likelihood of every
    /// observation under the model `y = g + s + e`, `e ~ N(0, s²)` (a group's mean is independent of its deviations
    /// from it, which g and the nugget s do not move).
    pub within: f64,
}

/// `data` with each group of replicates collapsed to its mean, every point given the known measurement variance
/// `s² / n` (s² the pooled within-point variance, n the group's size), so that a GP's learned noise on it is the
/// nugget alone (Cressie 1993, §3.2.1). Given the two variances the group means are sufficient for g. `None` with
/// declared noise, without replicates, or when they agree exactly (s² = 0).
pub(crate) fn collapse(data: &crate::gp::Data) -> Option<Collapsed> {
    if data.noise_var.is_some() {
        return None;
    }
    let d = data.d.max(1);
    let rows: Vec<&[f64]> = data.x.chunks_exact(d).collect();
    let groups = groups_of(&rows);
    let stats: Vec<(f64, f64)> = groups.iter().map(|g| moments(g, &data.y)).collect();
    let (s2, _) = pool(groups.iter().zip(&stats).map(|(g, &(_, ss))| (g.len(), ss)))
        .filter(|(s2, _)| *s2 > 0.0 && s2.is_finite())?;
    let (mut x, mut y, mut noise) = (Vec::new(), Vec::new(), Vec::new());
    let mut within = 0.0;
    for (g, &(mean, ss)) in groups.iter().zip(&stats) {
        let n = g.len() as f64;
        within += -0.5 * (n - 1.0) * (2.0 * std::f64::consts::PI * s2).ln() - 0.5 * n.ln() - 0.5 * ss / s2;
        x.extend_from_slice(rows[g[0]]);
        y.push(mean);
        noise.push(s2 / n);
    }
    let data = crate::gp::Data { d: data.d, x, y, noise_var: Some(noise) };
    Some(Collapsed { data, measurement: s2, within })
}

/// The noise variance of one observation under `gp` (model units): its learned noise, plus the replicates'
/// measurement variance with the nugget model (whose learned noise is the nugget alone).
pub(crate) fn observation_noise(gp: &crate::gp::Gp, measurement: Option<f64>) -> f64 {
    gp.noise_variance() + measurement.unwrap_or(0.0)
}

/// Learned noise standard deviations by which an unreplicated best observation must beat the largest posterior
/// mean at the observations to be re-run as a challenger.
pub(crate) const CHALLENGE_MARGIN: f64 = 2.0;

/// Re-runs a challenger gets at most (while their mean beats the largest posterior mean), and the re-runs a point
/// needs for its held-out estimate to be recommended.
pub(crate) const CHALLENGE_RUNS: usize = 2;

/// Standard errors subtracted from a held-out estimate before it is compared with the polished point's mean.
pub(crate) const HELD_OUT_MARGIN: f64 = 0.5;

/// The observed values in the fitted model's units (warped, maximised).
pub(crate) fn model_values(ctx: &Context<'_>, warp: Option<&OutputWarp>) -> Vec<f64> {
    ctx.data.y.iter().map(|&v| warp.map_or(v, |w| w.apply(v))).collect()
}

/// The mean of a group's re-runs (its values after the first, which were not what selected the point) and their
/// number; `None` for a point observed once.
fn held_out(group: &[usize], y: &[f64]) -> Option<(f64, usize)> {
    let reruns = group.get(1..).filter(|r| !r.is_empty())?;
    Some((reruns.iter().map(|&i| y[i]).sum::<f64>() / reruns.len() as f64, reruns.len()))
}

/// The observation to re-run as a challenger (module docs), as an index into the data: a replicated point with
/// fewer than [`CHALLENGE_RUNS`] re-runs whose re-runs' mean beats `top`, the largest posterior mean at the
/// observations (the best such), else the best observation if it was observed once and beats `top` by
/// [`CHALLENGE_MARGIN`] noise standard deviations. `y` in model units.
pub(crate) fn challenger(groups: &[Vec<usize>], y: &[f64], top: f64, noise_sd: f64) -> Option<usize> {
    let racing = groups
        .iter()
        .filter(|g| g.len() <= CHALLENGE_RUNS)
        .filter_map(|g| held_out(g, y).map(|(mean, _)| (g[0], mean)))
        .filter(|&(_, mean)| mean > top)
        .max_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((row, _)) = racing {
        return Some(row);
    }
    let best = (0..y.len()).reduce(|b, i| if y[i] > y[b] { i } else { b })?;
    let single = groups.iter().any(|g| g.len() == 1 && g[0] == best);
    (single && y[best] - top > CHALLENGE_MARGIN * noise_sd).then_some(best)
}

/// The point of best held-out estimate among those with at least [`CHALLENGE_RUNS`] re-runs (module docs), with
/// that estimate's lower bound `mean − HELD_OUT_MARGIN · σ_n / √k`; `None` without such a point or with declared
/// noise (which [`observed_values`] uses). `groups` and `y` as for [`observed_values`].
pub(crate) fn best_held_out(
    ctx: &Context<'_>,
    fitted: &FittedModel,
    groups: &[Vec<usize>],
    y: &[f64],
) -> Option<(ObservedValue, f64)> {
    if ctx.data.declares_noise() {
        return None;
    }
    let noise = observation_noise(&fitted.gp, fitted.measurement);
    groups
        .iter()
        .filter(|g| g.len() > CHALLENGE_RUNS)
        .filter_map(|g| held_out(g, y).map(|(mean, k)| (g[0], mean, noise / k as f64)))
        .map(|(row, mean, variance)| (ObservedValue { row, mean, variance }, mean - HELD_OUT_MARGIN * variance.sqrt()))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// Upper confidence bound of a variance estimated as `s2` with `dof` degrees of freedom:
/// `dof · s2 / χ²_{dof, BOUND_TAIL}`.
fn variance_bound(s2: f64, dof: usize) -> f64 {
    let quantile = ChiSquared::new(dof as f64).map_or(f64::NAN, |c| c.inverse_cdf(BOUND_TAIL));
    if quantile > 0.0 { dof as f64 * s2 / quantile } else { f64::INFINITY }
}

/// An observed point's value estimated with its nugget: model units (the fitted model's warped, maximised
/// values), with the index of one of its observations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ObservedValue {
    /// An observation at the point.
    pub row: usize,
    /// `μ + w (ȳ − μ)`.
    pub mean: f64,
    /// `(1 − w)² v + w σ²_m / n`.
    pub variance: f64,
}

/// The value of f at every observed point, with the part of the model's noise that replicates or declared noise
/// show to be structure given back (module docs); `None` when neither exists or when they show no structure (τ² = 0:
/// every weight would be 0). `groups` are the data's [`groups`], `y` its [`model_values`]; not for studies with
/// context parameters, whose observed points are not decisions alone.
pub(crate) fn observed_values(
    ctx: &Context<'_>,
    fitted: &FittedModel,
    groups: &[Vec<usize>],
    y: &[f64],
) -> Option<Vec<ObservedValue>> {
    let gp = &fitted.gp;
    let scale2 = gp.standardizer().scale.powi(2);
    let learned = gp.noise_variance();
    // Measurement variance of each observation, and the nugget τ².
    let (measurement, nugget): (Vec<f64>, f64) = if ctx.data.declares_noise() {
        let m = gp.noise_diag().iter().take(ctx.data.n()).map(|s| (s * scale2 - learned).max(0.0)).collect();
        (m, learned)
    } else {
        let (s2, dof) = pooled_variance(groups, y)?;
        let bound = variance_bound(s2, dof);
        (vec![bound; y.len()], (observation_noise(gp, fitted.measurement) - bound).max(0.0))
    };
    if nugget <= 0.0 {
        // The replicates show the model's noise to be measurement noise: every weight is 0.
        return None;
    }
    let rows: Vec<f64> = groups.iter().flat_map(|g| ctx.data.row(g[0]).iter().copied()).collect();
    let mut out = Vec::with_capacity(groups.len());
    for (g, (mu, sd)) in groups.iter().zip(posterior_at(gp, &rows)) {
        // The group's mean by measurement precision; an exact measurement is the value.
        let exact: Option<usize> = g.iter().copied().find(|&i| measurement[i] <= 0.0);
        let (ybar, m) = match exact {
            Some(i) => (y[i], 0.0),
            None => {
                let precision: f64 = g.iter().map(|&i| 1.0 / measurement[i]).sum();
                (g.iter().map(|&i| y[i] / measurement[i]).sum::<f64>() / precision, 1.0 / precision)
            }
        };
        let weight = nugget / (nugget + m);
        out.push(ObservedValue {
            row: g[0],
            mean: mu + weight * (ybar - mu),
            variance: (1.0 - weight).powi(2) * sd * sd + weight * m,
        });
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapsed_data_carry_the_full_likelihood_of_the_nugget_model() {
        use crate::gp::{Data, Gp, GpConfig, Hyperparameters, MeanModel};
        // Five points in 2-D, two of them replicated (three and two runs).
        let points = [[0.1, 0.2], [0.4, 0.9], [0.7, 0.3], [0.9, 0.8], [0.3, 0.5]];
        let rows = [0, 1, 1, 1, 2, 3, 3, 4];
        let y = [0.3, 1.2, 1.0, 1.5, -0.4, 0.8, 0.6, 0.1];
        let x: Vec<f64> = rows.iter().flat_map(|&r| points[r]).collect();
        let c = collapse(&Data::new(2, x.clone(), y.to_vec())).expect("replicates");
        // Within-group sums of squares: 0.38/3 about 3.7/3 (2 dof) and 0.02 about 0.7 (1 dof): s² = 0.44/9.
        assert!((c.measurement - 0.44 / 9.0).abs() < 1e-12);
        assert_eq!(c.data.y.len(), 5);
        let config = GpConfig { standardize: false, mean: MeanModel::Zero, ..GpConfig::default_for(2) };
        let nugget = 0.05;
        let hypers = Hyperparameters { theta: vec![-1.2, -0.4, 0.3], noise_variance: nugget, mean: 0.0 };
        let gp = Gp::new(&c.data, &config, hypers.clone()).expect("gp");
        // Directly: y ~ N(0, K + τ² [same point] + s² I) over all eight observations.
        let mut k = config.kernel.gram(&hypers.theta, &x);
        for i in 0..8 {
            for j in 0..8 {
                if rows[i] == rows[j] {
                    k[(i, j)] += nugget;
                }
            }
            k[(i, i)] += c.measurement;
        }
        let chol = crate::linalg::Cholesky::factor(k).expect("positive definite");
        let alpha = chol.solve(&y);
        let quad: f64 = y.iter().zip(&alpha).map(|(a, b)| a * b).sum();
        let direct = -0.5 * quad - 0.5 * chol.log_det() - 4.0 * (2.0 * std::f64::consts::PI).ln();
        let collapsed = gp.log_marginal_likelihood() + c.within;
        assert!((collapsed - direct).abs() < 1e-9, "{collapsed} against {direct}");
    }

    #[test]
    fn no_collapse_without_spread_or_with_declared_noise() {
        use crate::gp::Data;
        let x = vec![0.1, 0.1, 0.5];
        assert!(collapse(&Data::new(1, x.clone(), vec![1.0, 1.0, 2.0])).is_none(), "exact replicates");
        assert!(collapse(&Data::new(1, vec![0.1, 0.2, 0.5], vec![1.0, 1.1, 2.0])).is_none(), "no replicates");
        let mut declared = Data::new(1, x, vec![1.0, 1.2, 2.0]);
        declared.noise_var = Some(vec![0.01; 3]);
        assert!(collapse(&declared).is_none(), "declared noise");
    }

    #[test]
    fn pooled_variance_sums_within_groups() {
        let groups = vec![vec![0, 2], vec![1], vec![3, 4, 5]];
        let y = [1.0, 9.0, 3.0, 0.0, 1.0, 2.0];
        // (1−2)² + (3−2)² = 2 with 1 dof; (0−1)² + 0 + (2−1)² = 2 with 2 dof.
        let (s2, dof) = pooled_variance(&groups, &y).expect("replicates");
        assert_eq!(dof, 3);
        assert!((s2 - 4.0 / 3.0).abs() < 1e-12);
        assert!(pooled_variance(&[vec![0], vec![1]], &y).is_none());
    }

    #[test]
    fn challengers_are_re_run_until_refuted_or_run_twice() {
        // The largest posterior mean is 1.0 and the noise sd 0.1: a single observation needs more than 1.2.
        let pick = |groups: &[Vec<usize>], y: &[f64]| challenger(groups, y, 1.0, 0.1);
        let singles = vec![vec![0], vec![1], vec![2], vec![3]];
        assert_eq!(pick(&singles, &[1.3, 0.4, 0.1, 0.8]), Some(0));
        assert_eq!(pick(&singles, &[1.15, 0.4, 0.1, 0.8]), None, "within the margin");
        assert_eq!(pick(&singles, &[1.3, 0.4, 0.1, 1.35]), Some(3), "the best observation");
        // Point 0 re-run once (row 4): its re-run beats the top mean, so it is run again before a new outlier (3).
        let raced = vec![vec![0, 4], vec![1], vec![2], vec![3]];
        assert_eq!(pick(&raced, &[1.3, 0.4, 0.1, 2.0, 1.1]), Some(0));
        // Its re-run fell below the top mean: refuted, and the outlier is the challenger instead.
        assert_eq!(pick(&raced, &[1.3, 0.4, 0.1, 2.0, 0.7]), Some(3));
        // Refuted, and the best observation (0) is not single: none.
        assert_eq!(pick(&raced, &[1.3, 0.4, 0.1, 0.8, 0.7]), None);
        // Two re-runs: done, whatever they show.
        let done = vec![vec![0, 4, 5], vec![1], vec![2], vec![3]];
        assert_eq!(pick(&done, &[1.3, 0.4, 0.1, 0.8, 1.1, 1.2]), None);
    }

    #[test]
    fn the_bound_matches_scipy() {
        // k / chi2.ppf(0.1, k) for k = 1..6: tests/fixtures/gen_chi2_bound.py (scipy 1.17.1).
        let scipy = [
            63.328_117_677_016_756,
            9.491_221_581_029_897,
            5.133_695_337_577_098,
            3.760_730_244_411_616,
            3.104_996_088_004_243_3,
            2.722_161_675_084_752_4,
        ];
        for (k, expected) in (1..=6).zip(scipy) {
            let b = variance_bound(1.0, k);
            assert!((b - expected).abs() <= 1e-9 * expected, "k = {k}: {b} against scipy's {expected}");
        }
    }
}
