//! Quick end-to-end check of a GP-EI loop on a test function (development aid).
use engine::{History, ObservationRecord, PolicyState, Study, StudySpec, SuggestRequest, testfunctions::TestFunction};
use serde_json::json;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map_or("branin", String::as_str);
    let algo = args.get(2).map_or("gp-ei", String::as_str);
    let budget: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(40);
    let seed: u64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(0);
    let f = match name {
        "hartmann6" => TestFunction::hartmann6(),
        "ackley6" => TestFunction::ackley(6),
        _ => TestFunction::branin(),
    };
    let params: Vec<_> =
        (0..f.dim()).map(|i| json!({"name": format!("x{i}"), "type": "float", "low": 0, "high": 1})).collect();
    let options: serde_json::Value = args.get(5).map_or(json!({}), |s| serde_json::from_str(s).unwrap());
    let spec: StudySpec = serde_json::from_value(json!({
        "parameters": params,
        "objective": {"goal": "minimize"},
        "algorithm": {"name": algo, "options": options},
        "seed": seed
    }))
    .unwrap();
    let study = Study::new(spec).unwrap();
    let mut history = History::default();
    let mut state = PolicyState::default();
    let mut best = f64::INFINITY;
    for t in 0..budget {
        let t0 = std::time::Instant::now();
        let out = study.suggest(&history, &state, &SuggestRequest { count: 1, context: None }).unwrap();
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        state = out.state;
        let s = &out.suggestions[0];
        let u: Vec<f64> = (0..f.dim()).map(|i| s.assignments[&format!("x{i}")].as_f64().unwrap()).collect();
        let y = f.eval_unit(&u);
        best = best.min(y);
        println!("{t:3} {:>8.2}ms y={y:.6} regret={:.3e} {:?}", ms, best - f.optimum, s.diagnostics.phase);
        if std::env::var("SHOW_HYPERS").is_ok() && t % 10 == 9 {
            println!("    {}", s.diagnostics.hyperparameters.as_ref().map_or(String::new(), |h| h.to_string()));
        }
        history.observations.push(ObservationRecord {
            assignments: s.assignments.clone(),
            value: Some(y),
            ..Default::default()
        });
    }
}
