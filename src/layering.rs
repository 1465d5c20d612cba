//! Holds the code to the layering written in ARCHITECTURE.md ("Layers"):
//! every `crate::` path in src/**/*.rs (outside tests) must go to a module
//! its layer may know, and the modules form no cycle.
//!
//! The library crates under `crates/` (ARCHITECTURE.md, "Crates") are
//! layers whose edges Cargo holds: a crate uses only the crates its
//! Cargo.toml names, never the bot (that would be a cycle, which Cargo
//! refuses). So `sandbox`, `units`, `secret`, `model` and `policy` (with
//! the `located` and `sources` it carries) have no entry of their own in
//! [`ALLOWED`] any more; they stay targets (the bot names them through
//! `crate::sandbox`, `crate::model`, `crate::located`, …, the re-exports in
//! `src/lib.rs`), and [`CRATES`] pins which crate may name which. What
//! crate edges cannot say stays here: the modules of `src/` among
//! themselves, that the plain data the policy's crate carries (`located`,
//! `sources`) uses nothing of that crate, and that only the sandbox's
//! Docker backend (`crates/sandbox/src/docker/`) names bollard.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Which modules each module may use. A module not listed may use nothing
/// in the crate. `github::*` and `cli::*` entries apply to their files
/// (`cli` covers every `cli::*` file; the cycle test sees them one by one);
/// in the layer folders of `src/github/` ([`GITHUB_LAYERS`]) every file has
/// its own entry, and the most specific entry applies.
const ALLOWED: &[(&str, &[&str])] = &[
    ("status", &[]),
    ("markdown", &[]),
    (
        "prompt",
        &["markdown", "model", "policy", "sandbox", "units"],
    ),
    ("validate", &["model"]),
    // Watch files and the values they track: plain data.
    ("watch_spec", &["located", "sandbox", "sources"]),
    // Input admission: one rule for the CLI, the Action and replay.
    ("admit", &["policy", "sandbox", "units"]),
    (
        "explain",
        &["markdown", "model", "policy", "prompt", "units"],
    ),
    // The run record is plain data over the policy's, the sandbox's and the
    // model's types (which model wrote the code).
    ("record", &["model", "policy", "sandbox"]),
    // Runs as notebooks and notebooks as code: over the sandbox's outcome.
    ("notebook", &["sandbox"]),
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
            "admit", "notebook", "problems", "record", "render", "report", "sandbox", "validate",
            "verify",
        ],
    ),
    // Render knows no GitHub front end: the approval block comes in its
    // context. Of GitHub's crate it takes the job summary's size limit.
    (
        "render",
        &[
            "github::actions",
            "markdown",
            "record",
            "report",
            "policy",
            "sandbox",
            "units",
            "usage",
        ],
    ),
    (
        "agent",
        &[
            "explain", "model", "notebook", "policy", "problems", "prompt", "report", "sandbox",
            "validate", "units", "status", "verify",
        ],
    ),
    // ---- src/github/, bottom up. A layer uses the layers below it, never
    // one above; within `handlers/` and `watch/` each file is a module.
    // GitHub's side of the wire (`github::rest`, `github::actions`) is its
    // own crate (crates/github), below every module here.
    //
    // The comment syntax and the screening of a trigger: plain data.
    ("github::command", &["github::actions", "markdown"]),
    (
        "github::flow",
        &["github::actions", "github::command", "policy"],
    ),
    // Every text the bot posts: over plain data, never a handler; numbers
    // and folds by the answer's rules (`units`, `render::FOLD_ROWS`).
    (
        "github::texts",
        &[
            "admit",
            "github::command",
            "markdown",
            "policy",
            "render",
            "report",
            "sandbox",
            "units",
        ],
    ),
    // The conversation: the tracking comment, and `thread::conclude`, the
    // one exit. `Ctx` carries the engine session the front end opened; an
    // answer posted before its explanation carries the report and the
    // agent's pending explanation, rendered again when it settles.
    ("github::tracking", &["github::rest", "github::texts"]),
    (
        "github::thread",
        &[
            "agent",
            "report",
            "usage",
            "github::actions",
            "github::rest",
            "github::activity",
            "github::texts",
            "github::tracking",
            "policy",
            "render",
            "sandbox",
            "status",
        ],
    ),
    // Services of a run: workspace inputs, `github:` data (an earlier
    // run's read back from what its comment records), the run's files, the
    // earlier answer a follow-up builds on.
    ("github::inputs", &["admit", "notebook", "policy"]),
    (
        "github::activity",
        &[
            "admit",
            "github::rest",
            "github::texts",
            "policy",
            "record",
            "sandbox",
            "sources",
        ],
    ),
    (
        "github::assets",
        &[
            "github::rest",
            "notebook",
            "github::activity",
            "github::texts",
            "github::thread",
            "policy",
            "problems",
            "render",
            "report",
            "sandbox",
        ],
    ),
    (
        "github::followup",
        &[
            "github::rest",
            "github::activity",
            "github::texts",
            "github::thread",
            "record",
            "replay",
            "sandbox",
            "prompt",
        ],
    ),
    // One run specification: built from the command, a shown request, the
    // dispatch or the watch; the agent's request and the recorded request
    // are made from it.
    (
        "github::spec",
        &[
            "agent",
            "github::command",
            "github::followup",
            "github::inputs",
            "github::texts",
            "prompt",
            "sandbox",
            "watch_spec",
        ],
    ),
    // The executor: one request through the loop. It knows no handler and
    // no runner; they all go through it.
    (
        "github::execute",
        &[
            "agent",
            "github::actions",
            "github::assets",
            "github::command",
            "github::followup",
            "github::inputs",
            "github::rest",
            "github::activity",
            "github::texts",
            "github::thread",
            "markdown",
            "model",
            "prompt",
            "render",
            "report",
            "sandbox",
            "status",
            "usage",
            "github::spec",
        ],
    ),
    // The comment handlers (`github/handlers/`, one file each): over the
    // executor and the services, never another handler (no
    // `github::handlers::*` in their lists) nor the dispatcher.
    (
        "github::handlers::compute",
        &[
            "agent",
            "github::command",
            "github::execute",
            "github::thread",
            "github::spec",
        ],
    ),
    (
        "github::handlers::plan",
        &[
            "github::command",
            "github::execute",
            "github::spec",
            "github::thread",
        ],
    ),
    (
        "github::handlers::run",
        &[
            "github::execute",
            "github::rest",
            "github::texts",
            "github::thread",
            "status",
            "github::spec",
        ],
    ),
    (
        "github::handlers::approve",
        &[
            "github::execute",
            "github::rest",
            "github::texts",
            "github::thread",
            "status",
            "github::spec",
        ],
    ),
    // `/compute replay`: over the replay service, not the executor.
    (
        "github::handlers::replay",
        &[
            "github::inputs",
            "github::rest",
            "github::activity",
            "github::texts",
            "github::thread",
            "policy",
            "record",
            "replay",
            "sandbox",
            "status",
        ],
    ),
    (
        "github::handlers::watch",
        &[
            "github::rest",
            "github::texts",
            "github::thread",
            "record",
            "replay",
            "status",
            "watch_spec",
        ],
    ),
    // The dispatcher (`handlers/mod.rs`) finishes the policy's check and
    // hands each command to its handler (its child modules).
    (
        "github::handlers",
        &[
            "github::command",
            "github::execute",
            "github::followup",
            "github::rest",
            "github::texts",
            "github::thread",
            "policy",
            "status",
            "github::spec",
        ],
    ),
    // The watch runners (`github/watch/`): one watch through the loop
    // (`runner`), its state and sticky comment (`state`), the schedule and
    // the pull-request runners over them. No comment handler.
    (
        "github::watch::runner",
        &[
            "agent",
            "github::actions",
            "github::execute",
            "github::inputs",
            "github::activity",
            "github::texts",
            "github::thread",
            "policy",
            "record",
            "report",
            "status",
            "watch_spec",
            "github::spec",
        ],
    ),
    (
        "github::watch::state",
        &[
            "github::rest",
            "github::texts",
            "github::thread",
            "github::watch::runner",
            "render",
            "watch_spec",
        ],
    ),
    (
        "github::watch::schedule",
        &[
            "github::actions",
            "github::texts",
            "github::thread",
            "github::watch::runner",
            "github::watch::state",
            "status",
            "watch_spec",
        ],
    ),
    (
        "github::watch::pull_request",
        &[
            "github::rest",
            "github::texts",
            "github::thread",
            "github::watch::runner",
            "status",
            "watch_spec",
        ],
    ),
    // The entry point: reads the runtime, authorizes, and hands the trigger
    // to the dispatcher, the executor or a runner.
    (
        "github::action",
        &[
            "github::actions",
            "github::execute",
            "github::flow",
            "github::handlers",
            "github::rest",
            "github::activity",
            "github::texts",
            "github::thread",
            "github::watch::pull_request",
            "github::watch::schedule",
            "model",
            "policy",
            "sandbox",
            "status",
            "github::spec",
        ],
    ),
    // The command line is the top: it may use anything but is used by nothing.
    ("cli", &["*"]),
];

