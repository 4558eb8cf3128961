//! One-step look-ahead of the posterior variance on a set of points, through the Cholesky factor (TRUVAR,
//! Bogunovic et al., NIPS 2016, App. B, Eqs. 18–20):
//! `σ²_{t−1|x}(M) = σ²_{t−1}(M) − Cov_{t−1}(M, x)² / (σ²(x) + σ²_{t−1}(x))`, with
//! `Cov_{t−1}(M, x) = k(M, x) − (L⁻¹k_{t−1}(M))ᵀ (L⁻¹k_{t−1}(x))`. The solve `L⁻¹k_{t−1}(x)` is O(t²) per candidate;
//! the products with the |M| columns are done for a block of candidates at once.
//!
//! Everything is in the GP's standardised units (raw variances divided by the output scale²), the units of its
//! Cholesky factor; noise variances passed in must be standardised the same way.
//!
//! The prior part `k(M, x)` dominates the cost when M and the candidates are a few thousand domain points (one
//! kernel evaluation, an `exp`, per pair and step). [`PriorGram`] holds `k(D, D)` of the whole domain once per
//! hyperparameter setting and [`Lookahead::cross_indexed`] gathers from it: the gathered entries are the same
//! kernel evaluations on the same arguments, so the look-ahead is bitwise unchanged.

use faer::Mat;

use crate::gp::Gp;
use crate::kernel::{Kernel, Prepared, Scaled};

/// The posterior on the points M, ready for look-aheads.
#[derive(Debug, Clone)]
pub struct Lookahead<'a> {
    gp: &'a Gp,
    m_points: Vec<f64>,
    /// `L⁻¹ k_{t−1}(M)`, n × |M|.
    a: Mat<f64>,
    /// σ²_{t−1}(M), standardised.
    pub var_m: Vec<f64>,
    /// The domain's prior Gram and the positions of the points M among its rows, when [`Lookahead::with_prior`]
    /// was called.
    prior: Option<(&'a PriorGram, Vec<usize>)>,
}

/// Columns of the prior covariance `k(S, D)` between a set S of domain points (a superset of the points M of the
/// look-aheads it serves) and the domain D, for one kernel and hyperparameter vector, evaluated on demand: entry
/// (i, j) is the evaluation [`Lookahead::cross`] makes for the M point `D_{S_i}` and the candidate `D_j`.
pub struct PriorGram {
    kernel: Kernel,
    theta: Vec<f64>,
    domain: Vec<f64>,
    prepared: Prepared,
    /// S scaled for `prepared`.
    scaled: Scaled,
    /// Position of every domain point in S (`usize::MAX`: not in S).
    pos: Vec<usize>,
    cols: Vec<Option<Box<[f64]>>>,
}

impl std::fmt::Debug for PriorGram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cols = self.cols.iter().filter(|r| r.is_some()).count();
        f.debug_struct("PriorGram").field("rows", &self.scaled.n()).field("columns", &cols).finish_non_exhaustive()
    }
}

impl PriorGram {
    /// Largest domain whose Gram is kept (at most 3000² entries, 72 MB).
    pub const MAX_POINTS: usize = 3000;

    /// An empty Gram for the GP's kernel and hyperparameters on the row-major points `domain`, rows `s` (indices
    /// into the domain); `None` when the domain has more than [`PriorGram::MAX_POINTS`] points.
    pub fn new(gp: &Gp, domain: &[f64], s: &[usize]) -> Option<Self> {
        let d = gp.d().max(1);
        let n = domain.len() / d;
        if n > Self::MAX_POINTS {
            return None;
        }
        let theta = gp.hyperparameters().theta.clone();
        let prepared = gp.kernel().prepare(&theta);
        let scaled =
            prepared.scale(&s.iter().flat_map(|&i| domain[i * d..(i + 1) * d].iter().copied()).collect::<Vec<_>>());
        let mut pos = vec![usize::MAX; n];
        s.iter().enumerate().for_each(|(p, &i)| pos[i] = p);
        Some(Self {
            kernel: gp.kernel().clone(),
            theta,
            domain: domain.to_vec(),
            prepared,
            scaled,
            pos,
            cols: vec![None; n],
        })
    }

