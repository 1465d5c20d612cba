//! Policy file parsing: every error carries the line and column of the
//! offending key or value, the bundled policies load, defaults are safe.

use std::path::PathBuf;
use std::time::Duration;

use compute_bot::policy::{Permission, Policy, PolicyError, RuleId};
use compute_bot::sandbox::{DEFAULT_IMAGE, Limits};
use compute_bot::units::ByteSize;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn err(src: &str) -> PolicyError {
    match Policy::from_yaml_str(src, "test.yml") {
        Ok(p) => panic!("expected an error for:\n{src}\ngot {p:?}"),
        Err(e) => e,
    }
}

fn assert_at(e: &PolicyError, line: u64, column: u64, needle: &str) {
    assert_eq!(
        (e.line, e.column),
        (line, column),
        "wrong position in `{e}`"
    );
    assert!(e.message.contains(needle), "`{e}` lacks `{needle}`");
    assert!(
        e.to_string()
            .starts_with(&format!("test.yml:{line}:{column}: ")),
        "`{e}` is not file:line:column: message"
    );
}

#[test]
fn unknown_key_reports_its_position() {
    let e = err("version: 1\nsandbox:\n  timeout: 5s\n  netwrk: none\n");
    assert_at(&e, 4, 3, "unknown field `netwrk`");
    let e = err("sandbox:\n  data_max_bytes: 1GiB\n");
    assert_at(&e, 2, 3, "inputs.max_total_bytes");
    let e = err("version: 1\nwhom:\n  users: []\n");
    assert_at(&e, 2, 1, "unknown field `whom`");
}

#[test]
fn wrong_type_reports_its_position() {
    let e = err("who:\n  allow_bots: sometimes\n");
    assert_eq!((e.line, e.column), (2, 15), "{e}");
    let e = err("code:\n  allow_imports: pandas\n");
    assert_eq!((e.line, e.column), (2, 18), "{e}");
    let e = err("attempts: many\n");
    assert_at(&e, 1, 11, "not a number");
}

#[test]
fn explain_is_a_switch_or_a_section_with_its_timeout() {
    let p = Policy::from_yaml_str("explain: false\n", "test.yml").unwrap();
    assert!(!p.explain.enabled);
    assert_eq!(p.explain.timeout, Duration::from_secs(45));
    let p = Policy::from_yaml_str("explain:\n  timeout: 90s\n", "test.yml").unwrap();
    assert!(p.explain.enabled);
    assert_eq!(p.explain.timeout, Duration::from_secs(90));
    let p = Policy::from_yaml_str(
        "explain:\n  enabled: false\n  timeout: 1500ms\n",
        "test.yml",
    )
    .unwrap();
    assert!(!p.explain.enabled);
    assert_eq!(p.explain.timeout, Duration::from_millis(1500));
    // The effective policy reads back the same.
    let again = Policy::from_yaml_str(&p.to_effective_yaml(), "effective.yml").unwrap();
    assert_eq!(again.explain, p.explain);
    let e = err("explain:\n  timeout: 2h\n");
    assert_at(&e, 2, 12, "explain.timeout `7200s` is out of range");
    let e = err("explain:\n  timout: 20s\n");
    assert_at(&e, 2, 3, "unknown field `timout`");
    let e = err("explain: sometimes\n");
    assert!(e.message.contains("`true`, `false` or a section"), "{e}");
}

#[test]
fn explain_post_after_is_a_duration_in_range_and_reads_back() {
    let p = Policy::from_yaml_str("explain: true\n", "test.yml").unwrap();
    assert_eq!(p.explain.post_after, Duration::from_secs(10));
    let p = Policy::from_yaml_str("explain:\n  post_after: 3s\n", "test.yml").unwrap();
    assert_eq!(p.explain.post_after, Duration::from_secs(3));
    let again = Policy::from_yaml_str(&p.to_effective_yaml(), "effective.yml").unwrap();
    assert_eq!(again.explain, p.explain);
    let e = err("explain:\n  post_after: 0s\n");
    assert_at(&e, 2, 15, "explain.post_after `0s` is out of range");
    let e = err("explain:\n  post_after: 11m\n");
    assert!(e.message.contains("explain.post_after"), "{e}");
}

