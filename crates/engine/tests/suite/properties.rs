//! Structural properties of the GP: Gram matrices are symmetric and factor after the jitter ladder (also with
//! duplicated points), the posterior variance stays within [0, prior], LogEI equals ln EI where EI is representable
//! and stays finite and monotone where it underflows, the O(n²) Cholesky extension equals refitting, and LogNEI is
//! LogEI without noise and a Monte-Carlo estimate of the noisy expected improvement with it.

use engine::acquisition::{Acquisition, LogEi, LogNei};
use engine::gp::{Data, Gp, NoiseModel};
use engine::linalg::Cholesky;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use rand::{Rng, SeedableRng, rngs::StdRng};

use crate::common::{assert_close, plain_config};
use crate::strategies::{self, Problem};

const EPS: f64 = f64::EPSILON;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn gram_matrices_are_symmetric_and_factor_after_jitter(
        (kernel, theta) in strategies::kernel(),
        points in vec(0.0f64..1.0, 60),
        n in 1usize..=20,
        duplicates in vec(any::<Index>(), 0..4),
    ) {
        let d = kernel.dim();
        let mut x = points[..n * d].to_vec();
        for i in &duplicates {
            let row = i.index(n);
            x.extend_from_within(row * d..(row + 1) * d);
        }
        let m = x.len() / d;
        let g = kernel.gram(&theta, &x);
        let pv = kernel.prior_variance(&theta);
        for i in 0..m {
            prop_assert_eq!(g[(i, i)], pv);
            for j in 0..m {
                prop_assert_eq!(g[(i, j)], g[(j, i)]);
                prop_assert!(g[(i, j)].abs() <= pv * (1.0 + 4.0 * EPS));
            }
        }
        let chol = Cholesky::factor(g.clone()).expect("the jitter ladder factors every Gram matrix");
        let jitter = chol.jitter();
        prop_assert!((0.0..=1e-2 * pv).contains(&jitter));
        let l = chol.l();
        let rec = l * l.transpose();
        // backward error of Cholesky: |LLᵀ − A| ≤ γ_{m+1} √(a_ii a_jj)
        let tol = 2.0 * (m as f64 + 1.0) * EPS * (pv + jitter);
        for i in 0..m {
            for j in 0..m {
                let a = g[(i, j)] + if i == j { jitter } else { 0.0 };
                prop_assert!((rec[(i, j)] - a).abs() <= tol, "LLᵀ[{i}][{j}] = {} vs {a} (tol {tol:e})", rec[(i, j)]);
            }
        }
    }

    #[test]
    fn posterior_variance_lies_between_zero_and_the_prior_variance(p in strategies::problem(12)) {
        let gp = p.gp();
        let d = p.d();
        let prior = gp.prior_variance();
        let scale2 = gp.standardizer().scale.powi(2);
        let points: Vec<f64> = p.test.iter().chain(&p.x).copied().collect();
        let (bm, bv) = gp.posterior_batch(&points);
        let (_, joint) = gp.posterior_joint(&points);
        for (i, x) in points.chunks_exact(d).enumerate() {
            let (mu, var) = gp.posterior(x);
            prop_assert!(mu.is_finite());
            prop_assert!(var >= 0.0 && var <= prior * (1.0 + 4.0 * EPS), "var {var} outside [0, {prior}]");
            assert_close("batch mean", bm[i], mu, 1e-12, 1e-12 * prior.sqrt());
            assert_close("batch var", bv[i], var, 1e-9, 1e-12 * prior);
            assert_close("joint var", joint[(i, i)], var, 1e-9, 1e-12 * prior);
            let (mut dm, mut dv) = (vec![0.0; d], vec![0.0; d]);
            let (mu_g, var_g) = gp.posterior_with_grad(x, &mut dm, &mut dv);
            assert_close("mean with grad", mu_g, mu, 1e-12, 1e-12 * prior.sqrt());
            assert_close("var with grad", var_g, var, 1e-9, 1e-12 * prior);
            if i >= p.test.len() / d {
                // At a training point with noise variance s² (plus jitter), the variance is at most
                // (1/k(x,x) + 1/s²)⁻¹: what that one observation alone leaves.
                let k = i - p.test.len() / d;
                let s2 = (gp.noise_diag()[k] + gp.jitter()) * scale2;
                let bound = prior * s2 / (prior + s2);
                prop_assert!(var <= bound * (1.0 + 1e-9) + 1e-8 * prior, "var {var} at x_{k} above {bound}");
            }
        }
    }

    #[test]
    fn conditioning_equals_refitting_with_the_points_added(
        p in strategies::problem(10),
        extra in vec((0.0f64..1.0, 0.0f64..1.0, 0.0f64..1.0, -2.0f64..2.0, proptest::option::of(1e-4f64..1e-2)), 1..4),
        duplicate in any::<bool>(),
    ) {
        // Standardisation is fixed at conditioning time, so compare without it.
        let p = Problem { standardize: false, ..p };
        let d = p.d();
        let mut gp = p.gp();
        let mut data = p.data();
        let mut known: Vec<f64> = data.noise_var.clone().unwrap_or_else(|| vec![0.0; p.n()]);
        for (k, (a, b, c, y, nv)) in extra.iter().enumerate() {
            let x: Vec<f64> = if duplicate && k == 0 { p.x[..d].to_vec() } else { [*a, *b, *c][..d].to_vec() };
            gp.condition(&x, *y, *nv).expect("conditioning succeeds");
            data.x.extend_from_slice(&x);
            data.y.push(*y);
            known.push(nv.unwrap_or(0.0));
        }
        data.noise_var = Some(known);
        let refit = Gp::new(&data, &p.config(), p.hypers()).expect("refit conditions");
        prop_assume!(refit.jitter() == 0.0);
        prop_assert_eq!(gp.n(), refit.n());
        let prior = refit.prior_variance();
        for x in p.test.chunks_exact(d).chain(data.x.chunks_exact(d)) {
            let (m1, v1) = gp.posterior(x);
            let (m2, v2) = refit.posterior(x);
            assert_close("conditioned mean", m1, m2, 1e-9, 1e-10 * (1.0 + prior.sqrt()));
            assert_close("conditioned variance", v1, v2, 1e-9, 1e-10 * prior);
        }
        assert_close("conditioned lml", gp.log_marginal_likelihood(), refit.log_marginal_likelihood(), 1e-9, 1e-9);
    }
}

