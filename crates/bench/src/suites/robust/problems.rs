//! The problems of `bench robust` and their random instances.
//!
//! A problem is a base function ([`Base`]), a dimension and the type of each parameter. An *instance* (problem,
//! seed) draws an optimum location `o` in `[0.1, 0.9]^d` of the unit cube (on the grid of discrete parameters) and a
//! uniformly random rotation `Q`, and evaluates `f(u) = base(x* + W·Q·(u − o))` with `W` the base function's box
//! widths: the optimum is at `o`, never at the centre, a corner or a symmetric point by construction, and the
//! function is not separable along the parameters. Parameters map to `u` as follows: `float` linearly (or in `ln`
//! for `scale: log`), `int` linearly on its grid, `categorical` to equally spaced levels in an order drawn per
//! instance (so the order of `choices` says nothing).
//!
//! Noise variants add `N(0, s²)` with `s` a fraction (1 % or 10 %) of the instance's range on a 1024-point Sobol
//! design, the range taken between its 5th and 95th percentiles (the maxima of ill-conditioned functions are orders of
//! magnitude above everything an optimiser sees). The draw of evaluation `i` is a function of (instance, variant,
//! i) alone, so every optimiser sees the same noise sequence.

use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, StandardNormal};
use serde_json::{Value, json};

use super::functions::Base;
use engine::sampling::{Sobol, derive_seed};

/// How one parameter is typed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// A float over the base function's box.
    Float,
    /// A float over `[1e-3, 10]` on a log scale.
    Log,
    /// An integer in `0..=levels − 1`.
    Int(usize),
    /// A categorical with this many choices.
    Categorical(usize),
}

/// One problem of the suite.
#[derive(Debug, Clone)]
pub struct ProblemDef {
    /// Name, e.g. `levy4_mixed`.
    pub name: &'static str,
    /// Shape family (for the table).
    pub family: &'static str,
    /// Base function.
    pub base: Base,
    /// Parameter types (their number is the dimension).
    pub kinds: Vec<Kind>,
}

fn floats(n: usize) -> Vec<Kind> {
    vec![Kind::Float; n]
}

fn with(mut kinds: Vec<Kind>, at: &[(usize, Kind)]) -> Vec<Kind> {
    for &(i, k) in at {
        kinds[i] = k;
    }
    kinds
}

/// The suite's problems: 26 problems in 2–20 dimensions over smooth, multimodal, ill-conditioned, plateau and
/// needle shapes, four with integer or categorical parameters and three with log-scaled ones.
pub fn catalogue() -> Vec<ProblemDef> {
    use Base::*;
    use Kind::*;
    let p = |name, family, base, kinds| ProblemDef { name, family, base, kinds };
    vec![
        p("branin", "multimodal", Branin, floats(2)),
        p("six_hump_camel_log", "multimodal", SixHumpCamel, with(floats(2), &[(1, Log)])),
        p("goldstein_price", "multimodal", GoldsteinPrice, floats(2)),
        p("easom", "needle", Easom, floats(2)),
        p("hartmann3", "smooth", Hartmann3, floats(3)),
        p("rastrigin3", "multimodal", Rastrigin, floats(3)),
        p("levy4_mixed", "multimodal", Levy, with(floats(4), &[(2, Int(21)), (3, Categorical(5))])),
        p("rosenbrock4_log", "ill-conditioned", Rosenbrock, with(floats(4), &[(0, Log), (1, Log)])),
        p("sharp_ridge4_log", "ill-conditioned", SharpRidge, with(floats(4), &[(0, Log)])),
        p("step_ellipsoid4", "plateau", StepEllipsoid, floats(4)),
        p("schaffer4", "multimodal", SchafferF7, floats(4)),
        p("shekel4", "needle", Shekel, floats(4)),
        p("ackley5", "multimodal", Ackley, floats(5)),
        p("griewank5", "multimodal", Griewank, floats(5)),
        p("bent_cigar5", "ill-conditioned", BentCigar, floats(5)),
        p("hartmann6", "smooth", Hartmann6, floats(6)),
        p("hartmann6_int", "smooth", Hartmann6, with(floats(6), &[(3, Int(11)), (4, Int(11)), (5, Int(11))])),
        p("styblinski_tang6_int", "multimodal", StyblinskiTang, with(floats(6), &[(4, Int(11)), (5, Int(11))])),
        p("discus6", "ill-conditioned", Discus, floats(6)),
        p("different_powers6", "smooth", DifferentPowers, floats(6)),
        p("ellipsoid8", "ill-conditioned", Ellipsoid, floats(8)),
        p("powell8_cat", "smooth", Powell, with(floats(8), &[(6, Categorical(4)), (7, Categorical(4))])),
        p("dixon_price10", "ill-conditioned", DixonPrice, floats(10)),
        p("zakharov12", "smooth", Zakharov, floats(12)),
        p("ackley16", "multimodal", Ackley, floats(16)),
        p("levy20", "multimodal", Levy, floats(20)),
    ]
}

