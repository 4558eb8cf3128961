//! CSV import of observations (`POST …/observations/batch` with `Content-Type: text/csv`): the columns of the CSV
//! export (`GET …/observations?format=csv`) turned into the JSON batch's items, which then take the JSON batch's
//! validation path; its errors are renamed from `observations[i].assignments.x` to the CSV's `rows[i].x`.
//!
//! - Columns: `id, seq, suggestion_id, created_at, <one per parameter>, value, value_stddev, cost, failed,
//!   control_set, noise_level, metadata`, then, in studies with several objectives or outcome constraints,
//!   `values.<name>` and `values_stddev.<name>` for each of them; in any order. Every parameter column is required,
//!   and `value` (one objective) or each `values.<name>` column; the others may be left out. `id`, `seq`, `suggestion_id` and `created_at` are ignored: the import stores new observations
//!   in row order, not tied to suggestions (an export's suggestion ids belong to its own study). A header that is
//!   exactly the export's is read by position, so a parameter named like another column (`value`) still imports.
//!   The export has no `query` column, so observations of indirect studies are imported as JSON.
//! - Cells: empty is absent; numbers are read as written (`400` stays an integer), NaN, infinities and overflow are
//!   refused; `failed` is `true` or `false`; `metadata` is a JSON object; a categorical value is its choice as is.
//! - Errors (422) name `columns.<name>` for the header and `rows[i].<column>` for a cell, `i` counting data rows
//!   from 0; a row with the wrong number of cells is `rows[i]`.

use csv::{ByteRecord, ErrorKind, ReaderBuilder};
use engine::FieldError;
use engine::space::{ParameterSpec, ParameterType};
use serde_json::{Map, Value};

use super::types::CreateObservation;
use crate::error::ApiError;

/// The export's columns before the parameters' (ignored on import).
const LEADING: [&str; 4] = ["id", "seq", "suggestion_id", "created_at"];
/// The export's columns after the parameters'.
const TRAILING: [&str; 7] = ["value", "value_stddev", "cost", "failed", "control_set", "noise_level", "metadata"];
/// Most rows a batch takes (as the JSON batch).
const MAX_ROWS: usize = super::types::MAX_BATCH;
/// Most cell errors reported at once.
const MAX_ERRORS: usize = 100;

/// What a column holds.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Column {
    Ignored,
    Parameter(usize),
    Value,
    ValueStddev,
    Cost,
    Failed,
    ControlSet,
    NoiseLevel,
    Metadata,
    /// `values.<name>` of metric k.
    Metric(usize),
    /// `values_stddev.<name>` of metric k.
    MetricStddev(usize),
}

/// The metric columns of `engine`'s study: its objectives and outcome constraints when it has several objectives
/// or constraints (each a `values.<name>` and a `values_stddev.<name>` column), else none.
pub fn metric_columns(engine: &engine::Study) -> Vec<String> {
    let outcomes = &engine.problem().outcomes;
    if outcomes.is_single() { Vec::new() } else { outcomes.names().map(str::to_string).collect() }
}

impl Column {
    fn named(name: &str) -> Option<Self> {
        Some(match name {
            "id" | "seq" | "suggestion_id" | "created_at" => Self::Ignored,
            "value" => Self::Value,
            "value_stddev" => Self::ValueStddev,
            "cost" => Self::Cost,
            "failed" => Self::Failed,
            "control_set" => Self::ControlSet,
            "noise_level" => Self::NoiseLevel,
            "metadata" => Self::Metadata,
            _ => return None,
        })
    }
}

/// The observations of a CSV body for a study with `parameters`: 1–1000 rows, or a 422 naming the columns and
/// cells at fault (400 for a body that is not CSV at all).
pub fn parse(
    body: &[u8],
    parameters: &[ParameterSpec],
    metrics: &[String],
) -> Result<Vec<CreateObservation>, ApiError> {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let mut reader = ReaderBuilder::new().has_headers(true).from_reader(body);
    let header = reader.byte_headers().map_err(|e| ApiError::bad_request(format!("the body is not CSV: {e}")))?;
    let names = header_names(header)?;
    let columns = columns(&names, parameters, metrics)?;
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    for (i, record) in reader.byte_records().enumerate() {
        if i == MAX_ROWS {
            return Err(too_many_or_few());
        }
        let record = match record {
            Ok(r) => r,
            Err(e) => match e.kind() {
                ErrorKind::UnequalLengths { expected_len, len, .. } => {
                    errors.push(FieldError::new(
                        format!("rows[{i}]"),
                        format!("has {len} cells; the header has {expected_len} columns"),
                    ));
                    continue;
                }
                _ => return Err(ApiError::bad_request(format!("the body is not CSV: {e}"))),
            },
        };
        rows.push(row(i, &record, &names, &columns, (parameters, metrics), &mut errors));
        if errors.len() >= MAX_ERRORS {
            break;
        }
    }
    if !errors.is_empty() {
        errors.truncate(MAX_ERRORS);
        return Err(ApiError::validation(errors));
    }
    if rows.is_empty() {
        return Err(too_many_or_few());
    }
    Ok(rows)
}

