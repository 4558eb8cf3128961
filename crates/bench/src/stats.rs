//! Small statistics helpers for summaries and plots.

/// Arithmetic mean (NaN for no data).
pub fn mean(v: &[f64]) -> f64 {
    if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / v.len() as f64 }
}

/// Standard error of the mean (0 for fewer than two values).
pub fn stderr(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = mean(v);
    (v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64 / v.len() as f64).sqrt()
}

/// Quantile `q` ∈ [0, 1] by linear interpolation (NaN for no data).
pub fn quantile(v: &[f64], q: f64) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    if s.is_empty() {
        return f64::NAN;
    }
    s.sort_by(f64::total_cmp);
    let pos = q.clamp(0.0, 1.0) * (s.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    s[lo] + (s[hi] - s[lo]) * (pos - lo as f64)
}

/// Mean of the values left after dropping the lowest and highest `fraction` of them.
#[allow(dead_code, reason = "for suites that report trimmed means (seed 003)")]
pub fn trimmed_mean(v: &[f64], fraction: f64) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let k = (s.len() as f64 * fraction).floor() as usize;
    mean(&s[k..s.len() - k])
}

/// Puts step curves `(x, y)` on the union of their x values, carrying each curve's last value forward (and its
/// first value backward): how curves against cost are averaged.
pub fn align(curves: &[(Vec<f64>, Vec<f64>)]) -> (Vec<f64>, Vec<Vec<f64>>) {
    let mut grid: Vec<f64> = curves.iter().flat_map(|(x, _)| x.iter().copied()).collect();
    grid.sort_by(f64::total_cmp);
    grid.dedup();
    let ys = curves
        .iter()
        .map(|(x, y)| {
            let mut j = 0;
            grid.iter()
                .map(|g| {
                    while j + 1 < x.len() && x[j + 1] <= *g {
                        j += 1;
                    }
                    y.get(j).copied().unwrap_or(f64::NAN)
                })
                .collect()
        })
        .collect();
    (grid, ys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_and_trimmed_mean() {
        let v = [3.0, 1.0, 2.0, 4.0];
        assert_eq!(quantile(&v, 0.5), 2.5);
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(trimmed_mean(&[0.0, 1.0, 1.0, 100.0], 0.25), 1.0);
    }

    #[test]
    fn align_carries_values_forward() {
        let (grid, ys) = align(&[(vec![1.0, 3.0], vec![10.0, 5.0]), (vec![2.0], vec![7.0])]);
        assert_eq!(grid, [1.0, 2.0, 3.0]);
        assert_eq!(ys[0], [10.0, 10.0, 5.0]);
        assert_eq!(ys[1], [7.0, 7.0, 7.0]);
    }
}