/// Hold-out problems (`bench robust --holdout`): base functions and dimensions the table does not have, in 3–16
/// dimensions, to check a change tuned on [`catalogue`] on problems it was not tuned on (a gate on the dimension, say,
/// found on the table's four problems of 10–20 dimensions). Not in the table's criteria, and no peer runs them.
pub fn holdout() -> Vec<ProblemDef> {
    use Base::*;
    let p = |name, family, base, kinds| ProblemDef { name, family, base, kinds };
    vec![
        p("rosenbrock3", "ill-conditioned", Rosenbrock, floats(3)),
        p("styblinski_tang4", "multimodal", StyblinskiTang, floats(4)),
        p("discus4", "ill-conditioned", Discus, floats(4)),
        p("powell4", "smooth", Powell, floats(4)),
        p("rastrigin5", "multimodal", Rastrigin, floats(5)),
        p("zakharov6", "smooth", Zakharov, floats(6)),
        p("levy6", "multimodal", Levy, floats(6)),
        p("sharp_ridge8", "ill-conditioned", SharpRidge, floats(8)),
        p("rosenbrock10", "ill-conditioned", Rosenbrock, floats(10)),
        p("rastrigin10", "multimodal", Rastrigin, floats(10)),
        p("different_powers10", "smooth", DifferentPowers, floats(10)),
        p("styblinski_tang12", "multimodal", StyblinskiTang, floats(12)),
        p("griewank12", "multimodal", Griewank, floats(12)),
        p("bent_cigar12", "ill-conditioned", BentCigar, floats(12)),
        p("powell16", "smooth", Powell, floats(16)),
        p("ellipsoid16", "ill-conditioned", Ellipsoid, floats(16)),
    ]
}

/// The table's problems, then the hold-out ones.
pub fn all_problems() -> Vec<ProblemDef> {
    catalogue().into_iter().chain(holdout()).collect()
}

/// The problem called `name`, of the table or the hold-out set.
pub fn find(name: &str) -> Option<ProblemDef> {
    all_problems().into_iter().find(|p| p.name == name)
}

/// The noise variants: name and noise standard deviation as a fraction of the instance's range.
pub const VARIANTS: &[(&str, f64)] = &[("noiseless", 0.0), ("noise1", 0.01), ("noise10", 0.1)];

/// Seeds of the full protocol.
pub const SEEDS: usize = 10;

impl ProblemDef {
    /// Number of parameters.
    pub fn dim(&self) -> usize {
        self.kinds.len()
    }

    /// Evaluations per run: `min(20·d, 200)`.
    pub fn budget(&self) -> usize {
        (20 * self.dim()).min(200)
    }

