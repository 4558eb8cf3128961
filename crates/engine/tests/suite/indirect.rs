//! Seed 001 (indirect queries, issue 8): the conditional mean process reduces to the ordinary GP for a point-mass
//! conditional; CMES equals a brute-force Monte Carlo estimate of its mutual information; CMETS' tree update
//! follows Algorithm 1 step by step; indirect studies run through `engine::Study`.

use engine::blocks::indirect::cmes::truncated_entropy;
use engine::blocks::indirect::embedding::{KnownEmbedding, Region};
use engine::blocks::indirect::{ActiveSet, CmesVariant, Cmp, CmpData, CmpHypers, IndirectSpec, Node, Tree, cmes_value};
use engine::gp::{Data, Gp, Hyperparameters, MeanModel, NoiseModel};
use engine::kernel::{Kernel, KernelFamily};
use engine::space::Space;
use engine::{History, ObservationRecord, PairRecord, PointExtras, PolicyState, Study, StudySpec, SuggestRequest};
use rand::{Rng, SeedableRng, rngs::StdRng};
use rand_distr::{Distribution, StandardNormal};
use serde_json::json;

use crate::common::{assert_close, plain_config};

fn normal(rng: &mut StdRng) -> f64 {
    StandardNormal.sample(rng)
}

fn unit_params(names: &[&str]) -> serde_json::Value {
    json!(names.iter().map(|n| json!({"name": n, "type": "float", "low": 0.0, "high": 1.0})).collect::<Vec<_>>())
}

#[test]
fn point_mass_conditional_gives_the_ordinary_gp_posterior() {
    let target = Space::new(&serde_json::from_value::<Vec<_>>(unit_params(&["x1", "x2"])).unwrap()).unwrap();
    let block: IndirectSpec = serde_json::from_value(json!({
        "query_parameters": unit_params(&["a1", "a2"]),
        "conditional": [
            {"target": "x1", "query": "a1", "form": "affine", "scale": 1.0},
            {"target": "x2", "query": "a2", "form": "affine", "scale": 1.0}
        ],
        "samples": 4
    }))
    .unwrap();
    let ip = block.validate(&target).unwrap();
    let emb = KnownEmbedding::new(ip.known.clone().unwrap(), target.clone(), ip.query_space.clone(), ip.samples, 3);
    let mut rng = StdRng::seed_from_u64(1);
    let a: Vec<f64> = (0..14).map(|_| rng.random::<f64>()).collect();
    let z: Vec<f64> = a.chunks(2).map(|p| (6.0 * p[0]).sin() + p[1] * p[1]).collect();
    let emb = engine::blocks::indirect::Embedding::Known(emb);
    let reps = emb.represent(&a.chunks(2).map(|p| Region::Point(p.to_vec())).collect::<Vec<_>>()).unwrap();
    let noise = vec![None; z.len()];
    let hypers = CmpHypers { lengthscales: vec![0.3, 0.5], outputscale: 1.7, noise_var: 0.01 };
    let cmp = Cmp::new(CmpData { dx: 2, shared: None, reps: &reps, z: &z, noise: &noise }, hypers).unwrap();

    let kernel = Kernel::ard(KernelFamily::Rbf, 2);
    let config = plain_config(kernel, NoiseModel::Fixed(0.01), MeanModel::Zero, false);
    let theta = vec![0.3f64.ln(), 0.5f64.ln(), 1.7f64.ln()];
    let gp = Gp::new(
        &Data::new(2, a.clone(), z.clone()),
        &config,
        Hyperparameters { theta, noise_variance: 0.01, mean: 0.0 },
    )
    .unwrap();
    let xs: Vec<f64> = (0..40).map(|_| rng.random::<f64>()).collect();
    let (m, v) = cmp.posterior_f(&xs);
    let (mg, vg) =
        cmp.posterior_g(&emb.represent(&xs.chunks(2).map(|p| Region::Point(p.to_vec())).collect::<Vec<_>>()).unwrap());
    let (rm, rv) = gp.posterior_batch(&xs);
    for i in 0..rm.len() {
        assert_close("mean of f", m[i], rm[i], 1e-9, 1e-12);
        assert_close("variance of f", v[i], rv[i], 1e-9, 1e-12);
        assert_close("mean of g", mg[i], rm[i], 1e-9, 1e-12);
        assert_close("variance of g", vg[i], rv[i], 1e-9, 1e-12);
    }
    let (jm, jc) = cmp.posterior_f_joint(&xs);
    let (gm, gc) = gp.posterior_joint(&xs);
    for i in 0..gm.len() {
        assert_close("joint mean", jm[i], gm[i], 1e-9, 1e-12);
        for j in 0..gm.len() {
            assert_close("joint covariance", jc[(i, j)], gc[(i, j)], 1e-9, 1e-12);
        }
    }
}

