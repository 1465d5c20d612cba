//! Runs every snippet in `tests/policy_corpus/` through the checker and
//! reports every mismatch with its expected verdict and rule.
//!
//! Each snippet starts with `# expect: allow`, `# expect: deny RULE` or
//! `# expect: escalate RULE`, optionally followed by `# policy: NAME`
//! (a file in `policies/`, default `default`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use compute_bot::policy::{Decision, Policy, Severity, check_code};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

struct Case {
    name: String,
    decision: Decision,
    rule: Option<String>,
    policy: String,
    code: String,
}

fn load_cases() -> Vec<Case> {
    let dir = root().join("tests/policy_corpus");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("corpus directory")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    paths.sort();
    paths.iter().map(|p| parse_case(p)).collect()
}

fn parse_case(path: &Path) -> Case {
    let code = std::fs::read_to_string(path).expect("read snippet");
    let name = path.file_stem().unwrap().to_string_lossy().into_owned();
    let mut lines = code.lines();
    let expect = lines
        .next()
        .and_then(|l| l.strip_prefix("# expect: "))
        .unwrap_or_else(|| panic!("{name}: first line must be `# expect: ...`"));
    let mut words = expect.split_whitespace();
    let decision = match words.next() {
        Some("allow") => Decision::Allow,
        Some("deny") => Decision::Deny,
        Some("escalate") => Decision::Escalate,
        other => panic!("{name}: unknown decision {other:?}"),
    };
    let rule = words.next().map(str::to_string);
    assert!(
        decision == Decision::Allow || rule.is_some(),
        "{name}: deny/escalate needs a rule id"
    );
    let policy = lines
        .next()
        .and_then(|l| l.strip_prefix("# policy: "))
        .unwrap_or("default")
        .trim()
        .to_string();
    Case {
        name,
        decision,
        rule,
        policy,
        code,
    }
}

#[test]
fn corpus_matches_expected_verdicts() {
    let cases = load_cases();
    assert!(cases.len() >= 80, "only {} snippets", cases.len());
    let mut policies: HashMap<String, Policy> = HashMap::new();
    let mut mismatches = Vec::new();
    let (mut allowed, mut refused) = (0, 0);
    for case in &cases {
        let policy = policies.entry(case.policy.clone()).or_insert_with(|| {
            Policy::load(&root().join(format!("policies/{}.yml", case.policy)))
                .unwrap_or_else(|e| panic!("{e}"))
        });
        let verdict = check_code(policy, &case.code);
        let want_severity = match case.decision {
            Decision::Allow => None,
            Decision::Deny => Some(Severity::Deny),
            Decision::Escalate => Some(Severity::Escalate),
        };
        let rule_ok = match (&case.rule, want_severity) {
            (Some(rule), Some(sev)) => verdict
                .findings
                .iter()
                .any(|f| &f.rule == rule && f.severity == sev),
            _ => true,
        };
        if std::env::var_os("POLICY_CORPUS_VERBOSE").is_some() {
            println!("== {} ({:?})", case.name, verdict.decision);
            for f in &verdict.findings {
                println!(
                    "   {}:{} {} {:?}: {}",
                    f.line, f.column, f.rule, f.severity, f.message
                );
            }
        }
        if case.decision == Decision::Allow {
            allowed += 1;
        } else {
            refused += 1;
        }
        if verdict.decision != case.decision || !rule_ok {
            let got: Vec<String> = verdict
                .findings
                .iter()
                .map(|f| {
                    format!(
                        "{}:{} {} {:?}: {}",
                        f.line, f.column, f.rule, f.severity, f.message
                    )
                })
                .collect();
            mismatches.push(format!(
                "{}: expected {:?} {}, got {:?}\n    {}",
                case.name,
                case.decision,
                case.rule.as_deref().unwrap_or(""),
                verdict.decision,
                got.join("\n    ")
            ));
        }
    }
    assert!(
        allowed >= 30 && refused >= 50,
        "allowed {allowed}, refused {refused}"
    );
    assert!(
        mismatches.is_empty(),
        "{} of {} snippets mismatched:\n{}",
        mismatches.len(),
        cases.len(),
        mismatches.join("\n")
    );
}

