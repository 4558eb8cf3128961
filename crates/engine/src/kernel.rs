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
        let mut off = 0;
        let mut k = 0.0;
        for c in &self.components {
            k += component_value(c, &theta[off..off + c.n_params()], a, b).0;
            off += c.n_params();
        }
        k
    }

    /// Gram matrix `K(x, x)` of `n` row-major points (full symmetric).
    pub fn gram(&self, theta: &[f64], x: &[f64]) -> Mat<f64> {
        let n = x.len() / self.d.max(1);
        let mut k = Mat::zeros(n, n);
        let pv = self.prior_variance(theta);
        for j in 0..n {
            let xj = &x[j * self.d..(j + 1) * self.d];
            k[(j, j)] = pv;
            for i in j + 1..n {
                let v = self.eval(theta, &x[i * self.d..(i + 1) * self.d], xj);
                k[(i, j)] = v;
                k[(j, i)] = v;
            }
        }
        k
    }

    /// Cross-covariance `K(a, b)`, `m × n` for `m` and `n` row-major points.
    pub fn cross(&self, theta: &[f64], a: &[f64], b: &[f64]) -> Mat<f64> {
        let d = self.d.max(1);
        let (m, n) = (a.len() / d, b.len() / d);
        Mat::from_fn(m, n, |i, j| self.eval(theta, &a[i * d..(i + 1) * d], &b[j * d..(j + 1) * d]))
    }

    /// `k(a, b_i)` for every row of `b`, into `out` (length n).
    pub fn cross_vec(&self, theta: &[f64], a: &[f64], b: &[f64], out: &mut [f64]) {
        let d = self.d.max(1);
        for (o, bi) in out.iter_mut().zip(b.chunks_exact(d)) {
            *o = self.eval(theta, a, bi);
        }
    }

    /// `k(a, b_i)` and its gradient in `a` for every row of `b`: `grad` is `n × d` row-major.
    pub fn cross_vec_grad(&self, theta: &[f64], a: &[f64], b: &[f64], out: &mut [f64], grad: &mut [f64]) {
        let d = self.d.max(1);
        grad.iter_mut().for_each(|g| *g = 0.0);
        for (i, bi) in b.chunks_exact(d).enumerate() {
            let mut off = 0;
            let mut k = 0.0;
            for c in &self.components {
                let th = &theta[off..off + c.n_params()];
                k += component_grad_x(c, th, a, bi, &mut grad[i * d..(i + 1) * d]);
                off += c.n_params();
            }
            out[i] = k;
        }
    }

    /// `Σ_{i,j} W_ij ∂K_ij/∂θ_p` for every p, for a symmetric `W` (the contraction in the gradient of the log
    /// marginal likelihood), without forming the derivative matrices.
    pub fn contract_grad(&self, theta: &[f64], x: &[f64], w: &Mat<f64>) -> Vec<f64> {
        let n = w.nrows();
        let d = self.d.max(1);
        let mut out = vec![0.0; self.n_params()];
        let mut buf = vec![0.0; self.components.iter().map(Component::n_params).max().unwrap_or(0)];
        let mut off = 0;
        for c in &self.components {
            let np = c.n_params();
            let th = &theta[off..off + np];
            let acc = &mut out[off..off + np];
            for j in 0..n {
                let xj = &x[j * d..(j + 1) * d];
                // diagonal: only the output scale moves k(x, x)
                acc[c.dims.len()] += w[(j, j)] * th[c.dims.len()].exp();
                for i in j + 1..n {
                    component_grad_theta(c, th, &x[i * d..(i + 1) * d], xj, &mut buf[..np]);
                    let wij = 2.0 * w[(i, j)];
                    for (a, b) in acc.iter_mut().zip(&buf[..np]) {
                        *a += wij * b;
                    }
                }
            }
            off += np;
        }
        out
    }
}

/// Base correlation of a stationary family as a function of s = r²: `(k₀, dk₀/ds)`.
fn stationary(family: KernelFamily, s: f64) -> (f64, f64) {
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

/// `(k, s)` of one component at (a, b).
fn component_value(c: &Component, th: &[f64], a: &[f64], b: &[f64]) -> (f64, f64) {
    let nd = c.dims.len();
    let var = th[nd].exp();
    if c.family == KernelFamily::Periodic {
        let p = th[nd + 1].exp();
        let mut s = 0.0;
        for (q, &j) in c.dims.iter().enumerate() {
            let u = (std::f64::consts::PI * (a[j] - b[j]) / p).sin();
            s += u * u * (-2.0 * th[q]).exp();
        }
        (var * (-2.0 * s).exp(), s)
    } else {
        let mut s = 0.0;
        for (q, &j) in c.dims.iter().enumerate() {
            let z = (a[j] - b[j]) * (-th[q]).exp();
            s += z * z;
        }
        (var * stationary(c.family, s).0, s)
    }
}

/// ∂k/∂θ of one component at (a, b), into `out` (length `n_params`).
fn component_grad_theta(c: &Component, th: &[f64], a: &[f64], b: &[f64], out: &mut [f64]) {
    let nd = c.dims.len();
    let var = th[nd].exp();
    if c.family == KernelFamily::Periodic {
        let p = th[nd + 1].exp();
        let (k, _) = component_value(c, th, a, b);
        let mut dp = 0.0;
        for (q, &j) in c.dims.iter().enumerate() {
            let arg = std::f64::consts::PI * (a[j] - b[j]) / p;
            let (u, cs) = arg.sin_cos();
            let inv_l2 = (-2.0 * th[q]).exp();
            out[q] = k * 4.0 * u * u * inv_l2;
            dp += 4.0 * u * cs * arg * inv_l2;
        }
        out[nd] = k;
        out[nd + 1] = k * dp;
    } else {
        let mut s = 0.0;
        for (q, &j) in c.dims.iter().enumerate() {
            let z = (a[j] - b[j]) * (-th[q]).exp();
            out[q] = z * z;
            s += z * z;
        }
        let (k0, dk0) = stationary(c.family, s);
        for o in &mut out[..nd] {
            *o *= -2.0 * var * dk0;
        }
        out[nd] = var * k0;
    }
}

/// Adds ∂k/∂a of one component to `grad` (length d) and returns k.
fn component_grad_x(c: &Component, th: &[f64], a: &[f64], b: &[f64], grad: &mut [f64]) -> f64 {
    let nd = c.dims.len();
    let var = th[nd].exp();
    if c.family == KernelFamily::Periodic {
        let p = th[nd + 1].exp();
        let (k, _) = component_value(c, th, a, b);
        for (q, &j) in c.dims.iter().enumerate() {
            let arg = std::f64::consts::PI * (a[j] - b[j]) / p;
            let (u, cs) = arg.sin_cos();
            grad[j] -= k * 4.0 * u * cs * std::f64::consts::PI / p * (-2.0 * th[q]).exp();
        }
        k
    } else {
        let mut s = 0.0;
        for (q, &j) in c.dims.iter().enumerate() {
            let z = (a[j] - b[j]) * (-th[q]).exp();
            s += z * z;
        }
        let (k0, dk0) = stationary(c.family, s);
        for (q, &j) in c.dims.iter().enumerate() {
            grad[j] += var * dk0 * 2.0 * (a[j] - b[j]) * (-2.0 * th[q]).exp();
        }
        var * k0
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
