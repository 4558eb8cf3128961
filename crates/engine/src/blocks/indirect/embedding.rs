//! How the aggregate g(a) = E[f(X) | A = a] at one query is written as a weighted sum `Σ_i w_i f(p_i)`
//! (a [`Representer`]), for the two ways an indirect study knows its conditional:
//!
//! - **pairs** (paper §2, the empirical conditional-mean-embedding estimator): with N pairs (x_j, a_j),
//!   `w(a) = (L_aa + NλI)⁻¹ ℓ(a, a)` over the shared support {x_j}; so `ν̂ = wᵀm(x)`, `Q̂ = WᵀK_xx W`, exactly as in
//!   Eq. 12. The kernel ℓ on A is RBF with one lengthscale chosen by leave-one-out error of the embedding (the
//!   RKHS norm of `φ(x_j) − Σ_i w_i(a_j)φ(x_i)` under an RBF k of lengthscale 0.2, closed form for kernel ridge);
//!   λ is the block's `regularizer`. At most [`MAX_PAIRS`] pairs are used (an evenly spaced subsample), which
//!   bounds the O(N²) cost per candidate query.
//! - **known** conditional: `w_i = 1/S` on S Monte Carlo points `x_i ~ p(x | a)` drawn from fixed scrambled-Sobol
//!   uniforms by per-dimension inverse-CDF sampling of the truncated normal (so the representer is a smooth,
//!   deterministic function of a). A point mass (noise 0) gives `g(a) = f(h(a))` exactly.
//!
//! A node of a multi-resolution tree is queried through its cell: its representer averages the representers of
//! fixed points spread over the cell.

use faer::Mat;

use super::spec::{ConditionalForm, KnownDimension};
use crate::error::Result;
use crate::kernel::{Kernel, KernelFamily};
use crate::linalg::Cholesky;
use crate::sampling::{Sobol, derive_seed};
use crate::space::{Domain, Space};
use crate::special::{norm_cdf, norm_quantile};

/// At most this many pairs enter the estimator.
pub const MAX_PAIRS: usize = 500;
/// Points per cell when a tree node is queried through its cell (pairs).
const CELL_POINTS: usize = 16;
/// Lengthscales of ℓ (encoded query units) tried by leave-one-out.
const CME_LENGTHSCALES: [f64; 6] = [0.02, 0.04, 0.08, 0.16, 0.32, 0.64];

/// g at one query as `Σ_i weights_i f(points_i)`; `points` is `None` for the shared support of a pairs embedding.
#[derive(Debug, Clone, PartialEq)]
pub struct Representer {
    /// Support points (row-major, encoded target space), or `None` for the shared support.
    pub points: Option<Vec<f64>>,
    /// Weights.
    pub weights: Vec<f64>,
}

/// What is queried: a point of the query cube or a tree node's cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Region {
    /// An encoded query point.
    Point(Vec<f64>),
    /// A cell `(low, high)` of the encoded query cube.
    Cell(Vec<f64>, Vec<f64>),
}

/// The conditional of an indirect study, ready to produce representers.
#[derive(Debug, Clone)]
pub enum Embedding {
    /// Empirical conditional mean embedding from pairs.
    Pairs(PairsEmbedding),
    /// Known conditional, Monte Carlo.
    Known(KnownEmbedding),
}

impl Embedding {
    /// The shared support (pairs) or `None`.
    pub fn shared_support(&self) -> Option<&[f64]> {
        match self {
            Embedding::Pairs(p) => Some(&p.x),
            Embedding::Known(_) => None,
        }
    }

    /// Representers of many regions.
    pub fn represent(&self, regions: &[Region]) -> Result<Vec<Representer>> {
        match self {
            Embedding::Pairs(p) => p.represent(regions),
            Embedding::Known(k) => Ok(regions.iter().map(|r| k.represent(r)).collect()),
        }
    }
}

/// The empirical CME estimator.
#[derive(Debug, Clone)]
pub struct PairsEmbedding {
    x: Vec<f64>,
    a: Vec<f64>,
    da: usize,
    ell: Kernel,
    ell_theta: Vec<f64>,
    chol: Cholesky,
    cell_base: Vec<f64>,
    lengthscale: f64,
}

