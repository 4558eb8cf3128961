//! Posterior at the M points `[x, ξ_m]` that share free coordinates x and take the other coordinates from M fixed
//! samples ξ_m (sample-average expectations over uncontrolled inputs, seed 000), with gradients in x.
//!
//! For a sum of stationary components, the scaled squared distance of component j between `[x, ξ_m]` and training
//! point i splits as `s_im = s^free_i(x) + s^fixed_im`; the second part does not depend on x and is computed once
//! per sample set, so one evaluation costs O(n·q) for the free part plus O(n·M) kernel values (and for the
//! squared-exponential family, `exp(−s/2) = exp(−s^free/2)·exp(−s^fixed/2)`, only n exponentials; the Matérn
//! families take n·M, in a branch-free loop that the compiler vectorises). With
//! `D_im = σ²_j k₀'(s_im)` and `Δ_ic = (x_c − x_ic)/ℓ_c²`, `∂k_im/∂x_c = 2 D_im Δ_ic`, so the gradients of the means and
//! variances of all M points are `q × n` by `n × M` contractions. The variances use one lower and one upper
//! triangular solve with M right-hand sides, as [`Gp::posterior_batch_grad`]
//! ([`FixedSamples::posterior_grad_selected`]: the upper solve and the contractions only for the samples whose
//! gradients are needed). Results equal
//! [`Gp::posterior_batch_grad`] at the composed points up to floating-point rounding.

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, Par};

use super::{BatchPosterior, Gp};
use crate::kernel::KernelFamily;
use crate::linalg::dot;

/// One stationary component of the kernel, split into its free and fixed coordinates.
#[derive(Debug, Clone)]
struct Part {
    family: KernelFamily,
    /// Output scale σ².
    var: f64,
    /// Position in x and inverse lengthscale of every free coordinate of the component.
    free: Vec<(usize, f64)>,
    /// Scaled training coordinates of the free coordinates, one n-vector per entry of `free`.
    train_free: Vec<Vec<f64>>,
    /// `s^fixed`, `M` columns of length n (column m contiguous).
    fixed_s: Vec<f64>,
    /// Squared exponential only: `exp(−s^fixed/2)`, same layout.
    fixed_e: Option<Vec<f64>>,
    /// Squared exponential only: the mean of `exp(−s^fixed/2)` over the M samples, one value per training point.
    fixed_e_mean: Option<Vec<f64>>,
}

/// A GP prepared for posteriors at `[x, ξ_m]` over fixed samples ξ_m; see the module docs.
#[derive(Debug, Clone)]
pub struct FixedSamples<'a> {
    gp: &'a Gp,
    free: Vec<usize>,
    fixed: Vec<usize>,
    samples: Vec<f64>,
    m: usize,
    parts: Vec<Part>,
}