/// The folders of `src/github/` that are layers of files (each file its own
/// module, `github::<folder>::<file>`); the other folders (`texts/`,
/// `sources/`) are one module with their files.
const GITHUB_LAYERS: [&str; 2] = ["handlers", "watch"];

/// The module a file is (`src/github/texts.rs` → `github::texts`,
/// `src/github/handlers/plan.rs` → `github::handlers::plan`; a `mod.rs`
/// and a top-level module's files fold into their parent).
fn module_of(rel: &Path) -> String {
    let s = rel.with_extension("").to_string_lossy().replace('/', "::");
    let s = s.trim_end_matches("::mod").to_string();
    let parts: Vec<&str> = s.split("::").collect();
    match parts.as_slice() {
        ["github", layer, file, ..] if GITHUB_LAYERS.contains(layer) => {
            format!("github::{layer}::{file}")
        }
        [front @ ("github" | "cli"), sub, ..] => format!("{front}::{sub}"),
        [top, ..] => top.to_string(),
        [] => s,
    }
}

/// The module a `crate::a::b` path names, at the granularity of [`ALLOWED`]
/// (`github::handlers::plan::plan` → `github::handlers::plan`: a file of a
/// layer folder; `github::handlers::on_comment` → `github::handlers`).
fn target_of(path: &str) -> String {
    let parts: Vec<&str> = path.split("::").collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/github");
    match parts.as_slice() {
        ["github", layer, file, ..]
            if GITHUB_LAYERS.contains(layer)
                && root.join(layer).join(format!("{file}.rs")).is_file() =>
        {
            format!("github::{layer}::{file}")
        }
        [front @ ("github" | "cli"), sub, ..]
            if sub.chars().all(|c| c.is_ascii_lowercase() || c == '_') =>
        {
            format!("{front}::{sub}")
        }
        [top, ..] => top.to_string(),
        [] => String::new(),
    }
}

