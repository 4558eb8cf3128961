//! The problems of seed 002 (Huang et al., AAAI 2024, App. B.2; constants of the authors' `Test_Function.py` as
//! restated in `shared/research/seed-experiments.md` §002.3): objective f(x, c) on the unit cube (maximised),
//! the context distribution, the expectation F(x) = E_c[f(x, c)] by quasi-Monte Carlo, and the code's F*.

use std::f64::consts::{E, PI};

use engine::sampling::Sobol;
use engine::special::norm_quantile;
use engine::testfunctions::{branin, hartmann6};
use rand::Rng;
use rand_distr::{Distribution, Normal};

/// A context distribution on [0, 1]^D_c (draws clipped to the box, as the code).
#[derive(Debug, Clone, Copy)]
pub enum ContextDist {
    /// Independent N(mean, sd²) per dimension.
    Normal {
        /// Mean.
        mean: f64,
        /// Standard deviation.
        sd: f64,
    },
    /// Burr XII with pdf αβ c^{α−1}/(1 + c^α)^{β+1}.
    Burr {
        /// α.
        a: f64,
        /// β.
        b: f64,
    },
    /// Complicated Hartmann's equal-weight mixture of six normals and two Cauchys.
    Mixture,
}

const MIXTURE_NORMALS: [(f64, f64); 6] = [(0.1, 0.02), (0.3, 0.075), (0.4, 0.1), (0.5, 0.1), (0.7, 0.075), (0.8, 0.03)];
const MIXTURE_CAUCHYS: [(f64, f64); 2] = [(0.2, 0.02), (0.8, 0.02)];

impl ContextDist {
    /// Inverse distribution function of one coordinate (None for the mixture).
    fn quantile(self, u: f64) -> Option<f64> {
        match self {
            ContextDist::Normal { mean, sd } => Some(mean + sd * norm_quantile(u)),
            ContextDist::Burr { a, b } => Some(((1.0 - u).powf(-1.0 / b) - 1.0).powf(1.0 / a)),
            ContextDist::Mixture => None,
        }
    }

    /// One draw of `dc` coordinates, clipped to [0, 1].
    pub fn sample(self, dc: usize, rng: &mut impl Rng) -> Vec<f64> {
        (0..dc)
            .map(|_| {
                let v = match self {
                    ContextDist::Normal { mean, sd } => Normal::new(mean, sd).map_or(mean, |n| n.sample(rng)),
                    ContextDist::Mixture => {
                        let k = rng.random_range(0..8);
                        if k < 6 {
                            let (m, s) = MIXTURE_NORMALS[k];
                            Normal::new(m, s).map_or(m, |n| n.sample(rng))
                        } else {
                            let (m, s) = MIXTURE_CAUCHYS[k - 6];
                            m + s * (PI * (rng.random::<f64>() - 0.5)).tan()
                        }
                    }
                    other => other.quantile(rng.random::<f64>()).unwrap_or(0.5),
                };
                if v.is_finite() { v.clamp(0.0, 1.0) } else { 0.0 }
            })
            .collect()
    }

    /// `2^log2` quasi-Monte Carlo contexts: unscrambled Sobol points through the inverse CDF, clipped (the code).
    pub fn qmc(self, dc: usize, log2: u32) -> Option<Vec<f64>> {
        let pts = Sobol::new(dc).take(1 << log2);
        pts.into_iter().map(|u| self.quantile(u).map(|v| if v.is_nan() { 0.0 } else { v.clamp(0.0, 1.0) })).collect()
    }
}

/// How a run is scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Score {
    /// Σ_t [F* − F(x_t)], F by QMC.
    CumulativeRegret,
    /// Σ_t f(x_t, c_t) (observed; Complicated Hartmann).
    CumulativeReward,
}

/// One problem.
#[derive(Debug, Clone, Copy)]
pub struct Problem {
    /// Experiment name.
    pub name: &'static str,
    /// One sentence.
    pub description: &'static str,
    /// Decision dimension.
    pub dx: usize,
    /// Context dimension.
    pub dc: usize,
    /// f(x, c), maximised.
    pub f: fn(&[f64], &[f64]) -> f64,
    /// Context distribution.
    pub context: ContextDist,
    /// F* (the code's constant).
    pub optimum: Option<f64>,
    /// Metric.
    pub score: Score,
    /// log₂ of the QMC size for F.
    pub qmc_log2: u32,
}

fn ackley_unit(u: &[f64]) -> f64 {
    let z: Vec<f64> = u.iter().map(|v| 65.536 * v - 32.768).collect();
    let d = z.len() as f64;
    let sq = (z.iter().map(|v| v * v).sum::<f64>() / d).sqrt();
    let cs = z.iter().map(|v| (2.0 * PI * v).cos()).sum::<f64>() / d;
    -(-20.0 * (-0.2 * sq).exp() - cs.exp() + 20.0 + E)
}

