//! Breakdown of one gp-ei suggest (fit vs acquisition) at n observations of Levy-d (development aid).
use engine::{History, ObservationRecord, PolicyState, Study, StudySpec, SuggestRequest, testfunctions::TestFunction};
use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::json;

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|s| s.parse().unwrap()).collect();
    let (n, d, reps) =
        (args.first().copied().unwrap_or(100), args.get(1).copied().unwrap_or(6), args.get(2).copied().unwrap_or(5));
    let algo = std::env::var("ALGO").unwrap_or_else(|_| "gp-ei".into());
    let f = TestFunction::levy(d);
    let params: Vec<_> =
        (0..d).map(|i| json!({"name": format!("x{i}"), "type": "float", "low": 0, "high": 1})).collect();
    for r in 0..reps as u64 {
        let spec: StudySpec = serde_json::from_value(
            json!({"parameters": params, "algorithm": {"name": algo, "options": {"refit_every": 1}}, "seed": r}),
        )
        .unwrap();
        let study = Study::new(spec).unwrap();
        let mut rng = StdRng::seed_from_u64(1000 + r);
        let mut h = History::default();
        for _ in 0..n {
            let u: Vec<f64> = (0..d).map(|_| rng.random::<f64>()).collect();
            let a = u.iter().enumerate().map(|(i, v)| (format!("x{i}"), json!(v))).collect();
            h.observations.push(ObservationRecord {
                assignments: a,
                value: Some(-f.eval_unit(&u)),
                ..Default::default()
            });
        }
        let last = h.observations.pop();
        let warm =
            study.suggest(&h, &PolicyState::default(), &SuggestRequest { count: 1, context: None }).unwrap().state;
        h.observations.extend(last);
        let t = std::time::Instant::now();
        let c = cpu_ms();
        let out = study.suggest(&h, &warm, &SuggestRequest { count: 1, context: None }).unwrap();
        let cpu = cpu_ms() - c;
        let dg = &out.suggestions[0].diagnostics;
        println!(
            "wall {:7.1} ms  cpu {cpu:7.1} ms  (wall: fit {:7.1}  acq {:7.1})",
            t.elapsed().as_secs_f64() * 1e3,
            dg.fit_ms.unwrap(),
            dg.acquisition_ms.unwrap()
        );
    }
}

/// CPU time of this thread in milliseconds from /proc/thread-self/schedstat (insensitive to other load).
fn cpu_ms() -> f64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    s.split_whitespace().next().and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) * 1e-6
}
