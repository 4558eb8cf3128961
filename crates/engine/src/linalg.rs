//! Thin facade over faer: a Cholesky factor with a jitter ladder, solves, and O(n²) extension.
//!
//! Everything runs with `Par::Seq`: for the sizes of BO (n ≲ 2000) faer's sequential kernels are as fast as the
//! parallel ones and leave the server's other requests their core. Up to order [`SMALL`] the single-vector solves
//! are plain substitution loops over L's contiguous columns instead: there faer's recursive,
//! blocked kernels spend more instructions on dispatch than on arithmetic (`bench latency` under callgrind,
//! `docs/bench/robust.md`, "Suggest latency"). The results agree with faer's to rounding.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::{self, factor::LltRegularization};
use faer::linalg::triangular_solve::{solve_lower_triangular_in_place, solve_upper_triangular_in_place};
use faer::{Mat, MatMut, MatRef, Par};

use crate::error::{Error, Result};

/// First rung of the jitter ladder, relative to the mean diagonal.
const JITTER_START: f64 = 1e-8;
/// Number of rungs (each ×10): the last adds 1e-2 × mean diagonal.
const JITTER_RUNGS: usize = 7;
/// Largest order solved by the substitution loops of this module rather than by faer (module docs).
const SMALL: usize = 64;

/// Lower Cholesky factor `L` of `A + jitter·I`, with the jitter that was needed.
#[derive(Debug, Clone)]
pub struct Cholesky {
    l: Mat<f64>,
    jitter: f64,
}

impl Cholesky {
    /// Factors the symmetric matrix whose lower triangle is in `a` (the upper triangle is ignored).
    ///
    /// On failure adds `jitter = 1e-8·mean(diag)·10ᵏ`, k = 0..6, to the diagonal before giving up.
    pub fn factor(a: Mat<f64>) -> Result<Self> {
        let n = a.nrows();
        if n == 0 {
            return Ok(Self { l: a, jitter: 0.0 });
        }
        let mean_diag = (0..n).map(|i| a[(i, i)]).sum::<f64>() / n as f64;
        if !mean_diag.is_finite() || (0..n).any(|j| (j..n).any(|i| !a[(i, j)].is_finite())) {
            return Err(Error::Numerical("covariance matrix has non-finite entries".into()));
        }
        let scale = if mean_diag > 0.0 { mean_diag } else { 1.0 };
        let mut jitter = 0.0;
        for rung in 0..=JITTER_RUNGS {
            let mut l = a.clone();
            for i in 0..n {
                l[(i, i)] += jitter;
            }
            if factor_in_place(l.as_mut()) {
                zero_upper(l.as_mut());
                return Ok(Self { l, jitter });
            }
            jitter = scale * JITTER_START * 10f64.powi(rung as i32);
        }
        Err(Error::Numerical(format!("Cholesky failed even with jitter {jitter:e}")))
    }

    /// Dimension.
    pub fn n(&self) -> usize {
        self.l.nrows()
    }

    /// Jitter added to the diagonal (0 when none was needed).
    pub fn jitter(&self) -> f64 {
        self.jitter
    }

    /// The factor (upper triangle is zero).
    pub fn l(&self) -> MatRef<'_, f64> {
        self.l.as_ref()
    }

    /// `b ← L⁻¹ b`.
    pub fn solve_l_in_place(&self, mut b: MatMut<'_, f64>) {
        if self.n() <= SMALL
            && b.ncols() == 1
            && let Some(v) = b.as_mut().col_mut(0).try_as_col_major_mut()
        {
            return self.forward_substitute(v.as_slice_mut());
        }
        solve_lower_triangular_in_place(self.l.as_ref(), b, Par::Seq);
    }

    /// `b ← L⁻ᵀ b`.
    pub fn solve_lt_in_place(&self, mut b: MatMut<'_, f64>) {
        if self.n() <= SMALL
            && b.ncols() == 1
            && let Some(v) = b.as_mut().col_mut(0).try_as_col_major_mut()
        {
            return self.back_substitute(v.as_slice_mut());
        }
        solve_upper_triangular_in_place(self.l.as_ref().transpose(), b, Par::Seq);
    }

    /// `b ← L⁻¹ b` column by column (`b_j /= L_jj`, then `b_i −= L_ij b_j` below it).
    fn forward_substitute(&self, b: &mut [f64]) {
        for j in 0..b.len() {
            let col = self.l.col_as_slice(j);
            b[j] /= col[j];
            let bj = b[j];
            b[j + 1..].iter_mut().zip(&col[j + 1..]).for_each(|(v, l)| *v -= l * bj);
        }
    }

    /// `b ← L⁻ᵀ b` from the last row up (`b_i = (b_i − Σ_{k>i} L_ki b_k) / L_ii`).
    fn back_substitute(&self, b: &mut [f64]) {
        for i in (0..b.len()).rev() {
            let col = self.l.col_as_slice(i);
            b[i] = (b[i] - dot(&b[i + 1..], &col[i + 1..])) / col[i];
        }
    }

    /// `L⁻¹ b` for a vector.
    pub fn solve_l(&self, b: &[f64]) -> Vec<f64> {
        let mut m = col(b);
        self.solve_l_in_place(m.as_mut());
        m.col_as_slice(0).to_vec()
    }

    /// `A⁻¹ b` for a vector.
    pub fn solve(&self, b: &[f64]) -> Vec<f64> {
        let mut m = col(b);
        self.solve_l_in_place(m.as_mut());
        self.solve_lt_in_place(m.as_mut());
        m.col_as_slice(0).to_vec()
    }

    /// `ln det A = 2 Σ ln Lᵢᵢ`.
    pub fn log_det(&self) -> f64 {
        2.0 * (0..self.n()).map(|i| self.l[(i, i)].ln()).sum::<f64>()
    }

    /// `A⁻¹`, full symmetric.
    pub fn inverse(&self) -> Mat<f64> {
        let n = self.n();
        let mut out = Mat::zeros(n, n);
        let mut mem = MemBuffer::new(llt::inverse::inverse_scratch::<f64>(n, Par::Seq));
        llt::inverse::inverse(out.as_mut(), self.l.as_ref(), Par::Seq, MemStack::new(&mut mem));
        for j in 0..n {
            for i in 0..j {
                out[(i, j)] = out[(j, i)];
            }
        }
        out
    }

    /// Extends the factor of `A` to that of `[[A, k], [kᵀ, k_nn]]` in O(n²): `l = L⁻¹k`, `d = √(k_nn + jitter − lᵀl)`.
    ///
    /// The existing jitter is added to `k_nn` so the factor stays that of `A' + jitter·I`. If the new pivot is
    /// not safely positive (the point duplicates a noiseless one), it is floored at `1e-8·k_nn` and the extra
    /// diagonal term is reported through the return value (0 when none was needed).
    pub fn extend(&mut self, k: &[f64], k_nn: f64) -> Result<f64> {
        let n = self.n();
        if k.len() != n || !k_nn.is_finite() || k.iter().any(|v| !v.is_finite()) {
            return Err(Error::Numerical("extension with non-finite covariances".into()));
        }
        let l = self.solve_l(k);
        let d2 = k_nn + self.jitter - l.iter().map(|v| v * v).sum::<f64>();
        let floor = JITTER_START * k_nn.abs().max(f64::MIN_POSITIVE);
        let (d2, extra) = if d2 > floor { (d2, 0.0) } else { (floor, floor - d2) };
        self.l.resize_with(n + 1, n + 1, |_, _| 0.0);
        for (j, v) in l.iter().enumerate() {
            self.l[(n, j)] = *v;
        }
        self.l[(n, n)] = d2.sqrt();
        Ok(extra)
    }
}

