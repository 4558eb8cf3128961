//! Worst-case expectation over a total-variation ball around an empirical distribution, solved exactly by sorting.
//!
//! DRBO-KDE (Huang et al., AAAI 2024, Prop. 2 and Eq. 6) maximises over x
//! `α(x) = max_{(α,β) ∈ S} −β − δα + (1/M) Σ_i min(u_i + β, α)`, `S = {α ≥ 0, β ∈ ℝ, α + β ≥ −u_min}`,
//! with `u_i = ucb(x, ĉ_i)` at M samples of the KDE and `u_min = inf_c ucb(x, c)` over the context box. The paper
//! (and the authors' code, with CVXPY) solves this 2-D convex problem numerically for every x. It has a closed form:
//!
//! **Derivation.** Put `w = α − β`. Then `min(u_i + β, α) = u_i + β − (u_i − w)₊`, so the objective is
//! `ū − δα − (1/M) Σ_i (u_i − w)₊` (ū the sample mean), and the constraint `α + β ≥ −u_min` reads
//! `α ≥ (w − u_min)/2`. The objective decreases in α (δ ≥ 0), so `α = max(0, (w − u_min)/2)`, leaving one variable:
//! `G(w) = ū − (δ/2)(w − u_min)₊ − (1/M) Σ_i (u_i − w)₊`.
//! For `w ≤ u_min ≤ min_i u_i`, `G(w) = w`, increasing; for `w ≥ u_min`, G is concave and piecewise linear with
//! slope `−δ/2 + #{u_i > w}/M`, so the maximiser is the upper `δ/2`-quantile of the u_i (or `u_min` when
//! `δ/2 ≥ 1`). With `u_(1) ≥ … ≥ u_(M)` and `k = δM/2`, the value is
//! `α(x) = (1/M)[Σ_{i > ⌈k⌉} u_(i) + (⌈k⌉ − k) u_(⌈k⌉)] + (δ/2) u_min`:
//! the worst case removes mass δ/2 (TV ball of radius δ in the paper's `∫|q − p|` convention) from the largest
//! values and puts it on the infimum. This is the primal solution q*, so by Danskin's theorem
//! `∇α(x) = Σ_i q*_i ∇u_i + (δ/2) ∇u_min` wherever the sort order has no ties (a subgradient otherwise).
//! Cost O(M log M) per x instead of an iterative solver.
//!
//! `u_min` must not exceed the sample values (the infimum over the box includes them); callers approximate the
//! infimum by a finite set of contexts, and [`worst_case_tv`] takes the smaller of that and the sample minimum.

/// The worst case and its weights: `value = Σ_i weights[i]·u_i + min_weight·u_min`.
#[derive(Debug, Clone, PartialEq)]
pub struct TvWorstCase {
    /// Worst-case expectation.
    pub value: f64,
    /// Weight of each sample (the worst-case distribution on the samples).
    pub weights: Vec<f64>,
    /// Mass moved to the infimum (`min(δ/2, 1)`).
    pub min_weight: f64,
    /// The infimum used: `min(u_min, min_i u_i)`.
    pub u_min: f64,
}

/// `min_{q: ∫|q − p̂| ≤ δ} E_q[u]` for the empirical distribution of `u` (non-empty), exactly (module docs).
pub fn worst_case_tv(u: &[f64], u_min: f64, delta: f64) -> TvWorstCase {
    let m = u.len();
    let u_min = u.iter().copied().fold(u_min, f64::min);
    let moved = (0.5 * delta.max(0.0)).min(1.0);
    let mut weights = vec![1.0 / m as f64; m];
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| u[b].total_cmp(&u[a]));
    // Remove mass `moved` from the largest values, 1/M per sample, the last one partially.
    let mut left = moved;
    for &i in &order {
        if left <= 0.0 {
            break;
        }
        let take = left.min(weights[i]);
        weights[i] -= take;
        left -= take;
    }
    let value = weights.iter().zip(u).map(|(w, v)| w * v).sum::<f64>() + moved * u_min;
    TvWorstCase { value, weights, min_weight: moved, u_min }
}

