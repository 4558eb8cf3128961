//! Grids and scores of the seed-003 suite (TRUVAR, Bogunovic et al., NIPS 2016, Sec. 4); its GP test functions
//! are [`engine::testfunctions`]'s.

pub use engine::testfunctions::{PosteriorMeanFunction, argmax_mean, sample_gp};

/// `n × n` grid of [0,1]² (both edges included), row-major points, x0 varying slowest.
pub fn unit_grid(n: usize) -> Vec<f64> {
    let at = |i: usize| if n == 1 { 0.5 } else { i as f64 / (n - 1) as f64 };
    (0..n).flat_map(|i| (0..n).flat_map(move |j| [at(i), at(j)])).collect()
}

/// Index of the grid point of an `n × n` [`unit_grid`] nearest to `(x0, x1)`.
pub fn grid_index(n: usize, x0: f64, x1: f64) -> usize {
    let r = |v: f64| ((v * (n - 1) as f64).round() as usize).min(n - 1);
    r(x0) * n + r(x1)
}

/// F1 score of the estimated super-level set against the true one.
pub fn f1(estimated: &[bool], truth: &[bool]) -> f64 {
    let tp = estimated.iter().zip(truth).filter(|(e, t)| **e && **t).count() as f64;
    let fp = estimated.iter().zip(truth).filter(|(e, t)| **e && !**t).count() as f64;
    let fneg = estimated.iter().zip(truth).filter(|(e, t)| !**e && **t).count() as f64;
    if tp == 0.0 { 0.0 } else { 2.0 * tp / (2.0 * tp + fp + fneg) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f1_of_a_perfect_and_of_an_empty_estimate() {
        assert_eq!(f1(&[true, false, true], &[true, false, true]), 1.0);
        assert_eq!(f1(&[false, false, false], &[true, false, true]), 0.0);
        assert!((f1(&[true, true, false], &[true, false, true]) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn grid_index_inverts_the_grid() {
        let g = unit_grid(50);
        assert_eq!(grid_index(50, g[2 * 137], g[2 * 137 + 1]), 137);
    }
}
