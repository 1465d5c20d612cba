//! Which workspace files the code gets in the Action: the paths named by
//! `inputs=` and the dispatch/schedule `inputs` input, and paths mentioned
//! in the goal, admitted against the checked-out workspace and the
//! policy's `inputs` section by [`crate::admit`] (the one admission rule of
//! every front end: inside the checkout, no `..` or symlink out, the globs,
//! the sizes, no two files with the same name). Any problem stops the
//! request and every problem is listed.
//!
//! Paths merely *mentioned* in the goal (`mean of data/sales.csv`) are taken
//! only when such a file exists and the globs allow it; other words that
//! look like paths are left alone (they may name code, not data). Once
//! taken, the same checks apply.

use std::path::{Component, Path};

use crate::admit::{self, Allow, Workspace, normalize};
use crate::notebook::cells::Program;
use crate::policy::Inputs;

/// One input that can be given to the code.
pub(crate) type Resolved = admit::Admitted;

/// Why one input cannot be used.
pub(crate) type InputProblem = admit::Refused;

/// Checks every input of a request together: no two with one name under
/// `/data`, all within `inputs.max_total_bytes` (see
/// [`admit::check_together`]).
pub(crate) fn together(all: &[Resolved], policy: &Inputs) -> Result<(), Vec<InputProblem>> {
    admit::check_together(all, policy)
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
    let ws = match Workspace::checkout(workspace) {
        Ok(ws) => ws,
        Err(problem) => {
            let all: Vec<InputProblem> = explicit
                .iter()
                .map(|p| InputProblem {
                    path: normalize(p),
                    problem: problem.clone(),
                })
                .collect();
            return if all.is_empty() {
                Ok(Vec::new())
            } else {
                Err(all)
            };
        }
    };
    let mut wanted: Vec<String> = explicit.iter().map(|p| normalize(p)).collect();
    for p in mentioned_paths(mentioned_in) {
        // Only files that exist and that the policy allows are taken from the goal.
        if !wanted.contains(&p) && policy.is_allowed(&p) && ws.has_file(&p) {
            wanted.push(p);
        }
    }
    admit::admit(&ws, &wanted, Allow::Policy(policy))
}

/// Code a comment names in the repository: its workspace-relative path and
/// the program read from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NamedCode {
    /// The workspace-relative path.
    pub(crate) path: String,
    /// The program, and the note on how the file became it.
    pub(crate) program: Program,
}

/// The code a request names in the checkout: the `code=` option's file
/// (`explicit`), else the one `.ipynb` notebook that `mentioned_in` (the
/// goal and context) mentions and the checkout has; `None` when it names
/// neither. A notebook's code cells become the program (as steps when
/// `steps`, see [`crate::notebook::cells::program`]); any other file is
/// the program as written (UTF-8). The file is admitted as an input is
/// (inside the checkout, no symlink out, a regular file), never past the
/// notebook reader's size. Two mentioned notebooks are a problem: `code=`
/// picks one.
pub(crate) fn named_code(
    workspace: &Path,
    explicit: Option<&str>,
    mentioned_in: &str,
    steps: bool,
) -> Result<Option<NamedCode>, InputProblem> {
    let ws = Workspace::checkout(workspace);
    let path = match explicit {
        Some(p) => normalize(p),
        None => {
            let Ok(ws) = &ws else { return Ok(None) };
            let notebooks: Vec<String> = mentioned_paths(mentioned_in)
                .into_iter()
                .filter(|p| crate::notebook::cells::is_notebook(Path::new(p)) && ws.has_file(p))
                .collect();
            match notebooks.as_slice() {
                [] => return Ok(None),
                [one] => one.clone(),
                [first, ..] => {
                    return Err(InputProblem {
                        path: first.clone(),
                        problem: format!(
                            "is one of {} notebooks the request mentions ({}); name the one to run with `code=`",
                            notebooks.len(),
                            notebooks
                                .iter()
                                .map(|n| format!("`{n}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    });
                }
            }
        }
    };
    let refused = |problem: String| InputProblem {
        path: path.clone(),
        problem,
    };
    let ws = ws.map_err(refused)?;
    let (target, size) = admit::admit_one(&ws, &path, Allow::Anything).map_err(refused)?;
    let max = crate::notebook::cells::NOTEBOOK_MAX_BYTES;
    if size > max as u64 {
        return Err(refused(format!(
            "is {size} bytes; code is read up to {} MiB — clear a notebook's outputs (`jupyter nbconvert --clear-output --inplace {path}`), or name a smaller file",
            max >> 20
        )));
    }
    let bytes = std::fs::read(&target).map_err(|e| refused(format!("cannot be read ({e})")))?;
    let program = if crate::notebook::cells::is_notebook(Path::new(&path)) {
        crate::notebook::cells::program(&bytes, &path, steps).map_err(refused)?
    } else {
        let code = String::from_utf8(bytes).map_err(|e| {
            refused(format!(
                "is not UTF-8 text (byte {} is not); name a Python file or an `.ipynb` notebook with `code=`",
                e.utf8_error().valid_up_to()
            ))
        })?;
        Program {
            code,
            note: Some(format!(
                "the code is `{}` from the checkout, as written",
                path.replace('`', "'")
            )),
        }
    };
    Ok(Some(NamedCode { path, program }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::sha256_hex;

    /// A checkout with one data file and one that the default globs refuse.
    fn ws() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("data")).unwrap();
        std::fs::write(d.path().join("data/sales.csv"), "a,b\n1,2\n").unwrap();
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
        assert_eq!(r[0].file.read_all().unwrap(), b"a,b\n1,2\n");
        assert_eq!(r[0].sha256, sha256_hex(b"a,b\n1,2\n"));
    }

    /// A path mentioned in the goal goes through the same admission as a
    /// named one: a symlink out of the checkout is refused, not taken.
    #[cfg(unix)]
    #[test]
    fn a_mentioned_symlink_out_of_the_workspace_is_refused() {
        let d = ws();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("o.csv"), "1\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("o.csv"), d.path().join("data/out.csv"))
            .unwrap();
        let err = resolve(d.path(), &[], "look at data/out.csv", &Inputs::default()).unwrap_err();
        assert_eq!(err[0].path, "data/out.csv");
        assert!(err[0].problem.contains("outside the workspace"), "{err:?}");
    }

    /// A `.py` named with `code=` is read as written: bytes that are not
    /// UTF-8 are refused with the offset of the first, and a name's
    /// backtick cannot close the note's code span.
    #[test]
    fn named_code_that_is_not_utf8_is_refused_with_its_offset() {
        let d = ws();
        std::fs::write(d.path().join("bad.py"), b"print(1)\n\xff\xfe\n").unwrap();
        let err = named_code(d.path(), Some("bad.py"), "", false).unwrap_err();
        assert_eq!(err.path, "bad.py");
        assert!(err.problem.contains("byte 9 is not"), "{err:?}");
        std::fs::write(d.path().join("a`b.py"), "print(2)\n").unwrap();
        let named = named_code(d.path(), Some("a`b.py"), "", false)
            .unwrap()
            .unwrap();
        assert_eq!(named.program.code, "print(2)\n");
        assert_eq!(
            named.program.note.as_deref(),
            Some("the code is `a'b.py` from the checkout, as written")
        );
    }
}
