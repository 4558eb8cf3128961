//! Special functions of the standard normal distribution, written for the far tails.
//!
//! LogEI (Ament et al., "Unexpected Improvements to Expected Improvement for Bayesian Optimization",
//! NeurIPS 2023) and MES need `log Φ(z)` and `log h(z)`, `h(z) = φ(z) + zΦ(z)`, for z down to −10⁸, where Φ
//! underflows. Both are computed through the scaled complementary error function `erfcx(x) = exp(x²)·erfc(x)`.

/// `ln(2π)/2`.
const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;
/// `ln(π/2)/2`.
const HALF_LN_HALF_PI: f64 = 0.225_791_352_644_727_4;

/// Standard normal density φ(z).
pub fn norm_pdf(z: f64) -> f64 {
    (-0.5 * z * z - LN_SQRT_2PI).exp()
}

/// Standard normal distribution function Φ(z), accurate in both tails.
pub fn norm_cdf(z: f64) -> f64 {
    if z < -3.0 {
        0.5 * erfcx(-z / std::f64::consts::SQRT_2) * (-0.5 * z * z).exp()
    } else {
        0.5 * libm::erfc(-z / std::f64::consts::SQRT_2)
    }
}

/// Standard normal quantile Φ⁻¹(p) for p in (0, 1); ±∞ at the ends.
///
/// Acklam's rational approximation (relative error 1.2e-9) refined by one Halley step on the accurate Φ.
#[allow(clippy::excessive_precision)] // Acklam's published coefficients, kept verbatim
pub fn norm_quantile(p: f64) -> f64 {
    if p.is_nan() {
        return f64::NAN;
    }
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.383577518672690e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] =
        [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    let x = if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    };
    // Halley step on Φ(x) − p (in the upper half on the complement to keep precision).
    let e = if x > 0.0 { (1.0 - p) - norm_cdf(-x) } else { norm_cdf(x) - p };
    let u = e * (2.0 * std::f64::consts::PI).sqrt() * (0.5 * x * x).exp();
    x - u / (1.0 + 0.5 * x * u)
}

/// Scaled complementary error function `exp(x²)·erfc(x)` for x ≥ 0 (clamped at 0 below).
///
/// Below x = 2 the direct product (statrs' erfc is accurate there); from 2 up, the continued fraction
/// `erfc(x) = e^{−x²}/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …))))` evaluated backwards from 60 terms, which is
/// exact to rounding for x ≥ 2 (checked against scipy's erfcx) and never under- or overflows.
pub fn erfcx(x: f64) -> f64 {
    let x = x.max(0.0);
    if x < 2.0 {
        return libm::erfc(x) * (x * x).exp();
    }
    let mut t = x;
    for k in (1..=60).rev() {
        t = x + 0.5 * f64::from(k) / t;
    }
    1.0 / (std::f64::consts::PI.sqrt() * t)
}

/// `ln Φ(z)`, finite for every finite z.
pub fn log_norm_cdf(z: f64) -> f64 {
    if z > 0.0 {
        // Φ(z) = 1 − Φ(−z): keep the small tail exactly.
        (-0.5 * libm::erfc(z / std::f64::consts::SQRT_2)).ln_1p()
    } else if z > -3.0 {
        norm_cdf(z).ln()
    } else {
        (0.5 * erfcx(-z / std::f64::consts::SQRT_2)).ln() - 0.5 * z * z
    }
}

/// True where [`log_norm_cdf`] is exactly −0: from z/√2 ≥ 28 on, `libm::erfc` underflows to 0 (its last branch
/// returns 2⁻¹⁰²²·2⁻¹⁰²²) and `ln_1p(−0) = −0`. A sum of `ln Φ` terms may skip these terms without changing a bit.
pub fn log_norm_cdf_vanishes(z: f64) -> bool {
    z / std::f64::consts::SQRT_2 >= 28.0
}

/// Inverse Mills ratio φ(z)/Φ(z), stable for very negative z (where it tends to −z).
pub fn inv_mills(z: f64) -> f64 {
    if z > -3.0 {
        norm_pdf(z) / norm_cdf(z)
    } else {
        // φ(z)/Φ(z) = √(2/π) / erfcx(−z/√2)
        (2.0 / std::f64::consts::PI).sqrt() / erfcx(-z / std::f64::consts::SQRT_2)
    }
}

/// `ln(1 − eˣ)` for x < 0 (Mächler 2012).
pub fn log1mexp(x: f64) -> f64 {
    if x > -std::f64::consts::LN_2 { (-x.exp_m1()).ln() } else { (-x.exp()).ln_1p() }
}

