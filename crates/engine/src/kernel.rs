//! Covariance functions: Matérn ½, ³⁄₂, ⁵⁄₂ and RBF with ARD lengthscales, periodic, and sums of them over groups
//! of dimensions (additive kernels), each with its own output scale.
//!
//! Hyperparameters travel as one log-vector θ with a fixed layout, component after component:
//! `[ln ℓ_j for j in dims] ++ [ln σ²] ++ [ln p, periodic only]`.
//!
//! With `Δ = a − b` and `s = Σ_j (Δ_j/ℓ_j)²`, `r = √s`, the stationary families are
//! `σ²·exp(−r)`, `σ²(1 + √3r)e^{−√3r}`, `σ²(1 + √5r + 5r²/3)e^{−√5r}`, `σ² exp(−s/2)`; the periodic one is
//! `σ² exp(−2 Σ_j sin²(πΔ_j/p)/ℓ_j²)` (GPyTorch's ARD form; sklearn's `ExpSineSquared` in one dimension).
//! Derivatives go through `∂k/∂s`, which is finite at r = 0 for every family but Matérn-½, whose derivative in x
//! at r = 0 is taken as 0 (a subgradient).

use faer::Mat;
use serde::{Deserialize, Serialize};

/// A covariance family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum KernelFamily {
    /// Matérn ν = ½ (exponential).
    Matern12,
    /// Matérn ν = ³⁄₂.
    Matern32,
    /// Matérn ν = ⁵⁄₂ (the default).
    #[default]
    Matern52,
    /// Squared exponential.
    Rbf,
    /// Periodic (exp-sine-squared) with one period per component.
    Periodic,
}

/// One additive component: a family over a subset of the input dimensions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Component {
    /// Family.
    pub family: KernelFamily,
    /// Encoded input dimensions it acts on.
    pub dims: Vec<usize>,
}

impl Component {
    /// Number of log-hyperparameters of the component.
    pub fn n_params(&self) -> usize {
        self.dims.len() + 1 + usize::from(self.family == KernelFamily::Periodic)
    }
}

/// A sum of components over a `d`-dimensional input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Kernel {
    components: Vec<Component>,
    d: usize,
}

impl Kernel {
    /// One component of `family` over all `d` dimensions.
    pub fn ard(family: KernelFamily, d: usize) -> Self {
        Self { components: vec![Component { family, dims: (0..d).collect() }], d }
    }

    /// A sum of components (dimension groups may overlap and need not cover every dimension).
    pub fn additive(components: Vec<Component>, d: usize) -> Self {
        debug_assert!(components.iter().all(|c| c.dims.iter().all(|&j| j < d)));
        Self { components, d }
    }

    /// Input dimension.
    pub fn dim(&self) -> usize {
        self.d
    }

    /// The components.
    pub fn components(&self) -> &[Component] {
        &self.components
    }

    /// Length of θ.
    pub fn n_params(&self) -> usize {
        self.components.iter().map(Component::n_params).sum()
    }

    /// The lengthscale of each input dimension: the smallest among the components acting on it (∞ where none
    /// does; for a periodic component, its lengthscale of the sine).
    pub fn lengthscales(&self, theta: &[f64]) -> Vec<f64> {
        let mut out = vec![f64::INFINITY; self.d];
        let mut off = 0;
        for c in &self.components {
            for (q, &j) in c.dims.iter().enumerate() {
                out[j] = out[j].min(theta[off + q].exp());
            }
            off += c.n_params();
        }
        out
    }

    /// `k(a, a)` (the prior variance; the same everywhere): the sum of output scales.
    pub fn prior_variance(&self, theta: &[f64]) -> f64 {
        let mut off = 0;
        let mut v = 0.0;
        for c in &self.components {
            v += theta[off + c.dims.len()].exp();
            off += c.n_params();
        }
        v
    }

    /// `k(a, b)`.
    pub fn eval(&self, theta: &[f64], a: &[f64], b: &[f64]) -> f64 {
        let p = self.prepare(theta);
        let (za, zb) = (p.scale(a), p.scale(b));
        let mut out = [0.0];
        p.cross_vec(&za, &zb, &mut out);
        out[0]
    }

