//! Search spaces: typed parameters, encoded to the unit cube and decoded back.
//!
//! Encoding (one row of the GP's input per observation):
//! - `float`: one dimension, `(v − low)/(high − low)`, or the same in `ln v` for `scale: log`;
//! - `int`: one dimension; the range `[low − ½, high + ½]` (in `ln` for log scale) is mapped to `[0, 1]` so every
//!   integer owns an equal-width cell; decoding rounds, [`Space::snap`] moves a point to its cell's centre;
//! - `categorical`: one-hot over its `k` choices (k dimensions). The acquisition optimiser treats these dimensions
//!   as discrete: it keeps them one-hot and enumerates choices in a local search (see `optim`), so the GP only
//!   ever sees valid one-hot vectors.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::FieldError;

/// Assignments of values to parameters, by parameter name (JSON numbers or strings).
pub type Assignments = Map<String, Value>;

/// The type of a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum ParameterType {
    /// A real number in `[low, high]`.
    Float,
    /// An integer in `[low, high]`.
    Int,
    /// One of `choices`.
    Categorical,
}

/// How a numeric parameter is mapped to the unit interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Scale {
    /// Uniform in the value.
    #[default]
    Linear,
    /// Uniform in the logarithm of the value (requires `low > 0`).
    Log,
}

/// What a parameter is to the experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Role {
    /// Set by the client as suggested (the default).
    #[default]
    Decision,
    /// Set by the environment and observed after the run (never in a suggestion, required in observations).
    Context,
}

/// A parameter as written in a study spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ParameterSpec {
    /// Unique name of the parameter; the key in assignments.
    #[cfg_attr(feature = "openapi", schema(example = "temperature"))]
    pub name: String,
    /// `float`, `int` or `categorical`.
    #[serde(rename = "type")]
    pub kind: ParameterType,
    /// Lower bound (inclusive) of a `float` or `int`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(example = 20.0))]
    pub low: Option<f64>,
    /// Upper bound (inclusive) of a `float` or `int`; must exceed `low`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(example = 80.0))]
    pub high: Option<f64>,
    /// `linear` (default) or `log` for `float` and `int`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<Scale>,
    /// The choices of a `categorical`, unique.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choices: Option<Vec<String>>,
    /// `decision` (default) or `context`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// Distribution the parameter follows when a control set leaves it uncontrolled (studies with `control_sets`;
    /// required for every parameter that is not in every control set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution: Option<crate::distribution::DistributionSpec>,
}

/// A validated parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    /// Name of the parameter.
    pub name: String,
    /// Its domain.
    pub domain: Domain,
    /// Its role.
    pub role: Role,
    /// First encoded dimension.
    pub offset: usize,
}

/// The domain of a validated parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum Domain {
    /// Real interval.
    Float {
        /// Lower bound.
        low: f64,
        /// Upper bound.
        high: f64,
        /// Log scale.
        log: bool,
    },
    /// Integer interval.
    Int {
        /// Lower bound.
        low: i64,
        /// Upper bound.
        high: i64,
        /// Log scale.
        log: bool,
    },
    /// Finite set of labels.
    Categorical {
        /// The choices.
        choices: Vec<String>,
    },
}

impl Domain {
    /// Number of encoded dimensions.
    pub fn width(&self) -> usize {
        match self {
            Domain::Categorical { choices } => choices.len(),
            _ => 1,
        }
    }
}

/// How the acquisition optimiser must treat one encoded dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DimKind {
    /// Continuous in `[0, 1]`.
    Continuous,
    /// Integer cells of parameter `param`.
    Integer {
        /// Index of the parameter.
        param: usize,
    },
    /// One coordinate of the one-hot block of categorical parameter `param`.
    OneHot {
        /// Index of the parameter.
        param: usize,
    },
}

/// A validated search space.
#[derive(Debug, Clone, PartialEq)]
pub struct Space {
    params: Vec<Parameter>,
    dim: usize,
}

