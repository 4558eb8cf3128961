//! The OpenAPI document as served and committed: utoipa's output, then made true for strict JSON Schema (Draft
//! 2020-12) validators where utoipa cannot say it.
//!
//! - **Composition with closed schemas.** A body such as `CreateStudy` is `allOf[StudySpec, {name, budget, …}]`
//!   (serde flattens the spec into it), and `StudySpec` alone denies unknown fields (`additionalProperties: false`),
//!   which no body with a `name` can satisfy. The closed subschema is opened and the composed schema closed with
//!   `unevaluatedProperties: false`, which sees the properties of every `allOf` branch. (The server still refuses
//!   unknown fields of every body, 422 naming them.)

use serde_json::{Map, Value};

/// The document: utoipa's, with the rewrites of this module applied.
pub fn tighten(mut doc: Value) -> Value {
    close_compositions(&mut doc);
    doc
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
            open(s);
        }
    }
}

fn open(schema: &mut Map<String, Value>) {
    schema.remove("additionalProperties");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