impl Gp {
    /// Prepares posteriors at `[x, ξ_m]`: x sets the input coordinates `free` (in x's order), the samples
    /// (`M × fixed.len()` row-major) set `fixed`. `None` when `free` and `fixed` do not partition the input
    /// coordinates or the kernel has a periodic component (use [`Gp::posterior_batch_grad`] then).
    pub fn fixed_samples(&self, free: &[usize], fixed: &[usize], samples: &[f64]) -> Option<FixedSamples<'_>> {
        let d = self.d;
        let mut seen = vec![false; d];
        for &j in free.iter().chain(fixed) {
            if j >= d || std::mem::replace(&mut seen[j], true) {
                return None;
            }
        }
        if seen.iter().any(|s| !s) || (!fixed.is_empty() && !samples.len().is_multiple_of(fixed.len())) {
            return None;
        }
        let m = if fixed.is_empty() { 1 } else { samples.len() / fixed.len() };
        let n = self.n();
        let theta = &self.hypers.theta;
        let mut parts = Vec::new();
        let mut off = 0;
        for c in self.kernel.components() {
            if c.family == KernelFamily::Periodic {
                return None;
            }
            let nd = c.dims.len();
            let th = &theta[off..off + c.n_params()];
            off += c.n_params();
            let inv_l: Vec<f64> = th[..nd].iter().map(|t| (-t).exp()).collect();
            let mut part = Part {
                family: c.family,
                var: th[nd].exp(),
                free: Vec::new(),
                train_free: Vec::new(),
                fixed_s: vec![0.0; n * m],
                fixed_e: None,
                fixed_e_mean: None,
            };
            for (&j, &f) in c.dims.iter().zip(&inv_l) {
                if let Some(q) = free.iter().position(|&v| v == j) {
                    part.free.push((q, f));
                    part.train_free.push((0..n).map(|i| self.x[i * d + j] * f).collect());
                } else {
                    let r = fixed.iter().position(|&v| v == j).expect("fixed and free partition the inputs");
                    for (s, col) in part.fixed_s.chunks_exact_mut(n.max(1)).enumerate().take(m) {
                        let z = samples[s * fixed.len() + r] * f;
                        for (i, v) in col.iter_mut().enumerate() {
                            let t = z - self.x[i * d + j] * f;
                            *v += t * t;
                        }
                    }
                }
            }
            if c.family == KernelFamily::Rbf {
                let e: Vec<f64> = part.fixed_s.iter().map(|s| exp(-0.5 * s)).collect();
                let mut mean = vec![0.0; n];
                for col in e.chunks_exact(n.max(1)) {
                    mean.iter_mut().zip(col).for_each(|(a, v)| *a += v / m as f64);
                }
                part.fixed_e = Some(e);
                part.fixed_e_mean = Some(mean);
            }
            parts.push(part);
        }
        Some(FixedSamples { gp: self, free: free.to_vec(), fixed: fixed.to_vec(), samples: samples.to_vec(), m, parts })
    }
}

