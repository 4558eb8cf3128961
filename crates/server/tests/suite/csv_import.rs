//! CSV import (`POST …/observations/batch` with `Content-Type: text/csv`) on both backends: an export imports into a
//! fresh study with the same spec and reproduces its observations; every error class answers 4xx naming
//! `columns.<name>` or `rows[i].<column>` and stores nothing, after the study's own errors (404, the key's 409,
//! archived 409); other content types are 415; an `Idempotency-Key` replays.

use crate::common;

use common::{Resp, TestServer, backends};
use serde_json::{Value, json};

fn post_csv(srv: &TestServer, study: &str, body: &[u8], headers: &[(&str, &str)]) -> Resp {
    let mut all = vec![("Content-Type", "text/csv")];
    all.extend_from_slice(headers);
    srv.raw("POST", &format!("/v1/studies/{study}/observations/batch"), Some(body), &all)
}

fn export(srv: &TestServer, study: &str) -> String {
    let r = srv.get(&format!("/v1/studies/{study}/observations?format=csv")).expect(200);
    assert!(r.header("content-type").unwrap_or_default().starts_with("text/csv"), "{:?}", r.headers);
    r.text
}

/// A study's observations without what a new study gives anew (ids, times, suggestions).
fn observations(srv: &TestServer, study: &str) -> Vec<Value> {
    let page = srv.get(&format!("/v1/studies/{study}/observations?limit=1000")).expect(200).json;
    page["observations"]
        .as_array()
        .expect("observations")
        .iter()
        .map(|o| {
            let mut o = o.clone();
            for k in ["id", "study_id", "suggestion_id", "created_at"] {
                o.as_object_mut().expect("object").remove(k);
            }
            o
        })
        .collect()
}

/// The CSV's rows without the columns an import ignores (id, suggestion_id, created_at).
fn without_ids(csv_text: &str) -> Vec<Vec<String>> {
    let mut reader = csv::ReaderBuilder::new().has_headers(false).from_reader(csv_text.as_bytes());
    reader
        .records()
        .map(|r| {
            let r = r.expect("the export is CSV");
            r.iter().enumerate().filter(|(j, _)| ![0, 2, 3].contains(j)).map(|(_, c)| c.to_string()).collect()
        })
        .collect()
}

/// Stores `items` in a study of `spec` (JSON batch, plus `suggested` ask-tell rounds), exports it, imports the export
/// into a fresh study of the same spec, and checks the two hold the same observations.
fn round_trip(srv: &TestServer, spec: &Value, items: Value, suggested: usize) {
    let b = srv.backend;
    let a = srv.create_study(spec.clone())["id"].as_str().expect("id").to_string();
    srv.post(&format!("/v1/studies/{a}/observations/batch"), json!({"observations": items})).expect(201);
    for _ in 0..suggested {
        srv.ask_tell(&a, |_| 0.5);
    }
    let exported = export(srv, &a);
    let fresh = srv.create_study(spec.clone())["id"].as_str().expect("id").to_string();
    let r = post_csv(srv, &fresh, exported.as_bytes(), &[]).expect(201);
    let n = items_len(&exported);
    assert_eq!(r.json["observations"].as_array().map(Vec::len), Some(n), "{b}: {}", r.text);
    assert!(r.json["observations"].as_array().expect("list").iter().all(|o| o.get("suggestion_id").is_none()));
    let (before, after) = (observations(srv, &a), observations(srv, &fresh));
    assert_eq!(before.len(), n, "{b}");
    assert_eq!(before, after, "{b}: the import reproduces the observations\nexport:\n{exported}");
    assert_eq!(without_ids(&exported), without_ids(&export(srv, &fresh)), "{b}: and exports the same CSV");
}

fn items_len(csv_text: &str) -> usize {
    csv::Reader::from_reader(csv_text.as_bytes()).records().count()
}

