//! The `candidates` block: an explicit finite domain (a list of assignments, or a grid per parameter) instead of
//! the continuous box. Policies then choose only among these points (TRUVAR's finite domain D, Bogunovic et al.,
//! NIPS 2016, Sec. 2; the SVM grid of Sec. 4).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::FieldError;
use crate::space::{Assignments, Domain, Space};

/// Largest number of candidate points a study may declare.
pub const MAX_CANDIDATES: usize = 100_000;

/// An explicit finite domain: `points`, or a `grid` (product of per-parameter values), not both.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CandidatesSpec {
    /// The points, each giving every decision parameter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<Object>>, example = json!([{"x": 0.1}, {"x": 0.7}])))]
    pub points: Option<Vec<Assignments>>,
    /// A grid: for each decision parameter either `count` evenly spaced values from `low` to `high` (in the
    /// parameter's scale) or explicit `values`. Categorical parameters left out take all their choices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>, example = json!({"x": {"count": 50}})))]
    pub grid: Option<Map<String, Value>>,
}

/// One axis of a grid.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct GridAxis {
    count: Option<usize>,
    values: Option<Vec<Value>>,
}

/// A validated candidate set: rows of the full encoded space (non-decision coordinates at the centre).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CandidateSet {
    /// Full encoded dimension.
    pub d: usize,
    /// Points, `len × d` row-major.
    pub x: Vec<f64>,
}

impl CandidateSet {
    /// Number of points.
    pub fn len(&self) -> usize {
        self.x.len() / self.d.max(1)
    }

    /// True without points.
    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> &[f64] {
        &self.x[i * self.d..(i + 1) * self.d]
    }

    /// Index of the point nearest to `x` (full encoded) among those `allowed` says yes to.
    pub fn nearest(&self, x: &[f64], allowed: impl Fn(usize) -> bool) -> Option<usize> {
        (0..self.len()).filter(|&i| allowed(i)).min_by(|&a, &b| {
            let da: f64 = self.row(a).iter().zip(x).map(|(p, q)| (p - q).powi(2)).sum();
            let db: f64 = self.row(b).iter().zip(x).map(|(p, q)| (p - q).powi(2)).sum();
            da.total_cmp(&db)
        })
    }

    /// Index of the point equal to `x` (to 1e-9), if any.
    pub fn position(&self, x: &[f64]) -> Option<usize> {
        (0..self.len()).find(|&i| self.row(i).iter().zip(x).all(|(p, q)| (p - q).abs() <= 1e-9))
    }
}

impl CandidatesSpec {
    /// Validates against the space; errors are named `candidates.points[i].name`, `candidates.grid.name`, ….
    pub fn validate(&self, space: &Space, decision: &[usize]) -> Result<CandidateSet, Vec<FieldError>> {
        let rows = match (&self.points, &self.grid) {
            (Some(_), Some(_)) => return Err(vec![FieldError::new("candidates", "give either 'points' or 'grid'")]),
            (None, None) => return Err(vec![FieldError::new("candidates", "give 'points' or 'grid'")]),
            (Some(points), None) => points.clone(),
            (None, Some(grid)) => grid_points(space, decision, grid)?,
        };
        if rows.is_empty() {
            return Err(vec![FieldError::new("candidates", "needs at least one point")]);
        }
        if rows.len() > MAX_CANDIDATES {
            return Err(vec![FieldError::new(
                "candidates",
                format!("{} points; at most {MAX_CANDIDATES} are allowed", rows.len()),
            )]);
        }
        let mut x = Vec::with_capacity(rows.len() * space.dim());
        let mut errors = Vec::new();
        let prefix = if self.points.is_some() { "candidates.points" } else { "candidates.grid" };
        for (i, a) in rows.iter().enumerate() {
            match space.encode_some(a, decision, &format!("{prefix}[{i}]")) {
                Ok(row) => x.extend(row),
                Err(mut e) => errors.append(&mut e),
            }
            if errors.len() > 20 {
                break;
            }
        }
        if errors.is_empty() { Ok(CandidateSet { d: space.dim(), x }) } else { Err(errors) }
    }
}

