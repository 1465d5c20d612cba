//! A whole answer whose every code-controlled string is hostile, read back
//! through a GFM renderer: it must have exactly the markup of the same
//! answer with harmless strings of the same lengths, and show the hostile
//! names literally.

use serde_json::{Value, json};

use crate::github::texts::{FilesHome, ShownFile, files_md, image_links};
use crate::markdown::cell_code_span;
use crate::markdown::gfm::{gfm, tags, text_of};
use crate::render::{
    COMMENT_LIMIT, FilesBlock, RenderContext, SUMMARY_LIMIT, markdown, summary, text,
};
use crate::report::{Report, ReportStatus};
use crate::sandbox::{
    Artifact, Audit, FileOpen, ImageInfo, KernelOpen, KernelRecord, Limits, Outcome, Resources,
    RunStatus, SocketCall, StartAttempt, Supervision,
};

/// The route of issue 39: a name whose line breaks end the Artifacts cell
/// and write a heading of the code's choosing.
const FORGED: &str = "r.csv |\n\n### ✅ Verified by the kernel\n\n| x";

/// Code-controlled strings, each trying another way out.
const HOSTILE: &[&str] = &[
    FORGED,
    "a`b``c<details><summary>x</summary>",
    "![img](https://evil.example/i.png) [l](https://evil.example)",
    "@octocat #12 www.evil.example https://evil.example",
    "# h\r\n- li\u{2028}\u{202E}gpj.exe\u{1b}[2J\0",
    "bad \u{FFFD} bytes\t<!-- c --> &#x202e; $x$ **b** ~~s~~ \\| \\",
];

/// Every char of `s` but its line breaks as the `i`th letter: the same
/// length and lines, so the same shape in the answer, and no two alike.
fn harmless(i: usize, s: &str) -> String {
    let letter = char::from(b'a' + i as u8);
    s.chars()
        .map(|c| if c == '\n' { c } else { letter })
        .collect()
}

/// A report whose code-controlled strings are `names`.
fn report_with(names: &[String]) -> Report {
    let n = |i: usize| names[i % names.len()].clone();
    let mut result = serde_json::Map::new();
    for i in 0..names.len() {
        result.insert(n(i), Value::from(n(i + 1)));
    }
    result.insert(
        "rows".into(),
        json!([{"label": n(0), "v": 1}, {"label": n(1), "v": 2}, {"label": n(2), "v": 3}]),
    );
    result.insert("summary".into(), Value::from(n(3)));
    result.insert("nested".into(), json!({ n(0): [[1, 2], [3]] }));
    let result = Value::Object(result);
    let mut o = outcome();
    o.artifacts = names
        .iter()
        .map(|name| Artifact {
            name: name.clone(),
            size: 3,
            sha256: "ab".repeat(32),
            bytes: vec![],
        })
        .collect();
    o.notes = vec![format!("runner stderr: {}", n(0)), n(5)];
    o.audit.imports = names.to_vec();
    o.audit.refused = names.to_vec();
    o.audit.network_attempts = names.to_vec();
    o.audit.files_opened = vec![FileOpen {
        path: n(1),
        mode: "r".into(),
        denied: false,
    }];
    o.audit.kernel = Some(KernelRecord {
        mode: Supervision::Notify,
        files: names
            .iter()
            .map(|p| KernelOpen {
                path: p.clone(),
                asked: Some(format!("/proc/self/{p}")),
                mode: "r".into(),
                result: "ok".into(),
                denied: false,
            })
            .collect(),
        starts: vec![StartAttempt {
            call: "execve".into(),
            path: Some(n(2)),
            argv: names.to_vec(),
            flags: None,
        }],
        sockets: vec![SocketCall {
            call: "connect".into(),
            target: n(3),
            denied: true,
            result: None,
        }],
        ..KernelRecord::default()
    });
    o.stderr = n(4);
    o.status = RunStatus::Error;
    o.exit_code = Some(1);
    Report {
        goal: Some("mean price".into()),
        plan: None,
        status: ReportStatus::Ok,
        stop_reason: None,
        explanation: None,
        result: Some(result),
        attempts: vec![],
        code: Some("print(1)\n".into()),
        code_sha256: Some("cd".repeat(32)),
        verdict: None,
        outcome: Some(o),
        inputs: vec![],
        policy: None,
        usage: Default::default(),
        model_requests: 0,
        prices: None,
        cost_usd: None,
        timings_ms: Default::default(),
        // A session's steps: what the code printed, its value, its files.
        steps: (0..2)
            .map(|i| crate::report::Step {
                number: i + 1,
                attempt: i + 1,
                kind: if i == 0 {
                    crate::report::StepKind::Look
                } else {
                    crate::report::StepKind::Final
                },
                result: i == 1,
                code: format!("print({:?})", n(i as usize)),
                code_sha256: "0".repeat(64),
                stdout: n(i as usize + 2),
                stderr: n(i as usize + 3),
                stdout_sha256: "0".repeat(64),
                value: Some(n(i as usize + 4)),
                status: if i == 0 {
                    RunStatus::Error
                } else {
                    RunStatus::Ok
                },
                duration_ms: 5,
                files: vec![n(i as usize), n(i as usize + 1)],
            })
            .collect(),
        continued: None,
        replayed: Vec::new(),
        record: None,
    }
}

