//! The `indirect` study block (seed 001): the query space A the client sets, the conditional p(x | a) that links
//! a query to the study's (target) parameters x, example pairs, and the optional multi-resolution tree.
//!
//! The study's `parameters` are the target space X (where `best` recommends); `indirect.query_parameters` are the
//! query space A (what a suggestion's `query` holds and an observation's `query` must carry). Both must be
//! `float` parameters. The conditional is either known, per target dimension
//! `x_i = offset + scale·h(a_j) + N(0, noise_std²)` truncated to `[low, high]` with `h(a) = a` (`affine`) or
//! `h(a) = cos(πa/2)` (`cosine`, the paper's non-linear transformation, §7; a_j in raw units), or learned from
//! `(x, a)` pairs (given here and/or uploaded later) with the conditional-mean-embedding estimator of §2.

use serde::{Deserialize, Serialize};

use super::tree::Tree;
use crate::data::PairRecord;
use crate::error::FieldError;
use crate::space::{Domain, ParameterSpec, Scale, Space};

/// The transformation h of a known conditional.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum ConditionalForm {
    /// `h(a) = a`.
    Affine,
    /// `h(a) = cos(π a / 2)`.
    Cosine,
}

/// One target dimension of a known conditional: `x = offset + scale·h(a) + N(0, noise_std²)`, truncated to the
/// target parameter's bounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ConditionalDimension {
    /// Name of the target parameter (one of the study's `parameters`).
    #[cfg_attr(feature = "openapi", schema(example = "x1"))]
    pub target: String,
    /// Name of the query parameter it depends on.
    #[cfg_attr(feature = "openapi", schema(example = "a1"))]
    pub query: String,
    /// `affine` or `cosine`.
    pub form: ConditionalForm,
    /// Multiplier of h(a).
    #[cfg_attr(feature = "openapi", schema(example = 15.0))]
    pub scale: f64,
    /// Additive offset.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(example = -5.0))]
    pub offset: f64,
    /// Standard deviation of the Gaussian noise (target units); 0 makes x a deterministic function of a.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(example = 0.707))]
    pub noise_std: f64,
}

/// A multi-resolution tree over the query box: every node splits each query dimension in half (a quad-tree in
/// two dimensions); a node at level l is queried through its cell, at cost `cost[l]` and noise `noise_std[l]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TreeSpec {
    /// Deepest level (the root is level 0), 1 to 8.
    #[cfg_attr(feature = "openapi", schema(example = 6))]
    pub height: u32,
    /// Cost of a query at each level 0..=height, positive.
    #[cfg_attr(feature = "openapi", schema(example = json!([0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5])))]
    pub cost: Vec<f64>,
    /// Observation noise standard deviation at each level 0..=height (objective units), ≥ 0.
    #[cfg_attr(feature = "openapi", schema(example = json!([1.0, 0.5, 0.333, 0.25, 0.2, 0.167, 0.143])))]
    pub noise_std: Vec<f64>,
}

/// The `indirect` block of a study spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct IndirectSpec {
    /// The query parameters a (all `float`): what a suggestion's `query` holds.
    pub query_parameters: Vec<ParameterSpec>,
    /// Known conditional, one entry per target parameter; omit it to learn the conditional from `pairs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditional: Option<Vec<ConditionalDimension>>,
    /// Example pairs (x, a) drawn from the joint distribution (more can be uploaded later).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairs: Vec<PairRecord>,
    /// Regulariser λ of the conditional-mean-embedding estimator (default 1e-3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(example = 0.001))]
    pub regularizer: Option<f64>,
    /// Monte Carlo samples per query for a known conditional (default 16, at most 256).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(example = 16))]
    pub samples: Option<usize>,
    /// Optional multi-resolution tree over the query box.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<TreeSpec>,
}

/// One validated dimension of a known conditional (indices into the target and query spaces).
#[derive(Debug, Clone, PartialEq)]
pub struct KnownDimension {
    /// Target parameter index.
    pub target: usize,
    /// Query parameter index.
    pub query: usize,
    /// Transformation.
    pub form: ConditionalForm,
    /// Multiplier.
    pub scale: f64,
    /// Offset.
    pub offset: f64,
    /// Noise standard deviation.
    pub noise_std: f64,
}

