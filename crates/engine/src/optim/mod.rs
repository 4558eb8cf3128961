//! Acquisition optimisation: scrambled Sobol raw samples → the best few (plus caller-given starts) → bounded
//! L-BFGS with analytic gradients → snap to the discrete structure → discrete local search over int and
//! categorical neighbours. Deterministic given the seed. Finite candidate sets are scored exhaustively in batches.
//! Starts mostly climb the same few peaks: one that reaches a maximum an earlier start found stops there
//! ([`best_local_maximum`]); in `bench latency`'s d = 6, n = 25 suggestions that is a fifth less L-BFGS work
//! (`docs/bench/robust.md`, "Suggest latency").

use crate::acquisition::Acquisition;
use crate::polytope::Polytope;
use crate::sampling::Sobol;
use crate::space::{DimKind, Space};

/// Settings of the acquisition optimiser.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OptimConfig {
    /// Sobol points scored to pick starts.
    pub raw_samples: usize,
    /// L-BFGS starts taken from the raw samples (caller-given starts come on top).
    pub restarts: usize,
    /// L-BFGS iterations per start.
    pub max_iter: usize,
}

impl Default for OptimConfig {
    /// 1024 raw samples, 8 restarts, 100 iterations: enough to find the global optimum of LogEI on the
    /// benchmark functions without dominating suggest time (see `bench latency`).
    fn default() -> Self {
        Self { raw_samples: 1024, restarts: 8, max_iter: 100 }
    }
}

/// Best point found.
#[derive(Debug, Clone)]
pub struct Optimum {
    /// Encoded point (snapped to the space).
    pub x: Vec<f64>,
    /// Acquisition value there.
    pub value: f64,
    /// Acquisition evaluations spent.
    pub evaluations: usize,
}

/// Maximises `acq` over the encoded `space` (its dimension must equal `acq.dim()`). `starts` are extra start
/// points (e.g. the incumbents), always run.
pub fn maximize(acq: &dyn Acquisition, space: &Space, config: &OptimConfig, seed: u64, starts: &[Vec<f64>]) -> Optimum {
    let d = space.dim();
    maximize_in_box(acq, space, config, seed, starts, (&vec![0.0; d], &vec![1.0; d]))
}

/// [`maximize`] within the box `bounds` (lower, upper) of the encoded unit cube: raw samples are drawn in the box,
/// `starts` outside it (beyond 1e-9) are skipped. Snapping a discrete coordinate to its grid may leave a point just outside.
pub fn maximize_in_box(
    acq: &dyn Acquisition,
    space: &Space,
    config: &OptimConfig,
    seed: u64,
    starts: &[Vec<f64>],
    bounds: (&[f64], &[f64]),
) -> Optimum {
    let d = space.dim();
    debug_assert_eq!(d, acq.dim());
    let mut raw = Sobol::scrambled(d, seed).take(config.raw_samples.max(1));
    for row in raw.chunks_exact_mut(d.max(1)) {
        for (v, (l, u)) in row.iter_mut().zip(bounds.0.iter().zip(bounds.1)) {
            *v = l + *v * (u - l);
        }
        space.snap(row);
    }
    let values = acq.best_values(&raw, config.restarts.max(1));
    let mut order: Vec<usize> = (0..values.len()).filter(|&i| values[i].is_finite()).collect();
    order.sort_by(|&a, &b| values[b].total_cmp(&values[a]));
    let best = match order.first() {
        Some(&i) => Optimum { x: raw[i * d..(i + 1) * d].to_vec(), value: values[i], evaluations: values.len() },
        None => Optimum { x: space.centre(), value: f64::NEG_INFINITY, evaluations: values.len() },
    };
    let mut run: Vec<Vec<f64>> = starts.iter().filter(|s| s.len() == d && within(s, bounds, 1e-9)).cloned().collect();
    run.extend(order.iter().take(config.restarts).map(|&i| raw[i * d..(i + 1) * d].to_vec()));
    best_local_maximum(acq, space, run, |_| (bounds.0.to_vec(), bounds.1.to_vec()), config.max_iter, best)
}

