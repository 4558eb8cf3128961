//! Helpers shared by the test modules.

use engine::gp::{GpConfig, MeanModel, NoiseModel};
use engine::kernel::{Component, Kernel, KernelFamily};

/// Every kernel family.
pub const FAMILIES: [KernelFamily; 5] =
    [KernelFamily::Matern12, KernelFamily::Matern32, KernelFamily::Matern52, KernelFamily::Rbf, KernelFamily::Periodic];

/// `|a − b| ≤ rel·|b| + abs` (b is the reference).
pub fn close(a: f64, b: f64, rel: f64, abs: f64) -> bool {
    (a - b).abs() <= rel * b.abs() + abs
}

/// Panics with `what` and both numbers unless `a` is [`close`] to the reference `b`.
#[track_caller]
pub fn assert_close(what: &str, a: f64, b: f64, rel: f64, abs: f64) {
    assert!(
        close(a, b, rel, abs),
        "{what}: got {a:e}, reference {b:e} (|Δ| = {:e}, allowed {:e})",
        (a - b).abs(),
        rel * b.abs() + abs
    );
}

/// A GP configuration with nothing added implicitly: no priors, no random restarts (other fields at their
/// defaults).
pub fn plain_config(kernel: Kernel, noise: NoiseModel, mean: MeanModel, standardize: bool) -> GpConfig {
    let d = kernel.dim();
    GpConfig {
        kernel,
        noise,
        mean,
        prior_mean: None,
        standardize,
        priors: false,
        restarts: 0,
        ..GpConfig::default_for(d)
    }
}

/// A kernel over `d` dimensions and its θ, built from uniform numbers `u` in [0, 1): one ARD component of
/// `families[0]`, or (when `additive` and d ≥ 2) `families[0]` over the first ⌈d/2⌉ dimensions plus
/// `families[1]` over the rest. Lengthscales in [0.05, 2], output scales in [0.1, 10], periods in [0.2, 1].
pub fn random_kernel(d: usize, additive: bool, families: [KernelFamily; 2], u: &[f64]) -> (Kernel, Vec<f64>) {
    let groups: Vec<Vec<usize>> = if additive && d >= 2 {
        let k = d.div_ceil(2);
        vec![(0..k).collect(), (k..d).collect()]
    } else {
        vec![(0..d).collect()]
    };
    let components: Vec<Component> =
        groups.into_iter().zip(families).map(|(dims, family)| Component { family, dims }).collect();
    let mut u = u.iter().cycle();
    let mut draw = |lo: f64, hi: f64| {
        let t = *u.next().expect("cycle of a non-empty slice");
        (lo.ln() + t * (hi.ln() - lo.ln())).clamp(lo.ln(), hi.ln())
    };
    let mut theta = Vec::new();
    for c in &components {
        for _ in &c.dims {
            theta.push(draw(0.05, 2.0));
        }
        theta.push(draw(0.1, 10.0));
        if c.family == KernelFamily::Periodic {
            theta.push(draw(0.2, 1.0));
        }
    }
    let kernel = Kernel::additive(components, d);
    assert_eq!(theta.len(), kernel.n_params());
    (kernel, theta)
}

/// A smooth bowl on the unit square, optimum at (0.3, 0.7); outputs between 0 and about 1.1.
pub fn bowl(x: f64, y: f64) -> f64 {
    (x - 0.3).powi(2) + 2.0 * (y - 0.7).powi(2)
}

/// A `gp-ei` study with `options` over the unit square (`x`, `y`), minimised.
pub fn unit_square_gp_ei(options: serde_json::Value, seed: u64) -> engine::Study {
    let spec: engine::StudySpec = serde_json::from_value(serde_json::json!({
        "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1},
                       {"name": "y", "type": "float", "low": 0, "high": 1}],
        "objective": {"goal": "minimize"},
        "algorithm": {"name": "gp-ei", "options": options},
        "seed": seed,
    }))
    .expect("spec parses");
    engine::Study::new(spec).expect("spec validates")
}

/// The places in the cycle of local steps (counted from the end of the initial design) of a `gp-ei` call's `len`
/// model points whose first place is `first`, in the order the call lists them: its lead global pick (the first
/// place that is a multiple of `LOCAL_CYCLE`) first, then the others in cycle order.
pub fn call_places(first: usize, len: usize) -> Vec<usize> {
    let mut places: Vec<usize> = (first..first + len).collect();
    if let Some(at) = places.iter().position(|p| p.is_multiple_of(engine::policy::LOCAL_CYCLE)) {
        places[..=at].rotate_right(1);
    }
    places
}
