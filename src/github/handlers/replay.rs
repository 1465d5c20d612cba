//! `/compute replay` in a thread: replays the newest result the bot posted
//! there (its hidden run record and the exact code shown) against the
//! workspace's files and the sandbox image, and posts the verdict.
//!
//! Only the bot's own comments count (as for the tracking comment), the
//! code is checked against the workspace policy again (a deny or an
//! escalation is not replayed), and the same preconditions as
//! `compute-bot replay` apply: code, input and image hashes must match.

use crate::github::activity::{self, Origin, earlier, earlier::Use};
use crate::github::inputs;
use crate::github::rest::comments::Reaction;
use crate::github::texts::{self, cannot_replay as cannot, read_request_marker};
use crate::github::thread::{Asker, Ctx, Published, Stop};
use crate::policy::{Decision, check_code};
use crate::record::RECORD_MARKER_START;
use crate::replay::{
    Recorded, ReplayError, ReplayVerdict, code_mismatch, compare_inputs, environments_for, replay,
    runtime_for,
};
use crate::sandbox::InputFile;
use crate::status::Status;

/// What the reply says: text, reaction, status.
type Answer = (String, Reaction, Status);

/// Replays the newest result in `issue`; the verdict is the reply. Status:
/// ok when reproduced, ignored when there is nothing to replay, failed when it
/// differs or cannot be replayed.
pub(crate) async fn replay_in_thread(
    ctx: &Ctx<'_>,
    issue: u64,
    asker: Asker<'_>,
    fresh: bool,
) -> Result<Published, Stop> {
    if let Err(refused) = asker.allowed(ctx).await? {
        return Ok(refused);
    }
    let (text, reaction, status) = answer(ctx, issue, fresh).await;
    Ok(Published::reply(status, &text, reaction))
}

async fn answer(ctx: &Ctx<'_>, issue: u64, fresh: bool) -> Answer {
    let found = match ctx
        .gh
        .find_tracking_comment(issue, RECORD_MARKER_START)
        .await
    {
        Ok(f) => f,
        Err(e) => {
            let text = texts::replay_thread_unreadable(&e.to_string());
            return (text, Reaction::Confused, Status::Failed);
        }
    };
    let Some((result_id, body)) = found else {
        let text = texts::nothing_to_replay(ctx.prefix);
        return (text, Reaction::Confused, Status::Ignored);
    };
    let source = ctx.comment_url(issue, result_id);
    let rec = match Recorded::from_comment_body(&body, &source) {
        Ok(r) => r,
        Err(e) => {
            return (cannot(&source, &[e]), Reaction::Confused, Status::Failed);
        }
    };
    let (inputs, data_note) = match preconditions(ctx, &rec, &body, fresh).await {
        Ok(i) => i,
        Err(p) => {
            return (cannot(&source, &p), Reaction::MinusOne, Status::Failed);
        }
    };
    let sandbox = match ctx.session.sandbox(&environments_for(&rec)).await {
        Ok(s) => s,
        Err(e) => {
            let text = cannot(&source, &[e.to_string()]);
            return (text, Reaction::Confused, Status::Failed);
        }
    };
    // The recorded runtime; a record without one runs under this run's.
    let runtime = runtime_for(&rec, None, ctx.runtime);
    let (text, reaction, status) = verdict(
        &source,
        &rec,
        replay(sandbox, &rec, inputs, &[], None, runtime).await,
    );
    (
        format!("{text}{}", texts::replay_notes(&data_note)),
        reaction,
        status,
    )
}