/// The programs `scripts/bench-analysis` runs (`benches/analysis/<id>.py`, one
/// per public DABench question; the data itself is held out and never read
/// here) are written as a model writes analysis code: pandas, scipy.stats,
/// statsmodels, scikit-learn. The built-in policy (what `compute-bot run
/// --code` checks against) must allow every one of them.
#[test]
fn analysis_bench_programs_pass_the_default_policy() {
    let dir = root().join("benches/analysis");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("benches/analysis")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 60, "only {} programs", paths.len());
    let policy = Policy::default();
    let mut stack = 0;
    let mut refused = Vec::new();
    for path in &paths {
        let code = std::fs::read_to_string(path).expect("read program");
        if ["scipy", "statsmodels", "sklearn"]
            .iter()
            .any(|m| code.contains(&format!("import {m}")) || code.contains(&format!("from {m}")))
        {
            stack += 1;
        }
        let verdict = check_code(&policy, &code);
        if verdict.decision != Decision::Allow {
            let why: Vec<String> = verdict
                .findings
                .iter()
                .map(|f| format!("{}:{} {}: {}", f.line, f.column, f.rule, f.message))
                .collect();
            refused.push(format!(
                "{}: {:?}\n    {}",
                path.display(),
                verdict.decision,
                why.join("\n    ")
            ));
        }
    }
    assert!(
        stack >= 30,
        "only {stack} programs use scipy/statsmodels/sklearn"
    );
    assert!(
        refused.is_empty(),
        "{} of {} programs refused:\n{}",
        refused.len(),
        paths.len(),
        refused.join("\n")
    );
}

/// The `.py` files of a folder under the crate root, sorted.
fn programs_in(folder: &str) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(root().join(folder))
        .unwrap_or_else(|e| panic!("{folder}: {e}"))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    paths.sort();
    paths
}

/// One line per finding, for assertion messages.
fn findings_of(verdict: &compute_bot::policy::Verdict) -> String {
    verdict
        .findings
        .iter()
        .map(|f| format!("{}:{} {}: {}", f.line, f.column, f.rule, f.message))
        .collect::<Vec<_>>()
        .join("\n    ")
}

/// The hostile programs of `tests/policy_routes/` (issue 30): each reaches a
/// forbidden operation through an allowed library — attribute access by
/// string, `**`-dict keywords, library loaders that unpickle, helpers that
/// run programs or hand out native handles, modules reached through
/// attributes, private modules, descriptor operations. Each is refused by
/// the built-in policy with the rule its first line names, on the line
/// marked `# refused here`, with a message that says what to do instead.
#[test]
fn library_routes_are_refused_with_their_rule_on_their_line() {
    let paths = programs_in("tests/policy_routes");
    assert!(paths.len() >= 50, "only {} routes", paths.len());
    let policy = Policy::default();
    let mut missed = Vec::new();
    for path in &paths {
        let case = parse_case(path);
        let line = case
            .code
            .lines()
            .position(|l| l.contains("# refused here"))
            .map(|i| i as u32)
            .unwrap_or_else(|| panic!("{}: no line marked `# refused here`", case.name))
            + 1;
        let rule = case.rule.clone().expect("a route names its rule");
        let verdict = check_code(&policy, &case.code);
        let found = verdict
            .findings
            .iter()
            .find(|f| f.rule == rule && f.line == line && f.severity == Severity::Deny);
        match found {
            Some(f) if f.message.len() > 40 => {}
            _ => missed.push(format!(
                "{}: expected {rule} on line {line}, got {:?}\n    {}",
                case.name,
                verdict.decision,
                findings_of(&verdict)
            )),
        }
    }
    assert!(
        missed.is_empty(),
        "{} of {} routes not refused as expected:\n{}",
        missed.len(),
        paths.len(),
        missed.join("\n")
    );
}

