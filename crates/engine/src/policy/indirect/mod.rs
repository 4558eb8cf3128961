//! Policies of indirect studies (seed 001): `cmes`, `cmets`, and the paper's baselines `gp-ei`, `gp-ucb`,
//! `gp-mes` on the posterior of g from the observations alone. Every one of them recommends (and predicts) with
//! the conditional mean process of `crate::blocks::indirect` (paper §7: "recommend x_t = argmax m_{t−1}(x) … with the
//! same CMP model"), so the recommendation is a target-space point while suggestions carry only a query.
//!
//! - `cmes` (§5.1): an initial scrambled-Sobol design of `initial_design` queries (default 5, shared with the
//!   baselines so the comparison starts from the same data), then each query maximises CMES (Eq. 14, or Appendix
//!   A with `variant: noisy`) over a candidate set: `candidates` Sobol points of the query cube, or the deepest
//!   tree level's nodes when the study has a tree (the paper's non-hierarchical setting). f* samples: Thompson
//!   draws of f on `target_grid` Sobol points (default 512; the prototype uses a 1000-point grid) or Gumbel.
//! - `cmets` (Algorithm 1): no initial design (the tree starts at its root); candidates are the active set
//!   A_{t−1} = L ∪ L', scored by CMES per unit cost (`ln α − ln λ_l` for Eq. 14). The active set is replayed from
//!   the observed and pending queries in order (deterministic; it is also stored in the policy state and shown by
//!   `describe`). When the active set is exhausted, the deepest level's nodes are the candidates.
//! - baselines: the standard GP policy (`policy::gp_bo`) on the query space with (a, z) data; with a tree, its
//!   query is moved to the centre of the deepest node containing it.
//!
//! Batches and pending queries: pending queries are excluded from the candidates, and each pick of a batch is
//! added as a fantasy observation at its posterior mean (kriging believer).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::blocks::indirect::cmes::{CmesVariant, TargetMaxSampler, cmes_value, sample_target_max};
use crate::blocks::indirect::model::{IndirectModel, ModelCache, region_of};
use crate::blocks::indirect::{ActiveSet, IndirectProblem, Node, Region};
use crate::data::{Dataset, PointExtras};
use crate::error::{FieldError, Result};
use crate::policy::design::initial_design_point;
use crate::policy::plain::{GpAcquisition, GpBo};
use crate::policy::{
    Candidate, Context, Diagnostics, Policy, PolicyState, Recommendation, out_of_range, parse_options,
};
use crate::problem::Problem;
use crate::sampling::{Sobol, derive_seed};

/// Options of `cmes` and `cmets`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CmesOptions {
    /// Queries of the initial Sobol design (`cmes`; default 5). `cmets` starts at the root instead.
    pub initial_design: Option<usize>,
    /// `main` (Eq. 14, default) or `noisy` (Appendix A).
    pub variant: CmesVariant,
    /// Number of f* samples.
    pub max_value_samples: usize,
    /// `thompson` (default) or `gumbel`.
    pub max_value_sampler: TargetMaxSampler,
    /// Target points on which f* is sampled.
    pub target_grid: usize,
    /// Candidate queries without a tree.
    pub candidates: usize,
}

impl Default for CmesOptions {
    fn default() -> Self {
        Self {
            initial_design: None,
            variant: CmesVariant::Main,
            max_value_samples: 10,
            max_value_sampler: TargetMaxSampler::Thompson,
            target_grid: 512,
            candidates: 1024,
        }
    }
}

/// Which indirect policy.
#[derive(Debug, Clone)]
enum Kind {
    Cmes(CmesOptions),
    Cmets(CmesOptions),
    Baseline(Box<GpBo>),
}

/// State carried between calls.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct IndirectState {
    #[serde(default)]
    cache: ModelCache,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    active: Option<ActiveSet>,
    #[serde(default, skip_serializing_if = "Value::is_null")]
    baseline: Value,
}

/// A policy of an indirect study.
#[derive(Debug, Clone)]
pub struct IndirectPolicy {
    name: &'static str,
    kind: Kind,
}

/// Default size of the initial design of `cmes` and the baselines.
const DEFAULT_INITIAL_DESIGN: usize = 5;