#[test]
fn bad_size_reports_its_position() {
    let e = err("sandbox:\n  memory: 12 parsecs\n");
    assert_at(&e, 2, 11, "unknown unit `parsecs`");
    let e = err("inputs:\n  max_file_bytes: lots\n");
    assert_at(&e, 2, 19, "not a size");
}

#[test]
fn bad_duration_reports_its_position() {
    let e = err("version: 1\nsandbox:\n  timeout: 10 fortnights\n");
    assert_at(&e, 3, 12, "unknown unit `fortnights`");
}

#[test]
fn duplicate_key_reports_the_second_occurrence() {
    let e = err("who:\n  allow_bots: false\n  allow_bots: true\n");
    assert_at(&e, 3, 3, "duplicate");
    let e = err("attempts: 2\nattempts: 3\n");
    assert_at(&e, 2, 1, "duplicate");
    let e = err("sandbox:\n  cpus: 1\n  cpus: 2\n");
    assert_at(&e, 3, 3, "duplicate");
}

#[test]
fn network_other_than_none_is_refused_with_the_reason() {
    let e = err("sandbox:\n  network: bridge\n");
    assert_at(&e, 2, 12, "only `none` is accepted");
    assert!(e.message.contains("network: none"), "{e}");
    let e = err("sandbox:\n  network: host\n");
    assert_at(&e, 2, 12, "`host` is not supported");
}

#[test]
fn out_of_range_values_report_their_position() {
    assert_at(&err("attempts: 0\n"), 1, 11, "from 1 to 10");
    assert_at(&err("attempts: 11\n"), 1, 11, "from 1 to 10");
    assert_at(&err("sandbox:\n  cpus: 0\n"), 2, 9, "cpus");
    assert_at(&err("sandbox:\n  pids: 100000\n"), 2, 9, "pids");
    assert_at(
        &err("sandbox:\n  timeout: 50ms\n"),
        2,
        12,
        "from 100ms to 10m",
    );
    assert_at(
        &err("sandbox:\n  timeout: 11m\n"),
        2,
        12,
        "from 100ms to 10m",
    );
    assert_at(
        &err("sandbox:\n  memory: 8MiB\n"),
        2,
        11,
        "from 16MiB to 16GiB",
    );
    assert_at(
        &err("sandbox:\n  memory: 17GiB\n"),
        2,
        11,
        "from 16MiB to 16GiB",
    );
    assert_at(&err("code:\n  max_bytes: 2MiB\n"), 2, 14, "at most 1MiB");
    assert_at(&err("version: 2\n"), 1, 10, "version: 1");
}

#[test]
fn allowlist_patterns_and_rule_ids_are_validated() {
    assert_at(
        &err("code:\n  allow_imports: ['*']\n"),
        2,
        18,
        "meaningless",
    );
    assert_at(
        &err("code:\n  allow_imports: ['os path']\n"),
        2,
        18,
        "not a module pattern",
    );
    assert_at(
        &err("code:\n  escalate: [syntax-error]\n"),
        2,
        13,
        "cannot escalate",
    );
    assert_at(
        &err("code:\n  escalate: [bogus]\n"),
        2,
        14,
        "unknown variant `bogus`",
    );
    assert_at(
        &err("who:\n  min_permission: god\n"),
        2,
        19,
        "unknown variant `god`",
    );
    // `none` is a level a user can have, never a minimum a policy can set.
    assert_at(
        &err("escalation:\n  min_permission: none\n"),
        2,
        19,
        "unknown variant `none`",
    );
    assert_at(
        &err("inputs:\n  allow: ['a[']\n"),
        2,
        10,
        "not a valid glob",
    );
}