/// Natural analysis code (`tests/policy_natural/`: matplotlib, seaborn,
/// statsmodels, scikit-learn, SciPy, DuckDB, format strings, `**` keyword
/// dicts, `os.fsync` of a file the code opened) passes the built-in policy:
/// the rules that refuse the routes above refuse none of it.
#[test]
fn natural_analysis_code_passes_the_default_policy() {
    let paths = programs_in("tests/policy_natural");
    assert!(paths.len() >= 25, "only {} programs", paths.len());
    let policy = Policy::default();
    let refused: Vec<String> = paths
        .iter()
        .filter_map(|path| {
            let code = std::fs::read_to_string(path).expect("read program");
            let verdict = check_code(&policy, &code);
            (verdict.decision != Decision::Allow)
                .then(|| format!("{}:\n    {}", path.display(), findings_of(&verdict)))
        })
        .collect();
    assert!(
        refused.is_empty(),
        "{} of {} programs refused:\n{}",
        refused.len(),
        paths.len(),
        refused.join("\n")
    );
}

/// A gzip file's members' bytes (RFC 1952: header, raw deflate, trailer).
fn gunzip(bytes: &[u8]) -> Vec<u8> {
    assert!(
        bytes.len() > 18 && bytes[..3] == [0x1f, 0x8b, 8],
        "not gzip"
    );
    let flags = bytes[3];
    let mut at = 10;
    if flags & 4 != 0 {
        at += 2 + usize::from(u16::from_le_bytes([bytes[at], bytes[at + 1]]));
    }
    for bit in [8u8, 16] {
        if flags & bit != 0 {
            at += bytes[at..]
                .iter()
                .position(|b| *b == 0)
                .expect("terminated")
                + 1;
        }
    }
    if flags & 2 != 0 {
        at += 2;
    }
    miniz_oxide::inflate::decompress_to_vec(&bytes[at..]).expect("inflate")
}

/// The held-out PandasEval and NumpyEval programs (prompt, reference
/// solution, test, call — as their harness runs them) pass the built-in
/// policy. They are held out of this repository: the test reads them from
/// `COMPUTE_BOT_HELDOUT` (the folder holding `ds/pandas-numpy-eval/`) and
/// says it skipped when the variable is not set.
#[test]
fn heldout_pandas_numpy_eval_programs_pass_the_default_policy() {
    let Some(dir) = std::env::var_os("COMPUTE_BOT_HELDOUT") else {
        eprintln!("skipped: COMPUTE_BOT_HELDOUT is not set");
        return;
    };
    let dir = PathBuf::from(dir).join("ds/pandas-numpy-eval");
    let policy = Policy::default();
    let (mut total, mut unparsed, mut refused) = (0, 0, Vec::new());
    for file in ["PandasEval.jsonl.gz", "NumpyEval.jsonl.gz"] {
        let text = gunzip(&std::fs::read(dir.join(file)).expect("read the held-out file"));
        for line in String::from_utf8(text).expect("utf-8").lines() {
            let task: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            let s = |k: &str| task[k].as_str().unwrap_or_default().to_string();
            let entry = s("entry_point");
            let call = if entry == "none" {
                "check()".to_string()
            } else {
                format!("check({entry})")
            };
            let program = format!(
                "{}{}\n{}\n{call}",
                s("prompt"),
                task["canonical_solution"][0].as_str().unwrap_or_default(),
                s("test")
            );
            total += 1;
            let verdict = check_code(&policy, &program);
            // A reference solution that does not parse (upstream's own
            // broken items) says nothing about the rules.
            if verdict.findings.iter().any(|f| f.rule == "syntax-error") {
                unparsed += 1;
            } else if verdict.decision != Decision::Allow {
                refused.push(format!("{}:\n    {}", s("task_id"), findings_of(&verdict)));
            }
        }
    }
    eprintln!(
        "{} of {total} held-out programs refused ({unparsed} do not parse as upstream wrote them)",
        refused.len()
    );
    assert!(total >= 200, "only {total} programs");
    assert!(
        refused.is_empty(),
        "{} of {total} refused:\n{}",
        refused.len(),
        refused.join("\n")
    );
}
