//! The controlled loop: plan → generate → policy check → execute → validate
//! → (repair or stop) → explain, producing one [`Report`].
//!
//! Every attempt — its code, verdict, sandbox outcome, validation and tokens —
//! stays in the report. A failed check leads to a bounded repair (the model
//! gets the concrete reason) or to a stop with a `stop_reason`; an escalate
//! verdict stops with `needs_approval` and the code waiting for a human.
//! Generated code only ever runs through the policy check and the sandbox.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::explain;
use crate::model::{ModelClient, ModelError, TokenUsage};
use crate::policy::{DataLevel, Decision, Policy, Verdict, check_code};
use crate::prompt::{self, PromptContext, RepairNote};
use crate::report::{Attempt, InputSummary, Report, ReportStatus};
use crate::sandbox::{
    Executor, InputFile, Job, Outcome, Preparing, Runtime, SandboxConfig, SandboxError,
    preload_while_writing, sha256_hex,
};
use crate::validate::{ValidateError, Validator};

use crate::problems::{RESULT_FILE, findings_text, truncated_output_problem};

mod cells;
pub(crate) use cells::{exact_cells, first_line};
mod session;

/// Why an outcome is unusable, and why one stops the loop (the sandbox
/// tests check the texts the loop acts on).
pub use crate::problems::{engine_problem, outcome_problem};

/// What is asked: a goal to answer, or exact code to run, and the inputs.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The question in words (untrusted text; sanitized before use).
    pub goal: Option<String>,
    /// Exact code to run instead of generating it (from `--code` or a
    /// fenced block in the goal).
    pub code: Option<String>,
    /// Files placed read-only under `/data`.
    pub inputs: Vec<InputFile>,
    /// A JSON Schema that replaces the policy's `output.schema`.
    pub schema: Option<Value>,
    /// Further context for the model (e.g. the lines after the command).
    pub context: Option<String>,
    /// The hex SHA-256 of code a human approved (e.g. `/compute approve` on
    /// GitHub). When the code to run hashes to exactly this value, an
    /// `escalate` verdict counts as allowed; a `deny` verdict still denies,
    /// and any other code (a regenerated one included) is not covered.
    pub approved_sha256: Option<String>,
    /// The hex SHA-256 the code must have (a watch's `code_sha256`: the
    /// code a human approved once). Code with another hash stops the run
    /// before it runs — no container is prepared while the model writes, and
    /// none for a repair.
    pub pinned_sha256: Option<String>,
    /// Plan only (`/compute plan`): generate and check the code, start no
    /// container; the report ends [`ReportStatus::Planned`] with the code and
    /// its verdict (an escalation included), or failed when every attempt
    /// was denied.
    pub plan_only: bool,
    /// For a follow-up: the earlier answer it builds on (its goal, code and
    /// result go into the prompt at the policy's `model.data` level).
    pub earlier: Option<prompt::Earlier>,
    /// For exact code approved in a session (`/compute approve` of an
    /// escalated step): the session's steps that ran before it without an
    /// error. They run first, each checked and its stdout compared to its
    /// `stdout_sha256`, in the one session the approved code then runs in
    /// (under a policy that runs sessions).
    pub before: Vec<prompt::EarlierStep>,
}

impl Request {
    /// True when `code_sha256` is the hash a human approved.
    fn is_approved(&self, code_sha256: &str) -> bool {
        self.approved_sha256
            .as_deref()
            .is_some_and(|a| a.trim().eq_ignore_ascii_case(code_sha256))
    }

    /// Why code hashing to `code_sha256` may not run: it is not the pinned
    /// code. `None` without a pin or when it matches.
    fn unpinned(&self, code_sha256: &str) -> Option<String> {
        let pin = self.pinned_sha256.as_deref()?.trim();
        (!pin.eq_ignore_ascii_case(code_sha256)).then(|| {
            format!("the code has SHA-256 {code_sha256}, not the pinned {pin}; it was not run")
        })
    }

    /// True when no container may be prepared before the code is known:
    /// a plan, or code pinned by its hash.
    fn prepares_late(&self) -> bool {
        self.plan_only || self.pinned_sha256.is_some()
    }

    /// The goal as used (sanitized; `None` when nothing a reader can see
    /// is left).
    fn sanitized_goal(&self) -> Option<String> {
        // A goal with nothing a reader can see (blank, only an HTML comment
        // or invisible characters) is no goal.
        self.goal
            .as_deref()
            .map(prompt::sanitize_goal)
            .filter(|g| !g.is_empty())
    }

    /// The exact code to run: `code`, else a fenced python block in the
    /// goal — taken from the sanitized goal, so a block hidden in an HTML
    /// comment (or behind invisible characters) is not run unseen by a
    /// reader. `None` when the model is to write the code.
    pub fn exact_code(&self) -> Option<String> {
        self.code.clone().or_else(|| {
            self.sanitized_goal()
                .as_deref()
                .and_then(prompt::extract_fenced_code)
                .filter(|c| !c.trim().is_empty())
        })
    }
}

