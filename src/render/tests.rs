use std::collections::BTreeMap;

use serde_json::json;

use super::*;
use crate::github::texts::{approval_for, read_pending, run_marker, sha256_hex};
use crate::markdown::fence_for;
use crate::model::TokenUsage;
use crate::policy::Finding;
use crate::sandbox::{Audit, FileOpen, ImageInfo, Limits, Resources};
use crate::units::readable_number;

fn outcome(stdout: &str) -> Outcome {
    Outcome {
        status: RunStatus::Ok,
        exit_code: Some(0),
        signal: None,
        duration_ms: 1234,
        collected_ms: 0,
        stdout: stdout.to_string(),
        stderr: String::new(),
        stdout_truncated: false,
        stderr_truncated: false,
        timed_out: false,
        oom_killed: false,
        image: ImageInfo {
            reference: "compute-bot-sandbox:python".into(),
            id: "sha256:0123456789abcdef0123456789abcdef".into(),
            digests: vec!["compute-bot-sandbox@sha256:feed".into()],
            labels: [
                ("python", "3.11.2"),
                ("pandas", "2.3.3"),
                ("numpy", "2.3.5"),
            ]
            .into_iter()
            .map(|(k, v)| (format!("org.compute-bot.{k}"), v.to_string()))
            .collect(),
            ..ImageInfo::default()
        },
        limits: Limits::default(),
        resources: Resources {
            peak_memory_bytes: Some(20 * 1024 * 1024),
            cpu_time_ms: Some(300),
            container: Default::default(),
        },
        audit: Audit {
            kernel: None,
            files_opened: vec![FileOpen {
                path: "/data/sales.csv".into(),
                mode: "r".into(),
                denied: false,
            }],
            network_attempts: vec!["socket.connect 10.0.0.1:80".into()],
            subprocess_attempts: vec![],
            imports: vec!["csv".into(), "json".into()],
            refused: vec!["open /etc/passwd".into()],
            preloaded: vec![],
            preload_skipped: vec![],
            truncated: false,
        },
        artifacts: vec![],
        code_sha256: String::new(),
        container: "compute-bot-run-1".into(),
        notes: vec![],
        tampered: vec![],
        sources: Default::default(),
        environment: None,
        seccomp: None,
        step: None,
        value: None,
    }
}

fn report(result: serde_json::Value, code: &str) -> Report {
    let sha = sha256_hex(code);
    Report {
        goal: Some("mean of @octocat's <b>prices</b>".into()),
        plan: None,
        status: ReportStatus::Ok,
        stop_reason: None,
        result: Some(result),
        explanation: Some("The mean is 3. Thanks @alice <script>x</script>".into()),
        attempts: vec![Attempt {
            number: 1,
            code: code.into(),
            code_sha256: sha.clone(),
            ..Attempt::default()
        }],
        code: Some(code.into()),
        code_sha256: Some(sha),
        verdict: None,
        outcome: Some(outcome("{\"answer\": 3}\n")),
        inputs: vec![],
        policy: Some(".github/compute-policy.yml".into()),
        usage: TokenUsage::default(),
        model_requests: 0,
        prices: None,
        cost_usd: None,
        timings_ms: BTreeMap::new(),
        steps: Vec::new(),
        continued: None,
        replayed: Vec::new(),
        record: None,
    }
}

fn ctx() -> RenderContext {
    RenderContext {
        run_url: Some("https://github.com/o/r/actions/runs/9".into()),
        marker: Some(run_marker("9")),
        command: None,
        approval: None,
        files: None,
    }
}

/// The context the GitHub front end renders a needs-approval report with.
fn approval_ctx(r: &Report) -> RenderContext {
    RenderContext {
        approval: approval_for(r, "/compute"),
        ..ctx()
    }
}

#[test]
fn fence_is_longer_than_any_backtick_run() {
    assert_eq!(fence_for("print(1)"), "```");
    assert_eq!(fence_for("s = '```'"), "````");
    assert_eq!(fence_for("a ````` b ``"), "``````");
    let code = "x = '``````'\nprint(x)\n";
    let md = markdown(&report(json!({"answer": 1}), code), &ctx());
    assert!(
        md.contains(&format!("```````python\n{code}```````")),
        "{md}"
    );
}