impl PairsEmbedding {
    /// Builds the estimator from encoded pairs; `lengthscale` of ℓ, or `None` to choose it by leave-one-out.
    pub fn new(
        pairs: &[(Vec<f64>, Vec<f64>)],
        dx: usize,
        da: usize,
        lambda: f64,
        lengthscale: Option<f64>,
    ) -> Result<Self> {
        let step = pairs.len().div_ceil(MAX_PAIRS).max(1);
        let used: Vec<&(Vec<f64>, Vec<f64>)> = pairs.iter().step_by(step).collect();
        let x: Vec<f64> = used.iter().flat_map(|p| p.0.iter().copied()).collect();
        let a: Vec<f64> = used.iter().flat_map(|p| p.1.iter().copied()).collect();
        let n = used.len();
        let ell = Kernel::ard(KernelFamily::Rbf, da);
        let lengthscale = match lengthscale {
            Some(l) => l,
            None => choose_lengthscale(&x, &a, dx, da, lambda),
        };
        let ell_theta = rbf_theta(da, lengthscale, 1.0);
        let mut gram = ell.gram(&ell_theta, &a);
        for i in 0..n {
            gram[(i, i)] += n as f64 * lambda;
        }
        let chol = Cholesky::factor(gram)?;
        let cell_base = Sobol::scrambled(da, derive_seed(0xCE11, da as u64)).take(CELL_POINTS);
        Ok(Self { x, a, da, ell, ell_theta, chol, cell_base, lengthscale })
    }

    /// Number of pairs used.
    pub fn n(&self) -> usize {
        self.chol.n()
    }

    /// The lengthscale of ℓ in use.
    pub fn lengthscale(&self) -> f64 {
        self.lengthscale
    }

    fn represent(&self, regions: &[Region]) -> Result<Vec<Representer>> {
        let n = self.n();
        let mut rhs = Mat::<f64>::zeros(n, regions.len());
        let mut col = vec![0.0; n];
        for (c, r) in regions.iter().enumerate() {
            let points: Vec<f64> = match r {
                Region::Point(p) => p.clone(),
                Region::Cell(lo, hi) => self
                    .cell_base
                    .chunks_exact(self.da)
                    .flat_map(|u| u.iter().enumerate().map(|(j, v)| lo[j] + v * (hi[j] - lo[j])))
                    .collect(),
            };
            let m = points.len() / self.da.max(1);
            for p in points.chunks_exact(self.da) {
                self.ell.cross_vec(&self.ell_theta, p, &self.a, &mut col);
                for i in 0..n {
                    rhs[(i, c)] += col[i] / m as f64;
                }
            }
        }
        self.chol.solve_l_in_place(rhs.as_mut());
        self.chol.solve_lt_in_place(rhs.as_mut());
        Ok((0..regions.len())
            .map(|c| Representer { points: None, weights: (0..n).map(|i| rhs[(i, c)]).collect() })
            .collect())
    }
}

/// Log-vector θ of an RBF kernel with one lengthscale in every dimension.
pub fn rbf_theta(d: usize, lengthscale: f64, variance: f64) -> Vec<f64> {
    let mut t = vec![lengthscale.ln(); d];
    t.push(variance.ln());
    t
}

/// The ℓ lengthscale with the smallest leave-one-out embedding error (at most 300 pairs enter the criterion).
fn choose_lengthscale(x: &[f64], a: &[f64], dx: usize, da: usize, lambda: f64) -> f64 {
    let n_all = a.len() / da.max(1);
    let step = n_all.div_ceil(300).max(1);
    let idx: Vec<usize> = (0..n_all).step_by(step).collect();
    let n = idx.len();
    if n < 4 {
        return 0.16;
    }
    let xs: Vec<f64> = idx.iter().flat_map(|&i| x[i * dx..(i + 1) * dx].iter().copied()).collect();
    let as_: Vec<f64> = idx.iter().flat_map(|&i| a[i * da..(i + 1) * da].iter().copied()).collect();
    let k = Kernel::ard(KernelFamily::Rbf, dx).gram(&rbf_theta(dx, 0.2, 1.0), &xs);
    let ell = Kernel::ard(KernelFamily::Rbf, da);
    let mut best = (f64::INFINITY, 0.16);
    for &l in &CME_LENGTHSCALES {
        let lmat = ell.gram(&rbf_theta(da, l, 1.0), &as_);
        let mut reg = lmat.clone();
        for i in 0..n {
            reg[(i, i)] += n as f64 * lambda;
        }
        let Ok(chol) = Cholesky::factor(reg) else { continue };
        // H = L (L + nλI)⁻¹ is symmetric: H = (L + nλI)⁻¹ L.
        let mut h = lmat;
        chol.solve_l_in_place(h.as_mut());
        chol.solve_lt_in_place(h.as_mut());
        let hk = &h * &k;
        let mut err = 0.0;
        for j in 0..n {
            let quad: f64 = (0..n).map(|i| hk[(j, i)] * h[(j, i)]).sum();
            let r = (k[(j, j)] - 2.0 * hk[(j, j)] + quad) / (1.0 - h[(j, j)]).max(1e-6).powi(2);
            err += r;
        }
        if err < best.0 {
            best = (err, l);
        }
    }
    best.1
}