/// `ln h(z)` with `h(z) = φ(z) + zΦ(z)`, the expected improvement of a standard normal above −z.
///
/// Follows Ament et al. 2023, Eq. (9): direct for z > −1; for −10³ < z ≤ −1,
/// `−z²/2 − ln√(2π) + log1mexp(ln(erfcx(−z/√2)·|z|) + ln√(π/2))`. Below −10³ (deviation from Eq. 9, which keeps
/// the erfcx form down to −1/√ε): the Mills-ratio series `h = φ(z)(t − 3t² + 15t³ − 105t⁴ + …)`, t = 1/z²
/// (truncation error ~10⁻²¹ relative there). The erfcx form's `1 − r` is ~1/z², and far below −10³ the rounding of
/// `ln(erfcx·|z|) + ln√(π/2)` can reach it, so that `log1mexp` got 0 or a positive argument (−∞ or NaN) near −10⁸.
pub fn log_h(z: f64) -> f64 {
    if z > -1.0 {
        (norm_pdf(z) + z * norm_cdf(z)).ln()
    } else if z > LOG_H_TAIL {
        let w = (erfcx(-z / std::f64::consts::SQRT_2) * z.abs()).ln() + HALF_LN_HALF_PI;
        -0.5 * z * z - LN_SQRT_2PI + log1mexp(w)
    } else {
        log_h_tail(z)
    }
}

/// Where [`log_h`] and [`log_h_with_slope`] switch from the erfcx form to the Mills-ratio series.
const LOG_H_TAIL: f64 = -1e3;

/// `ln h(z)` for z ≤ [`LOG_H_TAIL`] by the Mills-ratio series (see [`log_h`]).
fn log_h_tail(z: f64) -> f64 {
    let t = 1.0 / (z * z);
    -0.5 * z * z - LN_SQRT_2PI + t.ln() + (t * (-3.0 + t * (15.0 - 105.0 * t))).ln_1p()
}

