//! The committed OpenAPI document as a test oracle: every response a test receives from a documented operation
//! must have a documented status and content type, and a JSON body must validate (JSON Schema Draft 2020-12, the
//! dialect of OpenAPI 3.1) against the schema the document gives for it; a JSON request the server accepted (2xx)
//! must validate against the operation's request schema. Requests to paths the document does not
//! have (the router's 404 and 405 fallbacks) are not checked.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Value, json};

use super::Resp;

struct Contract {
    doc: Value,
    /// (method, template segments, operation pointer)
    operations: Vec<(String, Vec<String>, String)>,
    validators: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

fn contract() -> &'static Contract {
    static C: OnceLock<Contract> = OnceLock::new();
    C.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../openapi/openapi.json");
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("openapi/openapi.json"))
            .expect("the document is JSON");
        let mut operations = Vec::new();
        for (template, item) in doc["paths"].as_object().expect("paths") {
            for method in item.as_object().expect("path item").keys() {
                let segments = template.trim_matches('/').split('/').map(str::to_string).collect();
                let pointer = format!("/paths/{}/{method}", template.replace('~', "~0").replace('/', "~1"));
                operations.push((method.to_ascii_uppercase(), segments, pointer));
            }
        }
        Contract { doc, operations, validators: Mutex::default() }
    })
}

/// The operation a request reaches: the matching template with the most literal segments.
fn operation(method: &str, path: &str) -> Option<String> {
    let path = path.split('?').next().unwrap_or_default();
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    contract()
        .operations
        .iter()
        .filter(|(m, t, _)| {
            m == method
                && t.len() == segments.len()
                && t.iter().zip(&segments).all(|(t, s)| t.starts_with('{') && !s.is_empty() || t == s)
        })
        .max_by_key(|(_, t, _)| t.iter().filter(|t| !t.starts_with('{')).count())
        .map(|(_, _, p)| p.clone())
}

/// Checks one exchange against the document; panics naming the operation, status and the violations.
pub fn check(method: &str, path: &str, request: Option<&[u8]>, resp: &Resp) {
    let Some(op) = operation(method, path) else { return };
    let c = contract();
    let status = resp.status.to_string();
    if (200..300).contains(&resp.status)
        && let Some(schema) =
            c.doc.pointer(&op).and_then(|o| o.pointer("/requestBody/content/application~1json/schema"))
        && let Some(body) = request.and_then(|b| serde_json::from_slice::<Value>(b).ok())
    {
        let errors = validate(c, &format!("{op}/request"), schema, &body);
        assert!(
            errors.is_empty(),
            "{method} {path} was accepted ({status}) but its body does not match the document ({op}):\n  {}\nbody: {body}",
            errors.join("\n  ")
        );
    }
    let responses = &c.doc.pointer(&op).expect("operation")["responses"];
    let Some(documented) = responses.get(&status).or_else(|| responses.get("default")) else {
        panic!("{method} {path} answered {status}, which {op} does not document; body: {}", resp.text);
    };
    let content_type = resp.header("content-type").unwrap_or_default().split(';').next().unwrap_or_default().trim();
    let Some(content) = documented.get("content") else {
        assert!(resp.text.is_empty(), "{method} {path} {status}: a body where {op} documents none: {}", resp.text);
        return;
    };
    let Some(media) = content.get(content_type) else {
        panic!(
            "{method} {path} {status}: content type '{content_type}' not documented in {op} (documented: {:?})",
            content.as_object().map(|o| o.keys().collect::<Vec<_>>())
        );
    };
    if !content_type.ends_with("json") {
        return;
    }
    let Some(schema) = media.get("schema") else { return };
    let errors = validate(c, &format!("{op}/{status}/{content_type}"), schema, &resp.json);
    assert!(
        errors.is_empty(),
        "{method} {path} {status}: the body does not match the document ({op}):\n  {}\nbody: {}",
        errors.join("\n  "),
        resp.text
    );
}

/// The violations of `instance` against `schema` (resolved in the document's components), validators cached by key.
fn validate(c: &Contract, key: &str, schema: &Value, instance: &Value) -> Vec<String> {
    let validator = {
        let mut cache = c.validators.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        cache
            .entry(key.to_string())
            .or_insert_with(|| {
                let root = json!({
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "components": c.doc["components"],
                    "allOf": [schema],
                });
                Arc::new(jsonschema::validator_for(&root).unwrap_or_else(|e| panic!("{key}: bad schema: {e}")))
            })
            .clone()
    };
    validator.iter_errors(instance).map(|e| format!("{} at {}", e, e.instance_path())).collect()
}
