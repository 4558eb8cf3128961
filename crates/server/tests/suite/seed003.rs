//! Seed 003 over HTTP (TRUVAR for level-set estimation with noise levels): on a candidate grid, each suggestion
//! names the noise level (measurement mode) to use and the observation says which one it used; `best` returns the
//! classification of the domain into above / below / unclassified, which must agree with the observed data.

use crate::common;

use common::{Rng, backends};
use serde_json::json;

const THRESHOLD: f64 = 0.5;
/// (name, noise variance, cost).
const LEVELS: [(&str, f64, f64); 2] = [("precise", 1e-4, 10.0), ("rough", 0.01, 2.0)];

/// A smooth bump: above the threshold in a disc around (0.35, 0.6).
fn response(x: f64, y: f64) -> f64 {
    (-((x - 0.35).powi(2) + (y - 0.6).powi(2)) / 0.08).exp()
}

#[test]
fn level_set_study_with_noise_levels_runs_truvar_and_best_classifies_the_grid() {
    for srv in backends() {
        let b = srv.backend;
        let study = srv.create_study(json!({
            "name": "level-set",
            "parameters": [
                {"name": "x", "type": "float", "low": 0.0, "high": 1.0},
                {"name": "y", "type": "float", "low": 0.0, "high": 1.0}
            ],
            "objective": {"name": "concentration", "goal": "maximize"},
            "candidates": {"grid": {"x": {"count": 8}, "y": {"count": 8}}},
            "noise_levels": LEVELS.iter().map(|(n, v, c)| json!({"name": n, "noise_variance": v, "cost": c}))
                .collect::<Vec<_>>(),
            "level_set": {"threshold": THRESHOLD},
            "algorithm": {"name": "truvar"},
            "seed": 8
        }));
        let id = study["id"].as_str().expect("study id").to_string();
        let obs_path = format!("/v1/studies/{id}/observations");
        let grid: Vec<f64> = (0..8).map(|i| i as f64 / 7.0).collect();
        let on_grid = |v: f64| grid.iter().any(|g| (g - v).abs() < 1e-9);
        let mut rng = Rng(3);
        // (x, y, level, value) of every run.
        let mut runs: Vec<(f64, f64, String, f64)> = Vec::new();
        for round in 0..25 {
            let s = srv.post(&format!("/v1/studies/{id}/suggestions"), json!({"count": 1})).expect(201);
            let sug = &s.json["suggestions"][0];
            assert_eq!(sug["algorithm"], "truvar");
            let level = sug["noise_level"].as_str().unwrap_or_else(|| panic!("{b}: no noise level in {sug}"));
            let (_, var, cost) = LEVELS.iter().find(|l| l.0 == level).expect("a declared level");
            assert_eq!(sug["expected_cost"].as_f64(), Some(*cost), "{b}: the level's cost");
            let (x, y) = (sug["assignments"]["x"].as_f64().unwrap(), sug["assignments"]["y"].as_f64().unwrap());
            assert!(on_grid(x) && on_grid(y), "{b}: suggestions come from the candidate grid: {sug}");
            let value = response(x, y) + var.sqrt() * rng.normal();
            if round == 0 {
                let bad = json!({"suggestion_id": sug["id"], "noise_level": "exact", "value": value});
                assert_eq!(srv.post(&obs_path, bad).expect(422).error_fields(), ["noise_level"], "{b}");
            }
            let o = srv
                .post(
                    &obs_path,
                    json!({"suggestion_id": sug["id"], "noise_level": level, "value": value, "cost": cost}),
                )
                .expect(201);
            assert_eq!(o.json["noise_level"], level, "{b}: the observation records the level it used");
            runs.push((x, y, level.to_string(), value));
        }

        let best = srv.get(&format!("/v1/studies/{id}/best")).expect(200);
        let ls = &best.json["recommended"]["extra"]["level_set"];
        assert_eq!(ls["threshold"].as_f64(), Some(THRESHOLD), "{b}: {}", best.text);
        assert_eq!(ls["domain_size"], 64, "{b}: the whole grid is classified");
        let count = |k: &str| ls["counts"][k].as_u64().unwrap_or_else(|| panic!("{b}: counts.{k} in {ls}")) as usize;
        let (above, below, unclassified) = (count("above"), count("below"), count("unclassified"));
        assert_eq!(above + below + unclassified, 64, "{b}: {ls}");
        assert!(above > 0 && below > 0, "{b}: 25 runs classify part of each side: {ls}");
        assert_eq!(ls["truncated"], false);
        let listed = |k: &str| -> Vec<(f64, f64)> {
            ls[k]
                .as_array()
                .unwrap_or_else(|| panic!("{b}: {k} list"))
                .iter()
                .map(|p| (p["x"].as_f64().unwrap(), p["y"].as_f64().unwrap()))
                .collect()
        };
        let (above_pts, below_pts) = (listed("above"), listed("below"));
        assert_eq!((above_pts.len(), below_pts.len(), listed("unclassified").len()), (above, below, unclassified));
        // Consistency with the observed data: a point measured clearly above h (by 3 noise standard deviations) is
        // never classified below, and one measured clearly below never above.
        let same = |p: &(f64, f64), r: &(f64, f64, String, f64)| (p.0 - r.0).abs() < 1e-9 && (p.1 - r.1).abs() < 1e-9;
        for r in &runs {
            let sd = LEVELS.iter().find(|l| l.0 == r.2).unwrap().1.sqrt();
            if r.3 > THRESHOLD + 3.0 * sd {
                assert!(!below_pts.iter().any(|p| same(p, r)), "{b}: measured {} at ({}, {}) yet below", r.3, r.0, r.1);
            }
            if r.3 < THRESHOLD - 3.0 * sd {
                assert!(!above_pts.iter().any(|p| same(p, r)), "{b}: measured {} at ({}, {}) yet above", r.3, r.0, r.1);
            }
        }
        // And with the truth on the classified points (the response is smooth; TRUVAR's bounds are conservative).
        for p in &above_pts {
            assert!(response(p.0, p.1) > THRESHOLD - 0.1, "{b}: {p:?} classified above, f = {}", response(p.0, p.1));
        }
        for p in &below_pts {
            assert!(response(p.0, p.1) < THRESHOLD + 0.1, "{b}: {p:?} classified below, f = {}", response(p.0, p.1));
        }
    }
}
