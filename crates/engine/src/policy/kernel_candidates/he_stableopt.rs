//! The two inner problems of HE-StableOpt (Ziomek et al. 2024, Algorithm 2; StableOpt of Bogunovic et al.,
//! NeurIPS 2018), for one candidate model:
//! - the robust UCB `min_{δ∈Δε(x)} UCB(x + δ)` maximised over x, with the inner minimum taken over a fixed set of
//!   perturbations of the box (a grid of {−ε, −ε/2, 0, ε/2, ε}^d for d ≤ 2, {−ε, 0, ε}^d for d ≤ 4, otherwise the
//!   centre, the 2d axis points and 16 Sobol points), and its gradient by Danskin's theorem at the minimising one;
//! - the pessimistic perturbation `argmin_{δ∈Δε(x_t)} LCB(x_t + δ)`, by the acquisition optimiser on the box.
//!
//! The distance is the L∞ norm in encoded units, so Δε(x) ∩ D is the box `[x − ε, x + ε] ∩ [0, 1]^d` (the paper
//! leaves d(·,·) open). Perturbed points are clipped to the domain, which keeps them in Δε(x).

use super::candidate_models::{CandidateOptions, maximize_excluding};
use crate::acquisition::{Acquisition, Ucb};
use crate::gp::Gp;
use crate::optim::{OptimConfig, Optimum, maximize};
use crate::policy::Context;
use crate::sampling::Sobol;
use crate::space::{ParameterSpec, ParameterType, Space};

/// Offsets of the box `[−ε, ε]^d` over which the inner minimum is taken.
pub(crate) fn perturbations(d: usize, eps: f64) -> Vec<Vec<f64>> {
    let grid = |levels: &[f64]| {
        let mut out: Vec<Vec<f64>> = vec![vec![]];
        for _ in 0..d {
            out =
                out.into_iter().flat_map(|p| levels.iter().map(move |l| [p.clone(), vec![l * eps]].concat())).collect();
        }
        out
    };
    match d {
        0 => vec![vec![]],
        1 | 2 => grid(&[-1.0, -0.5, 0.0, 0.5, 1.0]),
        3 | 4 => grid(&[-1.0, 0.0, 1.0]),
        _ => {
            let mut out = vec![vec![0.0; d]];
            for j in 0..d {
                for s in [-1.0, 1.0] {
                    let mut p = vec![0.0; d];
                    p[j] = s * eps;
                    out.push(p);
                }
            }
            let sob = Sobol::scrambled(d, 0x57AB1E).take(16);
            out.extend(sob.chunks_exact(d).map(|r| r.iter().map(|u| (2.0 * u - 1.0) * eps).collect()));
            out
        }
    }
}

/// `min_j UCB(clip(x + o_j))`.
struct RobustUcb<'a> {
    ucb: Ucb<'a>,
    offsets: Vec<Vec<f64>>,
    d: usize,
}

impl RobustUcb<'_> {
    fn shifted(&self, x: &[f64], o: &[f64]) -> Vec<f64> {
        x.iter().zip(o).map(|(a, b)| (a + b).clamp(0.0, 1.0)).collect()
    }
}

impl Acquisition for RobustUcb<'_> {
    fn dim(&self) -> usize {
        self.d
    }

    fn value(&self, x: &[f64]) -> f64 {
        let pts: Vec<f64> = self.offsets.iter().flat_map(|o| self.shifted(x, o)).collect();
        self.ucb.values(&pts).into_iter().fold(f64::INFINITY, f64::min)
    }

    fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        let pts: Vec<f64> = self.offsets.iter().flat_map(|o| self.shifted(x, o)).collect();
        let vals = self.ucb.values(&pts);
        let j = (0..vals.len()).min_by(|&a, &b| vals[a].total_cmp(&vals[b])).unwrap_or(0);
        let p = &pts[j * self.d..(j + 1) * self.d];
        let v = self.ucb.value_and_grad(p, grad);
        // clipped coordinates do not move with x
        for (q, g) in grad.iter_mut().enumerate() {
            let raw = x[q] + self.offsets[j][q];
            if !(0.0..=1.0).contains(&raw) {
                *g = 0.0;
            }
        }
        v
    }

    fn values(&self, xs: &[f64]) -> Vec<f64> {
        let d = self.d.max(1);
        let k = self.offsets.len();
        let pts: Vec<f64> =
            xs.chunks_exact(d).flat_map(|x| self.offsets.iter().flat_map(move |o| self.shifted(x, o))).collect();
        let vals = self.ucb.values(&pts);
        vals.chunks_exact(k).map(|c| c.iter().copied().fold(f64::INFINITY, f64::min)).collect()
    }
}