impl FixedSamples<'_> {
    /// Number of samples M.
    pub fn n_samples(&self) -> usize {
        self.m
    }

    /// The full input `[x, ξ_s]`.
    fn point(&self, x: &[f64], s: usize) -> Vec<f64> {
        let mut p = vec![0.0; self.gp.d];
        for (q, &j) in self.free.iter().enumerate() {
            p[j] = x[q];
        }
        let k = self.fixed.len();
        for (q, &j) in self.fixed.iter().enumerate() {
            p[j] = self.samples[s * k + q];
        }
        p
    }

    /// `s^free_i(x)` of a part and, for the squared exponential, `exp(−s^free_i/2)`.
    fn free_distance(&self, part: &Part, x: &[f64]) -> Vec<f64> {
        let n = self.gp.n();
        let mut s = vec![0.0; n];
        for (&(q, f), train) in part.free.iter().zip(&part.train_free) {
            let z = x[q] * f;
            for (v, t) in s.iter_mut().zip(train) {
                let u = z - t;
                *v += u * u;
            }
        }
        s
    }

    /// Adds the kernel values `k(x_i, [x, ξ_m])` to columns `col0 .. col0 + M` of `kt` (n rows, zero on entry:
    /// both callers allocate it zeroed); with `deriv`,
    /// also `σ²_j k₀'(s_im)` of every part j into `deriv[j]` (M columns of length n).
    fn cross(&self, x: &[f64], kt: &mut Mat<f64>, col0: usize, mut deriv: Option<&mut [Vec<f64>]>) {
        let n = self.gp.n();
        for (pj, part) in self.parts.iter().enumerate() {
            let sf = self.free_distance(part, x);
            let ef: Option<Vec<f64>> = part.fixed_e.as_ref().map(|_| sf.iter().map(|s| exp(-0.5 * s)).collect());
            for s in 0..self.m {
                let col = kt.col_as_slice_mut(col0 + s);
                let mut dc = deriv.as_deref_mut().map(|d| &mut d[pj][s * n..(s + 1) * n]);
                match (&ef, &part.fixed_e) {
                    (Some(ef), Some(fe)) => {
                        let e = &fe[s * n..(s + 1) * n];
                        for i in 0..n {
                            let k0 = ef[i] * e[i];
                            col[i] += part.var * k0;
                            if let Some(dc) = dc.as_deref_mut() {
                                dc[i] = part.var * (-0.5 * k0);
                            }
                        }
                    }
                    _ => add_stationary(part.family, part.var, &sf, &part.fixed_s[s * n..(s + 1) * n], col, dc),
                }
            }
        }
    }

    /// `Σ_i w_im ∂k(x_i, [x, ξ_m])/∂x_c` for `w = α` and for `w` the columns of `kinv_k` (`(K + Σ)⁻¹ k(X, ·)`),
    /// over the samples of the columns of `kinv_k` (`deriv` holds theirs), each `columns × q` row-major, standardised units: one `q_j × n` by `n × 2M` product per part.
    fn contract(&self, x: &[f64], deriv: &[Vec<f64>], kinv_k: &Mat<f64>) -> (Vec<f64>, Vec<f64>) {
        let (n, m, q) = (self.gp.n(), kinv_k.ncols(), self.free.len());
        let (mut dmean, mut dvar) = (vec![0.0; m * q], vec![0.0; m * q]);
        let alpha = &self.gp.alpha;
        for (part, dpart) in self.parts.iter().zip(deriv) {
            let qj = part.free.len();
            if qj == 0 {
                continue;
            }
            // Scaled differences z_c − z_ic (`q_j × n`).
            let diff = Mat::<f64>::from_fn(qj, n, |c, i| {
                let (pos, f) = part.free[c];
                x[pos] * f - part.train_free[c][i]
            });
            let mut w = Mat::<f64>::zeros(n, 2 * m);
            for s in 0..m {
                let dcol = &dpart[s * n..(s + 1) * n];
                for ((v, a), d) in w.col_as_slice_mut(s).iter_mut().zip(alpha).zip(dcol) {
                    *v = a * d;
                }
                let u = kinv_k.col_as_slice(s);
                for ((v, a), d) in w.col_as_slice_mut(m + s).iter_mut().zip(u).zip(dcol) {
                    *v = a * d;
                }
            }
            let mut r = Mat::<f64>::zeros(qj, 2 * m);
            matmul(r.as_mut(), Accum::Replace, diff.as_ref(), w.as_ref(), 1.0, Par::Seq);
            for (c, &(pos, f)) in part.free.iter().enumerate() {
                for s in 0..m {
                    dmean[s * q + pos] += 2.0 * f * r[(c, s)];
                    dvar[s * q + pos] += 2.0 * f * r[(c, m + s)];
                }
            }
        }
        (dmean, dvar)
    }

    /// `(1/M) Σ_m Σ_i w_i k(x_i, [x, ξ_m])` (the latent kernel, standardised units) and, with `grad`, its gradient
    /// in x added into `grad`. For a squared-exponential component `k(x_i, [x, ξ_m]) = σ² exp(−s^free_i/2)
    /// exp(−s^fixed_im/2)`, so the mean over the samples needs only the precomputed mean of the second factor:
    /// O(n·q) per call instead of O(n·M). Other families sum over the samples.
    pub fn mean_weighted(&self, x: &[f64], w: &[f64], mut grad: Option<&mut [f64]>) -> f64 {
        let n = self.gp.n();
        let inv_m = 1.0 / self.m as f64;
        let mut total = 0.0;
        for part in &self.parts {
            let sf = self.free_distance(part, x);
            // E_m[k_im] and E_m[σ² k₀'(s_im)] per training point.
            let (mut kbar, mut dbar) = (vec![0.0; n], vec![0.0; n]);
            match &part.fixed_e_mean {
                Some(em) => {
                    for i in 0..n {
                        let k0 = exp(-0.5 * sf[i]) * em[i];
                        kbar[i] = part.var * k0;
                        dbar[i] = -0.5 * part.var * k0;
                    }
                }
                None => {
                    let (mut col, mut dc) = (vec![0.0; n], vec![0.0; n]);
                    for s in 0..self.m {
                        col.iter_mut().for_each(|v| *v = 0.0);
                        add_stationary(
                            part.family,
                            part.var,
                            &sf,
                            &part.fixed_s[s * n..(s + 1) * n],
                            &mut col,
                            Some(&mut dc),
                        );
                        for i in 0..n {
                            kbar[i] += col[i] * inv_m;
                            dbar[i] += dc[i] * inv_m;
                        }
                    }
                }
            }
            total += dot(&kbar, w);
            if let Some(g) = grad.as_deref_mut() {
                // ∂k_im/∂x_c = 2 σ² k₀'(s_im) (z_c − z_ic) f_c with z = x·f (f the inverse lengthscale).
                for (&(pos, f), train) in part.free.iter().zip(&part.train_free) {
                    let z = x[pos] * f;
                    let s: f64 = (0..n).map(|i| w[i] * dbar[i] * (z - train[i])).sum();
                    g[pos] += 2.0 * f * s;
                }
            }
        }
        total
    }

    /// Posterior means and variances at `[x_p, ξ_m]` for every row-major x_p of `xs` (free coordinates) and every
    /// sample, point-major (`P·M` values each), raw units.
    pub fn posterior_many(&self, xs: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let gp = self.gp;
        let (n, m, q) = (gp.n(), self.m, self.free.len().max(1));
        let points = xs.len() / q;
        if n == 0 {
            let means = (0..points * m).map(|c| gp.raw_mean(&self.point(&xs[c / m * q..], c % m), 0.0)).collect();
            return (means, vec![gp.prior_variance(); points * m]);
        }
        let mut kt = Mat::<f64>::zeros(n, points * m);
        for (p, x) in xs.chunks_exact(q).enumerate() {
            self.cross(x, &mut kt, p * m, None);
        }
        let means = (0..points * m)
            .map(|c| {
                let mean = dot(kt.col_as_slice(c), &gp.alpha);
                match gp.prior_mean {
                    Some(_) => gp.raw_mean(&self.point(&xs[c / m * q..], c % m), mean),
                    None => gp.raw_mean(&[], mean),
                }
            })
            .collect();
        gp.chol.solve_l_in_place(kt.as_mut());
        let pv = gp.kernel.prior_variance(&gp.hypers.theta);
        let s2 = gp.std.scale * gp.std.scale;
        let vars = (0..points * m)
            .map(|c| (pv - kt.col_as_slice(c).iter().map(|a| a * a).sum::<f64>()).max(0.0) * s2)
            .collect();
        (means, vars)
    }

    /// Posterior means, variances and their gradients in x at `[x, ξ_m]` for every sample m (as
    /// [`Gp::posterior_batch_grad`] at the composed points with `dims` the free coordinates).
    pub fn posterior_grad(&self, x: &[f64]) -> BatchPosterior {
        self.posterior_grad_selected(x, |mean, _| (0..mean.len()).collect())
    }

    /// As [`FixedSamples::posterior_grad`], with the gradients only at the samples that `select` picks (increasing
    /// indices) given the means and variances of all samples; the gradient rows of the other samples are 0. The
    /// second triangular solve and the contractions then cover the selected samples only (a worst case over the
    /// samples needs few gradients).
    pub fn posterior_grad_selected(
        &self,
        x: &[f64],
        select: impl FnOnce(&[f64], &[f64]) -> Vec<usize>,
    ) -> BatchPosterior {
        let gp = self.gp;
        let (n, m, q) = (gp.n(), self.m, self.free.len());
        if n == 0 {
            let pts: Vec<f64> = (0..m).flat_map(|s| self.point(x, s)).collect();
            let mut b = gp.posterior_batch_grad(&pts, &self.free);
            let mut keep = vec![false; m];
            select(&b.mean, &b.var).into_iter().for_each(|s| keep[s] = true);
            for (s, k) in keep.iter().enumerate() {
                if !k {
                    b.dmean[s * q..(s + 1) * q].iter_mut().for_each(|v| *v = 0.0);
                    b.dvar[s * q..(s + 1) * q].iter_mut().for_each(|v| *v = 0.0);
                }
            }
            return b;
        }
        let mut kt = Mat::<f64>::zeros(n, m);
        let mut deriv = vec![vec![0.0; n * m]; self.parts.len()];
        self.cross(x, &mut kt, 0, Some(&mut deriv));
        let (s, s2) = (gp.std.scale, gp.std.scale * gp.std.scale);
        let mean: Vec<f64> = (0..m)
            .map(|sm| {
                let mean = dot(kt.col_as_slice(sm), &gp.alpha);
                match gp.prior_mean {
                    Some(_) => gp.raw_mean(&self.point(x, sm), mean),
                    None => gp.raw_mean(&[], mean),
                }
            })
            .collect();
        gp.chol.solve_l_in_place(kt.as_mut());
        let pv = gp.kernel.prior_variance(&gp.hypers.theta);
        let raw_var: Vec<f64> = (0..m).map(|p| pv - kt.col_as_slice(p).iter().map(|a| a * a).sum::<f64>()).collect();
        let var: Vec<f64> = raw_var.iter().map(|v| v.max(0.0) * s2).collect();
        let selected = select(&mean, &var);
        let all = selected.len() == m && selected.iter().enumerate().all(|(i, &sm)| i == sm);
        let (mut kinv_k, deriv) = if all {
            (kt, deriv)
        } else {
            let cols = Mat::<f64>::from_fn(n, selected.len(), |i, c| kt[(i, selected[c])]);
            let deriv = deriv
                .iter()
                .map(|d| selected.iter().flat_map(|&sm| d[sm * n..(sm + 1) * n].iter().copied()).collect())
                .collect::<Vec<Vec<f64>>>();
            (cols, deriv)
        };
        gp.chol.solve_lt_in_place(kinv_k.as_mut()); // now (K + Σ)⁻¹ k(X, ·) per column
        let (dm, dv) = self.contract(x, &deriv, &kinv_k);
        let mut out = BatchPosterior { mean, var, dmean: vec![0.0; m * q], dvar: vec![0.0; m * q] };
        for (c, &sm) in selected.iter().enumerate() {
            let scale = if raw_var[sm] > 0.0 { -2.0 * s2 } else { 0.0 };
            for j in 0..q {
                out.dmean[sm * q + j] = dm[c * q + j] * s;
                out.dvar[sm * q + j] = dv[c * q + j] * scale;
            }
            if let Some(pm) = &gp.prior_mean {
                let mut full = vec![0.0; gp.d];
                pm.add_gradient(&self.point(x, sm), &mut full);
                for (j, &dim) in self.free.iter().enumerate() {
                    out.dmean[sm * q + j] += full[dim];
                }
            }
        }
        out
    }
}