/// `(ln h(z), Φ(z)/h(z))`: [`log_h`] (the same value) and its derivative `d/dz ln h`, from the same pieces (no
/// `ln Φ − ln h`, whose two logs of size z²/2 cancel for |z| ≳ 10³). For
/// −10³ < z ≤ −1, with `r = erfcx(−z/√2)·|z|·√(π/2)` (so `h = φ(z)(1 − r)` and `Φ = φ(z) r/|z|`), the slope is
/// `r / (|z| (1 − r))`; below, where 1 − r ≈ 1/z² loses digits, the asymptotic series of the Mills ratio gives
/// `|z| (1 − t + 3t² − 15t³)/(1 − 3t + 15t² − 105t³)`, t = 1/z² (truncation error ~10⁻²¹ there).
pub fn log_h_with_slope(z: f64) -> (f64, f64) {
    let tail_slope = |z: f64| {
        let t = 1.0 / (z * z);
        -z * (1.0 - t + 3.0 * t * t - 15.0 * t * t * t) / (1.0 - 3.0 * t + 15.0 * t * t - 105.0 * t * t * t)
    };
    if z > -1.0 {
        let cdf = norm_cdf(z);
        let h = norm_pdf(z) + z * cdf;
        (h.ln(), cdf / h)
    } else if z > LOG_H_TAIL {
        let w = (erfcx(-z / std::f64::consts::SQRT_2) * z.abs()).ln() + HALF_LN_HALF_PI;
        let one_minus_r = if w > -std::f64::consts::LN_2 { -w.exp_m1() } else { 1.0 - w.exp() };
        (-0.5 * z * z - LN_SQRT_2PI + log1mexp(w), w.exp() / (z.abs() * one_minus_r))
    } else {
        (log_h_tail(z), tail_slope(z))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_norm_cdf_is_negative_zero_where_it_vanishes() {
        let edge = 28.0 * std::f64::consts::SQRT_2;
        let mut z = edge * (1.0 - 1e-12);
        for _ in 0..2000 {
            if log_norm_cdf_vanishes(z) {
                assert_eq!(log_norm_cdf(z).to_bits(), (-0.0f64).to_bits(), "z = {z}");
            }
            z = f64::from_bits(z.to_bits() + 1);
        }
        assert!(log_norm_cdf_vanishes(edge * (1.0 + 1e-12)) && !log_norm_cdf_vanishes(edge * (1.0 - 1e-12)));
        for z in [40.0, 41.0, 1e3, 1e300, f64::INFINITY] {
            assert!(log_norm_cdf_vanishes(z));
            assert_eq!(log_norm_cdf(z).to_bits(), (-0.0f64).to_bits());
        }
    }

    fn rel(a: f64, b: f64) -> f64 {
        (a - b).abs() / b.abs().max(1e-300)
    }

    #[test]
    fn log_h_matches_direct_formula_where_representable() {
        for i in 0..400 {
            let z = -30.0 + 0.1 * f64::from(i);
            let direct = (norm_pdf(z) + z * norm_cdf(z)).ln();
            if direct.is_finite() && z > -8.0 {
                assert!(rel(log_h(z), direct) < 1e-9, "z = {z}: {} vs {direct}", log_h(z));
            }
        }
    }

    #[test]
    #[allow(clippy::excessive_precision)] // mpmath's digits, kept verbatim
    fn log_h_with_slope_matches_log_h_and_mpmath() {
        // crates/engine/tests/fixtures/gen_log_h_slope.py (mpmath 1.3.0, 60 digits): Φ(z)/h(z).
        let reference = [
            (-1e9_f64, 1.0e+9),
            (-1e6_f64, 1.000000000002e+6),
            (-3e4_f64, 3.0000000066666666e+4),
            (-1000_f64, 1.000001999994e+3),
            (-40_f64, 4.0049906657648518e+1),
            (-8.5_f64, 8.7263598422574505),
            (-3_f64, 3.5323375176251605),
            (-1.0000001_f64, 1.9042713055274621),
            (-1_f64, 1.9042712333296918),
            (-0.5_f64, 1.5598731483480797),
            (0_f64, 1.2533141373155003),
            (0.7_f64, 8.9934143441173923e-1),
            (4_f64, 2.499916356258311e-1),
            (35_f64, 2.8571428571428571e-2),
        ];
        for (z, slope) in reference {
            let (value, got) = log_h_with_slope(z);
            assert_eq!(value.to_bits(), log_h(z).to_bits(), "z = {z}");
            assert!(rel(got, slope) < 1e-12, "z = {z}: {got} vs {slope}");
        }
        // The slope is the derivative of ln h across the branches (central differences).
        let mut z = -300.0f64;
        while z < 40.0 {
            let e = 1e-6 * z.abs().max(1.0);
            let fd = (log_h(z + e) - log_h(z - e)) / (2.0 * e);
            assert!(rel(log_h_with_slope(z).1, fd) < 1e-5, "z = {z}");
            z += 0.37;
        }
    }

    #[test]
    #[allow(clippy::excessive_precision)] // mpmath's digits, kept verbatim
    fn log_h_matches_mpmath_across_the_series_switch() {
        // crates/engine/tests/fixtures/gen_log_h_slope.py (mpmath 1.3.0, 100 digits): ln h(z).
        let log_h_reference = [
            (-1e9_f64, -5.0000000000000004e+17),
            (-6e7_f64, -1.8000000000000367e+15),
            (-3e7_f64, -4.5000000000003535e+14),
            (-1e6_f64, -5.0000000002854996e+11),
            (-3e4_f64, -4.5000002153684386e+8),
            (-1000.5_f64, -5.0051486045183824e+5),
            (-1000_f64, -5.0001473445209116e+5),
            (-999.5_f64, -4.9951485845184408e+5),
            (-40_f64, -8.0829856835661996e+2),
            (-3_f64, -7.8696860596030285),
        ];
        for (z, reference) in log_h_reference {
            assert!(rel(log_h(z), reference) < 4.0 * f64::EPSILON, "z = {z}: {} vs {reference}", log_h(z));
        }
    }

    #[test]
    fn log_h_is_finite_and_increasing_from_far_in_the_tail_to_positive_z() {
        // 20 000 points from −10⁹ to −1, geometric (the erfcx form once gave −∞ or NaN near −6.7·10⁷, see
        // `log_h`), then −1 to 3 by 0.01 across the direct form.
        let tail = (0..=20_000).map(|k| -(1e9f64.powf(1.0 - f64::from(k) / 20_000.0)));
        let near = (1..=400).map(|k| -1.0 + 0.01 * f64::from(k));
        let mut prev = f64::NEG_INFINITY;
        for z in tail.chain(near) {
            let (v, slope) = log_h_with_slope(z);
            assert!(v.is_finite() && slope.is_finite() && slope > 0.0, "z = {z}: {v}, {slope}");
            assert_eq!(v.to_bits(), log_h(z).to_bits(), "z = {z}");
            assert!(v > prev, "not increasing at z = {z}");
            prev = v;
        }
    }

    #[test]
    fn erfcx_matches_scipy() {
        // scipy.special.erfcx 1.17.1
        let reference = [
            (0.5, 0.6156903441929258),
            (1.9, 0.26650937366167254),
            (2.0, 0.2553956763105058),
            (5.0, 0.11070463773306861),
            (10.0, 0.05614099274382259),
            (26.0, 0.02168358485056291),
            (1e6, 5.641895835474742e-7),
        ];
        for (x, r) in reference {
            assert!(rel(erfcx(x), r) < 1e-14, "x = {x}: {} vs {r}", erfcx(x));
        }
    }

    #[test]
    fn log_norm_cdf_matches_log_of_cdf() {
        for z in [-30.0f64, -6.0, -5.0, -4.9, -1.0, 0.0, 2.0, 8.0] {
            let direct = norm_cdf(z).ln();
            assert!((log_norm_cdf(z) - direct).abs() < 1e-11 * direct.abs().max(1e-16) + 1e-16, "z = {z}");
        }
        assert!(log_norm_cdf(-1e5).is_finite());
    }

    #[test]
    fn quantile_inverts_cdf() {
        for p in [1e-300, 1e-12, 0.01, 0.02425, 0.3, 0.5, 0.9, 1.0 - 1e-9] {
            // Φ at −37 carries exp(−x²/2) with x² ~ 1369, so ~1e-13 of its own rounding.
            assert!(rel(norm_cdf(norm_quantile(p)), p) < 1e-12, "p = {p}: {}", rel(norm_cdf(norm_quantile(p)), p));
        }
        // scipy.stats.norm.ppf
        assert!(rel(norm_quantile(0.975), 1.959963984540054) < 1e-15);
        assert!(rel(norm_quantile(1e-10), -6.361340902404056) < 1e-14);
    }
}
