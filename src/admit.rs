//! Input admission: which files the code gets, decided in one place for
//! every front end — `compute-bot run` (the workspace is the current
//! directory), the Action (the checked-out repository) and replay (its
//! `--workspace`, or the checkout).
//!
//! A named path is admitted when it is inside the workspace: relative to
//! its root without `..` (`./` is dropped), or absolute and under the root
//! (it is then taken relative to it); it exists and is a regular file; it
//! does not resolve through a symlink to a file outside the workspace; and,
//! under a policy, it and the file a symlink leads to match the policy's
//! `inputs.allow` globs, it fits `inputs.max_file_bytes` and all of them
//! together fit `inputs.max_total_bytes`. The same file named twice is taken
//! once; two files with the same file name are refused (each becomes
//! `/data/<file name>` in the sandbox). Every problem is listed, each naming
//! the path, what is wrong and the policy key or step that fixes it.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};

mod sniff;

use crate::policy::Inputs;
use crate::sandbox::{InputFile, input_name_problem};

/// What a workspace is, for the messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The Action's checked-out repository (`GITHUB_WORKSPACE`).
    Checkout,
    /// The current directory of `compute-bot run`.
    CurrentDir,
    /// The `--workspace` of `compute-bot replay`.
    Named,
}

/// The directory inputs must be inside.
#[derive(Debug, Clone)]
pub(crate) struct Workspace {
    /// The root as given (absolute for the current directory).
    given: PathBuf,
    /// The root with every symlink resolved.
    root: PathBuf,
    kind: Kind,
}

impl Workspace {
    fn open(given: &Path, kind: Kind) -> Result<Workspace, String> {
        match given.canonicalize() {
            Ok(root) => Ok(Workspace {
                given: given.to_path_buf(),
                root,
                kind,
            }),
            Err(e) => Err(match kind {
                Kind::Checkout => format!(
                    "the workspace {} (GITHUB_WORKSPACE) cannot be read ({e}); does the workflow check out the repository (actions/checkout)?",
                    given.display()
                ),
                Kind::CurrentDir => format!(
                    "the current directory {} cannot be read ({e}); run compute-bot from the directory that holds the inputs",
                    given.display()
                ),
                Kind::Named => format!(
                    "the workspace `{}` cannot be read ({e}); pass an existing directory with --workspace",
                    given.display()
                ),
            }),
        }
    }

    /// The Action's checkout at `root`.
    pub(crate) fn checkout(root: &Path) -> Result<Workspace, String> {
        Workspace::open(root, Kind::Checkout)
    }

    /// The current directory (`compute-bot run`).
    pub(crate) fn current_dir() -> Result<Workspace, String> {
        let cwd = std::env::current_dir().map_err(|e| {
            format!(
                "the current directory cannot be read ({e}); run compute-bot from the directory that holds the inputs"
            )
        })?;
        Workspace::open(&cwd, Kind::CurrentDir)
    }

    /// A directory named on the command line (`replay --workspace`).
    pub(crate) fn named(root: &Path) -> Result<Workspace, String> {
        Workspace::open(root, Kind::Named)
    }

    /// How the messages name the workspace.
    fn shown(&self) -> String {
        match self.kind {
            Kind::Checkout => "the repository checkout".into(),
            Kind::CurrentDir => format!("the current directory ({})", self.given.display()),
            Kind::Named => format!("the workspace `{}`", self.given.display()),
        }
    }