/// A container started for exact code before the request is answered
/// ([`Agent::prepare_ahead`]), so its interpreter imports what the code
/// needs while the front end does other work. Given to
/// [`Agent::answer_ahead`], it runs that code; dropped unused (the request
/// stopped first), its container is removed once it is prepared.
pub struct Ahead {
    code: String,
    pending: Option<Preparing>,
}

/// A stage the loop is in, for progress displays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Asking the model for a plan and code.
    Generating {
        /// 1-based attempt.
        attempt: u32,
        /// Attempts allowed.
        of: u32,
    },
    /// Checking the code against the policy.
    Checking {
        /// 1-based attempt.
        attempt: u32,
    },
    /// Running the code in the sandbox.
    Running {
        /// 1-based attempt.
        attempt: u32,
    },
    /// Validating the output against the schema.
    Validating {
        /// 1-based attempt.
        attempt: u32,
    },
    /// Writing the explanation.
    Explaining,
}

/// Why a request could not even start (configuration, not a failed run).
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// A goal without code needs a model.
    #[error("{0}")]
    NoModel(String),
    /// The output schema is unusable.
    #[error("the output schema is not usable: {0}")]
    Schema(#[from] ValidateError),
    /// The sandbox could not be used at all.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// Neither a goal nor code was given.
    #[error("nothing to do: give a goal (--goal) or code (--code)")]
    Empty,
    /// The model provider refused the configuration during the run (key,
    /// model name, base URL, quota: [`ModelError::is_configuration`]). The
    /// report so far (attempts, code, stop reason) is kept.
    #[error("the model configuration is not usable: {error}")]
    ModelConfiguration {
        /// The provider's answer.
        error: ModelError,
        /// The report up to the refusal (status `failed`, with its stop reason).
        report: Box<Report>,
    },
}

/// The loop with everything it needs; stages talk through plain data.
pub struct Agent<'a> {
    /// The policy in force.
    pub policy: &'a Policy,
    /// The executor to run in: the Docker [`crate::sandbox::docker::Docker`], or an
    /// in-memory one in loop tests where Docker is not what is under test.
    pub sandbox: &'a dyn Executor,
    /// The model, when one is configured.
    pub model: Option<&'a ModelClient>,
    /// The OCI runtime of every run, resolved once by the front end
    /// ([`crate::sandbox::Runtime::resolve`]: flag, policy, machine default).
    pub runtime: Runtime,
    /// Called when a stage starts.
    pub progress: &'a (dyn Fn(Stage) + Send + Sync),
}

/// The model's explanation of a report that was handed over with the
/// template's ([`Agent::answer_ahead_early`]): the call goes on until it
/// answers or `explain.timeout` passes; dropped, it is abandoned.
#[derive(Debug)]
pub(crate) struct PendingExplanation {
    call: explain::Pending,
    goal: Option<String>,
    result: Value,
    timeout: Duration,
}

impl PendingExplanation {
    /// The policy's `explain.timeout`: the call ends by then, counted from
    /// when it was asked.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Waits for the explanation and puts it into `report`: the model's
    /// words with their tokens and cost, or the template saying why they
    /// did not come ([`explain::template_after`]). True when they came.
    pub(crate) async fn settle(self, report: &mut Report) -> bool {
        let PendingExplanation {
            call, goal, result, ..
        } = self;
        match call.reply().await {
            Ok((text, usage)) => {
                report.usage.add(usage);
                report.cost_usd = report
                    .prices
                    .and_then(|p| p.cost(report.usage.input_tokens, report.usage.output_tokens));
                report.explanation = Some(text);
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, "explanation failed; the template stays");
                report.explanation = Some(explain::template_after(&e, goal.as_deref(), &result));
                false
            }
        }
    }
}

/// What one attempt leads to; the loop in [`Agent::answer`] acts on it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Next {
    /// A valid, confirmed result: the request is answered.
    Done,
    /// The attempt failed for this reason; the model may repair it (when
    /// attempts are left).
    Repair(String),
    /// The request stops for this reason.
    Stop(String),
    /// The code waits for a human approval, for this reason.
    NeedsApproval(String),
    /// Plan only: the code passed the check (or would need an approval) and
    /// is shown, not run.
    Planned,
    /// A session goes on to its next step: the model has the step's output.
    Continue,
}

/// What every loop (one program, a session, exact cells) does with an
/// attempt that ends the request: done, a stop, an approval to wait for, a
/// plan; always true. `Repair` and `Continue` are each loop's own (here
/// they end nothing).
fn settle_end(report: &mut Report, attempt: &Attempt, next: Next) -> bool {
    match next {
        Next::Done => {
            report.status = ReportStatus::Ok;
            report.result = attempt.result.clone();
        }
        Next::Stop(reason) => report.stop_reason = Some(reason),
        Next::NeedsApproval(reason) => {
            report.status = ReportStatus::NeedsApproval;
            report.stop_reason = Some(reason);
        }
        Next::Planned => report.status = ReportStatus::Planned,
        Next::Repair(_) | Next::Continue => return false,
    }
    true
}