impl Space {
    /// Validates `specs`; errors name the field as `parameters[i].field`.
    pub fn new(specs: &[ParameterSpec]) -> Result<Self, Vec<FieldError>> {
        let mut errors = Vec::new();
        let mut params = Vec::with_capacity(specs.len());
        let mut offset = 0;
        if specs.is_empty() {
            errors.push(FieldError::new("parameters", "a study needs at least one parameter"));
        }
        for (i, spec) in specs.iter().enumerate() {
            let field = |f: &str| format!("parameters[{i}].{f}");
            if spec.name.trim().is_empty() {
                errors.push(FieldError::new(field("name"), "must not be empty"));
            } else if specs[..i].iter().any(|s| s.name == spec.name) {
                errors.push(FieldError::new(field("name"), format!("duplicate parameter name '{}'", spec.name)));
            }
            match validate_domain(spec, &field) {
                Ok(domain) => {
                    let width = domain.width();
                    params.push(Parameter {
                        name: spec.name.clone(),
                        domain,
                        role: spec.role.unwrap_or_default(),
                        offset,
                    });
                    offset += width;
                }
                Err(mut e) => errors.append(&mut e),
            }
        }
        if errors.is_empty() { Ok(Self { params, dim: offset }) } else { Err(errors) }
    }

    /// Number of encoded dimensions.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The validated parameters, in spec order.
    pub fn params(&self) -> &[Parameter] {
        &self.params
    }

