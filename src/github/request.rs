//! One request, from acknowledgement to outputs: inputs, model, the agent in
//! the sandbox, the result comment, reactions, the report file, the summary.

use std::io::Write;

use crate::agent::{Agent, AgentError, Request, Stage as AgentStage};
use crate::github::action::{
    Ctx, EXIT_CONFIG, EXIT_FAILED, EXIT_OK, Ending, conclude, log_annotation, report_post_errors,
};
use crate::github::actions_io::{self, Outputs};
use crate::github::approval::{PendingInput, PendingRequest, request_marker};
use crate::github::client::{GitHub, GitHubError, Reaction};
use crate::github::event::ActionEnv;
use crate::github::inputs::{self, Resolved};
use crate::github::texts;
use crate::github::tracking::Tracker;
use crate::model::{ModelClient, ModelConfig, ModelOverrides, Provider};
use crate::render::{self, RenderContext};
use crate::report::{Report, ReportStatus};
use crate::sandbox::Sandbox;

/// Where the JSON report goes, relative to the workspace (the one directory a
/// container action shares with later steps such as `actions/upload-artifact`).
pub const REPORT_DIR: &str = "compute-bot-reports";

/// What to tell a commenter when there is a goal but no code and no model.
pub const NO_MODEL_ACTION_HELP: &str = "No language model is configured for this workflow, so no code can be generated for this goal. Either configure a model — set the action inputs `provider` (`openai` for any OpenAI-compatible endpoint, or `anthropic`), `model` and `api_key` (from a repository secret), and `base_url` if needed — or give the exact code to run in a fenced ```` ```python ```` block in the comment (or the `code` input for workflow_dispatch and schedule runs).";

/// Added to model configuration errors, whose text names the `COMPUTE_BOT_*` variables.
const MODEL_INPUTS_HINT: &str = "In the workflow, the action inputs `provider`, `model`, `base_url` and `api_key` set these (they win over the `COMPUTE_BOT_*` variables).";

#[derive(Debug, Default)]
pub(crate) struct Approval {
    pub(crate) by: String,
    pub(crate) sha256: String,
    pub(crate) request_url: String,
}

#[derive(Debug, Default)]
pub(crate) struct Job {
    pub(crate) goal: Option<String>,
    pub(crate) code: Option<String>,
    pub(crate) context: Option<String>,
    /// Paths named on purpose.
    pub(crate) inputs: Vec<String>,
    /// For an approved run: the inputs (and hashes) the approver saw; no
    /// paths are taken from the goal then.
    pub(crate) expected_inputs: Option<Vec<PendingInput>>,
    /// Where to post (none: the summary only).
    pub(crate) issue: Option<u64>,
    /// The comment that asked (reactions go there).
    pub(crate) reply_to: Option<u64>,
    pub(crate) approval: Option<Approval>,
}

/// The tracking comment, reactions and errors of one request.
struct Thread<'a> {
    gh: &'a GitHub,
    tracker: Option<Tracker<'a>>,
    reply_to: Option<u64>,
    errors: Vec<GitHubError>,
    marker: String,
    run_url: String,
}

impl<'a> Thread<'a> {
    async fn react(&mut self, reaction: Reaction) {
        if let Some(id) = self.reply_to
            && let Err(e) = self.gh.add_reaction(id, reaction).await
        {
            self.errors.push(e);
        }
    }

    async fn finish(&mut self, body: &str) {
        if let Some(t) = self.tracker.as_mut()
            && let Err(e) = t.finish(body).await
        {
            self.errors.push(e);
        }
    }

    fn comment_id(&self) -> Option<u64> {
        self.tracker.as_ref().and_then(|t| t.comment_id())
    }

    /// Ends the request before anything ran: the reason in the comment and the summary.
    async fn stop(self, ctx: &Ctx<'_>, title: &str, details: &str, status: &str, exit: i32) -> i32 {
        let mut this = self;
        log_annotation("error", &format!("compute-bot: {title}: {details}"));
        let text = format!(
            "### ❌ compute-bot: {title}\n\n{details}\n\nNothing was run.\n\n<sub>[Workflow run]({})</sub>\n",
            this.run_url
        );
        this.finish(&format!("{}\n{text}", this.marker)).await;
        this.react(Reaction::Confused).await;
        let mut summary = text;
        let exit = report_post_errors(&this.errors, &mut summary, exit);
        conclude(
            ctx.env,
            Ending::status(status, exit)
                .with_summary(summary)
                .with_comment(this.comment_id()),
        )
    }
}