/// The best local maximum of `acq` near `starts`: from each start, the local search of [`maximize`] confined to the
/// box `start ± half_width` (per encoded dimension, within the unit cube; discrete neighbours outside it are not
/// visited). No raw samples: this polishes given points, it does not search the space.
pub fn maximize_near(
    acq: &dyn Acquisition,
    space: &Space,
    starts: &[Vec<f64>],
    half_width: &[f64],
    max_iter: usize,
) -> Optimum {
    let d = space.dim();
    debug_assert_eq!(d, acq.dim());
    debug_assert_eq!(d, half_width.len());
    let none = Optimum { x: space.centre(), value: f64::NEG_INFINITY, evaluations: 0 };
    let run: Vec<Vec<f64>> = starts.iter().filter(|s| s.len() == d).cloned().collect();
    let around = |x: &[f64]| {
        let lower = x.iter().zip(half_width).map(|(v, h)| (v - h).max(0.0)).collect();
        let upper = x.iter().zip(half_width).map(|(v, h)| (v + h).min(1.0)).collect();
        (lower, upper)
    };
    best_local_maximum(acq, space, run, around, max_iter, none)
}

/// The better of `best` and the local maxima of [`local_search`] from each of `starts` (snapped first) within
/// `bounds_of(snapped start)`; its `evaluations` add the searches' to `best`'s. A search that comes within
/// [`MERGE_RADIUS`] of a maximum an earlier start found within the same bounds, without exceeding its value, stops
/// there: it is climbing the same peak (most starts do: the best raw samples lie on a few peaks) and cannot beat it.
/// Maxima found within other bounds are not merged with: one at the edge of another start's box is no peak, and
/// this start's own box may let it climb past it ([`maximize_near`]'s boxes differ per start).
fn best_local_maximum(
    acq: &dyn Acquisition,
    space: &Space,
    starts: Vec<Vec<f64>>,
    bounds_of: impl Fn(&[f64]) -> (Vec<f64>, Vec<f64>),
    max_iter: usize,
    mut best: Optimum,
) -> Optimum {
    let kinds = space.dim_kinds();
    let mut evaluations = best.evaluations;
    let mut found: Vec<Found> = Vec::new();
    for mut x in starts {
        space.snap(&mut x);
        let bounds = bounds_of(&x);
        let peaks: Vec<(&[f64], f64)> =
            found.iter().filter(|f| f.bounds == bounds).map(|f| (f.x.as_slice(), f.value)).collect();
        let (value, evals) = local_search(acq, space, &kinds, &mut x, (&bounds.0, &bounds.1), max_iter, &peaks);
        evaluations += evals;
        found.push(Found { x: x.clone(), value, bounds });
        if value > best.value || !best.value.is_finite() {
            best = Optimum { x, value, evaluations: 0 };
        }
    }
    best.evaluations = evaluations;
    best
}

/// A local maximum one start of [`best_local_maximum`] found: its point, value and the bounds (lower, upper) it was
/// found within.
struct Found {
    x: Vec<f64>,
    value: f64,
    bounds: (Vec<f64>, Vec<f64>),
}

/// Largest distance per encoded coordinate at which a local search counts as having reached a maximum found
/// before (see [`best_local_maximum`]).
const MERGE_RADIUS: f64 = 1e-3;

