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