#[test]
fn comment_has_every_part() {
    let md = markdown(&report(json!({"answer": 3, "n": 5}), "print(3)\n"), &ctx());
    assert!(md.starts_with("<!-- compute-bot:run=9 -->\n"));
    assert!(md.contains("✅"));
    assert!(md.contains("**Answer:** `3`"));
    assert!(md.contains("| answer | 3 |") && md.contains("| n | 5 |"));
    // The explanation first, then the headline figures, then the details.
    let explanation = md.find("\nThe mean is 3.").expect("the explanation");
    assert!(explanation < md.find("**Answer:**").unwrap(), "{md}");
    assert!(
        md.find("| n | 5 |").unwrap() < md.find("<details>").unwrap(),
        "{md}"
    );
    assert!(md.contains("```python\nprint(3)\n```"));
    assert!(md.contains(&sha256_hex("print(3)\n")));
    assert!(md.contains("network none"));
    assert!(md.contains("compute-bot-sandbox:python"));
    assert!(md.contains("digest `compute-bot-sandbox@sha256:feed`"));
    assert!(md.contains("| Data stack | Python 3.11.2, pandas 2.3.3, numpy 2.3.5 |"));
    assert!(md.contains("timeout 10s · memory 512MiB"));
    assert!(md.contains("peak memory 20.0 MiB"));
    assert!(md.contains("ok (exit 0)"));
    // No kernel record in this outcome: every row is the interpreter's word.
    assert!(
        md.contains("| Files opened | `/data/sales.csv (r)` | reported by the code's interpreter")
    );
    assert!(md.contains("| Network attempts in Python | `socket.connect 10.0.0.1:80` |"));
    assert!(md.contains("| Program starts | none reported | reported by the code's interpreter |"));
    assert!(md.contains("[Workflow run](https://github.com/o/r/actions/runs/9)"));
    // One attempt: no attempts table.
    assert!(!md.contains("<summary>Attempts</summary>"));
}

#[test]
fn strings_cannot_inject_mentions_html_or_cells() {
    let md = markdown(
        &report(
            json!([{"name": "@evil | x\ny", "v": "<img src=x onerror=alert(1)>"}]),
            "print(1)\n",
        ),
        &ctx(),
    );
    assert!(!md.contains("@evil"), "{md}");
    assert!(md.contains("@\u{200b}evil \\| x<br>y"), "{md}");
    assert!(!md.contains("<img"), "{md}");
    assert!(md.contains("&lt;img"));
    // Goal and explanation too.
    assert!(!md.contains("@octocat") && !md.contains("@alice"));
    assert!(!md.contains("<script>") && !md.contains("<b>prices"));
    // A result string cannot close the hidden marker or open a comment.
    let md = markdown(&report(json!("-->\n<!-- x"), "print(1)\n"), &ctx());
    assert!(!md.contains("<!-- x"));
}

#[test]
fn escape_cell_rules() {
    assert_eq!(escape_cell("a|b"), "a\\|b");
    assert_eq!(escape_cell("a\r\nb"), "a<br>b");
    assert_eq!(escape_cell("@user"), "@\u{200b}user");
    assert_eq!(escape_cell("x@y.com"), "x@\u{200b}y.com");
    assert_eq!(
        escape_cell("[link](http://x)"),
        "\\[link\\](http:\u{200b}//x)"
    );
    assert_eq!(escape_cell("`code`"), "\\`code\\`");
    assert_eq!(neutralize("@ alone"), "@ alone");
}

#[test]
fn long_record_lists_are_cut_with_a_count() {
    let rows: Vec<_> = (0..120)
        .map(|i| json!({"city": format!("c{i}"), "pop": i}))
        .collect();
    let md = markdown(&report(json!(rows), "print(1)\n"), &ctx());
    assert!(md.contains("| city | pop |"));
    assert!(md.contains("| c49 | 49 |"));
    assert!(!md.contains("| c50 | 50 |"));
    assert!(md.contains("70 more rows (120 in all)"), "{md}");
}

