//! TRUVAR's bookkeeping (Bogunovic et al., NIPS 2016): the confidence-set updates of Algorithm 2 (Eqs. 5–7) and
//! the epoch rule of Algorithm 1, line 5. Pure functions over posterior means and standard deviations of the
//! domain points, so they are tested on their own.

use serde::{Deserialize, Serialize};

/// The current epoch: its index i (from 1), target η_(i) and start time t_(i).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Epoch {
    /// i.
    pub index: usize,
    /// η_(i).
    pub eta: f64,
    /// t_(i), the time step at which the epoch started (1 for the first).
    pub start: usize,
}

/// Parameters of the epoch schedule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Schedule {
    /// a in β_(i) = a·ln(|D|·t_(i)²) (Sec. 4: 0.5 for BO, 1 for LSE).
    pub a: f64,
    /// |D|.
    pub domain_size: usize,
    /// Shrink factor r ∈ (0, 1).
    pub shrink: f64,
    /// δ̄ ≥ 0.
    pub delta_bar: f64,
}

/// Most epochs one update may advance (with η_(1) = 0, pure variance reduction, the rule could loop forever).
const MAX_EPOCH_STEPS: usize = 64;

impl Schedule {
    /// β_(i) = a·ln(|D|·t_(i)²) (floored at 0 for |D| = t_(i) = 1).
    pub fn beta(&self, epoch: &Epoch) -> f64 {
        (self.a * ((self.domain_size.max(1) as f64) * (epoch.start.max(1) as f64).powi(2)).ln()).max(0.0)
    }

    /// Algorithm 1, line 5: while max_{x∈M_t} β_(i)^½ σ_t(x) ≤ (1 + δ̄) η_(i), start epoch i+1 at time t+1 with
    /// η_(i+1) = r·η_(i). `max_sd` is the largest σ_t over M_t (`None` when M_t is empty: nothing to advance on).
    /// Returns the number of epochs advanced.
    pub fn advance(&self, epoch: &mut Epoch, max_sd: Option<f64>, t: usize) -> usize {
        let Some(sd) = max_sd else { return 0 };
        let mut steps = 0;
        while steps < MAX_EPOCH_STEPS && self.beta(epoch).sqrt() * sd <= (1.0 + self.delta_bar) * epoch.eta {
            epoch.index += 1;
            epoch.eta *= self.shrink;
            epoch.start = t + 1;
            steps += 1;
        }
        steps
    }
}

/// Eq. (5), BO: the points of `base` whose upper bound reaches the best lower bound within `base`.
pub fn potential_maximizers(base: &[usize], mean: &[f64], sd: &[f64], beta_sqrt: f64) -> Vec<usize> {
    let best_lower = base.iter().map(|&i| mean[i] - beta_sqrt * sd[i]).fold(f64::NEG_INFINITY, f64::max);
    base.iter().copied().filter(|&i| mean[i] + beta_sqrt * sd[i] >= best_lower).collect()
}

/// Eqs. (6)–(7), LSE: splits `base` into the still ambiguous points M_t, those now above h (ℓ > h) and those now
/// below h (u < h).
pub fn split_level_set(
    base: &[usize],
    mean: &[f64],
    sd: &[f64],
    beta_sqrt: f64,
    h: f64,
) -> (Vec<usize>, Vec<usize>, Vec<usize>) {
    let (mut m, mut above, mut below) = (Vec::new(), Vec::new(), Vec::new());
    for &i in base {
        let (u, l) = (mean[i] + beta_sqrt * sd[i], mean[i] - beta_sqrt * sd[i]);
        if l > h {
            above.push(i);
        } else if u < h {
            below.push(i);
        } else {
            m.push(i);
        }
    }
    (m, above, below)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beta_follows_the_epoch_start() {
        let s = Schedule { a: 0.5, domain_size: 2500, shrink: 0.1, delta_bar: 0.0 };
        let e = Epoch { index: 1, eta: 1.0, start: 1 };
        assert!((s.beta(&e) - 0.5 * 2500f64.ln()).abs() < 1e-12);
        let e = Epoch { index: 2, eta: 0.1, start: 7 };
        assert!((s.beta(&e) - 0.5 * (2500.0 * 49.0f64).ln()).abs() < 1e-12);
    }

    #[test]
    fn an_epoch_ends_when_every_confidence_width_is_below_the_target() {
        let s = Schedule { a: 1.0, domain_size: 100, shrink: 0.1, delta_bar: 0.0 };
        let mut e = Epoch { index: 1, eta: 1.0, start: 1 };
        // β^½ = √ln 100 ≈ 2.146: σ = 0.5 gives a width 1.07 > η = 1, so the epoch goes on.
        assert_eq!(s.advance(&mut e, Some(0.5), 5), 0);
        assert_eq!(e, Epoch { index: 1, eta: 1.0, start: 1 });
        // σ = 0.4 gives 0.86 ≤ 1: epoch 2 starts at t + 1 = 6 with η = 0.1; its β = ln(100·36) makes the width
        // 0.4·2.86 > 0.1, so it stops there.
        assert_eq!(s.advance(&mut e, Some(0.4), 5), 1);
        assert_eq!(e.index, 2);
        assert!((e.eta - 0.1).abs() < 1e-15);
        assert_eq!(e.start, 6);
        // δ̄ relaxes the test by a factor 1 + δ̄.
        let relaxed = Schedule { delta_bar: 0.5, ..s };
        let mut e = Epoch { index: 1, eta: 1.0, start: 1 };
        assert_eq!(relaxed.advance(&mut e, Some(0.6), 5), 1);
        // An empty M never advances; σ = 0 advances at most MAX_EPOCH_STEPS times.
        assert_eq!(s.advance(&mut e, None, 5), 0);
        assert_eq!(s.advance(&mut e, Some(0.0), 5), MAX_EPOCH_STEPS);
    }

    #[test]
    fn potential_maximizers_drop_points_whose_upper_bound_is_below_the_best_lower_bound() {
        let mean = [0.0, 1.0, 0.5, 3.0];
        let sd = [0.1, 0.1, 1.0, 1.0];
        // ℓ = μ − 2σ: best lower bound 1.0 (point 3) ; u = μ + 2σ: 0.2, 1.2, 2.5, 5.0.
        assert_eq!(potential_maximizers(&[0, 1, 2, 3], &mean, &sd, 2.0), vec![1, 2, 3]);
        // Only points of the base are considered.
        assert_eq!(potential_maximizers(&[0, 1], &mean, &sd, 2.0), vec![1]);
    }

    #[test]
    fn level_set_split_uses_both_bounds() {
        let mean = [0.0, 2.0, 1.0];
        let sd = [0.1, 0.1, 0.5];
        let (m, above, below) = split_level_set(&[0, 1, 2], &mean, &sd, 3.0, 1.0);
        assert_eq!((m, above, below), (vec![2], vec![1], vec![0]));
    }
}