/// A validated indirect block.
#[derive(Debug, Clone, PartialEq)]
pub struct IndirectProblem {
    /// The query space A.
    pub query_space: Space,
    /// Known conditional, in target-parameter order.
    pub known: Option<Vec<KnownDimension>>,
    /// Encoded pairs of the spec: (target point, query).
    pub pairs: Vec<(Vec<f64>, Vec<f64>)>,
    /// CME regulariser λ.
    pub regularizer: f64,
    /// Monte Carlo samples per query (known conditional).
    pub samples: usize,
    /// Multi-resolution tree.
    pub tree: Option<Tree>,
}

/// Most example pairs a study may hold (given at creation and uploaded later together).
pub const MAX_PAIRS: usize = 20_000;
/// Default CME regulariser λ.
pub const DEFAULT_REGULARIZER: f64 = 1e-3;
/// Default Monte Carlo samples per query of a known conditional.
pub const DEFAULT_SAMPLES: usize = 16;

impl IndirectSpec {
    /// Validates the block against the study's target space; errors name `indirect.*`.
    pub fn validate(&self, target: &Space) -> Result<IndirectProblem, Vec<FieldError>> {
        let mut errors = Vec::new();
        for (i, p) in target.params().iter().enumerate() {
            if !matches!(p.domain, Domain::Float { .. }) {
                errors.push(FieldError::new(
                    format!("parameters[{i}].type"),
                    "an indirect study's target parameters must be 'float'",
                ));
            }
        }
        let query_space = match Space::new(&self.query_parameters) {
            Ok(s) => Some(s),
            Err(e) => {
                errors.extend(e.into_iter().map(|f| FieldError::new(format!("indirect.query_{}", f.field), f.message)));
                None
            }
        };
        if let Some(q) = &query_space {
            for (i, p) in q.params().iter().enumerate() {
                if !matches!(p.domain, Domain::Float { .. }) {
                    errors.push(FieldError::new(format!("indirect.query_parameters[{i}].type"), "must be 'float'"));
                }
                if target.index_of(&p.name).is_some() {
                    errors.push(FieldError::new(
                        format!("indirect.query_parameters[{i}].name"),
                        "must differ from every target parameter name",
                    ));
                }
            }
        }
        let regularizer = self.regularizer.unwrap_or(DEFAULT_REGULARIZER);
        if !(regularizer.is_finite() && regularizer > 0.0) {
            errors.push(FieldError::new("indirect.regularizer", "must be a finite number > 0"));
        }
        let samples = self.samples.unwrap_or(DEFAULT_SAMPLES);
        if !(1..=256).contains(&samples) {
            errors.push(FieldError::new("indirect.samples", "must be between 1 and 256"));
        }
        let known = match (&self.conditional, &query_space) {
            (Some(dims), Some(q)) => validate_known(dims, target, q, &self.query_parameters, &mut errors),
            _ => None,
        };
        let mut pairs = Vec::with_capacity(self.pairs.len());
        if let Some(q) = &query_space {
            for (i, p) in self.pairs.iter().enumerate() {
                match encode_pair(p, target, q, &format!("indirect.pairs[{i}]")) {
                    Ok(pair) => pairs.push(pair),
                    Err(mut e) => errors.append(&mut e),
                }
            }
        }
        if self.pairs.len() > MAX_PAIRS {
            errors.push(FieldError::new("indirect.pairs", format!("at most {MAX_PAIRS} pairs")));
        }
        let tree = match (&self.tree, &query_space) {
            (Some(t), Some(q)) => validate_tree(t, q.dim(), &mut errors),
            _ => None,
        };
        match query_space {
            Some(query_space) if errors.is_empty() => {
                Ok(IndirectProblem { query_space, known, pairs, regularizer, samples, tree })
            }
            _ => Err(errors),
        }
    }
}