/// The code of a file without its `#[cfg(test)] mod tests` and comments, a
/// line each with its number in the file (1-based); a `use` that rustfmt
/// spread over several lines (`use super::{` … `};`) is joined into its
/// first line, so the names inside its braces are read too.
fn code_lines(text: &str) -> Vec<(usize, String)> {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    };
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open = false;
    for (i, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        match out.last_mut() {
            Some((_, stmt)) if open => {
                stmt.push(' ');
                stmt.push_str(code);
            }
            _ => out.push((i + 1, line.to_string())),
        }
        let last = out.last().expect("a line was pushed").1.trim_start();
        let last = ["pub(crate) ", "pub(super) ", "pub "]
            .iter()
            .find_map(|p| last.strip_prefix(p))
            .unwrap_or(last);
        open = last.starts_with("use ") && !last.contains(';');
    }
    out
}

/// Every `crate::` path on a line, `use crate::a::{b, c::d}` expanded.
fn crate_paths(line: &str) -> Vec<String> {
    paths_after(line, "crate::")
}

/// Every path after `prefix` (`crate::`, `super::`) on a line, use trees
/// expanded at any depth (`crate::a::{b, c::{d, e}}` → `a::b`, `a::c::d`,
/// `a::c::e`).
fn paths_after(line: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find(prefix) {
        rest = &rest[i + prefix.len()..];
        let used = use_tree(rest, "", &mut out);
        rest = &rest[used..];
    }
    out
}