/// `H[g] − E H[g | g ≤ f*]` by sampling: truncated draws by rejection, −E ln p with the truncated density.
fn mc_mutual_information_noiseless(nu: f64, q: f64, fstar: &[f64], rng: &mut StdRng) -> (f64, f64) {
    let sd = q.sqrt();
    let h_g = 0.5 * (2.0 * std::f64::consts::PI * std::f64::consts::E * q).ln();
    let mut terms = Vec::new();
    for &f in fstar {
        let mass = statrs_cdf((f - nu) / sd);
        let mut acc = Vec::new();
        while acc.len() < 20_000 {
            let g: f64 = nu + sd * normal(rng);
            if g <= f {
                let ln_p = -0.5 * ((g - nu) / sd).powi(2) - (sd * (2.0 * std::f64::consts::PI).sqrt()).ln() - mass.ln();
                acc.push(-ln_p);
            }
        }
        terms.push(acc);
    }
    let per: Vec<f64> = terms.iter().map(|t| h_g - t.iter().sum::<f64>() / t.len() as f64).collect();
    let mean = per.iter().sum::<f64>() / per.len() as f64;
    let var: f64 = terms
        .iter()
        .map(|t| {
            let m = t.iter().sum::<f64>() / t.len() as f64;
            t.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (t.len() * t.len()) as f64
        })
        .sum::<f64>()
        / (per.len() * per.len()) as f64;
    (mean, var.sqrt())
}

fn statrs_cdf(z: f64) -> f64 {
    engine::special::norm_cdf(z)
}

#[test]
fn cmes_equals_a_brute_force_monte_carlo_mutual_information() {
    let mut rng = StdRng::seed_from_u64(7);
    let fstar = [1.3, 1.9, 2.4];
    for &(nu, q) in &[(0.4, 0.5), (1.1, 0.2), (-0.3, 1.4)] {
        let closed = cmes_value(CmesVariant::Main, nu, q, 0.0, &fstar).exp();
        let (mc, se) = mc_mutual_information_noiseless(nu, q, &fstar, &mut rng);
        assert!((closed - mc).abs() <= 4.0 * se + 1e-4, "Eq. 14 {closed} vs MC {mc} ± {se}");
    }
}

#[test]
fn noisy_cmes_equals_a_nested_monte_carlo_mutual_information() {
    // Appendix A: I = H[z] − E_{f*} H[z | g ≤ f*], z = g + ε; the conditional density of z is itself estimated
    // by averaging N(z; g_j, σ²) over accepted draws g_j (no closed form used).
    let mut rng = StdRng::seed_from_u64(11);
    let (nu, q, s2) = (0.5, 0.8, 0.3);
    let fstar = [1.2, 2.0];
    let closed = cmes_value(CmesVariant::Noisy, nu, q, s2, &fstar);
    let h_z = 0.5 * (2.0 * std::f64::consts::PI * std::f64::consts::E * (q + s2)).ln();
    let mut hs = Vec::new();
    let mut ses = Vec::new();
    for &f in &fstar {
        let accepted: Vec<f64> =
            std::iter::repeat_with(|| nu + q.sqrt() * normal(&mut rng)).filter(|g| *g <= f).take(4000).collect();
        let dens = |z: f64| {
            accepted.iter().map(|g| (-(z - g).powi(2) / (2.0 * s2)).exp()).sum::<f64>()
                / (accepted.len() as f64 * (2.0 * std::f64::consts::PI * s2).sqrt())
        };
        let lnp: Vec<f64> = (0..3000)
            .map(|i| {
                let g = accepted[(i * 7) % accepted.len()];
                let z = g + s2.sqrt() * normal(&mut rng);
                -dens(z).ln()
            })
            .collect();
        let m = lnp.iter().sum::<f64>() / lnp.len() as f64;
        let se = (lnp.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (lnp.len() * lnp.len()) as f64).sqrt();
        assert_close("entropy of z given g ≤ f*", truncated_entropy(nu, q, s2, f), m, 0.0, 4.0 * se + 2e-3);
        hs.push(m);
        ses.push(se);
    }
    let mc = h_z - hs.iter().sum::<f64>() / hs.len() as f64;
    let se = ses.iter().map(|s| s * s).sum::<f64>().sqrt() / hs.len() as f64;
    assert_close("Appendix A CMES", closed, mc, 0.0, 4.0 * se + 2e-3);
}

