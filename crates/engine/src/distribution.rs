//! Known distributions of variables the environment draws when the learner does not control them (the random
//! variables `X^{-i}` of "Bayesian Optimization for Unknown Cost-Varying Variable Subsets with No-Regret Costs",
//! Hoang, Nguyen, Tran, AAAI 2025, §Problem setting; Tay et al., NeurIPS 2023).
//!
//! A [`DistributionSpec`] is written in the parameter's own units and lives on `[low, high]` of that parameter:
//! the truncated normal is truncated to the range, a normal is clipped to it, a uniform is a sub-interval of it and a
//! beta is scaled onto it. Sampling is by the inverse CDF of a uniform number, so fixed quasi-random base samples
//! give a fixed sample-average approximation of expectations.
//!
//! The paper's experiments specify a truncated normal by its mean (0.5) and the variance of the *truncated*
//! distribution (0.02 or 0.04); like the authors' code (`core/dists.py`) we find the underlying standard deviation
//! by bisection so that the truncated variance matches (`variance`), or take it as given (`std`).

use serde::{Deserialize, Serialize};
use statrs::distribution::{Beta, ContinuousCDF};

use crate::error::FieldError;
use crate::special::{norm_cdf, norm_pdf, norm_quantile};

/// Distribution a parameter follows when no control set fixes it, in the parameter's units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum DistributionSpec {
    /// Normal `N(mean, std²)` truncated to the parameter's range. Give `std` (of the underlying normal) or
    /// `variance` (of the truncated distribution, as in the paper), not both.
    TruncatedNormal {
        /// Mean of the underlying normal; inside the range.
        mean: f64,
        /// Standard deviation of the underlying normal (> 0).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        std: Option<f64>,
        /// Target variance of the truncated distribution (0 < variance < (high − low)²/12).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        variance: Option<f64>,
    },
    /// Normal `N(mean, std²)`; draws outside the range are clipped to it.
    Normal {
        /// Mean; inside the range.
        mean: f64,
        /// Standard deviation (> 0).
        std: f64,
    },
    /// Uniform on `[low, high]` (default: the parameter's range).
    Uniform {
        /// Lower end (default: the parameter's `low`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        low: Option<f64>,
        /// Upper end (default: the parameter's `high`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        high: Option<f64>,
    },
    /// Beta(alpha, beta) scaled onto the parameter's range.
    Beta {
        /// First shape parameter (> 0).
        alpha: f64,
        /// Second shape parameter (> 0).
        beta: f64,
    },
}

/// A validated distribution on `[low, high]`, sampled by inverse CDF.
#[derive(Debug, Clone)]
pub enum Distribution {
    /// Underlying `N(mean, std²)` truncated to `[low, high]`.
    TruncatedNormal {
        /// Underlying mean.
        mean: f64,
        /// Underlying standard deviation.
        std: f64,
        /// Range.
        low: f64,
        /// Range.
        high: f64,
    },
    /// `N(mean, std²)` clipped to `[low, high]`.
    Normal {
        /// Mean.
        mean: f64,
        /// Standard deviation.
        std: f64,
        /// Range.
        low: f64,
        /// Range.
        high: f64,
    },
    /// Uniform on `[low, high]`.
    Uniform {
        /// Lower end.
        low: f64,
        /// Upper end.
        high: f64,
    },
    /// `low + (high − low)·B` with `B ~ Beta(alpha, beta)`.
    Beta {
        /// The standard beta distribution.
        dist: Beta,
        /// Range.
        low: f64,
        /// Range.
        high: f64,
    },
}

