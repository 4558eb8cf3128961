//! Contract test: the OpenAPI document the code generates (and serves at /openapi.json) equals the committed
//! `openapi/openapi.json`; Swagger UI is served from the binary at /docs.

use crate::common;

const REGENERATE: &str = "cargo run --release -p server -- openapi > openapi/openapi.json";

fn committed() -> serde_json::Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../openapi/openapi.json");
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {path}: {e}; regenerate it with:\n    {REGENERATE}"));
    serde_json::from_str(&text).expect("openapi/openapi.json is JSON")
}

#[test]
fn generated_openapi_matches_the_committed_document() {
    let generated = server::openapi();
    assert!(
        generated == committed(),
        "openapi/openapi.json is out of date with the code. Regenerate it from the workspace root with:\n    {REGENERATE}\n"
    );
}

#[test]
fn served_openapi_matches_the_committed_document_and_swagger_ui_is_served() {
    let srv = common::TestServer::sqlite();
    let served = srv.get("/openapi.json").expect(200).json;
    assert!(served == committed(), "served /openapi.json differs from the committed one; run:\n    {REGENERATE}");
    assert_eq!(served["openapi"], "3.1.0");
    let docs = srv.get("/docs/").expect(200);
    assert!(docs.text.contains("swagger-ui"), "Swagger UI page: {}", &docs.text[..docs.text.len().min(200)]);
}

#[test]
fn every_response_has_a_description_and_every_schema_field_a_description() {
    let doc = committed();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            for (status, res) in op["responses"].as_object().expect("responses") {
                let d = res["description"].as_str().unwrap_or_default();
                assert!(!d.is_empty(), "{method} {path} {status} has no description");
            }
        }
    }
    // Our own schemas (the engine's are checked by their authors) describe every property.
    for name in ["Problem", "ProblemField", "StudyResource", "SuggestionResource", "ObservationResource", "Budget"] {
        let schema = &doc["components"]["schemas"][name];
        let props = schema["properties"]
            .as_object()
            .or_else(|| schema["allOf"].as_array().and_then(|a| a.iter().find_map(|s| s["properties"].as_object())));
        for (field, p) in props.unwrap_or_else(|| panic!("schema {name} has properties")) {
            let described = p.get("description").is_some()
                || p["allOf"].as_array().is_some_and(|a| a.iter().any(|s| s.get("description").is_some()))
                || p["oneOf"].as_array().is_some();
            assert!(described || p.get("$ref").is_some(), "{name}.{field} has no description");
        }
    }
}

/// Every example in a document: (where, its schema, the example). Schema `example`/`examples` anywhere in a schema
/// (components and inline, walked through properties, items, compositions and conditionals); parameter and
/// media-type `example` and `examples[*].value` against their `schema`.
fn examples(doc: &serde_json::Value) -> Vec<(String, serde_json::Value, serde_json::Value)> {
    use serde_json::Value;
    fn schema(s: &Value, at: String, out: &mut Vec<(String, Value, Value)>) {
        let Some(o) = s.as_object() else { return };
        if let Some(e) = o.get("example") {
            out.push((format!("{at}/example"), s.clone(), e.clone()));
        }
        for (i, e) in o.get("examples").and_then(Value::as_array).into_iter().flatten().enumerate() {
            out.push((format!("{at}/examples/{i}"), s.clone(), e.clone()));
        }
        for key in ["properties", "patternProperties", "$defs", "dependentSchemas"] {
            for (name, sub) in o.get(key).and_then(Value::as_object).into_iter().flatten() {
                schema(sub, format!("{at}/{key}/{name}"), out);
            }
        }
        for key in ["allOf", "anyOf", "oneOf", "prefixItems"] {
            for (i, sub) in o.get(key).and_then(Value::as_array).into_iter().flatten().enumerate() {
                schema(sub, format!("{at}/{key}/{i}"), out);
            }
        }
        for key in ["items", "additionalProperties", "unevaluatedProperties", "not", "if", "then", "else", "contains"] {
            if let Some(sub) = o.get(key) {
                schema(sub, format!("{at}/{key}"), out);
            }
        }
    }
    fn media(m: &Value, at: String, out: &mut Vec<(String, Value, Value)>) {
        let s = m.get("schema").cloned().unwrap_or(Value::Bool(true));
        if let Some(e) = m.get("example") {
            out.push((format!("{at}/example"), s.clone(), e.clone()));
        }
        for (name, e) in m.get("examples").and_then(Value::as_object).into_iter().flatten() {
            let value = e.get("value").unwrap_or_else(|| panic!("{at}/examples/{name} has no value"));
            out.push((format!("{at}/examples/{name}"), s.clone(), value.clone()));
        }
        schema(&s, format!("{at}/schema"), out);
    }
    let mut out = Vec::new();
    for (name, s) in doc["components"]["schemas"].as_object().into_iter().flatten() {
        schema(s, format!("#/components/schemas/{name}"), &mut out);
    }
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        for (method, op) in item.as_object().into_iter().flatten() {
            let at = format!("#/paths/{path}/{method}");
            for (i, p) in op["parameters"].as_array().into_iter().flatten().enumerate() {
                media(p, format!("{at}/parameters/{i}"), &mut out);
            }
            for (ct, m) in op["requestBody"]["content"].as_object().into_iter().flatten() {
                media(m, format!("{at}/requestBody/content/{ct}"), &mut out);
            }
            for (status, r) in op["responses"].as_object().into_iter().flatten() {
                for (ct, m) in r["content"].as_object().into_iter().flatten() {
                    media(m, format!("{at}/responses/{status}/content/{ct}"), &mut out);
                }
            }
        }
    }
    out
}