/// A known conditional sampled with fixed uniforms.
#[derive(Debug, Clone)]
pub struct KnownEmbedding {
    dims: Vec<KnownDimension>,
    target: Space,
    query: Space,
    /// `S × (dx + da)` uniforms: the first dx drive the noise, the last da the position inside a cell.
    base: Vec<f64>,
    samples: usize,
}

impl KnownEmbedding {
    /// The known conditional with `samples` Monte Carlo points per query.
    pub fn new(dims: Vec<KnownDimension>, target: Space, query: Space, samples: usize, seed: u64) -> Self {
        let w = target.dim() + query.dim();
        let base =
            if samples == 1 { vec![0.5; w] } else { Sobol::scrambled(w, derive_seed(seed, 0x0C0D)).take(samples) };
        Self { dims, target, query, base, samples }
    }

    fn represent(&self, region: &Region) -> Representer {
        let (dx, da) = (self.target.dim(), self.query.dim());
        let mut points = Vec::with_capacity(self.samples * dx);
        for u in self.base.chunks_exact(dx + da) {
            let a: Vec<f64> = match region {
                Region::Point(p) => p.clone(),
                Region::Cell(lo, hi) => (0..da).map(|j| lo[j] + u[dx + j] * (hi[j] - lo[j])).collect(),
            };
            points.extend(self.sample_x(&a, &u[..dx]));
        }
        Representer { points: Some(points), weights: vec![1.0 / self.samples as f64; self.samples] }
    }

    /// The encoded target point for encoded query `a` and uniforms `u` (one per target dimension).
    pub fn sample_x(&self, a: &[f64], u: &[f64]) -> Vec<f64> {
        self.dims
            .iter()
            .map(|d| {
                let (lo, hi) = float_bounds(&self.target.params()[d.target].domain);
                let (alo, ahi) = float_bounds(&self.query.params()[d.query].domain);
                let a_raw = alo + a[self.query.params()[d.query].offset] * (ahi - alo);
                let h = match d.form {
                    ConditionalForm::Affine => a_raw,
                    ConditionalForm::Cosine => (std::f64::consts::FRAC_PI_2 * a_raw).cos(),
                };
                let mu = d.offset + d.scale * h;
                let x = truncated_normal(mu, d.noise_std, lo, hi, u[d.target]);
                ((x - lo) / (hi - lo)).clamp(0.0, 1.0)
            })
            .collect()
    }
}

fn float_bounds(d: &Domain) -> (f64, f64) {
    match d {
        Domain::Float { low, high, .. } => (*low, *high),
        _ => (0.0, 1.0),
    }
}

/// The `u`-quantile of N(mu, sd²) truncated to [lo, hi] (clamped mean for sd = 0 or negligible mass).
pub fn truncated_normal(mu: f64, sd: f64, lo: f64, hi: f64, u: f64) -> f64 {
    if sd <= 0.0 {
        return mu.clamp(lo, hi);
    }
    let (pa, pb) = (norm_cdf((lo - mu) / sd), norm_cdf((hi - mu) / sd));
    if pb - pa < 1e-12 {
        return mu.clamp(lo, hi);
    }
    let p = (pa + u.clamp(1e-12, 1.0 - 1e-12) * (pb - pa)).clamp(1e-300, 1.0 - 1e-16);
    (mu + sd * norm_quantile(p)).clamp(lo, hi)
}
