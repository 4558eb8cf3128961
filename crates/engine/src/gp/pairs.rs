//! Fast path of the likelihood for stationary kernels: the squared differences `D_q(i, j) = (x_iq − x_jq)²` of
//! every pair and dimension are computed once per fit, so each likelihood evaluation costs one contiguous
//! multiply-add per pair and dimension plus one `exp` per pair, and the gradient reuses the same arrays:
//! `∂k_ij/∂ln ℓ_q = −2σ² (dk₀/ds)(s_ij) D_q(i, j)/ℓ_q²`.

use faer::Mat;

use crate::kernel::{Kernel, KernelFamily, stationary};

/// Per component, the per-pair `(k₀, dk₀/ds)` of the last Gram evaluation.
pub(crate) type PairValues = Vec<(Vec<f64>, Vec<f64>)>;

/// Largest `pairs × dims` the cache may hold (≈ 240 MB of f64).
const MAX_ENTRIES: usize = 30_000_000;

/// Pairwise squared differences per component and dimension, pairs ordered column by column (j < i).
pub(crate) struct PairCache {
    n: usize,
    /// For each component, for each of its dimensions, one value per pair.
    diffs: Vec<Vec<Vec<f64>>>,
    families: Vec<KernelFamily>,
    n_params: Vec<usize>,
}

impl PairCache {
    /// The cache for `x` (`n × d`), or `None` for periodic kernels or when it would be too large.
    pub(crate) fn new(kernel: &Kernel, x: &[f64]) -> Option<Self> {
        let d = kernel.dim().max(1);
        let n = x.len() / d;
        let pairs = n * n.saturating_sub(1) / 2;
        let dims: usize = kernel.components().iter().map(|c| c.dims.len()).sum();
        if kernel.components().iter().any(|c| c.family == KernelFamily::Periodic) || pairs * dims > MAX_ENTRIES {
            return None;
        }
        let diffs = kernel
            .components()
            .iter()
            .map(|c| {
                c.dims
                    .iter()
                    .map(|&q| {
                        let mut v = Vec::with_capacity(pairs);
                        for j in 0..n {
                            let xj = x[j * d + q];
                            v.extend((j + 1..n).map(|i| (x[i * d + q] - xj).powi(2)));
                        }
                        v
                    })
                    .collect()
            })
            .collect();
        Some(Self {
            n,
            diffs,
            families: kernel.components().iter().map(|c| c.family).collect(),
            n_params: kernel.components().iter().map(|c| c.n_params()).collect(),
        })
    }

    /// Gram matrix (lower triangle and diagonal) plus per-pair `(k₀, dk₀/ds)` of each component.
    pub(crate) fn gram(&self, theta: &[f64]) -> (Mat<f64>, PairValues) {
        let n = self.n;
        let pairs = n * n.saturating_sub(1) / 2;
        let mut k = Mat::zeros(n, n);
        let mut per_comp = Vec::with_capacity(self.diffs.len());
        let mut off = 0;
        let mut s = vec![0.0; pairs];
        let mut prior = 0.0;
        for (c, diffs) in self.diffs.iter().enumerate() {
            let nd = diffs.len();
            let th = &theta[off..off + self.n_params[c]];
            off += self.n_params[c];
            let var = th[nd].exp();
            prior += var;
            s.iter_mut().for_each(|v| *v = 0.0);
            for (q, dq) in diffs.iter().enumerate() {
                let w = (-2.0 * th[q]).exp();
                for (sp, dp) in s.iter_mut().zip(dq) {
                    *sp += dp * w;
                }
            }
            let (k0, dk0): (Vec<f64>, Vec<f64>) = s.iter().map(|&sp| stationary(self.families[c], sp)).unzip();
            let mut p = 0;
            for j in 0..n {
                let col = k.col_mut(j);
                let col = col.try_as_col_major_mut().expect("owned matrices are column-major").as_slice_mut();
                for (kij, k0p) in col[j + 1..].iter_mut().zip(&k0[p..p + (n - j - 1)]) {
                    *kij += var * k0p;
                }
                p += n - j - 1;
            }
            per_comp.push((k0, dk0));
        }
        for i in 0..n {
            k[(i, i)] = prior;
        }
        (k, per_comp)
    }

    /// `Σ_ij W_ij ∂K_ij/∂θ` for symmetric `W` (lower triangle read), given the per-pair values of [`Self::gram`].
    pub(crate) fn contract(&self, theta: &[f64], w: &Mat<f64>, per_comp: &PairValues) -> Vec<f64> {
        let n = self.n;
        let pairs = n * n.saturating_sub(1) / 2;
        let mut wp = Vec::with_capacity(pairs);
        for j in 0..n {
            let col = w.col(j);
            let col = col.try_as_col_major().expect("owned matrices are column-major").as_slice();
            wp.extend(col[j + 1..].iter().map(|v| 2.0 * v));
        }
        let trace: f64 = (0..n).map(|i| w[(i, i)]).sum();
        let mut out = Vec::new();
        let mut off = 0;
        for (c, diffs) in self.diffs.iter().enumerate() {
            let nd = diffs.len();
            let th = &theta[off..off + self.n_params[c]];
            off += self.n_params[c];
            let var = th[nd].exp();
            let (k0, dk0) = &per_comp[c];
            let t: Vec<f64> = wp.iter().zip(dk0).map(|(a, b)| a * b).collect();
            for (q, dq) in diffs.iter().enumerate() {
                let dot: f64 = t.iter().zip(dq).map(|(a, b)| a * b).sum();
                out.push(-2.0 * var * (-2.0 * th[q]).exp() * dot);
            }
            let kdot: f64 = wp.iter().zip(k0).map(|(a, b)| a * b).sum();
            out.push(var * (kdot + trace));
        }
        out
    }
}