fn node(level: u32, i: u32, j: u32) -> Node {
    Node { level, index: vec![i, j] }
}

#[test]
fn tree_update_follows_algorithm_1_on_a_scripted_sequence() {
    let tree = Tree::new(2, 2, vec![0.5, 1.0, 1.5], vec![1.0, 0.5, 0.33]);
    let mut set = ActiveSet::new(&tree);
    // Initialise: L0 = {root}, L0' = children(root).
    assert_eq!(set.leaves.iter().cloned().collect::<Vec<_>>(), vec![node(0, 0, 0)]);
    assert_eq!(set.children.len(), 4);
    assert_eq!(set.active().len(), 5);
    // Step 1: a1 = root ∈ L0 (not in L0'): L1 = L0 − {root} + children(root); L1' ∪= children of every leaf.
    set.update(&tree, &node(0, 0, 0));
    assert_eq!(set.leaves.len(), 4);
    assert!(set.leaves.contains(&node(1, 1, 0)));
    // L1' = children(root) ∪ grandchildren (16 level-2 nodes).
    assert_eq!(set.children.len(), 4 + 16);
    // Step 2: a2 = (2: 3,3) ∈ L1' (child of leaf (1: 1,1)): L2 = L1 − {parent} + children(a2) (none at height 2);
    // L2' = L1' − {a2}, then ∪ children of leaves (no new ones).
    set.update(&tree, &node(2, 3, 3));
    assert!(!set.leaves.contains(&node(1, 1, 1)));
    assert_eq!(set.leaves.len(), 3);
    assert!(!set.children.contains(&node(2, 3, 3)));
    assert_eq!(set.children.len(), 19);
    assert_eq!(set.active().len(), 3 + 19 - 3, "leaves (1:0,0), (1:0,1), (1:1,0) are also in L'");
    // Step 3: a3 = (1: 0,0) ∈ L2' (it stayed in L' from step 1): its parent (root) is no longer a leaf, so
    // L3 = L2 + children(a3) and a3 leaves L'.
    set.update(&tree, &node(1, 0, 0));
    assert!(set.leaves.contains(&node(2, 0, 0)) && set.leaves.contains(&node(1, 0, 0)));
    assert!(!set.children.contains(&node(1, 0, 0)));
    // Step 4: a4 = (2: 0,0), a leaf in L3 and in L3': takes the first branch (a ∈ L'): parent (1: 0,0) leaves L.
    set.update(&tree, &node(2, 0, 0));
    assert!(!set.leaves.contains(&node(1, 0, 0)));
    assert!(!set.children.contains(&node(2, 0, 0)));
}

fn indirect_spec(algorithm: &str, tree: bool) -> StudySpec {
    let mut block = json!({
        "query_parameters": unit_params(&["a1", "a2"]),
        "conditional": [
            {"target": "x1", "query": "a1", "form": "affine", "scale": 15.0, "offset": -5.0, "noise_std": 0.7},
            {"target": "x2", "query": "a2", "form": "cosine", "scale": 15.0, "noise_std": 0.7}
        ],
        "samples": 8
    });
    if tree {
        block["tree"] = json!({"height": 3, "cost": [0.5, 1.0, 1.5, 2.0], "noise_std": [1.0, 0.5, 0.33, 0.25]});
    }
    serde_json::from_value(json!({
        "parameters": [
            {"name": "x1", "type": "float", "low": -5.0, "high": 10.0},
            {"name": "x2", "type": "float", "low": 0.0, "high": 15.0}
        ],
        "objective": {"goal": "minimize"},
        "algorithm": {"name": algorithm},
        "indirect": block,
        "seed": 5
    }))
    .unwrap()
}

