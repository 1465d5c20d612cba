//! The files a run left in `/out`, shown in the thread and hosted by the
//! repository itself: kept in the workspace for the workflow's
//! `actions/upload-artifact` step, committed to the policy's
//! `output.files.branch` (folder `runs/<run id>-<attempt>/`) through the Git
//! Data API, and linked pinned to that commit —
//! `{server}/{owner}/{repo}/blob/<sha>/<path>?raw=true` — so images render
//! inline for everyone who can read the repository (private ones too) and
//! the link never moves. Without `contents: write`, or when the write fails,
//! the files are named with a note pointing at the run's artifact: never a
//! broken image.

use std::path::Path;

use crate::github::rest::client::encode_segment;
use crate::github::texts::{self, FilesHome, ShownFile};
use crate::github::thread::Ctx;
use crate::policy::Files;
use crate::render::FilesBlock;
use crate::report::{Report, ReportStatus};
use crate::sandbox::{Artifact, FileKind};

/// The run's files to show: those of a successful run's outcome, in the
/// order the sandbox sent them (the order written), without `/out/result.json` (the result is
/// shown as the result).
fn run_files(report: &Report) -> Vec<&Artifact> {
    if report.status != ReportStatus::Ok {
        return Vec::new();
    }
    report
        .outcome
        .as_ref()
        .map(|o| {
            o.artifacts
                .iter()
                .filter(|a| a.name != crate::problems::RESULT_FILE && a.rel_path().is_some())
                .collect()
        })
        .unwrap_or_default()
}

/// A successful run as a notebook (`answer.ipynb`, or another name when the
/// code left a file of that name): its exact code and real output.
fn run_notebook(report: &Report) -> Option<Artifact> {
    let cells = report.executed();
    (report.status == ReportStatus::Ok && !cells.is_empty())
        .then(|| crate::notebook::run_file(&cells, "answer", &[]))
}

/// Splits `files` into those within the caps (in order, until the count or
/// the bytes would be exceeded; a file too large alone is skipped, later
/// smaller ones still fit) and those left out.
fn within_caps<'a>(files: &[&'a Artifact], caps: &Files) -> (Vec<&'a Artifact>, Vec<&'a Artifact>) {
    let (mut kept, mut left) = (Vec::new(), Vec::new());
    let mut bytes = 0u64;
    for a in files {
        if kept.len() < caps.max_files as usize && bytes + a.size <= caps.max_bytes.bytes() {
            bytes += a.size;
            kept.push(*a);
        } else {
            left.push(*a);
        }
    }
    (kept, left)
}

/// The folder of this run on the files branch.
fn run_folder(run_id: &str, attempt: u32) -> String {
    let id: String = run_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    format!("runs/{id}-{attempt}")
}

/// The pinned link of `path` in commit `sha`.
fn blob_url(server: &str, repo: &str, sha: &str, path: &str) -> String {
    let path: Vec<String> = path.split('/').map(encode_segment).collect();
    format!("{server}/{repo}/blob/{sha}/{}?raw=true", path.join("/"))
}

/// Keeps the run's files under `keep_dir` (for the workflow's
/// `actions/upload-artifact` step), commits those within the policy's caps
/// to the files branch and returns what the comment and the summary show;
/// `None` when the run left no files. A successful run's notebook
/// ([`run_notebook`]) goes last with its files; a run without files keeps
/// its notebook under `keep_dir` only.
pub(crate) async fn show(ctx: &Ctx<'_>, report: &Report, keep_dir: &Path) -> Option<FilesBlock> {
    let env = ctx.env;
    let folder = run_folder(&env.run_id, env.run_attempt);
    let mut files = run_files(report);
    // The notebook goes with the run's files; alone, only into the artifact.
    let alone = files.is_empty();
    let notebook = run_notebook(report);
    files.extend(notebook.as_ref());
    if files.is_empty() {
        return None;
    }
    let owned: Vec<Artifact> = files.iter().map(|a| (*a).clone()).collect();
    if let Err(e) = crate::sandbox::write_files(&owned, &keep_dir.join(&folder)) {
        tracing::warn!("cannot keep the run's files in {}: {e}", keep_dir.display());
    }
    if alone {
        return None;
    }
    let caps = &ctx.policy.output.files;
    let (kept, left) = within_caps(&files, caps);
    let left_out: Vec<(String, u64)> = left.iter().map(|a| (a.name.clone(), a.size)).collect();
    let caps_text = texts::files_over_caps(caps.max_files, &caps.max_bytes.to_string());
    let repo = env.repository.to_string();
    let committed = match caps.branch.get() {
        None => Err(texts::FILES_NO_BRANCH.to_string()),
        Some(_) if kept.is_empty() => Err(texts::FILES_NONE_WITHIN_CAPS.to_string()),
        Some(branch) => {
            let named: Vec<(&str, &[u8])> = kept
                .iter()
                .map(|a| (a.name.as_str(), a.bytes.as_slice()))
                .collect();
            let message = texts::files_commit_message(&env.run_id, env.run_attempt, &env.run_url());
            match ctx.gh.commit_files(branch, &folder, &named, &message).await {
                Ok(c) => Ok(c),
                Err(e) => {
                    tracing::warn!("the run's files were not committed: {e}");
                    Err(if e.is_permission() {
                        texts::FILES_NO_WRITE.to_string()
                    } else {
                        texts::files_write_failed(&e.to_string())
                    })
                }
            }
        }
    };
    let (home, shown): (FilesHome, Vec<ShownFile>) = match committed {
        Ok(c) => {
            let shown = kept
                .iter()
                .zip(&c.paths)
                .map(|(a, path)| ShownFile {
                    name: a.name.clone(),
                    size: a.size,
                    image: a.kind() == FileKind::Image,
                    url: Some(blob_url(&env.server_url, &repo, &c.sha, path)),
                })
                .collect();
            let home = FilesHome::Committed {
                commit_url: format!("{}/{repo}/commit/{}", env.server_url, c.sha),
                branch: c.branch,
                sha: c.sha,
            };
            (home, shown)
        }
        Err(reason) => {
            let shown = kept
                .iter()
                .map(|a| ShownFile {
                    name: a.name.clone(),
                    size: a.size,
                    image: a.kind() == FileKind::Image,
                    url: None,
                })
                .collect();
            (FilesHome::ArtifactOnly { reason }, shown)
        }
    };
    Some(FilesBlock::new(
        texts::image_links(&shown),
        report.result.as_ref(),
        |in_result| {
            texts::files_md(
                &shown,
                &home,
                &left_out,
                &caps_text,
                &env.run_url(),
                in_result,
            )
        },
    ))
}