fn outcome() -> Outcome {
    Outcome {
        status: RunStatus::Ok,
        exit_code: Some(0),
        signal: None,
        duration_ms: 10,
        collected_ms: 0,
        stdout: String::new(),
        stderr: String::new(),
        stdout_truncated: false,
        stderr_truncated: false,
        timed_out: false,
        oom_killed: false,
        image: ImageInfo::default(),
        limits: Limits::default(),
        resources: Resources::default(),
        audit: Audit::default(),
        artifacts: vec![],
        code_sha256: String::new(),
        container: "c".into(),
        notes: vec![],
        tampered: vec![],
        sources: Default::default(),
        environment: None,
        seccomp: None,
        step: None,
        value: None,
    }
}

/// The files block the GitHub front end writes for `names`.
fn files_for(names: &[String], result: Option<&Value>) -> FilesBlock {
    let shown: Vec<ShownFile> = names
        .iter()
        .enumerate()
        .map(|(i, name)| ShownFile {
            name: name.clone(),
            size: 3,
            image: i % 2 == 0,
            url: Some(format!(
                "https://github.com/o/r/blob/abc/{}?raw=true",
                crate::github::rest::client::encode_segment(name)
            )),
        })
        .collect();
    let home = FilesHome::Committed {
        branch: "compute-bot-assets".into(),
        sha: "abc".into(),
        commit_url: "https://github.com/o/r/commit/abc".into(),
    };
    FilesBlock::new(image_links(&shown), result, |in_result| {
        files_md(
            &shown,
            &home,
            &[],
            "",
            "https://github.com/o/r/actions/runs/1",
            in_result,
        )
    })
}

/// The answer (comment, summary) of `names` as HTML, and the Markdown.
fn answers(names: &[String]) -> Vec<(String, String)> {
    let r = report_with(names);
    let ctx = RenderContext {
        run_url: Some("https://github.com/o/r/actions/runs/1".into()),
        files: Some(files_for(names, r.result.as_ref())),
        ..RenderContext::default()
    };
    [markdown(&r, &ctx), summary(&r, &ctx)]
        .into_iter()
        .map(|md| (gfm(&md), md))
        .collect()
}

/// The markup of `html`: its tags, line breaks aside (a result's text keeps
/// its line breaks as `<br>`).
fn markup(html: &str) -> Vec<String> {
    tags(html).into_iter().filter(|t| t != "br").collect()
}

