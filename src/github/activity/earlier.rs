//! Where a run's `github:` data come from when an earlier run already
//! fetched them — the one rule for `/compute replay`, a follow-up and an
//! approved run (or a run of a plan): the earlier run's snapshot, read back
//! from the files branch with its sha256 checked, so the code computes on
//! the data that were shown; never a second fetch that may see other data.
//!
//! Without a readable snapshot (the token could not write the files branch,
//! so the data are only in the earlier run's artifact) each use decides as
//! its user expects: a replay stops and says how to go on
//! (`replay fresh`, or the artifact with `compute-bot replay --input`); a
//! follow-up fetches afresh and its answer says so; an approved run fetches
//! again and runs only if the data hash as the approver was shown (else it
//! stops, naming the source).

use crate::admit::Admitted;
use crate::github::activity::{self, Cache, Fetched, Origin, SourceFile, fetch};
use crate::github::rest::client::GitHub;
use crate::github::texts::{self, PendingInput};
use crate::policy::Inputs;
use crate::record::RecordedInput;

/// One `github:` input of an earlier run, as its comment records it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct EarlierData {
    /// The source as asked (`github:pulls?state=closed`).
    pub(crate) spec: String,
    /// Hex SHA-256 of the CSV the earlier run's code saw (or was shown).
    pub(crate) sha256: String,
    /// Where it is kept: `<branch>@<sha>:<path>` or `artifact`.
    pub(crate) snapshot: Option<String>,
    /// When it was fetched (RFC 3339, UTC), when recorded.
    pub(crate) fetched_at: Option<String>,
    /// What the earlier run said is incomplete in it.
    pub(crate) notes: Vec<String>,
}

/// Who asks for an earlier run's data; decides what happens when its
/// snapshot cannot be read (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use {
    /// `/compute replay`: the recorded data or a stop.
    Replay,
    /// `/compute replay fresh`: fetched again on purpose.
    ReplayFresh,
    /// A follow-up on the same sources: the earlier data, else afresh.
    FollowUp,
    /// An approved run or a run of a plan: the data shown, else fetched
    /// again and used only when its hash is the one shown.
    Approved,
}

/// The `github:` inputs an answer comment records: from its run record's
/// inputs (`recorded`: the snapshot, its hash and fetch time) and from its
/// request marker
/// (`shown`: the inputs of its request, which also a needs-approval or plan
/// comment carries, with the notes).
pub(crate) fn of_answer(recorded: &[RecordedInput], shown: &[PendingInput]) -> Vec<EarlierData> {
    let mut out: Vec<EarlierData> = Vec::new();
    for i in shown {
        if activity::split_inputs(std::slice::from_ref(&i.path))
            .1
            .is_empty()
        {
            continue;
        }
        out.push(EarlierData {
            spec: i.path.clone(),
            sha256: i.sha256.clone(),
            snapshot: i.snapshot.clone(),
            fetched_at: i.fetched_at.clone(),
            notes: i.notes.clone(),
        });
    }
    for i in recorded {
        let Some(spec) = i.path.as_ref().filter(|p| p.starts_with("github:")) else {
            continue;
        };
        match out
            .iter_mut()
            .find(|e| &e.spec == spec && e.sha256 == i.sha256)
        {
            Some(e) => {
                e.snapshot = e.snapshot.take().or(i.snapshot.clone());
                e.fetched_at = e.fetched_at.take().or(i.fetched_at.clone());
            }
            None => out.push(EarlierData {
                spec: spec.clone(),
                sha256: i.sha256.clone(),
                snapshot: i.snapshot.clone(),
                fetched_at: i.fetched_at.clone(),
                notes: Vec::new(),
            }),
        }
    }
    out
}

/// The run (`<run id>` and attempt) whose folder `runs/<id>-<attempt>/`
/// holds a snapshot at `path`.
fn run_of(path: &str) -> Option<String> {
    let folder = path.strip_prefix("runs/")?.split('/').next()?;
    let (id, attempt) = folder.rsplit_once('-')?;
    Some(if attempt == "1" {
        id.to_string()
    } else {
        format!("{id} (attempt {attempt})")
    })
}

