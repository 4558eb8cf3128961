//! Control sets (seed 000: "Bayesian Optimization for Unknown Cost-Varying Variable Subsets with No-Regret Costs",
//! Hoang, Nguyen, Tran, AAAI 2025; after Tay et al., "Bayesian Optimization with Cost-varying Variable Subsets",
//! NeurIPS 2023): each run the learner sets only the parameters of one control set; every other parameter is drawn
//! by the environment from its known `distribution`; playing a set costs a random amount with unknown mean.
//!
//! The study block is a list of `{name, parameters, cost?}` ([`ControlSetSpec`]); [`ControlSets`] is its validated
//! form with the distributions of the parameters a set can leave uncontrolled. It also owns the fixed base samples
//! of those parameters used for every expectation `E[g([x^i, X^{-i}])]` (sample-average approximation, drawn once per
//! study from the study seed, as the authors' code draws one sample matrix per run), and [`ControlSets::realise`],
//! the environment's side (used by benchmarks and tests to simulate runs).

use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::distribution::Distribution;
use crate::error::FieldError;
use crate::sampling::{Sobol, derive_seed};
use crate::space::{Assignments, Domain, ParameterSpec, Role, Space};

/// One control set as written in a study spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ControlSetSpec {
    /// Unique name; suggestions name the set to play, observations may repeat it.
    #[cfg_attr(feature = "openapi", schema(example = "nutrients"))]
    pub name: String,
    /// Names of the parameters the client sets when playing this set (decision parameters, at least one).
    #[cfg_attr(feature = "openapi", schema(example = json!(["ca", "b"])))]
    pub parameters: Vec<String>,
    /// Known mean cost of one run with this set (optional; `bocvs` learns costs from observations, `ucb-cvs`
    /// requires them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(example = 0.1))]
    pub cost: Option<f64>,
}

/// A validated control set.
#[derive(Debug, Clone)]
pub struct ControlSet {
    /// Its name.
    pub name: String,
    /// Controlled parameters (indices into the space), in spec order.
    pub params: Vec<usize>,
    /// Parameters drawn by the environment when this set is played.
    pub random: Vec<usize>,
    /// Known mean cost.
    pub cost: Option<f64>,
}

/// The validated `control_sets` block.
#[derive(Debug, Clone)]
pub struct ControlSets {
    /// The sets, in spec order.
    pub sets: Vec<ControlSet>,
    /// Per parameter: its distribution when uncontrolled (`None` for parameters in every set).
    pub distributions: Vec<Option<Distribution>>,
}

/// Fixed samples of the uncontrolled parameters of one set, encoded: `m × dims.len()` row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct RandomSamples {
    /// Encoded dimensions the samples fill.
    pub dims: Vec<usize>,
    /// The samples.
    pub values: Vec<f64>,
    /// Number of samples (1 with no dimensions).
    pub m: usize,
}

impl RandomSamples {
    /// Mean of every dimension (the point used for kriging-believer fantasies).
    pub fn means(&self) -> Vec<f64> {
        let k = self.dims.len();
        (0..k).map(|q| (0..self.m).map(|s| self.values[s * k + q]).sum::<f64>() / self.m as f64).collect()
    }
}

