//! Standard test functions with their known optima (constants as in `shared/research/seed-experiments.md` §0.1,
//! BoTorch's definitions). Every function is in minimisation form on its native box; [`TestFunction::eval_unit`]
//! evaluates it at a point of the unit cube mapped linearly onto that box.

use std::f64::consts::{E, PI};

mod gp_functions;

pub use gp_functions::{PosteriorMeanFunction, argmax_mean, gp_prior_draw, known_gp, sample_gp};

/// A named test function.
#[derive(Debug, Clone, PartialEq)]
pub struct TestFunction {
    /// Name, e.g. `hartmann6`.
    pub name: String,
    /// Box of each dimension.
    pub bounds: Vec<(f64, f64)>,
    /// Global minimum value.
    pub optimum: f64,
    kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Branin,
    Hartmann3,
    Hartmann6,
    Ackley,
    Levy,
    Rosenbrock,
}

/// Hartmann weights α (seed 002's printed 2.0 is a typo; its code uses 1.2).
const HARTMANN_ALPHA: [f64; 4] = [1.0, 1.2, 3.0, 3.2];
const HARTMANN3_A: [[f64; 3]; 4] = [[3.0, 10.0, 30.0], [0.1, 10.0, 35.0], [3.0, 10.0, 30.0], [0.1, 10.0, 35.0]];
const HARTMANN3_P: [[f64; 3]; 4] =
    [[0.3689, 0.1170, 0.2673], [0.4699, 0.4387, 0.7470], [0.1091, 0.8732, 0.5547], [0.0381, 0.5743, 0.8828]];
const HARTMANN6_A: [[f64; 6]; 4] = [
    [10.0, 3.0, 17.0, 3.5, 1.7, 8.0],
    [0.05, 10.0, 17.0, 0.1, 8.0, 14.0],
    [3.0, 3.5, 1.7, 10.0, 17.0, 8.0],
    [17.0, 8.0, 0.05, 10.0, 0.1, 14.0],
];
const HARTMANN6_P: [[f64; 6]; 4] = [
    [0.1312, 0.1696, 0.5569, 0.0124, 0.8283, 0.5886],
    [0.2329, 0.4135, 0.8307, 0.3736, 0.1004, 0.9991],
    [0.2348, 0.1451, 0.3522, 0.2883, 0.3047, 0.6650],
    [0.4047, 0.8828, 0.8732, 0.5743, 0.1091, 0.0381],
];

impl TestFunction {
    /// Branin on [−5, 10] × [0, 15]; minimum 0.397887.
    pub fn branin() -> Self {
        Self {
            name: "branin".into(),
            bounds: vec![(-5.0, 10.0), (0.0, 15.0)],
            optimum: 0.397_887_357_729_738_2,
            kind: Kind::Branin,
        }
    }

    /// Hartmann-3 on [0, 1]³ (negated, so minimum −3.86278).
    pub fn hartmann3() -> Self {
        Self {
            name: "hartmann3".into(),
            bounds: vec![(0.0, 1.0); 3],
            optimum: -3.862_782_147_820_755,
            kind: Kind::Hartmann3,
        }
    }

    /// Hartmann-6 on [0, 1]⁶ (negated, so minimum −3.32237).
    pub fn hartmann6() -> Self {
        Self {
            name: "hartmann6".into(),
            bounds: vec![(0.0, 1.0); 6],
            optimum: -3.322_368_011_415_51,
            kind: Kind::Hartmann6,
        }
    }

    /// Ackley-d on [−32.768, 32.768]^d; minimum 0 at the origin.
    pub fn ackley(d: usize) -> Self {
        Self { name: format!("ackley{d}"), bounds: vec![(-32.768, 32.768); d], optimum: 0.0, kind: Kind::Ackley }
    }

    /// Levy-d on [−10, 10]^d; minimum 0 at (1, …, 1).
    pub fn levy(d: usize) -> Self {
        Self { name: format!("levy{d}"), bounds: vec![(-10.0, 10.0); d], optimum: 0.0, kind: Kind::Levy }
    }

    /// Rosenbrock-d on [−5, 10]^d; minimum 0 at (1, …, 1).
    pub fn rosenbrock(d: usize) -> Self {
        Self { name: format!("rosenbrock{d}"), bounds: vec![(-5.0, 10.0); d], optimum: 0.0, kind: Kind::Rosenbrock }
    }

    /// Dimension.
    pub fn dim(&self) -> usize {
        self.bounds.len()
    }