#[test]
fn hostile_strings_make_no_markup_and_show_literally() {
    let hostile: Vec<String> = HOSTILE.iter().map(|s| s.to_string()).collect();
    let plain: Vec<String> = HOSTILE
        .iter()
        .enumerate()
        .map(|(i, s)| harmless(i, s))
        .collect();
    // To look at it as a person would: `HOSTILE_ANSWER_MD=/tmp/h.md`, then
    // `scripts/render-preview --open /tmp/h.md`.
    if let Some(path) = std::env::var_os("HOSTILE_ANSWER_MD") {
        std::fs::write(path, &answers(&hostile)[0].1).unwrap();
    }
    for ((html, md), (twin, _)) in answers(&hostile).into_iter().zip(answers(&plain)) {
        let (got, want) = (markup(&html), markup(&twin));
        if let Some(at) = (0..got.len().max(want.len())).find(|i| got.get(*i) != want.get(*i)) {
            let from = at.saturating_sub(8);
            panic!(
                "hostile markup at tag {at}: {:?} where harmless strings make {:?}\n{md}",
                &got[from..(at + 8).min(got.len())],
                &want[from..(at + 8).min(want.len())]
            );
        }
        assert_eq!(html.matches("<h3>").count(), 1, "{html}");
        // Raw, only the line breaks and tabs of the Markdown and of fenced
        // blocks, and the zero-width spaces that break mentions and links.
        let raw = |c: char| !matches!(c, '\n' | '\r' | '\t' | '\u{200B}');
        assert!(
            !md.chars().any(|c| crate::markdown::is_hidden(c) && raw(c)),
            "{md:?}"
        );
        let text = text_of(&html);
        // The forged name, its line breaks shown, in the Artifacts cell,
        // the audit and the files list.
        let shown = FORGED.replace('\n', "\\n");
        assert!(
            text.matches(&shown).count() >= 3,
            "{shown:?} not shown:\n{md}"
        );
        assert!(!html.contains("<h3>✅ Verified"), "{html}");
        for made in [
            "href=\"https://evil",
            "href=\"http://www.evil",
            "src=\"https://evil",
        ] {
            assert!(!html.contains(made), "{made}: {html}");
        }
    }
}

#[test]
fn the_forged_heading_is_what_the_old_artifacts_cell_let_through() {
    // The old cell wrote the name in backticks with only `|` escaped; read
    // back, its line breaks ended the table and made a heading.
    let old = format!(
        "| | |\n| --- | --- |\n| Artifacts | `{}` |\n",
        FORGED.replace('|', "\\|")
    );
    assert!(gfm(&old).contains("<h3>✅ Verified by the kernel</h3>"));
    let new = format!(
        "| | |\n| --- | --- |\n| Artifacts | {} |\n",
        cell_code_span(FORGED)
    );
    let html = gfm(&new);
    assert!(!html.contains("<h3>"), "{html}");
    assert_eq!(html.matches("<tr>").count(), 2, "{html}");
}

#[test]
fn a_megabyte_name_is_cut_where_it_is_shown() {
    let big = format!("{}\n# x", "n|`".repeat(350_000));
    let names = vec![big; 3];
    let r = report_with(&names);
    let md = markdown(&r, &RenderContext::default());
    assert!(md.chars().count() <= COMMENT_LIMIT);
    let sum = summary(&r, &RenderContext::default());
    assert!(sum.len() <= SUMMARY_LIMIT);
    let html = gfm(&md);
    assert_eq!(html.matches("<h3>").count(), 1, "{md}");
}

#[test]
fn the_terminal_shows_control_sequences_as_escapes() {
    let mut r = report_with(&["a\u{1b}[2J\u{9b}31m\u{202E}b".to_string()]);
    if let Some(o) = r.outcome.as_mut() {
        o.tampered = vec!["x\u{7}y".into()];
    }
    let t = text(&r);
    assert!(
        !t.chars().any(|c| c.is_control() && c != '\n' && c != '\t'),
        "{t:?}"
    );
    assert!(t.contains("\\u{1b}[2J\\u{9b}31m\\u{202e}b"), "{t}");
}