impl ControlSets {
    /// Validates `specs` against the space and the parameter specs (for their `distribution`s); errors name
    /// `control_sets[i].field` and `parameters[k].distribution`.
    pub fn new(specs: &[ControlSetSpec], space: &Space, params: &[ParameterSpec]) -> Result<Self, Vec<FieldError>> {
        let mut errors = Vec::new();
        if specs.is_empty() {
            errors.push(FieldError::new("control_sets", "list at least one control set, or leave the block out"));
        }
        let mut sets: Vec<ControlSet> = Vec::with_capacity(specs.len());
        for (i, s) in specs.iter().enumerate() {
            let field = |f: &str| format!("control_sets[{i}].{f}");
            if s.name.trim().is_empty() {
                errors.push(FieldError::new(field("name"), "must not be empty"));
            } else if specs[..i].iter().any(|o| o.name == s.name) {
                errors.push(FieldError::new(field("name"), format!("duplicate control set name '{}'", s.name)));
            }
            if s.parameters.is_empty() {
                errors.push(FieldError::new(field("parameters"), "a control set needs at least one parameter"));
            }
            let mut idx = Vec::with_capacity(s.parameters.len());
            for (j, name) in s.parameters.iter().enumerate() {
                let f = field(&format!("parameters[{j}]"));
                match space.index_of(name) {
                    None => errors.push(FieldError::new(f, format!("unknown parameter '{name}'"))),
                    Some(k) if space.params()[k].role != Role::Decision => {
                        errors.push(FieldError::new(f, format!("'{name}' is a context parameter; it cannot be set")))
                    }
                    Some(k) if idx.contains(&k) => errors.push(FieldError::new(f, format!("'{name}' listed twice"))),
                    Some(k) => idx.push(k),
                }
            }
            if let Some(c) = s.cost
                && !(c.is_finite() && c >= 0.0)
            {
                errors.push(FieldError::new(field("cost"), "must be a finite number ≥ 0"));
            }
            let mut sorted = idx.clone();
            sorted.sort_unstable();
            if !sorted.is_empty()
                && sets.iter().any(|o| {
                    let mut p = o.params.clone();
                    p.sort_unstable();
                    p == sorted
                })
            {
                errors.push(FieldError::new(field("parameters"), "another control set has the same parameters"));
            }
            sets.push(ControlSet { name: s.name.clone(), params: idx, random: Vec::new(), cost: s.cost });
        }
        let decision = space.with_role(Role::Decision);
        let mut distributions = vec![None; space.params().len()];
        for &k in &decision {
            let in_every = sets.iter().all(|s| s.params.contains(&k));
            let field = format!("parameters[{k}].distribution");
            let p = &space.params()[k];
            match (&params[k].distribution, in_every) {
                (None, false) => errors.push(FieldError::new(
                    field,
                    format!(
                        "'{}' is not in every control set, so give the distribution it follows when uncontrolled",
                        p.name
                    ),
                )),
                (Some(spec), _) => {
                    let (low, high) = match p.domain {
                        Domain::Float { low, high, .. } => (low, high),
                        Domain::Int { low, high, .. } => (low as f64, high as f64),
                        Domain::Categorical { .. } => {
                            errors.push(FieldError::new(
                                field,
                                "categorical parameters cannot be random; put them in every control set",
                            ));
                            continue;
                        }
                    };
                    match spec.validate(low, high, &field) {
                        Ok(d) => distributions[k] = Some(d),
                        Err(mut e) => errors.append(&mut e),
                    }
                }
                (None, true) => {}
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        for s in &mut sets {
            s.random = decision.iter().copied().filter(|k| !s.params.contains(k)).collect();
        }
        Ok(Self { sets, distributions })
    }

    /// Number of sets.
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    /// Whether there are no sets (never for a validated block).
    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// Index of the set called `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.sets.iter().position(|s| s.name == name)
    }

    /// A set that leaves nothing random (the "full query" set), if any.
    pub fn full_set(&self) -> Option<usize> {
        self.sets.iter().position(|s| s.random.is_empty())
    }

    /// `m` fixed samples of the parameters set `set` leaves random, encoded (inverse CDF of a scrambled Sobol
    /// sequence seeded by `seed`; every set sees the same draws of a given parameter).
    pub fn samples(&self, space: &Space, set: usize, m: usize, seed: u64) -> RandomSamples {
        let random = &self.sets[set].random;
        let dims = space.dims_of_params(random);
        if random.is_empty() {
            return RandomSamples { dims, values: Vec::new(), m: 1 };
        }
        let all: Vec<usize> = (0..self.distributions.len()).filter(|&k| self.distributions[k].is_some()).collect();
        let uniforms = Sobol::scrambled(all.len(), derive_seed(seed, 0xC0_5E75)).take(m);
        let mut values = Vec::with_capacity(m * random.len());
        for row in uniforms.chunks_exact(all.len()) {
            for &k in random {
                let q = all.iter().position(|&a| a == k).unwrap_or(0);
                values.extend(self.encoded_draw(space, k, row[q]));
            }
        }
        RandomSamples { dims, values, m }
    }

    /// Encoded value of parameter `k` at probability `u` of its distribution.
    fn encoded_draw(&self, space: &Space, k: usize, u: f64) -> Vec<f64> {
        let v = self.value_at(space, k, u);
        space.encode_param(k, &v).unwrap_or_else(|_| vec![0.5])
    }

    /// Value (in the parameter's units) of parameter `k` at probability `u` of its distribution.
    fn value_at(&self, space: &Space, k: usize, u: f64) -> Value {
        let v = self.distributions[k].as_ref().map_or(0.5, |d| d.quantile(u));
        match space.params()[k].domain {
            Domain::Int { low, high, .. } => Value::from((v.round() as i64).clamp(low, high)),
            _ => Value::from(v),
        }
    }

    /// The environment's side of a run: `controlled` (the suggestion's assignments) plus a draw of every
    /// parameter set `set` leaves random.
    pub fn realise(&self, space: &Space, set: usize, controlled: &Assignments, rng: &mut impl Rng) -> Assignments {
        let mut out = controlled.clone();
        for &k in &self.sets[set].random {
            let u: f64 = rng.random();
            out.insert(space.params()[k].name.clone(), self.value_at(space, k, u));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params() -> Vec<ParameterSpec> {
        serde_json::from_value(json!([
            {"name": "a", "type": "float", "low": 0, "high": 1, "distribution": {"type": "truncated_normal", "mean": 0.5, "variance": 0.02}},
            {"name": "b", "type": "int", "low": 1, "high": 9, "distribution": {"type": "uniform"}},
            {"name": "c", "type": "float", "low": 1, "high": 100, "scale": "log"}
        ]))
        .unwrap()
    }

    fn sets(v: serde_json::Value) -> Vec<ControlSetSpec> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn valid_block_records_random_parameters_and_the_full_set() {
        let p = params();
        let space = Space::new(&p).unwrap();
        let cs = ControlSets::new(
            &sets(json!([{"name": "c", "parameters": ["c"], "cost": 0.1}, {"name": "all", "parameters": ["a", "b", "c"]}])),
            &space,
            &p,
        )
        .unwrap();
        assert_eq!(cs.sets[0].random, vec![0, 1]);
        assert_eq!(cs.full_set(), Some(1));
        let s = cs.samples(&space, 0, 64, 3);
        assert_eq!((s.m, s.dims.clone(), s.values.len()), (64, vec![0, 1], 128));
        assert!(s.values.iter().all(|v| (0.0..=1.0).contains(v)));
        assert!((s.means()[0] - 0.5).abs() < 0.02, "{:?}", s.means());
        assert_eq!(cs.samples(&space, 0, 64, 3), s, "samples are fixed by the seed");
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let a = cs.realise(&space, 0, &json!({"c": 10.0}).as_object().unwrap().clone(), &mut rng);
        assert!(space.encode(&a, "a").is_ok(), "{a:?}");
    }

    #[test]
    fn invalid_blocks_name_the_field() {
        let p = params();
        let space = Space::new(&p).unwrap();
        let cases = [
            (json!([]), "control_sets"),
            (json!([{"name": "x", "parameters": []}]), "control_sets[0].parameters"),
            (json!([{"name": "x", "parameters": ["zz"]}]), "control_sets[0].parameters[0]"),
            (json!([{"name": "x", "parameters": ["a", "a"]}]), "control_sets[0].parameters[1]"),
            (json!([{"name": "x", "parameters": ["a"]}, {"name": "x", "parameters": ["b"]}]), "control_sets[1].name"),
            (
                json!([{"name": "x", "parameters": ["a", "b"]}, {"name": "y", "parameters": ["b", "a"]}]),
                "control_sets[1].parameters",
            ),
            (json!([{"name": "x", "parameters": ["a"], "cost": -1}]), "control_sets[0].cost"),
            (json!([{"name": "x", "parameters": ["a", "b"]}]), "parameters[2].distribution"),
        ];
        for (v, field) in cases {
            let e = ControlSets::new(&sets(v.clone()), &space, &p).unwrap_err();
            assert!(e.iter().any(|e| e.field == field), "{v}: {e:?}");
        }
    }

    use rand::SeedableRng;
}