/// What an unusable reply leads to: a repair, except for the second reply
/// cut at the completion budget (or leaving its code block open) — one
/// repair asks for a shorter program, the next cut stops with a reason
/// that says what to do.
fn cut_or_repair(run: &mut Run, attempt: &mut Attempt, e: prompt::PromptError) -> Next {
    let cut = match &e {
        prompt::PromptError::Cut { budget } => Some(format!("{budget} tokens")),
        prompt::PromptError::Unclosed => Some("its code block was never closed".to_string()),
        _ => None,
    };
    match cut {
        Some(how) if run.cut_once => {
            attempt.failure = Some(e.to_string());
            Next::Stop(format!(
                "the model's reply was cut at its completion budget again ({how}) after a repair \
asked for a shorter program, so no program ran; ask for less in one request (split the question), or \
raise the budget (COMPUTE_BOT_MAX_TOKENS)"
            ))
        }
        Some(_) => {
            run.cut_once = true;
            Next::Repair(e.to_string())
        }
        None => Next::Repair(e.to_string()),
    }
}

/// Time per stage, and time spent waiting on the model and on the sandbox
/// (container preparation, execution, removal); the loop's own overhead is
/// the rest of the total.
#[derive(Default)]
struct Clock {
    timings: BTreeMap<String, u64>,
    model: Duration,
    sandbox: Duration,
}

impl Clock {
    fn add(&mut self, stage: &str, since: Instant) {
        *self.timings.entry(stage.to_string()).or_default() += since.elapsed().as_millis() as u64;
    }
}

/// What one request carries from attempt to attempt.
struct Run {
    request: Request,
    goal: Option<String>,
    /// Exact code (from the request or a fenced block in the goal).
    fixed_code: Option<String>,
    validator: Validator,
    ctx: PromptContext,
    attempts_allowed: u32,
    report: Report,
    history: Vec<RepairNote>,
    pending: Option<Preparing>,
    clock: Clock,
    /// A sandbox configuration error: the request ends with it.
    fatal: Option<AgentError>,
    /// A configuration error from the model provider that stopped the run.
    model_config_error: Option<ModelError>,
    /// The model client's HTTP requests before this run (see `close`).
    requests_before: u64,
    /// True once the model was asked for the chart the goal wants.
    chart_asked: bool,
    /// True once a reply was cut at the completion budget (or left its code
    /// block open): the next cut one stops the request.
    cut_once: bool,
    /// Where an explanation still on its way goes
    /// ([`Agent::answer_ahead_early`]); `None`: the loop waits for it.
    later: Option<tokio::sync::oneshot::Sender<PendingExplanation>>,
}

impl Run {
    fn may_repair(&self, number: u32) -> bool {
        self.fixed_code.is_none() && number < self.attempts_allowed
    }
}

