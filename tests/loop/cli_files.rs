//! `compute-bot run --goal ... --artifacts DIR` end to end (the model
//! stand-in writes the code, the real sandbox runs it): the files the code
//! left in `/out` are written into DIR with the run as a notebook, and
//! `--format markdown` shows the chart inline and links the other files
//! relative to DIR. `run --code` takes an `.ipynb` and writes its run as a
//! notebook too (real engine, no model).

use std::process::Output;

use crate::support::llm_standin::{CANARY_KEY, LlmStandin, Reply};

const CHART: &str = r#"import json
import matplotlib.pyplot as plt
days = ["2024-03-01", "2024-03-02", "2024-03-03"]
rate = [0.12, 0.18, 0.15]
fig, ax = plt.subplots(figsize=(4, 3))
ax.plot(days, rate, marker="o")
fig.savefig("/out/conversion.png")
with open("/out/by_day.csv", "w") as f:
    f.write("day,conversion\n" + "".join(f"{d},{r}\n" for d, r in zip(days, rate)))
print(json.dumps({"by_day": [{"day": d, "conversion": r} for d, r in zip(days, rate)]}))
"#;

async fn run_goal(llm: &LlmStandin, dir: &std::path::Path, format: &str) -> Output {
    let base_url = llm.base_url();
    let dir = dir.to_path_buf();
    let format = format.to_string();
    tokio::task::spawn_blocking(move || {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_compute-bot"));
        cmd.current_dir(&dir).args([
            "run",
            "--goal",
            "Plot the conversion by day.",
            "--artifacts",
            "charts out",
            "--format",
            &format,
        ]);
        for k in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "COMPUTE_BOT_PROVIDER",
            "GITHUB_ACTIONS",
            "COMPUTE_BOT_RUNTIME",
        ] {
            cmd.env_remove(k);
        }
        cmd.env("COMPUTE_BOT_API_KEY", CANARY_KEY)
            .env("COMPUTE_BOT_MODEL", "gpt-test")
            .env("COMPUTE_BOT_BASE_URL", base_url)
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_goal_writes_the_files_and_markdown_links_them_relatively() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::code("Plot the rate and print it.", CHART));
    llm.push(Reply::text("Conversion peaked on 2 March."));
    let dir = tempfile::tempdir().unwrap();
    let out = run_goal(&llm, dir.path(), "markdown").await;
    let md = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{md}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let png = std::fs::read(dir.path().join("charts out/conversion.png")).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
    let csv = std::fs::read_to_string(dir.path().join("charts out/by_day.csv")).unwrap();
    assert!(
        csv.starts_with("day,conversion\n2024-03-01,0.12\n"),
        "{csv}"
    );
    assert!(
        md.contains("![conversion.png](charts%20out/conversion.png)"),
        "{md}"
    );
    assert!(
        md.contains("- [`by_day.csv`](charts%20out/by_day.csv) · "),
        "{md}"
    );
    // The picture stands in for the mermaid chart.
    assert!(!md.contains("xychart-beta"), "{md}");
    // The run as a notebook, linked with the files: the exact code, its real output.
    assert!(
        md.contains("- [`answer.ipynb`](charts%20out/answer.ipynb) · "),
        "{md}"
    );
    let written = std::fs::read(dir.path().join("charts out/answer.ipynb")).unwrap();
    let cell = the_cell(&written, CHART);
    assert_eq!(
        crate::support::notebook::text(&cell["outputs"][0]["text"]),
        "{\"by_day\": [{\"day\": \"2024-03-01\", \"conversion\": 0.12}, {\"day\": \"2024-03-02\", \"conversion\": 0.18}, {\"day\": \"2024-03-03\", \"conversion\": 0.15}]}\n"
    );
}

