//! Holds the code to the layering written in ARCHITECTURE.md ("Layers"):
//! every `crate::` path in src/**/*.rs (outside tests) must go to a module
//! its layer may know, and the modules form no cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Which modules each module may use. A module not listed may use nothing
/// in the crate. `github::*` and `cli::*` entries apply to their files
/// (`cli` covers every `cli::*` file; the cycle test sees them one by one).
const ALLOWED: &[(&str, &[&str])] = &[
    ("units", &[]),
    // A problem in a file the user wrote, with its position.
    ("located", &[]),
    ("status", &[]),
    ("secret", &[]),
    // The `github:` sources as written: names and query syntax, plain data
    // (the policy's `inputs.github`, watch files and github::sources read it).
    ("sources", &[]),
    ("sandbox", &["units"]),
    ("markdown", &[]),
    ("model", &["units", "secret"]),
    // Policy knows the sandbox's plain types (Limits, RuntimeRules, the
    // default image), never the engine, a model or GitHub.
    (
        "policy",
        &["located", "units", "sandbox", "sources", "status"],
    ),
    (
        "prompt",
        &["markdown", "model", "policy", "sandbox", "units"],
    ),
    ("validate", &["model"]),
    // Watch files and the values they track: plain data.
    ("watch", &["located", "sandbox", "sources"]),
    // Input admission: one rule for the CLI, the Action and replay.
    ("admit", &["policy", "sandbox", "units"]),
    ("explain", &["model", "policy", "prompt", "units"]),
    // The run record is plain data over the policy's, the sandbox's and the
    // model's types (which model wrote the code).
    ("record", &["model", "policy", "sandbox"]),
    (
        "report",
        &["model", "policy", "record", "sandbox", "status"],
    ),
    // What an answer took from the model: a summary of the report.
    ("usage", &["report"]),
    // Why a run or a verdict is unusable: below the loop and the checks.
    ("problems", &["policy", "sandbox"]),
    // The checks beyond the schema (repeat, checks, verify): below the loop.
    (
        "verify",
        &[
            "model", "policy", "problems", "prompt", "record", "report", "sandbox", "validate",
        ],
    ),
    // Replaying a record: a front-end service over record, sandbox, verify.
    (
        "replay",
        &[
            "admit", "problems", "record", "render", "report", "sandbox", "validate", "verify",
        ],
    ),
    // Render knows no GitHub: the approval block comes in its context.
    (
        "render",
        &[
            "markdown", "record", "report", "policy", "sandbox", "units", "usage",
        ],
    ),
    (
        "agent",
        &[
            "explain", "model", "policy", "problems", "prompt", "report", "sandbox", "validate",
            "units", "status", "verify",
        ],
    ),
    ("github::event", &["secret"]),
    ("github::command", &["github::event", "markdown"]),
    (
        "github::client",
        &["github::event", "policy", "secret", "units"],
    ),
    // The repository's files, pull requests and commits, over the client.
    ("github::repo", &["github::client"]),
    ("github::actions_io", &["located", "render"]),
    (
        "github::flow",
        &[
            "github::client",
            "github::command",
            "github::event",
            "policy",
        ],
    ),
    ("github::inputs", &["admit", "policy"]),
    // The repository's own activity as data, over the client; an earlier
    // run's data read back from what its comment records.
    (
        "github::sources",
        &[
            "admit",
            "github::client",
            "github::texts",
            "policy",
            "record",
            "sandbox",
            "sources",
        ],
    ),
    (
        "github::texts",
        &[
            "admit",
            "github::client",
            "github::command",
            "markdown",
            "policy",
            "report",
            "sandbox",
        ],
    ),
    ("github::tracking", &["github::client", "github::texts"]),
    // `Ctx` carries the engine session the front end opened (sandbox).
    (
        "github::thread",
        &[
            "github::actions_io",
            "github::client",
            "github::event",
            "github::sources",
            "github::texts",
            "github::tracking",
            "policy",
            "render",
            "sandbox",
            "status",
        ],
    ),
    // The run's files: committed to the files branch, shown in the thread.
    (
        "github::assets",
        &[
            "github::client",
            "github::sources",
            "github::texts",
            "github::thread",
            "policy",
            "problems",
            "render",
            "report",
            "sandbox",
        ],
    ),
    // A follow-up's earlier answer in the thread, as plain data.
    (
        "github::followup",
        &[
            "github::client",
            "github::sources",
            "github::texts",
            "github::thread",
            "record",
            "replay",
            "sandbox",
        ],
    ),
    // The handlers: request knows no other handler; approval runs a request.
    (
        "github::request",
        &[
            "agent",
            "github::actions_io",
            "github::assets",
            "github::client",
            "github::event",
            "github::followup",
            "github::inputs",
            "github::sources",
            "github::texts",
            "github::thread",
            "model",
            "prompt",
            "render",
            "report",
            "sandbox",
            "status",
            "usage",
        ],
    ),
    // Watches: a handler beside request (it runs the loop per watch).
    (
        "github::watch",
        &[
            "agent",
            "github::actions_io",
            "github::client",
            "github::inputs",
            "github::repo",
            "github::request",
            "github::sources",
            "github::texts",
            "github::thread",
            "policy",
            "record",
            "render",
            "replay",
            "report",
            "status",
            "watch",
        ],
    ),
    // `/compute replay`: a handler beside request, over the replay service.
    (
        "github::replay",
        &[
            "github::client",
            "github::inputs",
            "github::repo",
            "github::sources",
            "github::texts",
            "github::thread",
            "policy",
            "record",
            "render",
            "replay",
            "sandbox",
            "status",
        ],
    ),
    (
        "github::approval",
        &[
            "github::client",
            "github::request",
            "github::texts",
            "github::thread",
            "status",
        ],
    ),
    // `/compute plan` and `/compute run`: a handler that runs a request.
    (
        "github::plan",
        &[
            "github::client",
            "github::request",
            "github::texts",
            "github::thread",
            "status",
        ],
    ),
    (
        "github::action",
        &[
            "github::actions_io",
            "github::approval",
            "github::plan",
            "github::client",
            "github::command",
            "github::event",
            "github::flow",
            "github::followup",
            "github::replay",
            "github::request",
            "github::sources",
            "github::texts",
            "github::thread",
            "github::watch",
            "model",
            "policy",
            "sandbox",
            "status",
        ],
    ),
    // The command line is the top: it may use anything but is used by nothing.
    ("cli", &["*"]),
];

