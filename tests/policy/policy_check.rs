//! Targeted checks of findings: positions, severities, escalation mapping,
//! snippets, and the runtime rules handed to the sandbox.

use compute_bot::policy::{Decision, Policy, RuleId, Severity, check_code};

fn policy_with(yaml: &str) -> Policy {
    Policy::from_yaml_str(yaml, "inline.yml").unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn positions_are_one_based_lines_and_character_columns() {
    let code = "x = 'é'\r\ny = 'ü'; import os; os.system('id')\n";
    let v = check_code(&Policy::default(), code);
    let f = v.findings.iter().find(|f| f.rule == "process").unwrap();
    // characters, not bytes: `y = 'ü'; import os; ` is 20 characters
    assert_eq!((f.line, f.column), (2, 21), "{f:?}");
    assert_eq!(f.snippet, "y = 'ü'; import os; os.system('id')");
    assert_eq!(f.severity, Severity::Deny);
}

#[test]
fn long_lines_are_cut_in_snippets() {
    let code = format!("eval('{}')\n", "x".repeat(500));
    let v = check_code(&Policy::default(), &code);
    let f = &v.findings[0];
    assert!(f.snippet.chars().count() <= 161, "{}", f.snippet.len());
    assert!(f.snippet.ends_with('…'));
}

#[test]
fn unknown_write_paths_are_informational() {
    let code = "def save(path):\n    with open(path, 'w') as fh:\n        fh.write('x')\n";
    let v = check_code(&Policy::default(), code);
    assert_eq!(v.decision, Decision::Allow, "{:?}", v.findings);
    assert_eq!(v.findings.len(), 1);
    assert_eq!(v.findings[0].rule, "open-write-unknown-path");
    assert_eq!(v.findings[0].severity, Severity::Info);
}

#[test]
fn escalation_is_per_rule_and_deny_wins() {
    let p = policy_with("code:\n  escalate: [eval-exec]\n");
    let v = check_code(&p, "eval('1')\n");
    assert_eq!(v.decision, Decision::Escalate);
    assert_eq!(v.findings[0].severity, Severity::Escalate);
    let v = check_code(&p, "eval('1')\nimport subprocess\n");
    assert_eq!(v.decision, Decision::Deny);
    let p = policy_with("code:\n  escalate_unknown_imports: true\n");
    let v = check_code(&p, "import sympy\n");
    assert_eq!(v.decision, Decision::Escalate);
    assert!(v.findings[0].message.contains("approv"), "{:?}", v.findings);
    // syntax errors never escalate, whatever the policy says about imports
    let v = check_code(&p, "import sympy\nx = (\n");
    assert_eq!(v.decision, Decision::Deny);
}

#[test]
fn policy_lists_extend_the_builtin_rules() {
    let p = policy_with(
        "code:\n  deny_calls: [numpy.random.seed, print]\n  deny_modules: [statistics]\n",
    );
    let v = check_code(&p, "import numpy as np\nnp.random.seed(1)\n");
    assert_eq!(v.findings[0].rule, "call-denied");
    let v = check_code(&p, "print('x')\n");
    assert_eq!(v.findings[0].rule, "call-denied");
    let v = check_code(&p, "import statistics\n");
    assert_eq!(v.findings[0].rule, "import-denied");
    // an empty deny list does not switch the built-in families off
    let p = policy_with(
        "code:\n  deny_calls: []\n  deny_modules: []\n  allow_imports: [os, subprocess]\n",
    );
    let v = check_code(&p, "import subprocess\nimport os\nos.system('x')\n");
    assert_eq!(v.decision, Decision::Deny);
    assert!(
        v.findings.iter().all(|f| f.rule == "process"),
        "{:?}",
        v.findings
    );
}

#[test]
fn findings_are_in_source_order_without_duplicates() {
    let v = check_code(
        &Policy::default(),
        "import subprocess\nsubprocess.run(['a'])\nsubprocess.run(['b'])\n",
    );
    let lines: Vec<u32> = v.findings.iter().map(|f| f.line).collect();
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(lines, sorted);
    let mut keys: Vec<_> = v
        .findings
        .iter()
        .map(|f| (f.rule.clone(), f.line, f.column))
        .collect();
    keys.dedup();
    assert_eq!(keys.len(), v.findings.len());
}

#[test]
fn every_rule_id_has_a_stable_string() {
    let ids: Vec<&str> = RuleId::ALL.iter().map(|r| r.as_str()).collect();
    for id in &ids {
        assert!(
            id.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
            "{id}"
        );
        // and the docs list it
        let docs = include_str!("../../docs/policy.md");
        assert!(
            docs.contains(&format!("| `{id}` |")),
            "{id} missing from the rule table"
        );
    }
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len());
}

#[test]
fn limits_and_image_come_from_the_policy() {
    let p = policy_with("sandbox:\n  image: img@sha256:abc\n  timeout: 1500ms\n  memory: 128MiB\n");
    assert_eq!(p.image(), "img@sha256:abc");
    assert_eq!(p.limits().timeout.as_millis(), 1500);
    assert_eq!(p.limits().memory.bytes(), 128 << 20);
    let yaml = p.to_effective_yaml();
    assert!(yaml.contains("timeout: 1500ms"), "{yaml}");
    assert!(yaml.contains("memory: 128MiB"), "{yaml}");
}

#[test]
fn traversal_after_an_interpolation_is_not_trusted() {
    let code = "name = input_name()\nopen(f'/out/{name}/../../etc/x', 'w')\n";
    let v = check_code(&Policy::default(), code);
    assert_eq!(v.findings.len(), 1, "{:?}", v.findings);
    assert_eq!(v.findings[0].rule, "open-write-unknown-path");
    let v = check_code(&Policy::default(), "open(f'/out/{n}.csv', 'w')\n");
    assert!(v.findings.is_empty(), "{:?}", v.findings);
}

#[test]
fn reading_literal_paths_outside_the_data_directories_is_denied_with_positions() {
    let code = "import pathlib\nx = open('/etc/shadow').read()\ny = open('/root/.bashrc')\nz = pathlib.Path('/etc/passwd').read_text()\nok = open('/data/in.csv').read() + open('notes.txt').read()\n";
    let v = check_code(&Policy::default(), code);
    assert_eq!(v.decision, Decision::Deny, "{:?}", v.findings);
    let reads: Vec<_> = v
        .findings
        .iter()
        .filter(|f| f.rule == "open-read-outside")
        .collect();
    assert_eq!(reads.len(), 3, "{:?}", v.findings);
    assert_eq!((reads[0].line, reads[0].column), (2, 10));
    assert_eq!((reads[1].line, reads[1].column), (3, 10));
    assert_eq!((reads[2].line, reads[2].column), (4, 18));
    assert!(
        reads[0].message.contains("/etc/shadow"),
        "{}",
        reads[0].message
    );
    assert!(reads[0].message.contains("/data/"), "{}", reads[0].message);
    assert!(reads[0].message.contains("input"), "{}", reads[0].message);
    assert_eq!(reads[0].severity, Severity::Deny);
}

#[test]
fn the_imports_are_known_to_the_verdict_but_not_written_to_reports() {
    let v = check_code(&Policy::default(), "import pandas as pd\nimport json\n");
    assert_eq!(v.imports(), ["pandas", "json"]);
    let json = serde_json::to_value(&v).unwrap();
    assert!(json.get("imports").is_none(), "{json}");
    let back: compute_bot::policy::Verdict = serde_json::from_value(json).unwrap();
    assert!(back.imports().is_empty());
    assert_eq!(back.decision, v.decision);
}
