//! The generation request's size on the analysis benchmark's questions, as
//! the model receives it, and whether each library the question's program
//! uses is still described in it.
//!
//! Every DABench question that has a program in `benches/analysis/<id>.py`
//! and its table in the held-out data (`$BENCH_ANALYSIS_DATA`, else
//! `../shared/heldout/ds/dabench`) is sent through the real loop as a plan
//! (`Request::plan_only`: generate and check, no container): the goal is the
//! question, its constraints and its answer format, the input its table, the
//! policy the built-in one, the image's labels the real sandbox image's. The
//! loopback OpenAI stand-in answers with that question's program, and the
//! request it received — system prompt, user message, tool — is measured:
//! characters and an approximate token count (characters / 4; no tokenizer
//! vocabulary is available offline). For each program the bench lists the
//! analysis libraries it imports (SciPy, statsmodels, scikit-learn,
//! seaborn) whose paragraph the system prompt lacks: "missing" must be 0.
//!
//! Measured 2026-12-02 (debug build, the same requests before and after the
//! prompt was sized to the question), medians of system + user characters:
//! the 44 plain-pandas questions 7,413 → 5,179 (−29.9 % per question, −23 %
//! to −36 %), the 41 that use SciPy, statsmodels, scikit-learn or seaborn
//! 7,694 → 5,946 (−24.9 %), all 85 7,527 → 5,471 (−28.3 %); the system
//! prompt alone 5,643 → 3,149 / 3,408. Missing paragraphs: 0.
//!
//! Run with: `cargo bench --bench prompt_size` (add `-- 10` for the first
//! ten questions; `PROMPT_SIZE_SHOW=<id>` prints that question's whole
//! request on stderr, `all` every one). Nothing of the held-out data is in the repository; the
//! bench prints only sizes and question ids.

// Function length is a rule for src/ and crates/*/src/ (Cargo.toml,
// `[workspace.lints]`), not for a test crate or a bench.
#![allow(clippy::too_many_lines)]

#[path = "../tests/support/llm_standin.rs"]
mod llm_standin;

use std::path::{Path, PathBuf};

use compute_bot::agent::{Agent, Request, Stage};
use compute_bot::model::ModelClient;
use compute_bot::policy::Policy;
use compute_bot::report::ReportStatus;
use compute_bot::sandbox::{InputFile, docker::Docker};
use llm_standin::{LlmStandin, Reply};
use serde_json::Value;

/// The analysis libraries a program may import, and the words of the
/// system prompt's paragraph about each.
const LIBRARIES: [(&str, &str); 4] = [
    ("scipy", "- SciPy "),
    ("statsmodels", "- statsmodels "),
    ("sklearn", "- scikit-learn "),
    ("seaborn", "- seaborn "),
];

