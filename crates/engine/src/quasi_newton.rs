//! Box-constrained limited-memory quasi-Newton minimiser (projected L-BFGS), below `gp` (hyperparameter fits)
//! and `optim` (acquisition maximisation).
//!
//! A projected quasi-Newton method in the spirit of Kim, Sra & Dhillon ("Tackling box-constrained optimization
//! via a new projected quasi-Newton approach", SISC 2010), not Byrd et al.'s L-BFGS-B: each iteration fixes the
//! variables that sit on a bound with the gradient pushing outward, takes the L-BFGS two-loop direction on the
//! free variables, and backtracks along the projected path `P(x + αd)` until the Armijo condition holds. It needs no
//! Cauchy-point/subspace machinery and is exact enough for smooth acquisition and likelihood surfaces on boxes;
//! the tests below keep it honest on problems with known constrained answers.

/// Stopping rules.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// Number of (s, y) pairs kept.
    pub memory: usize,
    /// Iteration cap.
    pub max_iter: usize,
    /// Stop when the projected gradient's largest entry is below this.
    pub pgtol: f64,
    /// Stop when an iteration lowers f by less than `ftol·max(|f|, 1)`.
    pub ftol: f64,
}

impl Default for Config {
    fn default() -> Self {
        Self { memory: 10, max_iter: 200, pgtol: 1e-8, ftol: 1e-12 }
    }
}

/// Outcome of a minimisation.
#[derive(Debug, Clone)]
pub struct Minimum {
    /// Best point found (inside the box).
    pub x: Vec<f64>,
    /// Objective at `x`.
    pub f: f64,
    /// Iterations taken.
    pub iterations: usize,
    /// Objective evaluations.
    pub evaluations: usize,
}

/// Minimises `f` over `[lower, upper]` from `x0`. `f(x, grad)` returns the value and writes the gradient; a
/// non-finite value is treated as "outside the domain" and makes the line search back off.
pub fn minimize(
    f: impl FnMut(&[f64], &mut [f64]) -> f64,
    x0: &[f64],
    lower: &[f64],
    upper: &[f64],
    config: &Config,
) -> Minimum {
    minimize_until(f, x0, lower, upper, config, |_, _| false)
}