fn model_overrides(env: &ActionEnv) -> Result<ModelOverrides, String> {
    let i = &env.inputs;
    let provider = match &i.provider {
        None => None,
        Some(p) => Some(p.parse::<Provider>().map_err(|e| {
            format!("the action input `provider` is `{p}`: {e}; use `openai` or `anthropic`")
        })?),
    };
    Ok(ModelOverrides {
        provider,
        base_url: i.base_url.clone(),
        model: i.model.clone(),
        api_key: i
            .api_key
            .as_ref()
            .map(|k| crate::model::Secret::new(k.expose())),
        ..ModelOverrides::default()
    })
}

/// In Actions the key comes from the action input `api_key`: a refused key
/// (HTTP 401/403) names that input rather than the CLI's variables.
fn action_key_hint(
    mut report: crate::report::Report,
    key_setting: Option<&str>,
) -> crate::report::Report {
    let Some(setting) = key_setting else {
        return report;
    };
    const INPUT: &str = "the action input `api_key` (from a repository secret, e.g. `api_key: ${{ secrets.COMPUTE_BOT_API_KEY }}`)";
    let fix = |t: &mut String| {
        if t.contains(setting) {
            *t = t.replace(setting, INPUT);
        }
    };
    if let Some(r) = report.stop_reason.as_mut() {
        fix(r);
    }
    for a in &mut report.attempts {
        if let Some(f) = a.failure.as_mut() {
            fix(f);
        }
    }
    report
}

fn map_stage(s: AgentStage, max_attempts: u32) -> Option<(texts::Stage, u32, u32)> {
    match s {
        AgentStage::Generating { attempt, of } => Some((texts::Stage::Generating, attempt, of)),
        AgentStage::Checking { attempt } => Some((texts::Stage::Checking, attempt, max_attempts)),
        AgentStage::Running { attempt } => Some((texts::Stage::Running, attempt, max_attempts)),
        AgentStage::Validating { attempt } => {
            Some((texts::Stage::Validating, attempt, max_attempts))
        }
        AgentStage::Explaining => None,
    }
}

