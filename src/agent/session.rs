//! The loop as a session of steps (`session.max_steps` above 1, model-written
//! code): one container and one interpreter per request. Each model turn is
//! an attempt: a look step (its output goes back to the model), the final
//! step (its printed JSON is validated and confirmed as for one program), or
//! a stop with a reason. Every step passes the policy check first: a denial
//! goes back to the model as an observation, an escalation waits for a
//! human. A step that raises is repaired from the state it left; a timeout,
//! the memory limit, a kill, a lost engine or tampering ends the session.
//! The session is ended ([`Steps::end`]) on every path.

use std::time::{Duration, Instant};

use super::{
    Agent, AgentError, Next, Run, Stage, cut_or_repair, finish_attempts, model_stop_reason,
    settle_end,
};
use crate::problems::{engine_problem, findings_text, outcome_problem};
use crate::prompt::{self, Budget, Move, Turn};
use crate::report::{Attempt, Report, Step, StepKind};
use crate::sandbox::{Job, Outcome, SandboxError, StepOptions, Steps, Then, sha256_hex};
use crate::units::format_duration;

mod resume;

/// Most characters of a step's stdout kept in the report (head and tail).
const REPORT_STDOUT_CHARS: usize = 4_000;
/// Most characters of a step's stderr kept in the report (head and tail).
const REPORT_STDERR_CHARS: usize = 2_000;
/// Most characters of a step's value kept in the report.
const REPORT_VALUE_CHARS: usize = 2_000;

/// What a session carries from turn to turn.
#[derive(Default)]
pub(super) struct Session {
    /// The interpreter, once step 1 ran; `None` before and after the end.
    steps: Option<Box<dyn Steps>>,
    /// Each earlier turn and what the model was told after it.
    turns: Vec<Turn>,
    /// The code time the steps used.
    code_used: Duration,
    /// The code of the steps that ran without an error, in order: the
    /// program that repeat runs and checks re-run in a fresh container.
    clean: Vec<String>,
}

/// A step the model asked for, before it runs.
struct Asked {
    last: bool,
    plan: Option<String>,
    code: String,
    assumed: Vec<String>,
}