    /// What to do about a path outside the workspace.
    fn outside_fix(&self) -> &'static str {
        match self.kind {
            Kind::Checkout => {
                "write it relative to the repository root, without a leading `/` or `..`"
            }
            Kind::CurrentDir => {
                "run compute-bot from a directory that holds the file (or copy the file into this one), and name it without `..`"
            }
            Kind::Named => "pass a --workspace that holds the file, and name it without `..`",
        }
    }

    /// The workspace-relative form of `named` (no `./`), or why it is not
    /// inside the workspace.
    fn relative(&self, named: &str) -> Result<String, String> {
        let p = Path::new(named);
        let rel = if p.is_absolute() {
            p.strip_prefix(&self.given)
                .or_else(|_| p.strip_prefix(&self.root))
                .ok()
        } else {
            Some(p)
        };
        let outside = || {
            format!(
                "is not a path inside {}; {}",
                self.shown(),
                self.outside_fix()
            )
        };
        let rel = rel.ok_or_else(outside)?;
        if rel
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(outside());
        }
        let parts: Vec<String> = rel
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect();
        if parts.is_empty() {
            return Err("is the workspace itself, not a file; name the files one by one".into());
        }
        Ok(parts.join("/"))
    }

    /// True when `rel` (workspace-relative) is an existing file.
    pub(crate) fn has_file(&self, rel: &str) -> bool {
        self.root.join(rel).is_file()
    }
}

/// What may be admitted besides being inside the workspace.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Allow<'a> {
    /// The policy's `inputs` section: globs and sizes.
    Policy(&'a Inputs),
    /// Any file inside the workspace (replay without a policy: the
    /// recorded hashes decide).
    Anything,
}

impl Allow<'_> {
    fn permits(&self, rel: &str) -> bool {
        match self {
            Allow::Policy(p) => p.is_allowed(rel),
            Allow::Anything => true,
        }
    }

    /// The globs, for messages.
    fn globs(&self) -> String {
        match self {
            Allow::Policy(p) if !p.allow.is_empty() => p
                .allow
                .iter()
                .map(|g| format!("`{g}`"))
                .collect::<Vec<_>>()
                .join(", "),
            _ => "(none: the policy allows no inputs)".to_string(),
        }
    }
}

/// One admitted input.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Admitted {
    /// The workspace-relative path as named (normalized: no `./`).
    pub(crate) path: String,
    /// The file, named by the file name of what it resolves to.
    pub(crate) file: InputFile,
    /// Hex SHA-256 of the contents.
    pub(crate) sha256: String,
}

/// Why one input is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refused {
    /// The path as named (or `(all inputs)` for the total size).
    pub(crate) path: String,
    /// What is wrong and what to do.
    pub(crate) problem: String,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.path, self.problem)
    }
}

/// `path` without surrounding blanks and leading `./`.
pub(crate) fn normalize(path: &str) -> String {
    let mut p = path.trim();
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    p.to_string()
}