    /// Whether this Gram is for `gp`'s kernel and hyperparameters (bitwise) and this domain, and its rows hold
    /// the points `m_idx`.
    pub fn serves(&self, gp: &Gp, domain: &[f64], m_idx: &[usize]) -> bool {
        let theta = &gp.hyperparameters().theta;
        *gp.kernel() == self.kernel
            && theta.len() == self.theta.len()
            && theta.iter().zip(&self.theta).all(|(a, b)| a.to_bits() == b.to_bits())
            && domain.len() == self.domain.len()
            && domain.iter().zip(&self.domain).all(|(a, b)| a.to_bits() == b.to_bits())
            && m_idx.iter().all(|&i| self.pos.get(i).is_some_and(|&p| p != usize::MAX))
    }

    /// The domain indices of the rows S.
    pub fn rows(&self) -> impl Iterator<Item = usize> + '_ {
        self.pos.iter().enumerate().filter(|(_, p)| **p != usize::MAX).map(|(i, _)| i)
    }

    /// Evaluates the columns `idx` not evaluated yet.
    pub fn ensure_columns(&mut self, idx: &[usize]) {
        let d = self.domain.len() / self.cols.len().max(1);
        for &j in idx {
            if self.cols[j].is_none() {
                let zj = self.prepared.scale(&self.domain[j * d..(j + 1) * d]);
                let k = self.prepared.cross(&self.scaled, &zj);
                self.cols[j] = Some(k.col_as_slice(0).into());
            }
        }
    }
}

impl<'a> Lookahead<'a> {
    /// Prepares the look-ahead on the row-major points `m_points` (full encoded).
    pub fn new(gp: &'a Gp, m_points: &[f64]) -> Self {
        let d = gp.d().max(1);
        let theta = &gp.hyperparameters().theta;
        let pv = gp.kernel().prior_variance(theta);
        let m = m_points.len() / d;
        let mut a = gp.kernel().cross(theta, gp.x(), m_points);
        let var_m = if gp.n() == 0 {
            vec![pv; m]
        } else {
            gp.cholesky().solve_l_in_place(a.as_mut());
            (0..m).map(|j| (pv - a.col_as_slice(j).iter().map(|v| v * v).sum::<f64>()).max(0.0)).collect()
        };
        Self { gp, m_points: m_points.to_vec(), a, var_m, prior: None }
    }

    /// Uses `gram` for `k(M, x)` ([`PriorGram::serves`] must hold); `m_idx` are the domain indices of the points
    /// M this look-ahead was built on.
    pub fn with_prior(mut self, gram: &'a PriorGram, m_idx: &[usize]) -> Self {
        debug_assert_eq!(m_idx.len(), self.var_m.len());
        self.prior = Some((gram, m_idx.iter().map(|&i| gram.pos[i]).collect()));
        self
    }

    /// Number of points in M.
    pub fn len(&self) -> usize {
        self.var_m.len()
    }

    /// True when M is empty.
    pub fn is_empty(&self) -> bool {
        self.var_m.is_empty()
    }

    /// For candidates `xs` (row-major, full encoded): their posterior variances σ²_{t−1}(x) and the
    /// covariances `Cov_{t−1}(M, x)` as an |M| × |xs| matrix (standardised units).
    pub fn cross(&self, xs: &[f64]) -> (Vec<f64>, Mat<f64>) {
        let theta = &self.gp.hyperparameters().theta;
        self.finish_cross(xs, self.gp.kernel().cross(theta, &self.m_points, xs))
    }