/// [`minimize`], stopped after any accepted iteration at whose point `x` (with value `f(x)`) `stop(x, f(x))` holds.
pub fn minimize_until(
    mut f: impl FnMut(&[f64], &mut [f64]) -> f64,
    x0: &[f64],
    lower: &[f64],
    upper: &[f64],
    config: &Config,
    mut stop: impl FnMut(&[f64], f64) -> bool,
) -> Minimum {
    let n = x0.len();
    let project = |x: &mut [f64]| {
        for i in 0..n {
            x[i] = x[i].clamp(lower[i], upper[i]);
        }
    };
    let mut x = x0.to_vec();
    project(&mut x);
    let mut g = vec![0.0; n];
    let mut fx = f(&x, &mut g);
    let mut evaluations = 1;
    if !fx.is_finite() || g.iter().any(|v| !v.is_finite()) {
        return Minimum { x, f: fx, iterations: 0, evaluations };
    }
    let mut s_hist: Vec<Vec<f64>> = Vec::with_capacity(config.memory);
    let mut y_hist: Vec<Vec<f64>> = Vec::with_capacity(config.memory);
    let mut free = vec![true; n];
    let mut d = vec![0.0; n];
    let mut x_new = vec![0.0; n];
    let mut g_new = vec![0.0; n];
    let mut alpha_buf = vec![0.0; config.memory];
    let width = (0..n).map(|i| upper[i] - lower[i]).fold(0.0, f64::max);
    let mut iterations = 0;
    while iterations < config.max_iter {
        iterations += 1;
        let mut pg = 0.0f64;
        for i in 0..n {
            pg = pg.max(((x[i] - g[i]).clamp(lower[i], upper[i]) - x[i]).abs());
            free[i] = !((x[i] <= lower[i] && g[i] > 0.0) || (x[i] >= upper[i] && g[i] < 0.0));
        }
        if pg <= config.pgtol {
            break;
        }
        two_loop(&g, &free, &s_hist, &y_hist, &mut alpha_buf, &mut d);
        let mut slope: f64 = (0..n).map(|i| g[i] * d[i]).sum();
        if slope.is_nan() || slope >= 0.0 {
            s_hist.clear();
            y_hist.clear();
            for i in 0..n {
                d[i] = if free[i] { -g[i] } else { 0.0 };
            }
            slope = (0..n).map(|i| g[i] * d[i]).sum();
            if slope.is_nan() || slope >= 0.0 {
                break;
            }
        }
        let dmax = d.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let mut step =
            if s_hist.is_empty() && width.is_finite() && dmax > 0.0 { (0.25 * width / dmax).min(1.0) } else { 1.0 };
        // Backtrack until Armijo holds; if it holds on the first try but the slope is still steep (weak Wolfe
        // curvature condition fails), extrapolate so that the (s, y) pair has positive curvature.
        let mut accepted = false;
        let mut best: Option<(f64, Vec<f64>, Vec<f64>)> = None;
        let mut expanding = true;
        for _ in 0..50 {
            for i in 0..n {
                x_new[i] = x[i] + step * d[i];
            }
            project(&mut x_new);
            let decrease: f64 = (0..n).map(|i| g[i] * (x_new[i] - x[i])).sum();
            let f_new = f(&x_new, &mut g_new);
            evaluations += 1;
            let armijo = f_new.is_finite() && g_new.iter().all(|v| v.is_finite()) && f_new <= fx + 1e-4 * decrease;
            if armijo && best.as_ref().is_none_or(|b| f_new < b.0) {
                best = Some((f_new, x_new.clone(), g_new.clone()));
                let new_slope: f64 = (0..n).map(|i| g_new[i] * (x_new[i] - x[i])).sum();
                if expanding && new_slope < 0.9 * decrease && step < 1e10 {
                    step *= 4.0;
                    continue;
                }
                break;
            }
            if best.is_some() {
                break;
            }
            expanding = false;
            step *= 0.5;
        }
        if let Some((f_new, xb, gb)) = best {
            accepted = true;
            x_new.copy_from_slice(&xb);
            g_new.copy_from_slice(&gb);
            let s: Vec<f64> = (0..n).map(|i| x_new[i] - x[i]).collect();
            let y: Vec<f64> = (0..n).map(|i| g_new[i] - g[i]).collect();
            let sy: f64 = s.iter().zip(&y).map(|(a, b)| a * b).sum();
            let yy: f64 = y.iter().map(|v| v * v).sum();
            if sy > 1e-12 * yy.max(f64::MIN_POSITIVE) {
                if s_hist.len() == config.memory {
                    s_hist.remove(0);
                    y_hist.remove(0);
                }
                s_hist.push(s);
                y_hist.push(y);
            }
            let small = fx - f_new <= config.ftol * fx.abs().max(1.0);
            std::mem::swap(&mut x, &mut x_new);
            std::mem::swap(&mut g, &mut g_new);
            fx = f_new;
            if (small && iterations > 1) || stop(&x, fx) {
                return Minimum { x, f: fx, iterations, evaluations };
            }
        }
        if !accepted {
            if s_hist.is_empty() {
                break;
            }
            s_hist.clear();
            y_hist.clear();
        }
    }
    Minimum { x, f: fx, iterations, evaluations }
}