    /// The parameters as a study spec lists them (`x0`, `x1`, …).
    pub fn parameters(&self) -> Vec<Value> {
        let widths = self.base.widths(self.dim());
        let xstar = self.base.minimiser(self.dim());
        self.kinds
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let name = format!("x{i}");
                match k {
                    // The base box, centred on the minimiser's rounded position: natural units for people.
                    Kind::Float => {
                        let (low, width) = float_box(xstar[i], widths[i]);
                        json!({"name": name, "type": "float", "low": low, "high": low + width})
                    }
                    Kind::Log => json!({"name": name, "type": "float", "low": 1e-3, "high": 10.0, "scale": "log"}),
                    Kind::Int(l) => json!({"name": name, "type": "int", "low": 0, "high": l - 1}),
                    Kind::Categorical(m) => {
                        json!({"name": name, "type": "categorical", "choices": (0..*m).map(|c| format!("c{c}")).collect::<Vec<_>>()})
                    }
                }
            })
            .collect()
    }

    /// The instance of `seed`.
    pub fn instance(&self, seed: u64) -> Instance {
        let d = self.dim();
        let name_hash =
            self.name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
        let mut rng = StdRng::seed_from_u64(derive_seed(name_hash, seed));
        let mut levels = Vec::with_capacity(d);
        let mut o = Vec::with_capacity(d);
        for k in &self.kinds {
            match *k {
                Kind::Float | Kind::Log => {
                    levels.push(Vec::new());
                    o.push(rng.random_range(0.1..0.9));
                }
                Kind::Int(l) => {
                    let grid: Vec<f64> = (0..l).map(|i| i as f64 / (l - 1) as f64).collect();
                    let inner: Vec<f64> = grid.iter().copied().filter(|g| (0.1..=0.9).contains(g)).collect();
                    o.push(inner[rng.random_range(0..inner.len())]);
                    levels.push(grid);
                }
                Kind::Categorical(m) => {
                    // Choice c sits at level perm[c] / (m − 1).
                    let mut perm: Vec<usize> = (0..m).collect();
                    for i in (1..m).rev() {
                        perm.swap(i, rng.random_range(0..=i));
                    }
                    let lv: Vec<f64> = perm.iter().map(|&p| p as f64 / (m - 1) as f64).collect();
                    o.push(lv[rng.random_range(0..m)]);
                    levels.push(lv);
                }
            }
        }
        let rotation = random_rotation(d, &mut rng);
        let mut inst = Instance {
            base: self.base,
            kinds: self.kinds.clone(),
            levels,
            o,
            rotation,
            xstar: self.base.minimiser(d),
            widths: self.base.widths(d),
            optimum: 0.0,
            range: 0.0,
            seed,
        };
        inst.optimum = inst.eval_unit(&inst.o);
        inst.range = inst.design_range();
        inst
    }
}

/// `(low, width)` of a float parameter: the base box of width `width` centred on the minimiser's coordinate,
/// its lower end rounded to an integer (natural units for people).
fn float_box(xstar: f64, width: f64) -> (f64, f64) {
    ((xstar - width / 2.0).round(), width)
}

/// A uniformly random rotation (Gram–Schmidt on a Gaussian matrix; the QR of a Gaussian matrix with the signs fixed
/// is Haar-distributed, Mezzadri 2007).
fn random_rotation(d: usize, rng: &mut StdRng) -> Vec<Vec<f64>> {
    let mut q: Vec<Vec<f64>> = Vec::with_capacity(d);
    while q.len() < d {
        let mut v: Vec<f64> = (0..d).map(|_| StandardNormal.sample(rng)).collect();
        for r in &q {
            let p: f64 = r.iter().zip(&v).map(|(a, b)| a * b).sum();
            v.iter_mut().zip(r).for_each(|(x, a)| *x -= p * a);
        }
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm > 1e-8 {
            q.push(v.into_iter().map(|x| x / norm).collect());
        }
    }
    q
}

