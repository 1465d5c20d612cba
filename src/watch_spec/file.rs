//! Reading watch files: YAML through serde-saphyr (unknown and duplicate
//! keys are errors), every problem as `file:line:column: message` with what
//! to write instead, like the policy reader.

use std::path::Path;

use crate::located::Located;
use crate::sources;

use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::Spanned;

/// The folder watch files are read from (the action input `watches`).
pub const DEFAULT_DIR: &str = ".github/compute";

/// Largest watch file read (a watch is a few lines and some code).
const MAX_FILE_BYTES: u64 = 256 * 1024;

/// One watch, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Watch {
    /// Its name (letters, digits, `-`, `_`, `.`); names its sticky comment.
    pub name: String,
    /// The file it was read from, as given to the reader.
    pub file: String,
    /// Exact code to run (the recommended form).
    pub code: Option<String>,
    /// A goal for the model; only with [`Watch::code_sha256`].
    pub goal: Option<String>,
    /// The hex SHA-256 the code must have (with `goal`: the code a human
    /// approved once; with `code`: a pin that must match).
    pub code_sha256: Option<String>,
    /// Workspace paths (relative to the repository root) and `github:`
    /// sources given to the code.
    pub inputs: Vec<String>,
    /// Where each of [`Watch::inputs`] is written (line, column).
    input_positions: Vec<Position>,
    /// The JSON Schema the result must match (none: the policy's).
    pub schema: Option<Value>,
    /// Python expressions or `assert` statements over `result`.
    pub checks: Vec<String>,
    /// The relative change of a value that counts as a change (0: any).
    pub tolerance: f64,
    /// The issue (or pull request) number of the sticky comment.
    pub issue: Option<u64>,
}

/// Why a watch file cannot be used, with where in the file
/// (`file:line:column: message`, see [`Located`]).
pub type WatchError = Located;

/// Where in a watch file a problem is: a line and a column, 1-based.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Position {
    /// The line (0 with [`Position::FILE`]).
    line: u64,
    /// The column (0 with [`Position::FILE`]).
    column: u64,
}

impl Position {
    /// The file as a whole (its size, reading it, its name): no line.
    const FILE: Position = Position { line: 0, column: 0 };
}

/// A problem at `at` in `file`.
fn located(file: &str, at: Position, message: impl Into<String>) -> WatchError {
    Located::at(file, at.line, at.column, message)
}

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    name: String,
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    goal: Option<String>,
    #[serde(default)]
    code_sha256: Option<String>,
    #[serde(default)]
    inputs: Vec<Spanned<String>>,
    #[serde(default)]
    schema: Option<Value>,
    #[serde(default)]
    checks: Vec<String>,
    #[serde(default)]
    tolerance: Option<f64>,
    #[serde(default)]
    issue: Option<u64>,
}

/// The first position of `key:` at any depth (best effort, for errors found
/// after parsing); the start of the file when it is not written.
fn key_position(src: &str, key: &str) -> Position {
    for (i, line) in src.lines().enumerate() {
        let t = line.trim_start();
        let t2 = t.strip_prefix("- ").unwrap_or(t);
        if let Some(rest) = t2.strip_prefix(key)
            && rest.trim_start().starts_with(':')
        {
            let col = line.chars().count() - t2.chars().count() + 1;
            return Position {
                line: i as u64 + 1,
                column: col as u64,
            };
        }
    }
    Position { line: 1, column: 1 }
}

fn hint(raw: &str) -> String {
    let raw = raw.trim();
    if raw.contains("unknown field") {
        format!(
            "{raw}; a watch has name, code or goal + code_sha256, inputs, schema, checks, tolerance and issue"
        )
    } else if raw.contains("duplicate") {
        format!("{raw}; each key may appear once — delete one of them")
    } else if raw.contains("missing field `name`") {
        format!("{raw}; give the watch a name, e.g. `name: weekly-sales`")
    } else {
        raw.to_string()
    }
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.chars().all(|c| c.is_ascii_hexdigit())
}

/// A workspace path a watch may name: relative, no `..`, no glob.
fn path_problem(p: &str) -> Option<&'static str> {
    if p.trim().is_empty() {
        Some("is empty")
    } else if p.starts_with('/') || p.contains('\\') {
        Some("must be relative to the repository root, with `/`")
    } else if p.split('/').any(|s| s == ".." || s == ".") {
        Some("must not contain `.` or `..` segments")
    } else if p.contains(['*', '?', '[']) {
        Some("must name one file (no globs)")
    } else {
        None
    }
}