    /// Eq. (3) without cost for the domain points `idx` (`xs` their rows) as candidates, each observed with every
    /// (standardised) noise variance of `noises`: returns σ²_{t−1}(x) per candidate and the reductions, candidate
    /// by candidate, `noises.len()` each. The same numbers as [`truncated_reduction`] on the columns of
    /// [`Lookahead::cross`], bitwise: with a prior Gram ([`Lookahead::with_prior`], whose columns `idx` must have
    /// been evaluated) `k(M, x)` is gathered instead of evaluated, and each column `k(M, x) − (L⁻¹k(M))ᵀ(L⁻¹k(x))`
    /// is formed in a scratch vector instead of a matrix.
    pub fn truncated_reductions(
        &self,
        xs: &[f64],
        idx: &[usize],
        noises: &[f64],
        beta: f64,
        eta2: f64,
    ) -> (Vec<f64>, Vec<f64>) {
        let Some((g, pos)) = &self.prior else {
            let (var_x, cov) = self.cross(xs);
            let r = (0..idx.len())
                .flat_map(|k| {
                    let col = cov.col_as_slice(k);
                    let v = var_x[k];
                    noises.iter().map(move |&noise| truncated_reduction(&self.var_m, col, v, noise, beta, eta2))
                })
                .collect();
            return (var_x, r);
        };
        let (var_x, p) = self.posterior_part(xs);
        let m = pos.len();
        let mut r = vec![0.0; idx.len() * noises.len()];
        // Candidates in blocks of BLOCK, their columns interleaved (`cols[i·BLOCK + b]`), so that the BLOCK sums
        // (each over i in order, as in `truncated_reduction`) run side by side.
        let mut cols = vec![0.0; m * BLOCK];
        for (blk, chunk) in idx.chunks(BLOCK).enumerate() {
            for (b, &j) in chunk.iter().enumerate() {
                let k = blk * BLOCK + b;
                let prior = g.cols[j].as_deref().expect("PriorGram column evaluated");
                match &p {
                    Some(p) => {
                        for ((i, &q), pk) in pos.iter().enumerate().zip(p.col_as_slice(k)) {
                            cols[i * BLOCK + b] = prior[q] - pk;
                        }
                    }
                    None => pos.iter().enumerate().for_each(|(i, &q)| cols[i * BLOCK + b] = prior[q]),
                }
            }
            for (l, &noise) in noises.iter().enumerate() {
                let mut denom = [1.0; BLOCK];
                for (b, dn) in denom.iter_mut().enumerate().take(chunk.len()) {
                    *dn = noise + var_x[blk * BLOCK + b];
                }
                let sums = block_reductions(&self.var_m, &cols, &denom, beta, eta2);
                for b in 0..chunk.len() {
                    let k = blk * BLOCK + b;
                    r[k * noises.len() + l] = if denom[b] <= 0.0 { 0.0 } else { sums[b] };
                }
            }
        }
        (var_x, r)
    }

    /// σ²_{t−1}(x) of the candidates `xs` and `(L⁻¹k_{t−1}(M))ᵀ (L⁻¹k_{t−1}(x))` (`None` without data).
    fn posterior_part(&self, xs: &[f64]) -> (Vec<f64>, Option<Mat<f64>>) {
        let gp = self.gp;
        let d = gp.d().max(1);
        let theta = &gp.hyperparameters().theta;
        let pv = gp.kernel().prior_variance(theta);
        let c = xs.len() / d;
        if gp.n() == 0 {
            return (vec![pv; c], None);
        }
        let mut b = gp.kernel().cross(theta, gp.x(), xs);
        gp.cholesky().solve_l_in_place(b.as_mut());
        let var_x = (0..c).map(|j| (pv - b.col_as_slice(j).iter().map(|v| v * v).sum::<f64>()).max(0.0)).collect();
        (var_x, Some(self.a.transpose() * &b))
    }

    /// Variances and covariances from the prior cross-covariance `cov = k(M, xs)`.
    fn finish_cross(&self, xs: &[f64], mut cov: Mat<f64>) -> (Vec<f64>, Mat<f64>) {
        let (var_x, p) = self.posterior_part(xs);
        if let Some(p) = p {
            cov -= p;
        }
        (var_x, cov)
    }

    /// σ²_{t−1|x}(M) for one candidate: `var_x` its variance, `cov_x` its column of [`Lookahead::cross`], `noise`
    /// the (standardised) noise variance it would be observed with.
    pub fn variance_after(&self, var_x: f64, cov_x: &[f64], noise: f64) -> Vec<f64> {
        let denom = noise + var_x;
        self.var_m.iter().zip(cov_x).map(|(v, c)| if denom > 0.0 { (v - c * c / denom).max(0.0) } else { *v }).collect()
    }
}

