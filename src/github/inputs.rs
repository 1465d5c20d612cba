//! Which workspace files the code gets: resolving `inputs=` paths, the
//! dispatch/schedule `inputs` and paths mentioned in the goal against the
//! checked-out workspace and the policy's `inputs` section.
//!
//! Rules, for every path named explicitly (`inputs=`, the `inputs` input):
//! it is relative to the workspace root (no leading `/`, no `..`), matches
//! the policy's `inputs.allow` globs, exists, is a regular file, does not
//! resolve (through symlinks) outside the workspace or to a file the globs do
//! not allow, and fits `inputs.max_file_bytes`; all of them together fit
//! `inputs.max_total_bytes`; no two have the same file name (each becomes
//! `/data/<file name>` in the sandbox). Any problem stops the request and
//! every problem is listed.
//!
//! Paths merely *mentioned* in the goal (`mean of data/sales.csv`) are taken
//! only when such a file exists and the globs allow it; other words that
//! look like paths are left alone (they may name code, not data). Once
//! taken, the same checks apply.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};

use crate::policy::Inputs;
use crate::sandbox::{InputFile, sha256_hex};

/// One input that can be given to the code.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Resolved {
    /// The workspace-relative path as named (normalized: no `./`).
    pub(crate) path: String,
    /// The file, named by its file name.
    pub(crate) file: InputFile,
    /// Hex SHA-256 of the contents.
    pub(crate) sha256: String,
}

/// Why one input cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InputProblem {
    /// The path as named (or `(all inputs)` for the total size).
    pub(crate) path: String,
    /// What is wrong and what to do.
    pub(crate) problem: String,
}

impl fmt::Display for InputProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.path, self.problem)
    }
}

fn normalize(path: &str) -> String {
    let mut p = path.trim();
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    p.to_string()
}