impl Agent<'_> {
    /// The container's configuration from the policy (its fixed preload
    /// list as it stands).
    fn sandbox_config(&self) -> SandboxConfig {
        // The policy's limits already size /data by `inputs.max_total_bytes`.
        SandboxConfig {
            image: self.policy.image().to_string(),
            limits: self.policy.limits(),
            runtime: self.runtime,
            preload: self.policy.sandbox.preload.clone(),
            ..Default::default()
        }
    }

    /// The container for known code: it preloads exactly the heavy modules
    /// the code imports (as the check resolved them, with the submodules
    /// of its `from` imports: `Policy::preload_of`), nothing for code that
    /// imports none.
    fn config_for(&self, verdict: &Verdict) -> SandboxConfig {
        SandboxConfig {
            preload: self.policy.preload_of(verdict),
            ..self.sandbox_config()
        }
    }

    /// The container for code not yet known, prepared while the model
    /// writes: it preloads what the question calls for, then the policy's
    /// fixed list (`sandbox::preload_while_writing`, the one rule for it).
    /// `hints`: the goal, and the plan when there is one; `earlier`: the
    /// imports of the code being repaired. A guess the static check would
    /// not allow the code to import is never preloaded.
    fn start_prepare(&self, hints: &str, earlier: &[String]) -> Preparing {
        let preload = preload_while_writing(hints, earlier, &self.policy.sandbox.preload, |m| {
            self.policy.allows_import(m)
        });
        self.sandbox.start_prepare(SandboxConfig {
            preload,
            ..self.sandbox_config()
        })
    }

    /// For a request with exact code that the policy lets run (allowed, or
    /// escalated and approved by its hash): starts preparing its container
    /// now, preloading the heavy modules the code imports. `None` when the
    /// code is not known or may not run as it is (nothing is started).
    pub fn prepare_ahead(&self, request: &Request) -> Option<Ahead> {
        let code = request.exact_code()?;
        let sha = sha256_hex(code.as_bytes());
        let verdict = check_code(self.policy, &code);
        let may_run = request.unpinned(&sha).is_none()
            && match verdict.decision {
                Decision::Allow => true,
                Decision::Escalate => request.is_approved(&sha),
                Decision::Deny => false,
            };
        may_run.then(|| Ahead {
            pending: Some(self.sandbox.start_prepare(self.config_for(&verdict))),
            code,
        })
    }

    /// [`Agent::answer`], running exact code in the container `ahead`
    /// started for it (when it was started for this code; otherwise that
    /// container is removed unused).
    pub async fn answer_ahead(
        &self,
        req: Request,
        ahead: Option<Ahead>,
    ) -> Result<Report, AgentError> {
        let total = Instant::now();
        let run = self.begin_ahead(req, ahead).await?;
        self.answer_run(run, total).await
    }

    /// [`Agent::answer_ahead`] for a front end that can edit its answer once
    /// posted: when the model's explanation is not there within the
    /// policy's `explain.post_after` (and that is shorter than
    /// `explain.timeout`), the report carries the template's and the call
    /// goes on in the returned [`PendingExplanation`].
    pub(crate) async fn answer_ahead_early(
        &self,
        req: Request,
        ahead: Option<Ahead>,
    ) -> Result<(Report, Option<PendingExplanation>), AgentError> {
        let total = Instant::now();
        let mut run = self.begin_ahead(req, ahead).await?;
        let (later, mut pending) = tokio::sync::oneshot::channel();
        run.later = Some(later);
        let report = self.answer_run(run, total).await?;
        Ok((report, pending.try_recv().ok()))
    }

    /// [`Agent::begin`], with the container `ahead` taken when it was
    /// started for this code (else removed unused).
    async fn begin_ahead(&self, req: Request, ahead: Option<Ahead>) -> Result<Run, AgentError> {
        let mut run = self.begin(req).await?;
        if let Some(mut ahead) = ahead
            && let Some(handle) = ahead.pending.take()
        {
            if run.fixed_code.as_deref() == Some(ahead.code.as_str()) && run.pending.is_none() {
                run.pending = Some(handle);
            } else {
                handle.discard().await;
            }
        }
        Ok(run)
    }

    /// Answers a request. Configuration problems are errors; everything that
    /// happens once the request is under way is in the report (a model
    /// provider refusing the configuration mid-run is an error that carries
    /// the report so far: [`AgentError::ModelConfiguration`]).
    pub async fn answer(&self, req: Request) -> Result<Report, AgentError> {
        let total = Instant::now();
        let run = self.begin(req).await?;
        self.answer_run(run, total).await
    }

    /// The attempts, the explanation and the report of a begun request.
    async fn answer_run(&self, mut run: Run, total: Instant) -> Result<Report, AgentError> {
        if self.in_session(&run) {
            return self.answer_session(run, total).await;
        }
        let in_steps = self.policy.session.in_steps() && !run.request.plan_only;
        if let Some(cells) = run.fixed_code.as_deref().and_then(|c| {
            cells::with_before(&run.request.before, c, in_steps)
                .or_else(|| cells::exact_cells(c, in_steps))
        }) {
            return self.answer_cells(run, cells, total).await;
        }
        for number in 1..=run.attempts_allowed {
            let mut attempt = Attempt {
                number,
                ..Default::default()
            };
            let next = self.attempt(&mut run, &mut attempt).await;
            let settled = self.settle(&mut run, attempt, next);
            if let Some(e) = run.fatal.take() {
                return Err(e);
            }
            if settled {
                break;
            }
        }
        self.discard_pending(&mut run).await;
        finish_attempts(&mut run.report);
        self.explain(&mut run).await;
        self.close(run, total).await
    }

    /// Everything a request needs before its first attempt.
    async fn begin(&self, request: Request) -> Result<Run, AgentError> {
        let goal = request.sanitized_goal();
        let fixed_code = request.exact_code();
        if goal.is_none() && fixed_code.is_none() {
            return Err(AgentError::Empty);
        }
        if fixed_code.is_none() && self.model.is_none() {
            return Err(AgentError::NoModel(crate::model::NO_MODEL_HELP.to_string()));
        }
        let schema = request
            .schema
            .clone()
            .unwrap_or_else(|| self.policy.output.schema.clone());
        let validator = Validator::new(&schema)?;
        let attempts_allowed = if fixed_code.is_some() {
            1
        } else {
            u32::from(self.policy.attempts.get())
        };
        let report = self.empty_report(goal.clone(), &request.inputs);
        // The prompt states the image's library versions (its labels; the
        // lookup is cached and also serves the container start).
        let versions = match &fixed_code {
            None => self
                .sandbox
                .image(self.policy.image())
                .await
                .map(|image| prompt::library_versions(&image.labels))
                .unwrap_or_default(),
            Some(_) => BTreeMap::new(),
        };
        let ctx = PromptContext::for_request(
            self.policy,
            goal.as_deref().unwrap_or_default(),
            &request.inputs,
            &schema,
            request.context.clone(),
        )
        .with_library_versions(versions)
        .with_earlier(request.earlier.clone())
        .with_run_facts(
            Some(chrono::Utc::now().format("%Y-%m-%d").to_string()),
            self.model.map(ModelClient::completion_budget),
        );
        // Start a container while the model writes code (generated code only:
        // exact code is checked before any container exists).
        // A plan starts none, nor does pinned code (the model's code may not
        // be the pinned one).
        let pending = (fixed_code.is_none() && !request.prepares_late())
            .then(|| self.start_prepare(goal.as_deref().unwrap_or_default(), &[]));
        Ok(Run {
            request,
            goal,
            fixed_code,
            validator,
            ctx,
            attempts_allowed,
            report,
            history: Vec::new(),
            pending,
            clock: Clock::default(),
            fatal: None,
            model_config_error: None,
            requests_before: self.model.map_or(0, ModelClient::requests_sent),
            chart_asked: false,
            cut_once: false,
            later: None,
        })
    }

    /// The report before any attempt.
    fn empty_report(&self, goal: Option<String>, inputs: &[InputFile]) -> Report {
        Report {
            goal,
            plan: None,
            status: ReportStatus::Failed,
            stop_reason: None,
            result: None,
            explanation: None,
            attempts: Vec::new(),
            code: None,
            code_sha256: None,
            verdict: None,
            outcome: None,
            inputs: inputs
                .iter()
                .map(|f| InputSummary {
                    name: f.name.clone(),
                    size: f.size(),
                    sha256: f.sha256(),
                })
                .collect(),
            policy: self.policy.origin.as_ref().map(|p| p.display().to_string()),
            usage: TokenUsage::default(),
            model_requests: 0,
            prices: self.policy.model.prices,
            cost_usd: None,
            timings_ms: BTreeMap::new(),
            steps: Vec::new(),
            continued: None,
            replayed: Vec::new(),
            record: None,
        }
    }

    /// One attempt: generate (or take the exact code) → check → execute →
    /// validate → confirm. What it found is in `attempt`; what follows is
    /// the returned [`Next`].
    async fn attempt(&self, run: &mut Run, attempt: &mut Attempt) -> Next {
        let code = match self.generate(run, attempt).await {
            Ok(code) => code,
            Err(next) => return next,
        };
        attempt.code_sha256 = sha256_hex(code.as_bytes());
        attempt.code = code.clone();
        if attempt.plan.is_some() {
            run.report.plan = attempt.plan.clone();
        }
        if let Some(reason) = run.request.unpinned(&attempt.code_sha256) {
            attempt.failure = Some(reason.clone());
            return Next::Stop(reason);
        }
        let checked = self.check(run, attempt, &code);
        if run.request.plan_only {
            return match checked {
                None | Some(Next::NeedsApproval(_)) => Next::Planned,
                Some(next) => next,
            };
        }
        if let Some(next) = checked {
            return next;
        }
        let job = Job {
            code,
            inputs: run.request.inputs.clone(),
            rules: self.policy.runtime_rules(),
        };
        let outcome = match self.execute(run, attempt, &job).await {
            Ok(outcome) => outcome,
            Err(next) => return next,
        };
        if let Some(reason) = engine_problem(&outcome) {
            attempt.failure = Some(reason.clone());
            return Next::Stop(reason);
        }
        if let Some(problem) = outcome_problem(&outcome) {
            return Next::Repair(problem);
        }
        let value = match self.validate(run, attempt, &outcome) {
            Ok(value) => value,
            Err(next) => return next,
        };
        if self.chart_missing(run, attempt.number, &outcome) {
            return Next::Repair(prompt::MISSING_CHART.to_string());
        }
        self.confirm(run, attempt, &job, &outcome, &value).await
    }

    /// Keeps the attempt in the report and acts on `next`; true when the
    /// loop ends here.
    fn settle(&self, run: &mut Run, mut attempt: Attempt, next: Next) -> bool {
        let ends = match next {
            Next::Repair(problem) => {
                attempt.failure = Some(problem.clone());
                run.history.push(RepairNote {
                    code: attempt.code.clone(),
                    problem,
                });
                // A repair follows: start its container now, while the model
                // writes the fix. A successful run never waits for a
                // container it does not use.
                if run.may_repair(attempt.number)
                    && run.pending.is_none()
                    && !run.request.prepares_late()
                {
                    let hints = format!(
                        "{}\n{}",
                        run.goal.as_deref().unwrap_or_default(),
                        attempt.plan.as_deref().unwrap_or_default()
                    );
                    let earlier = attempt.verdict.as_ref().map_or(&[][..], Verdict::imports);
                    run.pending = Some(self.start_prepare(&hints, earlier));
                }
                false
            }
            Next::Continue => false,
            end => settle_end(&mut run.report, &attempt, end),
        };
        run.report.attempts.push(attempt);
        ends
    }

    /// The code of this attempt: the exact code, or the model's.
    async fn generate(&self, run: &mut Run, attempt: &mut Attempt) -> Result<String, Next> {
        if let Some(code) = &run.fixed_code {
            return Ok(code.clone());
        }
        (self.progress)(Stage::Generating {
            attempt: attempt.number,
            of: run.attempts_allowed,
        });
        let model = self.model.expect("checked in begin");
        // The budget as it stands (a cut reply raised it for this call).
        run.ctx.code_budget = Some(model.completion_budget());
        let request = prompt::generation_request(&run.ctx, &run.history);
        let t = Instant::now();
        let reply = model.complete(&request).await;
        run.clock.model += t.elapsed();
        run.clock.add("generate", t);
        match reply {
            Ok(reply) => {
                attempt.usage = reply.usage;
                attempt.model = Some(reply.answered_by.clone());
                run.report.usage.add(reply.usage);
                match prompt::parse_generated(&reply) {
                    Ok(g) => {
                        attempt.plan = g.plan;
                        Ok(g.code)
                    }
                    Err(e) => Err(cut_or_repair(run, attempt, e)),
                }
            }
            Err(e) => {
                attempt.failure = Some(format!("the model call failed: {e}"));
                let reason = model_stop_reason(&e);
                if e.is_configuration() {
                    run.model_config_error = Some(e);
                }
                Err(Next::Stop(reason))
            }
        }
    }

    /// The policy check; `None` when the code may run.
    fn check(&self, run: &mut Run, attempt: &mut Attempt, code: &str) -> Option<Next> {
        (self.progress)(Stage::Checking {
            attempt: attempt.number,
        });
        let t = Instant::now();
        let verdict = check_code(self.policy, code);
        run.clock.add("check", t);
        attempt.verdict = Some(verdict.clone());
        match verdict.decision {
            Decision::Allow => None,
            // Exactly the code a human approved: the escalation is settled.
            Decision::Escalate if run.request.is_approved(&attempt.code_sha256) => {
                tracing::info!(
                    sha256 = %attempt.code_sha256,
                    "running escalated code that a human approved"
                );
                None
            }
            Decision::Escalate => Some(Next::NeedsApproval(format!(
                "the code needs a human approval before it may run:\n{}",
                findings_text(&verdict)
            ))),
            Decision::Deny => Some(Next::Repair(format!(
                "the policy denied the code:\n{}",
                findings_text(&verdict)
            ))),
        }
    }

    /// Runs the job in a prepared container (the one started in the
    /// background, or a new one).
    async fn execute(
        &self,
        run: &mut Run,
        attempt: &mut Attempt,
        job: &Job,
    ) -> Result<Outcome, Next> {
        (self.progress)(Stage::Running {
            attempt: attempt.number,
        });
        let t = Instant::now();
        // Known code without a container started for it: one that preloads
        // exactly what the code imports.
        let handle = run.pending.take().unwrap_or_else(|| {
            let verdict = attempt.verdict.as_ref().expect("checked before it runs");
            self.sandbox.start_prepare(self.config_for(verdict))
        });
        let prepared = handle.ready().await;
        run.clock.sandbox += t.elapsed();
        let sandbox_failed = |attempt: &mut Attempt, e: &SandboxError| {
            let reason = format!("the sandbox failed: {e}");
            attempt.failure = Some(reason.clone());
            Next::Stop(reason)
        };
        let prepared = match prepared {
            Ok(p) => p,
            Err(e) => {
                let next = sandbox_failed(attempt, &e);
                if e.is_configuration() {
                    run.fatal = Some(e.into());
                }
                return Err(next);
            }
        };
        let started = Instant::now();
        let outcome = prepared.execute(job).await;
        run.clock.sandbox += started.elapsed();
        run.clock.add("execute", t);
        match outcome {
            Ok(o) => {
                attempt.outcome = Some(o.clone());
                Ok(o)
            }
            Err(e) => Err(sandbox_failed(attempt, &e)),
        }
    }

    /// Validates the output against the schema; the valid result.
    fn validate(
        &self,
        run: &mut Run,
        attempt: &mut Attempt,
        outcome: &Outcome,
    ) -> Result<Value, Next> {
        (self.progress)(Stage::Validating {
            attempt: attempt.number,
        });
        let t = Instant::now();
        let result_file = outcome
            .artifacts
            .iter()
            .find(|a| a.name == RESULT_FILE)
            .map(|a| a.bytes.as_slice());
        let validation = run.validator.validate_output(&outcome.stdout, result_file);
        run.clock.add("validate", t);
        attempt.result = validation.value.clone();
        attempt.validation_errors = validation.errors.clone();
        if validation.is_valid() {
            return Ok(validation.value.expect("a valid result has a value"));
        }
        Err(Next::Repair(
            match truncated_output_problem(outcome, result_file.is_some()) {
                Some(cut) => cut,
                None => validation
                    .problem()
                    .unwrap_or_else(|| "the output did not match the schema".to_string()),
            },
        ))
    }

    /// True, once per request, when the goal asks for a chart, the run
    /// saved no image and a repair is left: the model gets one repair
    /// asking for it (after that, the answer stands without a picture).
    fn chart_missing(&self, run: &mut Run, number: u32, outcome: &Outcome) -> bool {
        let missing = !run.chart_asked
            && run.may_repair(number)
            && run.goal.as_deref().is_some_and(prompt::asks_for_chart)
            && !outcome
                .artifacts
                .iter()
                .any(|a| a.kind() == crate::sandbox::FileKind::Image);
        run.chart_asked |= missing;
        missing
    }

    /// Repeat runs, output checks, independent verification (src/verify.rs).
    async fn confirm(
        &self,
        run: &mut Run,
        attempt: &Attempt,
        job: &Job,
        outcome: &Outcome,
        value: &Value,
    ) -> Next {
        let confirmed = crate::verify::confirm(crate::verify::ConfirmInput {
            policy: self.policy,
            sandbox: self.sandbox,
            model: self.model,
            config: match &attempt.verdict {
                Some(v) => self.config_for(v),
                None => self.sandbox_config(),
            },
            job,
            validator: &run.validator,
            prompt: &run.ctx,
            result: value,
            approved: run.request.is_approved(&attempt.code_sha256),
        })
        .await;
        let stop = confirmed.keep_in(
            &mut run.report,
            outcome,
            &mut run.clock.sandbox,
            &mut run.clock.model,
        );
        match stop {
            None => Next::Done,
            Some((ReportStatus::NeedsApproval, reason)) => Next::NeedsApproval(reason),
            Some((_, reason)) => Next::Stop(reason),
        }
    }

    /// An unused container: removed now rather than on drop.
    async fn discard_pending(&self, run: &mut Run) {
        if let Some(handle) = run.pending.take() {
            let t = Instant::now();
            handle.discard().await;
            run.clock.sandbox += t.elapsed();
        }
    }

    /// The explanation of a result (the model's, or the template).
    async fn explain(&self, run: &mut Run) {
        let Some(result) = &run.report.result else {
            return;
        };
        (self.progress)(Stage::Explaining);
        let goal = run.goal.as_deref();
        let t = Instant::now();
        // At `model.data: none` nothing of the result leaves: the template.
        let sends = self.policy.model.data != DataLevel::None;
        // A session's method is in all the steps that ran without an error
        // (the looks read the inputs; the final step may only sum).
        let steps_code = (!run.report.steps.is_empty()).then(|| {
            run.report
                .steps
                .iter()
                .filter(|s| s.status == crate::sandbox::RunStatus::Ok)
                .map(|s| s.code.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        });
        let explanation = match (self.policy.explain.enabled && sends, self.model) {
            (true, Some(model)) => {
                let called = Instant::now();
                let asked = explain::Asked {
                    goal: goal.unwrap_or(""),
                    plan: run.report.plan.as_deref(),
                    code: steps_code.as_deref().or(run.report.code.as_deref()),
                    earlier_result: run.request.earlier.as_ref().and_then(|e| e.result.as_ref()),
                    inputs: &run.ctx.inputs,
                };
                let (level, timeout) = (self.policy.model.data, self.policy.explain.timeout);
                let reply = match self
                    .policy
                    .explain
                    .early_post()
                    .filter(|_| run.later.is_some())
                {
                    // The answer may be posted first: the call goes on
                    // beside it when it takes longer than `post_after`.
                    Some(wait) => {
                        let mut call = explain::start(model, asked, result, level, timeout);
                        let reply = call.within(wait).await;
                        if reply.is_none()
                            && let Some(later) = run.later.take()
                        {
                            let _ = later.send(PendingExplanation {
                                call,
                                goal: goal.map(str::to_string),
                                result: result.clone(),
                                timeout,
                            });
                        }
                        reply
                    }
                    None => {
                        Some(explain::explain_within(model, asked, result, level, timeout).await)
                    }
                };
                run.clock.model += called.elapsed();
                match reply {
                    Some(Ok((text, usage))) => {
                        run.report.usage.add(usage);
                        text
                    }
                    Some(Err(e)) => {
                        tracing::warn!(error = %e, "explanation failed; using the template");
                        explain::template_after(&e, goal, result)
                    }
                    None => explain::template_explanation(goal, result),
                }
            }
            _ => explain::template_explanation(goal, result),
        };
        run.clock.add("explain", t);
        run.report.explanation = Some(explanation);
    }

    /// Timings and the run record; the report, or the model's configuration
    /// error with the report so far.
    async fn close(&self, run: Run, total: Instant) -> Result<Report, AgentError> {
        let Run {
            mut report,
            mut clock,
            model_config_error,
            requests_before,
            ..
        } = run;
        report.model_requests = self
            .model
            .map_or(0, |m| m.requests_sent().saturating_sub(requests_before));
        report.cost_usd = report
            .prices
            .and_then(|p| p.cost(report.usage.input_tokens, report.usage.output_tokens));
        let total = total.elapsed();
        let ms = |d: Duration| d.as_millis() as u64;
        clock.timings.insert("total".into(), ms(total));
        clock.timings.insert("model".into(), ms(clock.model));
        clock.timings.insert("sandbox".into(), ms(clock.sandbox));
        clock.timings.insert(
            "loop_overhead".into(),
            ms(total.saturating_sub(clock.model + clock.sandbox)),
        );
        report.timings_ms = clock.timings;
        report
            .attach_record(self.policy, self.runtime, self.sandbox)
            .await;
        match model_config_error {
            Some(error) => Err(AgentError::ModelConfiguration {
                report: Box::new(Report {
                    status: ReportStatus::Error,
                    ..report
                }),
                error,
            }),
            None => Ok(report),
        }
    }
}