/// The violations of each example of `doc` against its schema, and of each problem example whose `status` is not
/// the status of the response it illustrates.
fn wrong_examples(doc: &serde_json::Value) -> Vec<String> {
    let mut wrong = Vec::new();
    for (at, schema, example) in examples(doc) {
        let root = serde_json::json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "components": doc["components"],
            "allOf": [schema],
        });
        let validator = jsonschema::validator_for(&root).unwrap_or_else(|e| panic!("{at}: bad schema: {e}"));
        wrong.extend(validator.iter_errors(&example).map(|e| format!("{at}: {e} at '{}'", e.instance_path())));
        let status = at.split("/responses/").nth(1).and_then(|r| r.split('/').next());
        let is_problem = at.contains("/content/application/problem+json/example");
        if let Some(status) = status.filter(|_| is_problem)
            && example["status"].as_u64().map(|s| s.to_string()).as_deref() != Some(status)
        {
            wrong.push(format!("{at}: a problem with status {} illustrates a {status} response", example["status"]));
        }
    }
    wrong
}

#[test]
fn every_example_of_the_committed_document_is_valid_against_its_schema() {
    let doc = committed();
    let all = examples(&doc);
    let wrong = wrong_examples(&doc);
    assert!(wrong.is_empty(), "{} of {} examples are wrong:\n  {}", wrong.len(), all.len(), wrong.join("\n  "));
    // The walk reaches each kind of example, so the check above is not vacuous.
    for part in
        ["#/components/schemas/StudyResource/example", "/parameters/0/example", "/requestBody/content/text/csv/example"]
    {
        assert!(all.iter().any(|(at, _, _)| at.contains(part)), "no example at {part}");
    }
    // Every problem response has an example of its own status.
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            for (status, r) in op["responses"].as_object().expect("responses") {
                let Some(m) = r.pointer("/content/application~1problem+json") else { continue };
                let first = m
                    .get("example")
                    .or_else(|| m["examples"].as_object().and_then(|e| e.values().next()?.get("value")));
                let first = first.unwrap_or_else(|| panic!("{method} {path} {status}: no example"));
                assert_eq!(first["status"].to_string(), *status, "{method} {path} {status}: {first}");
            }
        }
    }
}

#[test]
fn the_example_check_finds_wrong_examples() {
    let mut doc = committed();
    let schemas = &mut doc["components"]["schemas"];
    schemas["StudyResource"]["example"]["parameters"][0]["choices"] = serde_json::json!(["a", "b"]);
    schemas["Budget"]["properties"]["max_observations"]["example"] = serde_json::json!("sixty");
    let pointer = "/paths/~1v1~1studies/post/responses/400/content/application~1problem+json/example/status";
    *doc.pointer_mut(pointer).expect("the 400 example of POST /v1/studies") = serde_json::json!(422);
    let wrong = wrong_examples(&doc);
    assert!(wrong.iter().any(|w| w.starts_with("#/components/schemas/StudyResource/example")), "{wrong:?}");
    assert!(wrong.iter().any(|w| w.contains("Budget/properties/max_observations/example")), "{wrong:?}");
    assert!(wrong.iter().any(|w| w.contains("a problem with status 422 illustrates a 400 response")), "{wrong:?}");
    let mutated =
        ["#/components/schemas/StudyResource/example", "#/components/schemas/Budget/", "#/paths//v1/studies/post/"];
    assert!(wrong.iter().all(|w| mutated.iter().any(|m| w.starts_with(m))), "only the changed examples: {wrong:?}");
}
