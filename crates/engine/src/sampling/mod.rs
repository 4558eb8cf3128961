//! Quasi-random and fixed Monte Carlo samples.
//!
//! [`Sobol`] is the Joe & Kuo (2008) sequence in 32-bit arithmetic (exactly scipy's unscrambled
//! `qmc.Sobol`), optionally randomised by a digital shift (XOR of each coordinate with a random word), which
//! keeps the net property. Beyond [`MAX_SOBOL_DIM`] dimensions it falls back to uniform random points.

mod sobol_table;

use rand::{Rng, SeedableRng, rngs::StdRng};

/// Highest dimension with Sobol direction numbers.
pub const MAX_SOBOL_DIM: usize = sobol_table::MAX_DIM;
const BITS: usize = 32;
const SCALE: f64 = 1.0 / 4_294_967_296.0;

/// A Sobol sequence generator over `[0, 1)^d`.
#[derive(Debug, Clone)]
pub struct Sobol {
    dim: usize,
    directions: Vec<[u32; BITS]>,
    state: Vec<u32>,
    shift: Vec<u32>,
    index: u64,
    fallback: Option<StdRng>,
}

impl Sobol {
    /// The unscrambled sequence, starting with the origin (as scipy's `Sobol(d, scramble=False)`).
    pub fn new(dim: usize) -> Self {
        Self::build(dim, None)
    }

    /// The sequence randomised by a digital shift drawn from `seed`.
    pub fn scrambled(dim: usize, seed: u64) -> Self {
        Self::build(dim, Some(seed))
    }

    fn build(dim: usize, seed: Option<u64>) -> Self {
        let mut rng = StdRng::seed_from_u64(seed.unwrap_or(0));
        let shift = match seed {
            Some(_) => (0..dim).map(|_| rng.random::<u32>()).collect(),
            None => vec![0; dim],
        };
        if dim > MAX_SOBOL_DIM {
            return Self { dim, directions: Vec::new(), state: Vec::new(), shift, index: 0, fallback: Some(rng) };
        }
        let directions = (0..dim).map(direction_numbers).collect();
        Self { dim, directions, state: vec![0; dim], shift, index: 0, fallback: None }
    }

    /// Dimension of the points.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Skips `n` points.
    pub fn skip(&mut self, n: u64) {
        let mut buf = vec![0.0; self.dim];
        for _ in 0..n {
            self.next_into(&mut buf);
        }
    }

    /// Writes the next point into `out` (length `dim`).
    pub fn next_into(&mut self, out: &mut [f64]) {
        if let Some(rng) = self.fallback.as_mut() {
            out.iter_mut().for_each(|v| *v = rng.random::<f64>());
            return;
        }
        for (j, o) in out.iter_mut().enumerate() {
            *o = f64::from(self.state[j] ^ self.shift[j]) * SCALE;
        }
        // Gray-code update: flip the direction number of the lowest zero bit of the index.
        let c = (!self.index).trailing_zeros() as usize;
        if c < BITS {
            for (s, v) in self.state.iter_mut().zip(&self.directions) {
                *s ^= v[c];
            }
        }
        self.index += 1;
    }

    /// The next `n` points, row-major (`n × dim`).
    pub fn take(&mut self, n: usize) -> Vec<f64> {
        let mut out = vec![0.0; n * self.dim];
        for row in out.chunks_exact_mut(self.dim.max(1)) {
            self.next_into(row);
        }
        out
    }
}

/// Direction numbers v_j·2^(32−j) of dimension `d` (Bratley & Fox recurrence, as scipy).
fn direction_numbers(d: usize) -> [u32; BITS] {
    let mut v = [0u64; BITS];
    if d == 0 {
        v.iter_mut().for_each(|x| *x = 1);
    } else {
        let poly = u64::from(sobol_table::POLY[d]);
        let degree = (63 - poly.leading_zeros()) as usize;
        for (vj, init) in v.iter_mut().zip(&sobol_table::VINIT[d][..degree]) {
            *vj = u64::from(*init);
        }
        for j in degree..BITS {
            let mut new = v[j - degree];
            let mut pow2 = 1u64;
            for k in 0..degree {
                pow2 <<= 1;
                if (poly >> (degree - 1 - k)) & 1 == 1 {
                    new ^= pow2 * v[j - k - 1];
                }
            }
            v[j] = new;
        }
    }
    let mut out = [0u32; BITS];
    for (j, o) in out.iter_mut().enumerate() {
        *o = (v[j] << (BITS - 1 - j)) as u32;
    }
    out
}

/// `n × dim` standard normal draws (row-major), deterministic given `seed`: fixed base samples for sample-average
/// approximations.
pub fn normal_base_samples(n: usize, dim: usize, seed: u64) -> Vec<f64> {
    use rand_distr::{Distribution, StandardNormal};
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n * dim).map(|_| StandardNormal.sample(&mut rng)).collect()
}

/// Derives an independent stream seed from a base seed and a label (SplitMix64 of both).
pub fn derive_seed(base: u64, label: u64) -> u64 {
    let mut z = base ^ label.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unscrambled_sequence_matches_scipy() {
        // scipy.stats.qmc.Sobol(3, scramble=False).random(8)
        let expected = [
            [0.0, 0.0, 0.0],
            [0.5, 0.5, 0.5],
            [0.75, 0.25, 0.25],
            [0.25, 0.75, 0.75],
            [0.375, 0.375, 0.625],
            [0.875, 0.875, 0.125],
            [0.625, 0.125, 0.875],
            [0.125, 0.625, 0.375],
        ];
        let points = Sobol::new(3).take(8);
        for (row, e) in points.chunks(3).zip(expected) {
            assert_eq!(row, e);
        }
    }

    #[test]
    fn every_dimension_is_balanced_on_a_power_of_two() {
        let d = 40;
        let points = Sobol::scrambled(d, 7).take(256);
        for j in 0..d {
            let below = points.chunks(d).filter(|p| p[j] < 0.5).count();
            assert_eq!(below, 128, "dimension {j}");
        }
    }

    #[test]
    fn scrambled_points_stay_in_unit_cube_and_depend_on_seed() {
        let a = Sobol::scrambled(5, 1).take(64);
        let b = Sobol::scrambled(5, 2).take(64);
        assert!(a.iter().all(|v| (0.0..1.0).contains(v)));
        assert_ne!(a, b);
        assert_eq!(a, Sobol::scrambled(5, 1).take(64));
    }
}