    /// Index of the parameter called `name`.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.params.iter().position(|p| p.name == name)
    }

    /// Encoded dimensions of parameter `i`.
    pub fn dims_of(&self, i: usize) -> std::ops::Range<usize> {
        let p = &self.params[i];
        p.offset..p.offset + p.domain.width()
    }

    /// The kind of every encoded dimension.
    pub fn dim_kinds(&self) -> Vec<DimKind> {
        let mut kinds = Vec::with_capacity(self.dim);
        for (i, p) in self.params.iter().enumerate() {
            match &p.domain {
                Domain::Float { .. } => kinds.push(DimKind::Continuous),
                Domain::Int { .. } => kinds.push(DimKind::Integer { param: i }),
                Domain::Categorical { choices } => kinds.extend(choices.iter().map(|_| DimKind::OneHot { param: i })),
            }
        }
        kinds
    }

    /// True when every dimension is continuous (no int or categorical parameter).
    pub fn is_continuous(&self) -> bool {
        self.params.iter().all(|p| matches!(p.domain, Domain::Float { .. }))
    }

    /// Encodes every parameter of `values`; unknown and missing names, wrong types and out-of-range values are
    /// errors named `{prefix}.{name}`.
    pub fn encode(&self, values: &Assignments, prefix: &str) -> Result<Vec<f64>, Vec<FieldError>> {
        let all: Vec<usize> = (0..self.params.len()).collect();
        self.encode_some(values, &all, prefix)
    }

    /// Encodes exactly the parameters `which` from `values` (others must be absent); dimensions of the remaining
    /// parameters are left at 0.5 (one-hot: first choice).
    pub fn encode_some(
        &self,
        values: &Assignments,
        which: &[usize],
        prefix: &str,
    ) -> Result<Vec<f64>, Vec<FieldError>> {
        let mut errors = Vec::new();
        let mut x = self.centre();
        for name in values.keys() {
            match self.index_of(name) {
                None => errors.push(FieldError::new(format!("{prefix}.{name}"), "unknown parameter")),
                Some(i) if !which.contains(&i) => {
                    errors.push(FieldError::new(format!("{prefix}.{name}"), "this parameter must not be given here"))
                }
                Some(_) => {}
            }
        }
        for &i in which {
            let p = &self.params[i];
            let field = format!("{prefix}.{}", p.name);
            match values.get(&p.name) {
                None => errors.push(FieldError::new(field, "missing value")),
                Some(v) => match encode_value(&p.domain, v) {
                    Ok(enc) => x[self.dims_of(i)].copy_from_slice(&enc),
                    Err(message) => errors.push(FieldError::new(field, message)),
                },
            }
        }
        if errors.is_empty() { Ok(x) } else { Err(errors) }
    }

    /// Encodes one value of parameter `i` (its encoded dimensions).
    pub fn encode_param(&self, i: usize, v: &Value) -> Result<Vec<f64>, String> {
        encode_value(&self.params[i].domain, v)
    }

    /// Decodes the parameters `which` of an encoded point.
    pub fn decode_some(&self, x: &[f64], which: &[usize]) -> Assignments {
        which
            .iter()
            .map(|&i| (self.params[i].name.clone(), decode_value(&self.params[i].domain, &x[self.dims_of(i)])))
            .collect()
    }

    /// Decodes every parameter of an encoded point.
    pub fn decode(&self, x: &[f64]) -> Assignments {
        let all: Vec<usize> = (0..self.params.len()).collect();
        self.decode_some(x, &all)
    }

    /// Moves `x` to the nearest representable point: clamps to `[0,1]`, integers to their cell centre, one-hot
    /// blocks to the arg-max choice.
    ///
    /// The same arithmetic as decoding and encoding again, without building the JSON value (the acquisition
    /// optimiser snaps every raw sample).
    pub fn snap(&self, x: &mut [f64]) {
        for (i, p) in self.params.iter().enumerate() {
            let r = self.dims_of(i);
            match p.domain {
                Domain::Float { low, high, log } => {
                    let v = float_of_unit(low, high, log, x[r.start]);
                    if v.is_finite() {
                        x[r.start] = unit_of_float(low, high, log, v);
                    }
                }
                Domain::Int { low, high, log } => {
                    x[r.start] = unit_of_int(low, high, log, int_of_unit(low, high, log, x[r.start]))
                }
                Domain::Categorical { .. } => {
                    let j = arg_max(&x[r.clone()]);
                    x[r].iter_mut().enumerate().for_each(|(q, v)| *v = f64::from(u8::from(q == j)));
                }
            }
        }
    }

    /// The centre of the cube (one-hot blocks on their first choice), snapped.
    pub fn centre(&self) -> Vec<f64> {
        let mut x = vec![0.5; self.dim];
        self.snap(&mut x);
        x
    }

    /// Points that differ from `x` in one discrete parameter: each other choice of a categorical, the
    /// neighbouring integers of an int. Continuous parameters are left alone.
    pub fn discrete_neighbours(&self, x: &[f64]) -> Vec<Vec<f64>> {
        let mut out = Vec::new();
        for (i, p) in self.params.iter().enumerate() {
            let r = self.dims_of(i);
            match &p.domain {
                Domain::Float { .. } => {}
                Domain::Int { low, high, .. } => {
                    let k = decode_value(&p.domain, &x[r.clone()]).as_i64().unwrap_or(*low);
                    for v in [k - 1, k + 1] {
                        if (*low..=*high).contains(&v)
                            && let Ok(enc) = encode_value(&p.domain, &Value::from(v))
                        {
                            let mut y = x.to_vec();
                            y[r.clone()].copy_from_slice(&enc);
                            out.push(y);
                        }
                    }
                }
                Domain::Categorical { choices } => {
                    for j in 0..choices.len() {
                        if x[r.start + j] < 0.5 {
                            let mut y = x.to_vec();
                            y[r.clone()].iter_mut().enumerate().for_each(|(q, v)| *v = f64::from(u8::from(q == j)));
                            out.push(y);
                        }
                    }
                }
            }
        }
        out
    }

    /// The space of the parameters `which` alone (in that order), e.g. the decision part of a space with contexts.
    pub fn subspace(&self, which: &[usize]) -> Space {
        let mut offset = 0;
        let params = which
            .iter()
            .map(|&i| {
                let mut p = self.params[i].clone();
                p.offset = offset;
                offset += p.domain.width();
                p
            })
            .collect();
        Space { params, dim: offset }
    }

    /// Encoded dimensions (in this space) of the parameters `which`, concatenated in order.
    pub fn dims_of_params(&self, which: &[usize]) -> Vec<usize> {
        which.iter().flat_map(|&i| self.dims_of(i)).collect()
    }

    /// Indices of parameters with the given role.
    pub fn with_role(&self, role: Role) -> Vec<usize> {
        (0..self.params.len()).filter(|&i| self.params[i].role == role).collect()
    }
}