/// `col_i += σ² k₀(s_i)` and, with `deriv`, `deriv_i = σ² k₀'(s_i)` at `s_i = a_i + b_i` for a stationary family
/// (`crate::kernel::stationary`), with [`exp_kernel`]: the Matérn families take one exponential per training point
/// and sample, n·M per evaluation. The family is matched once per column and the loops are branch-free, so that
/// they vectorise.
#[inline]
fn add_stationary(family: KernelFamily, var: f64, a: &[f64], b: &[f64], col: &mut [f64], deriv: Option<&mut [f64]>) {
    match family {
        KernelFamily::Matern12 => fill(var, a, b, col, deriv, |s| {
            let r = s.sqrt();
            let e = exp_kernel(-r);
            (e, if r > 1e-12 { -e / (2.0 * r) } else { 0.0 })
        }),
        KernelFamily::Matern32 => fill(var, a, b, col, deriv, |s| {
            let t = 3f64.sqrt() * s.sqrt();
            let e = exp_kernel(-t);
            ((1.0 + t) * e, -1.5 * e)
        }),
        KernelFamily::Matern52 => fill(var, a, b, col, deriv, |s| {
            let t = 5f64.sqrt() * s.sqrt();
            let e = exp_kernel(-t);
            ((1.0 + t + 5.0 * s / 3.0) * e, -(5.0 / 6.0) * (1.0 + t) * e)
        }),
        KernelFamily::Rbf => fill(var, a, b, col, deriv, |s| {
            let e = exp_kernel(-0.5 * s);
            (e, -0.5 * e)
        }),
        KernelFamily::Periodic => unreachable!("periodic is not stationary in s"),
    }
}