fn mixed_spec() -> Value {
    json!({
        "name": "csv",
        "objective": {"name": "yield", "goal": "maximize"},
        "parameters": [
            {"name": "temperature", "type": "float", "low": -20, "high": 80},
            {"name": "catalyst_ppm", "type": "float", "low": 1, "high": 1000, "scale": "log"},
            {"name": "stir_rpm", "type": "int", "low": 100, "high": 1000},
            {"name": "solvent", "type": "categorical", "choices": ["water", "ethanol, 95%", "say \"dmso\"", "1"]}
        ],
        "seed": 3
    })
}

#[test]
fn an_export_imports_into_a_fresh_study_and_reproduces_the_observations() {
    for srv in backends() {
        let items = json!([
            {"assignments": {"temperature": 61.2, "catalyst_ppm": 30, "stir_rpm": 400, "solvent": "ethanol, 95%"},
             "value": 0.74, "value_stddev": 0.01, "cost": 1.5,
             "metadata": {"operator": "ada, \"the first\"", "batch": [1, 2], "note": "line\nbreak"}},
            {"assignments": {"temperature": -12.5, "catalyst_ppm": 1.0, "stir_rpm": 1000, "solvent": "say \"dmso\""},
             "value": -3.25e-7, "cost": 0},
            {"assignments": {"temperature": 0.1, "catalyst_ppm": 999.999, "stir_rpm": 100, "solvent": "1"},
             "failed": true, "metadata": {}},
            {"assignments": {"temperature": 80, "catalyst_ppm": 123.456789012345, "stir_rpm": 555, "solvent": "water"},
             "value": 98765.4321}
        ]);
        round_trip(&srv, &mixed_spec(), items, 2);
    }
}

#[test]
fn contexts_control_sets_and_noise_levels_round_trip() {
    for srv in backends() {
        let contexts = json!({
            "name": "contexts", "seed": 1,
            "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1},
                           {"name": "humidity", "type": "float", "low": 0, "high": 1, "role": "context"}]
        });
        round_trip(
            &srv,
            &contexts,
            json!([{"assignments": {"x": 0.2, "humidity": 0.9}, "value": 1.0},
                   {"assignments": {"x": 0.7, "humidity": 0.1}, "value": 2.0}]),
            0,
        );
        let control_sets = json!({
            "name": "control-sets", "seed": 2,
            "parameters": [{"name": "x1", "type": "float", "low": 0, "high": 1},
                           {"name": "x2", "type": "float", "low": 0, "high": 1, "distribution": {"type": "uniform"}}],
            "control_sets": [{"name": "one", "parameters": ["x1"]}, {"name": "both", "parameters": ["x1", "x2"]}]
        });
        round_trip(
            &srv,
            &control_sets,
            json!([{"assignments": {"x1": 0.2, "x2": 0.5}, "control_set": "one", "value": 1.0, "cost": 0.5},
                   {"assignments": {"x1": 0.7, "x2": 0.3}, "control_set": "both", "value": 2.0, "cost": 1.0}]),
            0,
        );
        let noise_levels = json!({
            "name": "noise-levels", "seed": 3,
            "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}],
            "noise_levels": [{"name": "fast", "noise_variance": 0.1, "cost": 1}, {"name": "slow", "noise_variance": 0.01, "cost": 4}]
        });
        round_trip(
            &srv,
            &noise_levels,
            json!([{"assignments": {"x": 0.2}, "noise_level": "fast", "value": 1.0},
                   {"assignments": {"x": 0.4}, "noise_level": "slow", "value": 1.5}]),
            0,
        );
    }
}