/// L-BFGS on the continuous (and relaxed integer) coordinates within `bounds` (lower, upper), then snapping and a
/// discrete neighbour search (neighbours within the bounds), repeated while the discrete search improves. The
/// L-BFGS run stops early on reaching one of the `found` maxima (point, value) without exceeding its value.
fn local_search(
    acq: &dyn Acquisition,
    space: &Space,
    kinds: &[DimKind],
    x: &mut Vec<f64>,
    bounds: (&[f64], &[f64]),
    max_iter: usize,
    found: &[(&[f64], f64)],
) -> (f64, usize) {
    let d = x.len();
    let has_discrete = kinds.iter().any(|k| *k != DimKind::Continuous);
    let mut evaluations = 0;
    let mut value = f64::NEG_INFINITY;
    for _round in 0..8 {
        let free: Vec<bool> = kinds.iter().map(|k| !matches!(k, DimKind::OneHot { .. })).collect();
        if free.iter().any(|f| *f) {
            let lower: Vec<f64> = (0..d).map(|j| if free[j] { bounds.0[j].min(x[j]) } else { x[j] }).collect();
            let upper: Vec<f64> = (0..d).map(|j| if free[j] { bounds.1[j].max(x[j]) } else { x[j] }).collect();
            let cfg = crate::quasi_newton::Config { max_iter, pgtol: 1e-9, ftol: 1e-13, ..Default::default() };
            let reached = |p: &[f64], f: f64| {
                found.iter().any(|(y, v)| -f <= *v && p.iter().zip(*y).all(|(a, b)| (a - b).abs() <= MERGE_RADIUS))
            };
            let m = crate::quasi_newton::minimize_until(
                |p, g| {
                    let v = acq.value_and_grad(p, g);
                    g.iter_mut().for_each(|gi| *gi = -*gi);
                    if v.is_finite() { -v } else { f64::INFINITY }
                },
                x,
                &lower,
                &upper,
                &cfg,
                reached,
            );
            evaluations += m.evaluations;
            *x = m.x;
        }
        space.snap(x);
        value = acq.value(x);
        evaluations += 1;
        if !has_discrete {
            break;
        }
        let neighbours: Vec<Vec<f64>> =
            space.discrete_neighbours(x).into_iter().filter(|n| within(n, bounds, 0.0)).collect();
        if neighbours.is_empty() {
            break;
        }
        let flat: Vec<f64> = neighbours.concat();
        let nv = acq.values(&flat);
        evaluations += nv.len();
        let (i, v) = nv.iter().enumerate().fold((0, f64::NEG_INFINITY), |b, (i, v)| if *v > b.1 { (i, *v) } else { b });
        if v > value {
            *x = neighbours[i].clone();
            value = v;
        } else {
            break;
        }
    }
    (value, evaluations)
}

/// Whether `x` lies in the box `bounds` (lower, upper), widened by `tol` on every side.
fn within(x: &[f64], bounds: (&[f64], &[f64]), tol: f64) -> bool {
    x.iter().zip(bounds.0.iter().zip(bounds.1)).all(|(v, (l, u))| *v >= l - tol && *v <= u + tol)
}

/// Index and value of the best of `m` row-major candidates, scored in batches of 512.
pub fn maximize_discrete(acq: &dyn Acquisition, candidates: &[f64]) -> Option<(usize, f64)> {
    let d = acq.dim().max(1);
    let mut best: Option<(usize, f64)> = None;
    for (b, chunk) in candidates.chunks(512 * d).enumerate() {
        for (i, v) in acq.values(chunk).into_iter().enumerate() {
            if v.is_finite() && best.is_none_or(|(_, bv)| v > bv) {
                best = Some((b * 512 + i, v));
            }
        }
    }
    best
}

/// The best of a finite set of points (decision coordinates, row-major) as an [`Optimum`]; the first point when
/// none scores finite (every candidate excluded).
pub fn maximize_over(acq: &dyn Acquisition, rows: &[f64]) -> Optimum {
    let d = acq.dim().max(1);
    match maximize_discrete(acq, rows) {
        Some((i, value)) => Optimum { x: rows[i * d..(i + 1) * d].to_vec(), value, evaluations: rows.len() / d },
        None => {
            Optimum { x: rows[..d.min(rows.len())].to_vec(), value: f64::NEG_INFINITY, evaluations: rows.len() / d }
        }
    }
}

/// `maximise(acq)`, over `polytope` (a study's parameter constraints) when there is one: `acq` is scored through
/// [`InPolytope`] and the optimum projected onto the polytope.
pub fn in_polytope(
    polytope: Option<&Polytope>,
    acq: &dyn Acquisition,
    maximise: impl FnOnce(&dyn Acquisition) -> Optimum,
) -> Optimum {
    match polytope {
        None => maximise(acq),
        Some(polytope) => {
            let mut opt = maximise(&InPolytope { inner: acq, polytope });
            polytope.project(&mut opt.x);
            opt
        }
    }
}

/// Weight of the squared distance to the polytope that [`InPolytope`] subtracts, so that the optimiser's point
/// stays near the feasible set it is evaluated on.
const POLYTOPE_PENALTY: f64 = 10.0;

