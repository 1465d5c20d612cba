//! The run's files in the thread (issue 18): a chart the code saved in
//! `/out` is committed to the files branch through the stand-in's Git Data
//! API and shown inline, its link pinned to the commit; with a read-only
//! token the answer still posts in full and points at the run's artifact;
//! a run that races another for the branch still lands; the run as a
//! notebook goes with its files. Real sandbox.

use crate::support::action_fixture::{
    ActionFixture, COMMENT, REPO, TOKEN, fenced, snapshot_sandbox_comment,
};
use serde_json::Value;

const BRANCH: &str = "compute-bot-assets";
const SERVER: &str = "https://github.example";

/// Draws a line chart of conversion by day, writes the numbers as CSV, and
/// prints them as the result.
const CHART: &str = r#"import json
import matplotlib.pyplot as plt
days = ["2024-03-01", "2024-03-02", "2024-03-03", "2024-03-04"]
rate = [0.12, 0.18, 0.15, 0.21]
fig, ax = plt.subplots(figsize=(5, 3))
ax.plot(days, rate, marker="o")
ax.set_title("Conversion by day")
ax.set_ylabel("conversion")
fig.tight_layout()
fig.savefig("/out/conversion.png")
with open("/out/by_day.csv", "w") as f:
    f.write("day,conversion\n" + "".join(f"{d},{r}\n" for d, r in zip(days, rate)))
print(json.dumps({"by_day": [{"day": d, "conversion": r} for d, r in zip(days, rate)]}))
"#;

async fn fixture() -> ActionFixture {
    let f = ActionFixture::builder().start().await;
    f.gh.seed_branch(REPO, "main", &[("README.md", b"# data\n")]);
    f
}

/// Every `(alt, url)` of an image in `md`.
fn images(md: &str) -> Vec<(String, String)> {
    md.match_indices("![")
        .filter_map(|(i, _)| {
            let rest = &md[i + 2..];
            let close = rest.find("](")?;
            let end = rest[close + 2..].find(')')?;
            Some((
                rest[..close].to_string(),
                rest[close + 2..close + 2 + end].to_string(),
            ))
        })
        .collect()
}

/// `(commit sha, repository path)` of a pinned link
/// `{SERVER}/{REPO}/blob/<sha>/<path>?raw=true`.
fn pinned(url: &str) -> (String, String) {
    let rest = url
        .strip_prefix(&format!("{SERVER}/{REPO}/blob/"))
        .unwrap_or_else(|| panic!("not a pinned blob link: {url}"));
    let rest = rest
        .strip_suffix("?raw=true")
        .unwrap_or_else(|| panic!("no ?raw=true: {url}"));
    let (sha, path) = rest.split_once('/').unwrap();
    (sha.to_string(), path.to_string())
}

/// The sha256 the report recorded for the file `name` the sandbox wrote.
fn reported_sha256(report: &Value, name: &str) -> String {
    report["outcome"]["artifacts"]
        .as_array()
        .expect("artifacts in the report")
        .iter()
        .find(|a| a["name"] == name)
        .unwrap_or_else(|| panic!("no artifact {name}"))["sha256"]
        .as_str()
        .unwrap()
        .to_string()
}