    /// Gram matrix `K(x, x)` of `n` row-major points (full symmetric).
    pub fn gram(&self, theta: &[f64], x: &[f64]) -> Mat<f64> {
        let p = self.prepare(theta);
        p.gram(&p.scale(x))
    }

    /// Cross-covariance `K(a, b)`, `m × n` for `m` and `n` row-major points.
    pub fn cross(&self, theta: &[f64], a: &[f64], b: &[f64]) -> Mat<f64> {
        let p = self.prepare(theta);
        p.cross(&p.scale(a), &p.scale(b))
    }

    /// `k(a, b_i)` for every row of `b`, into `out` (length n).
    pub fn cross_vec(&self, theta: &[f64], a: &[f64], b: &[f64], out: &mut [f64]) {
        let p = self.prepare(theta);
        p.cross_vec(&p.scale(a), &p.scale(b), out);
    }

    /// `k(a, b_i)` and its gradient in `a` for every row of `b`: `grad` is `n × d` row-major.
    pub fn cross_vec_grad(&self, theta: &[f64], a: &[f64], b: &[f64], out: &mut [f64], grad: &mut [f64]) {
        let p = self.prepare(theta);
        p.cross_vec_grad(&p.scale(a), &p.scale(b), out, grad);
    }

    /// `Σ_{i,j} W_ij ∂K_ij/∂θ_p` for every p, for a symmetric `W` (the contraction in the gradient of the log
    /// marginal likelihood), without forming the derivative matrices.
    pub fn contract_grad(&self, theta: &[f64], x: &[f64], w: &Mat<f64>) -> Vec<f64> {
        let p = self.prepare(theta);
        p.contract_grad(&p.scale(x), w)
    }

    /// The θ-dependent constants, computed once for many evaluations.
    pub fn prepare(&self, theta: &[f64]) -> Prepared {
        let mut off = 0;
        let comps = self
            .components
            .iter()
            .map(|c| {
                let nd = c.dims.len();
                let th = &theta[off..off + c.n_params()];
                off += c.n_params();
                let periodic = c.family == KernelFamily::Periodic;
                PreparedComponent {
                    family: c.family,
                    dims: c.dims.clone(),
                    inv_l: th[..nd].iter().map(|t| (-t).exp()).collect(),
                    var: th[nd].exp(),
                    period: if periodic { th[nd + 1].exp() } else { 1.0 },
                    n_params: c.n_params(),
                }
            })
            .collect();
        Prepared { comps, d: self.d }
    }
}

/// One component with its hyperparameters in natural form.
#[derive(Debug, Clone)]
struct PreparedComponent {
    family: KernelFamily,
    dims: Vec<usize>,
    inv_l: Vec<f64>,
    var: f64,
    period: f64,
    n_params: usize,
}

impl PreparedComponent {
    /// Input scaling: `x_j/ℓ_j` for stationary families, `πx_j/p` for the periodic one.
    fn factor(&self, q: usize) -> f64 {
        if self.family == KernelFamily::Periodic { std::f64::consts::PI / self.period } else { self.inv_l[q] }
    }
}

/// Points scaled for a [`Prepared`] kernel: for every component, `n × dims` row-major.
#[derive(Debug, Clone, Default)]
pub struct Scaled {
    per_comp: Vec<Vec<f64>>,
    n: usize,
}

impl Scaled {
    /// Number of points.
    pub fn n(&self) -> usize {
        self.n
    }
}

/// A kernel with fixed hyperparameters, ready for fast evaluation on [`Scaled`] points.
#[derive(Debug, Clone)]
pub struct Prepared {
    comps: Vec<PreparedComponent>,
    d: usize,
}

impl Prepared {
    /// Scales `n` row-major points.
    pub fn scale(&self, x: &[f64]) -> Scaled {
        let mut out = Scaled { per_comp: Vec::with_capacity(self.comps.len()), n: 0 };
        self.scale_into(x, &mut out);
        out
    }