fn validate_domain(spec: &ParameterSpec, field: &dyn Fn(&str) -> String) -> Result<Domain, Vec<FieldError>> {
    let mut errors = Vec::new();
    let forbid = |errors: &mut Vec<FieldError>, present: bool, name: &str, kind: &str| {
        if present {
            errors.push(FieldError::new(field(name), format!("not allowed for a {kind} parameter")));
        }
    };
    let domain = match spec.kind {
        ParameterType::Categorical => {
            forbid(&mut errors, spec.low.is_some(), "low", "categorical");
            forbid(&mut errors, spec.high.is_some(), "high", "categorical");
            forbid(&mut errors, spec.scale.is_some(), "scale", "categorical");
            let choices = spec.choices.clone().unwrap_or_default();
            if choices.is_empty() {
                errors.push(FieldError::new(field("choices"), "a categorical parameter needs at least one choice"));
            }
            for (j, c) in choices.iter().enumerate() {
                if choices[..j].contains(c) {
                    errors
                        .push(FieldError::new(format!("{}[{j}]", field("choices")), format!("duplicate choice '{c}'")));
                }
            }
            Domain::Categorical { choices }
        }
        kind @ (ParameterType::Float | ParameterType::Int) => {
            let kind_name = if kind == ParameterType::Float { "float" } else { "int" };
            forbid(&mut errors, spec.choices.is_some(), "choices", kind_name);
            let log = spec.scale == Some(Scale::Log);
            let (low, high) = match (spec.low, spec.high) {
                (Some(l), Some(h)) => (l, h),
                (l, h) => {
                    if l.is_none() {
                        errors.push(FieldError::new(field("low"), format!("required for a {kind_name} parameter")));
                    }
                    if h.is_none() {
                        errors.push(FieldError::new(field("high"), format!("required for a {kind_name} parameter")));
                    }
                    return Err(errors);
                }
            };
            if !low.is_finite() {
                errors.push(FieldError::new(field("low"), "must be finite"));
            }
            if !high.is_finite() {
                errors.push(FieldError::new(field("high"), "must be finite"));
            }
            if low.is_finite() && high.is_finite() && low >= high {
                errors.push(FieldError::new(
                    field("high"),
                    format!("must be greater than low ({low}); the range is empty"),
                ));
            }
            if log && low <= 0.0 {
                errors.push(FieldError::new(field("low"), "must be positive for scale 'log'"));
            }
            if kind == ParameterType::Int {
                for (name, v) in [("low", low), ("high", high)] {
                    if v.is_finite() && (v.fract() != 0.0 || v.abs() > 9.0e15) {
                        errors.push(FieldError::new(field(name), "must be an integer (|v| ≤ 9e15)"));
                    }
                }
                Domain::Int { low: low as i64, high: high as i64, log }
            } else {
                Domain::Float { low, high, log }
            }
        }
    };
    if errors.is_empty() { Ok(domain) } else { Err(errors) }
}

/// Log-scale integer range `[ln(low − ½), ln(high + ½)]`.
fn int_log_range(low: i64, high: i64) -> (f64, f64) {
    ((low as f64 - 0.5).ln(), (high as f64 + 0.5).ln())
}

/// The float parameter's value at encoded coordinate `u` (clamped to the cube and to `[low, high]`).
fn float_of_unit(low: f64, high: f64, log: bool, u: f64) -> f64 {
    let u = u.clamp(0.0, 1.0);
    let v = if log { (low.ln() + u * (high.ln() - low.ln())).exp() } else { low + u * (high - low) };
    v.clamp(low, high)
}

/// The encoded coordinate of the float value `x` (in range).
fn unit_of_float(low: f64, high: f64, log: bool, x: f64) -> f64 {
    if log { (x.ln() - low.ln()) / (high.ln() - low.ln()) } else { (x - low) / (high - low) }
}

