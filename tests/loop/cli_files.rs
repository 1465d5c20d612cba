//! `compute-bot run --goal ... --artifacts DIR` end to end (the model
//! stand-in writes the code, the real sandbox runs it): the files the code
//! left in `/out` are written into DIR, and `--format markdown` shows the
//! chart inline and links the other files relative to DIR.

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
}