impl Agent<'_> {
    /// True when `run` answers in a session of steps: model-written code
    /// (not a plan, not pinned) under a policy with `max_steps` above 1.
    pub(super) fn in_session(&self, run: &Run) -> bool {
        run.fixed_code.is_none() && !run.request.prepares_late() && self.policy.session.in_steps()
    }

    /// The turns of a session, its end, the explanation and the report.
    pub(super) async fn answer_session(
        &self,
        mut run: Run,
        total: Instant,
    ) -> Result<Report, AgentError> {
        let max = u32::from(self.policy.session.max_steps.get());
        run.attempts_allowed = max;
        let mut s = Session::default();
        run.report.continued = self.resume(&mut run, &mut s).await;
        let turns = if run.fatal.is_some() { 0 } else { max };
        for number in 1..=turns {
            let mut attempt = Attempt {
                number,
                ..Default::default()
            };
            let next = self
                .turn(&mut run, &mut s, &mut attempt, max + 1 - number)
                .await;
            let settled = settle_turn(&mut run, attempt, next);
            if settled || run.fatal.is_some() {
                break;
            }
            if number == max {
                run.report.stop_reason = Some(format!(
                    "the session used its {max} steps (session.max_steps) without a final result"
                ));
            }
        }
        self.end_session(&mut run, &mut s, None).await;
        self.discard_pending(&mut run).await;
        if let Some(e) = run.fatal.take() {
            return Err(e);
        }
        finish_attempts(&mut run.report);
        self.explain(&mut run).await;
        self.close(run, total).await
    }

    /// One turn: the model's move → check → run → what follows.
    async fn turn(&self, run: &mut Run, s: &mut Session, attempt: &mut Attempt, left: u32) -> Next {
        let asked = match self.next_move(run, s, attempt, left).await {
            Ok(Move::Run {
                last,
                plan,
                code,
                assumed,
            }) => Asked {
                last,
                plan,
                code,
                assumed,
            },
            Ok(Move::Stop { reason }) => {
                attempt.failure = Some(format!("the model stopped: {reason}"));
                return Next::Stop(stopped_by_model(&reason, &run.report.steps));
            }
            Err(next) => return next,
        };
        attempt.plan = asked.plan.clone();
        if run.report.plan.is_none() {
            run.report.plan = asked.plan.clone();
        }
        attempt.code = asked.code.clone();
        attempt.code_sha256 = sha256_hex(asked.code.as_bytes());
        if let Some(next) = self.check(run, attempt, &asked.code) {
            if let (Next::Repair(_), Some(v)) = (&next, &attempt.verdict) {
                let observation = prompt::observe_refused(&findings_text(v));
                let turn = Turn::of(asked.last, asked.plan.as_deref(), &asked.code, observation);
                s.turns.push(turn);
            }
            return next;
        }
        let Some(time) = self.policy.session.code_time.checked_sub(s.code_used) else {
            return Next::Stop(self.out_of_time(run));
        };
        if time.is_zero() {
            return Next::Stop(self.out_of_time(run));
        }
        let options = StepOptions {
            last: asked.last,
            timeout: time.min(self.policy.limits().timeout),
            then: Then::Wait,
        };
        match self.run_step(run, s, attempt, &asked.code, options).await {
            Ok(outcome) => {
                s.code_used += Duration::from_millis(outcome.duration_ms);
                self.after_step(run, s, attempt, asked, outcome).await
            }
            Err(next) => next,
        }
    }

    /// Why the session stops when its code time is used up.
    fn out_of_time(&self, run: &Run) -> String {
        format!(
            "the session's code time ({}, session.code_time) was used up after {} step(s), \
without a final result",
            format_duration(self.policy.session.code_time),
            run.report.steps.len()
        )
    }

    /// The model's next move; a reply that cannot be used goes back to the
    /// model (an observation) or stops the session (a second cut reply).
    async fn next_move(
        &self,
        run: &mut Run,
        s: &mut Session,
        attempt: &mut Attempt,
        left: u32,
    ) -> Result<Move, Next> {
        (self.progress)(Stage::Generating {
            attempt: attempt.number,
            of: run.attempts_allowed,
        });
        let model = self.model.expect("checked in begin");
        run.ctx.code_budget = Some(model.completion_budget());
        let budget = Budget {
            max_steps: run.attempts_allowed,
            left,
            code_time: self.policy.session.code_time,
        };
        let request = prompt::step_request(&run.ctx, &s.turns, budget);
        let t = Instant::now();
        // While a session waits frozen, the model has `model_wait`.
        let wait = self.policy.session.model_wait;
        let reply = if s.steps.is_some() {
            tokio::time::timeout(wait, model.complete(&request)).await
        } else {
            Ok(model.complete(&request).await)
        };
        run.clock.model += t.elapsed();
        run.clock.add("generate", t);
        let reply = match reply {
            Ok(reply) => reply,
            Err(_) => {
                let reason = format!(
                    "the model did not answer within session.model_wait ({}) while the session's \
container waited; the session ended after {} step(s)",
                    format_duration(wait),
                    run.report.steps.len()
                );
                attempt.failure = Some(reason.clone());
                return Err(Next::Stop(reason));
            }
        };
        match reply {
            Ok(reply) => {
                attempt.usage = reply.usage;
                attempt.model = Some(reply.answered_by.clone());
                run.report.usage.add(reply.usage);
                prompt::parse_move(&reply).map_err(|e| {
                    let next = cut_or_repair(run, attempt, e);
                    if let Next::Repair(problem) = &next {
                        s.turns.push(Turn::unusable(problem, run.ctx.data));
                    }
                    next
                })
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

    /// Runs `code` as the next step: step 1 begins the session in the
    /// container prepared while the model wrote (or a new one).
    async fn run_step(
        &self,
        run: &mut Run,
        s: &mut Session,
        attempt: &mut Attempt,
        code: &str,
        options: StepOptions,
    ) -> Result<Outcome, Next> {
        (self.progress)(Stage::Running {
            attempt: attempt.number,
        });
        let t = Instant::now();
        let ran = match s.steps.as_mut() {
            Some(steps) => steps.step(code, options).await,
            None => self.begin_session(run, s, attempt, code, options).await,
        };
        run.clock.sandbox += t.elapsed();
        run.clock.add("execute", t);
        match ran {
            Ok(o) => {
                attempt.outcome = Some(o.clone());
                Ok(o)
            }
            Err(e) => {
                let reason = format!("the sandbox failed: {e}");
                attempt.failure = Some(reason.clone());
                Err(Next::Stop(reason))
            }
        }
    }

    /// Step 1: the prepared container's session begins with `code`.
    async fn begin_session(
        &self,
        run: &mut Run,
        s: &mut Session,
        attempt: &Attempt,
        code: &str,
        options: StepOptions,
    ) -> Result<Outcome, SandboxError> {
        let verdict = attempt.verdict.as_ref().expect("checked before it runs");
        let (outcome, steps) = self.begin_prepared(run, verdict, code, options).await?;
        s.steps = Some(steps);
        Ok(outcome)
    }

    /// A session begins with `code` as step 1 in the container prepared
    /// ahead (while the model wrote, or before the request), else in one
    /// prepared now for `verdict`'s imports. A configuration error of the
    /// engine also ends the request ([`Run::fatal`]).
    pub(super) async fn begin_prepared(
        &self,
        run: &mut Run,
        verdict: &crate::policy::Verdict,
        code: &str,
        options: StepOptions,
    ) -> Result<crate::sandbox::Begun, SandboxError> {
        let handle = run
            .pending
            .take()
            .unwrap_or_else(|| self.sandbox.start_prepare(self.config_for(verdict)));
        let prepared = match handle.ready().await {
            Ok(p) => p,
            Err(e) if e.is_configuration() => {
                let shown = SandboxError::Engine {
                    action: "preparing the container",
                    detail: e.to_string(),
                };
                run.fatal = Some(e.into());
                return Err(shown);
            }
            Err(e) => return Err(e),
        };
        let job = Job {
            code: code.to_string(),
            inputs: run.request.inputs.clone(),
            rules: self.policy.runtime_rules(),
        };
        prepared.begin(&job, options).await
    }

    /// What follows a step that ran: the step goes into the report; the
    /// session stops (a lost engine, tampering, a step that ended it), goes
    /// on (a look, a step that raised, a final step whose result is not
    /// usable: the model sees why) or ends with the result (validated and
    /// confirmed as for one program).
    async fn after_step(
        &self,
        run: &mut Run,
        s: &mut Session,
        attempt: &mut Attempt,
        asked: Asked,
        outcome: Outcome,
    ) -> Next {
        let number = outcome.step.unwrap_or(run.report.steps.len() as u32 + 1);
        run.report.steps.push(step_of(
            number,
            attempt.number,
            asked.last,
            &asked.code,
            &outcome,
        ));
        if let Some(reason) = engine_problem(&outcome) {
            attempt.failure = Some(reason.clone());
            return Next::Stop(format!("step {number}: {reason}"));
        }
        let problem = outcome_problem(&outcome);
        if s.steps.as_ref().is_none_or(|st| st.is_over()) {
            let why = problem.unwrap_or_else(|| "its interpreter is gone".to_string());
            let reason = format!("step {number} ended the session: {why}");
            attempt.failure = Some(reason.clone());
            return Next::Stop(reason);
        }
        let data = run.ctx.data;
        let observe = |problem: Option<&str>| {
            let seen = prompt::observe(number, asked.last, &outcome, problem, &asked.assumed, data);
            Turn::of(asked.last, asked.plan.as_deref(), &asked.code, seen)
        };
        if let Some(problem) = problem {
            s.turns.push(observe(None));
            return Next::Repair(problem);
        }
        s.clean.push(asked.code.clone());
        if !asked.last {
            s.turns.push(observe(None));
            return Next::Continue;
        }
        let value = match self.validate(run, attempt, &outcome) {
            Ok(value) => value,
            Err(Next::Repair(problem)) => {
                s.turns.push(observe(Some(&problem)));
                return Next::Repair(problem);
            }
            Err(next) => return next,
        };
        if self.chart_missing(run, attempt.number, &outcome) {
            s.turns.push(observe(Some(prompt::MISSING_CHART)));
            return Next::Repair(prompt::MISSING_CHART.to_string());
        }
        self.conclude(run, s, attempt, outcome, &value).await
    }

    /// The final step gave a valid result: the session ends now (what only
    /// its end can say joins the step's outcome), the step is marked as the
    /// result, and the result is confirmed by re-running the steps that ran
    /// without an error as one program.
    async fn conclude(
        &self,
        run: &mut Run,
        s: &mut Session,
        attempt: &mut Attempt,
        mut outcome: Outcome,
        value: &serde_json::Value,
    ) -> Next {
        self.end_session(run, s, Some(&mut outcome)).await;
        // The plan the answer and its explanation show is the final step's.
        if attempt.plan.is_some() {
            run.report.plan = attempt.plan.clone();
        }
        attempt.outcome = Some(outcome.clone());
        if let Some(step) = run.report.steps.last_mut() {
            step.result = true;
        }
        let job = Job {
            code: s.clean.join("\n"),
            inputs: run.request.inputs.clone(),
            rules: self.policy.runtime_rules(),
        };
        self.confirm(run, attempt, &job, &outcome, value).await
    }

    /// Ends the session and removes its container, once.
    async fn end_session(&self, run: &mut Run, s: &mut Session, last: Option<&mut Outcome>) {
        end_steps(run, &mut s.steps, last).await;
    }
}

/// Ends a session's `steps` and removes its container, once (the time goes
/// to the sandbox's share).
pub(super) async fn end_steps(
    run: &mut Run,
    steps: &mut Option<Box<dyn Steps>>,
    last: Option<&mut Outcome>,
) {
    if let Some(steps) = steps.take() {
        let t = Instant::now();
        steps.end(last).await;
        run.clock.sandbox += t.elapsed();
    }
}

/// Keeps the turn in the report and acts on `next`; true when the session
/// ends here.
fn settle_turn(run: &mut Run, mut attempt: Attempt, next: Next) -> bool {
    let ends = match next {
        Next::Repair(problem) => {
            attempt.failure = Some(problem);
            false
        }
        next => settle_end(&mut run.report, &attempt, next),
    };
    run.report.attempts.push(attempt);
    ends
}

/// The stop reason of a model that stopped: its words, and the steps that
/// ran before.
fn stopped_by_model(reason: &str, steps: &[Step]) -> String {
    let ran = match steps {
        [] => "before any step ran".to_string(),
        steps => {
            let named: Vec<String> = steps
                .iter()
                .map(|s| format!("{} ({})", s.number, s.kind.label()))
                .collect();
            let plural = if steps.len() == 1 { "" } else { "s" };
            format!("after step{plural} {}", named.join(", "))
        }
    };
    format!("the model stopped without a result, {ran}: {reason}")
}

/// The report's record of a step that ran.
pub(super) fn step_of(number: u32, attempt: u32, last: bool, code: &str, o: &Outcome) -> Step {
    Step {
        number,
        attempt,
        kind: if last {
            StepKind::Final
        } else {
            StepKind::Look
        },
        result: false,
        code: code.to_string(),
        code_sha256: sha256_hex(code.as_bytes()),
        stdout: bounded(&o.stdout, REPORT_STDOUT_CHARS),
        stderr: bounded(&o.stderr, REPORT_STDERR_CHARS),
        stdout_sha256: sha256_hex(o.stdout.as_bytes()),
        value: o.value.as_deref().map(|v| bounded(v, REPORT_VALUE_CHARS)),
        status: o.status,
        duration_ms: o.duration_ms,
        files: o.artifacts.iter().map(|a| a.name.clone()).collect(),
    }
}

/// The head and tail of `text` within `max` characters, saying how much
/// was cut.
fn bounded(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max / 2).collect();
    let tail: String = text.chars().skip(n - max / 2).collect();
    format!("{head}\n… ({} characters cut) …\n{tail}", n - max)
}