/// `x_t = argmax_x min_{δ∈Δε(x)} (μ + βσ)(x + δ)` for one model, with its robust value.
pub(crate) fn robust_ucb_maximizer(
    ctx: &Context<'_>,
    gp: &Gp,
    beta: f64,
    eps: f64,
    taken: &[f64],
    options: &CandidateOptions,
    seed: u64,
) -> Optimum {
    let d = gp.d();
    let acq = RobustUcb { ucb: Ucb::with_multiplier(gp, beta), offsets: perturbations(d, eps), d };
    maximize_excluding(ctx, &acq, taken, options, seed)
}

/// −LCB on the box `lo + z·w`, z ∈ [0, 1]^d.
struct NegLcbOnBox<'a> {
    lcb: Ucb<'a>,
    lo: Vec<f64>,
    w: Vec<f64>,
}

impl NegLcbOnBox<'_> {
    fn point(&self, z: &[f64]) -> Vec<f64> {
        z.iter().zip(&self.lo).zip(&self.w).map(|((z, l), w)| l + z * w).collect()
    }
}

impl Acquisition for NegLcbOnBox<'_> {
    fn dim(&self) -> usize {
        self.lo.len()
    }

    fn value(&self, z: &[f64]) -> f64 {
        -self.lcb.value(&self.point(z))
    }

    fn value_and_grad(&self, z: &[f64], grad: &mut [f64]) -> f64 {
        let v = self.lcb.value_and_grad(&self.point(z), grad);
        for (g, w) in grad.iter_mut().zip(&self.w) {
            *g = -*g * w;
        }
        -v
    }

    fn values(&self, zs: &[f64]) -> Vec<f64> {
        let d = self.lo.len().max(1);
        let pts: Vec<f64> = zs.chunks_exact(d).flat_map(|z| self.point(z)).collect();
        self.lcb.values(&pts).into_iter().map(|v| -v).collect()
    }
}

/// `(x_t + δ_t, LCB there)` with `δ_t = argmin_{δ∈Δε(x_t)} (μ − βσ)(x_t + δ)` for one model; the point is snapped
/// to the space.
pub(crate) fn pessimistic_perturbation(
    ctx: &Context<'_>,
    gp: &Gp,
    beta: f64,
    eps: f64,
    x: &[f64],
    seed: u64,
) -> (Vec<f64>, f64) {
    let d = x.len();
    let lo: Vec<f64> = x.iter().map(|v| (v - eps).max(0.0)).collect();
    let w: Vec<f64> = x.iter().zip(&lo).map(|(v, l)| (v + eps).min(1.0) - l).collect();
    let acq = NegLcbOnBox { lcb: Ucb::with_multiplier(gp, -beta), lo, w };
    let cube = unit_cube(d);
    let centre: Vec<f64> = (0..d).map(|j| if acq.w[j] > 0.0 { (x[j] - acq.lo[j]) / acq.w[j] } else { 0.5 }).collect();
    let opt = maximize(&acq, &cube, &OptimConfig { raw_samples: 256, restarts: 4, max_iter: 100 }, seed, &[centre]);
    let mut q = acq.point(&opt.x);
    ctx.problem.space.snap(&mut q);
    let lcb = Ucb::with_multiplier(gp, -beta).value(&q);
    (q, lcb)
}

fn unit_cube(d: usize) -> Space {
    let specs: Vec<ParameterSpec> = (0..d)
        .map(|j| ParameterSpec {
            name: format!("z{j}"),
            kind: ParameterType::Float,
            low: Some(0.0),
            high: Some(1.0),
            scale: None,
            choices: None,
            role: None,
            distribution: None,
        })
        .collect();
    Space::new(&specs).expect("the unit cube is a valid space")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perturbations_stay_in_the_box_and_include_the_centre() {
        for d in 1..7 {
            let p = perturbations(d, 0.1);
            assert!(p.iter().any(|o| o.iter().all(|v| *v == 0.0)));
            assert!(p.iter().all(|o| o.len() == d && o.iter().all(|v| v.abs() <= 0.1 + 1e-15)));
        }
    }
}
