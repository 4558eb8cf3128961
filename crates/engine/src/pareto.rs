//! Pareto fronts of maximised objectives: the non-dominated filter, the hypervolume a front dominates above a
//! reference point, and the reference point inferred from the data when the study gives no thresholds.

/// Whether `a` dominates `b` (every objective at least as large, one larger; maximisation).
pub fn dominates(a: &[f64], b: &[f64]) -> bool {
    a.iter().zip(b).all(|(x, y)| x >= y) && a.iter().zip(b).any(|(x, y)| x > y)
}

/// Indices of the points no other point dominates (duplicates are all kept), in their order.
pub fn non_dominated(points: &[Vec<f64>]) -> Vec<usize> {
    (0..points.len()).filter(|&i| !points.iter().any(|q| dominates(q, &points[i]))).collect()
}

/// The hypervolume dominated by `points` and bounded below by `reference` (maximisation): the Lebesgue measure of
/// `{z : reference ≤ z ≤ p for some p}`. Points not strictly above the reference in every objective add nothing.
/// Exact, by slicing along the last objective (Zitzler's HSO; O(nᵏ) for k objectives, fine for the few objectives
/// and hundreds of points a study has).
pub fn hypervolume(points: &[Vec<f64>], reference: &[f64]) -> f64 {
    let above: Vec<Vec<f64>> = points.iter().filter(|p| p.iter().zip(reference).all(|(x, r)| x > r)).cloned().collect();
    slice(above, reference)
}

fn slice(points: Vec<Vec<f64>>, reference: &[f64]) -> f64 {
    let k = reference.len();
    if points.is_empty() || k == 0 {
        return 0.0;
    }
    if k == 1 {
        return points.iter().map(|p| p[0]).fold(f64::NEG_INFINITY, f64::max) - reference[0];
    }
    let front: Vec<Vec<f64>> = non_dominated(&points).into_iter().map(|i| points[i].clone()).collect();
    let mut order: Vec<&Vec<f64>> = front.iter().collect();
    order.sort_by(|a, b| b[k - 1].total_cmp(&a[k - 1]));
    let mut total = 0.0;
    let mut upper: Vec<Vec<f64>> = Vec::with_capacity(order.len());
    for (i, p) in order.iter().enumerate() {
        upper.push(p[..k - 1].to_vec());
        let next = order.get(i + 1).map_or(reference[k - 1], |q| q[k - 1]);
        let height = p[k - 1] - next;
        if height > 0.0 {
            total += height * slice(upper.clone(), &reference[..k - 1]);
        }
    }
    total
}

/// The reference point inferred from objective vectors (maximised): below the front's worst value in each
/// objective by a tenth of the front's range there (of the worst value's magnitude, or 1, where the range is 0),
/// as BoTorch's `infer_reference_point` does. `None` for no points.
pub fn inferred_reference(points: &[Vec<f64>]) -> Option<Vec<f64>> {
    let front: Vec<&Vec<f64>> = non_dominated(points).into_iter().map(|i| &points[i]).collect();
    let k = front.first()?.len();
    Some(
        (0..k)
            .map(|j| {
                let lo = front.iter().map(|p| p[j]).fold(f64::INFINITY, f64::min);
                let hi = front.iter().map(|p| p[j]).fold(f64::NEG_INFINITY, f64::max);
                let range = if hi > lo { hi - lo } else { lo.abs().max(1.0) };
                lo - 0.1 * range
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hypervolume_of_known_fronts() {
        // Two objectives: staircase of (1, 3), (2, 2), (3, 1) over (0, 0) is 3 + 2 + 1 = 6.
        let front = vec![vec![1.0, 3.0], vec![2.0, 2.0], vec![3.0, 1.0], vec![1.0, 1.0]];
        assert!((hypervolume(&front, &[0.0, 0.0]) - 6.0).abs() < 1e-12);
        // Three objectives: the unit cube's corner and a box inside it add nothing beyond the cube.
        let cube = vec![vec![1.0, 1.0, 1.0], vec![0.5, 0.5, 0.5]];
        assert!((hypervolume(&cube, &[0.0, 0.0, 0.0]) - 1.0).abs() < 1e-12);
        // Two boxes [0,2]×[0,1]×[0,1] and [0,1]×[0,2]×[0,1] overlap in the unit cube: 2 + 2 − 1 = 3.
        let two = vec![vec![2.0, 1.0, 1.0], vec![1.0, 2.0, 1.0]];
        assert!((hypervolume(&two, &[0.0, 0.0, 0.0]) - 3.0).abs() < 1e-12);
        // Points below the reference add nothing.
        assert_eq!(hypervolume(&[vec![-1.0, 5.0]], &[0.0, 0.0]), 0.0);
    }

    #[test]
    fn monte_carlo_agrees_in_four_objectives() {
        use rand::{Rng, SeedableRng, rngs::StdRng};
        let mut rng = StdRng::seed_from_u64(3);
        let points: Vec<Vec<f64>> = (0..12).map(|_| (0..4).map(|_| rng.random::<f64>()).collect()).collect();
        let exact = hypervolume(&points, &[0.0; 4]);
        let m = 200_000;
        let hits = (0..m)
            .filter(|_| {
                let z: Vec<f64> = (0..4).map(|_| rng.random::<f64>()).collect();
                points.iter().any(|p| p.iter().zip(&z).all(|(a, b)| b <= a))
            })
            .count();
        let estimate = hits as f64 / m as f64;
        assert!(
            (exact - estimate).abs() < 4.0 * (estimate * (1.0 - estimate) / m as f64).sqrt() + 1e-3,
            "{exact} {estimate}"
        );
    }

    #[test]
    fn non_dominated_and_reference() {
        let pts = vec![vec![1.0, 3.0], vec![2.0, 2.0], vec![1.0, 1.0], vec![2.0, 2.0]];
        assert_eq!(non_dominated(&pts), vec![0, 1, 3]);
        let r = inferred_reference(&pts).unwrap();
        assert!((r[0] - 0.9).abs() < 1e-12 && (r[1] - 1.9).abs() < 1e-12, "{r:?}");
    }
}
