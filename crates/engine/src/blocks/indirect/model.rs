//! The CMP of an indirect study built from its target space, observations and seed: the embedding (pairs from the spec and uploaded
//! later, or the known conditional), one representer per observed query (a tree node's cell when the study has a
//! tree), noise per observation (the reported `value_stddev`, else the tree level's noise, else learned), and
//! standardised aggregates. Recommendation maximises the posterior mean of f over the target box.

use serde::{Deserialize, Serialize};

use super::cmp::{Cmp, CmpData, fit_cmp};
use super::embedding::{Embedding, KnownEmbedding, PairsEmbedding, Region, Representer};
use super::spec::IndirectProblem;
use super::tree::Node;
use crate::acquisition::Acquisition;
use crate::data::Dataset;
use crate::error::Result;
use crate::optim::{OptimConfig, maximize};
use crate::sampling::derive_seed;
use crate::space::Space;

/// What the model remembers between calls: the ℓ lengthscale chosen for the pairs (leave-one-out is O(N³)).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelCache {
    /// Chosen lengthscale of ℓ.
    pub cme_lengthscale: Option<f64>,
    /// Number of pairs it was chosen for.
    pub cme_pairs: usize,
}

/// A fitted CMP with its embedding, in client units (maximisation sign).
#[derive(Debug, Clone)]
pub struct IndirectModel {
    /// The CMP (standardised units).
    pub cmp: Cmp,
    /// The embedding.
    pub embedding: Embedding,
    mean: f64,
    scale: f64,
}

/// The region a query stands for, and its tree node when the study has a tree.
pub fn region_of(ip: &IndirectProblem, a: &[f64]) -> (Region, Option<Node>) {
    match &ip.tree {
        Some(tree) => {
            let node = tree.locate(a);
            let (lo, hi) = tree.cell(&node);
            (Region::Cell(lo, hi), Some(node))
        }
        None => (Region::Point(a.to_vec()), None),
    }
}

/// The embedding of the study, or `None` while neither a known conditional nor any pair is available.
pub fn embedding(
    target: &Space,
    data: &Dataset,
    seed: u64,
    ip: &IndirectProblem,
    cache: &mut ModelCache,
) -> Result<Option<Embedding>> {
    let dx = target.dim();
    if let Some(known) = &ip.known {
        return Ok(Some(Embedding::Known(KnownEmbedding::new(
            known.clone(),
            target.clone(),
            ip.query_space.clone(),
            ip.samples,
            seed,
        ))));
    }
    let pairs: Vec<(Vec<f64>, Vec<f64>)> = ip.pairs.iter().chain(&data.pairs).cloned().collect();
    if pairs.len() < 2 {
        return Ok(None);
    }
    let cached = cache.cme_lengthscale.filter(|_| cache.cme_pairs == pairs.len());
    let emb = PairsEmbedding::new(&pairs, dx, ip.query_space.dim(), ip.regularizer, cached)?;
    cache.cme_lengthscale = Some(emb.lengthscale());
    cache.cme_pairs = pairs.len();
    Ok(Some(Embedding::Pairs(emb)))
}

/// Observed queries with their value and known noise variance, plus `fantasies` (region, value) appended.
pub fn observations(d: &Dataset, ip: &IndirectProblem) -> Vec<(Region, f64, Option<f64>)> {
    (0..d.n())
        .filter_map(|i| {
            let a = d.extras[i].query.as_ref()?;
            let (region, node) = region_of(ip, a);
            let noise = d.noise_var[i].or_else(|| Some(ip.tree.as_ref()?.noise_std(node?.level).powi(2)));
            Some((region, d.y[i], noise))
        })
        .collect()
}