#[test]
fn indirect_block_errors_name_the_field() {
    let mut spec = indirect_spec("cmes", false);
    let block = spec.indirect.as_mut().unwrap();
    block.conditional.as_mut().unwrap()[1].query = "nope".into();
    block.regularizer = Some(-1.0);
    let errors = Study::new(spec).unwrap_err();
    let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert!(fields.contains(&"indirect.conditional[1].query"), "{fields:?}");
    assert!(fields.contains(&"indirect.regularizer"), "{fields:?}");
    let mut spec = indirect_spec("cmes", true);
    spec.indirect.as_mut().unwrap().tree.as_mut().unwrap().cost.pop();
    let errors = Study::new(spec).unwrap_err();
    assert_eq!(errors[0].field, "indirect.tree.cost");
    assert!(Study::new(indirect_spec("gp-ts", false)).is_err(), "only indirect algorithms on indirect studies");
    let plain: StudySpec =
        serde_json::from_value(json!({"parameters": unit_params(&["x"]), "algorithm": {"name": "cmes"}})).unwrap();
    assert_eq!(Study::new(plain).unwrap_err()[0].field, "algorithm.name");
}

/// Branin through the known conditional, simulated by averaging over many draws of x | a.
fn aggregate(q: &serde_json::Map<String, serde_json::Value>, rng: &mut StdRng) -> f64 {
    let (a1, a2) = (q["a1"].as_f64().unwrap(), q["a2"].as_f64().unwrap());
    let mut s = 0.0;
    for _ in 0..200 {
        let x1 = (15.0 * a1 - 5.0 + 0.7 * normal(rng)).clamp(-5.0, 10.0);
        let x2 = (15.0 * (std::f64::consts::FRAC_PI_2 * a2).cos() + 0.7 * normal(rng)).clamp(0.0, 15.0);
        s += engine::testfunctions::branin(x1, x2);
    }
    s / 200.0
}

fn run_loop(algorithm: &str, tree: bool, steps: usize) -> (Study, History, PolicyState) {
    let study = Study::new(indirect_spec(algorithm, tree)).unwrap();
    let mut rng = StdRng::seed_from_u64(2);
    let (mut history, mut state) = (History::default(), PolicyState::default());
    for _ in 0..steps {
        let out = study.suggest(&history, &state, &SuggestRequest { count: 1, context: None }).unwrap();
        state = out.state;
        let s = &out.suggestions[0];
        assert!(s.assignments.is_empty(), "the client sets only the query");
        let q = s.extras.query.clone().expect("a suggestion carries the query");
        if tree {
            assert!(s.extras.expected_cost.is_some());
        }
        let obs = ObservationRecord {
            extras: PointExtras { query: Some(q.clone()), ..PointExtras::default() },
            value: Some(aggregate(&q, &mut rng)),
            ..Default::default()
        };
        study.validate_observation(&obs).unwrap();
        history.observations.push(obs);
    }
    (study, history, state)
}

#[test]
fn every_indirect_algorithm_runs_a_loop_and_recommends_a_target_point() {
    for (alg, tree) in [("cmes", false), ("auto", true), ("gp-ei", false), ("gp-ucb", true), ("gp-mes", false)] {
        let (study, history, state) = run_loop(alg, tree, 8);
        let best = study.recommend(&history, &state).unwrap().expect("a recommendation");
        let x1 = best.assignments["x1"].as_f64().unwrap();
        let x2 = best.assignments["x2"].as_f64().unwrap();
        assert!((-5.0..=10.0).contains(&x1) && (0.0..=15.0).contains(&x2), "{alg}: {:?}", best.assignments);
        assert!(best.predicted.mean.is_finite() && best.predicted.stddev.is_finite());
        if alg == "auto" {
            assert_eq!(study.algorithm(), "cmets");
            assert!(study.describe(&state).is_some());
        }
    }
}