    /// Value at a point of the native box.
    pub fn eval(&self, z: &[f64]) -> f64 {
        match self.kind {
            Kind::Branin => branin(z[0], z[1]),
            Kind::Hartmann3 => -hartmann(z, &HARTMANN3_A, &HARTMANN3_P),
            Kind::Hartmann6 => -hartmann(z, &HARTMANN6_A, &HARTMANN6_P),
            Kind::Ackley => ackley(z),
            Kind::Levy => levy(z),
            Kind::Rosenbrock => z.windows(2).map(|w| 100.0 * (w[1] - w[0] * w[0]).powi(2) + (1.0 - w[0]).powi(2)).sum(),
        }
    }

    /// Value at a point of the unit cube mapped onto the box.
    pub fn eval_unit(&self, u: &[f64]) -> f64 {
        let z: Vec<f64> = u.iter().zip(&self.bounds).map(|(u, (lo, hi))| lo + u * (hi - lo)).collect();
        self.eval(&z)
    }
}

/// Branin–Hoo: `a(v − bu² + cu − r)² + s(1 − t)cos u + s`.
pub fn branin(u: f64, v: f64) -> f64 {
    let (a, b, c, r, s, t) = (1.0, 5.1 / (4.0 * PI * PI), 5.0 / PI, 6.0, 10.0, 1.0 / (8.0 * PI));
    a * (v - b * u * u + c * u - r).powi(2) + s * (1.0 - t) * u.cos() + s
}

/// Hartmann in maximisation form `Σ αᵢ exp(−Σ_j A_ij (y_j − P_ij)²)`.
pub fn hartmann<const D: usize>(y: &[f64], a: &[[f64; D]; 4], p: &[[f64; D]; 4]) -> f64 {
    (0..4).map(|i| HARTMANN_ALPHA[i] * (-(0..D).map(|j| a[i][j] * (y[j] - p[i][j]).powi(2)).sum::<f64>()).exp()).sum()
}

/// Hartmann-6 in maximisation form on [0,1]⁶ (max 3.32237).
pub fn hartmann6(y: &[f64]) -> f64 {
    hartmann(y, &HARTMANN6_A, &HARTMANN6_P)
}

/// Ackley (a = 20, b = 0.2, c = 2π) in minimisation form.
pub fn ackley(z: &[f64]) -> f64 {
    let d = z.len() as f64;
    let sq = (z.iter().map(|v| v * v).sum::<f64>() / d).sqrt();
    let cs = z.iter().map(|v| (2.0 * PI * v).cos()).sum::<f64>() / d;
    -20.0 * (-0.2 * sq).exp() - cs.exp() + 20.0 + E
}

/// Levy in minimisation form.
pub fn levy(z: &[f64]) -> f64 {
    let w: Vec<f64> = z.iter().map(|v| 1.0 + (v - 1.0) / 4.0).collect();
    let d = w.len();
    let mut s = (PI * w[0]).sin().powi(2);
    for wi in &w[..d - 1] {
        s += (wi - 1.0).powi(2) * (1.0 + 10.0 * (PI * wi + 1.0).sin().powi(2));
    }
    s + (w[d - 1] - 1.0).powi(2) * (1.0 + (2.0 * PI * w[d - 1]).sin().powi(2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_optima_are_attained_at_their_minimisers() {
        let b = TestFunction::branin();
        for z in [[-PI, 12.275], [PI, 2.275], [9.42478, 2.475]] {
            assert!((b.eval(&z) - b.optimum).abs() < 1e-5);
        }
        let h6 = TestFunction::hartmann6();
        let y = [0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573];
        assert!((h6.eval(&y) - h6.optimum).abs() < 1e-5);
        let h3 = TestFunction::hartmann3();
        assert!((h3.eval(&[0.114614, 0.555649, 0.852547]) - h3.optimum).abs() < 1e-5);
        assert!(TestFunction::ackley(6).eval(&[0.0; 6]).abs() < 1e-12);
        assert!(TestFunction::levy(4).eval(&[1.0; 4]).abs() < 1e-12);
        assert_eq!(TestFunction::rosenbrock(3).eval(&[1.0; 3]), 0.0);
    }

    #[test]
    fn optima_are_lower_bounds_on_random_points() {
        let fs = [
            TestFunction::branin(),
            TestFunction::hartmann3(),
            TestFunction::hartmann6(),
            TestFunction::ackley(3),
            TestFunction::levy(3),
        ];
        for f in fs {
            let pts = crate::sampling::Sobol::scrambled(f.dim(), 3).take(2000);
            for u in pts.chunks(f.dim()) {
                assert!(f.eval_unit(u) >= f.optimum - 1e-9, "{}", f.name);
            }
        }
    }
}