fn ackley(x: &[f64], c: &[f64]) -> f64 {
    ackley_unit(&[x, c].concat())
}

fn modified_branin(x: &[f64], c: &[f64]) -> f64 {
    let h1 = branin(15.0 * x[0] - 5.0, 15.0 * c[0]);
    let h2 = branin(15.0 * c[1] - 5.0, 15.0 * x[1]);
    -(h1 * h2).sqrt()
}

fn hartmann(x: &[f64], c: &[f64]) -> f64 {
    hartmann6(&[x, c].concat())
}

fn newsvendor(x: &[f64], c: &[f64]) -> f64 {
    9.0 * x[0].min(c[0]) + (x[0] - c[0]).max(0.0) - 5.0 * x[0]
}

/// Every problem of the suite (portfolio is not included: see the suite docs).
pub fn problems() -> Vec<Problem> {
    vec![
        Problem {
            name: "ackley",
            description: "−Ackley-3 on (x₁, x₂, c), c ~ N(0.5, 0.15²) clipped",
            dx: 2,
            dc: 1,
            f: ackley,
            context: ContextDist::Normal { mean: 0.5, sd: 0.15 },
            optimum: Some(-10.9523),
            score: Score::CumulativeRegret,
            qmc_log2: 21,
        },
        Problem {
            name: "modified_branin",
            description: "Modified Branin (2 decisions + 2 contexts), c_i ~ N(0.5, 0.1²) clipped",
            dx: 2,
            dc: 2,
            f: modified_branin,
            context: ContextDist::Normal { mean: 0.5, sd: 0.1 },
            optimum: Some(-9.603),
            score: Score::CumulativeRegret,
            qmc_log2: 21,
        },
        Problem {
            name: "hartmann",
            description: "Hartmann-6 with the 6th coordinate as context, c ~ N(0.5, 0.1²) clipped",
            dx: 5,
            dc: 1,
            f: hartmann,
            context: ContextDist::Normal { mean: 0.5, sd: 0.1 },
            optimum: Some(2.6127565),
            score: Score::CumulativeRegret,
            qmc_log2: 21,
        },
        Problem {
            name: "complicated_hartmann",
            description: "Hartmann-6, context from a mixture of 6 normals and 2 Cauchys (1/8 each), clipped",
            dx: 5,
            dc: 1,
            f: hartmann,
            context: ContextDist::Mixture,
            optimum: None,
            score: Score::CumulativeReward,
            qmc_log2: 0,
        },
        Problem {
            name: "newsvendor",
            description: "continuous newsvendor 9·min(x,c) + max(0,x−c) − 5x, demand Burr XII(α=2, β=20) clipped",
            dx: 1,
            dc: 1,
            f: newsvendor,
            context: ContextDist::Burr { a: 2.0, b: 20.0 },
            optimum: Some(0.464),
            score: Score::CumulativeRegret,
            qmc_log2: 21,
        },
        Problem {
            name: "ackley_2+4",
            description: "−Ackley-6 with 4 contexts, c_i ~ N(0.5, 0.15²) clipped (App. D)",
            dx: 2,
            dc: 4,
            f: ackley,
            context: ContextDist::Normal { mean: 0.5, sd: 0.15 },
            optimum: None,
            score: Score::CumulativeRegret,
            qmc_log2: 18,
        },
    ]
}

impl Problem {
    /// F(x) = mean of f(x, c) over the QMC contexts.
    pub fn expectation(&self, x: &[f64], qmc: &[f64]) -> f64 {
        let dc = self.dc.max(1);
        let n = qmc.len() / dc;
        qmc.chunks_exact(dc).map(|c| (self.f)(x, c)).sum::<f64>() / n.max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_optima_are_near_the_qmc_expectation_at_good_points() {
        // Newsvendor: F(x) has its maximum near the 4/9... quantile; the code's F* = 0.464 must not be beaten
        // by more than QMC error anywhere on a grid.
        let p = problems().into_iter().find(|p| p.name == "newsvendor").unwrap();
        let qmc = p.context.qmc(1, 16).unwrap();
        let best = (0..=200).map(|i| p.expectation(&[i as f64 / 200.0], &qmc)).fold(f64::NEG_INFINITY, f64::max);
        assert!((best - 0.464).abs() < 5e-3, "{best}");
    }

    #[test]
    fn burr_quantile_inverts_the_cdf() {
        let d = ContextDist::Burr { a: 2.0, b: 20.0 };
        for u in [0.1, 0.5, 0.9] {
            let c = d.quantile(u).unwrap();
            let cdf = 1.0 - (1.0 + c.powf(2.0)).powf(-20.0);
            assert!((cdf - u).abs() < 1e-12);
        }
    }
}