fn too_many_or_few() -> ApiError {
    ApiError::field("rows", format!("give 1–{MAX_ROWS} rows per batch, after a header line naming the columns"))
}

/// The header's column names (UTF-8, without NUL).
fn header_names(header: &ByteRecord) -> Result<Vec<String>, ApiError> {
    let mut errors = Vec::new();
    let names: Vec<String> = header
        .iter()
        .enumerate()
        .map(|(j, raw)| match std::str::from_utf8(raw) {
            Ok(s) if s.contains('\0') => {
                errors.push(FieldError::new(format!("columns[{j}]"), "must not contain the NUL character (U+0000)"));
                String::new()
            }
            Ok(s) => s.to_string(),
            Err(_) => {
                errors.push(FieldError::new(format!("columns[{j}]"), "is not valid UTF-8"));
                String::new()
            }
        })
        .collect();
    if errors.is_empty() { Ok(names) } else { Err(ApiError::validation(errors)) }
}

/// What each column holds: by position when the header is exactly the export's, else by name.
fn columns(names: &[String], parameters: &[ParameterSpec], metrics: &[String]) -> Result<Vec<Column>, ApiError> {
    let metric_names: Vec<String> = ["values", "values_stddev"]
        .iter()
        .flat_map(|prefix| metrics.iter().map(move |m| format!("{prefix}.{m}")))
        .collect();
    let export: Vec<&str> = LEADING
        .iter()
        .copied()
        .chain(parameters.iter().map(|p| p.name.as_str()))
        .chain(TRAILING.iter().copied())
        .chain(metric_names.iter().map(String::as_str))
        .collect();
    let metric_column = |name: &str| {
        let k = |n: &str| metrics.iter().position(|m| m == n);
        match name.split_once('.') {
            Some(("values", m)) => k(m).map(Column::Metric),
            Some(("values_stddev", m)) => k(m).map(Column::MetricStddev),
            _ => None,
        }
    };
    if names.iter().map(String::as_str).eq(export.iter().copied()) {
        let params = (0..parameters.len()).map(Column::Parameter);
        return Ok(LEADING
            .iter()
            .map(|_| Column::Ignored)
            .chain(params)
            .chain(TRAILING.iter().filter_map(|n| Column::named(n)))
            .chain(metric_names.iter().filter_map(|n| metric_column(n)))
            .collect());
    }
    let mut errors = Vec::new();
    let mut out = Vec::with_capacity(names.len());
    for (j, name) in names.iter().enumerate() {
        let column = parameters
            .iter()
            .position(|p| &p.name == name)
            .map(Column::Parameter)
            .or_else(|| Column::named(name))
            .or_else(|| metric_column(name));
        let Some(column) = column else {
            let field = if name.is_empty() { format!("columns[{j}]") } else { format!("columns.{name}") };
            let known = export.join(", ");
            errors.push(FieldError::new(
                field,
                format!("unknown column; the columns are those of the CSV export: {known}"),
            ));
            continue;
        };
        if names[..j].contains(name) {
            errors.push(FieldError::new(
                format!("columns.{name}"),
                "appears twice (a parameter named like another column needs the export's header, in its order)",
            ));
            continue;
        }
        out.push(column);
    }
    for (i, p) in parameters.iter().enumerate() {
        if !out.contains(&Column::Parameter(i)) {
            errors.push(FieldError::new(
                format!("columns.{}", p.name),
                "missing: every parameter of the study needs a column (leave a cell empty for no value)",
            ));
        }
    }
    // The first objective may come in `value` or in its `values.<name>` column (rows are checked as JSON items).
    let objective_in_values = out.contains(&Column::Metric(0));
    if !out.contains(&Column::Value) && !names.iter().any(|n| n == "value") && !objective_in_values {
        errors.push(FieldError::new("columns.value", "missing: the objective's value needs a column"));
    }
    for (k, m) in metrics.iter().enumerate() {
        if k > 0 && !out.contains(&Column::Metric(k)) {
            errors.push(FieldError::new(
                format!("columns.values.{m}"),
                "missing: every objective and outcome constraint needs a column (leave a cell empty for a failed run)",
            ));
        }
    }
    if errors.is_empty() { Ok(out) } else { Err(ApiError::validation(errors)) }
}

