//! Stage: validate. The code's result against the output JSON Schema.
//!
//! The result is `/out/result.json` when the code wrote one, else the last
//! non-empty line of stdout. Every problem is reported in words the model
//! (and a human) can act on: parse failures with a hint, non-finite numbers
//! by name, and each schema error with its instance path.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::model::excerpt;

/// Most schema errors listed for one result.
const MAX_ERRORS: usize = 50;
/// Placeholder substituted for non-finite numbers while locating them.
const NONFINITE_MARK: &str = "\u{0}compute-bot-nonfinite:";

/// Why a schema could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidateError {
    /// The schema refers to a document outside itself.
    #[error(
        "the output schema refers to `{uri}`, which is never fetched (remote and file $ref are disabled); copy that schema under `$defs` and refer to it as `#/$defs/...`"
    )]
    RemoteRef {
        /// The reference that would have been fetched.
        uri: String,
    },
    /// The schema is not a valid JSON Schema.
    #[error("the output schema is invalid: {0}; fix the schema file")]
    Invalid(String),
}

/// The outcome of validating one result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Validation {
    /// The parsed result, when it parsed (even if it breaks the schema).
    pub value: Option<Value>,
    /// Every problem found; empty when the result is valid.
    pub errors: Vec<String>,
}

impl Validation {
    /// True when the result parsed and matches the schema.
    pub fn is_valid(&self) -> bool {
        self.value.is_some() && self.errors.is_empty()
    }

    /// The errors as one text for a repair note (`None` when valid).
    pub(crate) fn problem(&self) -> Option<String> {
        if self.is_valid() {
            return None;
        }
        if self.value.is_none() {
            return Some(format!(
                "The output could not be read: {}",
                self.errors.join("; ")
            ));
        }
        let lines: Vec<String> = self.errors.iter().map(|e| format!("- {e}")).collect();
        Some(format!(
            "The result does not match the output schema:\n{}",
            lines.join("\n")
        ))
    }
}

/// A compiled output schema. Build once, validate many results.
pub struct Validator {
    inner: jsonschema::Validator,
}

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Validator").finish_non_exhaustive()
    }
}

/// A retriever that fetches nothing and remembers what was asked for.
struct Refuse(Arc<Mutex<Vec<String>>>);

impl jsonschema::Retrieve for Refuse {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        if let Ok(mut asked) = self.0.lock() {
            asked.push(uri.as_str().to_string());
        }
        Err(format!("`{uri}` is not fetched: remote $ref is disabled").into())
    }
}

impl Validator {
    /// Compiles `schema`. No `$ref` outside the schema is ever fetched: such
    /// a reference fails here with [`ValidateError::RemoteRef`].
    pub fn new(schema: &Value) -> Result<Validator, ValidateError> {
        if !schema.is_object() && !schema.is_boolean() {
            return Err(ValidateError::Invalid(format!(
                "a schema must be a JSON object (or true/false), not {}",
                excerpt(&schema.to_string(), 80)
            )));
        }
        let asked = Arc::new(Mutex::new(Vec::new()));
        let built = jsonschema::options()
            .with_retriever(Refuse(asked.clone()))
            .build(schema);
        match built {
            Ok(inner) => Ok(Validator { inner }),
            Err(e) => {
                let asked = asked.lock().map(|a| a.first().cloned()).unwrap_or(None);
                let text = e.to_string();
                if let Some(uri) = asked.or_else(|| remote_ref_in(&text)) {
                    Err(ValidateError::RemoteRef { uri })
                } else {
                    Err(ValidateError::Invalid(excerpt(&text, 500)))
                }
            }
        }
    }

