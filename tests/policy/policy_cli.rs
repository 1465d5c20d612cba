//! `compute-bot policy check`: exit codes 0 allow / 1 deny / 3 escalate /
//! 2 unreadable or invalid, for the bundled policies.

use std::path::{Path, PathBuf};

use compute_bot::policy::cli::{check_command, render_text};
use compute_bot::policy::{Policy, check_code};

fn policy(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("policies/{name}.yml"))
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn bundled_policies_are_valid() {
    for name in ["default", "strict", "escalate"] {
        assert_eq!(check_command(&policy(name), None, false), 0, "{name}");
    }
}

#[test]
fn invalid_policy_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(dir.path(), "bad.yml", "sandbox:\n  network: host\n");
    assert_eq!(check_command(&bad, None, false), 2);
    let code = write(dir.path(), "x.py", "print(1)\n");
    assert_eq!(check_command(&bad, Some(&code), false), 2);
    assert_eq!(
        check_command(&dir.path().join("missing.yml"), None, false),
        2
    );
}

#[test]
fn code_verdicts_map_to_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let ok = write(
        dir.path(),
        "ok.py",
        "import pandas as pd\nprint(pd.DataFrame({'a': [1, 2]}).a.sum())\n",
    );
    let bad = write(dir.path(), "bad.py", "import os\nos.system('id')\n");
    let unknown = write(dir.path(), "unknown.py", "import sympy\n");
    for json in [false, true] {
        assert_eq!(check_command(&policy("default"), Some(&ok), json), 0);
        assert_eq!(check_command(&policy("default"), Some(&bad), json), 1);
        assert_eq!(check_command(&policy("default"), Some(&unknown), json), 1);
        assert_eq!(check_command(&policy("escalate"), Some(&unknown), json), 3);
        assert_eq!(check_command(&policy("escalate"), Some(&bad), json), 1);
        assert_eq!(check_command(&policy("strict"), Some(&ok), json), 1);
    }
}

#[test]
fn unreadable_code_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.py");
    assert_eq!(check_command(&policy("default"), Some(&missing), false), 2);
    let binary = dir.path().join("bin.py");
    std::fs::write(&binary, [0xff, 0xfe, 0x00]).unwrap();
    assert_eq!(check_command(&policy("default"), Some(&binary), true), 2);
}

#[test]
fn text_output_lists_line_column_rule_severity_and_snippet() {
    let v = check_code(&Policy::default(), "import os\nos.system('id')\n");
    let text = render_text(&v);
    assert!(text.starts_with("deny: 1 finding\n"), "{text}");
    assert!(
        text.contains("\n2:1 process deny `os.system` is denied"),
        "{text}"
    );
    assert!(text.contains("\n    os.system('id')\n"), "{text}");
    let json = serde_json::to_value(&v).unwrap();
    assert_eq!(json["decision"], "deny");
    assert_eq!(json["findings"][0]["rule"], "process");
    assert_eq!(json["findings"][0]["line"], 2);
    assert_eq!(json["findings"][0]["column"], 1);
}