impl IndirectPolicy {
    /// Builds `name` (`cmes`, `cmets`, `gp-ei`, `gp-ucb`, `gp-mes`) for an indirect study.
    pub fn build(name: &str, options: Value, problem: &Problem) -> Result<Self, Vec<FieldError>> {
        let tree = problem.indirect.as_ref().is_some_and(|ip| ip.tree.is_some());
        let (name, kind): (&'static str, Kind) = match name {
            "cmes" if tree => {
                let unused = [("candidates", "with 'indirect.tree' the candidates are the deepest level's nodes")];
                ("cmes", Kind::Cmes(parse_cmes(options, &unused)?))
            }
            "cmes" => ("cmes", Kind::Cmes(parse_cmes(options, &[])?)),
            "cmets" if !tree => {
                return Err(vec![FieldError::new("algorithm.name", "cmets needs 'indirect.tree'")]);
            }
            "cmets" => {
                let unused = [
                    ("initial_design", "cmets has no initial design: it starts at the tree's root"),
                    ("candidates", "cmets's candidates are the tree's active set"),
                ];
                ("cmets", Kind::Cmets(parse_cmes(options, &unused)?))
            }
            "gp-ei" | "gp-ucb" | "gp-mes" => {
                let (n, acq) = match name {
                    "gp-ei" => ("gp-ei", GpAcquisition::LogEi),
                    "gp-ucb" => ("gp-ucb", GpAcquisition::Ucb),
                    _ => ("gp-mes", GpAcquisition::Mes),
                };
                let mut options = options;
                if let Value::Object(m) = &mut options
                    && !m.contains_key("initial_design")
                {
                    m.insert("initial_design".into(), DEFAULT_INITIAL_DESIGN.into());
                }
                let query_dim = problem.indirect.as_ref().map_or(0, |ip| ip.query_space.dim());
                (n, Kind::Baseline(Box::new(GpBo::build(acq, options, query_dim)?)))
            }
            other => {
                return Err(vec![FieldError::new(
                    "algorithm.name",
                    format!(
                        "'{other}' does not support indirect studies; choose auto, cmes, cmets, gp-ei, gp-ucb or gp-mes"
                    ),
                )]);
            }
        };
        Ok(Self { name, kind })
    }
}

/// Parses the options of `cmes`/`cmets`, refusing those in `unused` (option, why) that this policy on this study
/// would silently ignore.
fn parse_cmes(options: Value, unused: &[(&str, &str)]) -> Result<CmesOptions, Vec<FieldError>> {
    let given = |k: &str| options.as_object().is_some_and(|m| m.contains_key(k));
    let mut errors: Vec<FieldError> = unused
        .iter()
        .filter(|(k, _)| given(k))
        .map(|(k, why)| FieldError::new(format!("algorithm.options.{k}"), format!("not used here: {why}")))
        .collect();
    let o: CmesOptions = parse_options(options)?;
    errors.extend(out_of_range(&[
        ("max_value_samples", o.max_value_samples, 1, 256),
        ("target_grid", o.target_grid, 16, 4096),
        ("candidates", o.candidates, 1, 65536),
        ("initial_design", o.initial_design.unwrap_or(DEFAULT_INITIAL_DESIGN), 0, 1000),
    ]));
    if errors.is_empty() { Ok(o) } else { Err(errors) }
}

fn indirect<'a>(ctx: &Context<'a>) -> Result<&'a IndirectProblem> {
    ctx.problem
        .indirect
        .as_deref()
        .ok_or_else(|| crate::error::Error::Conflict("the study has no 'indirect' block".into()))
}

/// A candidate that asks the client to set only the query `a`.
fn query_candidate(ctx: &Context<'_>, ip: &IndirectProblem, a: Vec<f64>, phase: &str) -> Candidate {
    let node = ip.tree.as_ref().map(|t| t.locate(&a));
    let mut diagnostics = Diagnostics { phase: Some(phase.into()), ..Default::default() };
    if let Some(n) = &node {
        diagnostics.extra.insert("node".into(), n.id().into());
        diagnostics.extra.insert("level".into(), n.level.into());
    }
    Candidate {
        x: ctx.problem.space.centre(),
        params: Some(Vec::new()),
        extras: PointExtras {
            query: Some(a),
            expected_cost: match (&ip.tree, &node) {
                (Some(t), Some(n)) => Some(t.cost(n.level)),
                _ => None,
            },
            ..PointExtras::default()
        },
        diagnostics,
        ..Default::default()
    }
}