/// Data rows of a CSV the bot wrote (a header, records ending in `\n`;
/// quoted fields may hold line breaks).
fn csv_rows(bytes: &[u8]) -> usize {
    let mut quoted = false;
    let mut records = 0usize;
    for b in bytes {
        match b {
            b'"' => quoted = !quoted,
            b'\n' if !quoted => records += 1,
            _ => {}
        }
    }
    records.saturating_sub(1)
}

/// **The one rule** for where the `github:` data of a run that repeats or
/// builds on an earlier one come from (see the module docs): the data of
/// `specs` (checked against the current policy), read back from `earlier`'s
/// snapshots when every source has one, else as `how` decides. Sources the
/// earlier run did not have (a follow-up naming others) are fetched in this
/// run as any request's. The [`Fetched::origin`] says where they came from.
pub(crate) async fn data_for(
    gh: &GitHub,
    cache: &Cache,
    specs: &[String],
    earlier: &[EarlierData],
    policy: &Inputs,
    how: Use,
    prefix: &str,
) -> Result<(Vec<Admitted>, Fetched), Vec<String>> {
    let matched: Vec<Option<&EarlierData>> = specs
        .iter()
        .map(|s| earlier.iter().find(|e| &e.spec == s))
        .collect();
    if specs.is_empty() || matched.iter().any(Option::is_none) {
        return cache.resolve(gh, specs, policy).await;
    }
    let afresh = |why: String| async move {
        let (admitted, mut fetched) = cache.resolve(gh, specs, policy).await?;
        fetched.origin = Origin::Afresh { why };
        Ok((admitted, fetched))
    };
    if how == Use::ReplayFresh {
        let mut budget = cache.budget(policy);
        let why = match unchanged_since(gh, specs, &matched, policy, &mut budget).await {
            Ok(Some(n)) => {
                let (admitted, mut fetched) = read_back(gh, specs, &matched, policy).await?;
                if let Origin::Snapshot { runs, commits } = fetched.origin {
                    fetched.origin = Origin::Unchanged { runs, commits };
                }
                fetched.requests = n;
                return Ok((admitted, fetched));
            }
            Ok(None) => "asked to (`replay fresh`)".to_string(),
            Err(changed) => format!("asked to (`replay fresh`); {changed}"),
        };
        return afresh(why).await;
    }
    let missing: Vec<&EarlierData> = matched
        .iter()
        .flatten()
        .filter(|e| {
            e.snapshot
                .as_deref()
                .and_then(activity::snapshot_ref)
                .is_none()
        })
        .copied()
        .collect();
    if missing.is_empty() {
        return read_back(gh, specs, &matched, policy).await;
    }
    let names: Vec<String> = missing.iter().map(|e| format!("`{}`", e.spec)).collect();
    let names = names.join(", ");
    match how {
        Use::Replay | Use::ReplayFresh => Err(missing
            .iter()
            .map(|e| {
                let name = crate::sources::parse(&e.spec)
                    .map(|q| activity::file_name(q.source))
                    .unwrap_or_default();
                format!(
                    "`{}` was fetched from GitHub and its snapshot is only in the run's artifact (no files branch, or the token could not write): download `runs/<run>-<attempt>/{name}` from it and run `compute-bot replay --input <its path>` (the path ends in `{name}`), or ask `{prefix} replay fresh` to fetch it again",
                    e.spec
                )
            })
            .collect()),
        Use::FollowUp => {
            afresh(format!("the earlier answer's data ({names}) have no snapshot on the files branch (none set, a token that could not write it — then they are only in its run's artifact —, or an answer from before snapshots), so this answer may see newer activity than the earlier one")).await
        }
        Use::Approved => {
            afresh(format!("the data shown ({names}) have no snapshot on the files branch (none set, a token that could not write it, or a request from before snapshots); the code runs only if the data fetched now hash as shown")).await
        }
    }
}

