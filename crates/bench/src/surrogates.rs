//! The real-data objectives of seed 000 (Hoang et al., AAAI 2025, §Experiments; Tay et al., NeurIPS 2023) and seed
//! 002 (Huang et al., AAAI 2024, portfolio): GP surrogates whose parameters were decoded from the authors' pickles
//! and state dicts (`crates/bench/data/*.json`, copied from `shared/data`; provenance and formulas in each file's
//! `source`/`formula` fields). All live on `[0, 1]^5` and need only a kernel row times a stored weight vector.
//!
//! - Plant growth: mean of latent 1 of a GPflow SVGP (squared-exponential ARD kernel, whitened, 464 inducing
//!   points) at `x_raw = lower + u·(upper − lower)`: `Σ_i k1(x_raw, Z1_i)·alpha_i`, standardised leaf area.
//! - Airfoil self-noise: posterior mean of a BoTorch `SingleTaskGP` (Matérn-5/2 ARD, constant mean) fitted on
//!   the 1503 UCI rows: `outcome_mean + outcome_std·(c + k(x, X)·w)`.
//! - Portfolio (CVXPortfolio simulator surrogate of BoRisk, used by sbokde): posterior mean of a BoTorch
//!   `SingleTaskGP` (Matérn-5/2 ARD, constant mean, `Standardize`) on 3000 simulator runs, same formula as airfoil;
//!   the exact posterior mean (the original ran GPyTorch's float32 CG solve: `shared/data/README.md` §3, caveat).

use serde_json::Value;

/// A kernel-weighted sum `f(u) = offset + scale·Σ_i k(x(u), z_i)·w_i`.
pub struct Surrogate {
    /// Name.
    pub name: &'static str,
    points: Vec<[f64; 5]>,
    weights: Vec<f64>,
    lengthscales: [f64; 5],
    variance: f64,
    matern52: bool,
    lower: [f64; 5],
    upper: [f64; 5],
    offset: f64,
    scale: f64,
    /// Check pairs `(u, value)` from the data file.
    #[cfg_attr(not(test), allow(dead_code))]
    pub check_pairs: Vec<([f64; 5], f64)>,
    /// The optimum the papers use for regret, if stored.
    pub optimum: Option<f64>,
}

fn vec5(v: &Value) -> anyhow::Result<[f64; 5]> {
    let a: Vec<f64> = serde_json::from_value(v.clone())?;
    a.try_into().map_err(|_| anyhow::anyhow!("expected 5 numbers"))
}

fn rows(v: &Value) -> anyhow::Result<Vec<[f64; 5]>> {
    v.as_array().ok_or_else(|| anyhow::anyhow!("expected rows"))?.iter().map(vec5).collect()
}

fn num(v: &Value) -> anyhow::Result<f64> {
    v.as_f64().ok_or_else(|| anyhow::anyhow!("expected a number"))
}

impl Surrogate {
    /// The plant-growth objective (`plant_gp.json`).
    pub fn plant() -> anyhow::Result<Self> {
        let d: Value = serde_json::from_str(include_str!("../data/plant_gp.json"))?;
        let checks = d["check_pairs"]
            .as_array()
            .ok_or_else(|| anyhow::anyhow!("check_pairs"))?
            .iter()
            .map(|c| Ok((vec5(&c["u"])?, num(&c["value"])?)))
            .collect::<anyhow::Result<_>>()?;
        Ok(Self {
            name: "plant",
            points: rows(&d["inducing_points_z1"])?,
            weights: serde_json::from_value(d["alpha"].clone())?,
            lengthscales: vec5(&d["kernel"]["lengthscales"])?,
            variance: num(&d["kernel"]["variance"])?,
            matern52: false,
            lower: vec5(&d["input"]["lower"])?,
            upper: vec5(&d["input"]["upper"])?,
            offset: 0.0,
            scale: 1.0,
            check_pairs: checks,
            optimum: Some(num(&d["optimum"]["value_reported"])?),
        })
    }

    /// The airfoil self-noise objective (`airfoil_gp.json`).
    pub fn airfoil() -> anyhow::Result<Self> {
        Self::botorch_posterior_mean("airfoil", include_str!("../data/airfoil_gp.json"))
    }

    /// The portfolio objective (`portfolio_gp.json`): first 3 coordinates the decision, last 2 the context.
    pub fn portfolio() -> anyhow::Result<Self> {
        Self::botorch_posterior_mean("portfolio", include_str!("../data/portfolio_gp.json"))
    }

    /// The posterior mean of a BoTorch `SingleTaskGP` (Matérn-5/2 ARD, constant mean, `Standardize` outcome
    /// transform) stored as `x`, `mean_weights` and `hyperparameters`, in original units, on [0, 1]^5.
    fn botorch_posterior_mean(name: &'static str, json: &str) -> anyhow::Result<Self> {
        let d: Value = serde_json::from_str(json)?;
        let h = &d["hyperparameters"];
        let checks = d["check_pairs"]
            .as_array()
            .ok_or_else(|| anyhow::anyhow!("check_pairs"))?
            .iter()
            .map(|c| Ok((vec5(&c["x"])?, num(&c["value"])?)))
            .collect::<anyhow::Result<_>>()?;
        let (mean, std, c) = (num(&h["outcome_mean"])?, num(&h["outcome_std"])?, num(&h["constant_mean"])?);
        Ok(Self {
            name,
            points: rows(&d["x"])?,
            weights: serde_json::from_value(d["mean_weights"].clone())?,
            lengthscales: vec5(&h["lengthscales"])?,
            variance: num(&h["outputscale"])?,
            matern52: true,
            lower: [0.0; 5],
            upper: [1.0; 5],
            offset: mean + std * c,
            scale: std,
            check_pairs: checks,
            optimum: None,
        })
    }

    /// Value at `u ∈ [0, 1]^5`.
    pub fn eval(&self, u: &[f64]) -> f64 {
        let x: Vec<f64> = (0..5).map(|j| self.lower[j] + u[j] * (self.upper[j] - self.lower[j])).collect();
        let s: f64 = self
            .points
            .iter()
            .zip(&self.weights)
            .map(|(z, w)| {
                let r2: f64 = (0..5).map(|j| ((x[j] - z[j]) / self.lengthscales[j]).powi(2)).sum();
                let k = if self.matern52 {
                    let r = (5.0 * r2).sqrt();
                    (1.0 + r + r * r / 3.0) * (-r).exp()
                } else {
                    (-0.5 * r2).exp()
                };
                self.variance * k * w
            })
            .sum();
        self.offset + self.scale * s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(s: &Surrogate) {
        assert!(!s.check_pairs.is_empty());
        for (u, v) in &s.check_pairs {
            let got = s.eval(u);
            assert!((got - v).abs() <= 1e-9 * v.abs(), "{} at {u:?}: {got} vs {v}", s.name);
        }
    }

    #[test]
    fn plant_matches_the_check_pairs() {
        check(&Surrogate::plant().unwrap());
    }

    #[test]
    fn portfolio_matches_the_check_pairs() {
        let s = Surrogate::portfolio().unwrap();
        assert_eq!(s.check_pairs.len(), 8);
        check(&s);
    }

    #[test]
    fn airfoil_matches_the_check_pairs() {
        check(&Surrogate::airfoil().unwrap());
    }
}