/// The integer parameter's value at encoded coordinate `u`: the cell of width `1/(high − low + 1)` it falls in
/// (log scale: the nearest integer to the decoded value), clamped to `[low, high]`.
fn int_of_unit(low: i64, high: i64, log: bool, u: f64) -> i64 {
    let u = u.clamp(0.0, 1.0);
    let k = if log {
        let (lo, hi) = int_log_range(low, high);
        (lo + u * (hi - lo)).exp().round() as i64
    } else {
        low + (u * (high - low + 1) as f64).floor() as i64
    };
    k.clamp(low, high)
}

/// The encoded coordinate of the integer `k` (in range): its cell's centre.
fn unit_of_int(low: i64, high: i64, log: bool, k: i64) -> f64 {
    if log {
        let (lo, hi) = int_log_range(low, high);
        ((k as f64).ln() - lo) / (hi - lo)
    } else {
        (k - low) as f64 / (high - low + 1) as f64 + 0.5 / (high - low + 1) as f64
    }
}

/// The first index of the largest entry (a one-hot block's choice).
fn arg_max(x: &[f64]) -> usize {
    x.iter().enumerate().fold(0, |best, (j, v)| if *v > x[best] { j } else { best })
}

fn encode_value(domain: &Domain, v: &Value) -> Result<Vec<f64>, String> {
    match domain {
        Domain::Float { low, high, log } => {
            let x = v.as_f64().ok_or_else(|| format!("expected a number, got {}", type_name(v)))?;
            if !x.is_finite() {
                return Err("must be finite".into());
            }
            if x < *low || x > *high {
                return Err(format!("{x} is outside [{low}, {high}]"));
            }
            Ok(vec![unit_of_float(*low, *high, *log, x)])
        }
        Domain::Int { low, high, log } => {
            let x = v.as_f64().ok_or_else(|| format!("expected an integer, got {}", type_name(v)))?;
            if !x.is_finite() || x.fract() != 0.0 {
                return Err(format!("expected an integer, got {x}"));
            }
            let k = x as i64;
            if k < *low || k > *high {
                return Err(format!("{k} is outside [{low}, {high}]"));
            }
            Ok(vec![unit_of_int(*low, *high, *log, k)])
        }
        Domain::Categorical { choices } => {
            let s =
                v.as_str().ok_or_else(|| format!("expected one of the choices (a string), got {}", type_name(v)))?;
            let j = choices.iter().position(|c| c == s).ok_or_else(|| format!("'{s}' is not one of {choices:?}"))?;
            let mut out = vec![0.0; choices.len()];
            out[j] = 1.0;
            Ok(out)
        }
    }
}