#[test]
fn cmes_finds_a_good_branin_region_through_the_known_conditional() {
    let (study, history, state) = run_loop("cmes", false, 25);
    let best = study.recommend(&history, &state).unwrap().unwrap();
    let (x1, x2) = (best.assignments["x1"].as_f64().unwrap(), best.assignments["x2"].as_f64().unwrap());
    let f = engine::testfunctions::branin(x1, x2);
    assert!(f < 10.0, "Branin at the recommendation {f} (minimum 0.398, mean over the box ≈ 54)");
}

#[test]
fn observations_need_a_valid_query_and_pairs_are_validated() {
    let study = Study::new(indirect_spec("cmes", false)).unwrap();
    let missing = ObservationRecord { value: Some(1.0), ..Default::default() };
    assert_eq!(study.validate_observation(&missing).unwrap_err()[0].field, "query");
    let mut q = serde_json::Map::new();
    q.insert("a1".into(), json!(0.5));
    q.insert("a2".into(), json!(2.0));
    let bad = ObservationRecord {
        value: Some(1.0),
        extras: PointExtras { query: Some(q), ..PointExtras::default() },
        ..Default::default()
    };
    assert_eq!(study.validate_observation(&bad).unwrap_err()[0].field, "query.a2");
    let pair: PairRecord =
        serde_json::from_value(json!({"target": {"x1": 0.0, "x2": 20.0}, "query": {"a1": 0.1, "a2": 0.2}})).unwrap();
    assert_eq!(study.validate_pairs(&[pair]).unwrap_err()[0].field, "pairs[0].target.x2");
}

#[test]
fn without_pairs_cmes_falls_back_to_its_design_and_uploaded_pairs_join_the_spec_pairs() {
    let pair = |i: usize| -> PairRecord {
        let (a1, a2) = ((i % 7) as f64 / 7.0 + 0.05, (i / 7) as f64 / 7.0 + 0.05);
        serde_json::from_value(
            json!({"target": {"x1": 15.0 * a1 - 5.0, "x2": 15.0 * a2}, "query": {"a1": a1, "a2": a2}}),
        )
        .unwrap()
    };
    let mut spec = indirect_spec("cmes", false);
    let block = spec.indirect.as_mut().unwrap();
    block.conditional = None;
    block.pairs = vec![pair(0)];
    spec.algorithm.options.insert("initial_design".into(), json!(1));
    spec.algorithm.options.insert("candidates".into(), json!(64));
    spec.algorithm.options.insert("target_grid".into(), json!(32));
    let study = Study::new(spec).unwrap();
    let mut rng = StdRng::seed_from_u64(4);
    let (mut history, mut state) = (History::default(), PolicyState::default());
    let mut phases = Vec::new();
    for round in 0..4 {
        if round == 2 {
            // One pair in the spec is not enough for the estimator; uploaded ones come on top.
            history.pairs = (1..40).map(pair).collect();
        }
        let out = study.suggest(&history, &state, &SuggestRequest { count: 1, context: None }).unwrap();
        state = out.state;
        let s = &out.suggestions[0];
        phases.push(s.diagnostics.phase.clone().unwrap());
        if round >= 2 {
            assert_eq!(s.diagnostics.extra["pairs"], json!(40), "spec pair + 39 uploaded");
        } else {
            assert!(s.diagnostics.extra.get("pairs").is_none());
            if round == 1 {
                assert!(study.recommend(&history, &state).unwrap().is_none(), "no conditional, no model");
            }
        }
        let q = s.extras.query.clone().unwrap();
        history.observations.push(ObservationRecord {
            value: Some(aggregate(&q, &mut rng)),
            extras: PointExtras { query: Some(q), ..PointExtras::default() },
            ..Default::default()
        });
    }
    assert_eq!(phases, ["initial_design", "fallback", "model", "model"]);
    assert!(study.recommend(&history, &state).unwrap().is_some());
}
