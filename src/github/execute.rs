//! One request, from acknowledgement to its end: inputs, model, the agent in
//! the sandbox, the result comment, the report file. Each step that cannot
//! go on returns a [`Stop`]; the end is written by
//! [`crate::github::thread::conclude`].

use std::io::Write;

use crate::agent::{Agent, AgentError, Ahead, PendingExplanation, Request, Stage};
use crate::github::actions::event::ActionEnv;
use crate::github::actions::workflow::{self, Outputs};
use crate::github::activity::{self, earlier, earlier::Use};
use crate::github::assets;
use crate::github::command::Ask;
use crate::github::followup::find_earlier;
use crate::github::inputs::{self, Resolved};
use crate::github::rest::comments::Reaction;
use crate::github::spec::RunSpec;
use crate::github::texts::{self, PendingInput, request_marker, stop};
use crate::github::thread::{Ctx, Later, Post, Published, Stop, Thread, log_annotation};
use crate::model::{ModelChoice, ModelClient, ModelConfig, ModelOverrides, Provider};
use crate::render::{self, FilesBlock, RenderContext};
use crate::report::{Report, ReportStatus};
use crate::status::Status;

/// Where the JSON report goes, relative to the workspace (the one directory a
/// container action shares with later steps such as `actions/upload-artifact`).
const REPORT_DIR: &str = "compute-bot-reports";

fn model_overrides(env: &ActionEnv) -> Result<ModelOverrides, String> {
    let i = &env.inputs;
    let provider = |input: &str, value: &Option<String>| match value {
        None => Ok(None),
        Some(p) => p.parse::<Provider>().map(Some).map_err(|_| {
            format!(
                "the action input `{input}` is `{p}`, not a model provider; use {}",
                Provider::choices()
            )
        }),
    };
    Ok(ModelOverrides {
        first: ModelChoice {
            provider: provider("provider", &i.provider)?,
            base_url: i.base_url.clone(),
            model: i.model.clone(),
            api_key: i.api_key.clone(),
        },
        fallback: ModelChoice {
            provider: provider("fallback_provider", &i.fallback_provider)?,
            base_url: i.fallback_base_url.clone(),
            model: i.fallback_model.clone(),
            api_key: i.fallback_api_key.clone(),
        },
        ..ModelOverrides::default()
    })
}