impl DistributionSpec {
    /// Validates against the parameter range `[low, high]`; errors are named `{field}.{name}`.
    pub fn validate(&self, low: f64, high: f64, field: &str) -> Result<Distribution, Vec<FieldError>> {
        let err = |f: &str, m: &str| vec![FieldError::new(format!("{field}.{f}"), m)];
        let finite_pos = |v: f64| v.is_finite() && v > 0.0;
        let inside = |v: f64| v.is_finite() && low <= v && v <= high;
        match *self {
            DistributionSpec::TruncatedNormal { mean, std, variance } => {
                if !inside(mean) {
                    return Err(err("mean", &format!("must lie in the parameter's range [{low}, {high}]")));
                }
                let std = match (std, variance) {
                    (Some(s), None) if finite_pos(s) => s,
                    (Some(_), None) => return Err(err("std", "must be a finite number > 0")),
                    (None, Some(v)) => {
                        let max = (high - low).powi(2) / 12.0;
                        if !(finite_pos(v) && v < max) {
                            return Err(err(
                                "variance",
                                &format!("must be > 0 and below the uniform variance (high − low)²/12 = {max}"),
                            ));
                        }
                        std_for_truncated_variance(mean, v, low, high).ok_or_else(|| {
                            err("variance", "no truncated normal with this mean has this variance on the range")
                        })?
                    }
                    (Some(_), Some(_)) => return Err(err("variance", "give either std or variance, not both")),
                    (None, None) => return Err(err("std", "give std (underlying normal) or variance (truncated)")),
                };
                Ok(Distribution::TruncatedNormal { mean, std, low, high })
            }
            DistributionSpec::Normal { mean, std } => {
                if !inside(mean) {
                    return Err(err("mean", &format!("must lie in the parameter's range [{low}, {high}]")));
                }
                if !finite_pos(std) {
                    return Err(err("std", "must be a finite number > 0"));
                }
                Ok(Distribution::Normal { mean, std, low, high })
            }
            DistributionSpec::Uniform { low: a, high: b } => {
                let (a, b) = (a.unwrap_or(low), b.unwrap_or(high));
                if !inside(a) {
                    return Err(err("low", &format!("must lie in the parameter's range [{low}, {high}]")));
                }
                if !inside(b) || b <= a {
                    return Err(err(
                        "high",
                        &format!("must exceed low and lie in the parameter's range [{low}, {high}]"),
                    ));
                }
                Ok(Distribution::Uniform { low: a, high: b })
            }
            DistributionSpec::Beta { alpha, beta } => {
                if !finite_pos(alpha) {
                    return Err(err("alpha", "must be a finite number > 0"));
                }
                if !finite_pos(beta) {
                    return Err(err("beta", "must be a finite number > 0"));
                }
                let dist = Beta::new(alpha, beta).map_err(|e| err("alpha", &e.to_string()))?;
                Ok(Distribution::Beta { dist, low, high })
            }
        }
    }
}

impl Distribution {
    /// The value at probability `u ∈ (0, 1)` (inverse CDF), inside the range.
    pub fn quantile(&self, u: f64) -> f64 {
        let u = u.clamp(1e-12, 1.0 - 1e-12);
        match *self {
            Distribution::TruncatedNormal { mean, std, low, high } => {
                let (pa, pb) = (norm_cdf((low - mean) / std), norm_cdf((high - mean) / std));
                (mean + std * norm_quantile(pa + u * (pb - pa))).clamp(low, high)
            }
            Distribution::Normal { mean, std, low, high } => (mean + std * norm_quantile(u)).clamp(low, high),
            Distribution::Uniform { low, high } => low + u * (high - low),
            Distribution::Beta { ref dist, low, high } => low + (high - low) * dist.inverse_cdf(u).clamp(0.0, 1.0),
        }
    }

    /// Mean of the distribution (clipping of the normal ignored).
    pub fn mean(&self) -> f64 {
        match *self {
            Distribution::TruncatedNormal { mean, std, low, high } => truncated_moments(mean, std, low, high).0,
            Distribution::Normal { mean, .. } => mean,
            Distribution::Uniform { low, high } => 0.5 * (low + high),
            Distribution::Beta { ref dist, low, high } => {
                let (a, b) = (dist.shape_a(), dist.shape_b());
                low + (high - low) * a / (a + b)
            }
        }
    }
}

/// Mean and variance of `N(mean, std²)` truncated to `[low, high]`.
pub fn truncated_moments(mean: f64, std: f64, low: f64, high: f64) -> (f64, f64) {
    let (a, b) = ((low - mean) / std, (high - mean) / std);
    let z = norm_cdf(b) - norm_cdf(a);
    let (pa, pb) = (norm_pdf(a), norm_pdf(b));
    let shift = (pa - pb) / z;
    let var = std * std * (1.0 + (a * pa - b * pb) / z - shift * shift);
    (mean + std * shift, var)
}