/// Admits the files `named` (each workspace-relative or absolute): the
/// files in order, or every problem.
pub(crate) fn admit(
    ws: &Workspace,
    named: &[String],
    allow: Allow<'_>,
) -> Result<Vec<Admitted>, Vec<Refused>> {
    let mut problems = Vec::new();
    let mut out: Vec<Admitted> = Vec::new();
    let mut seen_targets: Vec<PathBuf> = Vec::new();
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    let mut total: u64 = 0;
    let mut wanted: Vec<String> = Vec::new();
    for p in named {
        let p = normalize(p);
        if !p.is_empty() && !wanted.contains(&p) {
            wanted.push(p);
        }
    }
    for path in wanted {
        let (target, size) = match admit_one(ws, &path, allow) {
            Ok(found) => found,
            Err(problem) => {
                problems.push(Refused { path, problem });
                continue;
            }
        };
        if seen_targets.contains(&target) {
            continue;
        }
        seen_targets.push(target.clone());
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(problem) = input_name_problem(&name) {
            problems.push(Refused { path, problem });
            continue;
        }
        if let Some(other) = names.get(&name) {
            problems.push(Refused {
                path: path.clone(),
                problem: format!(
                    "has the same file name as `{other}`; both would be /data/{name} in the sandbox — pass only one, or rename one of them"
                ),
            });
            continue;
        }
        names.insert(name.clone(), path.clone());
        total += size;
        if let Allow::Policy(p) = allow
            && total > p.max_total_bytes.bytes()
        {
            // Refused below as a whole; no need to read it.
            continue;
        }
        let file = match InputFile::hash_file(name, &target) {
            Ok(f) if f.size() == size => f,
            Ok(f) => {
                problems.push(Refused {
                    path,
                    problem: format!(
                        "changed while it was read ({size} bytes, then {}); run again once nothing writes to it",
                        f.size()
                    ),
                });
                continue;
            }
            Err(e) => {
                problems.push(Refused {
                    path,
                    problem: format!("cannot be read ({e})"),
                });
                continue;
            }
        };
        out.push(Admitted {
            path: ws.relative(&path).unwrap_or(path),
            sha256: file.sha256(),
            file,
        });
    }
    if let Allow::Policy(p) = allow
        && total > p.max_total_bytes.bytes()
    {
        problems.push(Refused {
            path: "(all inputs)".into(),
            problem: format!(
                "together they are {total} bytes; the policy allows at most {} per request (`inputs.max_total_bytes`) — raise it in the policy, or pass fewer or smaller files",
                p.max_total_bytes
            ),
        });
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

/// Admits data the trusted side fetched (a `github:` source) as an input
/// named `name` under `/data`, recorded as coming from `source`: the same
/// `inputs.max_file_bytes` as a workspace file (the policy's globs are for
/// workspace paths; a source is opted in by `inputs.github`).
pub(crate) fn admit_fetched(
    source: &str,
    name: &str,
    bytes: Vec<u8>,
    policy: &Inputs,
) -> Result<Admitted, Refused> {
    if let Some(problem) = input_name_problem(name) {
        return Err(Refused {
            path: source.to_string(),
            problem,
        });
    }
    let size = bytes.len() as u64;
    if size > policy.max_file_bytes.bytes() {
        return Err(Refused {
            path: source.to_string(),
            problem: format!(
                "is {size} bytes as CSV; the policy allows at most {} per file (`inputs.max_file_bytes`) — narrow it with `since=` or `limit=`, or raise the policy's",
                policy.max_file_bytes
            ),
        });
    }
    let file = InputFile::new(name, bytes);
    Ok(Admitted {
        path: source.to_string(),
        sha256: file.sha256(),
        file,
    })
}

/// The check over every input of a request together (workspace files and
/// fetched sources): no two with the same name under `/data`, all of them
/// within `inputs.max_total_bytes`.
pub(crate) fn check_together(all: &[Admitted], policy: &Inputs) -> Result<(), Vec<Refused>> {
    let mut problems = Vec::new();
    for (i, a) in all.iter().enumerate() {
        if let Some(other) = all[..i].iter().find(|o| o.file.name == a.file.name) {
            problems.push(Refused {
                path: a.path.clone(),
                problem: format!(
                    "has the same file name as `{}`; both would be /data/{} in the sandbox — pass only one, or rename the file",
                    other.path, a.file.name
                ),
            });
        }
    }
    let total: u64 = all.iter().map(|a| a.file.size()).sum();
    if total > policy.max_total_bytes.bytes() {
        problems.push(Refused {
            path: "(all inputs)".into(),
            problem: format!(
                "together they are {total} bytes; the policy allows at most {} per request (`inputs.max_total_bytes`) — raise it in the policy, or pass fewer or smaller inputs",
                policy.max_total_bytes
            ),
        });
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// Checks one named path; returns the file it resolves to and its size.
/// The contents are not read here beyond the format check's few bytes
/// ([`sniff::check`]): the caller hashes the file, and it is streamed into
/// the sandbox when the code runs.
pub(crate) fn admit_one(
    ws: &Workspace,
    named: &str,
    allow: Allow<'_>,
) -> Result<(PathBuf, u64), String> {
    let rel = ws.relative(&normalize(named))?;
    if !allow.permits(&rel) {
        return Err(format!(
            "does not match the policy's `inputs.allow` globs ({}); add a glob to the policy or pick another file",
            allow.globs()
        ));
    }
    let full = ws.root.join(&rel);
    if let Err(e) = std::fs::symlink_metadata(&full) {
        return Err(if e.kind() != std::io::ErrorKind::NotFound {
            format!("cannot be read ({e})")
        } else if ws.kind == Kind::Checkout {
            "does not exist in the checked-out workspace; check the spelling, and that the workflow checks out the branch that has it (actions/checkout)".to_string()
        } else {
            format!("does not exist in {}; check the path", ws.shown())
        });
    }
    let target = full
        .canonicalize()
        .map_err(|e| format!("cannot be resolved ({e}); a symlink whose target does not exist?"))?;
    let Ok(target_rel) = target.strip_prefix(&ws.root) else {
        return Err(format!(
            "resolves (through a symlink) to a file outside the workspace; only files inside {} can be inputs",
            ws.shown()
        ));
    };
    let meta = std::fs::metadata(&target).map_err(|e| format!("cannot be read ({e})"))?;
    if !meta.is_file() {
        return Err("is not a regular file (a directory?); name the files one by one".into());
    }
    let target_rel_text = target_rel.to_string_lossy().replace('\\', "/");
    if target_rel_text != rel && !allow.permits(&target_rel_text) {
        return Err(format!(
            "is a symlink to `{target_rel_text}`, which the policy's `inputs.allow` globs ({}) do not match",
            allow.globs()
        ));
    }
    let max = match allow {
        Allow::Policy(p) => p.max_file_bytes.bytes(),
        Allow::Anything => u64::MAX,
    };
    if meta.len() > max {
        return Err(format!(
            "is {} bytes; the policy allows at most {} per file (`inputs.max_file_bytes`) — raise it in the policy, or pass a smaller file",
            meta.len(),
            crate::units::ByteSize(max)
        ));
    }
    sniff::check(&target, meta.len())?;
    Ok((target, meta.len()))
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

    fn paths(r: &[Admitted]) -> Vec<&str> {
        r.iter().map(|r| r.path.as_str()).collect()
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn every_problem_is_named() {
        let d = ws();
        let pol = Inputs {
            max_file_bytes: ByteSize(1000),
            ..Inputs::default()
        };
        let w = Workspace::checkout(d.path()).unwrap();
        let err = admit(
            &w,
            &strings(&[
                "data/missing.csv",
                "secret.env",
                "../x.csv",
                "/etc/hosts.csv",
                "data/big.csv",
                "data/sales.csv",
                "data/sub/sales.csv",
            ]),
            Allow::Policy(&pol),
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

    /// The bot's folder `/data/github/` cannot be taken by a workspace file
    /// (`github` is refused at admission, naming the file), and a file named
    /// like the old flat layout (`github_pulls.csv`) sits beside the fetched
    /// `github/pulls.csv` without a clash.
    #[test]
    fn a_workspace_file_cannot_take_the_bots_github_folder() {
        let d = ws();
        std::fs::write(d.path().join("data/github"), "x\n").unwrap();
        std::fs::write(d.path().join("data/github_pulls.csv"), "number\n9\n").unwrap();
        let w = Workspace::checkout(d.path()).unwrap();
        let err = admit(&w, &strings(&["data/github"]), Allow::Anything).unwrap_err();
        assert_eq!(err.len(), 1, "{err:?}");
        let text = err[0].to_string();
        assert!(
            text.starts_with("`data/github`") && text.contains("bot's folder /data/github/"),
            "{text}"
        );
        let pol = Inputs::default();
        let mut all = admit(
            &w,
            &strings(&["data/github_pulls.csv"]),
            Allow::Policy(&pol),
        )
        .unwrap();
        all.push(
            admit_fetched(
                "github:pulls",
                "github/pulls.csv",
                b"number\n1\n".to_vec(),
                &pol,
            )
            .unwrap(),
        );
        assert_eq!(check_together(&all, &pol), Ok(()));
        let names: Vec<&str> = all.iter().map(|a| a.file.name.as_str()).collect();
        assert_eq!(names, ["github_pulls.csv", "github/pulls.csv"]);
    }

    #[test]
    fn total_size_is_capped() {
        let d = ws();
        let pol = Inputs {
            max_total_bytes: ByteSize(2005),
            ..Inputs::default()
        };
        let w = Workspace::checkout(d.path()).unwrap();
        let err = admit(
            &w,
            &strings(&["data/big.csv", "data/sales.csv"]),
            Allow::Policy(&pol),
        )
        .unwrap_err();
        assert_eq!(err.len(), 1);
        assert!(err[0].problem.contains("`inputs.max_total_bytes`"));
    }

    /// The bug this module fixed: `run --input /anywhere/x.json` was
    /// admitted because only the file name was checked against the globs,
    /// while `--input ../x.json` was refused. Both are outside the current
    /// directory, and both are refused alike; an absolute path inside it is
    /// taken relative to it.
    #[test]
    fn an_absolute_path_outside_the_workspace_is_refused_like_dotdot() {
        let d = ws();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x.json"), "{}").unwrap();
        let w = Workspace::named(&d.path().join("data")).unwrap();
        let pol = Inputs::default();
        let abs = outside.path().join("x.json").display().to_string();
        let err = admit(
            &w,
            &[abs.clone(), "../secret.env".into()],
            Allow::Policy(&pol),
        )
        .unwrap_err();
        assert_eq!(err.len(), 2, "{err:?}");
        for e in &err {
            assert!(
                e.problem.starts_with("is not a path inside the workspace"),
                "{e}"
            );
        }
        assert_eq!(err[0].path, abs);
        let inside = d.path().join("data/sub/sales.csv").display().to_string();
        let ok = admit(&w, &[inside], Allow::Policy(&pol)).unwrap();
        assert_eq!(paths(&ok), vec!["sub/sales.csv"]);
        assert_eq!(ok[0].file.read_all().unwrap(), b"a\n1\n");
    }

    #[test]
    fn messages_name_keys_the_policy_file_accepts() {
        let d = ws();
        let pol = Inputs {
            allow: vec!["data/*.csv".into()],
            max_file_bytes: ByteSize(10),
            max_total_bytes: ByteSize(5),
            ..Inputs::default()
        };
        let w = Workspace::checkout(d.path()).unwrap();
        let err = admit(
            &w,
            &strings(&["secret.env", "data/big.csv"]),
            Allow::Policy(&pol),
        )
        .unwrap_err();
        let keys: Vec<&str> = err
            .iter()
            .flat_map(|e| e.problem.split('`').skip(1).step_by(2))
            .filter(|k| k.starts_with("inputs."))
            .collect();
        assert_eq!(
            keys,
            vec!["inputs.allow", "inputs.max_file_bytes"],
            "{err:?}"
        );
        let err = admit(&w, &strings(&["data/sales.csv"]), Allow::Policy(&pol)).unwrap_err();
        assert!(
            err[0].problem.contains("`inputs.max_total_bytes`"),
            "{err:?}"
        );
        // Every key named is one the policy file reads.
        let yaml = "version: 1\ninputs:\n  allow: ['x']\n  max_file_bytes: 1KiB\n  max_total_bytes: 1KiB\n";
        crate::policy::Policy::from_yaml_str(yaml, "p.yml").unwrap();
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
        let w = Workspace::checkout(d.path()).unwrap();
        let err = admit(
            &w,
            &strings(&["data/out.csv", "data/env.csv"]),
            Allow::Policy(&pol),
        )
        .unwrap_err();
        assert!(err[0].problem.contains("outside the workspace"), "{err:?}");
        assert!(
            err[1].problem.contains("symlink to `secret.env`"),
            "{err:?}"
        );
        // A symlink inside the workspace to an allowed file is fine; the name is the target's.
        let r = admit(&w, &strings(&["data/ok.csv"]), Allow::Policy(&pol)).unwrap();
        assert_eq!(r[0].file.name, "sales.csv");
        // Without a policy (replay), a symlink out is still refused.
        let e = admit_one(&w, "data/out.csv", Allow::Anything).unwrap_err();
        assert!(e.contains("outside the workspace"), "{e}");
    }

    #[test]
    fn the_same_file_named_twice_is_taken_once() {
        let d = ws();
        let w = Workspace::checkout(d.path()).unwrap();
        let abs = d.path().join("data/sales.csv").display().to_string();
        let r = admit(
            &w,
            &["data/sales.csv".into(), "./data/sales.csv".into(), abs],
            Allow::Policy(&Inputs::default()),
        )
        .unwrap();
        assert_eq!(paths(&r), vec!["data/sales.csv"]);
    }
}