/// The first problem among a watch's inputs, with the input's index: a
/// workspace path per [`path_problem`]; the `github:` sources in their
/// query syntax and together ([`sources::parse_all`]: each once, reviews
/// beside pulls unfiltered). Whether the policy opts into a source is
/// `watch check`'s (it knows the policy) and the run's.
fn input_problem(inputs: &[String]) -> Option<(usize, String)> {
    let path = inputs.iter().enumerate().find_map(|(i, p)| {
        let why = path_problem(p).filter(|_| !sources::is_source(p))?;
        Some((i, format!("input `{p}` {why}")))
    });
    let specs: Vec<(usize, String)> = inputs
        .iter()
        .enumerate()
        .filter(|(_, p)| sources::is_source(p))
        .map(|(i, p)| (i, p.clone()))
        .collect();
    let texts: Vec<String> = specs.iter().map(|(_, p)| p.clone()).collect();
    let source = sources::parse_all(&texts)
        .1
        .into_iter()
        .next()
        .map(|(k, e)| {
            let (i, p) = &specs[k];
            (*i, format!("input `{}`: {e}", p.trim()))
        });
    [path, source].into_iter().flatten().min_by_key(|(i, _)| *i)
}

/// A watch's code, goal and pinned hash (`code_sha256`), as [`program`]
/// checked them.
type Program = (Option<String>, Option<String>, Option<String>);

/// A watch's code, goal and pinned hash, checked together: exact `code`
/// (whose SHA-256, when `code_sha256` pins one, must match) or a `goal` with
/// `code_sha256`, never both; blank ones count as absent. `at` words an
/// error at a key.
fn program(
    code: Option<String>,
    goal: Option<String>,
    pin: Option<String>,
    at: &impl Fn(&str, String) -> WatchError,
) -> Result<Program, WatchError> {
    let code = code.filter(|c| !c.trim().is_empty());
    let goal = goal.filter(|g| !g.trim().is_empty());
    let pin = pin.map(|s| s.trim().to_ascii_lowercase());
    if let Some(p) = &pin
        && !is_hex64(p)
    {
        return Err(at(
            "code_sha256",
            format!("code_sha256 `{p}` is not a hex SHA-256 (64 hex digits)"),
        ));
    }
    match (&code, &goal, &pin) {
        (Some(_), Some(_), _) => {
            return Err(at(
                "goal",
                "give either `code` (exact code, recommended) or `goal` with `code_sha256`, not both".into(),
            ));
        }
        (None, None, _) => {
            return Err(at(
                "name",
                "the watch has no `code` and no `goal`; add `code: |` with the exact Python to run"
                    .into(),
            ));
        }
        (None, Some(_), None) => {
            return Err(at(
                "goal",
                "a `goal` needs `code_sha256`: the hash of the code approved once, so every run runs that code; or write the code itself under `code`".into(),
            ));
        }
        (Some(c), None, Some(p)) => {
            let actual = crate::sandbox::sha256_hex(c.as_bytes());
            if &actual != p {
                return Err(at(
                    "code_sha256",
                    format!(
                        "the code's SHA-256 is {actual}, not the pinned {p}; update code_sha256 if the code change is intended"
                    ),
                ));
            }
        }
        _ => {}
    }
    Ok((code, goal, pin))
}