/// Where the data of a run's `github:` sources is kept, per file name
/// (`github/<source>.csv`, as under `/data`): a reference
/// `<branch>@<commit sha>:<path>` on the files branch, or `artifact` when it
/// could not be committed (no branch, a read-only token); it is always also
/// written under `keep_dir` for the workflow's `actions/upload-artifact`
/// step. Either way the path is `runs/<run id>-<attempt>/<name>`, so the
/// snapshot reads `runs/<run id>-<attempt>/github/<source>.csv`.
/// Replay reads a committed snapshot back (see
/// [`crate::github::activity::snapshot_ref`]).
pub(crate) async fn keep_snapshot(
    ctx: &Ctx<'_>,
    files: &[(String, Vec<u8>)],
    keep_dir: &Path,
) -> Vec<(String, String)> {
    if files.is_empty() {
        return Vec::new();
    }
    let env = ctx.env;
    let folder = run_folder(&env.run_id, env.run_attempt);
    let dir = keep_dir.join(&folder);
    let written = files.iter().try_for_each(|(n, b)| {
        let path = dir.join(n);
        std::fs::create_dir_all(path.parent().unwrap_or(&dir))?;
        std::fs::write(path, b)
    });
    if let Err(e) = written {
        tracing::warn!("cannot keep the GitHub data in {}: {e}", dir.display());
    }
    let committed = match ctx.policy.output.files.branch.get() {
        None => None,
        Some(branch) => {
            let message = texts::data_commit_message(&env.run_id, env.run_attempt, &env.run_url());
            match ctx.gh.commit_files(branch, &folder, files, &message).await {
                Ok(c) => Some(c),
                Err(e) => {
                    tracing::warn!("the GitHub data was not committed: {e}");
                    None
                }
            }
        }
    };
    files
        .iter()
        .enumerate()
        .map(|(i, (name, _))| {
            let at = match &committed {
                Some(c) => crate::github::activity::snapshot_at(&c.branch, &c.sha, &c.paths[i]),
                None => "artifact".to_string(),
            };
            (name.clone(), at)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::ByteSize;

    fn art(name: &str, size: u64) -> Artifact {
        Artifact {
            name: name.into(),
            size,
            sha256: String::new(),
            bytes: vec![0; size as usize],
        }
    }

    #[test]
    fn caps_keep_files_in_order_and_name_the_rest() {
        let files = [
            art("a.png", 6),
            art("big.bin", 20),
            art("b.csv", 4),
            art("c.csv", 1),
        ];
        let refs: Vec<&Artifact> = files.iter().collect();
        let caps = Files {
            max_files: 2,
            max_bytes: ByteSize(10),
            ..Files::default()
        };
        let (kept, left) = within_caps(&refs, &caps);
        let names = |v: &[&Artifact]| v.iter().map(|a| a.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&kept), ["a.png", "b.csv"]);
        assert_eq!(names(&left), ["big.bin", "c.csv"]);
    }

    #[test]
    fn links_are_pinned_and_encoded() {
        assert_eq!(run_folder("123/4", 2), "runs/1234-2");
        assert_eq!(
            blob_url("https://github.com", "o/r", "abc", "runs/1-1/my plot.png"),
            "https://github.com/o/r/blob/abc/runs/1-1/my%20plot.png?raw=true"
        );
    }
}