/// Words in `text` that look like relative file paths with an extension
/// (`data/sales.csv`, `report.json`), in order, without duplicates. URLs,
/// absolute paths and `..` paths are not taken.
fn mentioned_paths(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let separators = |c: char| c.is_whitespace() || matches!(c, '`' | '"' | '\'' | ',' | ';' | '=');
    for word in text.split(separators) {
        let w = word
            .trim_start_matches(['(', '[', '{', '<'])
            .trim_end_matches([')', ']', '}', '>', '.', ':', '!', '?']);
        let w = normalize(w);
        if w.is_empty() || w.contains("://") || w.starts_with('/') || w.starts_with('~') {
            continue;
        }
        if Path::new(&w)
            .components()
            .any(|c| !matches!(c, Component::Normal(_)))
        {
            continue;
        }
        let Some((stem, ext)) = w.rsplit_once('.') else {
            continue;
        };
        let stem_name = stem.rsplit('/').next().unwrap_or(stem);
        if stem_name.is_empty()
            || !(2..=8).contains(&ext.len())
            || !ext.chars().all(|c| c.is_ascii_alphanumeric())
            || !ext.chars().any(|c| c.is_ascii_alphabetic())
        {
            continue;
        }
        if !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

/// Resolves the inputs of one request. `explicit` are the paths named on
/// purpose; `mentioned_in` is the goal text (see [`mentioned_paths`]).
pub(crate) fn resolve(
    workspace: &Path,
    explicit: &[String],
    mentioned_in: &str,
    policy: &Inputs,
) -> Result<Vec<Resolved>, Vec<InputProblem>> {
    let mut problems = Vec::new();
    let ws = match workspace.canonicalize() {
        Ok(w) => w,
        Err(e) => {
            let all: Vec<InputProblem> = explicit
                .iter()
                .map(|p| InputProblem {
                    path: normalize(p),
                    problem: format!(
                        "the workspace {} (GITHUB_WORKSPACE) cannot be read ({e}); does the workflow check out the repository (actions/checkout)?",
                        workspace.display()
                    ),
                })
                .collect();
            return if all.is_empty() {
                Ok(Vec::new())
            } else {
                Err(all)
            };
        }
    };
    // (path as named, explicit?)
    let mut wanted: Vec<(String, bool)> = Vec::new();
    for p in explicit {
        let p = normalize(p);
        if !p.is_empty() && !wanted.iter().any(|(w, _)| *w == p) {
            wanted.push((p, true));
        }
    }
    for p in mentioned_paths(mentioned_in) {
        if wanted.iter().any(|(w, _)| *w == p) {
            continue;
        }
        // Only files that exist and that the policy allows are taken from the goal.
        if policy.is_allowed(&p) && ws.join(&p).is_file() {
            wanted.push((p, false));
        }
    }

    let mut out: Vec<Resolved> = Vec::new();
    let mut seen_targets: Vec<PathBuf> = Vec::new();
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    let mut total: u64 = 0;
    for (path, _explicit) in wanted {
        match check_one(&ws, &path, policy) {
            Err(problem) => problems.push(InputProblem { path, problem }),
            Ok((target, bytes)) => {
                if seen_targets.contains(&target) {
                    continue;
                }
                seen_targets.push(target.clone());
                let name = target
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if let Some(other) = names.get(&name) {
                    problems.push(InputProblem {
                        path: path.clone(),
                        problem: format!(
                            "has the same file name as `{other}`; both would be /data/{name} in the sandbox — pass only one, or rename one of them"
                        ),
                    });
                    continue;
                }
                names.insert(name.clone(), path.clone());
                total += bytes.len() as u64;
                let sha256 = sha256_hex(&bytes);
                out.push(Resolved {
                    path,
                    file: InputFile { name, bytes },
                    sha256,
                });
            }
        }
    }
    if total > policy.max_total_bytes.0 {
        problems.push(InputProblem {
            path: "(all inputs)".into(),
            problem: format!(
                "together they are {total} bytes; the policy allows at most {} per request (`inputs.max_total_bytes`) — pass fewer or smaller files",
                policy.max_total_bytes
            ),
        });
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

/// Checks one workspace-relative path; returns the resolved file and its bytes.
fn check_one(ws: &Path, rel: &str, policy: &Inputs) -> Result<(PathBuf, Vec<u8>), String> {
    let p = Path::new(rel);
    if p.is_absolute()
        || p.components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(
            "is not a path inside the repository checkout; write it relative to the repository root, without a leading `/` or `..`"
                .into(),
        );
    }
    let globs = || {
        if policy.allow.is_empty() {
            "(none: the policy allows no inputs)".to_string()
        } else {
            policy
                .allow
                .iter()
                .map(|g| format!("`{g}`"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    if !policy.is_allowed(rel) {
        return Err(format!(
            "does not match the policy's `inputs.allow` globs ({}); add a glob to the policy or pick another file",
            globs()
        ));
    }
    let full = ws.join(p);
    if let Err(e) = std::fs::symlink_metadata(&full) {
        return Err(if e.kind() == std::io::ErrorKind::NotFound {
            "does not exist in the checked-out workspace; check the spelling, and that the workflow checks out the branch that has it (actions/checkout)".to_string()
        } else {
            format!("cannot be read ({e})")
        });
    }
    let target = full
        .canonicalize()
        .map_err(|e| format!("cannot be resolved ({e}); a symlink whose target does not exist?"))?;
    let Ok(target_rel) = target.strip_prefix(ws) else {
        return Err(
            "resolves (through a symlink) to a file outside the workspace; only files inside the checkout can be inputs"
                .into(),
        );
    };
    let meta = std::fs::metadata(&target).map_err(|e| format!("cannot be read ({e})"))?;
    if !meta.is_file() {
        return Err("is not a regular file (a directory?); name the files one by one".into());
    }
    let target_rel_text = target_rel.to_string_lossy().replace('\\', "/");
    if target_rel_text != rel && !policy.is_allowed(&target_rel_text) {
        return Err(format!(
            "is a symlink to `{target_rel_text}`, which the policy's `inputs.allow` globs ({}) do not match",
            globs()
        ));
    }
    let too_big = |n: u64| {
        format!(
            "is {n} bytes; the policy allows at most {} per file (`inputs.max_file_bytes`)",
            policy.max_file_bytes
        )
    };
    if meta.len() > policy.max_file_bytes.0 {
        return Err(too_big(meta.len()));
    }
    let bytes = std::fs::read(&target).map_err(|e| format!("cannot be read ({e})"))?;
    if bytes.len() as u64 > policy.max_file_bytes.0 {
        return Err(too_big(bytes.len() as u64));
    }
    Ok((target, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::ByteSize;

    fn ws() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("data/sub")).unwrap();
        std::fs::write(d.path().join("data/sales.csv"), "a,b\n1,2\n").unwrap();
        std::fs::write(d.path().join("data/sub/sales.csv"), "a\n1\n").unwrap();
        std::fs::write(d.path().join("data/big.csv"), "x".repeat(2000)).unwrap();
        std::fs::write(d.path().join("secret.env"), "TOKEN=1\n").unwrap();
        d
    }

    fn names(r: &[Resolved]) -> Vec<&str> {
        r.iter().map(|r| r.path.as_str()).collect()
    }

    #[test]
    fn mentions_are_found_and_junk_is_not() {
        assert_eq!(
            mentioned_paths(
                "mean of `data/sales.csv`, see (./notes.txt) inputs=a.csv. e.g. https://x.io/a.csv /etc/passwd.txt ../up.csv 3.14 v1.2"
            ),
            vec!["data/sales.csv", "notes.txt", "a.csv"]
        );
    }

    #[test]
    fn explicit_and_mentioned_inputs_resolve() {
        let d = ws();
        let pol = Inputs::default();
        let r = resolve(
            d.path(),
            &["./data/sales.csv".into()],
            "compare data/sales.csv with secret.env and data/missing.csv",
            &pol,
        )
        .unwrap();
        assert_eq!(names(&r), vec!["data/sales.csv"]);
        assert_eq!(r[0].file.name, "sales.csv");
        assert_eq!(r[0].file.bytes, b"a,b\n1,2\n");
        assert_eq!(r[0].sha256, sha256_hex(b"a,b\n1,2\n"));
    }

    #[test]
    fn every_problem_is_named() {
        let d = ws();
        let pol = Inputs {
            max_file_bytes: ByteSize(1000),
            ..Inputs::default()
        };
        let err = resolve(
            d.path(),
            &[
                "data/missing.csv".into(),
                "secret.env".into(),
                "../x.csv".into(),
                "/etc/hosts.csv".into(),
                "data/big.csv".into(),
                "data/sales.csv".into(),
                "data/sub/sales.csv".into(),
            ],
            "",
            &pol,
        )
        .unwrap_err();
        let text: Vec<String> = err.iter().map(|p| p.to_string()).collect();
        let find = |p: &str| {
            text.iter()
                .find(|t| t.starts_with(&format!("`{p}`")))
                .unwrap_or_else(|| panic!("{p} not in {text:?}"))
                .clone()
        };
        assert!(find("data/missing.csv").contains("does not exist"));
        assert!(find("secret.env").contains("inputs.allow"));
        assert!(find("../x.csv").contains("relative to the repository root"));
        assert!(find("/etc/hosts.csv").contains("relative to the repository root"));
        assert!(find("data/big.csv").contains("max_file_bytes"));
        assert!(find("data/sub/sales.csv").contains("same file name"));
        assert_eq!(err.len(), 6, "{text:?}");
    }

    #[test]
    fn total_size_is_capped() {
        let d = ws();
        let pol = Inputs {
            max_total_bytes: ByteSize(2005),
            ..Inputs::default()
        };
        let err = resolve(
            d.path(),
            &["data/big.csv".into(), "data/sales.csv".into()],
            "",
            &pol,
        )
        .unwrap_err();
        assert_eq!(err.len(), 1);
        assert!(err[0].problem.contains("max_total_bytes"));
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_of_the_workspace_or_to_unallowed_files_are_refused() {
        let d = ws();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("o.csv"), "1\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("o.csv"), d.path().join("data/out.csv"))
            .unwrap();
        std::os::unix::fs::symlink(d.path().join("secret.env"), d.path().join("data/env.csv"))
            .unwrap();
        std::os::unix::fs::symlink(
            d.path().join("data/sales.csv"),
            d.path().join("data/ok.csv"),
        )
        .unwrap();
        let pol = Inputs::default();
        let err = resolve(
            d.path(),
            &["data/out.csv".into(), "data/env.csv".into()],
            "",
            &pol,
        )
        .unwrap_err();
        assert!(err[0].problem.contains("outside the workspace"), "{err:?}");
        assert!(
            err[1].problem.contains("symlink to `secret.env`"),
            "{err:?}"
        );
        // A symlink inside the workspace to an allowed file is fine; the name is the target's.
        let r = resolve(d.path(), &["data/ok.csv".into()], "", &pol).unwrap();
        assert_eq!(r[0].file.name, "sales.csv");
        // Mentioned-only symlinks out of the workspace are not silently taken.
        let err = resolve(d.path(), &[], "look at data/out.csv", &pol).unwrap_err();
        assert!(err[0].problem.contains("outside the workspace"));
    }
}