/// `inner` evaluated at the Euclidean projection of the point onto `polytope` (linear parameter constraints),
/// less [`POLYTOPE_PENALTY`] times the squared distance to it: every point the optimiser visits is scored as the
/// feasible point it stands for, and [`Polytope::project`] of the optimum is the suggestion. The gradient is the
/// inner one through the projection's Jacobian ([`Polytope::tangent`]) plus the penalty's.
pub struct InPolytope<'a> {
    /// The acquisition over the encoded space (of the polytope's dimension).
    pub inner: &'a dyn Acquisition,
    /// The feasible set.
    pub polytope: &'a Polytope,
}

impl InPolytope<'_> {
    fn projected(&self, xs: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let mut p = xs.to_vec();
        let d = self.dim().max(1);
        let penalties = p
            .chunks_exact_mut(d)
            .zip(xs.chunks_exact(d))
            .map(|(q, x)| {
                self.polytope.project(q);
                POLYTOPE_PENALTY * q.iter().zip(x).map(|(a, b)| (a - b) * (a - b)).sum::<f64>()
            })
            .collect();
        (p, penalties)
    }
}

impl Acquisition for InPolytope<'_> {
    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn value(&self, x: &[f64]) -> f64 {
        let (p, pen) = self.projected(x);
        self.inner.value(&p) - pen[0]
    }

    fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let (p, pen) = self.projected(x);
        let v = self.inner.value_and_grad(&p, grad);
        self.polytope.tangent(x, &p, grad);
        for ((g, a), b) in grad.iter_mut().zip(x).zip(&p) {
            *g -= 2.0 * POLYTOPE_PENALTY * (a - b);
        }
        v - pen[0]
    }

    fn values(&self, xs: &[f64]) -> Vec<f64> {
        let (p, pen) = self.projected(xs);
        self.inner.values(&p).into_iter().zip(pen).map(|(v, q)| v - q).collect()
    }

    fn best_values(&self, xs: &[f64], keep: usize) -> Vec<f64> {
        let (p, pen) = self.projected(xs);
        self.inner.best_values(&p, keep).into_iter().zip(pen).map(|(v, q)| v - q).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::{Assignments, ParameterSpec};

    /// `Σ w_j x_j`: increases towards the corner of the cube where `w_j > 0`.
    struct Linear(Vec<f64>);

    impl Acquisition for Linear {
        fn dim(&self) -> usize {
            self.0.len()
        }
        fn value(&self, x: &[f64]) -> f64 {
            x.iter().zip(&self.0).map(|(a, w)| a * w).sum()
        }
        fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
            grad.copy_from_slice(&self.0);
            self.value(x)
        }
    }

    /// `−Σ w_j (x_j − c_j)²` with weights 1, 40, 400 (ill-conditioned: several quasi-Newton iterations) and one
    /// peak at `c`, counting gradient evaluations.
    struct Bowl(Vec<f64>, std::cell::Cell<usize>);

    const BOWL_WEIGHTS: [f64; 3] = [1.0, 40.0, 400.0];

    impl Acquisition for Bowl {
        fn dim(&self) -> usize {
            self.0.len()
        }
        fn value(&self, x: &[f64]) -> f64 {
            -x.iter().zip(&self.0).zip(BOWL_WEIGHTS).map(|((a, c), w)| w * (a - c).powi(2)).sum::<f64>()
        }
        fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
            self.1.set(self.1.get() + 1);
            grad.iter_mut()
                .zip(x.iter().zip(&self.0))
                .zip(BOWL_WEIGHTS)
                .for_each(|((g, (a, c)), w)| *g = -2.0 * w * (a - c));
            self.value(x)
        }
    }

    /// The unit cube in three dimensions, the [`Bowl`]'s peak and eight starts spread over the cube.
    fn bowl_case() -> (Space, Vec<f64>, Vec<Vec<f64>>) {
        let s = space(serde_json::json!([
            {"name": "a", "type": "float", "low": 0, "high": 1},
            {"name": "b", "type": "float", "low": 0, "high": 1},
            {"name": "c", "type": "float", "low": 0, "high": 1}
        ]));
        let starts =
            (0..8).map(|k| (0..3).map(|j| ((k * 3 + j) as f64 * 0.37).fract() * 0.9 + 0.05).collect()).collect();
        (s, vec![0.3, 0.6, 0.45], starts)
    }

    /// [`maximize_near`] on the [`Bowl`] around `centre` from `starts` with boxes of `half_width`: the evaluations it
    /// took, after checking that it found the peak.
    fn bowl_evaluations(s: &Space, centre: &[f64], starts: &[Vec<f64>], half_width: f64) -> usize {
        let acq = Bowl(centre.to_vec(), std::cell::Cell::new(0));
        let opt = maximize_near(&acq, s, starts, &[half_width; 3], 100);
        assert!(opt.x.iter().zip(centre).all(|(a, c)| (a - c).abs() < 1e-6), "{:?}", opt.x);
        acq.1.get()
    }

    #[test]
    fn starts_climbing_a_peak_found_before_stop_there() {
        let (s, centre, starts) = bowl_case();
        let alone: Vec<usize> =
            starts.iter().map(|x| bowl_evaluations(&s, &centre, std::slice::from_ref(x), 1.0)).collect();
        // The peak is still found to the same precision, and the later starts, which climb the peak the first one
        // found, take fewer evaluations together than they do alone.
        let after_first = bowl_evaluations(&s, &centre, &starts, 1.0) - alone[0];
        let later: usize = alone[1..].iter().sum();
        assert!(after_first < later, "{after_first} evaluations after the first start, {later} alone");
    }

    #[test]
    fn starts_within_different_boxes_do_not_stop_at_each_others_maxima() {
        let (s, centre, starts) = bowl_case();
        // Boxes of half-width 0.7 all hold the peak, but differ: each start's box is clipped to the cube in its own
        // place. The starts climb the same peak, yet none stops at a maximum found within another box.
        let alone: usize = starts.iter().map(|x| bowl_evaluations(&s, &centre, std::slice::from_ref(x), 0.7)).sum();
        assert_eq!(bowl_evaluations(&s, &centre, &starts, 0.7), alone);
    }

    fn space(parameters: serde_json::Value) -> Space {
        let specs: Vec<ParameterSpec> = serde_json::from_value(parameters).expect("specs parse");
        Space::new(&specs).expect("specs validate")
    }

    #[test]
    fn maximize_near_stops_at_the_box_around_each_start_and_keeps_the_best() {
        let s = space(serde_json::json!([
            {"name": "a", "type": "float", "low": 0, "high": 1},
            {"name": "b", "type": "float", "low": 0, "high": 1}
        ]));
        let acq = Linear(vec![1.0, 2.0]);
        let starts = vec![vec![0.5, 0.5], vec![0.2, 0.9], vec![0.95, 0.1]];
        let opt = maximize_near(&acq, &s, &starts, &[0.1, 0.05], 100);
        // From (0.2, 0.9) the box corner (0.3, 0.95) scores 2.2, more than (0.6, 0.55) and (1.0, 0.15).
        assert!((opt.x[0] - 0.3).abs() < 1e-9 && (opt.x[1] - 0.95).abs() < 1e-9, "{:?}", opt.x);
        assert!((opt.value - 2.2).abs() < 1e-9);
    }

    #[test]
    fn maximize_near_leaves_discrete_values_outside_the_box_alone() {
        let s = space(serde_json::json!([
            {"name": "n", "type": "int", "low": 0, "high": 10},
            {"name": "c", "type": "categorical", "choices": ["p", "q"]}
        ]));
        let d = s.dim();
        let mut start = s.encode(&serde_json::from_value(serde_json::json!({"n": 5, "c": "p"})).unwrap(), "s").unwrap();
        s.snap(&mut start);
        // Increasing in n and larger for "q" than for "p": the unconstrained search moves n up and switches c.
        let acq = Linear((0..d).map(|j| 1.0 + j as f64).collect());
        let narrow = maximize_near(&acq, &s, std::slice::from_ref(&start), &vec![0.01; d], 100);
        assert_eq!(s.decode(&narrow.x), s.decode(&start));
        let wide = maximize_near(&acq, &s, std::slice::from_ref(&start), &vec![1.0; d], 100);
        assert_eq!(
            s.decode(&wide.x),
            serde_json::from_value::<Assignments>(serde_json::json!({"n": 10, "c": "q"})).unwrap()
        );
    }
}