/// Moves a query to the centre of the deepest tree node containing it (studies with a tree).
fn snap_to_leaf(ip: &IndirectProblem, a: &[f64]) -> Vec<f64> {
    match &ip.tree {
        Some(t) => {
            let per = f64::from(1u32 << t.height());
            let n = Node {
                level: t.height(),
                index: a.iter().map(|&v| ((v * per).floor().clamp(0.0, per - 1.0)) as u32).collect(),
            };
            t.centre(&n)
        }
        None => a.to_vec(),
    }
}

fn same(a: &[f64], b: &[f64]) -> bool {
    a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-9)
}

impl Policy for IndirectPolicy {
    fn name(&self) -> &'static str {
        self.name
    }

    fn suggest(&self, ctx: &Context<'_>, state: &mut PolicyState, count: usize) -> Result<Vec<Candidate>> {
        let ip = indirect(ctx)?;
        let mut st: IndirectState = state.get();
        if st.cache.cme_lengthscale.is_none() {
            // Choose ℓ once (recommendations of every policy use the CMP and read this cache).
            crate::blocks::indirect::model::embedding(&ctx.problem.space, ctx.data, ctx.study_seed, ip, &mut st.cache)?;
        }
        let out = match &self.kind {
            Kind::Baseline(gp) => self.baseline(ctx, ip, gp, &mut st, count)?,
            Kind::Cmes(o) => self.cmes(ctx, ip, o, &mut st, count, false)?,
            Kind::Cmets(o) => self.cmes(ctx, ip, o, &mut st, count, true)?,
        };
        state.set(&st);
        Ok(out)
    }

    fn recommend(&self, ctx: &Context<'_>, state: &PolicyState) -> Result<Option<Recommendation>> {
        let ip = indirect(ctx)?;
        let mut st: IndirectState = state.get();
        if ctx.data.n() == 0 {
            return Ok(None);
        }
        let Some(model) = IndirectModel::fit(&ctx.problem.space, ctx.data, ctx.study_seed, ip, &mut st.cache, &[])?
        else {
            return Ok(None);
        };
        let (x, m, s) = model.recommend(&ctx.problem.space, ctx.study_seed);
        Ok(Some(Recommendation { x, params: None, predicted: (m, s), extra: Default::default() }))
    }

    fn predict(&self, ctx: &Context<'_>, state: &PolicyState, xs: &[f64]) -> Result<Option<Vec<(f64, f64)>>> {
        let ip = indirect(ctx)?;
        let mut st: IndirectState = state.get();
        let Some(model) = IndirectModel::fit(&ctx.problem.space, ctx.data, ctx.study_seed, ip, &mut st.cache, &[])?
        else {
            return Ok(None);
        };
        let (m, s) = model.posterior_f(xs);
        Ok(Some(m.into_iter().zip(s).collect()))
    }

    fn describe(&self, state: &PolicyState) -> Option<Value> {
        let st: IndirectState = state.get();
        let active = st.active?;
        Some(serde_json::json!({
            "leaves": active.leaves.iter().map(Node::id).collect::<Vec<_>>(),
            "children": active.children.len(),
        }))
    }
}