/// The underlying standard deviation whose truncation to `[low, high]` has variance `target` (bisection on
/// `std ∈ [10⁻³, 10²]·(high − low)`, as the authors' code does on [0.001, 100] for the unit interval).
pub fn std_for_truncated_variance(mean: f64, target: f64, low: f64, high: f64) -> Option<f64> {
    let w = high - low;
    let var = |s: f64| truncated_moments(mean, s, low, high).1;
    let (mut lo, mut hi) = (1e-3 * w, 1e2 * w);
    if !(var(lo) <= target && target <= var(hi)) {
        return None;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if var(mid) < target {
            lo = mid
        } else {
            hi = mid
        }
        if hi - lo <= 1e-15 * w {
            break;
        }
    }
    Some(0.5 * (lo + hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_variance_bisection_matches_the_seed_constants() {
        // seed-experiments.md §0.3 (0.141821, 0.213548); digits from scipy (tests/fixtures/gen_distributions.py).
        let s2 = std_for_truncated_variance(0.5, 0.02, 0.0, 1.0).unwrap();
        let s4 = std_for_truncated_variance(0.5, 0.04, 0.0, 1.0).unwrap();
        assert!((s2 - 0.14182094135492315).abs() < 1e-9, "{s2}");
        assert!((s4 - 0.21354804005073025).abs() < 1e-9, "{s4}");
        assert!((truncated_moments(0.5, s2, 0.0, 1.0).1 - 0.02).abs() < 1e-12);
    }

    #[test]
    fn quantiles_stay_in_the_range_and_are_monotone() {
        let specs = [
            DistributionSpec::TruncatedNormal { mean: 2.0, std: Some(5.0), variance: None },
            DistributionSpec::Normal { mean: 9.0, std: 3.0 },
            DistributionSpec::Uniform { low: Some(1.0), high: None },
            DistributionSpec::Beta { alpha: 0.5, beta: 2.0 },
        ];
        for s in specs {
            let d = s.validate(0.0, 10.0, "p").unwrap();
            let mut last = f64::NEG_INFINITY;
            for k in 0..=100 {
                let v = d.quantile(k as f64 / 100.0);
                assert!((0.0..=10.0).contains(&v) && v >= last, "{s:?} {k} {v}");
                last = v;
            }
        }
    }

    #[test]
    fn invalid_distributions_name_the_field() {
        let bad = [
            (DistributionSpec::TruncatedNormal { mean: 0.2, std: None, variance: None }, "d.std"),
            (DistributionSpec::TruncatedNormal { mean: 0.5, std: None, variance: Some(0.1) }, "d.variance"),
            (DistributionSpec::TruncatedNormal { mean: 1.5, std: Some(0.1), variance: None }, "d.mean"),
            (DistributionSpec::Normal { mean: 0.5, std: 0.0 }, "d.std"),
            (DistributionSpec::Uniform { low: Some(0.6), high: Some(0.4) }, "d.high"),
            (DistributionSpec::Beta { alpha: -1.0, beta: 1.0 }, "d.alpha"),
        ];
        for (s, field) in bad {
            let e = s.validate(0.0, 1.0, "d").unwrap_err();
            assert_eq!(e[0].field, field, "{s:?}");
        }
    }

    #[test]
    fn quantiles_and_means_match_scipy() {
        // tests/fixtures/gen_distributions.py
        let t = DistributionSpec::TruncatedNormal { mean: 2.0, std: Some(5.0), variance: None };
        let t = t.validate(0.0, 10.0, "d").unwrap();
        assert!((t.quantile(0.3) - 2.3105827762481788).abs() < 1e-9 * 2.31);
        assert!((t.mean() - 4.142355032367687).abs() < 1e-9 * 4.14);
        let b = DistributionSpec::Beta { alpha: 2.0, beta: 6.0 }.validate(10.0, 20.0, "d").unwrap();
        assert!((b.mean() - 12.5).abs() < 1e-12);
        assert!((b.quantile(0.5) - (10.0 + 10.0 * 0.2284899635065957)).abs() < 1e-8);
    }
}