impl IndirectModel {
    /// Fits the CMP on the study's observations `data` (target space `target`, study seed `seed`) and `fantasies`
    /// (region, value in client units, noise var).
    pub fn fit(
        target: &Space,
        data: &Dataset,
        seed: u64,
        ip: &IndirectProblem,
        cache: &mut ModelCache,
        fantasies: &[(Region, f64, Option<f64>)],
    ) -> Result<Option<Self>> {
        let Some(embedding) = embedding(target, data, seed, ip, cache)? else { return Ok(None) };
        let mut obs = observations(data, ip);
        obs.extend(fantasies.iter().cloned());
        let ys: Vec<f64> = obs.iter().map(|o| o.1).collect();
        let (mean, scale) = standardizer(&ys);
        let regions: Vec<Region> = obs.iter().map(|o| o.0.clone()).collect();
        let reps = embedding.represent(&regions)?;
        let z: Vec<f64> = ys.iter().map(|y| (y - mean) / scale).collect();
        let noise: Vec<Option<f64>> = obs.iter().map(|o| o.2.map(|v| v / (scale * scale))).collect();
        let data = CmpData { dx: target.dim(), shared: embedding.shared_support(), reps: &reps, z: &z, noise: &noise };
        let cmp = fit_cmp(data)?;
        Ok(Some(Self { cmp, embedding, mean, scale }))
    }

    /// Representers of regions.
    pub fn represent(&self, regions: &[Region]) -> Result<Vec<Representer>> {
        self.embedding.represent(regions)
    }

    /// Posterior mean and standard deviation of g at regions, client units (maximisation sign).
    pub fn posterior_g(&self, reps: &[Representer]) -> (Vec<f64>, Vec<f64>) {
        let (m, v) = self.cmp.posterior_g(reps);
        (m.iter().map(|m| self.mean + self.scale * m).collect(), v.iter().map(|v| self.scale * v.sqrt()).collect())
    }

    /// Posterior mean and standard deviation of f at target points, client units.
    pub fn posterior_f(&self, xs: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let (m, v) = self.cmp.posterior_f(xs);
        (m.iter().map(|m| self.mean + self.scale * m).collect(), v.iter().map(|v| self.scale * v.sqrt()).collect())
    }

    /// Standardised value → client units.
    pub fn unstandardize(&self, v: f64) -> f64 {
        self.mean + self.scale * v
    }

    /// Client units → standardised.
    pub fn standardize(&self, v: f64) -> f64 {
        (v - self.mean) / self.scale
    }

    /// Scale of the standardisation.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// The target point of `space` maximising the posterior mean of f, with the posterior (mean, sd) there.
    pub fn recommend(&self, space: &Space, seed: u64) -> (Vec<f64>, f64, f64) {
        let acq = MeanOfF { cmp: &self.cmp, d: space.dim() };
        let cfg = OptimConfig { raw_samples: 1024, restarts: 4, max_iter: 60 };
        let opt = maximize(&acq, space, &cfg, derive_seed(seed, 0xBE57), &[]);
        let (m, s) = self.posterior_f(&opt.x);
        (opt.x, m[0], s[0])
    }
}

/// Mean and scale of the values (0 and 1 without values; scale 1 for constant values).
fn standardizer(y: &[f64]) -> (f64, f64) {
    if y.is_empty() {
        return (0.0, 1.0);
    }
    let n = y.len() as f64;
    let mean = y.iter().sum::<f64>() / n;
    let var = y.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    let scale = var.sqrt();
    (mean, if scale > 1e-12 * mean.abs().max(1e-300) && scale.is_finite() && scale > 0.0 { scale } else { 1.0 })
}

/// The CMP posterior mean of f as an acquisition (for the recommendation).
struct MeanOfF<'a> {
    cmp: &'a Cmp,
    d: usize,
}

impl Acquisition for MeanOfF<'_> {
    fn dim(&self) -> usize {
        self.d
    }

    fn value(&self, x: &[f64]) -> f64 {
        self.cmp.posterior_f(x).0[0]
    }

    fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        self.cmp.mean_f_grad(x, grad)
    }

    fn values(&self, xs: &[f64]) -> Vec<f64> {
        self.cmp.posterior_f(xs).0
    }
}