    /// Validates a run's result: `/out/result.json` when given, else the
    /// last non-empty line of `stdout`.
    pub fn validate_output(&self, stdout: &str, result_file: Option<&[u8]>) -> Validation {
        let (source, text) = match result_file {
            Some(bytes) => match std::str::from_utf8(bytes) {
                Ok(t) => (
                    "/out/result.json",
                    t.trim_start_matches('\u{feff}').trim().to_string(),
                ),
                Err(e) => {
                    return failed(format!(
                        "/out/result.json is not UTF-8 text ({e}); write it with json.dump(result, f) in text mode"
                    ));
                }
            },
            None => match stdout.lines().rev().find(|l| !l.trim().is_empty()) {
                Some(line) => ("the last line of stdout", line.trim().to_string()),
                None => {
                    return failed(
                        "the code printed nothing to stdout and wrote no /out/result.json; \
                         print exactly one JSON object as the last line of stdout \
                         (print(json.dumps(result)))"
                            .to_string(),
                    );
                }
            },
        };
        if text.is_empty() {
            return failed(format!(
                "{source} is empty; write exactly one JSON object to it"
            ));
        }
        let value = match serde_json::from_str::<Value>(&text) {
            Ok(v) => v,
            Err(e) => {
                return failed(parse_problem(
                    source,
                    &text,
                    stdout,
                    result_file.is_none(),
                    &e,
                ));
            }
        };
        let mut errors = Vec::new();
        let mut count = 0usize;
        for err in self.inner.iter_errors(&value) {
            count += 1;
            if errors.len() < MAX_ERRORS {
                let path = err.instance_path().as_str();
                let path = if path.is_empty() { "/" } else { path };
                errors.push(format!("{path}: {}", excerpt(&err.to_string(), 300)));
            }
        }
        if count > MAX_ERRORS {
            errors.push(format!("… and {} more schema error(s)", count - MAX_ERRORS));
        }
        Validation {
            value: Some(value),
            errors,
        }
    }
}

fn failed(msg: String) -> Validation {
    Validation {
        value: None,
        errors: vec![msg],
    }
}

/// Explains why the result text is not JSON, naming NaN/Infinity when present.
fn parse_problem(
    source: &str,
    text: &str,
    stdout: &str,
    from_stdout: bool,
    err: &serde_json::Error,
) -> String {
    let nonfinite = nonfinite_paths(text);
    if !nonfinite.is_empty() {
        let list: Vec<String> = nonfinite
            .iter()
            .take(10)
            .map(|(path, tok)| format!("{path}: {tok}"))
            .collect();
        return format!(
            "{source} contains non-finite numbers, which are not JSON ({}); Python's json.dumps writes \
             float('nan') as NaN and float('inf') as Infinity. Replace them with null (or check the \
             computation), and use json.dumps(result, allow_nan=False) to catch them",
            list.join(", ")
        );
    }
    let shown = excerpt(text, 160);
    if from_stdout {
        let trimmed = text.trim();
        if matches!(trimmed, "}" | "]" | "}," | "],") || looks_pretty_printed(stdout) {
            return format!(
                "the last line of stdout is not JSON ({err}): it reads {shown:?}; the output looks like \
                 pretty-printed (multi-line) JSON — print exactly one JSON object on one line as the \
                 last line: print(json.dumps(result)) without indent"
            );
        }
        if trimmed.starts_with("{'")
            || trimmed.contains("': ")
            || trimmed.contains("True")
            || trimmed.contains("None")
        {
            return format!(
                "the last line of stdout is not JSON ({err}): it reads {shown:?}; that looks like a \
                 Python dict printed with print(result) — print exactly one JSON object as the last \
                 line with print(json.dumps(result))"
            );
        }
        return format!(
            "the last line of stdout is not JSON ({err}): it reads {shown:?}; print exactly one JSON \
             object as the last line (print(json.dumps(result))) and nothing after it"
        );
    }
    format!(
        "/out/result.json is not valid JSON ({err}): it starts {shown:?}; write exactly one JSON object \
         with json.dump(result, f)"
    )
}

fn looks_pretty_printed(stdout: &str) -> bool {
    let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.len() < 2 {
        return false;
    }
    let whole = lines
        .iter()
        .rposition(|l| l.starts_with('{') || l.starts_with('['))
        .map(|i| lines[i..].join("\n"));
    whole.is_some_and(|w| serde_json::from_str::<Value>(&w).is_ok())
}