impl Watch {
    /// Parses and validates one watch file's text; `origin` names it in errors.
    pub fn parse(src: &str, origin: &str) -> Result<Watch, WatchError> {
        let raw: Raw =
            serde_saphyr::from_str(src).map_err(|e| Located::from_yaml(origin, &e, hint))?;
        let at = |key: &str, message: String| located(origin, key_position(src, key), message);
        let name = raw.name.trim().to_string();
        if name.is_empty()
            || name.len() > 64
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return Err(at(
                "name",
                format!(
                    "name `{}` must be 1 to 64 letters, digits, `-`, `_` or `.` (it names the watch's sticky comment), e.g. `weekly-sales`",
                    raw.name
                ),
            ));
        }
        let (code, goal, pin) = program(raw.code, raw.goal, raw.code_sha256, &at)?;
        let inputs: Vec<String> = raw.inputs.iter().map(|s| s.value.clone()).collect();
        let input_positions: Vec<Position> = raw
            .inputs
            .iter()
            .map(|s| Position {
                line: s.referenced.line(),
                column: s.referenced.column(),
            })
            .collect();
        input_problem(&inputs).map_or(Ok(()), |(i, message)| {
            Err(located(origin, input_positions[i], message))
        })?;
        if let Some(s) = &raw.schema {
            if !s.is_object() {
                return Err(at(
                    "schema",
                    "schema must be an inline JSON Schema mapping, e.g. `{type: object, required: [total]}`".into(),
                ));
            }
            if let Err(e) = jsonschema::validator_for(s) {
                return Err(at(
                    "schema",
                    format!("the schema is not a valid JSON Schema: {e}"),
                ));
            }
        }
        if raw.checks.iter().any(|c| c.trim().is_empty()) {
            return Err(at(
                "checks",
                "a check is empty; write a Python expression over `result`, e.g. `result[\"total\"] >= 0`".into(),
            ));
        }
        let tolerance = raw.tolerance.unwrap_or(0.0);
        if !(tolerance.is_finite() && tolerance >= 0.0) {
            return Err(at(
                "tolerance",
                format!("tolerance `{tolerance}` must be a relative change ≥ 0, e.g. 0.05 for 5 %"),
            ));
        }
        if raw.issue == Some(0) {
            return Err(at(
                "issue",
                "issue must be an issue number, e.g. `12`".into(),
            ));
        }
        Ok(Watch {
            name,
            file: origin.to_string(),
            code,
            goal,
            code_sha256: pin,
            inputs,
            input_positions,
            schema: raw.schema,
            checks: raw.checks,
            tolerance,
            issue: raw.issue,
        })
    }

    /// Reads and validates one watch file.
    pub fn load(path: &Path, shown: &str) -> Result<Watch, WatchError> {
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        if size > MAX_FILE_BYTES {
            return Err(located(
                shown,
                Position::FILE,
                format!(
                    "the file is {size} bytes, more than {MAX_FILE_BYTES}; keep watches short and data in inputs"
                ),
            ));
        }
        let src = std::fs::read_to_string(path).map_err(|e| {
            located(
                shown,
                Position::FILE,
                format!("cannot read the watch file ({e})"),
            )
        })?;
        Watch::parse(&src, shown)
    }

    /// A problem with the watch's input `i` (what the policy says of a
    /// `github:` source, say), placed where that input is written.
    pub(crate) fn at_input(&self, i: usize, message: impl Into<String>) -> WatchError {
        let at = self
            .input_positions
            .get(i)
            .copied()
            .unwrap_or(Position::FILE);
        located(&self.file, at, message)
    }

    /// True when `path` (repository-relative) is one of the watch's inputs.
    pub fn reads(&self, path: &str) -> bool {
        self.inputs.iter().any(|i| i == path)
    }
}

/// True for a watch file's name (`*.yml`, `*.yaml`).
pub(crate) fn is_watch_file(name: &str) -> bool {
    name.ends_with(".yml") || name.ends_with(".yaml")
}