#[test]
fn huge_stdout_is_cut_and_never_over_the_limit() {
    let mut r = report(json!({"answer": 1}), "print('x' * 10**6)\n");
    let big = "y".repeat(500_000);
    r.outcome = Some(outcome(&big));
    let md = markdown(&r, &ctx());
    assert!(md.chars().count() <= COMMENT_LIMIT);
    // Level 0 keeps a 3,000-character tail of stdout, which fits.
    assert!(md.contains("last 3000 characters shown"));
    assert!(md.contains("print('x' * 10**6)"));
    // The summary keeps more.
    let sum = summary(&r, &ctx());
    assert!(sum.len() <= SUMMARY_LIMIT);
    assert!(sum.contains(&"y".repeat(60_000)));
    assert!(!sum.contains("compute-bot:run="));
}

#[test]
fn largest_parts_are_cut_first_and_code_last() {
    // A big result table and big stdout and a big code: output goes first,
    // then the table, and the code survives as long as possible.
    let rows: Vec<_> = (0..50)
        .map(|i| json!({"k": format!("{i}{}", "z".repeat(280)), "v": i}))
        .collect();
    let code = format!("# {}\nprint(1)\n", "c".repeat(56_000));
    let mut r = report(json!(rows), &code);
    r.outcome = Some(outcome(&"o".repeat(100_000)));
    let md = markdown(&r, &ctx());
    assert!(
        md.chars().count() <= COMMENT_LIMIT,
        "{}",
        md.chars().count()
    );
    assert!(md.contains("Parts of this report were cut"), "{md}");
    assert!(md.contains("stdout/stderr left out"));
    assert!(md.contains("result table shortened"));
    assert!(md.contains("20 more rows (50 in all)"), "{md}");
    assert!(md.contains(&code), "the code must survive");
    assert!(!md.contains(&"o".repeat(1000)));

    // Code bigger than the limit: cut, with its full sha256.
    let code = format!("# {}\n", "c".repeat(100_000));
    let r = report(json!({"a": 1}), &code);
    let md = markdown(&r, &ctx());
    assert!(md.chars().count() <= COMMENT_LIMIT);
    assert!(
        md.contains("code cut") || md.contains("code left out"),
        "{md}"
    );
    assert!(md.contains(&sha256_hex(&code)));
}

#[test]
fn multibyte_text_counts_characters() {
    let rows: Vec<_> = (0..60)
        .map(|i| json!({"k": "é".repeat(2000), "v": i}))
        .collect();
    let md = markdown(&report(json!(rows), "print(1)\n"), &ctx());
    assert!(md.chars().count() <= COMMENT_LIMIT);
}