/// A notebook to run: markdown and raw cells, a code cell that defines
/// `counts`, one that prints it, one that prints the result from it.
fn analysis_notebook() -> serde_json::Value {
    serde_json::json!({
        "nbformat": 4, "nbformat_minor": 4,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Counts\n", "A look first."]},
            {"cell_type": "code", "metadata": {}, "execution_count": 1,
             "source": ["import json\n", "counts = {'paid': 2, 'payed': 1}"],
             "outputs": [{"output_type": "stream", "name": "stdout", "text": ["stale output\n"]}]},
            {"cell_type": "raw", "metadata": {}, "source": "not run"},
            {"cell_type": "code", "metadata": {}, "execution_count": null, "outputs": [],
             "source": "print('counts:', counts)\n"},
            {"cell_type": "code", "metadata": {}, "execution_count": null, "outputs": [],
             "source": ["print(json.dumps({'paid': counts['paid'] + counts['payed']}))\n"]}
        ]
    })
}

/// The program the notebook's code cells make, joined in order.
const ANALYSIS_PROGRAM: &str = "# %% cell 2\nimport json\ncounts = {'paid': 2, 'payed': 1}\n# %% cell 4\nprint('counts:', counts)\n# %% cell 5\nprint(json.dumps({'paid': counts['paid'] + counts['payed']}))\n";

/// Runs `compute-bot run ARGS` in `dir`, no model configured.
async fn run_in(dir: &std::path::Path, args: &[&str]) -> Output {
    let dir = dir.to_path_buf();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_compute-bot"));
        cmd.current_dir(&dir).args(&args);
        for k in [
            "COMPUTE_BOT_API_KEY",
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "COMPUTE_BOT_PROVIDER",
            "GITHUB_ACTIONS",
            "COMPUTE_BOT_RUNTIME",
        ] {
            cmd.env_remove(k);
        }
        cmd.output().unwrap()
    })
    .await
    .unwrap()
}