/// The product of the grid's axes, as assignments.
fn grid_points(
    space: &Space,
    decision: &[usize],
    grid: &Map<String, Value>,
) -> Result<Vec<Assignments>, Vec<FieldError>> {
    let mut errors = Vec::new();
    for name in grid.keys() {
        if !space.index_of(name).is_some_and(|i| decision.contains(&i)) {
            errors.push(FieldError::new(format!("candidates.grid.{name}"), "not a decision parameter of this study"));
        }
    }
    let mut axes: Vec<(String, Vec<Value>)> = Vec::new();
    for &i in decision {
        let p = &space.params()[i];
        let field = format!("candidates.grid.{}", p.name);
        let axis = match grid.get(&p.name) {
            None => match &p.domain {
                Domain::Categorical { choices } => Ok(choices.iter().map(|c| Value::from(c.as_str())).collect()),
                _ => Err("missing axis: give {\"count\": n} or {\"values\": [...]}".to_string()),
            },
            Some(v) => match serde_json::from_value::<GridAxis>(v.clone()) {
                Err(e) => Err(e.to_string()),
                Ok(GridAxis { values: Some(values), count: None }) if !values.is_empty() => Ok(values),
                Ok(GridAxis { count: Some(n), values: None }) if n >= 1 => evenly_spaced(&p.domain, n),
                Ok(_) => Err("give exactly one of 'count' (≥ 1) or 'values' (non-empty)".to_string()),
            },
        };
        match axis {
            Ok(values) => axes.push((p.name.clone(), values)),
            Err(message) => errors.push(FieldError::new(field, message)),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let total = axes.iter().try_fold(1usize, |acc, (_, v)| acc.checked_mul(v.len()));
    if total.is_none_or(|t| t > MAX_CANDIDATES) {
        return Err(vec![FieldError::new("candidates.grid", format!("more than {MAX_CANDIDATES} points"))]);
    }
    let mut out = vec![Assignments::new()];
    for (name, values) in &axes {
        out = out
            .into_iter()
            .flat_map(|a| {
                values.iter().map(move |v| {
                    let mut b = a.clone();
                    b.insert(name.clone(), v.clone());
                    b
                })
            })
            .collect();
    }
    Ok(out)
}

/// `n` evenly spaced values of a numeric domain (geometric for log scale; integers rounded and deduplicated).
fn evenly_spaced(domain: &Domain, n: usize) -> Result<Vec<Value>, String> {
    let at = |lo: f64, hi: f64, log: bool, k: usize| {
        let s = if n == 1 { 0.5 } else { k as f64 / (n - 1) as f64 };
        if log { (lo.ln() + s * (hi.ln() - lo.ln())).exp() } else { lo + s * (hi - lo) }
    };
    match *domain {
        Domain::Float { low, high, log } => {
            Ok((0..n).map(|k| Value::from(at(low, high, log, k).clamp(low, high))).collect())
        }
        Domain::Int { low, high, log } => {
            let mut v: Vec<i64> =
                (0..n).map(|k| (at(low as f64, high as f64, log, k).round() as i64).clamp(low, high)).collect();
            v.dedup();
            Ok(v.into_iter().map(Value::from).collect())
        }
        Domain::Categorical { .. } => Err("'count' is not allowed for a categorical parameter; give 'values'".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::ParameterSpec;
    use serde_json::json;

    fn space() -> Space {
        let specs: Vec<ParameterSpec> = serde_json::from_value(json!([
            {"name": "x", "type": "float", "low": 0, "high": 10},
            {"name": "k", "type": "int", "low": 1, "high": 3},
            {"name": "c", "type": "categorical", "choices": ["a", "b"]}
        ]))
        .unwrap();
        Space::new(&specs).unwrap()
    }

    #[test]
    fn a_grid_is_the_product_of_its_axes() {
        let spec: CandidatesSpec =
            serde_json::from_value(json!({"grid": {"x": {"count": 3}, "k": {"values": [1, 3]}}})).unwrap();
        let set = spec.validate(&space(), &[0, 1, 2]).unwrap();
        assert_eq!(set.len(), 3 * 2 * 2);
        let decoded = space().decode(set.row(1));
        assert_eq!(decoded["x"], json!(0.0));
        assert_eq!(decoded["k"], json!(1));
        assert_eq!(decoded["c"], json!("b"));
    }

    #[test]
    fn errors_name_the_offending_field() {
        let spec: CandidatesSpec =
            serde_json::from_value(json!({"points": [{"x": 1, "k": 2, "c": "a"}, {"x": 11, "k": 2, "c": "a"}]}))
                .unwrap();
        let e = spec.validate(&space(), &[0, 1, 2]).unwrap_err();
        assert_eq!(e[0].field, "candidates.points[1].x");
        let spec: CandidatesSpec = serde_json::from_value(json!({"grid": {"k": {"count": 2}}})).unwrap();
        let e = spec.validate(&space(), &[0, 1, 2]).unwrap_err();
        assert_eq!(e[0].field, "candidates.grid.x");
    }

    #[test]
    fn nearest_and_position_find_points() {
        let spec: CandidatesSpec =
            serde_json::from_value(json!({"grid": {"x": {"count": 11}, "k": {"values": [2]}}})).unwrap();
        let set = spec.validate(&space(), &[0, 1, 2]).unwrap();
        let mut probe = set.row(7).to_vec();
        assert_eq!(set.position(&probe), Some(7));
        probe[0] += 0.01;
        assert_eq!(set.nearest(&probe, |_| true), Some(7));
        assert_ne!(set.nearest(&probe, |i| i != 7), Some(7));
    }
}