/// Where a model's key comes from in Actions: the key setting its errors
/// name (`COMPUTE_BOT_API_KEY (or OPENAI_API_KEY)`), and the action input
/// to name instead.
type KeyHint = (String, &'static str);

/// In Actions the keys come from the action inputs `api_key` and
/// `fallback_api_key`: a refused key (HTTP 401/403) names that input rather
/// than the CLI's variables.
fn action_key_hint(mut report: Report, hints: &[KeyHint]) -> Report {
    let fix = |t: &mut String| {
        for (setting, input) in hints {
            if t.contains(setting.as_str()) {
                *t = t.replace(setting.as_str(), input);
            }
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

fn map_stage(s: Stage, max_attempts: u32) -> Option<(texts::Step, u32, u32)> {
    match s {
        Stage::Generating { attempt, of } => Some((texts::Step::Generating, attempt, of)),
        Stage::Checking { attempt } => Some((texts::Step::Checking, attempt, max_attempts)),
        Stage::Running { attempt } => Some((texts::Step::Running, attempt, max_attempts)),
        Stage::Validating { attempt } => Some((texts::Step::Validating, attempt, max_attempts)),
        Stage::Explaining => None,
    }
}

/// Writes the full report as JSON under the workspace ([`REPORT_DIR`]);
/// returns the path relative to the workspace (falls back to an absolute
/// path in the temp directory when the workspace is not writable).
fn write_report(env: &ActionEnv, report: &Report) -> Option<String> {
    write_report_as(env, report, "report")
}

/// [`write_report`] under the name `<stem>-<run>-<attempt>.json` (a watch
/// run writes one per watch and side).
pub(crate) fn write_report_as(env: &ActionEnv, report: &Report, stem: &str) -> Option<String> {
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
    let name = format!("{stem}-{run}-{}.json", env.run_attempt);
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

/// Runs one request in `thread`: acknowledge, inputs, model, agent; returns
/// the result to publish, or why it stopped.
pub(crate) async fn execute(
    ctx: &Ctx<'_>,
    thread: &mut Thread<'_>,
    spec: RunSpec,
) -> Result<Published, Stop> {
    execute_ahead(ctx, thread, spec, None).await
}

/// [`execute`] with the container a front end already started for the
/// run's exact code ([`prepare_ahead`], e.g. while GitHub said who asked);
/// `None`: it starts now, while the bot talks to GitHub (a plan starts no
/// container).
pub(crate) async fn execute_ahead(
    ctx: &Ctx<'_>,
    thread: &mut Thread<'_>,
    spec: RunSpec,
    ahead: Option<Ahead>,
) -> Result<Published, Stop> {
    let env = ctx.env;
    let marker = texts::run_marker(&env.run_id);
    let ahead = match ahead {
        Some(ahead) => Some(ahead),
        None if spec.plan_only => None,
        None => prepare_ahead(ctx, &spec).await,
    };
    let show_progress = if spec.plan_only {
        thread.seen().await;
        false
    } else {
        thread.acknowledge(&marker, &env.run_url()).await
    };
    let (resolved, inherited, fetched) = resolve_inputs(ctx, &spec).await?;
    let (model, has_code, key_hints) = model_for(ctx, &spec)?;
    let sandbox = ctx
        .session
        .sandbox(&ctx.policy.sandbox.environments())
        .await
        .map_err(|e| {
            Stop::new(
                Status::Error,
                stop::SANDBOX_UNAVAILABLE,
                stop::sandbox_unavailable(&e.to_string()),
            )
        })?;
    let max_attempts = if has_code {
        1
    } else {
        u32::from(ctx.policy.attempts.get())
    };
    let request = spec.request(
        resolved.iter().map(|r| r.file.clone()).collect(),
        with_sources(spec.context.clone(), &fetched),
    );
    let agent = Agent {
        policy: ctx.policy,
        sandbox,
        model: model.as_ref(),
        runtime: ctx.runtime,
        progress: &|_| {},
    };
    let progress = show_progress.then_some(max_attempts);
    let pulling = sandbox.pull_ahead(ctx.policy.image()).await;
    let (report, pending) =
        match answer_with_progress(agent, request, ahead, thread, progress, pulling).await {
            Ok(answered) => answered,
            // The provider refused the key, model or quota mid-run: the report
            // so far is published, and the run's status is `error`.
            Err(AgentError::ModelConfiguration { report, .. }) => {
                let report = action_key_hint(*report, &key_hints);
                let shown = shown_inputs(&resolved, &fetched, &[]);
                return Ok(publish(
                    ctx,
                    &spec,
                    Given {
                        resolved: &resolved,
                        inherited,
                        shown: &shown,
                    },
                    &marker,
                    Answered {
                        report,
                        explaining: None,
                    },
                    None,
                ));
            }
            Err(e) => {
                let status = match e {
                    AgentError::NoModel(_) | AgentError::Empty => Status::Failed,
                    AgentError::Schema(_)
                    | AgentError::Sandbox(_)
                    | AgentError::ModelConfiguration { .. } => Status::Error,
                };
                return Err(Stop::new(
                    status,
                    stop::NOT_STARTED,
                    stop::error_details(&e.to_string()),
                ));
            }
        };
    let mut report = action_key_hint(report, &key_hints);
    if let (Some(note), Some(o)) = (&spec.code_note, report.outcome.as_mut()) {
        o.notes.push(note.clone());
    }
    let files = assets::show(ctx, &report, &env.workspace.join(REPORT_DIR)).await;
    let mut report = report;
    let (sources_md, kept) = keep_sources(ctx, &fetched, &mut report).await;
    let shown = shown_inputs(&resolved, &fetched, &kept);
    Ok(publish(
        ctx,
        &spec,
        Given {
            resolved: &resolved,
            inherited,
            shown: &shown,
        },
        &format!("{marker}{sources_md}"),
        Answered {
            report,
            explaining: pending,
        },
        files,
    ))
}

/// Keeps the fetched `github:` data (files branch, else the run's
/// artifact; data read back from an earlier run's snapshot stay where they
/// are, and a file this run kept already is not committed again), records
/// where in the run record, and returns the line the answer shows — each
/// source with its rows, where the data came from (the requests made, or
/// the earlier run's snapshot) and what is incomplete; empty when no source
/// was named — with where each file is kept, by name.
pub(crate) async fn keep_sources(
    ctx: &Ctx<'_>,
    fetched: &activity::Fetched,
    report: &mut Report,
) -> (String, Vec<(String, String)>) {
    if fetched.files.is_empty() {
        return (String::new(), Vec::new());
    }
    let sha = |f: &activity::SourceFile| crate::sandbox::sha256_hex(&f.bytes);
    let known = |f: &activity::SourceFile| {
        f.snapshot
            .clone()
            .or_else(|| ctx.fetched.kept(&f.name, &sha(f)))
    };
    let new: Vec<&activity::SourceFile> = fetched
        .files
        .iter()
        .filter(|f| known(f).is_none())
        .collect();
    let mut files: Vec<(String, Vec<u8>)> = new
        .iter()
        .map(|f| (f.name.clone(), f.bytes.clone()))
        .collect();
    // The ETags beside the files, after them (so the first entries of what
    // is kept are the files'): what `replay fresh` asks again with.
    files.extend(new.iter().filter(|f| !f.etags.is_empty()).map(|f| {
        let json = serde_json::to_vec(&f.etags).unwrap_or_default();
        (activity::etags_name(&f.name), json)
    }));
    let committed = assets::keep_snapshot(ctx, &files, &ctx.env.workspace.join(REPORT_DIR)).await;
    for (f, (_, at)) in new.iter().zip(&committed) {
        ctx.fetched.keep(&f.name, &sha(f), at);
    }
    let kept: Vec<(String, String)> = fetched
        .files
        .iter()
        .filter_map(|f| Some((f.name.clone(), known(f)?)))
        .collect();
    report.set_input_snapshots(&kept, fetched.fetched_at.as_deref());
    let commit = kept
        .first()
        .and_then(|(_, at)| activity::snapshot_ref(at))
        .map(|(sha, _)| sha);
    let fetched_here = texts::data_fetched_here(fetched.requests, fetched.budget, commit);
    let from = match earlier::origin_words(fetched) {
        None => fetched_here,
        Some(w)
            if matches!(
                fetched.origin,
                activity::Origin::Snapshot { .. } | activity::Origin::Unchanged { .. }
            ) =>
        {
            w
        }
        Some(w) => format!("{w}; {fetched_here}"),
    };
    let queries: Vec<(&str, usize)> = fetched
        .files
        .iter()
        .map(|f| (f.query.text.as_str(), f.rows))
        .collect();
    let notes: Vec<(&str, &str)> = fetched
        .files
        .iter()
        .flat_map(|f| f.notes.iter().map(|n| (f.name.as_str(), n.as_str())))
        .collect();
    (texts::github_data_line(&queries, &from, &notes), kept)
}

/// The inputs an answer records in its request marker (what an approval,
/// a plan's run or a follow-up takes): each path with its hash, and for a
/// `github:` source where its snapshot is kept, when it was fetched and
/// what is incomplete.
fn shown_inputs(
    resolved: &[Resolved],
    fetched: &activity::Fetched,
    kept: &[(String, String)],
) -> Vec<PendingInput> {
    resolved
        .iter()
        .map(|r| {
            let source = fetched.files.iter().find(|f| f.name == r.file.name);
            PendingInput {
                path: r.path.clone(),
                sha256: r.sha256.clone(),
                snapshot: source.and_then(|f| {
                    kept.iter()
                        .find(|(n, _)| *n == f.name)
                        .map(|(_, at)| at.clone())
                }),
                fetched_at: source.and(fetched.fetched_at.clone()),
                notes: source.map(|f| f.notes.clone()).unwrap_or_default(),
            }
        })
        .collect()
}

/// The request's context for the model with what the `github:` sources
/// are (their files, columns and what is incomplete) after it.
pub(crate) fn with_sources(context: Option<String>, fetched: &activity::Fetched) -> Option<String> {
    if fetched.files.is_empty() {
        return context;
    }
    let described = activity::describe(fetched);
    Some(match context {
        Some(c) if !c.trim().is_empty() => format!("{c}\n\n{described}"),
        _ => described,
    })
}

/// The run of a `/compute` or `/compute plan` comment whose asker may run
/// code: stops when the code it names in the checkout is unusable (`named`,
/// what [`RunSpec::take_named_code`] said), warns of the options it does
/// not know, and adds the earlier answer it builds on (a follow-up links or
/// quotes it); the usage reply when it names neither a goal nor code.
pub(crate) async fn asked_run(
    ctx: &Ctx<'_>,
    issue: u64,
    ask: &Ask,
    spec: RunSpec,
    named: Result<(), inputs::InputProblem>,
) -> Result<Result<RunSpec, Published>, Stop> {
    if let Err(problem) = named {
        return Err(Stop::new(
            Status::Failed,
            stop::CODE_UNUSABLE,
            stop::inputs_unusable(&[problem]),
        ));
    }
    let unknown = ask.unknown_options();
    if !unknown.is_empty() {
        log_annotation(
            "warning",
            &format!(
                "compute-bot: unknown options ignored: {}",
                unknown.join(", ")
            ),
        );
    }
    if spec.goal.is_none() && spec.code.is_none() {
        return Ok(Err(Published::reply(
            Status::Ignored,
            &texts::usage(ctx.prefix),
            Reaction::Confused,
        )));
    }
    let text = format!(
        "{}\n{}",
        spec.goal.as_deref().unwrap_or_default(),
        spec.context.as_deref().unwrap_or_default()
    );
    Ok(Ok(RunSpec {
        earlier: find_earlier(ctx, issue, &text).await,
        ..spec
    }))
}

/// For exact code the policy lets run (a fenced block, the `code` input):
/// its container, started now and preloading what the code imports, so the
/// interpreter imports while the bot acknowledges. Removed unused if the
/// request stops before it runs ([`Ahead`]).
pub(crate) async fn prepare_ahead(ctx: &Ctx<'_>, spec: &RunSpec) -> Option<Ahead> {
    let request = spec.request(Vec::new(), None);
    let sandbox = ctx
        .session
        .sandbox(&ctx.policy.sandbox.environments())
        .await
        .ok()?;
    // The policy's image, when the engine lacks it, arrives while GitHub
    // says who asked and the model writes (the container waits for it).
    let _ = sandbox.pull_ahead(ctx.policy.image()).await;
    request.exact_code()?;
    let agent = Agent {
        policy: ctx.policy,
        sandbox,
        model: None,
        runtime: ctx.runtime,
        progress: &|_| {},
    };
    agent.prepare_ahead(&request)
}

/// The inputs of the run: workspace files (checked against the policy) and
/// `github:` sources (fetched once for this run, see
/// [`crate::github::activity`]), all of them together within the policy's
/// caps and, for an approved run, against the hashes the approver saw. A
/// follow-up that names no inputs (none given, none mentioned) takes its
/// earlier answer's; the second value says whether it did. The third is what the
/// sources fetched (none: no source named).
async fn resolve_inputs(
    ctx: &Ctx<'_>,
    spec: &RunSpec,
) -> Result<(Vec<Resolved>, bool, activity::Fetched), Stop> {
    let (paths, specs) = activity::split_inputs(&spec.inputs);
    let mut resolved = resolve_named(ctx, spec, &paths)?;
    let (mut specs, mut inherited) = (specs, false);
    if let Some(p) = &spec.earlier
        && resolved.is_empty()
        && specs.is_empty()
        && !p.inputs.is_empty()
    {
        let (paths, earlier_specs) = activity::split_inputs(&p.inputs);
        let inherit = RunSpec::default();
        resolved = resolve_named(ctx, &inherit, &paths)?;
        specs = earlier_specs;
        inherited = true;
    }
    // An approved run or a run of a plan: the data shown; a follow-up:
    // the earlier answer's (see `activity::earlier`, the one rule).
    let (earlier, how) = match (&spec.expected_inputs, &spec.earlier) {
        (Some(shown), _) => (earlier::of_answer(&[], shown), Use::Approved),
        (None, Some(p)) => (p.data.clone(), Use::FollowUp),
        (None, None) => (Vec::new(), Use::FollowUp),
    };
    let (fetched_inputs, fetched) = earlier::data_for(
        ctx.gh,
        ctx.fetched,
        &specs,
        &earlier,
        &ctx.policy.inputs,
        how,
        ctx.prefix,
    )
    .await
    .map_err(|problems| {
        Stop::new(
            Status::Failed,
            stop::GITHUB_DATA_UNUSABLE,
            stop::github_data_unusable(&problems),
        )
    })?;
    resolved.extend(fetched_inputs);
    inputs::together(&resolved, &ctx.policy.inputs).map_err(inputs_unusable)?;
    check_expected(ctx, spec, &resolved)?;
    Ok((resolved, inherited, fetched))
}

/// The workspace files the run names (`paths`) or its goal mentions.
fn resolve_named(ctx: &Ctx<'_>, spec: &RunSpec, paths: &[String]) -> Result<Vec<Resolved>, Stop> {
    let mention_text = match &spec.expected_inputs {
        Some(_) => String::new(),
        None => [spec.goal.as_deref(), spec.context.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("\n"),
    };
    inputs::resolve(&ctx.env.workspace, paths, &mention_text, &ctx.policy.inputs)
        .map_err(inputs_unusable)
}

/// The stop for inputs the policy refuses.
fn inputs_unusable(problems: Vec<inputs::InputProblem>) -> Stop {
    Stop::new(
        Status::Failed,
        stop::INPUTS_UNUSABLE,
        stop::inputs_unusable(&problems),
    )
}

/// For an approved run: every input the approver saw, with the same hash.
fn check_expected(ctx: &Ctx<'_>, spec: &RunSpec, resolved: &[Resolved]) -> Result<(), Stop> {
    if let Some(expected) = &spec.expected_inputs {
        let changed: Vec<String> = expected
            .iter()
            .filter(|e| {
                !resolved
                    .iter()
                    .any(|r| r.path == e.path && r.sha256 == e.sha256)
            })
            .map(|e| e.path.clone())
            .collect();
        if !changed.is_empty() {
            return Err(Stop::new(
                Status::Failed,
                stop::DATA_CHANGED,
                texts::inputs_changed(&changed, ctx.prefix),
            ));
        }
    }
    Ok(())
}

/// The model client (none: exact code runs without one; with the fallback
/// model when the `fallback_*` inputs or `COMPUTE_BOT_FALLBACK_*` name one),
/// whether the run has exact code, and where each model's key came from.
pub(crate) fn model_for(
    ctx: &Ctx<'_>,
    spec: &RunSpec,
) -> Result<(Option<ModelClient>, bool, Vec<KeyHint>), Stop> {
    let has_code = spec.has_code();
    let unusable = |e: String| {
        Stop::new(
            Status::Error,
            stop::MODEL_UNUSABLE,
            stop::model_unusable(&e),
        )
    };
    let model_cfg = model_overrides(ctx.env)
        .and_then(|o| ModelConfig::from_env_with(&o, ctx.vars).map_err(|e| e.to_string()))
        .map_err(unusable)?;
    if !has_code && model_cfg.is_none() {
        return Err(Stop::new(
            Status::Failed,
            stop::NO_MODEL_NO_CODE,
            texts::NO_MODEL_ACTION_HELP,
        ));
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
    let mut key_hints = Vec::new();
    if let Some(c) = &model_cfg {
        if let Some(f) = &c.fallback {
            key_hints.push((f.key_setting(), texts::FALLBACK_KEY_INPUT));
        }
        key_hints.push((c.key_setting(), texts::KEY_INPUT));
    }
    let model = model_cfg
        .map(ModelClient::new)
        .transpose()
        .map_err(|e| unusable(e.to_string()))?;
    Ok((model, has_code, key_hints))
}

/// How often the tracking comment shows a pull's progress at most.
const PULL_SHOWN_EVERY: std::time::Duration = std::time::Duration::from_secs(3);

/// Runs the agent; with `progress` (the attempts shown), its stages are
/// shown in the tracking comment while it works (coalesced: only the newest),
/// and while the sandbox image is pulled (`pulling`), its progress after the
/// current stage, at most every [`PULL_SHOWN_EVERY`].
async fn answer_with_progress(
    agent: Agent<'_>,
    request: Request,
    ahead: Option<Ahead>,
    thread: &mut Thread<'_>,
    progress: Option<u32>,
    pulling: Option<tokio::sync::watch::Receiver<crate::sandbox::PullProgress>>,
) -> Result<(Report, Option<PendingExplanation>), AgentError> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Stage>();
    let send = move |s: Stage| {
        let _ = tx.send(s);
    };
    let work = async move {
        let agent = Agent {
            progress: &send,
            ..agent
        };
        agent.answer_ahead_early(request, ahead).await
    };
    let updater = async {
        let mut pulling = pulling;
        let mut current: Option<Stage> = None;
        let mut shown = tokio::time::Instant::now() - PULL_SHOWN_EVERY;
        loop {
            let pull_changed = async {
                match pulling.as_mut() {
                    Some(rx) => rx.changed().await.is_ok(),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                stage = rx.recv() => {
                    let Some(mut stage) = stage else { break };
                    while let Ok(next) = rx.try_recv() {
                        stage = next;
                    }
                    current = Some(stage);
                }
                alive = pull_changed => {
                    let ended = !alive
                        || pulling.as_ref().is_some_and(|p| p.borrow().phase != crate::sandbox::PullPhase::Pulling);
                    if ended {
                        pulling = None;
                    } else if shown.elapsed() < PULL_SHOWN_EVERY {
                        continue;
                    }
                }
            }
            let (Some(max_attempts), Some(stage)) = (progress, current) else {
                continue;
            };
            let note = pulling.as_ref().map(|p| p.borrow().line());
            if let (Some(t), Some((s, attempt, of))) =
                (thread.tracker(), map_stage(stage, max_attempts))
            {
                shown = tokio::time::Instant::now();
                if let Err(e) = t.stage_noted(s, attempt, of, note.as_deref()).await {
                    tracing::warn!("cannot show the stage in the tracking comment: {e}");
                }
            }
        }
    };
    let (answer, ()) = tokio::join!(work, updater);
    answer
}

/// The inputs a run was given, as its answer shows them.
struct Given<'a> {
    /// The workspace files.
    resolved: &'a [Resolved],
    /// Whether they are the earlier answer's (a follow-up naming none).
    inherited: bool,
    /// Every input with its hash, as the comment records them.
    shown: &'a [PendingInput],
}

/// What the agent answered: its report, and the model's explanation when
/// it is still on its way.
struct Answered {
    report: Report,
    explaining: Option<PendingExplanation>,
}

/// The result: the report file, the sandbox output echoed to the log, the
/// comment, the reaction and the outputs. With the model's explanation
/// still on its way (`explaining`), the comment shows the template's and a
/// note, and is edited once the explanation settles ([`Post::Explaining`]).
fn publish(
    ctx: &Ctx<'_>,
    spec: &RunSpec,
    given: Given<'_>,
    marker: &str,
    answered: Answered,
    files: Option<FilesBlock>,
) -> Published {
    let Given {
        resolved,
        inherited,
        shown,
    } = given;
    let Answered {
        mut report,
        explaining,
    } = answered;
    if let (Some(p), Some(r)) = (&spec.earlier, report.record.as_mut()) {
        r.parent = Some(p.url.clone());
    }
    let paths: Vec<(String, String)> = resolved
        .iter()
        .map(|r| (r.file.name.clone(), r.path.clone()))
        .collect();
    report.set_input_paths(&paths);
    let report_path = write_report(ctx.env, &report);
    if let Some(o) = &report.outcome {
        let mut out = std::io::stdout().lock();
        if !o.stdout.is_empty() {
            let _ = workflow::echo_untrusted(&mut out, "sandbox stdout", &o.stdout);
        }
        if !o.stderr.is_empty() {
            let _ = workflow::echo_untrusted(&mut out, "sandbox stderr", &o.stderr);
        }
        let _ = out.flush();
    }
    let mut head = marker.to_string();
    if let Some(a) = &spec.approval {
        head.push_str(&texts::approved_run(&a.by, &a.request_url, &a.sha256));
    }
    if let Some(p) = &spec.from_plan {
        head.push_str(&texts::planned_run(&p.by, &p.plan_url, &p.sha256));
    }
    if let Some(p) = &spec.earlier {
        let taken: &[String] = if inherited { &p.inputs } else { &[] };
        head.push_str(&texts::follows_up(&p.url, taken));
        if let Some(line) = &report.continued {
            head.push_str(&texts::continued(line));
        }
    }
    // Every answer records its goal and inputs: an approval or a plan runs
    // them, a follow-up builds on them.
    let pending = spec.recorded(shown);
    head.push('\n');
    head.push_str(&request_marker(&pending));
    let rctx = RenderContext {
        run_url: Some(ctx.env.run_url()),
        marker: Some(head),
        command: Some(ctx.prefix.to_string()),
        approval: texts::approval_for(&report, ctx.prefix)
            .or_else(|| texts::plan_for(&report, ctx.prefix)),
        files,
    };
    let post = match explaining {
        Some(pending) => {
            let mut first = report.clone();
            first.explanation = first
                .explanation
                .map(|t| format!("{t}\n\n{}", texts::explanation_follows(pending.timeout())));
            Post::Explaining {
                body: render::markdown(&first, &rctx),
                later: Box::new(Later {
                    pending,
                    report: report.clone(),
                    rctx: rctx.clone(),
                    report_path: report_path.clone(),
                }),
            }
        }
        None => Post::Tracking(render::markdown(&report, &rctx)),
    };
    Published {
        status: Status::from(report.status),
        post,
        reaction: match report.status {
            ReportStatus::Ok => Some(Reaction::Rocket),
            ReportStatus::Failed | ReportStatus::Error => Some(Reaction::Confused),
            ReportStatus::NeedsApproval | ReportStatus::Planned => None,
        },
        summary: render::summary(&report, &rctx),
        outputs: Outputs {
            result: report.result.clone(),
            code_sha256: report.code_sha256.clone(),
            report_path,
            usage: Some(crate::usage::Usage::of(&report).json()),
            ..Outputs::default()
        },
    }
}

#[cfg(test)]
mod hostile_answer;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_map_onto_the_checklist() {
        assert_eq!(
            map_stage(Stage::Generating { attempt: 2, of: 3 }, 3),
            Some((texts::Step::Generating, 2, 3))
        );
        assert_eq!(
            map_stage(Stage::Running { attempt: 1 }, 1),
            Some((texts::Step::Running, 1, 1))
        );
        assert_eq!(map_stage(Stage::Explaining, 1), None);
    }
}