/// The dual objective of Prop. 2 at `(α, β)` for samples `u` (for checking [`worst_case_tv`]).
pub fn tv_dual_objective(u: &[f64], delta: f64, alpha: f64, beta: f64) -> f64 {
    -beta - delta * alpha + u.iter().map(|v| (v + beta).min(alpha)).sum::<f64>() / u.len() as f64
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng, rngs::StdRng};

    use super::*;

    /// The dual of Prop. 2 maximised over a fine grid of (α, β) ∈ S, refined twice around the best cell.
    fn brute_force_dual(u: &[f64], u_min: f64, delta: f64) -> f64 {
        let lo = u.iter().copied().fold(u_min, f64::min);
        let hi = u.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let span = (hi - lo).max(1e-9);
        // β ranges over −hi … −lo + span; α over 0 … 2·span + (hi − lo).
        let (mut b0, mut b1) = (-hi - span, -lo + span);
        let (mut a0, mut a1) = (0.0, 3.0 * span);
        let mut best = f64::NEG_INFINITY;
        for _ in 0..4 {
            let g = 400;
            let (mut ba, mut bb) = (a0, b0);
            for i in 0..=g {
                let a = a0 + (a1 - a0) * i as f64 / g as f64;
                for j in 0..=g {
                    let b = b0 + (b1 - b0) * j as f64 / g as f64;
                    if a + b < -lo - 1e-15 {
                        continue;
                    }
                    let v = tv_dual_objective(u, delta, a, b);
                    if v > best {
                        (best, ba, bb) = (v, a, b);
                    }
                }
            }
            let (da, db) = ((a1 - a0) / g as f64 * 4.0, (b1 - b0) / g as f64 * 4.0);
            (a0, a1, b0, b1) = ((ba - da).max(0.0), ba + da, bb - db, bb + db);
        }
        best
    }

    #[test]
    fn sorted_solution_equals_brute_force_dual_on_random_sample_sets() {
        let mut rng = StdRng::seed_from_u64(42);
        for case in 0..12 {
            let m = [5, 17, 40][case % 3];
            let u: Vec<f64> = (0..m).map(|_| rng.random::<f64>() * 4.0 - 1.0).collect();
            let u_min = u.iter().copied().fold(f64::INFINITY, f64::min) - rng.random::<f64>();
            let delta = [0.05, 0.3, 0.77, 1.5][case % 4];
            let exact = worst_case_tv(&u, u_min, delta);
            let brute = brute_force_dual(&u, u_min, delta);
            // The grid only approaches the supremum from below.
            assert!(exact.value >= brute - 1e-9, "case {case}: {} < {brute}", exact.value);
            assert!(exact.value - brute < 1e-4, "case {case}: exact {} vs grid {brute}", exact.value);
            // And it is attained: the dual at the closed-form (α, β) equals it.
            let w = {
                let mut s = u.clone();
                s.sort_by(|a, b| b.total_cmp(a));
                let k = (delta * m as f64 / 2.0).ceil() as usize;
                if delta / 2.0 >= 1.0 { exact.u_min } else { s[k.clamp(1, m) - 1] }
            };
            let alpha = ((w - exact.u_min) / 2.0).max(0.0);
            let at = tv_dual_objective(&u, delta, alpha, alpha - w);
            assert!((at - exact.value).abs() < 1e-12, "case {case}: dual at optimum {at} vs {}", exact.value);
        }
    }

    #[test]
    fn zero_radius_is_the_plain_expectation() {
        let u = [3.0, -1.0, 2.5, 0.25];
        let r = worst_case_tv(&u, -5.0, 0.0);
        assert!((r.value - 4.75 / 4.0).abs() < 1e-15);
        assert!(r.weights.iter().all(|w| (w - 0.25).abs() < 1e-15));
    }

    #[test]
    fn large_radius_approaches_the_worst_case() {
        let u = [3.0, -1.0, 2.5, 0.25];
        assert_eq!(worst_case_tv(&u, -2.0, 2.0).value, -2.0);
        assert_eq!(worst_case_tv(&u, -2.0, 10.0).value, -2.0);
        let near = worst_case_tv(&u, -2.0, 1.98).value;
        assert!(near > -2.0 && near < -1.9, "{near}");
        // Monotone in δ.
        let mut last = f64::INFINITY;
        for i in 0..=40 {
            let v = worst_case_tv(&u, -2.0, i as f64 * 0.05).value;
            assert!(v <= last + 1e-15);
            last = v;
        }
    }

    #[test]
    fn infimum_is_capped_by_the_sample_minimum() {
        let u = [1.0, 2.0];
        let r = worst_case_tv(&u, 5.0, 1.0);
        assert_eq!(r.u_min, 1.0);
        // Half the mass moves from 2.0 to 1.0.
        assert!((r.value - 1.0).abs() < 1e-15);
    }

    #[test]
    fn weights_form_the_primal_solution() {
        let u = [0.4, 0.9, 0.1, 0.7, 0.3];
        let r = worst_case_tv(&u, 0.0, 0.5); // moves 0.25 = one and a quarter samples
        let total: f64 = r.weights.iter().sum::<f64>() + r.min_weight;
        assert!((total - 1.0).abs() < 1e-15);
        assert_eq!(r.weights[1], 0.0);
        assert!((r.weights[3] - 0.15).abs() < 1e-15);
        let value = r.weights.iter().zip(&u).map(|(w, v)| w * v).sum::<f64>() + r.min_weight * r.u_min;
        assert!((value - r.value).abs() < 1e-15);
    }
}