    /// Scales points and appends them to `into`.
    pub fn scale_into(&self, x: &[f64], into: &mut Scaled) {
        let d = self.d.max(1);
        if into.per_comp.len() != self.comps.len() {
            into.per_comp = vec![Vec::new(); self.comps.len()];
        }
        for (c, z) in self.comps.iter().zip(into.per_comp.iter_mut()) {
            let f: Vec<f64> = (0..c.dims.len()).map(|q| c.factor(q)).collect();
            for row in x.chunks_exact(d) {
                z.extend(c.dims.iter().zip(&f).map(|(&j, f)| row[j] * f));
            }
        }
        into.n += x.len() / d;
    }

    /// `k(a, a)`.
    pub fn prior_variance(&self) -> f64 {
        self.comps.iter().map(|c| c.var).sum()
    }

    /// Gram matrix of scaled points (full symmetric).
    pub fn gram(&self, z: &Scaled) -> Mat<f64> {
        let n = z.n;
        let mut k = Mat::zeros(n, n);
        let pv = self.prior_variance();
        for (c, zc) in self.comps.iter().zip(&z.per_comp) {
            let nd = c.dims.len();
            for j in 0..n {
                let zj = &zc[j * nd..(j + 1) * nd];
                for i in j + 1..n {
                    k[(i, j)] += pair_value(c, &zc[i * nd..(i + 1) * nd], zj);
                }
            }
        }
        for j in 0..n {
            k[(j, j)] = pv;
            for i in j + 1..n {
                k[(j, i)] = k[(i, j)];
            }
        }
        k
    }

    /// Cross-covariance `m × n` between scaled point sets.
    pub fn cross(&self, za: &Scaled, zb: &Scaled) -> Mat<f64> {
        let mut k = Mat::zeros(za.n, zb.n);
        for (c, (a, b)) in self.comps.iter().zip(za.per_comp.iter().zip(&zb.per_comp)) {
            let nd = c.dims.len();
            for j in 0..zb.n {
                let bj = &b[j * nd..(j + 1) * nd];
                for i in 0..za.n {
                    k[(i, j)] += pair_value(c, &a[i * nd..(i + 1) * nd], bj);
                }
            }
        }
        k
    }

    /// `k(a, b_i)` for one scaled point `za` and every point of `zb`.
    pub fn cross_vec(&self, za: &Scaled, zb: &Scaled, out: &mut [f64]) {
        out.iter_mut().for_each(|o| *o = 0.0);
        for (c, (a, b)) in self.comps.iter().zip(za.per_comp.iter().zip(&zb.per_comp)) {
            let nd = c.dims.len();
            for (o, bi) in out.iter_mut().zip(b.chunks_exact(nd.max(1))) {
                *o += pair_value(c, &a[..nd], bi);
            }
        }
    }

    /// `k(a, b_i)` and `∂k/∂a` (`n × d` row-major) for one scaled point `za` and every point of `zb`.
    pub fn cross_vec_grad(&self, za: &Scaled, zb: &Scaled, out: &mut [f64], grad: &mut [f64]) {
        let d = self.d.max(1);
        out.iter_mut().for_each(|o| *o = 0.0);
        grad.iter_mut().for_each(|g| *g = 0.0);
        for (c, (a, b)) in self.comps.iter().zip(za.per_comp.iter().zip(&zb.per_comp)) {
            let nd = c.dims.len();
            let a = &a[..nd];
            for (i, bi) in b.chunks_exact(nd.max(1)).enumerate() {
                let g = &mut grad[i * d..(i + 1) * d];
                if c.family == KernelFamily::Periodic {
                    let mut s = 0.0;
                    for q in 0..nd {
                        let u = (a[q] - bi[q]).sin();
                        s += u * u * c.inv_l[q] * c.inv_l[q];
                    }
                    let k = c.var * (-2.0 * s).exp();
                    for q in 0..nd {
                        let (u, cs) = (a[q] - bi[q]).sin_cos();
                        g[c.dims[q]] -= k * 4.0 * u * cs * c.factor(q) * c.inv_l[q] * c.inv_l[q];
                    }
                    out[i] += k;
                } else {
                    let s: f64 = (0..nd).map(|q| (a[q] - bi[q]) * (a[q] - bi[q])).sum();
                    let (k0, dk0) = stationary(c.family, s);
                    for q in 0..nd {
                        g[c.dims[q]] += c.var * dk0 * 2.0 * (a[q] - bi[q]) * c.inv_l[q];
                    }
                    out[i] += c.var * k0;
                }
            }
        }
    }