#[test]
fn empty_file_is_the_default_policy() {
    assert_eq!(
        Policy::from_yaml_str("", "x.yml").unwrap(),
        Policy::default()
    );
    assert_eq!(
        Policy::from_yaml_str("# only a comment\n", "x.yml").unwrap(),
        Policy::default()
    );
    assert_eq!(
        Policy::from_yaml_str("version: 1\n", "x.yml").unwrap(),
        Policy::default()
    );
}

#[test]
fn defaults_are_safe() {
    let p = Policy::default();
    assert_eq!(p.who.min_permission, Permission::Write);
    assert!(!p.who.allow_bots);
    assert!(!p.who.allow_edited_comments);
    assert_eq!(p.escalation.min_permission, Permission::Maintain);
    assert_eq!(p.image(), DEFAULT_IMAGE);
    assert_eq!(p.limits(), Limits::default());
    assert_eq!(p.attempts.get(), 3);
    assert!(p.explain.enabled);
    assert_eq!(p.explain.timeout, Duration::from_secs(45));
    assert_eq!(p.code.max_bytes, ByteSize::kib(64));
    assert_eq!(p.inputs.max_file_bytes, ByteSize::mib(16));
    assert_eq!(p.inputs.max_total_bytes, ByteSize::mib(64));
    assert_eq!(p.output.schema, serde_json::json!({"type": "object"}));
    assert!(p.code.escalate.is_empty() && !p.code.escalate_unknown_imports);
    assert!(p.inputs.is_allowed("data/sales.csv"));
    assert!(p.inputs.is_allowed("x.json"));
    // the files data people keep (issue 17)
    assert!(p.inputs.is_allowed("data/sales.parquet"));
    assert!(p.inputs.is_allowed("reports/q3.xlsx"));
    assert!(!p.inputs.is_allowed("data/sales.parquet.py"));
    assert!(!p.inputs.is_allowed("../secrets.csv"));
    assert!(!p.inputs.is_allowed("/etc/passwd.txt"));
    assert!(!p.inputs.is_allowed(".env"));
}

#[test]
fn default_yml_is_policy_default() {
    let p = Policy::load(&root().join("policies/default.yml")).unwrap();
    let d = Policy {
        origin: p.origin.clone(),
        ..Policy::default()
    };
    assert_eq!(p, d);
}

#[test]
fn bundled_policies_load_with_their_intent() {
    let strict = Policy::load(&root().join("policies/strict.yml")).unwrap();
    assert_eq!(strict.limits().timeout, Duration::from_secs(2));
    assert_eq!(strict.limits().memory, ByteSize::mib(64));
    assert!(
        !strict
            .code
            .allow_imports
            .iter()
            .any(|m| m.starts_with("pandas"))
    );
    // strict reads CSV and JSON only (its code may not import pandas)
    assert!(!strict.inputs.is_allowed("data/x.parquet"));
    let esc = Policy::load(&root().join("policies/escalate.yml")).unwrap();
    assert!(esc.inputs.is_allowed("data/x.parquet"));
    // the policy `compute-bot init` writes admits the data files under data/
    let example = Policy::load(&root().join("examples/compute-bot.yml")).unwrap();
    for path in [
        "data/sales.csv",
        "data/2026/sales.parquet",
        "data/book.xlsx",
    ] {
        assert!(example.inputs.is_allowed(path), "{path}");
    }
    assert!(!example.inputs.is_allowed("elsewhere/sales.parquet"));

    assert!(esc.code.escalates(RuleId::ImportNotAllowed));
    assert!(!esc.code.escalates(RuleId::Process));
    // escalate.yml leaves deny_modules at the default
    assert_eq!(esc.code.deny_modules, Policy::default().code.deny_modules);
}