fn decode_value(domain: &Domain, x: &[f64]) -> Value {
    match domain {
        Domain::Float { low, high, log } => Value::from(float_of_unit(*low, *high, *log, x[0])),
        Domain::Int { low, high, log } => Value::from(int_of_unit(*low, *high, *log, x[0])),
        Domain::Categorical { choices } => Value::from(choices[arg_max(x)].clone()),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn spec(v: Value) -> Vec<ParameterSpec> {
        serde_json::from_value(v).unwrap()
    }

    fn mixed() -> Space {
        Space::new(&spec(json!([
            {"name": "t", "type": "float", "low": 20, "high": 80},
            {"name": "ppm", "type": "float", "low": 1, "high": 1000, "scale": "log"},
            {"name": "rpm", "type": "int", "low": 100, "high": 1000},
            {"name": "n", "type": "int", "low": 1, "high": 4096, "scale": "log"},
            {"name": "solvent", "type": "categorical", "choices": ["water", "ethanol", "dmso"]}
        ])))
        .unwrap()
    }

    #[test]
    fn encoded_dimension_counts_one_hot_blocks() {
        assert_eq!(mixed().dim(), 7);
    }

    #[test]
    fn invalid_specs_name_the_field() {
        let errors = Space::new(&spec(json!([
            {"name": "a", "type": "float", "low": 1, "high": 1},
            {"name": "a", "type": "float", "low": 0, "high": 1, "scale": "log"},
            {"name": "c", "type": "categorical", "choices": []},
            {"name": "d", "type": "int", "low": 0.5, "high": 3},
            {"name": "e", "type": "float", "low": 0}
        ])))
        .unwrap_err();
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "parameters[0].high",
                "parameters[1].name",
                "parameters[1].low",
                "parameters[2].choices",
                "parameters[3].low",
                "parameters[4].high"
            ]
        );
    }

    #[test]
    fn non_finite_bounds_are_rejected() {
        let specs = vec![ParameterSpec {
            name: "x".into(),
            kind: ParameterType::Float,
            low: Some(f64::NEG_INFINITY),
            high: Some(f64::NAN),
            scale: None,
            choices: None,
            role: None,
            distribution: None,
        }];
        let errors = Space::new(&specs).unwrap_err();
        assert_eq!(errors.len(), 2);
    }

    #[test]
    fn unknown_fields_are_rejected_by_serde() {
        let r: Result<Vec<ParameterSpec>, _> = serde_json::from_value(json!([{"name": "x", "type": "float", "lo": 1}]));
        assert!(r.is_err());
    }

    #[test]
    fn encoding_rejects_bad_values_by_name() {
        let s = mixed();
        let values: Assignments = serde_json::from_value(json!({
            "t": 90, "ppm": "ten", "rpm": 100.5, "solvent": "acetone", "extra": 1
        }))
        .unwrap();
        let errors = s.encode(&values, "assignments").unwrap_err();
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "assignments.extra",
                "assignments.t",
                "assignments.ppm",
                "assignments.rpm",
                "assignments.n",
                "assignments.solvent"
            ]
        );
    }

    #[test]
    fn snap_makes_one_hot_and_integer_cells() {
        let s = mixed();
        let mut x = vec![0.3, 0.7, 0.0001, 0.99999, 0.2, 0.9, 0.4];
        s.snap(&mut x);
        assert_eq!(&x[4..], &[0.0, 1.0, 0.0]);
        assert_eq!(s.decode(&x)["rpm"], json!(100));
        assert_eq!(s.decode(&x)["n"], json!(4096));
        let again = s.encode(&s.decode(&x), "a").unwrap();
        for (a, b) in x.iter().zip(&again) {
            assert!((a - b).abs() < 1e-12);
        }
    }

    proptest! {
        #[test]
        fn decode_then_encode_round_trips(u in proptest::collection::vec(0.0f64..=1.0, 7)) {
            let s = mixed();
            let values = s.decode(&u);
            let x = s.encode(&values, "a").unwrap();
            let again = s.decode(&x);
            for (k, v) in &values {
                match (v.as_f64(), v.is_string()) {
                    (_, true) => prop_assert_eq!(&again[k], v),
                    (Some(a), _) => prop_assert!((again[k].as_f64().unwrap() - a).abs() <= 1e-12 * a.abs().max(1.0)),
                    _ => unreachable!(),
                }
            }
            // floats come back to the same encoded coordinate
            prop_assert!((x[0] - u[0]).abs() < 1e-12);
            prop_assert!((x[1] - u[1]).abs() < 1e-9);
        }

        #[test]
        fn encode_then_decode_round_trips_values(t in 20.0f64..=80.0, ppm in 1.0f64..=1000.0, rpm in 100i64..=1000, n in 1i64..=4096, c in 0usize..3) {
            let s = mixed();
            let choices = ["water", "ethanol", "dmso"];
            let values: Assignments = serde_json::from_value(json!({"t": t, "ppm": ppm, "rpm": rpm, "n": n, "solvent": choices[c]})).unwrap();
            let back = s.decode(&s.encode(&values, "a").unwrap());
            prop_assert!((back["t"].as_f64().unwrap() - t).abs() <= 1e-12 * t);
            prop_assert!((back["ppm"].as_f64().unwrap() - ppm).abs() <= 1e-9 * ppm);
            prop_assert_eq!(&back["rpm"], &json!(rpm));
            prop_assert_eq!(&back["n"], &json!(n));
            prop_assert_eq!(&back["solvent"], &json!(choices[c]));
        }
    }
}