/// One data row as a batch item; the cells at fault are added to `errors`.
fn row(
    i: usize,
    record: &ByteRecord,
    names: &[String],
    columns: &[Column],
    (parameters, metrics): (&[ParameterSpec], &[String]),
    errors: &mut Vec<FieldError>,
) -> CreateObservation {
    let mut obs = CreateObservation::default();
    let mut assignments = Map::new();
    for ((raw, column), name) in record.iter().zip(columns).zip(names) {
        if *column == Column::Ignored {
            continue;
        }
        let mut fail = |message: String| errors.push(FieldError::new(format!("rows[{i}].{name}"), message));
        let cell = match std::str::from_utf8(raw) {
            Ok(s) if s.contains('\0') => {
                fail("must not contain the NUL character (U+0000)".into());
                continue;
            }
            Ok(s) => s,
            Err(_) => {
                fail("is not valid UTF-8".into());
                continue;
            }
        };
        if cell.trim().is_empty() {
            continue;
        }
        match *column {
            Column::Ignored => {}
            Column::Parameter(p) => {
                let value = match parameters[p].kind {
                    ParameterType::Categorical => Ok(Value::String(cell.to_string())),
                    ParameterType::Float | ParameterType::Int => number(cell),
                };
                match value {
                    Ok(v) => {
                        assignments.insert(parameters[p].name.clone(), v);
                    }
                    Err(m) => fail(m),
                }
            }
            Column::Value | Column::ValueStddev | Column::Cost => match number(cell) {
                Ok(v) => {
                    let x = v.as_f64();
                    match column {
                        Column::Value => obs.value = x,
                        Column::ValueStddev => obs.value_stddev = x,
                        _ => obs.cost = x,
                    }
                }
                Err(m) => fail(m),
            },
            Column::Failed => match cell.trim().to_ascii_lowercase().as_str() {
                "true" => obs.failed = Some(true),
                "false" => obs.failed = Some(false),
                _ => fail(format!("must be true or false, not '{cell}'")),
            },
            Column::Metric(k) | Column::MetricStddev(k) => match number(cell).map(|v| v.as_f64()) {
                Ok(Some(x)) => {
                    let map =
                        if matches!(column, Column::Metric(_)) { &mut obs.values } else { &mut obs.values_stddev };
                    map.get_or_insert_with(Default::default).insert(metrics[k].clone(), x);
                }
                Ok(None) => fail(format!("not a number: '{cell}'")),
                Err(m) => fail(m),
            },
            Column::ControlSet => obs.control_set = Some(cell.to_string()),
            Column::NoiseLevel => obs.noise_level = Some(cell.to_string()),
            Column::Metadata => match serde_json::from_str::<Map<String, Value>>(cell) {
                Ok(_) if crate::extract::nul_field(cell.as_bytes()).is_some() => {
                    fail("must not contain the NUL character (U+0000)".into());
                }
                Ok(m) => obs.metadata = Some(m),
                Err(e) => fail(format!("must be a JSON object ({e})")),
            },
        }
    }
    obs.assignments = Some(assignments);
    obs
}

/// A number as written (an integer stays one), or why the cell is not a finite number.
fn number(cell: &str) -> Result<Value, String> {
    let s = cell.trim();
    if let Ok(n) = serde_json::from_str::<serde_json::Number>(s) {
        return Ok(Value::Number(n));
    }
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(Value::from(x)),
        Ok(_) => Err(format!("must be a finite number, not '{s}' (NaN, infinities and overflow are not allowed)")),
        Err(_) => Err(format!("not a number: '{s}'")),
    }
}