fn problems_md(problems: &[inputs::InputProblem]) -> String {
    problems
        .iter()
        .map(|p| {
            format!(
                "- `{}` {}",
                p.path.replace('`', "'"),
                render::neutralize(&p.problem)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Writes the full report as JSON under the workspace ([`REPORT_DIR`]);
/// returns the path relative to the workspace (falls back to an absolute
/// path in the temp directory when the workspace is not writable).
fn write_report(env: &ActionEnv, report: &Report) -> Option<String> {
    let json = match serde_json::to_string_pretty(report) {
        Ok(j) => j,
        Err(e) => {
            tracing::warn!("cannot serialize the report: {e}");
            return None;
        }
    };
    let run: String = env
        .run_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let name = format!("report-{run}-{}.json", env.run_attempt);
    let dir = env.workspace.join(REPORT_DIR);
    let in_workspace = std::fs::create_dir_all(&dir)
        .and_then(|_| {
            let ignore = dir.join(".gitignore");
            if !ignore.exists() {
                std::fs::write(&ignore, "*\n")?;
            }
            std::fs::write(dir.join(&name), &json)
        })
        .map(|_| format!("{REPORT_DIR}/{name}"));
    match in_workspace {
        Ok(rel) => Some(rel),
        Err(e) => {
            let tmp = std::env::temp_dir().join(format!("compute-bot-{name}"));
            tracing::warn!(
                "cannot write the report into the workspace ({e}); writing {}",
                tmp.display()
            );
            std::fs::write(&tmp, &json)
                .ok()
                .map(|_| tmp.display().to_string())
        }
    }
}

fn status_name(s: ReportStatus) -> &'static str {
    match s {
        ReportStatus::Ok => "ok",
        ReportStatus::Failed => "failed",
        ReportStatus::NeedsApproval => "needs_approval",
    }
}

/// Runs one request: acknowledge, inputs, model, agent, post, outputs.
pub(crate) async fn execute(ctx: &Ctx<'_>, job: Job) -> i32 {
    let env = ctx.env;
    let marker = texts::run_marker(&env.run_id);
    let run_url = env.run_url();
    let mut thread = Thread {
        gh: ctx.gh,
        tracker: job
            .issue
            .map(|i| Tracker::new(ctx.gh, i, marker.clone(), Some(run_url.clone()))),
        reply_to: job.reply_to,
        errors: Vec::new(),
        marker: marker.clone(),
        run_url: run_url.clone(),
    };
    thread.react(Reaction::Eyes).await;
    let mut show_progress = thread.tracker.is_some();
    if let Some(t) = thread.tracker.as_mut()
        && let Err(e) = t.acknowledge().await
    {
        // Go on: the result still reaches the summary; posting is retried at the end.
        tracing::warn!("cannot post the tracking comment: {e}");
        thread.errors.push(e);
        show_progress = false;
    }

    // Inputs.
    let mention_text = match &job.expected_inputs {
        Some(_) => String::new(),
        None => [job.goal.as_deref(), job.context.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("\n"),
    };
    let resolved: Vec<Resolved> = match inputs::resolve(
        &env.workspace,
        &job.inputs,
        &mention_text,
        &ctx.policy.inputs,
    ) {
        Ok(r) => r,
        Err(problems) => {
            return thread
                .stop(
                    ctx,
                    "the inputs cannot be used",
                    &problems_md(&problems),
                    "failed",
                    EXIT_FAILED,
                )
                .await;
        }
    };
    if let Some(expected) = &job.expected_inputs {
        let changed: Vec<String> = expected
            .iter()
            .filter(|e| {
                !resolved
                    .iter()
                    .any(|r| r.path == e.path && r.sha256 == e.sha256)
            })
            .map(|e| {
                format!(
                    "- `{}` changed since the code was shown",
                    e.path.replace('`', "'")
                )
            })
            .collect();
        if !changed.is_empty() {
            return thread
                .stop(
                    ctx,
                    "the approved request cannot run on the same data",
                    &format!(
                        "{}\n\nThe approval covered the code together with these inputs. Ask again with a new `{}` comment.",
                        changed.join("\n"),
                        ctx.prefix
                    ),
                    "failed",
                    EXIT_FAILED,
                )
                .await;
        }
    }

    // Model.
    let has_code = job.code.as_deref().is_some_and(|c| !c.trim().is_empty())
        || job
            .goal
            .as_deref()
            .and_then(crate::prompt::extract_fenced_code)
            .is_some_and(|c| !c.trim().is_empty());
    let model_cfg = match model_overrides(env)
        .and_then(|o| ModelConfig::from_env_with(&o, ctx.vars).map_err(|e| e.to_string()))
    {
        Ok(c) => c,
        Err(e) => {
            return thread
                .stop(
                    ctx,
                    "the model configuration is not usable",
                    &format!("{}\n\n{MODEL_INPUTS_HINT}", render::neutralize(&e)),
                    "error",
                    EXIT_CONFIG,
                )
                .await;
        }
    };
    if !has_code && model_cfg.is_none() {
        return thread
            .stop(
                ctx,
                "no model and no code",
                NO_MODEL_ACTION_HELP,
                "failed",
                EXIT_FAILED,
            )
            .await;
    }
    // A model is only used to generate and explain; exact code runs without
    // one. Without an API key (e.g. `api_key: ${{ secrets.X }}` with the
    // secret missing) exact code does not call the provider at all: the
    // explanation is the template.
    let model_cfg = model_cfg.filter(|c| {
        let keyless_exact = has_code && c.api_key.is_none();
        if keyless_exact {
            tracing::info!("exact code and no api_key: the model is not called");
        }
        !keyless_exact
    });
    let key_setting = model_cfg.as_ref().map(|c| c.key_setting());
    // A model is only used to generate and explain; exact code runs without one.
    let model = match model_cfg.map(ModelClient::new).transpose() {
        Ok(m) => m,
        Err(e) => {
            return thread
                .stop(
                    ctx,
                    "the model configuration is not usable",
                    &format!(
                        "{}\n\n{MODEL_INPUTS_HINT}",
                        render::neutralize(&e.to_string())
                    ),
                    "error",
                    EXIT_CONFIG,
                )
                .await;
        }
    };

    // Sandbox.
    let sandbox = match Sandbox::connect().await {
        Ok(s) => s,
        Err(e) => {
            return thread
                .stop(
                    ctx,
                    "the sandbox is not available",
                    &format!(
                        "{}\n\nThe action needs a Linux runner with Docker (e.g. `ubuntu-latest`).",
                        render::neutralize(&e.to_string())
                    ),
                    "error",
                    EXIT_CONFIG,
                )
                .await;
        }
    };
    if let Err(e) = sandbox.cleanup_leftovers().await {
        tracing::warn!(error = %e, "could not clean up leftover containers");
    }

    let max_attempts = if has_code {
        1
    } else {
        u32::from(ctx.policy.attempts.get())
    };
    let request = Request {
        goal: job.goal.clone(),
        code: job.code.clone(),
        inputs: resolved.iter().map(|r| r.file.clone()).collect(),
        schema: None,
        context: job.context.clone(),
        approved_sha256: job.approval.as_ref().map(|a| a.sha256.clone()),
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<AgentStage>();
    let policy = ctx.policy;
    let work = async move {
        let progress = move |s: AgentStage| {
            let _ = tx.send(s);
        };
        let agent = Agent {
            policy,
            sandbox: &sandbox,
            model: model.as_ref(),
            progress: &progress,
        };
        agent.answer(request).await
    };
    let tracker = &mut thread.tracker;
    let updater = async {
        while let Some(mut stage) = rx.recv().await {
            // Coalesce: only the newest stage is shown.
            while let Ok(next) = rx.try_recv() {
                stage = next;
            }
            if !show_progress {
                continue;
            }
            if let (Some(t), Some((s, attempt, of))) =
                (tracker.as_mut(), map_stage(stage, max_attempts))
                && let Err(e) = t.stage(s, attempt, of).await
            {
                tracing::warn!("cannot show the stage in the tracking comment: {e}");
            }
        }
    };
    let (answer, ()) = tokio::join!(work, updater);
    let report = match answer {
        Ok(r) => action_key_hint(r, key_setting.as_deref()),
        Err(e) => {
            let (status, exit) = match e {
                AgentError::NoModel(_) | AgentError::Empty => ("failed", EXIT_FAILED),
                AgentError::Schema(_) | AgentError::Sandbox(_) => ("error", EXIT_CONFIG),
            };
            return thread
                .stop(
                    ctx,
                    "the request could not start",
                    &render::neutralize(&e.to_string()),
                    status,
                    exit,
                )
                .await;
        }
    };

    // Post.
    let mut report = report;
    let paths: Vec<(String, String)> = resolved
        .iter()
        .map(|r| (r.file.name.clone(), r.path.clone()))
        .collect();
    crate::record::set_input_paths(&mut report, &paths);
    let report_path = write_report(env, &report);
    if let Some(o) = &report.outcome {
        let mut out = std::io::stdout().lock();
        if !o.stdout.is_empty() {
            let _ = actions_io::echo_untrusted(&mut out, "sandbox stdout", &o.stdout);
        }
        if !o.stderr.is_empty() {
            let _ = actions_io::echo_untrusted(&mut out, "sandbox stderr", &o.stderr);
        }
        let _ = out.flush();
    }
    let mut head = marker.clone();
    if let Some(a) = &job.approval {
        head.push_str(&format!(
            "\n✅ Approved by @{} ([request]({})): ran exactly the code with sha256 `{}`.\n",
            a.by, a.request_url, a.sha256
        ));
    }
    if report.status == ReportStatus::NeedsApproval {
        let pending = PendingRequest {
            goal: job.goal.clone(),
            context: job.context.clone(),
            inputs: resolved
                .iter()
                .map(|r| PendingInput {
                    path: r.path.clone(),
                    sha256: r.sha256.clone(),
                })
                .collect(),
        };
        head.push('\n');
        head.push_str(&request_marker(&pending));
    }
    let rctx = RenderContext {
        run_url: Some(run_url.clone()),
        marker: Some(head),
        command: Some(ctx.prefix.to_string()),
    };
    let body = render::markdown(&report, &rctx);
    thread.finish(&body).await;
    match report.status {
        ReportStatus::Ok => thread.react(Reaction::Rocket).await,
        ReportStatus::Failed => thread.react(Reaction::Confused).await,
        ReportStatus::NeedsApproval => {}
    }
    let mut summary = render::summary(&report, &rctx);
    let exit = match report.status {
        ReportStatus::Ok | ReportStatus::NeedsApproval => EXIT_OK,
        ReportStatus::Failed => EXIT_FAILED,
    };
    let exit = report_post_errors(&thread.errors, &mut summary, exit);
    let end = Ending {
        outputs: Outputs {
            status: status_name(report.status).to_string(),
            result: report.result.clone(),
            comment_id: thread.comment_id(),
            code_sha256: report.code_sha256.clone(),
            report_path,
        },
        summary: Some(summary),
        exit,
    };
    conclude(env, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_map_onto_the_checklist() {
        assert_eq!(
            map_stage(AgentStage::Generating { attempt: 2, of: 3 }, 3),
            Some((texts::Stage::Generating, 2, 3))
        );
        assert_eq!(
            map_stage(AgentStage::Running { attempt: 1 }, 1),
            Some((texts::Stage::Running, 1, 1))
        );
        assert_eq!(map_stage(AgentStage::Explaining, 1), None);
    }
}