/// One (problem, seed) instance.
#[derive(Debug, Clone)]
pub struct Instance {
    base: Base,
    kinds: Vec<Kind>,
    /// Unit-cube levels of every discrete parameter (by choice index for categoricals).
    levels: Vec<Vec<f64>>,
    /// The optimum's location in the unit cube.
    pub o: Vec<f64>,
    rotation: Vec<Vec<f64>>,
    xstar: Vec<f64>,
    widths: Vec<f64>,
    /// The minimum value (attained at `o`).
    pub optimum: f64,
    /// The 5th–95th percentile range of the values on a 1024-point Sobol design (noise scale).
    pub range: f64,
    seed: u64,
}

impl Instance {
    /// The function at a unit-cube point.
    pub fn eval_unit(&self, u: &[f64]) -> f64 {
        let z: Vec<f64> = self
            .rotation
            .iter()
            .enumerate()
            .map(|(i, row)| {
                let r: f64 = row.iter().zip(u.iter().zip(&self.o)).map(|(q, (a, b))| q * (a - b)).sum();
                self.xstar[i] + self.widths[i] * r
            })
            .collect();
        self.base.eval(&z)
    }

    /// The unit-cube point of assignments `x0…` (numbers, or choice names for categoricals).
    pub fn unit_of(&self, a: &serde_json::Map<String, Value>) -> Result<Vec<f64>, String> {
        self.kinds
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let key = format!("x{i}");
                let v = a.get(&key).ok_or_else(|| format!("missing assignments.{key}"))?;
                let num =
                    || v.as_f64().filter(|x| x.is_finite()).ok_or_else(|| format!("assignments.{key} is not a number"));
                Ok(match *k {
                    Kind::Float => {
                        let (lo, w) = float_box(self.xstar[i], self.widths[i]);
                        ((num()? - lo) / w).clamp(0.0, 1.0)
                    }
                    Kind::Log => ((num()?.max(1e-3).ln() - 1e-3f64.ln()) / (10f64.ln() - 1e-3f64.ln())).clamp(0.0, 1.0),
                    Kind::Int(l) => {
                        let j = (num()?.round().clamp(0.0, (l - 1) as f64)) as usize;
                        self.levels[i][j]
                    }
                    Kind::Categorical(_) => {
                        let s = v.as_str().ok_or_else(|| format!("assignments.{key} is not a string"))?;
                        let c: usize = s
                            .strip_prefix('c')
                            .and_then(|c| c.parse().ok())
                            .filter(|c| *c < self.levels[i].len())
                            .ok_or_else(|| format!("assignments.{key}: unknown choice {s:?}"))?;
                        self.levels[i][c]
                    }
                })
            })
            .collect()
    }

    /// Moves a unit-cube point onto the grids of the discrete parameters.
    fn snap(&self, u: &mut [f64]) {
        for (i, v) in u.iter_mut().enumerate() {
            if !self.levels[i].is_empty() {
                *v = *self.levels[i].iter().min_by(|a, b| (*a - *v).abs().total_cmp(&(*b - *v).abs())).unwrap_or(v);
            }
        }
    }

    fn design_range(&self) -> f64 {
        let d = self.kinds.len();
        let mut pts = Sobol::scrambled(d, derive_seed(self.seed, 0x5ca1e)).take(1024);
        let mut values: Vec<f64> = pts
            .chunks_exact_mut(d)
            .map(|u| {
                self.snap(u);
                self.eval_unit(u)
            })
            .collect();
        values.sort_by(f64::total_cmp);
        crate::stats::quantile(&values, 0.95) - crate::stats::quantile(&values, 0.05)
    }

    /// Noise standard deviation of a variant with relative level `level`.
    pub fn noise_sd(&self, level: f64) -> f64 {
        level * self.range
    }

    /// The observed value of evaluation `index` at `u` with relative noise `level` (noiseless for `index < 0` or
    /// level 0): the same draw for every optimiser.
    pub fn observe(&self, u: &[f64], level: f64, index: i64) -> f64 {
        let f = self.eval_unit(u);
        if level == 0.0 || index < 0 {
            return f;
        }
        let mut rng = StdRng::seed_from_u64(derive_seed(derive_seed(self.seed, level.to_bits()), index as u64));
        let e: f64 = StandardNormal.sample(&mut rng);
        f + self.noise_sd(level) * e
    }

    /// Regret of a true value: `f − f*`, never negative.
    pub fn regret(&self, f: f64) -> f64 {
        (f - self.optimum).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optimum_sits_at_o_on_the_grids_and_is_the_minimum_of_a_random_sample() {
        for p in all_problems() {
            for seed in 0..3 {
                let inst = p.instance(seed);
                let mut o = inst.o.clone();
                inst.snap(&mut o);
                assert_eq!(o, inst.o, "{}: optimum off the grid", p.name);
                assert!(inst.o.iter().all(|v| (0.0..=1.0).contains(v)));
                let mut rng = StdRng::seed_from_u64(seed);
                for _ in 0..2000 {
                    let mut u: Vec<f64> = (0..p.dim()).map(|_| rng.random_range(0.0..1.0)).collect();
                    inst.snap(&mut u);
                    assert!(inst.eval_unit(&u) >= inst.optimum - 1e-9, "{} seed {seed} below its optimum", p.name);
                }
                assert!(inst.range.is_finite() && inst.range > 0.0, "{}: range {}", p.name, inst.range);
            }
        }
    }

    #[test]
    fn assignments_round_trip_to_the_unit_point() {
        for p in all_problems() {
            let inst = p.instance(7);
            let params = p.parameters();
            // The optimum, written as a client would send it.
            let mut a = serde_json::Map::new();
            for (i, (spec, k)) in params.iter().zip(&p.kinds).enumerate() {
                let u = inst.o[i];
                let v = match *k {
                    Kind::Float => json!(
                        spec["low"].as_f64().unwrap()
                            + u * (spec["high"].as_f64().unwrap() - spec["low"].as_f64().unwrap())
                    ),
                    Kind::Log => json!((1e-3f64.ln() + u * (10f64.ln() - 1e-3f64.ln())).exp()),
                    Kind::Int(l) => json!((u * (l - 1) as f64).round() as i64),
                    Kind::Categorical(_) => {
                        let c = inst.levels[i].iter().position(|lv| (lv - u).abs() < 1e-12).unwrap();
                        json!(format!("c{c}"))
                    }
                };
                a.insert(format!("x{i}"), v);
            }
            let u = inst.unit_of(&a).unwrap();
            let regret = inst.regret(inst.eval_unit(&u));
            assert!(regret < 1e-6 * inst.range.max(1.0), "{}: regret {regret} at the optimum", p.name);
        }
    }

    #[test]
    fn hold_out_problems_are_not_in_the_table() {
        let names: Vec<&str> = catalogue().iter().map(|p| p.name).collect();
        for p in holdout() {
            assert!(!names.contains(&p.name), "{} is in the table", p.name);
            assert_eq!(find(p.name).map(|q| q.dim()), Some(p.dim()));
        }
    }

    #[test]
    fn noise_is_a_function_of_instance_level_and_index() {
        let p = &catalogue()[0];
        let inst = p.instance(3);
        let u = [0.3, 0.4];
        assert_eq!(inst.observe(&u, 0.1, 5), p.instance(3).observe(&u, 0.1, 5));
        assert_ne!(inst.observe(&u, 0.1, 5), inst.observe(&u, 0.1, 6));
        assert_eq!(inst.observe(&u, 0.1, -1), inst.eval_unit(&u));
        let draws: Vec<f64> = (0..4000).map(|i| inst.observe(&u, 0.1, i) - inst.eval_unit(&u)).collect();
        let sd = (draws.iter().map(|e| e * e).sum::<f64>() / draws.len() as f64).sqrt();
        assert!((sd / inst.noise_sd(0.1) - 1.0).abs() < 0.05, "noise sd {sd} vs {}", inst.noise_sd(0.1));
    }
}