/// The JSON batch's field name of an item, as the CSV's: `observations[i].assignments.x` → `rows[i].x`,
/// `observations[i].value` → `rows[i].value`, `observations` → `rows`.
pub fn csv_error_field(field: &str) -> String {
    let Some(rest) = field.strip_prefix("observations") else { return field.to_string() };
    let Some((index, tail)) = rest.strip_prefix('[').and_then(|r| r.split_once(']')) else {
        return format!("rows{rest}");
    };
    let tail = tail.strip_prefix('.').unwrap_or(tail);
    // `values.<name>` and `values_stddev.<name>` are columns of their own.
    if tail.starts_with("values.") || tail.starts_with("values_stddev.") {
        return format!("rows[{index}].{tail}");
    }
    let column = match tail.strip_prefix("assignments") {
        Some(name) => name.strip_prefix('.').unwrap_or(name),
        None => tail.split(['.', '[']).next().unwrap_or_default(),
    };
    if column.is_empty() { format!("rows[{index}]") } else { format!("rows[{index}].{column}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params() -> Vec<ParameterSpec> {
        serde_json::from_value(json!([
            {"name": "x", "type": "float", "low": 0, "high": 1},
            {"name": "n", "type": "int", "low": 1, "high": 9},
            {"name": "c", "type": "categorical", "choices": ["a", "1"]}
        ]))
        .unwrap()
    }

    fn fields(e: &ApiError) -> Vec<String> {
        e.problem().errors.iter().map(|f| format!("{}: {}", f.field, f.message)).collect()
    }

    #[test]
    fn an_export_header_with_every_column_reads_by_position() {
        let body = "\u{feff}id,seq,suggestion_id,created_at,x,n,c,value,value_stddev,cost,failed,control_set,noise_level,metadata\r\n\
                    1f0e,1,,2026-01-01T00:00:00Z,0.25,3,1,1.5,0.1,2,false,,,\"{\"\"k\"\": [1]}\"\r\n\
                    ,,,,0.5,,a,,,,true,,,\r\n";
        let rows = parse(body.as_bytes(), &params(), &[]).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].assignments, Some(serde_json::from_value(json!({"x": 0.25, "n": 3, "c": "1"})).unwrap()));
        assert!(rows[0].assignments.as_ref().unwrap()["n"].is_i64(), "an integer stays one");
        assert_eq!(
            (rows[0].value, rows[0].value_stddev, rows[0].cost, rows[0].failed),
            (Some(1.5), Some(0.1), Some(2.0), Some(false))
        );
        assert_eq!(rows[0].metadata, Some(serde_json::from_value(json!({"k": [1]})).unwrap()));
        assert_eq!(rows[0].suggestion_id, None, "suggestion ids are not imported");
        assert_eq!(rows[1].assignments, Some(serde_json::from_value(json!({"x": 0.5, "c": "a"})).unwrap()));
        assert_eq!((rows[1].value, rows[1].failed), (None, Some(true)));
    }

    #[test]
    fn columns_in_any_order_and_a_parameter_named_like_a_column() {
        let rows = parse(b"value,c,n,x\n2,a,4,1e-1\n", &params(), &[]).unwrap();
        assert_eq!(rows[0].value, Some(2.0));
        assert_eq!(rows[0].assignments.as_ref().unwrap()["x"], json!(0.1));
        let named_value: Vec<ParameterSpec> =
            serde_json::from_value(json!([{"name": "value", "type": "float", "low": 0, "high": 10}])).unwrap();
        let export = "id,seq,suggestion_id,created_at,value,value,value_stddev,cost,failed,control_set,noise_level,metadata\n\
                      ,,,,3,7,,,false,,,\n";
        let rows = parse(export.as_bytes(), &named_value, &[]).unwrap();
        assert_eq!((rows[0].assignments.as_ref().unwrap()["value"].clone(), rows[0].value), (json!(3), Some(7.0)));
        let e = parse(b"value,value\n3,7\n", &named_value, &[]).unwrap_err();
        assert_eq!(fields(&e)[0].split(':').next(), Some("columns.value"));
    }

    #[test]
    fn header_errors_name_the_column() {
        let e = parse(b"x,c,value,colour\n0.5,a,1,red\n", &params(), &[]).unwrap_err();
        let f = fields(&e);
        assert_eq!(e.status(), axum::http::StatusCode::UNPROCESSABLE_ENTITY);
        assert!(f[0].starts_with("columns.colour: unknown column"), "{f:?}");
        assert!(f[1].starts_with("columns.n: missing"), "{f:?}");
        let e = parse(b"x,n,c\n0.5,1,a\n", &params(), &[]).unwrap_err();
        assert!(fields(&e)[0].starts_with("columns.value: missing"), "{:?}", fields(&e));
        let e = parse(b"x,n,c,value,x\n", &params(), &[]).unwrap_err();
        assert!(fields(&e)[0].starts_with("columns.x: appears twice"), "{:?}", fields(&e));
        let e = parse(b"x,n,c,value,\0\n", &params(), &[]).unwrap_err();
        assert!(fields(&e)[0].starts_with("columns[4]: must not contain the NUL"), "{:?}", fields(&e));
    }

    #[test]
    fn cell_errors_name_the_row_and_column() {
        let body = "x,n,c,value,failed,metadata\n\
                    0.5,1,a,1,,\n\
                    abc,2,a,NaN,maybe,[1]\n\
                    0.5,1,a,1e999,,\n\
                    0.5,1,a\n\
                    0.5,1,a\0,inf,,\n";
        let e = parse(body.as_bytes(), &params(), &[]).unwrap_err();
        let f = fields(&e);
        let names: Vec<&str> = f.iter().map(|m| m.split(": ").next().unwrap()).collect();
        assert_eq!(
            names,
            [
                "rows[1].x",
                "rows[1].value",
                "rows[1].failed",
                "rows[1].metadata",
                "rows[2].value",
                "rows[3]",
                "rows[4].c",
                "rows[4].value"
            ],
            "{f:?}"
        );
        assert_eq!(f[0], "rows[1].x: not a number: 'abc'");
        assert!(f[1].contains("finite"), "{f:?}");
        let e =
            parse(b"x,n,c,value,metadata\n0.5,1,a,1,\"{\"\"k\"\": \"\"\\u0000\"\"}\"\n", &params(), &[]).unwrap_err();
        assert!(fields(&e)[0].starts_with("rows[0].metadata: must not contain the NUL"), "{:?}", fields(&e));
        let e = parse(b"x,n,c,value\n0.5,1,a,\xff\n", &params(), &[]).unwrap_err();
        assert_eq!(fields(&e), ["rows[0].value: is not valid UTF-8"]);
    }

    #[test]
    fn a_batch_has_1_to_1000_rows() {
        let e = parse(b"x,n,c,value\n", &params(), &[]).unwrap_err();
        assert!(fields(&e)[0].starts_with("rows: give 1–1000 rows"), "{:?}", fields(&e));
        let mut body = String::from("x,n,c,value\n");
        body.push_str(&"0.5,1,a,1\n".repeat(1000));
        assert_eq!(parse(body.as_bytes(), &params(), &[]).unwrap().len(), 1000);
        body.push_str("0.5,1,a,1\n");
        assert!(fields(&parse(body.as_bytes(), &params(), &[]).unwrap_err())[0].starts_with("rows: give"));
    }

    #[test]
    fn json_batch_fields_become_row_and_column() {
        assert_eq!(csv_error_field("observations[3].assignments.x1"), "rows[3].x1");
        assert_eq!(csv_error_field("observations[3].assignments.a.b"), "rows[3].a.b");
        assert_eq!(csv_error_field("observations[0].value"), "rows[0].value");
        assert_eq!(csv_error_field("observations[2].metadata.k"), "rows[2].metadata");
        assert_eq!(csv_error_field("observations[2].assignments"), "rows[2]");
        assert_eq!(csv_error_field("observations"), "rows");
        assert_eq!(csv_error_field("body"), "body");
    }

    #[test]
    fn reads_the_metric_columns() {
        let metrics = vec!["yield".to_string(), "purity".to_string()];
        let body = "x,n,c,values.yield,values.purity,values_stddev.purity\n0.5,1,a,0.8,0.99,0.01\n0.6,2,a,,,\n";
        let rows = parse(body.as_bytes(), &params(), &metrics).unwrap();
        assert_eq!(rows[0].values.as_ref().unwrap()["yield"], 0.8);
        assert_eq!(rows[0].values.as_ref().unwrap()["purity"], 0.99);
        assert_eq!(rows[0].values_stddev.as_ref().unwrap()["purity"], 0.01);
        assert!(rows[1].values.is_none());
        // A constraint's column is required; a metric cell must be a number.
        let e = parse(b"x,n,c,value\n0.5,1,a,1\n", &params(), &metrics).unwrap_err();
        assert_eq!(
            fields(&e),
            [
                "columns.values.purity: missing: every objective and outcome constraint needs a column (leave a cell empty for a failed run)"
            ]
        );
        let e = parse(b"x,n,c,value,values.purity\n0.5,1,a,1,high\n", &params(), &metrics).unwrap_err();
        assert!(fields(&e)[0].starts_with("rows[0].values.purity: not a number"), "{:?}", fields(&e));
        assert_eq!(csv_error_field("observations[3].values.purity"), "rows[3].values.purity");
    }
}