impl IndirectPolicy {
    /// The baseline GP policy on the query space.
    fn baseline(
        &self,
        ctx: &Context<'_>,
        ip: &IndirectProblem,
        gp: &GpBo,
        st: &mut IndirectState,
        count: usize,
    ) -> Result<Vec<Candidate>> {
        let sub_problem = Problem {
            space: ip.query_space.clone(),
            decision: (0..ip.query_space.params().len()).collect(),
            contexts: Vec::new(),
            goal: ctx.problem.goal,
            outcomes: ctx.problem.outcomes.clone(),
            polytope: None,
            measurement: Default::default(),
            kernel_candidates: None,
            control_sets: None,
            indirect: None,
        };
        let da = ip.query_space.dim();
        let mut data = Dataset { d: da, ..Default::default() };
        for i in 0..ctx.data.n() {
            let Some(a) = &ctx.data.extras[i].query else { continue };
            let (_, node) = region_of(ip, a);
            data.x.extend_from_slice(a);
            data.y.push(ctx.data.y[i]);
            data.noise_var.push(
                ctx.data.noise_var[i].or_else(|| Some(ip.tree.as_ref()?.noise_std(node.as_ref()?.level).powi(2))),
            );
            data.cost.push(ctx.data.cost[i]);
            data.extras.push(PointExtras::default());
        }
        let pending: Vec<f64> = ctx.data.pending_query.iter().flatten().copied().collect();
        let sub = Context {
            problem: &sub_problem,
            data: &data,
            pending: &pending,
            seed: ctx.seed,
            study_seed: ctx.study_seed,
            known_context: None,
            cost_budget: ctx.cost_budget,
        };
        let mut sub_state = PolicyState(st.baseline.clone());
        let picks = gp.suggest(&sub, &mut sub_state, count)?;
        st.baseline = sub_state.0;
        Ok(picks
            .into_iter()
            .map(|c| {
                let phase = c.diagnostics.phase.clone().unwrap_or_else(|| "model".into());
                let mut out = query_candidate(ctx, ip, snap_to_leaf(ip, &c.x), &phase);
                out.diagnostics.acquisition_value = c.diagnostics.acquisition_value;
                out.predicted = c.predicted;
                out
            })
            .collect())
    }

    /// `cmes` and `cmets`.
    fn cmes(
        &self,
        ctx: &Context<'_>,
        ip: &IndirectProblem,
        o: &CmesOptions,
        st: &mut IndirectState,
        count: usize,
        tree_search: bool,
    ) -> Result<Vec<Candidate>> {
        let mut out = Vec::with_capacity(count);
        let n_seen = (ctx.data.n() + ctx.data.pending_query.len()) as u64;
        let n_init = if tree_search { 0 } else { o.initial_design.unwrap_or(DEFAULT_INITIAL_DESIGN) as u64 };
        let mut index = n_seen + ctx.data.failed_x.len() as u64 / ctx.problem.space.dim().max(1) as u64;
        while out.len() < count && index < n_init {
            let a = initial_design_point(&ip.query_space, index, ctx.study_seed);
            out.push(query_candidate(ctx, ip, snap_to_leaf(ip, &a), "initial_design"));
            index += 1;
        }
        let mut taken: Vec<Vec<f64>> = ctx.data.pending_query.clone();
        taken.extend(out.iter().filter_map(|c| c.extras.query.clone()));
        let mut active = None;
        if tree_search && let Some(tree) = &ip.tree {
            let mut set = ActiveSet::new(tree);
            let queried = ctx.data.extras.iter().filter_map(|e| e.query.as_ref()).chain(&ctx.data.pending_query);
            for a in queried {
                set.update(tree, &tree.locate(a));
            }
            active = Some(set);
        }
        let mut fantasies: Vec<(Region, f64, Option<f64>)> = Vec::new();
        while out.len() < count {
            let k = out.len() as u64;
            let seed = derive_seed(ctx.seed, k);
            let Some(model) =
                IndirectModel::fit(&ctx.problem.space, ctx.data, ctx.study_seed, ip, &mut st.cache, &fantasies)?
            else {
                // No conditional yet (no pairs uploaded): keep exploring the query space by design.
                let a = initial_design_point(&ip.query_space, index, ctx.study_seed);
                index += 1;
                out.push(query_candidate(ctx, ip, snap_to_leaf(ip, &a), "fallback"));
                continue;
            };
            let (queries, costs) = candidate_queries(ip, o, active.as_ref(), &taken, seed);
            let regions: Vec<Region> = queries.iter().map(|a| region_of(ip, a).0).collect();
            let reps = model.represent(&regions)?;
            let (nu, var) = model.cmp.posterior_g(&reps);
            let grid = Sobol::scrambled(ctx.problem.space.dim(), derive_seed(seed, 0xF5)).take(o.target_grid);
            let fstar =
                sample_target_max(&model.cmp, &grid, o.max_value_samples, o.max_value_sampler, derive_seed(seed, 1))?;
            let noise_of = |a: &[f64]| -> f64 {
                match (&ip.tree, region_of(ip, a).1) {
                    (Some(t), Some(n)) => (t.noise_std(n.level) / model.scale()).powi(2),
                    _ => model.cmp.hypers().noise_var,
                }
            };
            let mut best: Option<(usize, f64)> = None;
            for i in 0..queries.len() {
                let v = cmes_value(o.variant, nu[i], var[i], noise_of(&queries[i]), &fstar);
                let v = match (tree_search, o.variant) {
                    (false, _) => v,
                    (true, CmesVariant::Main) => v - costs[i].ln(),
                    (true, CmesVariant::Noisy) => v / costs[i],
                };
                if v.is_finite() && best.is_none_or(|b| v > b.1) {
                    best = Some((i, v));
                }
            }
            let Some((i, value)) = best else {
                let a = initial_design_point(&ip.query_space, index, ctx.study_seed);
                index += 1;
                out.push(query_candidate(ctx, ip, snap_to_leaf(ip, &a), "fallback"));
                continue;
            };
            let a = queries[i].clone();
            let mut c = query_candidate(ctx, ip, a.clone(), "model");
            let mean_g = model.unstandardize(nu[i]);
            c.predicted = Some((mean_g, var[i].sqrt() * model.scale()));
            c.diagnostics.acquisition_value = Some(value);
            c.diagnostics.jitter = Some(model.cmp.jitter());
            c.diagnostics.hyperparameters = serde_json::to_value(model.cmp.hypers()).ok();
            if ip.known.is_none() {
                // Pairs the conditional was learned from: the spec's and the uploaded ones.
                c.diagnostics.extra.insert("pairs".into(), (ip.pairs.len() + ctx.data.pairs.len()).into());
            }
            out.push(c);
            if let (Some(set), Some(tree)) = (active.as_mut(), &ip.tree) {
                set.update(tree, &tree.locate(&a));
            }
            let region = region_of(ip, &a).0;
            fantasies.push((region, mean_g, Some(noise_of(&a) * model.scale().powi(2))));
            taken.push(a);
        }
        st.active = active;
        Ok(out)
    }
}

