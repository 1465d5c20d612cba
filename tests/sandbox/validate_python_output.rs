//! The validator against output written by a real Python interpreter on
//! the host (the sandbox is not needed to check how `json` formats values).

use std::process::Command;

use compute_bot::validate::{Validation, Validator};
use serde_json::json;

/// Runs `code` with the host's python3 and returns its stdout. Panics (the
/// test fails) when python3 is missing: these tests exist to pin down what
/// real Python prints.
fn python(code: &str) -> String {
    let out = Command::new("python3")
        .arg("-c")
        .arg(code)
        .output()
        .expect("python3 must be installed on the host to run these tests");
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn validator() -> Validator {
    Validator::new(&json!({
        "type": "object",
        "required": ["mean", "values"],
        "properties": {
            "mean": {"type": ["number", "null"]},
            "values": {"type": "array", "items": {"type": "number"}}
        },
        "additionalProperties": false
    }))
    .unwrap()
}

fn check(code: &str) -> Validation {
    validator().validate_output(&python(code), None)
}

#[test]
fn json_dumps_on_the_last_line_is_accepted() {
    let v = check(
        "import json, statistics\nxs=[1.5, 2.5, 3.5]\nprint('working...')\nprint(json.dumps({'mean': statistics.mean(xs), 'values': xs}))",
    );
    assert!(v.is_valid(), "{:?}", v.errors);
    assert_eq!(v.value.unwrap()["mean"], json!(2.5));
}

#[test]
fn python_nan_and_infinity_are_named() {
    let v = check(
        "import json\nprint(json.dumps({'mean': float('nan'), 'values': [1, float('inf'), -float('inf')]}))",
    );
    assert!(!v.is_valid());
    let e = v.errors.join("\n");
    assert!(e.contains("/mean: NaN"), "{e}");
    assert!(e.contains("/values/1: Infinity"), "{e}");
    assert!(e.contains("/values/2: -Infinity"), "{e}");
}

#[test]
fn a_printed_dict_is_not_json_and_says_so() {
    let v = check("print({'mean': 1.0, 'values': [True, None]})");
    assert!(v.value.is_none());
    assert!(v.errors[0].contains("Python dict"), "{:?}", v.errors);
}

#[test]
fn indented_json_is_explained() {
    let v = check("import json\nprint(json.dumps({'mean': 1, 'values': [1]}, indent=2))");
    assert!(v.value.is_none());
    assert!(v.errors[0].contains("pretty-printed"), "{:?}", v.errors);
}

#[test]
fn schema_errors_from_real_output_have_paths() {
    let v = check(
        "import json\nprint(json.dumps({'mean': '2.5', 'values': [1, 'two', 3], 'extra': 1}))",
    );
    assert!(!v.is_valid());
    assert!(
        v.errors
            .iter()
            .any(|e| e.starts_with("/mean: \"2.5\" is not of type")),
        "{:?}",
        v.errors
    );
    assert!(
        v.errors
            .contains(&r#"/values/1: "two" is not of type "number""#.to_string()),
        "{:?}",
        v.errors
    );
    assert!(
        v.errors
            .iter()
            .any(|e| e.starts_with("/: ") && e.contains("extra")),
        "{:?}",
        v.errors
    );
}

#[test]
fn unicode_and_escapes_survive() {
    let v = validator().validate_output(
        &python("import json\nprint(json.dumps({'mean': None, 'values': []}))\nprint()"),
        None,
    );
    assert!(v.is_valid(), "{:?}", v.errors);
    let v = Validator::new(&json!({"type": "object"}))
        .unwrap()
        .validate_output(
            &python("import json\nprint(json.dumps({'name': 'Zoë \"NaN\" ∑'}))"),
            None,
        );
    assert!(v.is_valid(), "{:?}", v.errors);
    assert_eq!(v.value.unwrap()["name"], json!("Zoë \"NaN\" ∑"));
}