/// The `field: message` pairs of a problem document.
fn errors(r: &Resp) -> Vec<String> {
    r.json["errors"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| format!("{}: {}", e["field"].as_str().unwrap_or(""), e["message"].as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn each_error_names_the_column_or_the_row_and_column_and_nothing_is_stored() {
    const HEADER: &str = "temperature,catalyst_ppm,stir_rpm,solvent,value,value_stddev,cost,failed,metadata\n";
    const GOOD: &str = "20,10,500,water,1,,,,\n";
    for srv in backends() {
        let b = srv.backend;
        let id = srv.create_study(mixed_spec())["id"].as_str().expect("id").to_string();
        // (body, expected status, expected field names, a word the first message contains)
        let cases: Vec<(String, u16, Vec<&str>, &str)> = vec![
            (
                "temperature,catalyst_ppm,stir_rpm,solvent,value,colour\n20,10,500,water,1,red\n".into(),
                422,
                vec!["columns.colour"],
                "unknown column",
            ),
            (
                "temperature,catalyst_ppm,solvent,value\n20,10,water,1\n".into(),
                422,
                vec!["columns.stir_rpm"],
                "missing",
            ),
            (
                "temperature,catalyst_ppm,stir_rpm,solvent\n20,10,500,water\n".into(),
                422,
                vec!["columns.value"],
                "missing",
            ),
            (
                "temperature,catalyst_ppm,stir_rpm,solvent,value,temperature\n".into(),
                422,
                vec!["columns.temperature"],
                "twice",
            ),
            (
                format!("{HEADER}{GOOD}{GOOD}{GOOD}hot,10,500,water,1,,,,\n"),
                422,
                vec!["rows[3].temperature"],
                "not a number",
            ),
            (format!("{HEADER}{GOOD}100,10,500,water,1,,,,\n"), 422, vec!["rows[1].temperature"], "outside"),
            (format!("{HEADER}20,10,500.5,water,1,,,,\n"), 422, vec!["rows[0].stir_rpm"], "integer"),
            (format!("{HEADER}20,10,500,oil,1,,,,\n"), 422, vec!["rows[0].solvent"], "not one of"),
            (format!("{HEADER}20,10,,water,1,,,,\n"), 422, vec!["rows[0].stir_rpm"], "missing value"),
            (format!("{HEADER}20,10,500,water,,,,,\n"), 422, vec!["rows[0].value"], "required"),
            (format!("{HEADER}20,10,500,water,NaN,,,,\n"), 422, vec!["rows[0].value"], "finite"),
            (
                format!("{HEADER}20,10,500,water,1,inf,-Infinity,,\n"),
                422,
                vec!["rows[0].value_stddev", "rows[0].cost"],
                "finite",
            ),
            (format!("{HEADER}20,10,500,water,1e999,,,,\n"), 422, vec!["rows[0].value"], "finite"),
            (format!("{HEADER}20,10,500,water,1,-1,,,\n"), 422, vec!["rows[0].value_stddev"], "≥ 0"),
            (format!("{HEADER}20,10,500,water,1,,,maybe,\n"), 422, vec!["rows[0].failed"], "true or false"),
            (format!("{HEADER}20,10,500,water,1,,,,[1]\n"), 422, vec!["rows[0].metadata"], "JSON object"),
            (format!("{HEADER}20,10,500,wa\0ter,1,,,,\n"), 422, vec!["rows[0].solvent"], "NUL"),
            (
                format!("{HEADER}20,10,500,water,1,,,,\"{{\"\"k\"\": \"\"a\\u0000\"\"}}\"\n"),
                422,
                vec!["rows[0].metadata"],
                "NUL",
            ),
            (format!("{HEADER}{GOOD}{GOOD}20,10,500\n"), 422, vec!["rows[2]"], "3 cells"),
            (HEADER.into(), 422, vec!["rows"], "1–1000"),
            (format!("{HEADER}{}", GOOD.repeat(1001)), 422, vec!["rows"], "1–1000"),
            (
                "".into(),
                422,
                vec![
                    "columns.temperature",
                    "columns.catalyst_ppm",
                    "columns.stir_rpm",
                    "columns.solvent",
                    "columns.value",
                ],
                "missing",
            ),
        ];
        for (body, status, fields, word) in cases {
            let r = post_csv(&srv, &id, body.as_bytes(), &[]);
            let first = body.lines().take(2).collect::<Vec<_>>().join("\\n");
            assert_eq!(r.status, status, "{b}: {first}: {}", r.text);
            assert_eq!(r.error_fields(), fields, "{b}: {first}: {}", r.text);
            assert!(errors(&r)[0].contains(word), "{b}: {first}: {:?} lacks '{word}'", errors(&r));
        }
        // Bytes that are not UTF-8, in a cell and in the header.
        let r = post_csv(&srv, &id, &[HEADER.as_bytes(), b"20,10,500,wat\xffer,1,,,,\n"].concat(), &[]).expect(422);
        assert_eq!(r.error_fields(), ["rows[0].solvent"], "{b}: {}", r.text);
        let r = post_csv(&srv, &id, b"temperature,\xff\n", &[]).expect(422);
        assert_eq!(r.error_fields(), ["columns[1]"], "{b}: {}", r.text);
        let counts = srv.get(&format!("/v1/studies/{id}")).expect(200).json["counts"].clone();
        assert_eq!(counts["observations"], 0, "{b}: a batch with an error stores nothing");
        // A header with any column order and only the required columns imports.
        let r = post_csv(&srv, &id, b"value,solvent,stir_rpm,catalyst_ppm,temperature\r\n2.5,water,500,10,20\r\n", &[]);
        assert_eq!(r.expect(201).json["observations"][0]["value"], 2.5, "{b}");
        // An unknown study is 404, an archived one 409.
        let r = post_csv(&srv, "00000000-0000-4000-8000-000000000000", format!("{HEADER}{GOOD}").as_bytes(), &[]);
        r.expect(404);
        srv.delete(&format!("/v1/studies/{id}")).expect(200);
        post_csv(&srv, &id, format!("{HEADER}{GOOD}").as_bytes(), &[]).expect(409);
    }
}

#[test]
fn a_body_over_the_limit_is_413_and_other_content_types_are_415() {
    for backend in ["sqlite", "postgres"] {
        let Some(srv) = TestServer::with_config(backend, |c| c.max_body_bytes = 2048) else { continue };
        let id = srv.create_study(mixed_spec())["id"].as_str().expect("id").to_string();
        let big = format!("temperature,catalyst_ppm,stir_rpm,solvent,value\n{}", "20,10,500,water,1\n".repeat(200));
        post_csv(&srv, &id, big.as_bytes(), &[]).expect(413);
        let path = format!("/v1/studies/{id}/observations/batch");
        let csv = b"temperature,catalyst_ppm,stir_rpm,solvent,value\n20,10,500,water,1\n";
        for content_type in ["text/plain", "application/xml", "text/csv; charset=latin1", "application/csv"] {
            let r = srv.raw("POST", &path, Some(csv), &[("Content-Type", content_type)]).expect(415);
            assert!(
                r.json["detail"].as_str().is_some_and(|d| d.contains("text/csv") || d.contains("UTF-8")),
                "{}",
                r.text
            );
        }
        srv.raw("POST", &path, Some(csv), &[]).expect(415);
        let r = srv.raw("POST", &path, Some(csv), &[("Content-Type", "text/csv; charset=UTF-8")]).expect(201);
        assert_eq!(r.json["observations"].as_array().map(Vec::len), Some(1));
        // JSON is unchanged.
        srv.post(&path, json!({"observations": [{"assignments": {"temperature": 20, "catalyst_ppm": 10, "stir_rpm": 500, "solvent": "water"}, "value": 1}]}))
            .expect(201);
        let r = srv.post(&path, json!({"observations": [{"assignments": {"temperature": 200, "catalyst_ppm": 10, "stir_rpm": 500, "solvent": "water"}, "value": 1}]}));
        assert_eq!(r.expect(422).error_fields(), ["observations[0].assignments.temperature"]);
    }
}

#[test]
fn an_idempotency_key_replays_a_csv_import() {
    for srv in backends() {
        let b = srv.backend;
        let id = srv.create_study(mixed_spec())["id"].as_str().expect("id").to_string();
        let csv = b"temperature,catalyst_ppm,stir_rpm,solvent,value\n20,10,500,water,1\n30,20,600,1,2\n";
        let key = [("Idempotency-Key", "csv-import-1")];
        let first = post_csv(&srv, &id, csv, &key).expect(201);
        let again = post_csv(&srv, &id, csv, &key).expect(201);
        assert_eq!(again.header("idempotent-replayed"), Some("true"), "{b}");
        assert_eq!(first.json, again.json, "{b}: the replay answers the first response");
        let counts = srv.get(&format!("/v1/studies/{id}")).expect(200).json["counts"].clone();
        assert_eq!(counts["observations"], 2, "{b}: the replay stored nothing");
        let other = b"temperature,catalyst_ppm,stir_rpm,solvent,value\n20,10,500,water,9\n";
        let r = post_csv(&srv, &id, other, &key).expect(409);
        assert_eq!(r.json["type"], "https://bayesd.dev/problems/idempotency-key-reused", "{b}");
        // A failed import keeps no key: the corrected file goes through with it.
        let bad = b"temperature,catalyst_ppm,stir_rpm,solvent,value\nhot,10,500,water,1\n";
        post_csv(&srv, &id, bad, &[("Idempotency-Key", "csv-import-2")]).expect(422);
        post_csv(&srv, &id, other, &[("Idempotency-Key", "csv-import-2")]).expect(201);
    }
}

/// The order of a CSV import's errors (`service::tell::tell_batch`): the study's state comes before the CSV's
/// contents, since judging a CSV needs the study's parameters, read once under the study lock. So a malformed CSV
/// is 404 for an unknown study, the key's 409 when its `Idempotency-Key` was used with another body, 409 for an
/// archived study, and only then 422 naming its row and column.
#[test]
fn the_study_is_judged_before_the_csv() {
    const BAD: &[u8] = b"temperature,catalyst_ppm,stir_rpm,solvent,value\nhot,10,500,water,1\n";
    const GOOD: &[u8] = b"temperature,catalyst_ppm,stir_rpm,solvent,value\n20,10,500,water,1\n";
    for srv in backends() {
        let b = srv.backend;
        let r = post_csv(&srv, "00000000-0000-4000-8000-000000000000", BAD, &[]).expect(404);
        assert_eq!(r.json["type"], "https://bayesd.dev/problems/not-found", "{b}: {}", r.text);
        let id = srv.create_study(mixed_spec())["id"].as_str().expect("id").to_string();
        let r = post_csv(&srv, &id, BAD, &[]).expect(422);
        assert_eq!(r.error_fields(), ["rows[0].temperature"], "{b}: {}", r.text);
        post_csv(&srv, &id, GOOD, &[("Idempotency-Key", "order-1")]).expect(201);
        let r = post_csv(&srv, &id, BAD, &[("Idempotency-Key", "order-1")]).expect(409);
        assert_eq!(r.json["type"], "https://bayesd.dev/problems/idempotency-key-reused", "{b}: {}", r.text);
        srv.delete(&format!("/v1/studies/{id}")).expect(200);
        let r = post_csv(&srv, &id, BAD, &[]).expect(409);
        assert_eq!(r.json["type"], "https://bayesd.dev/problems/study-archived", "{b}: {}", r.text);
        assert!(r.json.get("errors").is_none(), "{b}: the CSV was not judged: {}", r.text);
        // The stored response still answers its key on the archived study.
        let again = post_csv(&srv, &id, GOOD, &[("Idempotency-Key", "order-1")]).expect(201);
        assert_eq!(again.header("idempotent-replayed"), Some("true"), "{b}");
        let counts = srv.get(&format!("/v1/studies/{id}")).expect(200).json["counts"].clone();
        assert_eq!(counts["observations"], 1, "{b}: only the good import stored anything");
    }
}