/// Candidate queries (and their costs): the active set (cmets), the deepest tree level, or Sobol points of the
/// query cube; pending and already-picked queries removed.
fn candidate_queries(
    ip: &IndirectProblem,
    o: &CmesOptions,
    active: Option<&ActiveSet>,
    taken: &[Vec<f64>],
    seed: u64,
) -> (Vec<Vec<f64>>, Vec<f64>) {
    let da = ip.query_space.dim();
    if let Some(tree) = &ip.tree {
        let mut nodes: Vec<Node> = active.map(ActiveSet::active).unwrap_or_default();
        let free = |n: &Node| !taken.iter().any(|t| same(&tree.centre(n), t));
        nodes.retain(free);
        if nodes.is_empty() {
            nodes = tree.level_nodes(tree.height()).into_iter().filter(free).collect();
        }
        if nodes.is_empty() {
            nodes = tree.level_nodes(tree.height());
        }
        let costs = nodes.iter().map(|n| tree.cost(n.level)).collect();
        return (nodes.iter().map(|n| tree.centre(n)).collect(), costs);
    }
    let pts: Vec<Vec<f64>> = Sobol::scrambled(da, derive_seed(seed, 0xCA))
        .take(o.candidates)
        .chunks_exact(da.max(1))
        .map(<[f64]>::to_vec)
        .filter(|a| !taken.iter().any(|t| same(a, t)))
        .collect();
    let costs = vec![1.0; pts.len()];
    (pts, costs)
}

/// `cmes` or `cmets` outside an indirect study: an error naming the missing block (inside one,
/// [`crate::policy::registry::build`] hands every name to [`IndirectPolicy::build`]).
/// The registry reaches this only for studies without the block.
pub fn build(name: &str, _options: Value, _problem: &Problem) -> std::result::Result<Box<dyn Policy>, Vec<FieldError>> {
    Err(vec![FieldError::new("algorithm.name", format!("'{name}' needs an 'indirect' block"))])
}