#[inline(always)]
fn fill(var: f64, a: &[f64], b: &[f64], col: &mut [f64], deriv: Option<&mut [f64]>, k0: impl Fn(f64) -> (f64, f64)) {
    let n = col.len();
    let (a, b) = (&a[..n], &b[..n]);
    match deriv {
        Some(d) => {
            let d = &mut d[..n];
            for i in 0..n {
                let (k, dk) = k0(a[i] + b[i]);
                col[i] += var * k;
                d[i] = var * dk;
            }
        }
        None => {
            for i in 0..n {
                col[i] += var * k0(a[i] + b[i]).0;
            }
        }
    }
}

/// [`exp`] for the kernels' arguments `x ≤ 0` without branches: `x` is clamped at −708 (the result stays normal,
/// ≥ 3.3·10⁻³⁰⁸, where [`exp`] would return smaller values or 0) and 2^k is built from the bits of the rounded
/// `k + 1.5·2^52` with integer operations; the polynomial of [`exp`] is evaluated as even and odd parts, which
/// halves the dependency chain (≈ 20 % less time in the Matérn loop). Within 2 ulp of the correctly rounded value
/// on [−708, 709], as [`exp`].
#[inline(always)]
fn exp_kernel(x: f64) -> f64 {
    const ROUND: f64 = 6_755_399_441_055_744.0;
    let x = if x < -708.0 { -708.0 } else { x };
    let kr = x * std::f64::consts::LOG2_E + ROUND;
    let k = kr - ROUND;
    let r = (x - k * LN2_HI) - k * LN2_LO;
    // The same polynomial as `exp`, as even and odd parts in r² (two independent Horner chains of half the length).
    let r2 = r * r;
    let mut even = INV_FACTORIAL[12];
    let mut odd = INV_FACTORIAL[13];
    for i in (0..6).rev() {
        even = INV_FACTORIAL[2 * i] + even * r2;
        odd = INV_FACTORIAL[2 * i + 1] + odd * r2;
    }
    // The low bits of `kr` hold k (two's complement): `(k + 1023) << 52` are the bits of 2^k.
    (even + r * odd) * f64::from_bits(kr.to_bits().wrapping_add(1023) << 52)
}