#[test]
fn effective_yaml_round_trips() {
    for name in ["default", "strict", "escalate"] {
        let p = Policy::load(&root().join(format!("policies/{name}.yml"))).unwrap();
        let yaml = p.to_effective_yaml();
        assert!(yaml.contains("network: none"), "{yaml}");
        let mut again = Policy::from_yaml_str(&yaml, "effective.yml")
            .unwrap_or_else(|e| panic!("{name}: {e}\n{yaml}"));
        again.origin = p.origin.clone();
        assert_eq!(again, p, "{name}");
    }
}

#[test]
fn output_schema_may_be_a_path_relative_to_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("schema.json"),
        r#"{"type": "object", "required": ["answer"]}"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("p.yml"),
        "version: 1\noutput:\n  schema: schema.json\n",
    )
    .unwrap();
    let p = Policy::load(&dir.path().join("p.yml")).unwrap();
    assert_eq!(
        p.output.schema,
        serde_json::json!({"type": "object", "required": ["answer"]})
    );
    std::fs::write(
        dir.path().join("q.yml"),
        "version: 1\noutput:\n  schema: missing.json\n",
    )
    .unwrap();
    let e = Policy::load(&dir.path().join("q.yml")).unwrap_err();
    assert_eq!((e.line, e.column), (3, 3), "{e}");
    assert!(e.message.contains("cannot read output schema"), "{e}");
}

#[test]
fn runtime_rules_carry_the_denied_modules_and_refusals() {
    let rules = Policy::default().runtime_rules();
    assert!(rules.restrict_files && rules.deny_subprocess && rules.deny_network);
    // The runner refuses these only when the code itself imports them, so
    // pandas may still load subprocess or socket internally (see tests/sandbox/sandbox.rs).
    for m in [
        "multiprocessing",
        "pty",
        "http",
        "requests",
        "asyncio",
        "runpy",
        "code",
        "subprocess",
        "socket",
        "ctypes",
    ] {
        assert!(rules.deny_imports.iter().any(|d| d == m), "{m} missing");
    }
    for m in ["os", "sys", "json", "pandas", "numpy"] {
        assert!(!rules.deny_imports.iter().any(|d| d == m), "{m} denied");
    }
    assert!(rules.deny_imports.iter().all(|d| !d.contains('.')));
}

#[test]
fn missing_file_names_the_path() {
    let e = Policy::load(&root().join("policies/nope.yml")).unwrap_err();
    assert!(e.to_string().contains("nope.yml: cannot read"), "{e}");
}

#[test]
fn flags_can_only_tighten_limits() {
    let strict = Policy::load(&root().join("policies/strict.yml")).unwrap();
    let requested = Limits {
        timeout: Duration::from_secs(60),
        memory: ByteSize::mib(32),
        ..Limits::default()
    };
    let (l, notes) = strict.tightened_limits(&requested);
    assert_eq!(l.timeout, Duration::from_secs(2));
    assert_eq!(l.memory, ByteSize::mib(32));
    assert!(
        notes
            .iter()
            .any(|n| n == "timeout: requested 60s, policy allows 2s"),
        "{notes:?}"
    );
    assert!(!notes.iter().any(|n| n.starts_with("memory")), "{notes:?}");
    let (same, none) = strict.tightened_limits(&strict.limits());
    assert_eq!(same, strict.limits());
    assert!(none.is_empty());
}

#[test]
fn permissions_order_and_parse_with_githubs_names() {
    assert!(Permission::Admin > Permission::Maintain);
    assert!(Permission::Maintain > Permission::Write);
    assert!(Permission::Write > Permission::Triage);
    assert!(Permission::Triage > Permission::Read);
    assert!(Permission::Read > Permission::None);
    for p in Permission::ALL {
        assert_eq!(p.as_str().parse::<Permission>().unwrap(), p);
    }
    assert!(
        "owner"
            .parse::<Permission>()
            .unwrap_err()
            .contains("maintain")
    );
}