    /// `Σ_{i,j} W_ij ∂K_ij/∂θ_p` over the scaled training points `z`.
    pub fn contract_grad(&self, z: &Scaled, w: &Mat<f64>) -> Vec<f64> {
        let n = z.n;
        let mut out = Vec::with_capacity(self.comps.iter().map(|c| c.n_params).sum());
        let mut buf = Vec::new();
        for (c, zc) in self.comps.iter().zip(&z.per_comp) {
            let nd = c.dims.len();
            let mut acc = vec![0.0; c.n_params];
            buf.resize(c.n_params, 0.0);
            for j in 0..n {
                // diagonal: only the output scale moves k(x, x)
                acc[nd] += w[(j, j)] * c.var;
                let zj = &zc[j * nd..(j + 1) * nd];
                for i in j + 1..n {
                    pair_grad_theta(c, &zc[i * nd..(i + 1) * nd], zj, &mut buf);
                    let wij = 2.0 * w[(i, j)];
                    for (a, b) in acc.iter_mut().zip(&buf) {
                        *a += wij * b;
                    }
                }
            }
            out.extend(acc);
        }
        out
    }
}

/// Base correlation of a stationary family as a function of s = r²: `(k₀, dk₀/ds)`.
pub(crate) fn stationary(family: KernelFamily, s: f64) -> (f64, f64) {
    let r = s.sqrt();
    match family {
        KernelFamily::Matern12 => {
            let e = (-r).exp();
            (e, if r > 1e-12 { -e / (2.0 * r) } else { 0.0 })
        }
        KernelFamily::Matern32 => {
            let t = 3f64.sqrt() * r;
            let e = (-t).exp();
            ((1.0 + t) * e, -1.5 * e)
        }
        KernelFamily::Matern52 => {
            let t = 5f64.sqrt() * r;
            let e = (-t).exp();
            ((1.0 + t + 5.0 * s / 3.0) * e, -(5.0 / 6.0) * (1.0 + t) * e)
        }
        KernelFamily::Rbf => {
            let e = (-0.5 * s).exp();
            (e, -0.5 * e)
        }
        KernelFamily::Periodic => unreachable!("periodic is not stationary in s"),
    }
}

/// k of one component at two scaled points.
#[inline]
fn pair_value(c: &PreparedComponent, a: &[f64], b: &[f64]) -> f64 {
    if c.family == KernelFamily::Periodic {
        let mut s = 0.0;
        for q in 0..a.len() {
            let u = (a[q] - b[q]).sin();
            s += u * u * c.inv_l[q] * c.inv_l[q];
        }
        c.var * (-2.0 * s).exp()
    } else {
        let mut s = 0.0;
        for q in 0..a.len() {
            let t = a[q] - b[q];
            s += t * t;
        }
        c.var * stationary(c.family, s).0
    }
}

