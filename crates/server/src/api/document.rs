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
//! - **Which fields go with which parameter type** (`ParameterSpec`: `if`/`then`/`else` on `type`).
//! - **Examples per status.** Without one, a viewer composes a problem example from the `Problem` schema's property
//!   examples, a 422, and shows it for every status; each problem response gets a body the server really sends for
//!   that status and operation, built by the constructors of [`ApiError`].

use serde_json::{Value, json};

use crate::error::ApiError;

/// The document: utoipa's, with the rewrites of this module applied.
pub fn tighten(mut doc: Value) -> Value {
    close_compositions(&mut doc);
    name_algorithms(&mut doc);
    bound_parameters(&mut doc);
    optional_body(&mut doc, "/paths/~1v1~1studies~1{study_id}~1suggestions/post/requestBody");
    problem_examples(&mut doc);
    parameter_kinds(&mut doc);
    doc
}

/// `ParameterSpec`: a `categorical` has `choices` and no bounds or scale; a `float` or `int` has `low` and `high`
/// and no `choices` (as `engine::space` validates them; `null` is as good as absent).
fn parameter_kinds(doc: &mut Value) {
    let given = |name: &str, kind: Value| json!({"required": [name], "properties": {name: {"type": kind}}});
    if let Some(spec) = doc.pointer_mut("/components/schemas/ParameterSpec").and_then(Value::as_object_mut) {
        // A whole example, so that viewers do not compose one from the property examples (a float with choices).
        spec.insert("example".into(), json!({"name": "temperature", "type": "float", "low": 20, "high": 80}));
        spec.insert("if".into(), json!({"properties": {"type": {"const": "categorical"}}, "required": ["type"]}));
        spec.insert(
            "then".into(),
            json!({
                "required": ["choices"],
                "properties": {"choices": {"type": "array", "minItems": 1}},
                "not": {"anyOf": [given("low", json!("number")), given("high", json!("number")), given("scale", json!("string"))]}
            }),
        );
        spec.insert(
            "else".into(),
            json!({
                "required": ["low", "high"],
                "properties": {"low": {"type": "number"}, "high": {"type": "number"}},
                "not": given("choices", json!("array"))
            }),
        );
    }
}

/// Sets the example of every `application/problem+json` response to a body of its status ([`problem_example`]).
fn problem_examples(doc: &mut Value) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else { return };
    for (path, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else { continue };
        for (method, op) in item.iter_mut() {
            let has_body = op.get("requestBody").is_some();
            let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) else { continue };
            for (status, response) in responses.iter_mut() {
                let Some(media) =
                    response.pointer_mut("/content/application~1problem+json").and_then(Value::as_object_mut)
                else {
                    continue;
                };
                let examples = problem_example(method, path, status, has_body);
                let as_json = |e: &ApiError| serde_json::to_value(e.problem()).unwrap_or_default();
                match examples.as_slice() {
                    [] => {}
                    [(_, one)] => {
                        media.insert("example".into(), as_json(one));
                    }
                    many => {
                        let named = many
                            .iter()
                            .map(|(name, e)| ((*name).to_string(), json!({"summary": name, "value": as_json(e)})))
                            .collect();
                        media.insert("examples".into(), Value::Object(named));
                    }
                }
            }
        }
    }
}

/// A problem the operation `method path` answers with `status`, or several (named) when it has distinct ones.
fn problem_example(method: &str, path: &str, status: &str, has_body: bool) -> Vec<(&'static str, ApiError)> {
    const STUDY: &str = "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f";
    let one = |e: ApiError| vec![("example", e)];
    match (status, method, path) {
        ("400", _, _) if has_body => {
            one(ApiError::bad_request("the body is not valid JSON: EOF while parsing an object at line 1 column 1"))
        }
        ("400", _, _) => one(ApiError::bad_request(
            "Invalid URL: Cannot parse `study_id` with value `abc`: UUID parsing failed: invalid length: found 3; ids \
             are UUIDs",
        )),
        ("401", _, _) => one(ApiError::unauthorized("this server requires 'Authorization: Bearer <token>'")),
        ("404", _, _) => one(ApiError::not_found("study", STUDY)),
        ("409", "post", "/v1/studies") => one(ApiError::conflict(
            "idempotency-key-reused",
            "this Idempotency-Key was used with a different request body; use a new key for a new request",
        )),
        ("409", "post", "/v1/studies/{study_id}/suggestions") => one(ApiError::conflict(
            "budget-spent",
            "the study's budget is spent (see budget_remaining on the study); it makes no more suggestions",
        )),
        ("409", "post", "/v1/studies/{study_id}/predict") => {
            one(ApiError::conflict("no-model", "there is no model yet: tell at least one successful observation first"))
        }
        ("409", "delete", _) => {
            one(ApiError::conflict("suggestion-completed", "the suggestion already has an observation"))
        }
        ("409", _, p) if p.ends_with("/pairs") => one(crate::service::archived("pairs")),
        ("409", _, _) => one(crate::service::archived("observations")),
        ("413", _, _) => one(ApiError::too_large(4 * 1024 * 1024)),
        ("415", _, p) if p.ends_with("/observations/batch") => {
            one(ApiError::unsupported_media_type_with(crate::extract::JSON_OR_CSV))
        }
        ("415", _, _) => one(ApiError::unsupported_media_type()),
        ("422", _, "/v1/studies") => one(ApiError::field("parameters[1].low", "must be positive for scale 'log'")),
        ("422", _, p) if p.ends_with("/suggestions") => one(ApiError::field("count", "must be between 1 and 100")),
        ("422", _, p) if p.ends_with("/observations/batch") => vec![
            ("json", ApiError::field("observations[3].assignments.temperature", "100 is outside [20, 80]")),
            ("csv", ApiError::field("rows[3].temperature", "not a number: 'hot'")),
        ],
        ("422", _, p) if p.ends_with("/pairs") => one(ApiError::field("pairs[0].target.x1", "12 is outside [-5, 10]")),
        ("422", _, p) if p.ends_with("/predict") => {
            one(ApiError::field("points[0].temperature", "100 is outside [20, 80]"))
        }
        ("422", _, _) => one(ApiError::field("assignments.temperature", "100 is outside [20, 80]")),
        ("503", _, _) => one(ApiError::saturated("every compute slot is busy; retry after the indicated delay", 1)),
        _ => Vec::new(),
    }
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
