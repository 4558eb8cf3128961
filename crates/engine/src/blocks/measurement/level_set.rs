//! The `level_set` block: the study's question is "where is the objective above `threshold`?" (level-set
//! estimation, Gotovos et al., IJCAI 2013; TRUVAR, Bogunovic et al., NIPS 2016, Sec. 2). The answer is a
//! classification of the domain (the candidate set, or representer points of a continuous box) into points above,
//! below, and not yet classified, which `recommend` (and so `GET .../best`) returns instead of a single point.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::FieldError;
use crate::objective::Goal;
use crate::space::Space;

/// Points listed per class in a classification (counts are always complete).
pub const MAX_LISTED: usize = 500;

/// A level-set study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct LevelSetSpec {
    /// The threshold h, in the objective's units; "above" means a value greater than h.
    #[cfg_attr(feature = "openapi", schema(example = 1.5))]
    pub threshold: f64,
}

impl LevelSetSpec {
    /// Checks the threshold (field `level_set.threshold`).
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        if self.threshold.is_finite() {
            Ok(())
        } else {
            Err(vec![FieldError::new("level_set.threshold", "must be a finite number")])
        }
    }
}

/// Class of one domain point, in the engine's (maximisation) sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Lower confidence bound above h (set H).
    Above,
    /// Upper confidence bound below h (set L).
    Below,
    /// Neither (set M).
    Unclassified,
}

/// Confidence-bound classification `ℓ = μ − β^½σ > h` → above, `u = μ + β^½σ < h` → below (TRUVAR Eqs. 6–7).
pub fn classify(mean: f64, stddev: f64, h: f64, beta_sqrt: f64) -> Class {
    if mean - beta_sqrt * stddev > h {
        Class::Above
    } else if mean + beta_sqrt * stddev < h {
        Class::Below
    } else {
        Class::Unclassified
    }
}

/// The classification as returned to clients (`Recommended.extra.level_set`), in the client's sign: with a
/// minimised objective the engine's "below" is the client's "above". `means` (engine sign) give the plug-in
/// estimate `μ ≥ h` (the rule the paper scores every method with) as `predicted_above`.
pub struct Report<'a> {
    /// The space (to decode points).
    pub space: &'a Space,
    /// Decision parameters (what each point lists).
    pub decision: &'a [usize],
    /// Domain points, full encoded, row-major.
    pub points: &'a [f64],
    /// Class of each point (engine sign).
    pub classes: &'a [Class],
    /// Posterior mean of each point (engine sign).
    pub means: &'a [f64],
    /// The study's threshold (client units and sign).
    pub threshold: f64,
    /// Goal of the study.
    pub goal: Goal,
    /// Confidence multiplier used.
    pub beta_sqrt: f64,
}

impl Report<'_> {
    /// JSON: `threshold`, `beta_sqrt`, `counts`, `predicted_above`, the listed points per class, `truncated`.
    pub fn to_json(&self) -> Value {
        let d = self.space.dim().max(1);
        let flip = self.goal == Goal::Minimize;
        let client = |c: Class| match (c, flip) {
            (Class::Above, true) => Class::Below,
            (Class::Below, true) => Class::Above,
            (c, _) => c,
        };
        let h_engine = self.goal.sign() * self.threshold;
        let mut lists: [Vec<Value>; 3] = Default::default();
        let mut counts = [0usize; 3];
        for (i, c) in self.classes.iter().enumerate() {
            let k = match client(*c) {
                Class::Above => 0,
                Class::Below => 1,
                Class::Unclassified => 2,
            };
            counts[k] += 1;
            if lists[k].len() < MAX_LISTED {
                lists[k].push(Value::Object(self.space.decode_some(&self.points[i * d..(i + 1) * d], self.decision)));
            }
        }
        let predicted_above = self.means.iter().filter(|&&m| if flip { m <= h_engine } else { m >= h_engine }).count();
        let [above, below, unclassified] = lists;
        json!({
            "threshold": self.threshold,
            "beta_sqrt": self.beta_sqrt,
            "domain_size": self.classes.len(),
            "counts": {"above": counts[0], "below": counts[1], "unclassified": counts[2]},
            "predicted_above": predicted_above,
            "above": above,
            "below": below,
            "unclassified": unclassified,
            "truncated": counts.iter().any(|&c| c > MAX_LISTED),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confidence_bounds_decide_the_class() {
        assert_eq!(classify(2.0, 0.1, 1.0, 3.0), Class::Above);
        assert_eq!(classify(0.0, 0.1, 1.0, 3.0), Class::Below);
        assert_eq!(classify(0.9, 0.1, 1.0, 3.0), Class::Unclassified);
    }
}
