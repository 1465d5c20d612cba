//! `compute-bot run --goal ... | --policy ...`: the whole loop from the terminal.

use std::path::Path;

use crate::agent::{Agent, AgentError, Request, Stage};
use crate::model::{ModelChoice, ModelClient, ModelConfig, ModelOverrides};
use crate::policy::Policy;
use crate::render::{self, RenderContext};
use crate::sandbox::Session;
use crate::status::Status;

use super::{Format, RunArgs, admit_inputs, read_code, resolve_runtime, usage};

/// Reads a JSON Schema from a JSON or YAML file.
fn read_schema(path: &Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("schema file `{}` cannot be read: {e}", path.display()))?;
    serde_json::from_str(&text)
        .or_else(|_| serde_saphyr::from_str::<serde_json::Value>(&text).map_err(|e| e.to_string()))
        .map_err(|e| {
            format!(
                "schema file `{}` is neither JSON nor YAML: {e}",
                path.display()
            )
        })
}

/// Applies limit flags to the policy; flags may only tighten it, so a
/// looser flag is an error that says so.
fn tighten(policy: &mut Policy, args: &RunArgs) -> Result<(), String> {
    let mut requested = policy.limits();
    if let Some(t) = args.timeout {
        requested.timeout = t;
    }
    if let Some(m) = args.memory {
        requested.memory = m;
    }
    if let Some(c) = args.cpus {
        requested.cpus = c;
    }
    if let Some(p) = args.pids {
        requested.pids = p;
    }
    let (limits, loosened) = policy.tightened_limits(&requested);
    if !loosened.is_empty() {
        return Err(format!(
            "flags may only tighten the policy: {}",
            loosened.join("; ")
        ));
    }
    policy.set_limits(&limits);
    if let Some(image) = &args.image {
        policy.sandbox.image = image.clone();
    }
    // More runs only make the policy stricter.
    if let Some(r) = args.repeat.and_then(crate::policy::Repeat::new)
        && r.get() > policy.output.repeat.get()
    {
        policy.output.repeat = r;
    }
    Ok(())
}

fn progress_line(stage: Stage) -> String {
    match stage {
        Stage::Generating { attempt, of } => format!("generating code (attempt {attempt} of {of})"),
        Stage::Checking { attempt } => {
            format!("checking the code against the policy (attempt {attempt})")
        }
        Stage::Running { attempt } => format!("running in the sandbox (attempt {attempt})"),
        Stage::Validating { attempt } => format!("validating the output (attempt {attempt})"),
        Stage::Explaining => "explaining the result".to_string(),
    }
}

/// The model the loop asks (none without a provider key): the environment,
/// with the `--provider`, `--base-url` and `--model` flags over it.
fn model_client(args: &RunArgs) -> Result<Option<ModelClient>, String> {
    let overrides = ModelOverrides {
        first: ModelChoice {
            provider: args.provider,
            base_url: args.base_url.clone(),
            model: args.model.clone(),
            ..Default::default()
        },
        ..Default::default()
    };
    match ModelConfig::from_env(&overrides).map_err(|e| e.to_string())? {
        Some(cfg) => ModelClient::new(cfg).map(Some).map_err(|e| e.to_string()),
        None => Ok(None),
    }
}

/// Writes the report's files under `--artifacts` — those the code left in
/// `/out` and the run as a notebook — and prints the report in the format
/// `run` was asked for.
fn print_report(report: &crate::report::Report, args: &RunArgs) {
    let files = match (&args.artifacts, &report.outcome, &report.code) {
        (Some(dir), Some(o), Some(_)) => {
            let mut files = o.artifacts.clone();
            files.push(super::files::run_notebook(
                &report.executed(),
                args.code.as_deref(),
                dir,
            ));
            super::files::write_and_link(&files, dir, report.result.as_ref())
                .map_err(|e| eprintln!("error: {e}"))
                .ok()
        }
        _ => None,
    };
    match args.format {
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(report).expect("report serializes")
        ),
        Format::Markdown => {
            let ctx = RenderContext {
                files,
                ..RenderContext::default()
            };
            print!("{}", render::markdown(report, &ctx))
        }
        Format::Text => print!("{}", render::text(report)),
    }
}

/// Runs the loop for `run` and prints the report; returns how it ended.
pub(crate) async fn answer_command(args: RunArgs, session: &Session) -> Status {
    let mut policy = match &args.policy {
        Some(path) => match Policy::load(path) {
            Ok(p) => p,
            Err(e) => return usage(&e.to_string()),
        },
        None => Policy::default(),
    };
    if let Err(e) = tighten(&mut policy, &args) {
        return usage(&e);
    }
    let schema = match &args.schema {
        Some(path) => match read_schema(path) {
            Ok(s) => Some(s),
            Err(e) => return usage(&e),
        },
        None => None,
    };
    let (code, note) = match &args.code {
        Some(path) => match read_code(path, policy.session.in_steps()) {
            Ok(c) => (Some(c.code), c.note),
            Err(e) => return usage(&e),
        },
        None => (None, None),
    };
    let admitted = match admit_inputs(&args.inputs, &policy.inputs) {
        Ok(a) => a,
        Err(e) => return usage(&e),
    };
    let runtime = match resolve_runtime(args.runtime, policy.sandbox.runtime) {
        Ok(r) => r,
        Err(e) => return usage(&e),
    };
    let model = match model_client(&args) {
        Ok(m) => m,
        Err(e) => return usage(&e),
    };
    let sandbox = match session.sandbox(&policy.sandbox.environments()).await {
        Ok(s) => s,
        Err(e) => return usage(&e.to_string()),
    };
    let show_progress = args.format == Format::Text;
    let progress = move |stage: Stage| {
        if show_progress {
            eprintln!("compute-bot: {}", progress_line(stage));
        }
    };
    let agent = Agent {
        policy: &policy,
        sandbox,
        model: model.as_ref(),
        runtime,
        progress: &progress,
    };
    let request = Request {
        goal: args.goal.clone(),
        code,
        inputs: admitted.iter().map(|a| a.file.clone()).collect(),
        schema,
        context: None,
        // The terminal has no approval step: escalated code stops (exit 3).
        approved_sha256: None,
        ..Request::default()
    };
    // The provider refusing the key, model or quota mid-run is a
    // configuration error (exit 2); the report so far is still printed.
    let (mut report, status) = match agent.answer(request).await {
        Ok(r) => {
            let status = Status::from(r.status);
            (r, status)
        }
        Err(AgentError::ModelConfiguration { error, report }) => {
            eprintln!("error: the model configuration is not usable: {error}");
            (*report, Status::Error)
        }
        Err(AgentError::Sandbox(e)) if !e.is_configuration() => {
            eprintln!("error: {e}");
            return Status::Failed;
        }
        Err(e) => return usage(&e.to_string()),
    };
    let paths: Vec<(String, String)> = admitted
        .iter()
        .map(|a| (a.file.name.clone(), a.path.clone()))
        .collect();
    report.set_input_paths(&paths);
    match (note, report.outcome.as_mut()) {
        (Some(n), Some(o)) => o.notes.push(n),
        (Some(n), None) => eprintln!("note: {n}"),
        (None, _) => {}
    }
    print_report(&report, &args);
    status
}