/// The one code cell of a written notebook, after checking the notebook
/// against nbformat 4.5's schema and its source against `program`.
fn the_cell(bytes: &[u8], program: &str) -> serde_json::Value {
    use crate::support::notebook;
    assert_eq!(notebook::schema_errors(bytes), Vec::<String>::new());
    let nb = notebook::read(bytes);
    assert_eq!(
        (nb["nbformat"].as_u64(), nb["nbformat_minor"].as_u64()),
        (Some(4), Some(5))
    );
    let cells = nb["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 1, "{nb:#}");
    assert_eq!(
        notebook::text(&cells[0]["source"]),
        program,
        "byte for byte"
    );
    cells[0].clone()
}

/// The code cells of a written notebook, after checking the notebook
/// against nbformat 4.5's schema and its sources against `codes`.
fn the_cells(bytes: &[u8], codes: &[&str]) -> Vec<serde_json::Value> {
    use crate::support::notebook;
    assert_eq!(notebook::schema_errors(bytes), Vec::<String>::new());
    let nb = notebook::read(bytes);
    let cells = nb["cells"].as_array().unwrap().clone();
    let sources: Vec<String> = cells.iter().map(|c| notebook::text(&c["source"])).collect();
    assert_eq!(sources, codes, "byte for byte, one cell per step");
    cells
}

/// The analysis notebook's code cells, each as it runs as a step.
const ANALYSIS_CELLS: [&str; 3] = [
    "import json\ncounts = {'paid': 2, 'payed': 1}\n",
    "print('counts:', counts)\n",
    "print(json.dumps({'paid': counts['paid'] + counts['payed']}))\n",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_code_notebook_runs_its_code_cells_as_steps_and_writes_the_session_as_a_notebook() {
    let dir = tempfile::tempdir().unwrap();
    let input = serde_json::to_vec_pretty(&analysis_notebook()).unwrap();
    std::fs::write(dir.path().join("analysis.ipynb"), &input).unwrap();
    // DIR is where the notebook sits: the run's notebook takes another name.
    let out = run_in(
        dir.path(),
        &[
            "run",
            "--code",
            "analysis.ipynb",
            "--artifacts",
            ".",
            "--format",
            "json",
        ],
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let o: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(o["status"], "ok", "{o:#}");
    // Each cell is its own step with its own output; step 2 printed what
    // step 1 defined: one interpreter, state kept.
    let steps = o["steps"].as_array().unwrap();
    let stdouts: Vec<&str> = steps
        .iter()
        .map(|s| s["stdout"].as_str().unwrap())
        .collect();
    assert_eq!(
        stdouts,
        ["", "counts: {'paid': 2, 'payed': 1}\n", "{\"paid\": 3}\n"]
    );
    let numbers: Vec<u64> = steps.iter().map(|s| s["step"].as_u64().unwrap()).collect();
    assert_eq!(numbers, [1, 2, 3]);
    let containers: std::collections::BTreeSet<&str> = steps
        .iter()
        .map(|s| s["container"].as_str().unwrap())
        .collect();
    assert_eq!(
        containers.len(),
        1,
        "one container for the session: {containers:?}"
    );
    assert_eq!(o["stdout"], "{\"paid\": 3}\n", "the final step's outcome");
    let notes = o["notes"].to_string();
    assert!(
        notes.contains("`analysis.ipynb` is a notebook: its 3 code cells ran in order as 3 steps of one session"),
        "{notes}"
    );
    assert_eq!(
        std::fs::read(dir.path().join("analysis.ipynb")).unwrap(),
        input,
        "the input is left as it was"
    );
    let written = std::fs::read(dir.path().join("analysis.run.ipynb")).unwrap();
    let cells = the_cells(&written, &ANALYSIS_CELLS);
    assert_eq!(
        cells[1]["outputs"],
        serde_json::json!([{"output_type": "stream", "name": "stdout",
            "text": ["counts: {'paid': 2, 'payed': 1}\n"]}])
    );
    for (cell, code) in cells.iter().zip(ANALYSIS_CELLS) {
        let meta = &cell["metadata"]["compute_bot"];
        assert_eq!(
            meta["code_sha256"],
            compute_bot::sandbox::sha256_hex(code.as_bytes())
        );
        assert_eq!(meta["status"], "ok");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn percent_code_runs_as_steps_a_failing_cell_stops_and_a_refused_cell_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let code = "# %% load\nrows = {'a': 1}\nprint('looking')\n# %% fail\nprint(rows['b'])\n# %% never\nprint('not reached')\n";
    std::fs::write(dir.path().join("look.py"), code).unwrap();
    let out = run_in(
        dir.path(),
        &["run", "--code", "look.py", "--format", "json"],
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let o: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let steps = o["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "the third cell did not run: {o:#}");
    assert_eq!(steps[0]["stdout"], "looking\n");
    assert_eq!(steps[1]["status"], "error");
    assert!(
        steps[1]["stderr"].as_str().unwrap().contains("KeyError"),
        "{o:#}"
    );
    // A refused cell: nothing runs, and the line is the file's.
    let refused = "# %%\nx = 1\nprint(x)\n# %%\nimport socket\n";
    std::fs::write(dir.path().join("net.py"), refused).unwrap();
    let out = run_in(dir.path(), &["run", "--code", "net.py"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("5:8 network deny"), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing ran");
    // A cell that is no program alone (a block split across cells) is
    // refused before anything runs.
    let split = "# %%\nprint('first')\nif True:\n# %%\n    print('inside')\n";
    std::fs::write(dir.path().join("split.py"), split).unwrap();
    let out = run_in(dir.path(), &["run", "--code", "split.py"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("syntax-error"), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_runs_notebook_shows_the_traceback_as_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let code = "rows = {'a': 1}\nprint('looking')\nprint(rows['b'])\n";
    std::fs::write(dir.path().join("look.py"), code).unwrap();
    let out = run_in(
        dir.path(),
        &["run", "--code", "look.py", "--artifacts", "nb"],
    )
    .await;
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = std::fs::read(dir.path().join("nb/look.ipynb")).unwrap();
    let cell = the_cell(&written, code);
    let outs = cell["outputs"].as_array().unwrap();
    assert_eq!(outs[0]["text"], serde_json::json!(["looking\n"]));
    let err = outs.last().unwrap();
    assert_eq!(err["output_type"], "error", "{outs:?}");
    assert_eq!(err["ename"], "KeyError");
    assert_eq!(err["evalue"], "'b'");
    assert_eq!(cell["metadata"]["compute_bot"]["status"], "error");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_notebook_is_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("old.ipynb"),
        br#"{"nbformat": 3, "worksheets": []}"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("bad.ipynb"), b"{\"cells\": [\xff").unwrap();
    for (file, says) in [
        (
            "old.ipynb",
            "convert it with `jupyter nbconvert --to notebook --nbformat 4 old.ipynb`",
        ),
        ("bad.ipynb", "notebook `bad.ipynb` is not readable as JSON"),
    ] {
        let out = run_in(dir.path(), &["run", "--code", file]).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notebook_with_ipython_syntax_is_refused_and_the_note_names_its_cell() {
    let dir = tempfile::tempdir().unwrap();
    let nb = serde_json::json!({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "markdown", "id": "m", "metadata": {}, "source": "# Look"},
        {"cell_type": "code", "id": "c", "metadata": {}, "execution_count": null, "outputs": [],
         "source": ["%matplotlib inline\n", "import json\n"]}
    ]});
    std::fs::write(dir.path().join("magic.ipynb"), nb.to_string()).unwrap();
    let out = run_in(dir.path(), &["run", "--code", "magic.ipynb"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // The finding's line is the joined program's (line 1 is `# %% cell 2`);
    // the note says where it comes from.
    assert!(stderr.contains("2:1 syntax-error"), "{stderr}");
    assert!(
        stderr.contains("cell 2 has IPython syntax, which plain Python does not run: remove `%matplotlib inline`"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loop_runs_a_notebook_s_cells_as_steps_and_notes_it() {
    let dir = tempfile::tempdir().unwrap();
    let input = serde_json::to_vec(&analysis_notebook()).unwrap();
    std::fs::write(dir.path().join("analysis.ipynb"), &input).unwrap();
    let policy = concat!(env!("CARGO_MANIFEST_DIR"), "/policies/default.yml");
    let out = run_in(
        dir.path(),
        &[
            "run",
            "--code",
            "analysis.ipynb",
            "--policy",
            policy,
            "--artifacts",
            "out",
            "--format",
            "json",
        ],
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["status"], "ok", "{r:#}");
    assert_eq!(r["code"], ANALYSIS_PROGRAM);
    assert_eq!(r["result"], serde_json::json!({"paid": 3}));
    assert!(
        r["outcome"]["notes"]
            .to_string()
            .contains("`analysis.ipynb` is a notebook"),
        "{r:#}"
    );
    // The cells ran as steps: each its own output, the last one the result.
    let steps = r["steps"].as_array().unwrap();
    let shown: Vec<(&str, &str, bool)> = steps
        .iter()
        .map(|s| {
            (
                s["kind"].as_str().unwrap(),
                s["stdout"].as_str().unwrap(),
                s["result"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("look", "", false),
            ("look", "counts: {'paid': 2, 'payed': 1}\n", false),
            ("final", "{\"paid\": 3}\n", true)
        ]
    );
    assert_eq!(
        r["code_sha256"],
        compute_bot::sandbox::sha256_hex(ANALYSIS_PROGRAM.as_bytes())
    );
    let written = std::fs::read(dir.path().join("out/analysis.ipynb")).unwrap();
    let cells = the_cells(&written, &ANALYSIS_CELLS);
    assert_eq!(
        cells[2]["metadata"]["compute_bot"]["code_sha256"],
        steps[2]["code_sha256"]
    );
}