fn data_dir() -> PathBuf {
    std::env::var_os("BENCH_ANALYSIS_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("../shared/heldout/ds/dabench"))
}

/// True when `code` imports `lib` (`import lib`, `import lib.x`, `from lib...`).
fn imports(code: &str, lib: &str) -> bool {
    code.lines().any(|l| {
        let l = l.trim_start();
        [format!("import {lib}"), format!("from {lib}")]
            .iter()
            .any(|p| {
                l.strip_prefix(p.as_str())
                    .is_some_and(|rest| rest.starts_with([' ', '.', ',', '\n']) || rest.is_empty())
            })
    })
}

struct Measured {
    id: u64,
    system: usize,
    user: usize,
    total: usize,
    analysis: bool,
    missing: Vec<&'static str>,
}

fn median(mut v: Vec<usize>) -> usize {
    v.sort();
    if v.is_empty() { 0 } else { v[v.len() / 2] }
}

fn questions(dir: &Path, limit: usize) -> Vec<(Value, String, PathBuf)> {
    let text = std::fs::read_to_string(dir.join("da-dev-questions.jsonl"))
        .unwrap_or_else(|e| panic!("the held-out questions in {}: {e}", dir.display()));
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|q| {
            let id = q["id"].as_u64()?;
            let code = std::fs::read_to_string(format!("benches/analysis/{id}.py")).ok()?;
            let table = dir.join("da-dev-tables").join(q["file_name"].as_str()?);
            table.exists().then_some((q, code, table))
        })
        .take(limit)
        .collect()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let limit: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(usize::MAX);
    let policy = Policy::default();
    let sandbox = Docker::connect().await.expect("the Docker engine");
    let llm = LlmStandin::openai().await;
    let model = ModelClient::new(llm.config()).expect("model client");
    let progress = |_: Stage| {};
    let agent = Agent {
        policy: &policy,
        sandbox: &sandbox,
        model: Some(&model),
        runtime: compute_bot::sandbox::Runtime::default(),
        progress: &progress,
    };
    let mut rows = Vec::new();
    for (q, code, table) in questions(&data_dir(), limit) {
        let goal = format!(
            "{}\n\nConstraints: {}\n\nAnswer format: {}",
            q["question"].as_str().unwrap_or_default(),
            q["constraints"].as_str().unwrap_or_default(),
            q["format"].as_str().unwrap_or_default()
        );
        let name = table.file_name().unwrap().to_string_lossy().to_string();
        let bytes = std::fs::read(&table).expect("table");
        llm.push(Reply::tool_call("Compute it with pandas.", &code));
        let before = llm.requests().len();
        let report = agent
            .answer(Request {
                goal: Some(goal),
                inputs: vec![InputFile::new(name, bytes)],
                plan_only: true,
                ..Default::default()
            })
            .await
            .expect("plan");
        assert_eq!(report.status, ReportStatus::Planned, "{report:#?}");
        let req = &llm.requests()[before];
        let system = req.system_prompt().unwrap_or_default();
        // `PROMPT_SIZE_SHOW=<id>` prints that question's whole request.
        let show = std::env::var("PROMPT_SIZE_SHOW").ok();
        if show.as_deref() == Some("all") || show == q["id"].as_u64().map(|i| i.to_string()) {
            eprintln!("{system}\n----\n{:#?}", req.messages());
        }
        let user: usize = req
            .messages()
            .iter()
            .filter(|(role, _)| role == "user")
            .map(|(_, c)| c.chars().count())
            .sum();
        let body = req.body.chars().count();
        let used: Vec<&str> = LIBRARIES
            .iter()
            .filter(|(lib, _)| imports(&code, lib))
            .map(|(lib, _)| *lib)
            .collect();
        let missing = LIBRARIES
            .iter()
            .filter(|(lib, words)| used.contains(lib) && !system.contains(words))
            .map(|(lib, _)| *lib)
            .collect();
        rows.push(Measured {
            id: q["id"].as_u64().unwrap_or_default(),
            system: system.chars().count(),
            user,
            total: body,
            analysis: !used.is_empty(),
            missing,
        });
    }
    report(&rows);
}

fn report(rows: &[Measured]) {
    println!(
        "id\tsystem chars\tuser chars\trequest body chars\t~tokens (system+user)/4\tanalysis\tmissing"
    );
    for r in rows {
        println!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}",
            r.id,
            r.system,
            r.user,
            r.total,
            (r.system + r.user) / 4,
            r.analysis,
            r.missing.join(",")
        );
    }
    for (label, pick) in [
        ("all", None),
        ("with scipy/statsmodels/sklearn/seaborn", Some(true)),
        ("plain pandas", Some(false)),
    ] {
        let sel: Vec<&Measured> = rows
            .iter()
            .filter(|r| pick.is_none_or(|p| r.analysis == p))
            .collect();
        let sys = median(sel.iter().map(|r| r.system).collect());
        let user = median(sel.iter().map(|r| r.user).collect());
        let both = median(sel.iter().map(|r| r.system + r.user).collect());
        println!(
            "{label} ({} questions): median system {sys} chars, user {user} chars, system+user {both} chars (~{} tokens)",
            sel.len(),
            both / 4
        );
    }
    let missing: usize = rows.iter().map(|r| r.missing.len()).sum();
    println!("libraries a program imports whose paragraph is missing: {missing}");
    assert_eq!(missing, 0, "a needed paragraph went missing");
}