/// ∂k/∂θ of one component at two scaled points, into `out` (length `n_params`).
fn pair_grad_theta(c: &PreparedComponent, a: &[f64], b: &[f64], out: &mut [f64]) {
    let nd = a.len();
    if c.family == KernelFamily::Periodic {
        let mut s = 0.0;
        for q in 0..nd {
            let u = (a[q] - b[q]).sin();
            s += u * u * c.inv_l[q] * c.inv_l[q];
        }
        let k = c.var * (-2.0 * s).exp();
        let mut dp = 0.0;
        for q in 0..nd {
            let arg = a[q] - b[q];
            let (u, cs) = arg.sin_cos();
            let inv_l2 = c.inv_l[q] * c.inv_l[q];
            out[q] = k * 4.0 * u * u * inv_l2;
            dp += 4.0 * u * cs * arg * inv_l2;
        }
        out[nd] = k;
        out[nd + 1] = k * dp;
    } else {
        let mut s = 0.0;
        for q in 0..nd {
            let t = a[q] - b[q];
            out[q] = t * t;
            s += t * t;
        }
        let (k0, dk0) = stationary(c.family, s);
        for o in &mut out[..nd] {
            *o *= -2.0 * c.var * dk0;
        }
        out[nd] = c.var * k0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FAMILIES: [KernelFamily; 5] = [
        KernelFamily::Matern12,
        KernelFamily::Matern32,
        KernelFamily::Matern52,
        KernelFamily::Rbf,
        KernelFamily::Periodic,
    ];

    fn kernel(family: KernelFamily) -> (Kernel, Vec<f64>) {
        let k = Kernel::additive(
            vec![Component { family, dims: vec![0, 2] }, Component { family: KernelFamily::Rbf, dims: vec![1] }],
            3,
        );
        let mut theta = vec![(0.3f64).ln(), (0.7f64).ln(), (1.3f64).ln(), (0.4f64).ln(), (2.0f64).ln()];
        if family == KernelFamily::Periodic {
            theta.insert(3, (0.45f64).ln());
        }
        assert_eq!(theta.len(), k.n_params());
        (k, theta)
    }

    #[test]
    fn theta_gradient_matches_central_differences() {
        let a = [0.1, 0.5, 0.9];
        let b = [0.35, 0.2, 0.6];
        for family in FAMILIES {
            let (k, theta) = kernel(family);
            let mut w = Mat::zeros(2, 2);
            w[(0, 1)] = 0.5;
            w[(1, 0)] = 0.5;
            let x = [a, b].concat();
            let g = k.contract_grad(&theta, &x, &w);
            for p in 0..theta.len() {
                let h = 1e-6;
                let mut tp = theta.clone();
                tp[p] += h;
                let mut tm = theta.clone();
                tm[p] -= h;
                let fd = (k.eval(&tp, &a, &b) - k.eval(&tm, &a, &b)) / (2.0 * h);
                assert!((g[p] - fd).abs() < 1e-7 * (1.0 + fd.abs()), "{family:?} p={p}: {} vs {fd}", g[p]);
            }
        }
    }

    #[test]
    fn x_gradient_matches_central_differences() {
        let b = [0.35, 0.2, 0.6, 0.9, 0.1, 0.3];
        for family in FAMILIES {
            let (k, theta) = kernel(family);
            let a = [0.1, 0.5, 0.9];
            let mut out = [0.0; 2];
            let mut grad = [0.0; 6];
            k.cross_vec_grad(&theta, &a, &b, &mut out, &mut grad);
            for i in 0..2 {
                for j in 0..3 {
                    let h = 1e-6;
                    let (mut ap, mut am) = (a, a);
                    ap[j] += h;
                    am[j] -= h;
                    let bi = &b[i * 3..(i + 1) * 3];
                    let fd = (k.eval(&theta, &ap, bi) - k.eval(&theta, &am, bi)) / (2.0 * h);
                    assert!((grad[i * 3 + j] - fd).abs() < 1e-7, "{family:?}: {} vs {fd}", grad[i * 3 + j]);
                }
            }
        }
    }

    #[test]
    fn value_at_zero_distance_is_the_prior_variance() {
        for family in FAMILIES {
            let (k, theta) = kernel(family);
            let a = [0.2, 0.4, 0.6];
            assert!((k.eval(&theta, &a, &a) - k.prior_variance(&theta)).abs() < 1e-15);
        }
    }

    #[test]
    fn gram_is_symmetric_with_the_prior_variance_on_the_diagonal() {
        let (k, theta) = kernel(KernelFamily::Matern52);
        let x: Vec<f64> = (0..30).map(|i| ((i * 37) % 17) as f64 / 17.0).collect();
        let g = k.gram(&theta, &x);
        for i in 0..10 {
            assert_eq!(g[(i, i)], k.prior_variance(&theta));
            for j in 0..10 {
                assert_eq!(g[(i, j)], g[(j, i)]);
            }
        }
    }
}
