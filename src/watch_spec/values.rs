//! The values a watch tracks — the scalar leaves of its result, by JSON
//! pointer — and which of them moved beyond the watch's tolerance.

use std::collections::BTreeMap;

use serde_json::Value;

/// Most values tracked per watch (a larger result keeps its first ones).
const MAX_VALUES: usize = 50;
/// Most characters of a string value (or a pointer) kept.
const MAX_CHARS: usize = 100;

fn cut(s: &str) -> String {
    if s.chars().count() > MAX_CHARS {
        format!("{}…", s.chars().take(MAX_CHARS).collect::<String>())
    } else {
        s.to_string()
    }
}

/// The scalar leaves of `result` by JSON pointer (`/total`,
/// `/by_region/north`, `/rows/0`); the whole result is `/` when it is a
/// scalar itself. At most [`MAX_VALUES`], strings and pointers cut at
/// [`MAX_CHARS`] characters (so the history stays small).
pub(crate) fn leaves(result: &Value) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    walk("", result, &mut out);
    out
}

fn walk(path: &str, v: &Value, out: &mut BTreeMap<String, Value>) {
    if out.len() >= MAX_VALUES {
        return;
    }
    match v {
        Value::Object(m) => {
            for (k, w) in m {
                let k = k.replace('~', "~0").replace('/', "~1");
                walk(&format!("{path}/{k}"), w, out);
            }
        }
        Value::Array(a) => {
            for (i, w) in a.iter().enumerate() {
                walk(&format!("{path}/{i}"), w, out);
            }
        }
        _ => {
            let key = if path.is_empty() { "/" } else { path };
            let v = match v {
                Value::String(s) => Value::String(cut(s)),
                other => other.clone(),
            };
            out.insert(cut(key), v);
        }
    }
}

/// One value that moved.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Change {
    /// The value's pointer.
    pub(crate) path: String,
    /// Before (none: new).
    pub(crate) before: Option<Value>,
    /// After (none: gone).
    pub(crate) after: Option<Value>,
}

/// The relative change from `a` to `b` (`|b − a| / |a|`; from 0 any
/// change is infinite).
pub(crate) fn relative(a: f64, b: f64) -> f64 {
    if a == b {
        0.0
    } else if a == 0.0 {
        f64::INFINITY
    } else {
        (b - a).abs() / a.abs()
    }
}

/// The values that changed from `before` to `after`: numbers whose relative
/// change is more than `tolerance`, anything else that differs, and values
/// that appeared or went away.
pub(crate) fn changes(
    before: &BTreeMap<String, Value>,
    after: &BTreeMap<String, Value>,
    tolerance: f64,
) -> Vec<Change> {
    let mut out = Vec::new();
    for (k, b) in before {
        match after.get(k) {
            None => out.push(Change {
                path: k.clone(),
                before: Some(b.clone()),
                after: None,
            }),
            Some(a) => {
                let moved = match (b.as_f64(), a.as_f64()) {
                    (Some(x), Some(y)) => relative(x, y) > tolerance,
                    _ => a != b,
                };
                if moved {
                    out.push(Change {
                        path: k.clone(),
                        before: Some(b.clone()),
                        after: Some(a.clone()),
                    });
                }
            }
        }
    }
    for (k, a) in after {
        if !before.contains_key(k) {
            out.push(Change {
                path: k.clone(),
                before: None,
                after: Some(a.clone()),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn leaves_are_pointers_to_scalars() {
        let l = leaves(&json!({"total": 42, "by": {"a/b": 1.5}, "rows": [true, "x"]}));
        let keys: Vec<&str> = l.keys().map(String::as_str).collect();
        assert_eq!(keys, ["/by/a~1b", "/rows/0", "/rows/1", "/total"]);
        assert_eq!(leaves(&json!(3)).get("/"), Some(&json!(3)));
        let long = leaves(&json!({"s": "x".repeat(500)}));
        assert_eq!(long["/s"].as_str().unwrap().chars().count(), 101);
        let many: serde_json::Map<String, Value> =
            (0..80).map(|i| (format!("k{i:02}"), json!(i))).collect();
        assert_eq!(leaves(&Value::Object(many)).len(), 50);
    }

    #[test]
    fn only_changes_beyond_the_tolerance_count() {
        let a = leaves(&json!({"total": 100, "name": "x", "zero": 0}));
        let b = leaves(&json!({"total": 104, "name": "x", "zero": 0}));
        assert!(changes(&a, &b, 0.05).is_empty());
        assert_eq!(changes(&a, &b, 0.03).len(), 1);
        let c = leaves(&json!({"total": 100, "name": "y", "zero": 0.001, "new": 1}));
        let ch = changes(&a, &c, 0.5);
        let paths: Vec<&str> = ch.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["/name", "/zero", "/new"]);
        assert!(changes(&a, &a, 0.0).is_empty());
    }
}
