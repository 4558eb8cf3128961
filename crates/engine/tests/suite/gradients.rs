//! Every analytic gradient against finite differences: kernel (in θ and in x), posterior mean and variance (in x),
//! each acquisition and the `Expected` wrapper (in x), and the log marginal likelihood (in the log-hyperparameters).
//!
//! Reference derivatives are Richardson-extrapolated central differences, `R(h) = (4 D(h/2) − D(h))/3` with
//! `D(h) = (f(x+h) − f(x−h))/2h` (truncation error O(h⁴)); the reference is `R(h/2)` and `|R(h) − R(h/2)|` is
//! taken as its error, which matters only where f varies on a scale near h (a periodic kernel several periods
//! out, where ∂k/∂ln p is amplified by Δ/p·1/ℓ²). Test points are kept a scaled distance of at least 0.05 from
//! the training points, where the Matérn kernels are smooth (Matérn-½ has a kink at r = 0).
//! Agreement: `|g − fd| ≤ 1e-5·|fd| + 1e-6·max|fd| + |R(h) − R(h/2)| + 30·noise/h`, where `noise` is the rounding
//! noise of f itself, measured as the scatter of f(x + kδ), k = −3..3, δ = 1e-11, about its least-squares line
//! (at least 100·ε·F, F the magnitude of f). Ill-conditioned systems (near-duplicate points with little noise)
//! make f's evaluation noisy through cancellation, and a difference quotient cannot resolve more than that.

use engine::acquisition::{
    Acquisition, Expected, LogEi, LogNei, MaxValueSampler, Mes, Pi, ThompsonSample, Ucb, sample_max_values,
};
use engine::gp::{self, Gp, Hyperparameters, MeanModel, NoiseModel};
use engine::kernel::{Kernel, KernelFamily};
use engine::sampling::Sobol;
use faer::Mat;
use proptest::collection::vec;
use proptest::prelude::*;
use rand::{SeedableRng, rngs::StdRng};

use crate::common::plain_config;
use crate::strategies::{self, Problem};

/// Smallest scaled distance from the training points at which gradients are checked.
const MIN_R: f64 = 0.05;

/// Richardson-extrapolated central difference of `f` along coordinate `j`, and an estimate of its error.
fn derivative(f: &dyn Fn(&[f64]) -> f64, x: &[f64], j: usize, h: f64) -> (f64, f64) {
    let central = |h: f64| {
        let (mut xp, mut xm) = (x.to_vec(), x.to_vec());
        xp[j] += h;
        xm[j] -= h;
        (f(&xp) - f(&xm)) / (2.0 * h)
    };
    let (d1, d2, d4) = (central(h), central(h / 2.0), central(h / 4.0));
    let coarse = (4.0 * d2 - d1) / 3.0;
    let fine = (4.0 * d4 - d2) / 3.0;
    (fine, (coarse - fine).abs())
}

/// Rounding noise of f around x along coordinate j: the largest residual of f(x + kδ), k = −3..3, about its
/// least-squares line. δ = 1e-11 keeps the true curvature far below the noise.
fn rounding_noise(f: &dyn Fn(&[f64]) -> f64, x: &[f64], j: usize) -> f64 {
    let delta = 1e-11;
    let ks: Vec<f64> = (-3..=3).map(f64::from).collect();
    let values: Vec<f64> = ks
        .iter()
        .map(|k| {
            let mut z = x.to_vec();
            z[j] += k * delta;
            f(&z)
        })
        .collect();
    let mean = values.iter().sum::<f64>() / 7.0;
    let slope = ks.iter().zip(&values).map(|(k, v)| k * (v - mean)).sum::<f64>() / 28.0;
    ks.iter().zip(&values).map(|(k, v)| (v - mean - slope * k).abs()).fold(0.0, f64::max)
}

/// Asserts that `grad` is the gradient of `f` at `x`; `magnitude` is the scale of f's values around x.
#[track_caller]
fn check_gradient(what: &str, f: &dyn Fn(&[f64]) -> f64, x: &[f64], grad: &[f64], h: f64, magnitude: f64) {
    let fd: Vec<(f64, f64)> = (0..x.len()).map(|j| derivative(f, x, j, h)).collect();
    let scale = fd.iter().fold(0.0f64, |m, v| m.max(v.0.abs()));
    let floor = 100.0 * f64::EPSILON * (magnitude + f(x).abs());
    for (j, (g, (r, err))) in grad.iter().zip(&fd).enumerate() {
        let resolution = 30.0 * rounding_noise(f, x, j).max(floor) / h;
        let tol = 1e-5 * r.abs() + 1e-6 * scale + err + resolution;
        assert!(
            g.is_finite() && (g - r).abs() <= tol,
            "{what}: ∂/∂x{j} analytic {g:e} vs finite difference {r:e} (|Δ| {:e} > {tol:e}) at {x:?}",
            (g - r).abs()
        );
    }
}