/// The module a file is (`src/github/texts.rs` → `github::texts`; a
/// `mod.rs` and a top-level module's files fold into their parent).
fn module_of(rel: &Path) -> String {
    let s = rel.with_extension("").to_string_lossy().replace('/', "::");
    let s = s.trim_end_matches("::mod").to_string();
    let parts: Vec<&str> = s.split("::").collect();
    match parts.as_slice() {
        [front @ ("github" | "cli"), sub, ..] => format!("{front}::{sub}"),
        [top, ..] => top.to_string(),
        [] => s,
    }
}

/// The module a `crate::a::b` path names, at the granularity of [`ALLOWED`].
fn target_of(path: &str) -> String {
    let parts: Vec<&str> = path.split("::").collect();
    match parts.as_slice() {
        [front @ ("github" | "cli"), sub, ..]
            if sub.chars().all(|c| c.is_ascii_lowercase() || c == '_') =>
        {
            format!("{front}::{sub}")
        }
        [top, ..] => top.to_string(),
        [] => String::new(),
    }
}

/// The code of a file without its `#[cfg(test)] mod tests` and comments.
fn code_lines(text: &str) -> Vec<&str> {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect()
}

/// Every `crate::` path on a line, `use crate::a::{b, c::d}` expanded.
fn crate_paths(line: &str) -> Vec<String> {
    paths_after(line, "crate::")
}

/// Every path after `prefix` (`crate::`, `super::`) on a line, braces expanded.
fn paths_after(line: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find(prefix) {
        rest = &rest[i + prefix.len()..];
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        let path = rest[..end].trim_end_matches(':');
        if rest[end..].starts_with('{') && path.split("::").count() <= 1 {
            let inner = &rest[end + 1..rest[end..].find('}').map_or(rest.len(), |j| end + j)];
            for item in inner.split(',').map(str::trim).filter(|i| !i.is_empty()) {
                out.push(if path.is_empty() {
                    item.to_string()
                } else {
                    format!("{path}::{item}")
                });
            }
        } else {
            out.push(path.to_string());
        }
        rest = &rest[end..];
    }
    out
}

/// The sibling modules a front-end file (`cli/answer.rs`) names through
/// `super::` (`super::run::read_code` → `cli::run`); items of the parent
/// (`super::RunArgs`) are not an edge between siblings.
fn sibling_targets(front: &str, line: &str, siblings: &BTreeSet<String>) -> Vec<String> {
    paths_after(line, "super::")
        .into_iter()
        .filter_map(|p| {
            let first = p.split("::").next()?.to_string();
            siblings
                .contains(&first)
                .then(|| format!("{front}::{first}"))
        })
        .collect()
}

