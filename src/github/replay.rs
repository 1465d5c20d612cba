//! `/compute replay` in a thread: replays the newest result the bot posted
//! there (its hidden run record and the exact code shown) against the
//! workspace's files and the sandbox image, and posts the verdict.
//!
//! Only the bot's own comments count (as for the tracking comment), the
//! code is checked against the workspace policy again (a deny or an
//! escalation is not replayed), and the same preconditions as
//! `compute-bot replay` apply: code, input and image hashes must match.

use crate::github::client::Reaction;
use crate::github::inputs;
use crate::github::thread::{Ctx, Published, Stop};
use crate::policy::{Decision, check_code};
use crate::record::RECORD_MARKER_START;
use crate::render;
use crate::replay::{
    Recorded, ReplayError, ReplayVerdict, code_mismatch, compare_inputs, environments_for, replay,
    runtime_for,
};
use crate::sandbox::InputFile;
use crate::status::Status;

/// The verdict comment for a precondition that does not hold.
fn cannot(source: &str, problems: &[String]) -> String {
    let lines: Vec<String> = problems
        .iter()
        .map(|p| format!("- {}", render::neutralize(p)))
        .collect();
    format!(
        "### ⛔ compute-bot: cannot replay\n\nThe [result]({source}) cannot be replayed as recorded:\n\n{}\n",
        lines.join("\n")
    )
}

/// What the reply says: text, reaction, status.
type Answer = (String, Reaction, Status);

/// Replays the newest result in `issue`; the verdict is the reply. Status:
/// ok when reproduced, ignored when there is nothing to replay, failed when it
/// differs or cannot be replayed.
pub(crate) async fn replay_in_thread(ctx: &Ctx<'_>, issue: u64) -> Result<Published, Stop> {
    let (text, reaction, status) = answer(ctx, issue).await;
    Ok(Published::reply(status, &text, reaction))
}

async fn answer(ctx: &Ctx<'_>, issue: u64) -> Answer {
    let found = match ctx
        .gh
        .find_tracking_comment(issue, RECORD_MARKER_START)
        .await
    {
        Ok(f) => f,
        Err(e) => {
            let text = format!(
                "### 💥 compute-bot: cannot read this thread\n\n{}\n",
                render::neutralize(&e.to_string())
            );
            return (text, Reaction::Confused, Status::Failed);
        }
    };
    let Some((result_id, body)) = found else {
        let text = format!(
            "Nothing to replay: this thread has no compute-bot result with a run record. Ask with `{} <goal>` first.",
            ctx.prefix
        );
        return (text, Reaction::Confused, Status::Ignored);
    };
    let source = format!(
        "{}/{}/{}/issues/{issue}#issuecomment-{result_id}",
        ctx.env.server_url.trim_end_matches('/'),
        ctx.env.repository.owner,
        ctx.env.repository.name
    );
    let rec = match Recorded::from_comment_body(&body, &source) {
        Ok(r) => r,
        Err(e) => {
            return (cannot(&source, &[e]), Reaction::Confused, Status::Failed);
        }
    };
    let inputs = match preconditions(ctx, &rec) {
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
    verdict(
        &source,
        &rec,
        replay(sandbox, &rec, inputs, None, runtime).await,
    )
}

/// The code hash, the current policy's verdict on the code, and the inputs
/// (through the same confinement as any request's: inside the checkout, no
/// `..` or symlink out, the policy's globs) with their recorded hashes.
fn preconditions(ctx: &Ctx<'_>, rec: &Recorded) -> Result<Vec<InputFile>, Vec<String>> {
    let mut problems: Vec<String> = code_mismatch(rec).into_iter().collect();
    let verdict = check_code(ctx.policy, &rec.code);
    if verdict.decision != Decision::Allow {
        problems.push(format!(
            "the workspace policy does not allow this code now ({}); ask again with `{}`",
            if verdict.decision == Decision::Deny {
                "deny"
            } else {
                "it needs an approval"
            },
            ctx.prefix
        ));
    }
    let paths: Vec<String> = rec
        .record
        .inputs
        .iter()
        .map(|i| i.path.clone().unwrap_or_else(|| i.name.clone()))
        .collect();
    let files = match inputs::resolve(&ctx.env.workspace, &paths, "", &ctx.policy.inputs) {
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
    if problems.is_empty() {
        Ok(files)
    } else {
        Err(problems)
    }
}

fn verdict(source: &str, rec: &Recorded, v: Result<ReplayVerdict, ReplayError>) -> Answer {
    match v {
        Ok(v) if v.reproduced => (
            format!(
                "### ✅ compute-bot: reproduced\n\nThe [result]({source}) was replayed: the same code \
                 (sha256 `{}`) on the same inputs and image gave the same result and stdout \
                 (result sha256 `{}`). The code ran {} ms (recorded: {} ms).\n{}",
                rec.record.code_sha256,
                v.result_sha256.as_deref().unwrap_or("(no result)"),
                v.duration_ms,
                v.recorded_duration_ms,
                notes_md(&v.notes)
            ),
            Reaction::PlusOne,
            Status::Ok,
        ),
        Ok(v) => (
            format!(
                "### ⚠️ compute-bot: differs\n\nThe [result]({source}) was replayed with the same \
                 code, inputs and image, and came out different, so it is not reproducible:\n\n{}\n{}",
                render::fenced("text", &v.differences.join("\n")),
                notes_md(&v.notes)
            ),
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

fn notes_md(notes: &[String]) -> String {
    notes
        .iter()
        .map(|n| format!("\n_Note: {}_\n", render::neutralize(n)))
        .collect()
}