/// Checks value_and_grad against value, values and finite differences; `magnitude` as in [`check_gradient`].
#[track_caller]
fn check_acquisition(what: &str, acq: &dyn Acquisition, x: &[f64], h: f64, magnitude: f64) {
    let mut grad = vec![0.0; acq.dim()];
    let v = acq.value_and_grad(x, &mut grad);
    let plain = acq.value(x);
    // value, value_and_grad and values take different numerical routes (single, with gradient, batched)
    let noise = (0..x.len()).map(|j| rounding_noise(&|p| acq.value(p), x, j)).fold(0.0, f64::max);
    let floor = 1e-14 * magnitude + 10.0 * noise;
    assert!(v.is_finite(), "{what}: value {v}");
    assert!((v - plain).abs() <= 1e-12 * plain.abs() + floor, "{what}: value_and_grad {v} vs value {plain}");
    let batch = acq.values(x)[0];
    assert!((batch - plain).abs() <= 1e-9 * plain.abs() + floor, "{what}: values {batch} vs value {plain}");
    check_gradient(what, &|p| acq.value(p), x, &grad, h, magnitude);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn kernel_gradients_in_theta_and_x_match_finite_differences(
        (kernel, theta) in strategies::kernel(),
        points in vec(0.0f64..1.0, 15),
        w in vec(-1.0f64..1.0, 25),
    ) {
        let d = kernel.dim();
        let n = 5;
        let x = &points[..n * d];
        let w = Mat::from_fn(n, n, |i, j| 0.5 * (w[i * n + j] + w[j * n + i]));
        let contraction = |th: &[f64]| {
            let g = kernel.gram(th, x);
            (0..n).flat_map(|i| (0..n).map(move |j| (i, j))).map(|(i, j)| w[(i, j)] * g[(i, j)]).sum::<f64>()
        };
        let pv = kernel.prior_variance(&theta);
        let magnitude = 25.0 * pv;
        check_gradient("Σ W∘∂K/∂θ", &contraction, &theta, &kernel.contract_grad(&theta, x, &w), 1e-4, magnitude);

        let p = Problem {
            kernel: kernel.clone(), theta: theta.clone(), x: x[d..].to_vec(), y: vec![0.0; n - 1],
            noise_var: None, noise: 1e-2, mean: 0.0, standardize: false, test: x[..d].to_vec(),
        };
        prop_assume!(p.is_smooth_at(&x[..d], MIN_R));
        let mut out = vec![0.0; n - 1];
        let mut grad = vec![0.0; (n - 1) * d];
        kernel.cross_vec_grad(&theta, &x[..d], &x[d..], &mut out, &mut grad);
        for i in 0..n - 1 {
            let b = &x[(i + 1) * d..(i + 2) * d];
            check_gradient("∂k(a, b)/∂a", &|a| kernel.eval(&theta, a, b), &x[..d], &grad[i * d..(i + 1) * d], 1e-5, pv);
        }
    }

    #[test]
    fn posterior_mean_and_variance_gradients_match_finite_differences(p in strategies::problem(10)) {
        let gp = p.gp();
        let d = p.d();
        let sd = gp.prior_variance().sqrt();
        let y_max = p.y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for x in p.smooth_test_points(MIN_R) {
            let (mut dm, mut dv) = (vec![0.0; d], vec![0.0; d]);
            gp.posterior_with_grad(&x, &mut dm, &mut dv);
            check_gradient("∂μ/∂x", &|z| gp.posterior(z).0, &x, &dm, 1e-5, y_max + sd);
            check_gradient("∂σ²/∂x", &|z| gp.posterior(z).1, &x, &dv, 1e-5, sd * sd);
        }
    }

    #[test]
    fn acquisition_gradients_match_finite_differences(p in strategies::problem(10), beta in 0.1f64..9.0, seed in any::<u64>()) {
        let gp = p.gp();
        let d = p.d();
        let sd = gp.prior_variance().sqrt();
        let y_max = p.y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let best = p.y.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut rng = StdRng::seed_from_u64(seed);
        let mut candidates = Sobol::scrambled(d, seed).take(64);
        candidates.extend_from_slice(&p.x);
        let gumbel = sample_max_values(&gp, &candidates, 8, MaxValueSampler::Gumbel, &mut rng).expect("Gumbel max values");
        let sampled = sample_max_values(&gp, &candidates, 8, MaxValueSampler::Sampling, &mut rng).expect("sampled max values");
        let thompson = gp.pathwise_sample(256, &mut rng).map(|s| ThompsonSample::new(s, d));
        let noisy_ei = gp.drawn_models(8, &mut rng).ok().map(LogNei::new);
        for x in p.smooth_test_points(MIN_R) {
            check_acquisition("LogEI", &LogEi::new(&gp, best), &x, 1e-5, 1.0);
            if let Some(nei) = &noisy_ei {
                check_acquisition("LogNEI", nei, &x, 1e-5, 1.0);
            }
            check_acquisition("UCB", &Ucb::new(&gp, beta), &x, 1e-5, y_max + 3.0 * sd);
            check_acquisition("PI", &Pi::new(&gp, best), &x, 1e-5, 1.0);
            check_acquisition("MES (Gumbel)", &Mes::new(&gp, gumbel.clone()), &x, 1e-5, 1.0);
            check_acquisition("MES (sampling)", &Mes::new(&gp, sampled.clone()), &x, 1e-5, 1.0);
            // Matérn-½ features have Cauchy frequencies, too rough for finite differences (see the fixed-seed test).
            if let Some(ts) = thompson.as_ref().filter(|_| !p.has_matern12()) {
                check_acquisition("Thompson sample", ts, &x, 1e-5, y_max + 3.0 * sd);
            }
        }
        if d >= 2 {
            // E over the last dimension at three fixed values; x sets the others.
            let samples = vec![0.15, 0.5, 0.85];
            let expected = Expected::new(LogEi::new(&gp, best), (0..d - 1).collect(), vec![d - 1], samples.clone());
            for x in p.smooth_test_points(MIN_R) {
                let x = &x[..d - 1];
                let smooth = samples.iter().all(|s| p.is_smooth_at(&[x, &[*s]].concat(), MIN_R));
                if smooth {
                    check_acquisition("Expected<LogEI>", &expected, x, 1e-5, 1.0);
                }
            }
        }
    }

    #[test]
    fn log_marginal_likelihood_gradient_matches_finite_differences(
        p in strategies::problem(10),
        learn_noise in any::<bool>(),
        learn_mean in any::<bool>(),
    ) {
        let noise = if learn_noise { NoiseModel::Learned { min: 1e-6 } } else { NoiseModel::Fixed(p.noise) };
        let mean = if learn_mean { MeanModel::Constant } else { MeanModel::Zero };
        let config = plain_config(p.kernel.clone(), noise, mean, p.standardize);
        let data = p.data();
        let hypers = p.hypers();
        let model = Gp::new(&data, &config, hypers.clone()).expect("model conditions");
        // The jitter ladder makes the likelihood jump; compare where it is not needed.
        prop_assume!(model.jitter() == 0.0);
        let (value, grad) = gp::log_marginal_likelihood(&data, &config, &hypers).expect("likelihood evaluates");
        assert!((value - model.log_marginal_likelihood()).abs() <= 1e-9 * value.abs().max(1.0));
        let nk = p.theta.len();
        let mut params = p.theta.clone();
        if learn_noise {
            params.push(p.noise.ln());
        }
        if learn_mean {
            params.push(p.mean);
        }
        prop_assert_eq!(grad.len(), params.len());
        let lml = |q: &[f64]| {
            let h = Hyperparameters {
                theta: q[..nk].to_vec(),
                noise_variance: if learn_noise { q[nk].exp() } else { 0.0 },
                mean: if learn_mean { q[q.len() - 1] } else { 0.0 },
            };
            gp::log_marginal_likelihood(&data, &config, &h).expect("likelihood evaluates").0
        };
        check_gradient("∂lml/∂(θ, ln σ²_n, c)", &lml, &params, &grad, 1e-4, value.abs().max(1.0));
    }
}

#[test]
fn thompson_sample_gradient_matches_finite_differences_for_matern12_with_a_fixed_seed() {
    let d = 2;
    let x: Vec<f64> = (0..6).flat_map(|i| [(f64::from(i) * 0.37) % 1.0, (f64::from(i) * 0.61) % 1.0]).collect();
    let y: Vec<f64> = x.chunks_exact(2).map(|r| (5.0 * r[0]).sin() + r[1]).collect();
    let config = plain_config(Kernel::ard(KernelFamily::Matern12, d), NoiseModel::Fixed(1e-3), MeanModel::Zero, true);
    let hypers = Hyperparameters { theta: vec![-1.0, -0.5, 0.0], noise_variance: 0.0, mean: 0.0 };
    let gp = Gp::new(&gp::Data::new(d, x, y), &config, hypers).expect("model conditions");
    let mut rng = StdRng::seed_from_u64(11);
    let ts = ThompsonSample::new(gp.pathwise_sample(256, &mut rng).expect("Matérn has Fourier features"), d);
    for point in [[0.42, 0.17], [0.9, 0.55], [0.05, 0.95]] {
        check_acquisition("Thompson sample (Matérn-½)", &ts, &point, 1e-6, 3.0);
    }
}