/// The names of the `.rs` files beside `file` (without `mod`).
fn siblings_of(file: &Path) -> BTreeSet<String> {
    let Some(dir) = file.parent() else {
        return BTreeSet::new();
    };
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            if p.extension()? != "rs" {
                return None;
            }
            Some(p.file_stem()?.to_string_lossy().into_owned())
        })
        .filter(|n| n != "mod")
        .collect()
}

/// Every `.rs` file under src/ but the ones that are not the crate's code.
fn source_files() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut dirs = vec![root];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs")
                && p.file_name()
                    .is_some_and(|n| n != "tests.rs" && n != "layering.rs")
            {
                files.push(p);
            }
        }
    }
    files
}

fn edges() -> BTreeSet<(String, String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeSet::new();
    for f in source_files() {
        let rel = f.strip_prefix(&root).unwrap();
        let from = module_of(rel);
        let front = from
            .split_once("::")
            .map(|(front, _)| front.to_string())
            .filter(|front| front == "cli" || front == "github");
        let siblings = siblings_of(&f);
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, line) in code_lines(&text).into_iter().enumerate() {
            let mut targets: Vec<String> = crate_paths(line).iter().map(|p| target_of(p)).collect();
            if let Some(front) = &front {
                targets.extend(sibling_targets(front, line, &siblings));
            }
            for to in targets {
                if to != from && !to.is_empty() {
                    out.insert((from.clone(), to, format!("src/{}:{}", rel.display(), n + 1)));
                }
            }
        }
    }
    out
}

fn allowed(from: &str, to: &str) -> bool {
    let rule = ALLOWED
        .iter()
        .find(|(m, _)| *m == from || from.starts_with(&format!("{m}::")));
    match rule {
        Some((_, ok)) => ok
            .iter()
            .any(|a| *a == "*" || *a == to || to.starts_with(&format!("{a}::"))),
        None => false,
    }
}

#[test]
fn every_use_crate_line_keeps_the_layering() {
    let bad: Vec<String> = edges()
        .into_iter()
        .filter(|(from, to, _)| !allowed(from, to))
        .map(|(from, to, at)| format!("{at}: `{from}` must not use `{to}`"))
        .collect();
    assert!(
        bad.is_empty(),
        "the layering in ARCHITECTURE.md is broken:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_modules_form_no_cycle() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, to, _) in edges() {
        graph.entry(from).or_default().insert(to);
    }
    // Depth-first search for a back edge.
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = stack.iter().position(|s| s == n) {
            return Some(stack[i..].to_vec());
        }
        if !done.insert(n.to_string()) {
            return None;
        }
        stack.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, g, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    for n in graph.keys() {
        let cycle = visit(n, &graph, &mut Vec::new(), &mut done);
        assert!(
            cycle.is_none(),
            "import cycle: {}",
            cycle.unwrap().join(" → ")
        );
    }
}

/// Only the Docker backend knows the engine's client: everything else goes
/// through `sandbox::Executor` (ARCHITECTURE.md, "Sandbox backends").
#[test]
fn bollard_is_used_only_by_the_docker_backend() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let backend = root.join("sandbox").join("docker");
    let mut bad = Vec::new();
    for f in source_files() {
        if f.starts_with(&backend) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, line) in text.lines().enumerate() {
            if !line.trim_start().starts_with("//") && line.contains("bollard") {
                let rel = f.strip_prefix(&root).unwrap();
                bad.push(format!("src/{}:{}: {}", rel.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "bollard outside src/sandbox/docker/ (go through sandbox::Executor):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_checker_sees_braced_uses_and_rejects_a_wrong_edge() {
    assert_eq!(
        crate_paths("use crate::github::{texts, thread::Ctx};"),
        vec!["github::texts", "github::thread::Ctx"]
    );
    assert_eq!(target_of("github::texts::run_marker"), "github::texts");
    assert_eq!(target_of("github::GitHub"), "github");
    assert_eq!(module_of(Path::new("github/mod.rs")), "github");
    assert_eq!(module_of(Path::new("policy/config.rs")), "policy");
    assert_eq!(module_of(Path::new("cli/answer.rs")), "cli::answer");
    assert_eq!(target_of("cli::run::read_code"), "cli::run");
    let siblings: BTreeSet<String> = ["run".to_string(), "answer".to_string()].into();
    assert_eq!(
        sibling_targets("cli", "use super::run::{read_code, usage};", &siblings),
        vec!["cli::run", "cli::run"]
    );
    assert!(sibling_targets("cli", "use super::{Format, RunArgs};", &siblings).is_empty());
    assert!(!allowed("render", "github::client"));
    assert!(!allowed("render", "github::texts"));
    assert!(!allowed("sandbox", "policy"));
    assert!(!allowed("github::request", "github::action"));
    assert!(allowed("cli", "github::action"));
}