/// Reads one use tree at the start of `text` (a path, then maybe `{…}` of
/// trees), pushing each whole path under `base`; returns the bytes read.
fn use_tree(text: &str, base: &str, out: &mut Vec<String>) -> usize {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(text.len());
    let path = text[..end].trim_end_matches(':');
    let whole = match (base.is_empty(), path.is_empty()) {
        (true, _) => path.to_string(),
        (false, true) => base.to_string(),
        (false, false) => format!("{base}::{path}"),
    };
    if !text[end..].starts_with('{') {
        if !whole.is_empty() {
            out.push(whole.strip_suffix("::self").unwrap_or(&whole).to_string());
        }
        return end;
    }
    let mut at = end + 1;
    loop {
        let skipped = text[at..].len() - text[at..].trim_start_matches([' ', ',']).len();
        at += skipped;
        match text[at..].chars().next() {
            None => return at,
            Some('}') => return at + 1,
            Some(_) => {
                let used = use_tree(&text[at..], &whole, out);
                // `self`, `*` or `x as y`: read past what is not a path.
                let more = text[at + used..]
                    .find([',', '}'])
                    .unwrap_or(text.len() - at - used);
                at += used + more;
            }
        }
    }
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
    rs_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// Every `.rs` file under `dir` but the ones that are not its crate's code
/// (`tests.rs`, this file).
fn rs_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
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
        // `super::x` names a sibling file: in `cli/`, `github/` and a
        // layer folder of `github/`.
        let dir = rel.parent().map(|d| d.to_string_lossy().replace('/', "::"));
        let front = dir.filter(|d| {
            d == "cli"
                || d == "github"
                || d.strip_prefix("github::")
                    .is_some_and(|l| GITHUB_LAYERS.contains(&l))
        });
        let siblings = siblings_of(&f);
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, line) in code_lines(&text) {
            let mut targets: Vec<String> =
                crate_paths(&line).iter().map(|p| target_of(p)).collect();
            if let Some(front) = &front {
                targets.extend(sibling_targets(front, &line, &siblings));
            }
            for to in targets {
                if to != from && !to.is_empty() {
                    out.insert((from.clone(), to, format!("src/{}:{n}", rel.display())));
                }
            }
        }
    }
    out
}