/// Candidates per block of [`Lookahead::truncated_reductions`].
const BLOCK: usize = 8;

/// [`truncated_reduction`] for BLOCK candidates at once: `cols[i·BLOCK + b]` is `Cov(M_i, x_b)`, `denom[b]` the
/// candidate's `noise + σ²(x_b)` (> 0; entries of candidates with `denom ≤ 0` are to be discarded). Every sum runs
/// over i in order with the same terms, so each equals `truncated_reduction` bitwise.
fn block_reductions(var_m: &[f64], cols: &[f64], denom: &[f64; BLOCK], beta: f64, eta2: f64) -> [f64; BLOCK] {
    let mut acc = [0.0; BLOCK];
    for (v, c) in var_m.iter().zip(cols.chunks_exact(BLOCK)) {
        let before = (beta * v).max(eta2);
        if before <= eta2 {
            // The term is 0 for every candidate; adding +0 to a sum of non-negative terms leaves it unchanged
            // (+0 + +0 = +0), so it can be skipped.
            continue;
        }
        for b in 0..BLOCK {
            acc[b] += before - (beta * (v - c[b] * c[b] / denom[b]).max(0.0)).max(eta2);
        }
    }
    acc
}

/// Cost-free truncated variance reduction of Eq. (3):
/// `Σ_{x̄∈M} max{β σ²_{t−1}(x̄), η²} − Σ_{x̄∈M} max{β σ²_{t−1|x}(x̄), η²}`.
pub fn truncated_reduction(var_m: &[f64], cov_x: &[f64], var_x: f64, noise: f64, beta: f64, eta2: f64) -> f64 {
    let denom = noise + var_x;
    if denom <= 0.0 {
        return 0.0;
    }
    var_m
        .iter()
        .zip(cov_x)
        .map(|(v, c)| {
            let before = (beta * v).max(eta2);
            if before <= eta2 {
                return 0.0;
            }
            before - (beta * (v - c * c / denom).max(0.0)).max(eta2)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gp::{Data, GpConfig, Hyperparameters, NoiseModel};
    use crate::kernel::{Kernel, KernelFamily};
    use rand::{Rng, SeedableRng, rngs::StdRng};

    fn gp(n: usize, noise: Option<Vec<f64>>) -> Gp {
        let mut rng = StdRng::seed_from_u64(3);
        let x: Vec<f64> = (0..2 * n).map(|_| rng.random()).collect();
        let y: Vec<f64> = x.chunks(2).map(|p| (6.0 * p[0]).sin() + p[1] * p[1]).collect();
        let mut config = GpConfig::default_for(2);
        config.kernel = Kernel::ard(KernelFamily::Matern52, 2);
        config.noise = NoiseModel::Fixed(1e-3);
        let hypers = Hyperparameters { theta: vec![0.2f64.ln(), 0.3f64.ln(), 0.0], noise_variance: 0.0, mean: 0.0 };
        Gp::new(&Data { d: 2, x, y, noise_var: noise }, &config, hypers).unwrap()
    }

    /// Look-ahead variance = variance of the GP refitted with the extra point (App. B), to 1e-9 relative.
    #[test]
    fn lookahead_variance_equals_the_refitted_posterior() {
        for (n, noise) in [(0, None), (12, None), (12, Some((0..12).map(|i| 0.01 * i as f64).collect()))] {
            let g = gp(n, noise);
            let s2 = g.standardizer().scale.powi(2);
            let m: Vec<f64> = (0..40).flat_map(|i| [(i as f64 * 0.37) % 1.0, (i as f64 * 0.61) % 1.0]).collect();
            let look = Lookahead::new(&g, &m);
            let xs = [0.3, 0.7, 0.9, 0.1];
            let (var_x, cov) = look.cross(&xs);
            for (k, x) in xs.chunks(2).enumerate() {
                let known = 0.02;
                let noise_std = g.hyperparameters().noise_variance + known / s2;
                let after = look.variance_after(var_x[k], cov.col_as_slice(k), noise_std);
                let mut refit = g.clone();
                refit.condition(x, 0.5, Some(known)).unwrap();
                let (_, expect) = refit.posterior_batch(&m);
                for (a, e) in after.iter().zip(&expect) {
                    let a_raw = a * s2;
                    assert!((a_raw - e).abs() <= 1e-9 * e.abs().max(1e-12), "n={n}: {a_raw} vs {e}");
                }
                let (_, before) = g.posterior_batch(&m);
                for (v, b) in look.var_m.iter().zip(&before) {
                    assert!((v * s2 - b).abs() <= 1e-9 * b.abs().max(1e-12));
                }
            }
        }
    }

    /// The blocked, Gram-backed reductions are bitwise those of `truncated_reduction` on `cross`'s columns.
    #[test]
    fn gram_backed_reductions_equal_the_direct_ones_bitwise() {
        let domain: Vec<f64> = (0..150).flat_map(|i| [(i as f64 * 0.137) % 1.0, (i as f64 * 0.291) % 1.0]).collect();
        let rows_of = |idx: &[usize]| idx.iter().flat_map(|&i| [domain[2 * i], domain[2 * i + 1]]).collect::<Vec<_>>();
        for (n, noise) in [(0, None), (12, None), (12, Some((0..12).map(|i| 0.01 * i as f64).collect()))] {
            let g = gp(n, noise);
            // M: every third point; candidates: 37 points (not a multiple of the block), in a scrambled order.
            let m_idx: Vec<usize> = (0..150).step_by(3).collect();
            let cand: Vec<usize> = (0..37).map(|k| (k * 53 + 7) % 150).collect();
            let noises = [0.0, 1e-3, 0.05];
            let (beta, eta2) = (3.0, 0.2);
            let mut gram = PriorGram::new(&g, &domain, &(0..150).step_by(3).chain([1, 2]).collect::<Vec<_>>()).unwrap();
            assert!(gram.serves(&g, &domain, &m_idx));
            gram.ensure_columns(&cand);
            let look = Lookahead::new(&g, &rows_of(&m_idx));
            let (var_x, cov) = look.cross(&rows_of(&cand));
            let fast = Lookahead::new(&g, &rows_of(&m_idx)).with_prior(&gram, &m_idx);
            let (var_fast, r_fast) = fast.truncated_reductions(&rows_of(&cand), &cand, &noises, beta, eta2);
            let (var_plain, r_plain) =
                Lookahead::new(&g, &rows_of(&m_idx)).truncated_reductions(&rows_of(&cand), &cand, &noises, beta, eta2);
            for k in 0..cand.len() {
                assert_eq!(var_fast[k].to_bits(), var_x[k].to_bits());
                assert_eq!(var_plain[k].to_bits(), var_x[k].to_bits());
                for (l, &nz) in noises.iter().enumerate() {
                    let direct = truncated_reduction(&look.var_m, cov.col_as_slice(k), var_x[k], nz, beta, eta2);
                    assert!(direct > 0.0 || n == 12, "the test should exercise non-zero reductions");
                    assert_eq!(r_fast[k * 3 + l].to_bits(), direct.to_bits(), "n={n} k={k} l={l}");
                    assert_eq!(r_plain[k * 3 + l].to_bits(), direct.to_bits());
                }
            }
        }
    }

    #[test]
    fn truncation_ignores_points_already_below_the_target() {
        // Two points in M: one at variance 1 (β σ² = 2 > η² = 0.5), one at 0.1 (β σ² = 0.2 < η²).
        let var_m = [1.0, 0.1];
        let cov = [0.9, 0.3];
        let r = truncated_reduction(&var_m, &cov, 1.0, 0.0, 2.0, 0.5);
        let after0 = (2.0f64 * (1.0 - 0.81)).max(0.5);
        assert!((r - (2.0 - after0)).abs() < 1e-12);
        // A target above every β σ² leaves nothing to reduce.
        assert_eq!(truncated_reduction(&var_m, &cov, 1.0, 0.0, 2.0, 5.0), 0.0);
    }
}
