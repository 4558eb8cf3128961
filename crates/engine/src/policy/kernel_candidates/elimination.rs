//! Hyperparameter elimination bookkeeping (Ziomek et al. 2024, Algorithm 1 lines 8–14; Algorithm 2 lines 10–21).
//!
//! For every candidate u the state keeps the index set S^u as running sums: Σ_{i∈S^u} η_i (prediction errors of
//! the model chosen at step i, `η_i = y_i − μ^{u_i}_{i−1}(x_i)`), Σ_{i∈S^u} β^u_i σ^u_{i−1}(x_i) (stored at
//! suggestion time) and |S^u|. The test `|Σ η| > √(ξ_t |S^u|) + Σ βσ` removes u from the surviving set, except
//! the last survivor. HE-StableOpt keeps a second set Ŝ^v for the pessimistic model v_t.
//!
//! Ask-tell: a suggestion is recorded as *issued* with (x, t, u, μ, βσ); when an observation at the same encoded
//! point (within 1e-7) arrives, its η enters the sums and the test runs with ξ_t of the recorded t. Issued points
//! that are no longer pending and were never observed at that point (abandoned, or the client ran another point)
//! are dropped without affecting the sums: the theory's η needs the model's prediction at the observed point.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::blocks::kernel_candidates::{CandidateSet, InfoGainCache};
use crate::policy::Context;

/// Running sums of one index set S^u.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Ledger {
    /// Σ η_i.
    pub eta_sum: f64,
    /// Σ β_i σ_{i−1}(x_i).
    pub beta_sigma_sum: f64,
    /// |S^u|.
    pub count: usize,
}

impl Ledger {
    /// Whether the elimination test fires: `|Σ η| > √(ξ |S|) + Σ βσ`.
    pub fn rejects(&self, xi: f64) -> bool {
        self.count > 0 && self.eta_sum.abs() > (xi.max(0.0) * self.count as f64).sqrt() + self.beta_sigma_sum
    }
}

/// A model's prediction recorded with an issued point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Prediction {
    /// Candidate index.
    pub u: usize,
    /// μ^u_{t−1}(x).
    pub mu: f64,
    /// β^u_t σ^u_{t−1}(x).
    pub beta_sigma: f64,
}

/// A suggestion whose observation has not been absorbed yet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Issued {
    /// Encoded point to be evaluated.
    pub x: Vec<f64>,
    /// Iteration t.
    pub t: usize,
    /// The optimistic model u_t (enters S^{u_t}).
    pub chosen: Prediction,
    /// The pessimistic model v_t of HE-StableOpt (enters Ŝ^{v_t}).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pessimistic: Option<Prediction>,
}

/// Elimination state carried between calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct EliminationState {
    /// Surviving candidates U_t.
    pub alive: Vec<bool>,
    /// Iteration at which each candidate was eliminated.
    pub eliminated_at: Vec<Option<usize>>,
    /// S^u.
    pub s: Vec<Ledger>,
    /// Ŝ^u (HE-StableOpt).
    pub s_hat: Vec<Ledger>,
    /// Issued, not yet observed points.
    pub open: Vec<Issued>,
    /// Observations already absorbed.
    pub processed: usize,
    /// Cached information gains.
    pub info_gain: InfoGainCache,
    /// HE-StableOpt: the robust point x_t of the last suggestion and its model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub robust: Option<(Vec<f64>, usize)>,
}

impl EliminationState {
    /// Sizes the vectors for `n` candidates (a new study, or a changed block).
    pub fn ensure(&mut self, n: usize) {
        if self.alive.len() != n {
            *self = Self { alive: vec![true; n], eliminated_at: vec![None; n], ..Default::default() };
        }
        self.s.resize(n, Ledger::default());
        self.s_hat.resize(n, Ledger::default());
    }

    /// Indices of surviving candidates.
    pub fn survivors(&self) -> Vec<usize> {
        (0..self.alive.len()).filter(|&u| self.alive[u]).collect()
    }

    /// Absorbs observations that arrived since the last call: η into the sums, then the elimination tests.
    pub fn absorb(&mut self, ctx: &Context<'_>, set: &CandidateSet) {
        let n = ctx.data.n();
        self.processed = self.processed.min(n);
        for r in self.processed..n {
            let row = ctx.data.row(r);
            let Some(k) = self.open.iter().position(|o| close(&o.x, row)) else { continue };
            let issued = self.open.remove(k);
            let y = ctx.data.y[r];
            let xi = set.confidence.xi(issued.t);
            self.record(true, &issued.chosen, y, xi, issued.t);
            if let Some(p) = &issued.pessimistic {
                self.record(false, p, y, xi, issued.t);
            }
        }
        self.processed = n;
        let d = ctx.problem.space.dim().max(1);
        self.open.retain(|o| ctx.pending.chunks_exact(d).any(|p| close(&o.x, p)));
    }

    fn record(&mut self, optimistic: bool, p: &Prediction, y: f64, xi: f64, t: usize) {
        let Some(ledger) = (if optimistic { self.s.get_mut(p.u) } else { self.s_hat.get_mut(p.u) }) else {
            return;
        };
        ledger.eta_sum += y - p.mu;
        ledger.beta_sigma_sum += p.beta_sigma;
        ledger.count += 1;
        let rejects = ledger.rejects(xi);
        if rejects && self.alive[p.u] && self.alive.iter().filter(|a| **a).count() > 1 {
            self.alive[p.u] = false;
            self.eliminated_at[p.u] = Some(t);
        }
    }

    /// Status for the study resource: every candidate, whether it survives, when it was eliminated, its sums.
    pub fn describe(&self, names: &[String]) -> Value {
        let name = |u: usize| names.get(u).cloned().unwrap_or_else(|| format!("candidate-{u}"));
        let candidates: Vec<Value> = (0..self.alive.len())
            .map(|u| {
                json!({
                    "name": name(u),
                    "surviving": self.alive[u],
                    "eliminated_at_iteration": self.eliminated_at[u],
                    "selected": self.s[u].count,
                    "error_sum": self.s[u].eta_sum,
                    "beta_sigma_sum": self.s[u].beta_sigma_sum,
                })
            })
            .collect();
        let surviving: Vec<String> = self.survivors().into_iter().map(name).collect();
        json!({ "surviving_candidates": surviving, "candidates": candidates })
    }
}

fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-7)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_fires_only_beyond_the_confidence_slack() {
        let l = Ledger { eta_sum: 1.0, beta_sigma_sum: 0.5, count: 4 };
        // √(ξ·4) + 0.5 = 1 exactly at ξ = 1/16: the inequality is strict
        assert!(!l.rejects(1.0 / 16.0));
        assert!(l.rejects(0.06));
        assert!(!Ledger::default().rejects(0.0));
    }
}