/// EI computed directly, `(μ − best)Φ(z) + σφ(z)`, with libm's erfc (no log-space tricks).
fn direct_ei(mu: f64, sigma: f64, best: f64) -> f64 {
    let z = (mu - best) / sigma;
    let cdf = 0.5 * libm::erfc(-z / std::f64::consts::SQRT_2);
    let pdf = (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt();
    (mu - best) * cdf + sigma * pdf
}

/// Without noise every posterior draw at the observations is the observations: LogNEI is LogEI over the best one.
#[test]
fn log_nei_without_noise_is_log_ei_over_the_best_observation() {
    let gp = small_gp_with_noise(1e-12);
    let best = gp.posterior_batch(gp.x()).0.into_iter().fold(f64::NEG_INFINITY, f64::max);
    let nei = LogNei::new(gp.drawn_models(16, &mut StdRng::seed_from_u64(7)).expect("draws"));
    let ei = LogEi::new(&gp, best);
    for x in [[0.42, 0.17], [0.9, 0.95], [0.05, 0.6]] {
        assert_close(&format!("LogNEI at {x:?}"), nei.value(&x), ei.value(&x), 1e-5, 1e-6);
    }
}

/// With noise, NEI is `E[max(f(x) − max_i f(x_i), 0)]` over the joint posterior of f at x and the observed inputs.
/// The reference draws that joint posterior directly (`Gp::sample_joint` at `[X; x]`) and averages the improvement;
/// LogNEI conditions a noiseless model on draws at X and integrates f(x) in closed form. The tolerance is four
/// standard errors of both estimates (the closed form's spread is at most the reference's).
#[test]
fn log_nei_matches_a_monte_carlo_estimate_from_joint_draws() {
    let gp = small_gp_with_noise(0.05);
    let n = gp.n();
    let (draws, reference_draws) = (4000usize, 40_000usize);
    let nei = LogNei::new(gp.drawn_models(draws, &mut StdRng::seed_from_u64(11)).expect("draws"));
    let mut rng = StdRng::seed_from_u64(12);
    for x in [[0.42, 0.17], [0.9, 0.95], [0.05, 0.6]] {
        let points: Vec<f64> = gp.x().iter().copied().chain(x).collect();
        let joint = gp.sample_joint(&points, reference_draws, &mut rng).expect("joint draws");
        let gains: Vec<f64> =
            joint.iter().map(|f| (f[n] - f[..n].iter().copied().fold(f64::NEG_INFINITY, f64::max)).max(0.0)).collect();
        let mean = gains.iter().sum::<f64>() / reference_draws as f64;
        let sd = (gains.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (reference_draws - 1) as f64).sqrt();
        let se = sd / (reference_draws as f64).sqrt();
        let tol = 4.0 * se * (1.0 + (reference_draws as f64 / draws as f64).sqrt());
        let value = nei.value(&x).exp();
        assert!(mean > 10.0 * se, "the reference at {x:?} should resolve a positive NEI: {mean} ± {se}");
        assert!((value - mean).abs() <= tol, "NEI at {x:?}: {value}, Monte Carlo {mean} ± {se}");
    }
}

/// The optimiser's screening of raw samples (`best_values`) keeps LogNEI's best `keep` points exact: every point it
/// keeps has its exact value, every point among the best `keep` is kept, and the bound drops most points (here 423
/// to 489 of 512).
#[test]
fn log_nei_screening_keeps_the_best_points_exact() {
    let gp = small_gp_with_noise(0.05);
    let nei = LogNei::new(gp.drawn_models(32, &mut StdRng::seed_from_u64(5)).expect("draws"));
    let mut rng = StdRng::seed_from_u64(6);
    let xs: Vec<f64> = (0..2 * 512).map(|_| rng.random::<f64>()).collect();
    let exact = nei.values(&xs);
    for keep in [1, 8, 64] {
        let screened = nei.best_values(&xs, keep);
        let mut order: Vec<usize> = (0..exact.len()).collect();
        order.sort_by(|&a, &b| exact[b].total_cmp(&exact[a]));
        for &i in &order[..keep] {
            assert_eq!(screened[i].to_bits(), exact[i].to_bits(), "keep {keep}: point {i} among the best was dropped");
        }
        for (i, v) in screened.iter().enumerate() {
            assert!(*v == f64::NEG_INFINITY || v.to_bits() == exact[i].to_bits(), "keep {keep}: point {i}");
        }
        let dropped = screened.iter().filter(|v| **v == f64::NEG_INFINITY).count();
        assert!(2 * dropped > exact.len(), "keep {keep}: the bound screened out only {dropped} of {}", exact.len());
    }
}

/// A small fixed GP on a 2-D problem.
fn small_gp() -> Gp {
    small_gp_with_noise(1e-4)
}

/// The same GP with another fixed noise variance (raw units).
fn small_gp_with_noise(noise: f64) -> Gp {
    let x: Vec<f64> = (0..8).flat_map(|i| [(i as f64 * 0.37) % 1.0, (i as f64 * 0.61) % 1.0]).collect();
    let y: Vec<f64> = x.chunks_exact(2).map(|r| (5.0 * r[0]).sin() + r[1]).collect();
    let config = plain_config(
        engine::kernel::Kernel::ard(engine::kernel::KernelFamily::Matern52, 2),
        NoiseModel::Fixed(noise),
        engine::gp::MeanModel::Zero,
        true,
    );
    let hypers = engine::gp::Hyperparameters { theta: vec![-1.0, -0.5, 0.0], noise_variance: 0.0, mean: 0.0 };
    Gp::new(&Data::new(2, x, y), &config, hypers).expect("small GP conditions")
}

#[test]
fn log_ei_equals_the_log_of_directly_computed_ei_where_ei_is_representable() {
    let gp = small_gp();
    let x = [0.42, 0.17];
    let (mu, var) = gp.posterior(&x);
    let sigma = var.sqrt();
    let mut checked = 0;
    for i in 0..=440 {
        // z = (μ − best)/σ from 6 down to −38 in steps of 0.1
        let z = 6.0 - 0.1 * f64::from(i);
        let best = mu - z * sigma;
        let ei = direct_ei(mu, sigma, best);
        if ei <= 1e-300 {
            continue;
        }
        let acq = LogEi::new(&gp, best);
        let log_ei = acq.value(&x);
        // The direct formula loses ~z² ulps to the cancellation of zΦ(z) against φ(z) in the lower tail.
        let tol = 1e-12 * (1.0 + z * z);
        assert_close(&format!("LogEI at z = {z:.1}"), log_ei, ei.ln(), 0.0, tol);
        assert_close(&format!("batched LogEI at z = {z:.1}"), acq.values(&x)[0], ei.ln(), 0.0, tol);
        checked += 1;
    }
    assert!(checked > 400, "only {checked} points had a representable EI");
}

#[test]
fn log_ei_stays_finite_and_monotone_in_the_mean_where_ei_underflows() {
    let gp = small_gp();
    let x = [0.42, 0.17];
    let (mu, var) = gp.posterior(&x);
    let sigma = var.sqrt();
    // Raising `best` by tσ is lowering the mean by tσ: LogEI must fall strictly, and stay finite, as t grows.
    let mut previous = f64::INFINITY;
    let mut underflowed = 0;
    for t in [30.0, 38.0, 39.0, 45.0, 60.0, 100.0, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10] {
        let best = mu + t * sigma;
        if direct_ei(mu, sigma, best) == 0.0 {
            underflowed += 1;
        }
        let acq = LogEi::new(&gp, best);
        let mut grad = [0.0; 2];
        let v = acq.value_and_grad(&x, &mut grad);
        assert!(v.is_finite() && grad.iter().all(|g| g.is_finite()), "t = {t}: {v}, {grad:?}");
        assert_close(&format!("value_and_grad at t = {t}"), v, acq.value(&x), 1e-14, 0.0);
        assert!(v < previous, "LogEI not decreasing at t = {t}: {v} ≥ {previous}");
        previous = v;
    }
    assert!(underflowed >= 10, "EI should underflow to 0 for most of these: {underflowed}");
}