/// Every watch in `dir` (`*.yml`, `*.yaml`, sorted by file name), each
/// named in errors as `shown_dir/<file>`. A missing folder has no watches.
/// Every problem is returned, not only the first; two watches with the same
/// name are an error.
pub fn load_dir(dir: &Path, shown_dir: &str) -> Result<Vec<Watch>, Vec<WatchError>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(vec![located(
                shown_dir,
                Position::FILE,
                format!("cannot read the watch folder ({e})"),
            )]);
        }
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| is_watch_file(n))
        .collect();
    names.sort();
    let shown_dir = shown_dir.trim_end_matches('/');
    let mut watches: Vec<Watch> = Vec::new();
    let mut errors = Vec::new();
    for n in names {
        let shown = format!("{shown_dir}/{n}");
        match Watch::load(&dir.join(&n), &shown) {
            Ok(w) => {
                if let Some(first) = watches.iter().find(|o| o.name == w.name) {
                    errors.push(located(
                        &shown,
                        Position::FILE,
                        format!(
                            "the name `{}` is taken by {}; each watch needs its own name",
                            w.name, first.file
                        ),
                    ));
                } else {
                    watches.push(w);
                }
            }
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(watches)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CODE: &str = "import json\nprint(json.dumps({\"total\": 1}))\n";

    fn ok(src: &str) -> Watch {
        Watch::parse(src, "w.yml").unwrap_or_else(|e| panic!("{e}"))
    }

    fn err(src: &str) -> String {
        Watch::parse(src, "w.yml").unwrap_err().to_string()
    }

    #[test]
    fn a_full_watch_is_read() {
        let w = ok(&format!(
            "name: sales\ncode: |\n  import json\n  print(json.dumps({{\"total\": 1}}))\ncode_sha256: {}\ninputs: [data/sales.csv]\nschema: {{type: object, required: [total]}}\nchecks:\n  - result[\"total\"] >= 0\ntolerance: 0.05\nissue: 12\n",
            crate::sandbox::sha256_hex(CODE.as_bytes())
        ));
        assert_eq!(w.name, "sales");
        assert_eq!(w.code.as_deref(), Some(CODE));
        assert_eq!(w.inputs, vec!["data/sales.csv"]);
        assert_eq!(w.checks.len(), 1);
        assert_eq!(w.tolerance, 0.05);
        assert_eq!(w.issue, Some(12));
        assert!(w.reads("data/sales.csv") && !w.reads("data/other.csv"));
    }

    #[test]
    fn errors_name_file_line_and_column() {
        assert_eq!(
            err("name: x\ncode: print(1)\ntolerance: -1\n"),
            "w.yml:3:1: tolerance `-1` must be a relative change ≥ 0, e.g. 0.05 for 5 %"
        );
        let e = err("name: x\ncode: print(1)\nisue: 3\n");
        assert!(e.starts_with("w.yml:3:1: ") && e.contains("isue"), "{e}");
        let e = err("name: x\ncode: print(1)\ncode_sha256: abc\n");
        assert!(e.starts_with("w.yml:3:1: code_sha256 `abc`"), "{e}");
        let e = err("name: x\ngoal: total sales\n");
        assert!(
            e.starts_with("w.yml:2:1: a `goal` needs `code_sha256`"),
            "{e}"
        );
        let e = err("name: x\ncode: print(1)\ninputs: [../secrets.txt]\n");
        assert!(e.starts_with("w.yml:3:10: input `../secrets.txt`"), "{e}");
        let e = err("name: bad name\ncode: print(1)\n");
        assert!(e.starts_with("w.yml:1:1: name `bad name`"), "{e}");
        let e = err("name: x\ncode: print(1)\nschema: {type: 3}\n");
        assert!(e.starts_with("w.yml:3:1: the schema is not a valid"), "{e}");
        let e = err("code: print(1)\n");
        assert!(e.contains("name"), "{e}");
        let e = err("name: x\ncode: print(1)\ntolerance: 0.1\ntolerance: 0.2\n");
        assert!(e.starts_with("w.yml:4:") && e.contains("duplicate"), "{e}");
    }

    /// `github:` entries are read in the query syntax the run reads, each
    /// problem placed at its entry with what to write. (Before, every entry
    /// starting with `github:` passed unread: these all loaded.)
    #[test]
    fn github_sources_are_checked_where_they_are_written() {
        let w = ok(
            "name: x\ncode: print(1)\ninputs:\n  - data/a.csv\n  - github:pulls?state=closed&since=-28d\n  - github:reviews\n",
        );
        assert_eq!(w.inputs.len(), 3);
        assert_eq!(
            w.at_input(1, "m").to_string(),
            "w.yml:5:5: m",
            "a later problem (the policy's) is placed at its entry"
        );
        let e = err("name: x\ncode: print(1)\ninputs:\n  - data/a.csv\n  - github:pull\n");
        assert!(
            e.starts_with("w.yml:5:5: input `github:pull`: `github:pull` is not a source; the sources are `pulls`"),
            "{e}"
        );
        let e =
            err("name: x\ncode: print(1)\ninputs: [data/a.csv, \"github:pulls?state=merged\"]\n");
        assert!(
            e.starts_with("w.yml:3:22: input `github:pulls?state=merged`: ")
                && e.contains("write `open`, `closed` or `all`"),
            "{e}"
        );
        let e = err("name: x\ncode: print(1)\ninputs:\n  - github:comments?labels=bug\n");
        assert!(
            e.starts_with("w.yml:4:5: ") && e.contains("its keys are `since`, `until`, `limit`"),
            "{e}"
        );
        let e = err(
            "name: x\ncode: print(1)\ninputs:\n  - github:pulls\n  - github:pulls?state=open\n",
        );
        assert!(
            e.starts_with("w.yml:5:5: ") && e.contains("named twice"),
            "{e}"
        );
        // A bad path before a bad source is the one named.
        let e = err("name: x\ncode: print(1)\ninputs: [/etc/x.csv, github:nope]\n");
        assert!(e.starts_with("w.yml:3:10: input `/etc/x.csv`"), "{e}");
    }

    #[test]
    fn a_pinned_hash_must_match_the_code() {
        let e = err(&format!(
            "name: x\ncode: print(2)\ncode_sha256: {}\n",
            "0".repeat(64)
        ));
        assert!(e.starts_with("w.yml:3:1: the code's SHA-256 is"), "{e}");
    }

    #[test]
    fn a_folder_is_read_sorted_and_names_are_unique() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.yml"), "name: b\ncode: print(1)\n").unwrap();
        std::fs::write(dir.path().join("a.yaml"), "name: a\ncode: print(1)\n").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a watch").unwrap();
        let got = load_dir(dir.path(), ".github/compute").unwrap();
        let names: Vec<&str> = got.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(got[0].file, ".github/compute/a.yaml");
        std::fs::write(dir.path().join("c.yml"), "name: a\ncode: print(1)\n").unwrap();
        std::fs::write(dir.path().join("d.yml"), "name: d\n").unwrap();
        let errs = load_dir(dir.path(), ".github/compute").unwrap_err();
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(
            errs[0]
                .to_string()
                .contains("taken by .github/compute/a.yaml")
        );
        assert!(
            errs[1]
                .to_string()
                .starts_with(".github/compute/d.yml:1:1: ")
        );
        assert!(load_dir(&dir.path().join("none"), "x").unwrap().is_empty());
    }
}