/// The final code, verdict and outcome are those of the last attempt; a
/// failed request without a reason gets the last attempt's.
fn finish_attempts(report: &mut Report) {
    if let Some(last) = report.attempts.last() {
        if !last.code.is_empty() {
            report.code = Some(last.code.clone());
            report.code_sha256 = Some(last.code_sha256.clone());
        }
        report.verdict = last.verdict.clone();
        report.outcome = last.outcome.clone();
    }
    if report.status == ReportStatus::Failed && report.stop_reason.is_none() {
        let last = report
            .attempts
            .last()
            .and_then(|a| a.failure.clone())
            .unwrap_or_else(|| "no attempt produced a valid result".to_string());
        report.stop_reason = Some(format!(
            "stopped after {} attempt{}: {}",
            report.attempts.len(),
            if report.attempts.len() == 1 { "" } else { "s" },
            last
        ));
    }
}

fn model_stop_reason(e: &ModelError) -> String {
    format!("the model could not be used: {e}")
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use futures_util::future::BoxFuture;

    use super::*;
    use crate::sandbox::{EngineFacts, ImageInfo, PreparedRun};

    fn escalate_policy() -> Policy {
        Policy::load(&std::path::PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/policies/escalate.yml"
        )))
        .unwrap()
    }

    /// An executor that starts nothing and counts what the loop asks of it;
    /// every run fails, so a run that happened shows in the report.
    #[derive(Default)]
    struct Counting {
        prepared: Arc<AtomicUsize>,
        runs: AtomicUsize,
    }

    struct Nothing;

    fn refused() -> SandboxError {
        SandboxError::Engine {
            action: "running in memory",
            detail: "the counting executor runs nothing".into(),
        }
    }

    impl PreparedRun for Nothing {
        fn execute<'a>(
            self: Box<Self>,
            _job: &'a Job,
        ) -> BoxFuture<'a, Result<Outcome, SandboxError>> {
            Box::pin(async { Err(refused()) })
        }
        fn discard(self: Box<Self>) -> BoxFuture<'static, Result<(), SandboxError>> {
            Box::pin(async { Ok(()) })
        }
    }

    impl Executor for Counting {
        fn engine(&self) -> BoxFuture<'_, Result<EngineFacts, SandboxError>> {
            Box::pin(async { Ok(EngineFacts::default()) })
        }
        fn image<'a>(&'a self, _image: &'a str) -> BoxFuture<'a, Result<ImageInfo, SandboxError>> {
            Box::pin(async { Ok(ImageInfo::default()) })
        }
        fn prepare(
            &self,
            _cfg: SandboxConfig,
        ) -> BoxFuture<'static, Result<Box<dyn PreparedRun>, SandboxError>> {
            Box::pin(async { Ok(Box::new(Nothing) as Box<dyn PreparedRun>) })
        }
        fn sweep_leftovers(&self) -> BoxFuture<'_, Result<usize, SandboxError>> {
            Box::pin(async { Ok(0) })
        }
        fn close(&self) -> BoxFuture<'_, ()> {
            Box::pin(async {})
        }
        fn start_prepare(&self, cfg: SandboxConfig) -> Preparing {
            self.prepared.fetch_add(1, Ordering::SeqCst);
            Preparing::start(self.prepare(cfg))
        }
        fn run<'a>(
            &'a self,
            _cfg: &'a SandboxConfig,
            _job: &'a Job,
        ) -> BoxFuture<'a, Result<Outcome, SandboxError>> {
            self.runs.fetch_add(1, Ordering::SeqCst);
            Box::pin(async { Err(refused()) })
        }
    }

    /// Neither path below prepares a container: escalate and deny stop at
    /// the check, approved or not.
    #[tokio::test]
    async fn an_approval_covers_only_the_approved_code_and_never_a_deny() {
        let policy = escalate_policy();
        let executor = Counting::default();
        let agent = Agent {
            policy: &policy,
            sandbox: &executor,
            model: None,
            runtime: Runtime::default(),
            progress: &|_| {},
        };
        let escalating = "import hashlib\nprint('{}')\n";
        // Approval of other code does not settle this escalation.
        let report = agent
            .answer(Request {
                code: Some(escalating.into()),
                approved_sha256: Some(sha256_hex(b"print('{}')\n")),
                ..Request::default()
            })
            .await
            .unwrap();
        assert_eq!(report.status, ReportStatus::NeedsApproval);
        assert!(report.outcome.is_none());
        assert_eq!(report.code_sha256, Some(sha256_hex(escalating.as_bytes())));
        // A deny stays a deny, approved or not.
        let denied = "import subprocess\nsubprocess.run(['id'])\n";
        let report = agent
            .answer(Request {
                code: Some(denied.into()),
                approved_sha256: Some(sha256_hex(denied.as_bytes())),
                ..Request::default()
            })
            .await
            .unwrap();
        assert_eq!(report.status, ReportStatus::Failed);
        assert!(report.outcome.is_none());
        assert!(report.stop_reason.as_deref().unwrap().contains("denied"));
        assert_eq!(executor.prepared.load(Ordering::SeqCst), 0);
        assert_eq!(executor.runs.load(Ordering::SeqCst), 0);
        // The approved escalating code is let through to the executor, whose
        // failure is the stop.
        let report = agent
            .answer(Request {
                code: Some(escalating.into()),
                approved_sha256: Some(sha256_hex(escalating.as_bytes())),
                ..Request::default()
            })
            .await
            .unwrap();
        assert_eq!(report.status, ReportStatus::Failed);
        assert_eq!(executor.prepared.load(Ordering::SeqCst), 1);
        assert!(
            report
                .stop_reason
                .as_deref()
                .unwrap()
                .contains("the counting executor runs nothing"),
            "{report:#?}"
        );
        assert!(
            Request {
                approved_sha256: Some("ABC".into()),
                ..Request::default()
            }
            .is_approved("abc")
        );
    }
}