/// The code hash, the current policy's verdict on the code, and the inputs
/// (through the same confinement as any request's: inside the checkout, no
/// `..` or symlink out, the policy's globs) with their recorded hashes; the
/// `github:` data from the run's snapshot (hash checked too), or fetched
/// again when `fresh`. The second value says where that data came from.
async fn preconditions(
    ctx: &Ctx<'_>,
    rec: &Recorded,
    body: &str,
    fresh: bool,
) -> Result<(Vec<InputFile>, Vec<String>), Vec<String>> {
    let mut problems: Vec<String> = code_mismatch(rec).into_iter().collect();
    let verdict = check_code(ctx.policy, &rec.code);
    if verdict.decision != Decision::Allow {
        problems.push(texts::replay_not_allowed_now(
            verdict.decision == Decision::Deny,
            ctx.prefix,
        ));
    }
    let paths: Vec<String> = rec
        .record
        .inputs
        .iter()
        .map(|i| i.path.clone().unwrap_or_else(|| i.name.clone()))
        .collect();
    let (paths, specs) = activity::split_inputs(&paths);
    let mut files = match inputs::resolve(&ctx.env.workspace, &paths, "", &ctx.policy.inputs) {
        Ok(found) => {
            let found = found.into_iter().map(|r| (r.path, r.file)).collect();
            compare_inputs(&rec.record, found).unwrap_or_else(|p| {
                problems.extend(p);
                Vec::new()
            })
        }
        Err(p) => {
            problems.extend(p.iter().map(|p| format!("input {p}")));
            Vec::new()
        }
    };
    let mut notes = Vec::new();
    if !specs.is_empty() {
        match github_data(ctx, rec, body, &specs, fresh).await {
            Ok((data, note)) => {
                files.extend(data);
                notes.push(note);
            }
            Err(p) => problems.extend(p),
        }
    }
    if problems.is_empty() {
        Ok((files, notes))
    } else {
        Err(problems)
    }
}

/// The recorded `github:` data: read back from the snapshot each input's
/// record names on the files branch (its sha256 checked), or, `fresh`,
/// fetched again with the recorded queries — the one rule of
/// [`activity::earlier::data_for`]. The note says which.
async fn github_data(
    ctx: &Ctx<'_>,
    rec: &Recorded,
    body: &str,
    specs: &[String],
    fresh: bool,
) -> Result<(Vec<InputFile>, String), Vec<String>> {
    let shown = read_request_marker(body)
        .map(|r| r.inputs)
        .unwrap_or_default();
    let earlier = earlier::of_answer(&rec.record.inputs, &shown);
    let how = if fresh { Use::ReplayFresh } else { Use::Replay };
    let (admitted, fetched) = earlier::data_for(
        ctx.gh,
        ctx.fetched,
        specs,
        &earlier,
        &ctx.policy.inputs,
        how,
        ctx.prefix,
    )
    .await?;
    let words = earlier::origin_words(&fetched).unwrap_or_default();
    let note = match &fetched.origin {
        Origin::Snapshot { .. } => texts::replay_data_from_snapshot(specs, &words, ctx.prefix),
        Origin::Unchanged { .. } => texts::replay_data_unchanged(specs, &words),
        Origin::Afresh { why } => texts::replay_data_afresh(fetched.requests, why),
        Origin::Fetched => texts::replay_data_fetched(fetched.requests, ctx.prefix),
    };
    Ok((admitted.into_iter().map(|a| a.file).collect(), note))
}

fn verdict(source: &str, rec: &Recorded, v: Result<ReplayVerdict, ReplayError>) -> Answer {
    match v {
        Ok(v) if v.reproduced => (
            texts::reproduced(
                source,
                &rec.record.code_sha256,
                v.result_sha256.as_deref(),
                v.duration_ms,
                v.recorded_duration_ms,
                &v.notes,
            ),
            Reaction::PlusOne,
            Status::Ok,
        ),
        Ok(v) => (
            texts::differs(source, &v.differences, &v.notes),
            Reaction::Confused,
            Status::Failed,
        ),
        Err(ReplayError::Mismatch(p)) => (cannot(source, &p), Reaction::MinusOne, Status::Failed),
        Err(ReplayError::Sandbox(e)) => (
            cannot(source, &[e.to_string()]),
            Reaction::Confused,
            Status::Failed,
        ),
    }
}

#[cfg(test)]
mod tests {
    use crate::github::handlers::tests::{Scripted, Tester, assert_answer, fenced, shipped_policy};

    const CODE: &str = "import json\nprint(json.dumps({\"total\": 42}))\n";
    const ANSWER: &str = "{\"total\": 42}\n";

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn replay_runs_the_newest_result_again_and_posts_the_verdict() {
        let mut t = Tester::new(
            &shipped_policy("default.yml"),
            [Scripted::ok(ANSWER), Scripted::ok(ANSWER)],
        )
        .await;
        let first = t
            .comment("alice", &format!("/compute the total\n{}", fenced(CODE)))
            .await;
        assert_eq!(first.status, "ok");
        let answer = t.comment("alice", "/compute replay").await;
        assert_answer!(answer);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn replay_without_a_result_says_there_is_nothing_to_replay() {
        let mut t = Tester::new(&shipped_policy("default.yml"), []).await;
        let answer = t.comment("alice", "/compute replay").await;
        assert_answer!(answer);
    }
}