#[test]
fn chart_detection() {
    // List of numbers.
    let c = chart(&json!([1, 2.5, 3])).unwrap();
    assert!(c.starts_with("```mermaid\nxychart-beta"));
    assert!(c.contains("line [1, 2.5, 3]"), "{c}");
    // Records with one label and one number.
    let c = chart(&json!([{"month": "Jan", "sales": 5}, {"month": "Feb", "sales": 7}])).unwrap();
    assert!(c.contains("x-axis [\"Jan\", \"Feb\"]"), "{c}");
    // Months are a series over time: a line.
    assert!(c.contains("line [5, 7]"), "{c}");
    // Labelled things that are not points in time: bars.
    let c =
        chart(&json!([{"region": "North", "sales": 5}, {"region": "South", "sales": 7}])).unwrap();
    assert!(c.contains("bar [5, 7]"), "{c}");
    // Date-like labels under any field name: a line.
    let c = chart(&json!([{"k": "2024-01", "v": 1}, {"k": "2024-02", "v": 2}])).unwrap();
    assert!(c.contains("line [1, 2]"), "{c}");
    // Numeric label by name.
    let c = chart(&json!([{"year": 2020, "v": 1.5}, {"year": 2021, "v": 2}])).unwrap();
    assert!(c.contains("\"2020\"") && c.contains("[1.5, 2]"), "{c}");
    // Nested one level in an object.
    let c = chart(&json!({"mean": 2, "series": [3, 4, 5]})).unwrap();
    assert!(c.contains("title \"series\""), "{c}");
    // Not series.
    assert!(chart(&json!([1])).is_none());
    assert!(chart(&json!([1, "a"])).is_none());
    assert!(chart(&json!([{"a": "x", "b": "y"}, {"a": "z", "b": "w"}])).is_none());
    assert!(chart(&json!([{"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 2, "c": 3}])).is_none());
    assert!(chart(&json!({"mean": 2})).is_none());
    // Labels cannot break out of the chart.
    let c = chart(&json!([{"l": "a\"]\n```", "v": 1}, {"l": "b", "v": 2}])).unwrap();
    assert!(!c.contains("a\"]"), "{c}");
    assert_eq!(c.matches("```").count(), 2);
    // Long series are capped.
    let long: Vec<i32> = (0..500).collect();
    let c = chart(&json!(long)).unwrap();
    assert!(c.contains("first 100 of 500"));
    // The comment includes it.
    let md = markdown(&report(json!([1, 2, 3]), "print(1)\n"), &ctx());
    assert!(md.contains("xychart-beta"));
}

#[test]
fn needs_approval_shows_the_code_that_can_be_read_back() {
    let code = "import requests\nprint('```')\n";
    let mut r = report(serde_json::Value::Null, code);
    r.result = None;
    r.outcome = None;
    r.status = ReportStatus::NeedsApproval;
    r.stop_reason = Some("imports a module that needs approval".into());
    r.verdict = Some(Verdict::from_findings(vec![Finding {
        rule: "import-escalate".into(),
        severity: Severity::Escalate,
        message: "`requests` needs approval".into(),
        line: 1,
        column: 1,
        snippet: "import requests".into(),
    }]));
    let md = markdown(&r, &approval_ctx(&r));
    assert!(md.contains("needs approval"));
    assert!(md.contains("`/compute approve`"));
    assert!(md.contains("import-escalate"));
    let pending = read_pending(&md).unwrap();
    assert_eq!(pending.code, code);
    assert_eq!(pending.sha256, sha256_hex(code));
}

#[test]
fn failed_report_with_attempts_table() {
    let mut r = report(serde_json::Value::Null, "print(1)\n");
    r.result = None;
    r.status = ReportStatus::Failed;
    r.stop_reason = Some("3 attempts failed | schema".into());
    r.attempts.push(Attempt {
        number: 2,
        code: "x".into(),
        code_sha256: "abcdef0123456789".into(),
        failure: Some("ValueError: bad | input".into()),
        ..Attempt::default()
    });
    let md = markdown(&r, &ctx());
    assert!(md.contains("❌"));
    assert!(md.contains("3 attempts failed \\| schema"));
    assert!(md.contains("<summary>Attempts</summary>"));
    assert!(
        md.contains("| 2 | `abcdef012345` | — | not run | — | ValueError: bad \\| input |"),
        "{md}"
    );
}

#[test]
fn text_rendering_is_plain() {
    let t = text(&report(json!({"answer": 3}), "print(3)\n"));
    assert!(t.starts_with("compute-bot: ok"));
    assert!(t.contains("\"answer\": 3"));
    assert!(t.contains("network none"));
    assert!(t.contains(&sha256_hex("print(3)\n")));
    assert!(!t.contains("<details>"));
    assert!(t.contains("usage: no model requests"), "{t}");
    let mut r = report(json!({"answer": 3}), "print(3)\n");
    r.model_requests = 2;
    r.usage = TokenUsage {
        input_tokens: Some(1200),
        output_tokens: None,
    };
    let t = text(&r);
    assert!(
        t.contains("usage: 2 model requests · tokens: 1,200 in, unknown out"),
        "{t}"
    );
    assert!(markdown(&r, &ctx()).contains("2 model requests · tokens: 1,200 in, unknown out"));
}

#[test]
fn nothing_can_push_the_comment_over_the_limit() {
    // Huge explanation, huge code waiting for approval (never cut by the
    // budgets, so the last-resort cut applies), huge findings.
    let code = format!("# {}\n", "a".repeat(200_000));
    let mut r = report(serde_json::Value::Null, &code);
    r.result = None;
    r.outcome = None;
    r.status = ReportStatus::NeedsApproval;
    r.explanation = Some("word ".repeat(50_000));
    r.verdict = Some(Verdict::from_findings(
        (0..5000)
            .map(|i| Finding {
                rule: "r".into(),
                severity: Severity::Escalate,
                message: format!("finding {i}"),
                line: i,
                column: 1,
                snippet: String::new(),
            })
            .collect(),
    ));
    let md = markdown(&r, &approval_ctx(&r));
    assert!(
        md.chars().count() <= COMMENT_LIMIT,
        "{}",
        md.chars().count()
    );
    assert!(md.contains("cut at the size limit"));
    // The open fence and <details> were closed.
    assert_eq!(
        md.matches("<details").count(),
        md.matches("</details>").count()
    );

    // A long explanation alone is shortened and said so.
    let mut r = report(json!({"a": 1}), "print(1)\n");
    r.explanation = Some("é".repeat(100_000));
    let md = markdown(&r, &approval_ctx(&r));
    assert!(md.chars().count() <= COMMENT_LIMIT);
    assert!(md.contains("explanation was cut at 20000 of 100000 characters"));
}

#[test]
fn nested_record_lists_get_their_own_table_and_the_goal_picks_the_charted_field() {
    let result = json!({
        "average": 0.5,
        "by_day": [
            {"day": "d1", "leads": 100, "paid": 40, "conversion": 0.4},
            {"day": "d2", "leads": 100, "paid": 60, "conversion": 0.6}
        ]
    });
    let parts = result_md(&result, &COMMENT_BUDGETS[0], &[]);
    let b = format!("{}{}", parts.headline, parts.tables);
    assert!(b.contains("| average | 0.5 |"), "{b}");
    assert!(b.contains("**by\\_day**"), "{b}");
    assert!(
        b.contains("| d1 | 100 | 40 |") || b.contains("| 0.4 | d1 | 100 | 40 |"),
        "{b}"
    );
    let by_goal = chart_for(&result, Some("paid customers per day")).unwrap();
    assert!(by_goal.contains("line [40, 60]"), "{by_goal}");
    let by_measure = chart_for(&result, None).unwrap();
    assert!(by_measure.contains("line [0.4, 0.6]"), "{by_measure}");
    // Two label-like string fields: no chart rather than a guess.
    assert!(chart(&json!([{"a": "x", "b": "y", "n": 1}, {"a": "z", "b": "w", "n": 2}])).is_none());
}

#[test]
fn bidi_controls_are_shown_in_values_keys_goal_output_and_code() {
    let rlo = '\u{202E}';
    let result: serde_json::Value = serde_json::from_str(&format!(
        r#"{{"user{rlo}name": "invoice{rlo}fdp.exe", "rows": [{{"file{rlo}": "a\u2066b", "n": 1}}]}}"#
    ))
    .unwrap();
    let code = format!("print('ok') # {rlo} hidden\n");
    let mut r = report(result, &code);
    r.goal = Some(format!("sum {rlo}of x\u{200F}"));
    let mut o = outcome("x");
    o.stderr = format!("Traceback {rlo} here\u{061C}");
    o.status = RunStatus::Error;
    o.audit.files_opened[0].path = format!("/data/a{rlo}.csv");
    r.outcome = Some(o);
    for md in [markdown(&r, &ctx()), summary(&r, &ctx()), text(&r)] {
        assert!(
            !md.chars().any(is_bidi_control),
            "a bidi control got through:\n{md}"
        );
        assert!(md.contains("u{202e}"), "{md}");
    }
    let md = markdown(&r, &ctx());
    assert!(md.contains("invoice\\\\u{202e}fdp.exe"), "{md}");
    assert!(md.contains("u{2066}") && md.contains("u{200f}") && md.contains("u{61c}"));
    assert!(md.contains("bidirectional control characters"), "{md}");
    assert_eq!(show_hidden("plain"), "plain");
    assert_eq!(show_hidden("a\u{202A}b"), "a\\u{202a}b");
}

#[test]
fn needs_approval_without_a_front_end_block_shows_code_and_findings() {
    // A front end that takes no approvals (the terminal) passes none: the
    // report reads as any other, with no comment instructions or markers.
    let code = "import requests\n";
    let mut r = report(serde_json::Value::Null, code);
    r.result = None;
    r.outcome = None;
    r.status = ReportStatus::NeedsApproval;
    r.verdict = Some(Verdict::from_findings(vec![Finding {
        rule: "import-escalate".into(),
        severity: Severity::Escalate,
        message: "`requests` needs approval".into(),
        line: 1,
        column: 1,
        snippet: "import requests".into(),
    }]));
    let md = markdown(&r, &ctx());
    assert!(md.contains("import requests"), "{md}");
    assert!(md.contains("import-escalate"), "{md}");
    assert!(!md.contains("/compute approve"), "{md}");
    assert!(read_pending(&md).is_err(), "{md}");
}

#[test]
fn code_waiting_for_approval_stays_exact_with_a_bidi_warning() {
    let code = "ok = True # \u{202E} }if{ \nprint(ok)\n";
    let mut r = report(serde_json::Value::Null, code);
    r.result = None;
    r.status = ReportStatus::NeedsApproval;
    r.outcome = None;
    r.verdict = Some(Verdict::from_findings(vec![Finding {
        rule: "import-escalate".into(),
        severity: Severity::Escalate,
        message: "needs approval".into(),
        line: 1,
        column: 1,
        snippet: String::new(),
    }]));
    let md = markdown(&r, &approval_ctx(&r));
    assert!(
        md.contains("invisible bidirectional control characters (U+202E)"),
        "{md}"
    );
    assert_eq!(read_pending(&md).unwrap().code, code);
}

#[test]
fn keys_keep_the_order_the_code_printed() {
    let result: serde_json::Value =
        serde_json::from_str(r#"{"zeta": 1, "alpha": 2, "mid": 3, "rows": [{"z": 1, "a": 2}]}"#)
            .unwrap();
    let md = markdown(&report(result, "print(1)\n"), &ctx());
    let z = md.find("| zeta | 1 |").unwrap();
    let a = md.find("| alpha | 2 |").unwrap();
    let m = md.find("| mid | 3 |").unwrap();
    assert!(z < a && a < m, "{md}");
    assert!(md.contains("| z | a |"), "{md}");
}

#[test]
fn numbers_are_readable_in_text_and_exact_in_json() {
    assert_eq!(readable_number(0.08478968314121142), "0.08479");
    assert_eq!(readable_number(12345.678), "12346");
    assert_eq!(readable_number(3.0), "3");
    assert_eq!(readable_number(-2.5), "-2.5");
    assert_eq!(readable_number(1.23456), "1.235");
    assert_eq!(readable_number(0.5), "0.5");
    assert_eq!(readable_number(8.4789e-7), "8.479e-7");
    assert_eq!(readable_number(6.02214076e23), "6.022e23");
    assert_eq!(readable_number(-0.00001), "-1e-5");
    let result = json!({"rate": 0.08478968314121142, "n": 123456789});
    let md = markdown(&report(result.clone(), "print(1)\n"), &ctx());
    assert!(md.contains("| rate | 0.08479 |"), "{md}");
    assert!(md.contains("| n | 123,456,789 |"), "{md}");
    assert!(!md.contains("0.08478968314121142"), "{md}");
    assert!(
        md.contains("rounded to 4 significant digits, never inside the integer part"),
        "{md}"
    );
    // The scalar answer line too.
    let md = markdown(&report(json!({"answer": 2.0 / 3.0}), "print(1)\n"), &ctx());
    assert!(md.contains("**Answer:** `0.6667`"), "{md}");
    // Exact numbers get no note, also when grouped or to the cent.
    let exact = json!({"n": 3, "x": 0.5, "big": 1234567, "revenue": 111797.4});
    let md = markdown(&report(exact, "print(1)\n"), &ctx());
    assert!(md.contains("| revenue | 111,797.40 |"), "{md}");
    assert!(!md.contains("significant digits"), "{md}");
}

#[test]
fn chart_axis_starts_at_zero_and_many_labels_are_thinned() {
    // Small values next to large ones: the y axis starts at zero.
    let c =
        chart(&json!([{"d": "a", "v": 100}, {"d": "b", "v": 101}, {"d": "c", "v": 2}])).unwrap();
    assert!(c.contains("y-axis \"v\" 0 --> 101"), "{c}");
    // Negative values: the axis reaches down to them, and up to zero at least.
    let c = chart(&json!([-3, -1.5])).unwrap();
    assert!(c.contains("-3 --> 0"), "{c}");
    let c = chart(&json!([-3, 4])).unwrap();
    assert!(c.contains("-3 --> 4"), "{c}");
    // 14 dates: no 14 labels, a numbered axis whose title names the range.
    let days: Vec<serde_json::Value> = (1..=14)
        .map(|d| json!({"date": format!("2024-03-{d:02}"), "rate": 0.08478968314121142 * d as f64}))
        .collect();
    let c = chart(&json!(days)).unwrap();
    assert!(
        c.contains("x-axis \"2024-03-01 … 2024-03-14 (14 points)\" 1 --> 14"),
        "{c}"
    );
    assert!(!c.contains("\"2024-03-02\""), "{c}");
    assert!(c.contains("line [0.08479, 0.1696,"), "{c}");
    assert!(c.contains("y-axis \"rate\" 0 --> 1.187"), "{c}");
    // Up to 8 labels keep their names.
    let days: Vec<serde_json::Value> = (1..=8)
        .map(|d| json!({"date": format!("d{d}"), "v": d}))
        .collect();
    let c = chart(&json!(days)).unwrap();
    assert!(c.contains("x-axis [\"d1\", \"d2\""), "{c}");
    // A flat series still gets a usable axis.
    let c = chart(&json!([0, 0])).unwrap();
    assert!(c.contains("0 --> 1"), "{c}");
}

#[test]
fn the_cpu_quota_row_shows_the_limit_the_code_ran_under_and_the_preloads() {
    use crate::sandbox::CpuQuota;
    let mut r = report(json!({"answer": 3}), "print(3)\n");
    let md = markdown(&r, &ctx());
    assert!(
        !md.contains("| CPU quota |"),
        "no row without the runner's reading"
    );
    let o = r.outcome.as_mut().unwrap();
    let one = CpuQuota {
        quota: Some(100_000),
        period: 100_000,
    };
    o.resources.container.cpu_at_code_start = Some(one);
    o.resources.container.cpu_before_code = Some(CpuQuota {
        quota: None,
        period: 100_000,
    });
    let md = markdown(&r, &ctx());
    assert!(
        md.contains(
            "| CPU quota | 1 CPU while the code ran (the container's cgroup, read by the runner as \
             the code started) · every host CPU while the modules loaded before it |"
        ),
        "{md}"
    );
    let o = r.outcome.as_mut().unwrap();
    o.resources.container.cpu_before_code = Some(one);
    o.resources.container.cpu_at_code_start = Some(CpuQuota {
        quota: Some(50_000),
        period: 100_000,
    });
    let md = markdown(&r, &ctx());
    assert!(
        md.contains("| CPU quota | 0.5 CPU while the code ran"),
        "{md}"
    );
    assert!(
        md.contains(" · 1 CPU while the modules loaded before it |"),
        "{md}"
    );
    r.outcome
        .as_mut()
        .unwrap()
        .resources
        .container
        .cpu_before_code = Some(CpuQuota {
        quota: Some(50_000),
        period: 100_000,
    });
    let md = markdown(&r, &ctx());
    assert!(
        !md.contains("while the modules loaded"),
        "one quota throughout: {md}"
    );
}

#[test]
fn the_answer_names_the_system_call_filter_that_held() {
    use crate::sandbox::SeccompProfile;
    let mut r = report(json!({"answer": 3}), "print(3)\n");
    assert!(!markdown(&r, &ctx()).contains("| System calls |"));
    for (p, words) in [
        (
            SeccompProfile::Own,
            "compute-bot's allowlist (`sandbox/seccomp.json`)",
        ),
        (
            SeccompProfile::Sentry,
            "none sent: gVisor's Sentry implements the system calls",
        ),
    ] {
        r.outcome.as_mut().unwrap().seccomp = Some(p);
        let md = markdown(&r, &ctx());
        assert!(md.contains(&format!("| System calls | {words}")), "{md}");
    }
}

/// A session's steps as the report carries them: a look with its output
/// and value, a step that raised, and the final step that gave the result.
fn session_steps() -> Vec<crate::report::Step> {
    use crate::report::{Step, StepKind};
    let step = |number: u32, kind, code: &str, stdout: &str, status| Step {
        number,
        attempt: number,
        kind,
        result: false,
        code: code.to_string(),
        code_sha256: sha256_hex(code),
        stdout: stdout.to_string(),
        stderr: String::new(),
        stdout_sha256: sha256_hex(stdout),
        value: None,
        status,
        duration_ms: 420 * u64::from(number),
        files: Vec::new(),
    };
    let mut look = step(
        1,
        StepKind::Look,
        "import pandas as pd\ndf = pd.read_csv('/data/orders.csv')\nprint(df['status'].value_counts().to_string())\ndf.tail(2)\n",
        "paid     40\nPaid      3\npayed     2\nTOTAL     1\n",
        RunStatus::Ok,
    );
    look.value = Some("   id status  amount\n98  99  paid  10\n99 100  TOTAL 725".into());
    let mut crash = step(
        2,
        StepKind::Final,
        "print(df.state.sum())\n",
        "",
        RunStatus::Error,
    );
    crash.stderr = "Traceback (most recent call last):\n  File \"<step 2>\", line 1, in <module>\nAttributeError: 'DataFrame' object has no attribute 'state'\n".into();
    let mut last = step(
        3,
        StepKind::Final,
        "import json\nstatus = df['status'].str.lower()\npaid = df[status.isin(['paid', 'payed'])]\nfig = paid.plot.bar().figure\nfig.savefig('/out/paid.png')\nprint(json.dumps({'answer': float(paid['amount'].sum())}))\n",
        "{\"answer\": 450.0}\n",
        RunStatus::Ok,
    );
    last.result = true;
    last.files = vec!["paid.png".into()];
    vec![look, crash, last]
}

#[test]
fn a_sessions_steps_follow_the_answer_each_folded_with_its_audit_line() {
    let steps = session_steps();
    insta::assert_snapshot!(steps::steps_md(&steps, usize::MAX, 4_000));
    let mut r = report(json!({"answer": 450.0}), &steps[2].code);
    r.steps = steps;
    let md = markdown(&r, &ctx());
    assert!(
        md.contains("**Status:** ok · 3 steps in one session · result validated"),
        "{md}"
    );
    let explanation = md.find("The mean is 3").unwrap();
    let at = md.find("**Steps:** 3 in one session").unwrap();
    let sandbox = md.find("Sandbox").unwrap();
    assert!(
        explanation < at && at < sandbox,
        "answer, then steps, then the sandbox:\n{md}"
    );
    assert!(
        !md.contains("Executed code"),
        "the final code is shown as its step"
    );
    assert_eq!(md.matches("<details><summary>Step ").count(), 3);
    // A budget that leaves the outputs out says so, and keeps the code.
    let tight = steps::steps_md(&r.steps, usize::MAX, 0);
    assert!(tight.contains("left out to fit the comment") && tight.contains("df.tail(2)"));
}

#[test]
fn files_without_an_image_follow_the_results_tables_and_images_come_first() {
    let r = report(
        serde_json::json!({"total": 5, "excluded": {"total_row": 1, "sentinel": 8}}),
        "print(1)",
    );
    let files = |has_images: bool| RenderContext {
        files: Some(FilesBlock {
            markdown: "#### Files\n\n- notebook\n".into(),
            has_images,
            images: Vec::new(),
        }),
        ..ctx()
    };
    let md = markdown(&r, &files(false));
    let (files_at, table_at) = (md.find("#### Files").unwrap(), md.find("sentinel").unwrap());
    assert!(
        table_at < files_at,
        "a notebook is a detail, after the tables:\n{md}"
    );
    let md = markdown(&r, &files(true));
    let (files_at, table_at) = (md.find("#### Files").unwrap(), md.find("sentinel").unwrap());
    assert!(
        files_at < table_at,
        "images are the charts, before the tables:\n{md}"
    );
}