/// Encodes a pair, naming fields `{prefix}.target.x` / `{prefix}.query.a`.
pub fn encode_pair(
    pair: &PairRecord,
    target: &Space,
    query: &Space,
    prefix: &str,
) -> Result<(Vec<f64>, Vec<f64>), Vec<FieldError>> {
    let x = target.encode(&pair.target, &format!("{prefix}.target"));
    let a = query.encode(&pair.query, &format!("{prefix}.query"));
    match (x, a) {
        (Ok(x), Ok(a)) => Ok((x, a)),
        (x, a) => Err(x.err().into_iter().chain(a.err()).flatten().collect()),
    }
}

fn validate_known(
    dims: &[ConditionalDimension],
    target: &Space,
    query: &Space,
    query_specs: &[ParameterSpec],
    errors: &mut Vec<FieldError>,
) -> Option<Vec<KnownDimension>> {
    let mut out: Vec<Option<KnownDimension>> = vec![None; target.params().len()];
    let before = errors.len();
    for (i, d) in dims.iter().enumerate() {
        let field = |f: &str| format!("indirect.conditional[{i}].{f}");
        let t = target.index_of(&d.target);
        let q = query.index_of(&d.query);
        if t.is_none() {
            errors.push(FieldError::new(field("target"), format!("'{}' is not a study parameter", d.target)));
        }
        if q.is_none() {
            errors.push(FieldError::new(field("query"), format!("'{}' is not a query parameter", d.query)));
        }
        if !(d.scale.is_finite() && d.offset.is_finite()) {
            errors.push(FieldError::new(field("scale"), "scale and offset must be finite numbers"));
        }
        if !(d.noise_std.is_finite() && d.noise_std >= 0.0) {
            errors.push(FieldError::new(field("noise_std"), "must be a finite number ≥ 0"));
        }
        if let Some(t) = t {
            if let Domain::Float { log: true, .. } = target.params()[t].domain {
                errors.push(FieldError::new(field("target"), "a known conditional needs linear-scale targets"));
            }
            if out[t].is_some() {
                errors.push(FieldError::new(field("target"), format!("'{}' appears twice", d.target)));
            }
            if let Some(q) = q {
                let log_query = query_specs.get(q).is_some_and(|s| s.scale == Some(Scale::Log));
                if log_query {
                    errors.push(FieldError::new(field("query"), "a known conditional needs linear-scale queries"));
                }
                out[t] = Some(KnownDimension {
                    target: t,
                    query: q,
                    form: d.form,
                    scale: d.scale,
                    offset: d.offset,
                    noise_std: d.noise_std,
                });
            }
        }
    }
    for (t, o) in out.iter().enumerate() {
        if o.is_none() && t_exists(target, t) && errors.len() == before {
            errors.push(FieldError::new(
                "indirect.conditional",
                format!("missing an entry for target parameter '{}'", target.params()[t].name),
            ));
        }
    }
    if errors.len() == before { out.into_iter().collect() } else { None }
}

fn t_exists(target: &Space, t: usize) -> bool {
    t < target.params().len()
}

fn validate_tree(t: &TreeSpec, query_dim: usize, errors: &mut Vec<FieldError>) -> Option<Tree> {
    let before = errors.len();
    if !(1..=8).contains(&t.height) {
        errors.push(FieldError::new("indirect.tree.height", "must be between 1 and 8"));
    }
    if query_dim * t.height as usize > 16 {
        errors.push(FieldError::new(
            "indirect.tree.height",
            "too many leaves: query dimension × height must be at most 16 (at most 65536 leaves)",
        ));
    }
    let levels = t.height as usize + 1;
    if t.cost.len() != levels {
        errors.push(FieldError::new("indirect.tree.cost", format!("needs one entry per level 0..={}", t.height)));
    } else if t.cost.iter().any(|c| !(c.is_finite() && *c > 0.0)) {
        errors.push(FieldError::new("indirect.tree.cost", "every cost must be a finite number > 0"));
    }
    if t.noise_std.len() != levels {
        errors.push(FieldError::new("indirect.tree.noise_std", format!("needs one entry per level 0..={}", t.height)));
    } else if t.noise_std.iter().any(|c| !(c.is_finite() && *c >= 0.0)) {
        errors.push(FieldError::new("indirect.tree.noise_std", "every entry must be a finite number ≥ 0"));
    }
    (errors.len() == before).then(|| Tree::new(query_dim, t.height, t.cost.clone(), t.noise_std.clone()))
}