#[test]
fn output_files_errors_report_their_position() {
    let e = err("output:\n  files:\n    branch: \"bad branch\"\n");
    assert_at(&e, 3, 13, "files branch `bad branch` cannot be used");
    let e = err("output:\n  files:\n    max_bytes: lots\n");
    assert_eq!(e.line, 3, "{e}");
    let e = err("output:\n  files:\n    brnch: x\n");
    assert_at(&e, 3, 5, "unknown field `brnch`");
    let p = Policy::from_yaml_str("output:\n  files:\n    branch: \"\"\n", "test.yml").unwrap();
    let yaml = p.to_effective_yaml();
    assert!(
        yaml.contains("branch: ''") || yaml.contains("branch: \"\""),
        "{yaml}"
    );
}

#[test]
fn an_unknown_github_source_is_named_at_its_position() {
    let e = err("version: 1\ninputs:\n  github: [pulls, revews]\n");
    assert_at(&e, 3, 19, "unknown variant `revews`");
    assert!(e.message.contains("workflow_runs"), "{e}");
    let ok = Policy::from_yaml_str(
        "version: 1\ninputs:\n  github: [pulls, reviews, issues, comments, workflow_runs]\n  github_max_items: 10\n  github_max_requests: 20\n",
        "p.yml",
    )
    .unwrap();
    assert!(ok.to_effective_yaml().contains("workflow_runs"));
}

#[test]
fn preload_cpus_is_host_or_cores_and_reads_back() {
    let p = Policy::from_yaml_str("sandbox:\n  cpus: 1\n", "test.yml").unwrap();
    assert_eq!(p.limits().preload_cpus, None, "every host CPU by default");
    let p = Policy::from_yaml_str("sandbox:\n  preload_cpus: 3\n", "test.yml").unwrap();
    assert_eq!(p.limits().preload_cpus, Some(3.0));
    let again = Policy::from_yaml_str(&p.to_effective_yaml(), "effective.yml").unwrap();
    assert_eq!(again.limits().preload_cpus, Some(3.0));
    let p = Policy::from_yaml_str("sandbox:\n  preload_cpus: host\n", "test.yml").unwrap();
    assert_eq!(p.limits().preload_cpus, None);
    assert!(p.to_effective_yaml().contains("preload_cpus: host"));
    let e = err("sandbox:\n  preload_cpus: all\n");
    assert_at(
        &e,
        2,
        17,
        "preload_cpus `all` is not understood; write `host`",
    );
    let e = err("sandbox:\n  preload_cpus: 0\n");
    assert_at(&e, 2, 17, "preload_cpus `0` is out of range");
}

#[test]
fn session_settings_default_and_errors_name_the_field() {
    let p = Policy::default();
    assert_eq!(p.session.max_steps.get(), 6);
    assert_eq!(p.session.code_time, Duration::from_secs(60));
    assert_eq!(p.session.model_wait, Duration::from_secs(120));
    let p = Policy::from_yaml_str(
        "session:\n  max_steps: 1\n  code_time: 90s\n  model_wait: 5m\n",
        "test.yml",
    )
    .unwrap();
    assert_eq!(p.session.max_steps.get(), 1);
    assert_eq!(p.session.code_time, Duration::from_secs(90));
    assert_eq!(p.session.model_wait, Duration::from_secs(300));
    let again = Policy::from_yaml_str(&p.to_effective_yaml(), "effective.yml").unwrap();
    assert_eq!(again.session, p.session);
    let e = err("session:\n  max_steps: 0\n");
    assert_at(&e, 2, 14, "session.max_steps `0` is out of range");
    let e = err("session:\n  max_steps: many\n");
    assert_at(&e, 2, 14, "session.max_steps `many` is not a number");
    let e = err("session:\n  code_time: 2h\n");
    assert_at(&e, 2, 14, "session.code_time `7200s` is out of range");
    let e = err("session:\n  model_wait: 500ms\n");
    assert_at(&e, 2, 15, "session.model_wait `500ms` is out of range");
    let e = err("session:\n  steps: 3\n");
    assert_at(&e, 2, 3, "unknown field `steps`");
}
