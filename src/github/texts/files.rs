//! The files block of an answer: the charts and files a run wrote, shown
//! inline or linked where they are kept, and the commit messages that keep
//! them.

use super::*;

/// One file of a run as the result comment shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShownFile {
    /// The name in `/out`.
    pub(crate) name: String,
    /// Its size in bytes.
    pub(crate) size: u64,
    /// True for a PNG, JPEG or GIF (shown inline when it has a link).
    pub(crate) image: bool,
    /// The pinned link to the committed file; `None` when not committed.
    pub(crate) url: Option<String>,
}

/// Where the files went, for [`files_md`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FilesHome {
    /// Committed to `branch` as commit `sha` (its page is `commit_url`).
    Committed {
        branch: String,
        sha: String,
        commit_url: String,
    },
    /// Not committed, for `reason` (Markdown); the run's artifact has them.
    ArtifactOnly { reason: String },
    /// Written to a local directory (the CLI's `--artifacts`); the links
    /// are relative paths.
    Local,
}

/// The heading of the files part of a result.
const FILES_HEADING: &str = "#### Files\n\n";

fn size_text(bytes: u64) -> String {
    match bytes {
        b if b < 1024 => format!("{b} B"),
        b if b < 1024 * 1024 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{:.1} MiB", b as f64 / 1_048_576.0),
    }
}

/// A file name as an image's alt text ([`escape_line`]), cut at
/// [`NAME_CHARS`].
fn alt_text(name: &str) -> String {
    escape_line(&cut_chars(name, NAME_CHARS))
}

/// A file name as a code span ([`code_span`]), cut at [`NAME_CHARS`].
fn name_code(name: &str) -> String {
    code_span(&cut_chars(name, NAME_CHARS))
}

/// The images of `files` that have a link: (name in `/out`, link), for
/// [`crate::render::FilesBlock`] to show where a result names them.
pub(crate) fn image_links(files: &[ShownFile]) -> Vec<(String, String)> {
    files
        .iter()
        .filter(|f| f.image)
        .filter_map(|f| Some((f.name.clone(), f.url.clone()?)))
        .collect()
}

/// The files part of a result: the images inline and the other files as
/// links when they were committed; else a note saying why not and where the
/// files are (the run's artifact, `run_url`), with their names and no link.
/// `left_out` are the files over the policy's caps (`caps` says which).
/// The images named in `in_result` are linked, not shown: the Result block
/// shows them where the result names them.
pub(crate) fn files_md(
    files: &[ShownFile],
    home: &FilesHome,
    left_out: &[(String, u64)],
    caps: &str,
    run_url: &str,
    in_result: &[String],
) -> String {
    let mut s = String::from(FILES_HEADING);
    if let FilesHome::ArtifactOnly { reason } = home {
        let _ = writeln!(
            s,
            "> [!NOTE]\n> The files were not committed to the repository: {reason}. They are kept with the [workflow run]({run_url}) as its artifact.\n"
        );
    }
    let inline = |f: &ShownFile| f.image && f.url.is_some() && !in_result.contains(&f.name);
    for f in files.iter().filter(|f| inline(f)) {
        if let Some(url) = &f.url {
            let _ = writeln!(
                s,
                "![{}]({url})\n\n<sub>{} · {}</sub>\n",
                alt_text(&f.name),
                name_code(&f.name),
                size_text(f.size)
            );
        }
    }
    let listed: Vec<&ShownFile> = files.iter().filter(|f| !inline(f)).collect();
    for f in &listed {
        match &f.url {
            Some(url) => {
                let _ = writeln!(
                    s,
                    "- [{}]({url}) · {}{}",
                    name_code(&f.name),
                    size_text(f.size),
                    if in_result.contains(&f.name) {
                        " · shown with the result"
                    } else {
                        ""
                    }
                );
            }
            None => {
                let _ = writeln!(s, "- {} · {}", name_code(&f.name), size_text(f.size));
            }
        }
    }
    if !listed.is_empty() {
        s.push('\n');
    }
    if !left_out.is_empty() {
        let names: Vec<String> = left_out
            .iter()
            .map(|(n, size)| format!("{} ({})", name_code(n), size_text(*size)))
            .collect();
        let _ = writeln!(
            s,
            "_Not shown ({caps}): {}; the [workflow run]({run_url})'s artifact has them._\n",
            names.join(", ")
        );
    }
    if let FilesHome::Committed {
        branch,
        sha,
        commit_url,
    } = home
    {
        let short: String = sha.chars().take(7).collect();
        let _ = writeln!(
            s,
            "<sub>Committed to branch `{}` as [`{short}`]({commit_url}).</sub>",
            branch.replace('`', "'")
        );
    }
    s
}

/// Why the files were not committed: a token without `contents: write`.
pub(crate) const FILES_NO_WRITE: &str = "the workflow token cannot write to the repository (give the job `permissions: contents: write` to show charts here; a pull request from a fork always gets a read-only token)";

/// Why the files were not committed: the policy switched it off.
pub(crate) const FILES_NO_BRANCH: &str =
    "the policy's `output.files.branch` is empty, so nothing is committed";

/// Why files are left out: over the policy's caps (count and bytes).
pub(crate) fn files_over_caps(max_files: u32, max_bytes: &str) -> String {
    let plural = if max_files == 1 { "" } else { "s" };
    format!("over the policy's `output.files` caps of {max_files} file{plural} and {max_bytes}")
}

/// Why no file is committed: every one is over the caps.
pub(crate) const FILES_NONE_WITHIN_CAPS: &str = "none is within the caps";

/// The commit message of a run's files on the files branch.
pub(crate) fn files_commit_message(run_id: &str, attempt: u32, run_url: &str) -> String {
    format!("compute-bot: files of run {run_id} attempt {attempt}\n\n{run_url}")
}

/// The commit message of a run's `github:` data snapshot on the files branch.
pub(crate) fn data_commit_message(run_id: &str, attempt: u32, run_url: &str) -> String {
    format!("compute-bot: GitHub data of run {run_id} attempt {attempt}\n\n{run_url}")
}

/// Why the files were not committed: the write failed (`error`, plain text).
pub(crate) fn files_write_failed(error: &str) -> String {
    format!(
        "writing them failed ({})",
        neutralize(error.trim_end_matches('.'))
    )
}