fn sha256_hex(bytes: &[u8]) -> String {
    compute_bot::sandbox::sha256_hex(bytes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn charts_are_committed_and_the_image_link_resolves_to_the_bytes_the_sandbox_wrote() {
    let f = fixture().await;
    f.comment(
        "alice",
        &format!("/compute conversion by day\n{}", fenced(CHART)),
    );
    let run = f.run(COMMENT, "7101").await;
    assert_eq!(run.code, 0, "{}", run.log());
    let body = f.bot_comments(7).last().unwrap().body.clone();

    let imgs = images(&body);
    assert_eq!(imgs.len(), 1, "one image\n{body}");
    assert_eq!(imgs[0].0, "conversion.png");
    let (sha, path) = pinned(&imgs[0].1);
    assert_eq!(path, "runs/7101-1/conversion.png");
    assert_eq!(f.gh.branch_sha(REPO, BRANCH).as_deref(), Some(sha.as_str()));
    let committed = f.gh.files_at(REPO, &sha);
    let png = &committed[&path];
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    // Exactly the bytes the sandbox wrote: the report's hash of the file it
    // collected, and the copy kept for the workflow's artifact.
    let report = f.report(&run);
    assert_eq!(sha256_hex(png), reported_sha256(&report, "conversion.png"));
    let kept = f
        .ws()
        .join("compute-bot-reports/runs/7101-1/conversion.png");
    assert_eq!(&std::fs::read(&kept).unwrap(), png);

    // The CSV is linked, pinned to the same commit, with its bytes (not in
    // the snapshot alone: it names the commit `[commit]`).
    let csv_link = format!("{SERVER}/{REPO}/blob/{sha}/runs/7101-1/by_day.csv?raw=true");
    assert!(
        body.contains(&format!("[`by_day.csv`]({csv_link})")),
        "{body}"
    );
    assert!(
        String::from_utf8_lossy(&committed["runs/7101-1/by_day.csv"])
            .starts_with("day,conversion\n2024-03-01,0.12\n")
    );
    // The run as a notebook goes with its files, linked the same way: the
    // exact code that ran and its real output, valid nbformat 4.5 (the link
    // checked here for its commit too).
    let nb_link = format!("{SERVER}/{REPO}/blob/{sha}/runs/7101-1/answer.ipynb?raw=true");
    assert!(
        body.contains(&format!("[`answer.ipynb`]({nb_link})")),
        "{body}"
    );
    let nb = &committed["runs/7101-1/answer.ipynb"];
    use crate::support::notebook;
    assert_eq!(notebook::schema_errors(nb), Vec::<String>::new());
    let cell = &notebook::read(nb)["cells"][0];
    assert_eq!(
        notebook::text(&cell["source"]),
        report["code"].as_str().unwrap()
    );
    assert_eq!(
        notebook::text(&cell["outputs"][0]["text"]),
        report["outcome"]["stdout"].as_str().unwrap()
    );
    assert_eq!(
        cell["metadata"]["compute_bot"]["code_sha256"],
        report["code_sha256"]
    );
    assert_eq!(
        cell["metadata"]["compute_bot"]["record_id"],
        report["outcome"]["container"]
    );
    assert_eq!(
        &std::fs::read(f.ws().join("compute-bot-reports/runs/7101-1/answer.ipynb")).unwrap(),
        nb
    );
    // The branch holds only the run's folder (an orphan commit), and main
    // did not move.
    assert_eq!(committed.len(), 3, "{:?}", committed.keys());
    assert!(f.gh.commit_info(REPO, &sha).unwrap().parents.is_empty());
    // The picture replaces the mermaid chart rebuilt from the result; the
    // job summary shows it too.
    assert!(!body.contains("xychart-beta"), "{body}");
    assert!(run.summary.contains(&imgs[0].1), "{}", run.summary);
    assert!(
        body.contains(&format!("{SERVER}/{REPO}/commit/{sha}")),
        "{body}"
    );

    snapshot_sandbox_comment("files_committed", &body);

    // A second run lands in its own folder on top of the first.
    f.comment("alice", &format!("/compute again\n{}", fenced(CHART)));
    let again = f.run(COMMENT, "7102").await;
    assert_eq!(again.code, 0, "{}", again.log());
    let head = f.gh.branch_sha(REPO, BRANCH).unwrap();
    let files = f.gh.files_at(REPO, &head);
    assert!(files.contains_key("runs/7101-1/conversion.png"));
    assert!(files.contains_key("runs/7102-1/conversion.png"));
    assert_eq!(
        f.gh.commit_info(REPO, &head).unwrap().parents,
        vec![sha.clone()]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_token_still_posts_the_answer_and_points_at_the_artifact() {
    let f = fixture().await;
    f.gh.set_token_access(TOKEN, "read", "write");
    f.comment(
        "alice",
        &format!("/compute conversion by day\n{}", fenced(CHART)),
    );
    let run = f.run(COMMENT, "7201").await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(run.out("status"), "ok");
    let body = f.bot_comments(7).last().unwrap().body.clone();
    // The answer in full: the result (2024-03-04) and the code
    // (`fig.savefig`); the files named, the note (`contents: write`) with the
    // run's link where the artifact is; without a picture, the mermaid chart
    // of the result stays, as a line.
    snapshot_sandbox_comment("files_read_only_token", &body);
    // No image (it would be broken).
    assert!(images(&body).is_empty(), "{body}");
    assert!(!body.contains("/blob/"), "{body}");
    assert_eq!(f.gh.branch_sha(REPO, BRANCH), None);
    // The files are kept for the workflow's upload-artifact step.
    assert!(
        f.ws()
            .join("compute-bot-reports/runs/7201-1/conversion.png")
            .exists()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_racing_another_for_the_branch_still_lands_with_both_runs_files() {
    let f = fixture().await;
    f.gh.seed_branch(REPO, BRANCH, &[("runs/1-1/old.csv", b"a\n1\n")]);
    f.gh.race_next_ref_write(REPO, BRANCH, &[("runs/7300-1/other.csv", b"b\n2\n")]);
    f.comment(
        "alice",
        &format!("/compute conversion by day\n{}", fenced(CHART)),
    );
    let run = f.run(COMMENT, "7301").await;
    assert_eq!(run.code, 0, "{}", run.log());
    let body = f.bot_comments(7).last().unwrap().body.clone();
    let imgs = images(&body);
    assert_eq!(imgs.len(), 1, "{body}");
    let (sha, path) = pinned(&imgs[0].1);
    assert_eq!(f.gh.branch_sha(REPO, BRANCH).as_deref(), Some(sha.as_str()));
    let files = f.gh.files_at(REPO, &sha);
    assert_eq!(
        sha256_hex(&files[&path]),
        reported_sha256(&f.report(&run), "conversion.png")
    );
    assert!(files.contains_key("runs/1-1/old.csv"));
    assert!(
        files.contains_key("runs/7300-1/other.csv"),
        "the other run's files stay"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_over_the_policy_caps_are_named_and_not_committed() {
    let f = ActionFixture::builder()
        .policy("output:\n  files:\n    max_files: 1\n")
        .start()
        .await;
    f.gh.seed_branch(REPO, "main", &[("README.md", b"# data\n")]);
    f.comment(
        "alice",
        &format!("/compute conversion by day\n{}", fenced(CHART)),
    );
    let run = f.run(COMMENT, "7401").await;
    assert_eq!(run.code, 0, "{}", run.log());
    let body = f.bot_comments(7).last().unwrap().body.clone();
    // Files come in the order written: the chart (saved first) fits,
    // by_day.csv is left out and named.
    let head = f.gh.branch_sha(REPO, BRANCH).unwrap();
    let files = f.gh.files_at(REPO, &head);
    assert_eq!(
        files.keys().collect::<Vec<_>>(),
        ["runs/7401-1/conversion.png"]
    );
    assert_eq!(images(&body).len(), 1, "{body}");
    // The left-out `by_day.csv` named, over the policy's caps.
    snapshot_sandbox_comment("files_over_caps", &body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_that_fails_still_posts_the_answer_with_the_reason_and_no_image() {
    // A repository without any commit: GitHub's Git Data API answers 409.
    let f = ActionFixture::builder().start().await;
    f.comment(
        "alice",
        &format!("/compute conversion by day\n{}", fenced(CHART)),
    );
    let run = f.run(COMMENT, "7501").await;
    assert_eq!(run.code, 0, "{}", run.log());
    assert_eq!(run.out("status"), "ok");
    let body = f.bot_comments(7).last().unwrap().body.clone();
    assert!(images(&body).is_empty(), "{body}");
    assert!(!body.contains("/blob/"), "{body}");
    // Writing them failed (no commit yet), the run's link, the result.
    snapshot_sandbox_comment("files_write_failed", &body);
    assert_eq!(f.gh.branch_sha(REPO, BRANCH), None);
}

/// A result that names its chart (`"chart": "/out/conversion.png"`) shows
/// the committed image where that key sits in the Result block, and the
/// files part links it instead of showing it a second time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_naming_its_chart_shows_it_beside_its_numbers_once() {
    let f = fixture().await;
    let code = CHART.replace(
        r#"print(json.dumps({"by_day""#,
        r#"print(json.dumps({"chart": "/out/conversion.png", "by_day""#,
    );
    assert_ne!(code, CHART);
    f.comment(
        "alice",
        &format!("/compute conversion by day\n{}", fenced(&code)),
    );
    let run = f.run(COMMENT, "7105").await;
    assert_eq!(run.code, 0, "{}", run.log());
    let body = f.bot_comments(7).last().unwrap().body.clone();

    let imgs = images(&body);
    assert_eq!(imgs.len(), 1, "the chart once\n{body}");
    assert_eq!(imgs[0].0, "chart");
    let (_, path) = pinned(&imgs[0].1);
    assert_eq!(path, "runs/7105-1/conversion.png");
    let result = body.find("#### Result").expect("a Result block");
    let image = body.find("![chart](").unwrap();
    let by_day = body.find("**by\\_day**").expect("the numbers' table");
    let files = body.find("#### Files").expect("the files part");
    assert!(result < image && image < by_day && by_day < files, "{body}");
    // The same link as the image's (the snapshot names its commit
    // `[commit]`).
    assert!(
        body.contains(&format!("[`conversion.png`]({}) ·", imgs[0].1))
            && body.contains("· shown with the result"),
        "the files part links it\n{body}"
    );
    snapshot_sandbox_comment("files_chart_in_result", &body);
}