/// Finds bare `NaN`, `Infinity` and `-Infinity` tokens (outside strings) and
/// returns the instance path of each, e.g. `("/rows/2/value", "NaN")`.
/// Empty when there are none or the text is not JSON even without them.
fn nonfinite_paths(text: &str) -> Vec<(String, &'static str)> {
    let rebuilt = replace_nonfinite(text);
    if rebuilt == text {
        return Vec::new();
    }
    let Ok(v) = serde_json::from_str::<Value>(&rebuilt) else {
        return Vec::new();
    };
    let mut paths = Vec::new();
    collect_marks(&v, String::new(), &mut paths);
    paths
}

/// Replaces bare non-finite tokens with marked strings, keeping everything else.
fn replace_nonfinite(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 32);
    let mut in_str = false;
    let mut escaped = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_str {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        }
        if c == '"' {
            in_str = true;
            out.push(c);
            rest = &rest[1..];
            continue;
        }
        if let Some(t) = ["-Infinity", "Infinity", "NaN"]
            .into_iter()
            .find(|t| rest.starts_with(t))
        {
            out.push('"');
            out.push_str(&NONFINITE_MARK.replace('\u{0}', "\\u0000"));
            out.push_str(t);
            out.push('"');
            rest = &rest[t.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

fn collect_marks(v: &Value, path: String, out: &mut Vec<(String, &'static str)>) {
    match v {
        Value::String(s) => {
            if let Some(t) = s.strip_prefix(NONFINITE_MARK) {
                let tok = match t {
                    "NaN" => "NaN",
                    "Infinity" => "Infinity",
                    _ => "-Infinity",
                };
                let p = if path.is_empty() {
                    "/".to_string()
                } else {
                    path
                };
                out.push((p, tok));
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                collect_marks(x, format!("{path}/{i}"), out);
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                let k = k.replace('~', "~0").replace('/', "~1");
                collect_marks(x, format!("{path}/{k}"), out);
            }
        }
        _ => {}
    }
}

/// Pulls a non-local reference out of an error text, when one is named.
fn remote_ref_in(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    if !(lower.contains("retriev") || lower.contains("resolve") || lower.contains("unresolvable")) {
        return None;
    }
    text.split(|c: char| c.is_whitespace() || c == '`' || c == '\'' || c == '"')
        .find(|w| w.starts_with("http://") || w.starts_with("https://") || w.starts_with("file:"))
        .map(|w| w.trim_end_matches([',', '.', ':', ')']).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "required": ["total", "rows"],
            "properties": {
                "total": {"type": "number"},
                "rows": {"type": "array", "items": {
                    "type": "object",
                    "required": ["value"],
                    "properties": {"value": {"type": "number"}}
                }}
            }
        })
    }

    #[test]
    fn valid_last_line_is_accepted_and_earlier_lines_ignored() {
        let v = Validator::new(&schema()).unwrap();
        let out = "progress 1\n{\"not\": \"this\"}\n{\"total\": 3, \"rows\": [{\"value\": 1}]}\n\n";
        let r = v.validate_output(out, None);
        assert!(r.is_valid(), "{:?}", r.errors);
        assert_eq!(r.value.unwrap()["total"], json!(3));
    }

    #[test]
    fn schema_errors_carry_instance_paths() {
        let v = Validator::new(&schema()).unwrap();
        let out = r#"{"total": "3", "rows": [{"value": 1}, {"value": 2}, {"value": "x"}, {}]}"#;
        let r = v.validate_output(out, None);
        assert!(!r.is_valid());
        assert!(r.value.is_some(), "a parsed but invalid value is kept");
        assert!(
            r.errors
                .contains(&r#"/rows/2/value: "x" is not of type "number""#.to_string()),
            "{:?}",
            r.errors
        );
        assert!(
            r.errors.iter().any(|e| e.starts_with("/total: ")),
            "{:?}",
            r.errors
        );
        assert!(
            r.errors
                .iter()
                .any(|e| e.starts_with("/rows/3: ") && e.contains("value")),
            "{:?}",
            r.errors
        );
        assert_eq!(r.errors.len(), 3);
        let p = r.problem().unwrap();
        assert!(
            p.starts_with("The result does not match the output schema:\n- /"),
            "{p}"
        );
        assert!(p.contains("\n- /rows/2/value: "), "{p}");
    }

    #[test]
    fn root_errors_use_slash() {
        let v = Validator::new(&schema()).unwrap();
        let r = v.validate_output("{\"rows\": []}", None);
        assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
        assert!(
            r.errors[0].starts_with("/: ") && r.errors[0].contains("total"),
            "{:?}",
            r.errors
        );
    }

    #[test]
    fn nan_and_infinity_are_named_with_their_paths() {
        let v = Validator::new(&schema()).unwrap();
        let out = r#"{"total": NaN, "rows": [{"value": 1}, {"value": -Infinity}], "note": "NaN in a string is fine"}"#;
        let r = v.validate_output(out, None);
        assert!(!r.is_valid());
        assert!(r.value.is_none());
        let e = &r.errors[0];
        assert!(e.contains("/total: NaN"), "{e}");
        assert!(e.contains("/rows/1/value: -Infinity"), "{e}");
        assert!(e.contains("allow_nan=False"), "{e}");
        assert!(!e.contains("/note"), "{e}");
    }

    #[test]
    fn non_json_last_line_is_explained() {
        let v = Validator::new(&schema()).unwrap();
        let r = v.validate_output("{\"total\": 1, \"rows\": []}\ndone!\n", None);
        assert!(r.value.is_none());
        assert!(
            r.errors[0].starts_with("the last line of stdout is not JSON"),
            "{:?}",
            r.errors
        );
        assert!(r.errors[0].contains("\"done!\""), "{:?}", r.errors);
        assert!(r.errors[0].contains("as the last line"), "{:?}", r.errors);

        let r = v.validate_output("{'total': 1, 'rows': []}", None);
        assert!(r.errors[0].contains("Python dict"), "{:?}", r.errors);

        let r = v.validate_output("{\n  \"total\": 1,\n  \"rows\": []\n}\n", None);
        assert!(r.errors[0].contains("pretty-printed"), "{:?}", r.errors);

        let r = v.validate_output("  \n", None);
        assert!(r.errors[0].contains("printed nothing"), "{:?}", r.errors);
        assert!(
            r.problem()
                .unwrap()
                .starts_with("The output could not be read: the code printed nothing")
        );
        let ok = v.validate_output("{\"total\": 1, \"rows\": []}", None);
        assert_eq!(ok.problem(), None);
    }

    #[test]
    fn result_file_takes_precedence_over_stdout() {
        let v = Validator::new(&schema()).unwrap();
        let file = br#"{"total": 7, "rows": []}"#;
        let r = v.validate_output("{\"total\": \"wrong\"}\nnot json", Some(file));
        assert!(r.is_valid(), "{:?}", r.errors);
        assert_eq!(r.value.unwrap()["total"], json!(7));

        let r = v.validate_output("{\"total\": 1, \"rows\": []}", Some(b"{oops"));
        assert!(
            r.errors[0].starts_with("/out/result.json is not valid JSON"),
            "{:?}",
            r.errors
        );
    }

    #[test]
    fn remote_ref_is_refused_with_a_clear_error() {
        let s = json!({"$ref": "https://example.com/schemas/result.json"});
        let e = Validator::new(&s).unwrap_err();
        assert_eq!(
            e,
            ValidateError::RemoteRef {
                uri: "https://example.com/schemas/result.json".into()
            }
        );
        assert!(e.to_string().contains("$defs"), "{e}");
        let s = json!({"properties": {"a": {"$ref": "file:///etc/passwd"}}});
        assert!(matches!(
            Validator::new(&s).unwrap_err(),
            ValidateError::RemoteRef { .. }
        ));
    }

    #[test]
    fn local_refs_and_standard_meta_schemas_work_offline() {
        let s = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$defs": {"n": {"type": "number"}},
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/n"}}
        });
        let v = Validator::new(&s).unwrap();
        assert!(v.validate_output("{\"x\": 1}", None).is_valid());
        let r = v.validate_output("{\"x\": true}", None);
        assert_eq!(
            r.errors,
            vec![r#"/x: true is not of type "number""#.to_string()]
        );
    }

    #[test]
    fn invalid_schema_is_reported() {
        let e = Validator::new(&json!({"type": "numbr"})).unwrap_err();
        assert!(matches!(e, ValidateError::Invalid(_)), "{e:?}");
        assert!(Validator::new(&json!([1, 2])).is_err());
    }
}