const LN2_HI: f64 = 6.931_471_803_691_238e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;

/// `1/i!` for i = 0 … 13.
const INV_FACTORIAL: [f64; 14] = {
    let mut c = [1.0; 14];
    let mut i = 1;
    while i < 14 {
        c[i] = c[i - 1] / i as f64;
        i += 1;
    }
    c
};

/// `e^x` within 2 ulp of the correctly rounded value, computed inline (Cody–Waite reduction `x = k ln 2 + r`,
/// `|r| ≤ ln 2 / 2`, degree-13 Taylor polynomial, scaling by `2^k` through the exponent bits).
///
/// Why not `f64::exp`: the engine is compiled for baseline x86-64 (SSE2) and faer's runtime-dispatched AVX-512
/// kernels leave the upper vector state dirty, so every call into glibc's VEX-encoded `exp` pays an SSE/AVX
/// state-transition penalty (measured ≈ 220 ns per call instead of ≈ 6 ns on the benchmark machine); inline SSE2
/// arithmetic does not. Where that penalty does not occur (the AMD EPYC machine of the seed-002 context profiling,
/// ≈ 8 ns per `f64::exp` in a Matérn loop) the inline version must still not be slower: the polynomial uses constant
/// coefficients (a division per term made it ≈ 3× slower than glibc there) and the kernel loops use the branch-free
/// [`exp_kernel`], which the compiler vectorises.
fn exp(x: f64) -> f64 {
    const LOG2_E: f64 = std::f64::consts::LOG2_E;
    const ROUND: f64 = 6_755_399_441_055_744.0; // 1.5 · 2^52: adding it rounds to an integer
    if x.is_nan() {
        return x;
    }
    if x > 709.78 {
        return f64::INFINITY;
    }
    if x < -745.2 {
        return 0.0;
    }
    let k = (x * LOG2_E + ROUND) - ROUND;
    let r = (x - k * LN2_HI) - k * LN2_LO;
    // Horner with the Taylor coefficients 1/i! (i = 13 … 0) as constants: multiplications and additions only (a
    // division per term made this slower than glibc's `exp` where the transition penalty does not occur).
    let mut p = INV_FACTORIAL[13];
    for c in INV_FACTORIAL[..13].iter().rev() {
        p = c + p * r;
    }
    let k = k as i64;
    if k < -1000 {
        // Subnormal range: scale in two steps.
        p * f64::from_bits(((k + 1023 + 100) as u64) << 52) * f64::from_bits(((1023 - 100) as u64) << 52)
    } else {
        p * f64::from_bits(((k + 1023) as u64) << 52)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rand::{Rng, SeedableRng, rngs::StdRng};

    use super::super::{Data, GpConfig, Hyperparameters, MeanFunction};
    use super::*;
    use crate::kernel::{Component, Kernel};

    #[derive(Debug)]
    struct Tilt;

    impl MeanFunction for Tilt {
        fn value(&self, x: &[f64]) -> f64 {
            0.3 * x[0] - 0.2 * x[3] * x[3]
        }
        fn add_gradient(&self, x: &[f64], grad: &mut [f64]) {
            grad[0] += 0.3;
            grad[3] -= 0.4 * x[3];
        }
    }

    fn model(rng: &mut StdRng, kernel: Kernel, prior_mean: bool, n: usize) -> Gp {
        let d = 4;
        let x: Vec<f64> = (0..n * d).map(|_| rng.random::<f64>()).collect();
        let y: Vec<f64> = x.chunks_exact(d).map(|p| (4.0 * p[0]).sin() + p[1] * p[2] - p[3]).collect();
        let mut config = GpConfig::default_for(d);
        config.kernel = kernel;
        if prior_mean {
            config.prior_mean = Some(Arc::new(Tilt));
        }
        let theta: Vec<f64> = (0..config.kernel.n_params()).map(|_| rng.random_range(-1.2..0.2)).collect();
        Gp::new(&Data::new(d, x, y), &config, Hyperparameters { theta, noise_variance: 1e-4, mean: 0.1 }).unwrap()
    }

    fn close(a: f64, b: f64, scale: f64) -> bool {
        (a - b).abs() <= 1e-10 * scale.max(a.abs()).max(b.abs())
    }

    #[test]
    fn equals_the_batched_posterior_at_the_composed_points() {
        let mut rng = StdRng::seed_from_u64(3);
        let kernels = [
            Kernel::ard(KernelFamily::Rbf, 4),
            Kernel::ard(KernelFamily::Matern52, 4),
            Kernel::ard(KernelFamily::Matern12, 4),
            Kernel::additive(
                vec![
                    Component { family: KernelFamily::Matern32, dims: vec![0, 2] },
                    Component { family: KernelFamily::Rbf, dims: vec![1, 2, 3] },
                ],
                4,
            ),
        ];
        for (t, kernel) in kernels.into_iter().enumerate() {
            for n in [0, 1, 30] {
                let gp = model(&mut rng, kernel.clone(), t % 2 == 1, n);
                let (free, fixed) = if t < 2 { (vec![2, 0], vec![3, 1]) } else { (vec![1, 0, 3, 2], vec![]) };
                let m = if fixed.is_empty() { 1 } else { 11 };
                let samples: Vec<f64> = (0..m * fixed.len()).map(|_| rng.random::<f64>()).collect();
                let fs = gp.fixed_samples(&free, &fixed, &samples).unwrap();
                assert_eq!(fs.n_samples(), m);
                let xs: Vec<f64> = (0..3 * free.len()).map(|_| rng.random::<f64>()).collect();
                let (mu, var) = fs.posterior_many(&xs);
                for (p, x) in xs.chunks_exact(free.len()).enumerate() {
                    let pts: Vec<f64> = (0..m).flat_map(|s| fs.point(x, s)).collect();
                    let reference = gp.posterior_batch_grad(&pts, &free);
                    let b = fs.posterior_grad(x);
                    let pv = gp.prior_variance();
                    for s in 0..m {
                        assert!(close(b.mean[s], reference.mean[s], 1.0), "{t} {n}: mean");
                        assert!(close(b.var[s], reference.var[s], pv), "{t} {n}: var");
                        assert!(close(mu[p * m + s], reference.mean[s], 1.0));
                        assert!(close(var[p * m + s], reference.var[s], pv));
                    }
                    let scale = reference.dmean.iter().chain(&reference.dvar).fold(1.0f64, |a, v| a.max(v.abs()));
                    for (a, r) in b.dmean.iter().zip(&reference.dmean).chain(b.dvar.iter().zip(&reference.dvar)) {
                        assert!(close(*a, *r, scale), "{t} {n}: gradient {a} vs {r}");
                    }
                    // Gradients at every third sample only: those rows as the reference, the others 0.
                    let q = free.len();
                    let sel = fs.posterior_grad_selected(x, |mean, var| {
                        assert_eq!((mean, var), (&b.mean[..], &b.var[..]));
                        (0..mean.len()).filter(|s| s % 3 == 1).collect()
                    });
                    assert_eq!((&sel.mean, &sel.var), (&b.mean, &b.var));
                    for s in 0..m {
                        for c in 0..q {
                            for (a, r) in
                                [(sel.dmean[s * q + c], b.dmean[s * q + c]), (sel.dvar[s * q + c], b.dvar[s * q + c])]
                            {
                                if s % 3 == 1 {
                                    assert!(close(a, r, scale), "{t} {n}: selected gradient {a} vs {r}");
                                } else {
                                    assert_eq!(a, 0.0);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn inline_exp_is_within_two_ulp_of_libm() {
        let mut rng = StdRng::seed_from_u64(9);
        let ulp = |v: f64| f64::from_bits(v.to_bits() + 1) - v;
        for i in 0..200_000 {
            let x = if i % 2 == 0 { rng.random_range(-40.0..5.0) } else { rng.random_range(-745.0..709.0) };
            let (a, b) = (exp(x), x.exp());
            assert!((a - b).abs() <= 2.0 * ulp(b).max(f64::from_bits(1)), "exp({x}) = {a} vs {b}");
        }
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-800.0), 0.0);
        assert!(exp(f64::NAN).is_nan());
        assert_eq!(exp(800.0), f64::INFINITY);
        for i in 0..200_000 {
            let x = if i % 2 == 0 { rng.random_range(-40.0..0.0) } else { rng.random_range(-708.0..709.0) };
            let (a, b) = (exp_kernel(x), x.exp());
            assert!((a - b).abs() <= 2.0 * ulp(b), "exp_kernel({x}) = {a} vs {b}");
        }
        assert_eq!(exp_kernel(-900.0), exp_kernel(-708.0));
        assert_eq!(exp_kernel(0.0), 1.0);
        assert!(exp_kernel(f64::NAN).is_nan());
    }

    #[test]
    fn rejects_what_it_cannot_split() {
        let mut rng = StdRng::seed_from_u64(5);
        let gp = model(&mut rng, Kernel::ard(KernelFamily::Rbf, 4), false, 5);
        assert!(gp.fixed_samples(&[0, 1], &[2], &[0.5]).is_none(), "dimension 3 missing");
        assert!(gp.fixed_samples(&[0, 1, 2], &[2, 3], &[0.5, 0.5]).is_none(), "dimension 2 twice");
        let periodic = model(&mut rng, Kernel::ard(KernelFamily::Periodic, 4), false, 5);
        assert!(periodic.fixed_samples(&[0, 1], &[2, 3], &[0.5, 0.5]).is_none());
    }
}
