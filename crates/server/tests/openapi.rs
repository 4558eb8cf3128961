//! Contract test: the OpenAPI document the code generates (and serves at /openapi.json) equals the committed
//! `openapi/openapi.json`; Swagger UI is served from the binary at /docs.

mod common;

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
