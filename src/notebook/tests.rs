use super::*;
use crate::sandbox::{Audit, ImageInfo, Limits, Resources, RunStatus};

/// nbformat's own JSON schema of version 4.5, vendored from PyPI's
/// `nbformat` 5.11.1 (tests/fixtures/nbformat/README.md).
const SCHEMA: &str = include_str!("../../tests/fixtures/nbformat/nbformat.v4.5.schema.json");

/// The schema's complaints about `nb`, one line each; empty when valid.
fn schema_errors(nb: &Value) -> Vec<String> {
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    let v = jsonschema::validator_for(&schema).expect("nbformat's schema compiles");
    v.iter_errors(nb)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

fn outcome(stdout: &str, stderr: &str, exit: i64) -> Outcome {
    Outcome {
        status: if exit == 0 {
            RunStatus::Ok
        } else {
            RunStatus::Error
        },
        exit_code: Some(exit),
        signal: None,
        duration_ms: 42,
        collected_ms: 50,
        stdout: stdout.into(),
        stderr: stderr.into(),
        stdout_truncated: false,
        stderr_truncated: false,
        timed_out: false,
        oom_killed: false,
        image: ImageInfo {
            labels: [("org.compute-bot.python".to_string(), "3.11.2".to_string())].into(),
            ..ImageInfo::default()
        },
        limits: Limits::default(),
        resources: Resources::default(),
        audit: Audit::default(),
        artifacts: Vec::new(),
        code_sha256: String::new(),
        container: "compute-bot-0123456789ab".into(),
        notes: Vec::new(),
        tampered: Vec::new(),
        sources: Default::default(),
        environment: None,
        seccomp: None,
        step: None,
        value: None,
    }
}

#[test]
fn every_output_kind_validates_against_nbformat_4_5() {
    let nb = Notebook {
        steps: vec![
            Step {
                code: "import pandas as pd\ndf = pd.DataFrame({'a': [1]})\ndf".into(),
                outputs: vec![
                    Output::Stream {
                        name: "stdout",
                        text: "a\nb".into(),
                    },
                    Output::Value {
                        plain: "   a\n0  1".into(),
                        html: Some("<table><tr><td>1</td></tr></table>".into()),
                    },
                ],
                duration_ms: 7,
                record_id: "compute-bot-aa".into(),
                status: "ok".into(),
                truncated: true,
            },
            Step {
                code: String::new(),
                outputs: vec![
                    Output::Stream {
                        name: "stderr",
                        text: "warn\n".into(),
                    },
                    Output::Error {
                        ename: "KeyError".into(),
                        evalue: "'b'".into(),
                        traceback: vec!["Traceback (most recent call last):".into()],
                    },
                ],
                duration_ms: 0,
                record_id: "compute-bot-aa".into(),
                status: "error".into(),
                truncated: false,
            },
        ],
        python: Some("3.11.2".into()),
    };
    let v = nb.to_json();
    assert_eq!(schema_errors(&v), Vec::<String>::new(), "{v:#}");
    assert_eq!(v["cells"][0]["id"], "step-1");
    assert_eq!(v["cells"][1]["id"], "step-2");
    assert_eq!(
        v["cells"][0]["outputs"][1]["data"]["text/html"][0],
        "<table><tr><td>1</td></tr></table>"
    );
    assert_eq!(
        v["cells"][0]["metadata"]["compute_bot"]["output_truncated"],
        true
    );
    // What the schema refuses, it reports (the check can fail).
    let mut broken = v.clone();
    broken["cells"][0]["id"] = json!("step 1!");
    broken["cells"][1]["outputs"][0]["text"] = json!(3);
    assert_eq!(
        schema_errors(&broken).len(),
        2,
        "{:?}",
        schema_errors(&broken)
    );
}

#[test]
fn a_runs_cell_is_its_exact_code_and_real_output() {
    let code = "# é ✓\r\nimport json\nprint('rows: 2')\nprint(json.dumps({'n': 2}))";
    let o = outcome("rows: 2\n{\"n\": 2}\n", "a warning\n", 0);
    let v = Notebook::of_run(code, &o).to_json();
    assert_eq!(schema_errors(&v), Vec::<String>::new(), "{v:#}");
    let cell = &v["cells"][0];
    let source: String = cell["source"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(source, code, "byte for byte");
    let meta = &cell["metadata"]["compute_bot"];
    assert_eq!(meta["code_sha256"], sha256_hex(code.as_bytes()));
    assert_eq!(meta["duration_ms"], 42);
    assert_eq!(meta["record_id"], "compute-bot-0123456789ab");
    assert_eq!(meta["status"], "ok");
    assert_eq!(cell["execution_count"], 1);
    assert_eq!(
        cell["outputs"],
        json!([
            {"output_type": "stream", "name": "stdout", "text": ["rows: 2\n", "{\"n\": 2}\n"]},
            {"output_type": "stream", "name": "stderr", "text": ["a warning\n"]}
        ])
    );
    assert_eq!(v["metadata"]["language_info"]["version"], "3.11.2");
    assert_eq!(v["nbformat"], 4);
    assert_eq!(v["nbformat_minor"], 5);
}

#[test]
fn a_failing_runs_traceback_is_an_error_output() {
    let stderr = "loading\nTraceback (most recent call last):\n  File \"/tmp/code.py\", line 2, in <module>\n    1 / 0\nZeroDivisionError: division by zero\n";
    let v = Notebook::of_run("print('x')\n1 / 0\n", &outcome("x\n", stderr, 1)).to_json();
    assert_eq!(schema_errors(&v), Vec::<String>::new());
    let outs = v["cells"][0]["outputs"].as_array().unwrap();
    assert_eq!(outs.len(), 3, "{outs:?}");
    assert_eq!(outs[1]["text"], json!(["loading\n"]));
    assert_eq!(outs[2]["output_type"], "error");
    assert_eq!(outs[2]["ename"], "ZeroDivisionError");
    assert_eq!(outs[2]["evalue"], "division by zero");
    assert_eq!(outs[2]["traceback"].as_array().unwrap().len(), 4);
    // A run that succeeded keeps a printed traceback as text, and a failure
    // without one (a kill, a deadline) keeps stderr as it is.
    for o in [outcome("", stderr, 0), outcome("", "Killed\n", 137)] {
        let v = Notebook::of_run("pass\n", &o).to_json();
        let outs = v["cells"][0]["outputs"].as_array().unwrap();
        assert_eq!(outs.len(), 1);
        assert_eq!(outs[0]["name"], "stderr");
    }
    // Hostile stderr: a "traceback" whose last line is no exception name.
    let fake = "Traceback (most recent call last):\n<script>x</script> and more\n";
    assert!(split_traceback(fake).is_none());
    assert!(split_traceback("xTraceback (most recent call last):\nE: 1\n").is_none());
}

#[test]
fn the_file_name_never_takes_a_name_of_the_runs_files() {
    assert_eq!(file_name("analysis", &[]), "analysis.ipynb");
    assert_eq!(
        file_name("analysis", &["analysis.ipynb"]),
        "analysis.run.ipynb"
    );
    assert_eq!(
        file_name("a", &["a.ipynb", "a.run.ipynb", "a.run-2.ipynb"]),
        "a.run-3.ipynb"
    );
    assert_eq!(file_name("../x y\n", &[]), ".._x_y_.ipynb");
    assert_eq!(file_name("", &[]), "answer.ipynb");
    assert_eq!(file_name("..", &[]), "answer.ipynb");
    let mut o = outcome("", "", 0);
    o.artifacts.push(Artifact {
        name: "answer.ipynb".into(),
        size: 0,
        sha256: String::new(),
        bytes: Vec::new(),
    });
    let a = run_file(&[("pass\n", &o)], "answer", &[]);
    assert_eq!(a.name, "answer.run.ipynb");
    assert_eq!(
        run_file(&[("pass\n", &o)], "answer", &["answer.run.ipynb"]).name,
        "answer.run-2.ipynb"
    );
    assert_eq!(a.sha256, sha256_hex(&a.bytes));
    let v: Value = serde_json::from_slice(&a.bytes).unwrap();
    assert_eq!(schema_errors(&v), Vec::<String>::new());
}

#[test]
fn a_session_is_one_cell_per_step_with_its_real_outputs_and_facts() {
    let look_code = "import pandas as pd\ndf = pd.read_csv('/data/orders.csv')\nprint(df['status'].value_counts().to_string())\ndf.tail(2)\n";
    let mut look = outcome("paid     40\npayed     2\n", "", 0);
    look.step = Some(1);
    look.value = Some("   id status  amount\n99 100  TOTAL 725".into());
    let crash_code = "print(df.state.sum())\n";
    let mut crash = outcome(
        "",
        "Traceback (most recent call last):\n  File \"<step 2>\", line 1, in <module>\nAttributeError: 'DataFrame' object has no attribute 'state'\n",
        1,
    );
    crash.step = Some(2);
    crash.value = Some("ignored after an error".into());
    let final_code = "import json\nprint(json.dumps({'paid_total': float(df.amount.sum())}))\n";
    let mut last = outcome("{\"paid_total\": 450.0}\n", "", 0);
    last.step = Some(3);
    last.duration_ms = 310;
    let cells = [
        (look_code, &look),
        (crash_code, &crash),
        (final_code, &last),
    ];
    let a = run_file(&cells, "answer", &[]);
    let v: Value = serde_json::from_slice(&a.bytes).unwrap();
    assert_eq!(schema_errors(&v), Vec::<String>::new(), "{v:#}");
    let got = v["cells"].as_array().unwrap();
    assert_eq!(got.len(), 3);
    for (cell, (code, o)) in got.iter().zip(cells) {
        let source: String = cell["source"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect();
        assert_eq!(source, code, "the cell is the executed code byte for byte");
        let meta = &cell["metadata"]["compute_bot"];
        assert_eq!(meta["code_sha256"], sha256_hex(code.as_bytes()));
        assert_eq!(meta["duration_ms"], o.duration_ms);
        assert_eq!(meta["record_id"], "compute-bot-0123456789ab");
    }
    let kinds = |i: usize| -> Vec<String> {
        got[i]["outputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["output_type"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(kinds(0), ["stream", "execute_result"], "the look's Out[1]");
    assert_eq!(got[0]["outputs"][1]["execution_count"], 1);
    assert_eq!(kinds(1), ["error"], "no value after an error");
    assert_eq!(got[1]["metadata"]["compute_bot"]["status"], "error");
    assert_eq!(kinds(2), ["stream"]);
    assert_eq!(got[2]["execution_count"], 3);
}