/// Whether GitHub's data are the earlier run's: every request its
/// snapshots were built from (the `ETag`s kept beside them) asked again
/// with `If-None-Match`. `Ok(Some(n))`: all `n` answered 304 Not Modified
/// (no primary rate limit spent); `Ok(None)`: no `ETag`s to ask with (no
/// snapshot on the files branch, or one from before they were kept);
/// `Err(why)`: changed, or GitHub failed — fetch afresh. Only URLs that
/// belong to the recorded source are asked ([`fetch::belongs`]: the API
/// host, this repository, the source's endpoints; a kept `ETag` of any
/// other URL asks nothing and the data are fetched afresh), each within the
/// run's request `budget`.
async fn unchanged_since(
    gh: &GitHub,
    specs: &[String],
    matched: &[Option<&EarlierData>],
    policy: &Inputs,
    budget: &mut fetch::Budget,
) -> Result<Option<u32>, String> {
    let mut asked: Vec<(String, String)> = Vec::new();
    let mut todo = Vec::new();
    for (spec, e) in specs.iter().zip(matched.iter().flatten()) {
        let Some((sha, path)) = e.snapshot.as_deref().and_then(activity::snapshot_ref) else {
            return Ok(None);
        };
        let Ok(q) = crate::sources::parse(spec) else {
            return Ok(None);
        };
        let side = activity::etags_name(path);
        let tags: Vec<(String, String)> =
            match gh.file_at(sha, &side, policy.max_file_bytes.bytes()).await {
                Ok(Some(b)) => serde_json::from_slice(&b).unwrap_or_default(),
                _ => Vec::new(),
            };
        if tags.is_empty() {
            return Ok(None);
        }
        if let Some((uri, why)) = tags
            .iter()
            .find_map(|(uri, _)| Some((uri, fetch::belongs(gh, q.source, uri).err()?)))
        {
            return Err(format!(
                "the `ETag`s kept beside the snapshot of `{spec}` name `{uri}`, which is not one of its requests ({why}); nothing was asked there"
            ));
        }
        let fresh: Vec<(String, String)> =
            tags.into_iter().filter(|t| !asked.contains(t)).collect();
        asked.extend(fresh.iter().cloned());
        todo.push((q.source, fresh));
    }
    let mut n = 0;
    for (source, tags) in todo {
        let action = format!(
            "asking whether the `github:{}` data of {} changed",
            source.name(),
            gh.repo_ref()
        );
        match fetch::unchanged(
            gh,
            fetch::Purpose {
                action: &action,
                need: fetch::need(source),
            },
            &tags,
            budget,
        )
        .await
        {
            Ok(k) => n += k,
            Err(fetch::NotUnchanged::Changed) => {
                return Err(format!(
                    "GitHub's `github:{}` data changed since the earlier run (a conditional request was answered in full)",
                    source.name()
                ));
            }
            Err(fetch::NotUnchanged::Budget) => {
                return Err(format!(
                    "the run's request budget (`inputs.github_max_requests`: {}) ran out while asking whether they changed",
                    budget.max
                ));
            }
            Err(fetch::NotUnchanged::Failed(e)) => {
                return Err(format!(
                    "could not ask GitHub whether the data changed: {e}"
                ));
            }
        }
    }
    Ok(Some(n))
}