/// L-BFGS two-loop recursion restricted to the free coordinates: `d = −H g`.
fn two_loop(g: &[f64], free: &[bool], s_hist: &[Vec<f64>], y_hist: &[Vec<f64>], alpha: &mut [f64], d: &mut [f64]) {
    let dot =
        |a: &[f64], b: &[f64]| -> f64 { a.iter().zip(b).zip(free).filter(|(_, f)| **f).map(|((x, y), _)| x * y).sum() };
    for i in 0..g.len() {
        d[i] = if free[i] { g[i] } else { 0.0 };
    }
    let m = s_hist.len();
    let mut rho = vec![0.0; m];
    for k in (0..m).rev() {
        let sy = dot(&s_hist[k], &y_hist[k]);
        if sy <= 0.0 {
            continue;
        }
        rho[k] = 1.0 / sy;
        alpha[k] = rho[k] * dot(&s_hist[k], d);
        for i in 0..d.len() {
            if free[i] {
                d[i] -= alpha[k] * y_hist[k][i];
            }
        }
    }
    if m > 0 {
        let sy = dot(&s_hist[m - 1], &y_hist[m - 1]);
        let yy = dot(&y_hist[m - 1], &y_hist[m - 1]);
        if sy > 0.0 && yy > 0.0 {
            let gamma = sy / yy;
            d.iter_mut().for_each(|v| *v *= gamma);
        }
    }
    for k in 0..m {
        if rho[k] == 0.0 {
            continue;
        }
        let beta = rho[k] * dot(&y_hist[k], d);
        for i in 0..d.len() {
            if free[i] {
                d[i] += (alpha[k] - beta) * s_hist[k][i];
            }
        }
    }
    d.iter_mut().for_each(|v| *v = -*v);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rosenbrock(x: &[f64], g: &mut [f64]) -> f64 {
        let (a, b) = (x[0], x[1]);
        g[0] = -2.0 * (1.0 - a) - 400.0 * a * (b - a * a);
        g[1] = 200.0 * (b - a * a);
        (1.0 - a).powi(2) + 100.0 * (b - a * a).powi(2)
    }

    #[test]
    fn box_rosenbrock_reaches_the_constrained_optimum() {
        // x0 ∈ [−2, 0.5], x1 ∈ [−2, 2]: the optimum is (0.5, 0.25) with f = 0.25.
        let m = minimize(rosenbrock, &[-1.2, 1.0], &[-2.0, -2.0], &[0.5, 2.0], &Config::default());
        assert!((m.f - 0.25).abs() < 1e-9, "f = {}", m.f);
        assert!((m.x[0] - 0.5).abs() < 1e-9 && (m.x[1] - 0.25).abs() < 1e-6, "{:?}", m.x);
    }

    #[test]
    fn minimize_until_stops_at_the_first_iteration_meeting_the_rule() {
        let big = [1e10, 1e10];
        let full = minimize(rosenbrock, &[-1.2, 1.0], &[-1e10, -1e10], &big, &Config::default());
        let mut seen = Vec::new();
        let stopped = minimize_until(rosenbrock, &[-1.2, 1.0], &[-1e10, -1e10], &big, &Config::default(), |x, f| {
            seen.push(f);
            x[0] > 0.5
        });
        // Stopped on the way: the rule held at the returned point and at no earlier iteration.
        assert!(stopped.x[0] > 0.5 && stopped.iterations < full.iterations, "{stopped:?} vs {full:?}");
        assert_eq!(seen.len(), stopped.iterations);
        assert_eq!(*seen.last().unwrap(), stopped.f);
    }

    #[test]
    fn unconstrained_rosenbrock_reaches_one_one() {
        let big = [1e10, 1e10];
        let m = minimize(rosenbrock, &[-1.2, 1.0], &[-1e10, -1e10], &big, &Config::default());
        assert!(m.f < 1e-12, "f = {}", m.f);
        assert!((m.x[0] - 1.0).abs() < 1e-6 && (m.x[1] - 1.0).abs() < 1e-6);
    }

    #[test]
    fn quadratic_with_optimum_outside_the_cube_lands_on_the_corner() {
        let f = |x: &[f64], g: &mut [f64]| {
            let mut v = 0.0;
            for i in 0..6 {
                let c = 1.5 + 0.1 * i as f64;
                v += (i + 1) as f64 * (x[i] - c).powi(2);
                g[i] = 2.0 * (i + 1) as f64 * (x[i] - c);
            }
            v
        };
        let m = minimize(f, &[0.3; 6], &[0.0; 6], &[1.0; 6], &Config::default());
        assert!(m.x.iter().all(|v| *v == 1.0), "{:?}", m.x);
    }

    #[test]
    fn mixed_active_and_interior_coordinates() {
        // min (x0 + 1)² + (x1 − 0.3)² + (x2 − 2)² on [0, 1]³ → (0, 0.3, 1)
        let f = |x: &[f64], g: &mut [f64]| {
            g[0] = 2.0 * (x[0] + 1.0);
            g[1] = 2.0 * (x[1] - 0.3);
            g[2] = 2.0 * (x[2] - 2.0);
            (x[0] + 1.0).powi(2) + (x[1] - 0.3).powi(2) + (x[2] - 2.0).powi(2)
        };
        let m = minimize(f, &[0.9, 0.9, 0.1], &[0.0; 3], &[1.0; 3], &Config::default());
        assert_eq!(m.x[0], 0.0);
        assert!((m.x[1] - 0.3).abs() < 1e-8);
        assert_eq!(m.x[2], 1.0);
    }

    #[test]
    fn non_finite_start_returns_without_panicking() {
        let m = minimize(|_, _| f64::NAN, &[0.5], &[0.0], &[1.0], &Config::default());
        assert!(m.f.is_nan());
    }
}
