//! Checks of the `.ipynb` files the bot writes: against nbformat's own JSON
//! schema of version 4.5 (vendored in `tests/fixtures/nbformat/`), and the
//! code of their cells.

use serde_json::Value;

/// nbformat 4.5's JSON schema, as PyPI's `nbformat` 5.11.1 ships it.
const SCHEMA: &str = include_str!("../fixtures/nbformat/nbformat.v4.5.schema.json");

/// The schema's complaints about the notebook `bytes`, one line each; empty
/// when it is valid. Panics when the bytes are not JSON.
pub fn schema_errors(bytes: &[u8]) -> Vec<String> {
    let nb: Value = serde_json::from_slice(bytes).expect("the notebook is JSON");
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    let v = jsonschema::validator_for(&schema).expect("nbformat's schema compiles");
    v.iter_errors(&nb)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// The notebook `bytes` as JSON.
pub fn read(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("the notebook is JSON")
}

/// A multiline string of nbformat (a string or a list of strings) as one text.
pub fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().map(|p| p.as_str().unwrap()).collect(),
        other => panic!("not a multiline string: {other}"),
    }
}