/// Every source's earlier snapshot, read back from its commit on the files
/// branch, its sha256 checked against the record, admitted as fetched data.
async fn read_back(
    gh: &GitHub,
    specs: &[String],
    matched: &[Option<&EarlierData>],
    policy: &Inputs,
) -> Result<(Vec<Admitted>, Fetched), Vec<String>> {
    let queries = activity::check(specs, policy)?;
    let mut problems = Vec::new();
    let (mut admitted, mut files, mut commits, mut runs) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (q, e) in queries.iter().zip(matched.iter().flatten()) {
        let Some((sha, path)) = e.snapshot.as_deref().and_then(activity::snapshot_ref) else {
            continue;
        };
        let bytes = match gh.file_at(sha, path, policy.max_file_bytes.bytes()).await {
            Ok(Some(b)) => b,
            Ok(None) => {
                problems.push(format!(
                    "the snapshot of `{}` is gone from commit `{sha}` (`{path}`) of the files branch; ask again to fetch the data afresh",
                    e.spec
                ));
                continue;
            }
            Err(err) => {
                problems.push(format!(
                    "the snapshot of `{}` cannot be read: {err}",
                    e.spec
                ));
                continue;
            }
        };
        let name = activity::file_name(q.source);
        let a = match crate::admit::admit_fetched(&e.spec, &name, bytes.clone(), policy) {
            Ok(a) => a,
            Err(r) => {
                problems.push(r.to_string());
                continue;
            }
        };
        if a.sha256 != e.sha256 {
            problems.push(format!(
                "the snapshot of `{}` at `{path}` has sha256 {}, the record says {}",
                e.spec, a.sha256, e.sha256
            ));
            continue;
        }
        commits.push(sha[..12].to_string());
        runs.extend(run_of(path));
        files.push(SourceFile {
            query: q.clone(),
            name,
            rows: csv_rows(&bytes),
            bytes,
            notes: e.notes.clone(),
            snapshot: e.snapshot.clone(),
            etags: Vec::new(),
        });
        admitted.push(a);
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    commits.dedup();
    runs.dedup();
    let fetched = Fetched {
        files,
        requests: 0,
        budget: policy.github_max_requests,
        fetched_at: matched.iter().flatten().find_map(|e| e.fetched_at.clone()),
        origin: Origin::Snapshot { runs, commits },
    };
    Ok((admitted, fetched))
}

/// What an answer says of where its `github:` data came from, when not
/// simply fetched in its run: read back from an earlier run's snapshot
/// (which run, when it was fetched, which commit), or fetched afresh and why.
pub(crate) fn origin_words(f: &Fetched) -> Option<String> {
    let fetched_at = f.fetched_at.as_deref();
    match &f.origin {
        Origin::Fetched => None,
        Origin::Snapshot { runs, commits } => {
            Some(texts::data_from_snapshot(runs, fetched_at, commits))
        }
        Origin::Unchanged { runs, commits } => {
            Some(texts::data_unchanged(runs, fetched_at, f.requests, commits))
        }
        Origin::Afresh { why } => Some(texts::data_afresh(why)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_runs_are_read_from_a_kept_snapshot() {
        assert_eq!(csv_rows(b"a,b\n1,\"x\ny\"\n2,z\n"), 2);
        assert_eq!(csv_rows(b"a,b\n"), 0);
        assert_eq!(
            run_of("runs/7101-1/github/github_pulls.csv").as_deref(),
            Some("7101")
        );
        assert_eq!(
            run_of("runs/7101-2/github/github_pulls.csv").as_deref(),
            Some("7101 (attempt 2)")
        );
        assert_eq!(run_of("elsewhere.csv"), None);
    }

    #[test]
    fn an_answer_names_its_sources_from_the_request_and_the_record() {
        let at = format!("b@{}:runs/1-1/github/github_pulls.csv", "a".repeat(40));
        let shown = [
            PendingInput {
                path: "data/x.csv".into(),
                sha256: "11".into(),
                ..PendingInput::default()
            },
            PendingInput {
                path: "github:pulls".into(),
                sha256: "22".into(),
                notes: vec!["sizes not fetched".into()],
                ..PendingInput::default()
            },
        ];
        let input = |path: &str, sha: &str| RecordedInput {
            name: "n".into(),
            size: 1,
            sha256: sha.into(),
            path: Some(path.into()),
            snapshot: Some(at.clone()),
            fetched_at: Some("2026-12-01T00:00:00Z".into()),
        };
        let recorded = [input("github:pulls", "22"), input("github:issues", "33")];
        let got = of_answer(&recorded, &shown);
        assert_eq!(got.len(), 2, "workspace files are not GitHub data: {got:?}");
        assert_eq!(
            (
                got[0].spec.as_str(),
                got[0].snapshot.as_deref(),
                got[0].notes.len()
            ),
            ("github:pulls", Some(at.as_str()), 1),
            "the record's snapshot with the request's notes"
        );
        assert_eq!(got[1].spec, "github:issues");
        // A needs-approval comment has no record: the request alone.
        assert_eq!(of_answer(&[], &shown)[0].snapshot, None);
    }
}