fn allowed(from: &str, to: &str) -> bool {
    // The most specific rule: `github::handlers::plan` before `github::handlers`.
    let rule = ALLOWED
        .iter()
        .filter(|(m, _)| *m == from || from.starts_with(&format!("{m}::")))
        .max_by_key(|(m, _)| m.len());
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

/// The rules of `src/github/` that hold whatever the lists say: a comment
/// handler uses no other handler and not the dispatcher; the executor, the
/// services and the layers below use no handler and no watch runner; the
/// REST client and the runtime I/O use nothing above them in `github`.
#[test]
fn handlers_stand_alone_and_the_layers_below_know_none() {
    let handler = |m: &str| m.starts_with("github::handlers::");
    let above = |m: &str| {
        m == "github::action" || m.starts_with("github::handlers") || m.starts_with("github::watch")
    };
    let below = |m: &str| m.starts_with("github::") && !above(m);
    let base = |m: &str| m.starts_with("github::rest::") || m.starts_with("github::actions::");
    let bad: Vec<String> = edges()
        .into_iter()
        .filter(|(from, to, _)| {
            (handler(from) && to.starts_with("github::handlers"))
                || (below(from) && above(to))
                || (base(from) && to.starts_with("github::") && !base(to))
        })
        .map(|(from, to, at)| format!("{at}: `{from}` must not use `{to}`"))
        .collect();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
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

/// The library crates (`crates/<dir>`, package `compute-bot-<dir>`) and the
/// other crates of the workspace each may depend on: the layering of
/// ARCHITECTURE.md ("Crates") for what Cargo holds. Units and the secret
/// are leaves; the sandbox knows the units and nothing else of the bot; the
/// policy knows the sandbox's plain types and the units, never a model or
/// GitHub; the model client knows the units and the secret its keys live
/// in, never the sandbox, the policy or GitHub.
const CRATES: &[(&str, &[&str])] = &[
    ("units", &[]),
    ("secret", &[]),
    ("sandbox", &["units"]),
    ("policy", &["sandbox", "units"]),
    ("model", &["secret", "units"]),
    ("github", &["policy", "secret", "units"]),
];

/// Whether [`CRATES`] lets the crate `from` use the crate `to`.
fn crate_may_use(from: &str, to: &str) -> bool {
    CRATES.iter().any(|(c, ok)| *c == from && ok.contains(&to))
}

/// The library crates' folders under `crates/`, sorted.
fn crate_dirs() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates");
    let mut dirs: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    dirs
}

/// The workspace crates (`compute-bot-*`, as `units`, `sandbox`) a
/// manifest names in any of its dependency tables.
fn workspace_deps(manifest: &str) -> BTreeSet<String> {
    let mut table = "";
    let mut out = BTreeSet::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            table = line;
        } else if table.ends_with("dependencies]")
            && let Some(name) = line.strip_prefix("compute-bot-")
        {
            let end = name
                .find(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_'))
                .unwrap_or(name.len());
            out.insert(name[..end].to_string());
        }
    }
    out
}

