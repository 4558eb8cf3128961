//! The OpenAPI document as served and committed: utoipa's output, then made true for strict JSON Schema (Draft
//! 2020-12) validators where utoipa cannot say it.
//!
//! - **Composition with closed schemas.** A body such as `CreateStudy` is `allOf[StudySpec, {name, budget, …}]`
//!   (serde flattens the spec into it), and `StudySpec` alone denies unknown fields (`additionalProperties: false`),
//!   which no body with a `name` can satisfy. The closed subschema is opened and the composed schema closed with
//!   `unevaluatedProperties: false`, which sees the properties of every `allOf` branch. (The server still refuses
//!   unknown fields of every body, 422 naming them.)
//! - **What the server checks that the types do not say:** `algorithm.name` is `auto` or a name of the engine's
//!   registry; the query parameter `limit` is 1–1000, `format` is `json` or `csv` and the cursor `after` is digits;
//!   an `Idempotency-Key` is 1–255 visible ASCII characters (`crate::idempotency`).

use serde_json::{Value, json};

/// The document: utoipa's, with the rewrites of this module applied.
pub fn tighten(mut doc: Value) -> Value {
    close_compositions(&mut doc);
    name_algorithms(&mut doc);
    bound_parameters(&mut doc);
    optional_body(&mut doc, "/paths/~1v1~1studies~1{study_id}~1suggestions/post/requestBody");
    doc
}

/// A body every field of which has a default may be left out ([`crate::extract::ApiJsonOrDefault`]).
fn optional_body(doc: &mut Value, pointer: &str) {
    if let Some(body) = doc.pointer_mut(pointer).and_then(Value::as_object_mut) {
        body.insert("required".into(), Value::Bool(false));
        body.insert("description".into(), Value::String("Optional: without a body, one suggestion.".into()));
    }
}

/// `AlgorithmSpec.name`: `auto` or one of the registry's names.
fn name_algorithms(doc: &mut Value) {
    let names: Vec<Value> = std::iter::once("auto")
        .chain(engine::policy::REGISTRY.iter().map(|a| a.name))
        .map(|n| Value::String(n.to_string()))
        .collect();
    if let Some(name) =
        doc.pointer_mut("/components/schemas/AlgorithmSpec/properties/name").and_then(Value::as_object_mut)
    {
        name.insert("enum".into(), Value::Array(names));
    }
}

/// The limits of the parameters every operation shares, by name.
fn bound_parameters(doc: &mut Value) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else { return };
    for op in paths.values_mut().filter_map(Value::as_object_mut).flat_map(|item| item.values_mut()) {
        let Some(params) = op.get_mut("parameters").and_then(Value::as_array_mut) else { continue };
        for p in params.iter_mut().filter_map(Value::as_object_mut) {
            let (name, place) = (p["name"].as_str().unwrap_or_default(), p["in"].as_str().unwrap_or_default());
            let bounds = match (place, name) {
                ("query", "limit") => json!({"minimum": 1, "maximum": 1000}),
                ("query", "format") => json!({"enum": ["json", "csv"]}),
                // A cursor is a row sequence number: digits only, within i64 (`api::page_of`), empty for the start.
                ("query", "after") => json!({"pattern": "^[0-9]{0,18}$"}),
                ("header", "Idempotency-Key") => json!({"minLength": 1, "maxLength": 255, "pattern": "^[\\t -~]+$"}),
                _ => continue,
            };
            if let Some(Value::Object(schema)) = p.get_mut("schema") {
                // Option<T> fields come out as `type: [T, null]`; a query value is never null.
                if let Some(Value::Array(types)) = schema.get("type").cloned() {
                    let one: Vec<Value> = types.into_iter().filter(|t| t != "null").collect();
                    if one.len() == 1 {
                        schema.insert("type".into(), one[0].clone());
                    }
                }
                schema.extend(bounds.as_object().cloned().unwrap_or_default());
            }
        }
    }
}

/// Moves `additionalProperties: false` from schemas used as `allOf` branches to the composing schemas, as
/// `unevaluatedProperties: false`.
fn close_compositions(doc: &mut Value) {
    let Some(schemas) = doc.pointer_mut("/components/schemas").and_then(Value::as_object_mut) else { return };
    let closed: Vec<String> = schemas
        .iter()
        .filter(|(_, s)| s.get("additionalProperties") == Some(&Value::Bool(false)))
        .map(|(name, _)| format!("#/components/schemas/{name}"))
        .collect();
    let mut opened = Vec::new();
    for schema in schemas.values_mut() {
        let Some(branches) = schema.get("allOf").and_then(Value::as_array) else { continue };
        let refs: Vec<String> =
            branches.iter().filter_map(|b| b.get("$ref").and_then(Value::as_str)).map(str::to_string).collect();
        let composes_closed: Vec<String> = refs.into_iter().filter(|r| closed.contains(r)).collect();
        if composes_closed.is_empty() {
            continue;
        }
        if let Some(obj) = schema.as_object_mut() {
            obj.insert("unevaluatedProperties".into(), Value::Bool(false));
        }
        opened.extend(composes_closed);
    }
    for reference in opened {
        let name = reference.trim_start_matches("#/components/schemas/");
        if let Some(Value::Object(s)) = schemas.get_mut(name) {
            s.remove("additionalProperties");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_branch_of_all_of_is_opened_and_the_composition_closed() {
        let doc = json!({"components": {"schemas": {
            "Spec": {"type": "object", "properties": {"a": {}}, "additionalProperties": false},
            "Alone": {"type": "object", "additionalProperties": false},
            "Body": {"allOf": [{"$ref": "#/components/schemas/Spec"}, {"type": "object", "properties": {"b": {}}}]}
        }}});
        let out = tighten(doc);
        let s = &out["components"]["schemas"];
        assert!(s["Spec"].get("additionalProperties").is_none());
        assert_eq!(s["Alone"]["additionalProperties"], false, "a schema not composed stays closed");
        assert_eq!(s["Body"]["unevaluatedProperties"], false);
    }
}