/// faer's in-place LLᵀ on the lower triangle; false on a non-positive pivot.
fn factor_in_place(a: MatMut<'_, f64>) -> bool {
    let n = a.nrows();
    let mut mem = MemBuffer::new(llt::factor::cholesky_in_place_scratch::<f64>(n, Par::Seq, Default::default()));
    llt::factor::cholesky_in_place(
        a,
        LltRegularization::default(),
        Par::Seq,
        MemStack::new(&mut mem),
        Default::default(),
    )
    .is_ok()
}

fn zero_upper(mut a: MatMut<'_, f64>) {
    for j in 0..a.ncols() {
        for i in 0..j {
            a[(i, j)] = 0.0;
        }
    }
}

/// `a · b` over four running sums (which the compiler can keep in vector registers; one sum cannot be reordered).
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut lanes = [0.0; 4];
    for (x, y) in a.chunks_exact(4).zip(b.chunks_exact(4)) {
        for k in 0..4 {
            lanes[k] += x[k] * y[k];
        }
    }
    let tail: f64 = a[n - n % 4..].iter().zip(&b[n - n % 4..]).map(|(x, y)| x * y).sum();
    (lanes[0] + lanes[2]) + (lanes[1] + lanes[3]) + tail
}

/// A column matrix holding `b`.
pub fn col(b: &[f64]) -> Mat<f64> {
    Mat::from_fn(b.len(), 1, |i, _| b[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spd(n: usize) -> Mat<f64> {
        let b = Mat::from_fn(n, n, |i, j| ((i * 7 + j * 3) % 11) as f64 / 11.0 - 0.4);
        let mut a = &b * b.transpose();
        for i in 0..n {
            a[(i, i)] += 0.5;
        }
        a
    }

    #[test]
    fn factor_reconstructs_and_solves() {
        let a = spd(12);
        let c = Cholesky::factor(a.clone()).unwrap();
        assert_eq!(c.jitter(), 0.0);
        let rec = c.l() * c.l().transpose();
        for i in 0..12 {
            for j in 0..12 {
                assert!((rec[(i, j)] - a[(i, j)]).abs() < 16.0 * 12.0 * f64::EPSILON * 4.0);
            }
        }
        let b: Vec<f64> = (0..12).map(|i| i as f64).collect();
        let x = c.solve(&b);
        let ax = &a * col(&x);
        for i in 0..12 {
            assert!((ax[(i, 0)] - b[i]).abs() < 1e-12);
        }
        let inv = c.inverse();
        let id = &a * &inv;
        for i in 0..12 {
            for j in 0..12 {
                let e = if i == j { 1.0 } else { 0.0 };
                assert!((id[(i, j)] - e).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn singular_matrix_gets_jitter_and_reports_it() {
        let a = Mat::from_fn(3, 3, |_, _| 1.0);
        let c = Cholesky::factor(a).unwrap();
        assert!(c.jitter() > 0.0 && c.jitter() <= 1e-2);
    }

    #[test]
    fn nan_matrix_is_an_error_not_a_panic() {
        let mut a = spd(3);
        a[(2, 1)] = f64::NAN;
        assert!(Cholesky::factor(a).is_err());
    }

    #[test]
    fn extension_equals_refactorisation() {
        let a = spd(20);
        let sub = a.submatrix(0, 0, 19, 19).to_owned();
        let mut c = Cholesky::factor(sub).unwrap();
        let k: Vec<f64> = (0..19).map(|i| a[(19, i)]).collect();
        assert_eq!(c.extend(&k, a[(19, 19)]).unwrap(), 0.0);
        let full = Cholesky::factor(a).unwrap();
        for i in 0..20 {
            for j in 0..=i {
                assert!((c.l()[(i, j)] - full.l()[(i, j)]).abs() < 1e-13);
            }
        }
    }
}