/// Every crate under `crates/` is in [`CRATES`] and depends on no other
/// crate of the workspace than its entry names (dev-dependencies included).
#[test]
fn the_crates_depend_only_on_the_crates_below_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates");
    let dirs = crate_dirs();
    for known in ["model", "policy", "sandbox", "secret", "units"] {
        assert!(dirs.iter().any(|d| d == known), "{known}: {dirs:?}");
    }
    let mut bad = Vec::new();
    for dir in &dirs {
        if !CRATES.iter().any(|(c, _)| c == dir) {
            bad.push(format!(
                "crates/{dir}: not in CRATES (name what it may use)"
            ));
            continue;
        }
        let manifest = std::fs::read_to_string(root.join(dir).join("Cargo.toml")).unwrap();
        for dep in workspace_deps(&manifest) {
            if !crate_may_use(dir, &dep) {
                bad.push(format!("crates/{dir} must not depend on compute-bot-{dep}"));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The plain data the policy's crate carries for the bot too (`located`: a
/// problem in a user's file; `sources`: the `github:` syntax) are leaves
/// inside that crate: they name no other module of it (no `crate::` path
/// outside their tests), as when they were modules of `src/` with nothing
/// allowed.
#[test]
fn the_plain_data_the_policy_carries_uses_nothing_of_its_crate() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/policy/src");
    let mut bad = Vec::new();
    for leaf in ["located", "sources"] {
        let file = src.join(format!("{leaf}.rs"));
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in code_lines(&text) {
            for path in crate_paths(&line) {
                bad.push(format!(
                    "crates/policy/src/{leaf}.rs:{n}: `{leaf}` must not use `crate::{path}`"
                ));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Only the Docker backend knows the engine's client: everything else goes
/// through `sandbox::Executor` (ARCHITECTURE.md, "Sandbox backends"). The
/// bot (src/) has bollard only as a dev-dependency (the sandbox tests look
/// at the engine), so its code is read here too, with every crate's.
#[test]
fn bollard_is_used_only_by_the_docker_backend() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let backend = root.join("crates/sandbox/src/docker");
    assert!(backend.join("mod.rs").is_file(), "{}", backend.display());
    let mut files = source_files();
    for dir in crate_dirs() {
        files.extend(rs_files(&root.join("crates").join(dir).join("src")));
    }
    let mut bad = Vec::new();
    for f in files {
        if f.starts_with(&backend) {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, line) in text.lines().enumerate() {
            if !line.trim_start().starts_with("//") && line.contains("bollard") {
                let rel = f.strip_prefix(root).unwrap();
                bad.push(format!("{}:{}: {}", rel.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "bollard outside crates/sandbox/src/docker/ (go through sandbox::Executor):\n{}",
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
    assert_eq!(module_of(Path::new("agent/session.rs")), "agent");
    assert_eq!(module_of(Path::new("cli/answer.rs")), "cli::answer");
    assert_eq!(target_of("cli::run::read_code"), "cli::run");
    let siblings: BTreeSet<String> = ["run".to_string(), "answer".to_string()].into();
    assert_eq!(
        sibling_targets("cli", "use super::run::{read_code, usage};", &siblings),
        vec!["cli::run", "cli::run"]
    );
    assert!(sibling_targets("cli", "use super::{Format, RunArgs};", &siblings).is_empty());
    assert!(!allowed("render", "github::rest"));
    assert!(!allowed("render", "github::texts"));
    // The sandbox and the policy are crates now (their own edges are
    // `CRATES`'): no rule of src/ lets them use anything, and the bot's
    // modules still name them.
    assert!(!allowed("sandbox", "policy"));
    assert!(!allowed("policy", "sandbox"));
    assert!(allowed("admit", "sandbox"));
    assert!(allowed("admit", "policy"));
    assert!(crate_may_use("policy", "sandbox"));
    assert!(!crate_may_use("sandbox", "policy"));
    // The model's crate: its own rule is gone from src/ with it.
    assert!(!allowed("model", "secret"));
    assert!(allowed("prompt", "model"));
    assert!(crate_may_use("model", "secret"));
    assert!(!crate_may_use("model", "policy") && !crate_may_use("policy", "model"));
    assert_eq!(
        workspace_deps(
            "[dependencies]\ncompute-bot-units.workspace = true\nserde = \"1\"\n\
             [dev-dependencies]\ncompute-bot-model = { path = \"../model\" }\n\
             [package]\ncompute-bot-x = 1\n"
        ),
        BTreeSet::from(["units".to_string(), "model".to_string()])
    );
    assert!(!allowed("github::execute", "github::action"));
    assert!(allowed("cli", "github::action"));
}

#[test]
fn use_trees_are_read_at_any_depth_and_over_lines() {
    assert_eq!(
        paths_after("use crate::a::{b, c::{d, e as f}, self};", "crate::"),
        ["a::b", "a::c::d", "a::c::e", "a"]
    );
    assert_eq!(
        paths_after("x(crate::a::b::f(), super::c);", "crate::"),
        ["a::b::f"]
    );
    let text = "// crate::skipped\nuse super::{\n    run_cells,\n    Format,\n};\nfn f() {}\n";
    let lines = code_lines(text);
    assert_eq!(lines[0].0, 2, "numbered as in the file, comments skipped");
    assert_eq!(paths_after(&lines[0].1, "super::"), ["run_cells", "Format"]);
    assert_eq!(lines[1], (6, "fn f() {}".to_string()));
}
