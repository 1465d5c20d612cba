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
use crate::policy::{Decision, Policy, check_code};
use crate::prompt::{self, PromptContext, RepairNote};
use crate::report::{Attempt, InputSummary, Report, ReportStatus};
use crate::sandbox::{InputFile, Job, Prepared, Sandbox, SandboxConfig, SandboxError, sha256_hex};
use crate::validate::{ValidateError, Validator};

/// The name of the file in `/out` that may carry the result instead of stdout.
pub use crate::problems::{RESULT_FILE, findings_text, outcome_problem, truncated_output_problem};

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
}

impl Request {
    /// True when `code_sha256` is the hash a human approved.
    pub fn is_approved(&self, code_sha256: &str) -> bool {
        self.approved_sha256
            .as_deref()
            .is_some_and(|a| a.trim().eq_ignore_ascii_case(code_sha256))
    }
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
}

/// The loop with everything it needs; stages talk through plain data.
pub struct Agent<'a> {
    /// The policy in force.
    pub policy: &'a Policy,
    /// The sandbox to run in.
    pub sandbox: &'a Sandbox,
    /// The model, when one is configured.
    pub model: Option<&'a ModelClient>,
    /// Called when a stage starts.
    pub progress: &'a (dyn Fn(Stage) + Send + Sync),
}

struct Clock {
    timings: BTreeMap<String, u64>,
}

impl Clock {
    fn add(&mut self, stage: &str, since: Instant) {
        *self.timings.entry(stage.to_string()).or_default() += since.elapsed().as_millis() as u64;
    }
}

impl Agent<'_> {
    fn sandbox_config(&self) -> SandboxConfig {
        // The policy's limits already size /data by `inputs.max_total_bytes`.
        SandboxConfig {
            image: self.policy.image().to_string(),
            limits: self.policy.limits(),
            runtime: self.policy.sandbox.runtime,
            preload: self.policy.sandbox.preload.clone(),
            ..Default::default()
        }
    }

    fn start_prepare(&self) -> tokio::task::JoinHandle<Result<Prepared, SandboxError>> {
        let sandbox = self.sandbox.clone();
        let cfg = self.sandbox_config();
        tokio::spawn(async move { sandbox.prepare(&cfg).await })
    }

    /// Answers a request. Configuration problems are errors; everything that
    /// happens once the request is under way is in the report.
    pub async fn answer(&self, req: Request) -> Result<Report, AgentError> {
        let total = Instant::now();
        let mut clock = Clock {
            timings: BTreeMap::new(),
        };
        // A goal with nothing a reader can see (blank, only an HTML comment
        // or invisible characters) is no goal.
        let goal = req
            .goal
            .as_deref()
            .map(prompt::sanitize_goal)
            .filter(|g| !g.is_empty());
        // A fenced python block in the goal is exact code to run — taken
        // from the sanitized goal, so a block hidden in an HTML comment (or
        // behind invisible characters) is not run unseen by a reader.
        let fixed_code = req.code.clone().or_else(|| {
            goal.as_deref()
                .and_then(prompt::extract_fenced_code)
                .filter(|c| !c.trim().is_empty())
        });
        if goal.is_none() && fixed_code.is_none() {
            return Err(AgentError::Empty);
        }
        if fixed_code.is_none() && self.model.is_none() {
            return Err(AgentError::NoModel(crate::model::NO_MODEL_HELP.to_string()));
        }
        let schema = req
            .schema
            .clone()
            .unwrap_or_else(|| self.policy.output.schema.clone());
        let validator = Validator::new(&schema)?;
        let attempts_allowed = if fixed_code.is_some() {
            1
        } else {
            u32::from(self.policy.attempts.get())
        };
        let inputs: Vec<InputSummary> = req
            .inputs
            .iter()
            .map(|f| InputSummary {
                name: f.name.clone(),
                size: f.bytes.len() as u64,
                sha256: sha256_hex(&f.bytes),
            })
            .collect();
        let mut report = Report {
            goal: goal.clone(),
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
            inputs,
            policy: self.policy.origin.as_ref().map(|p| p.display().to_string()),
            usage: TokenUsage::default(),
            timings_ms: BTreeMap::new(),
            record: None,
        };
        // The prompt states the image's library versions (its labels; the
        // lookup is cached and also serves the container start).
        let versions = match &fixed_code {
            None => self
                .sandbox
                .image_info(self.policy.image())
                .await
                .map(|i| prompt::library_versions(&i.labels))
                .unwrap_or_default(),
            Some(_) => BTreeMap::new(),
        };
        let ctx = PromptContext::for_request(
            self.policy,
            goal.as_deref().unwrap_or_default(),
            &req.inputs,
            &schema,
            req.context.clone(),
        )
        .with_library_versions(versions);
        // Start a container while the model writes code (generated code only:
        // exact code is checked before any container exists).
        let mut pending = if fixed_code.is_none() {
            Some(self.start_prepare())
        } else {
            None
        };
        let mut history: Vec<RepairNote> = Vec::new();
        // Time spent waiting on the model and on the sandbox (container
        // preparation, execution, removal); the loop's own overhead is the
        // rest of the total.
        let mut model_time = Duration::ZERO;
        let mut sandbox_time = Duration::ZERO;

        for number in 1..=attempts_allowed {
            let mut attempt = Attempt {
                number,
                ..Default::default()
            };
            // Generate.
            let code = match &fixed_code {
                Some(code) => code.clone(),
                None => {
                    (self.progress)(Stage::Generating {
                        attempt: number,
                        of: attempts_allowed,
                    });
                    let model = self.model.expect("checked above");
                    let request = prompt::generation_request(&ctx, &history);
                    let t = Instant::now();
                    let reply = model.complete(&request).await;
                    model_time += t.elapsed();
                    clock.add("generate", t);
                    match reply {
                        Ok(reply) => {
                            attempt.usage = reply.usage;
                            report.usage.add(reply.usage);
                            match prompt::parse_generated(&reply) {
                                Ok(g) => {
                                    attempt.plan = g.plan;
                                    g.code
                                }
                                Err(e) => {
                                    let problem = e.to_string();
                                    repairable(
                                        &mut report,
                                        &mut history,
                                        attempt,
                                        String::new(),
                                        problem,
                                    );
                                    continue;
                                }
                            }
                        }
                        Err(e) => {
                            attempt.failure = Some(format!("the model call failed: {e}"));
                            report.attempts.push(attempt);
                            report.stop_reason = Some(model_stop_reason(&e));
                            break;
                        }
                    }
                }
            };
            attempt.code_sha256 = sha256_hex(code.as_bytes());
            attempt.code = code.clone();
            if attempt.plan.is_some() {
                report.plan = attempt.plan.clone();
            }

            // Policy check.
            (self.progress)(Stage::Checking { attempt: number });
            let t = Instant::now();
            let verdict = check_code(self.policy, &code);
            clock.add("check", t);
            attempt.verdict = Some(verdict.clone());
            match verdict.decision {
                Decision::Allow => {}
                // Exactly the code a human approved: the escalation is settled.
                Decision::Escalate if req.is_approved(&attempt.code_sha256) => {
                    tracing::info!(
                        sha256 = %attempt.code_sha256,
                        "running escalated code that a human approved"
                    );
                }
                Decision::Escalate => {
                    report.status = ReportStatus::NeedsApproval;
                    report.stop_reason = Some(format!(
                        "the code needs a human approval before it may run:\n{}",
                        findings_text(&verdict)
                    ));
                    report.code = Some(code.clone());
                    report.code_sha256 = Some(attempt.code_sha256.clone());
                    report.verdict = Some(verdict);
                    report.attempts.push(attempt);
                    break;
                }
                Decision::Deny => {
                    let problem =
                        format!("the policy denied the code:\n{}", findings_text(&verdict));
                    repairable(&mut report, &mut history, attempt, code.clone(), problem);
                    continue;
                }
            }

            // Execute.
            (self.progress)(Stage::Running { attempt: number });
            let t = Instant::now();
            let prepared = match pending.take() {
                Some(handle) => handle.await.expect("prepare task"),
                None => self.sandbox.prepare(&self.sandbox_config()).await,
            };
            sandbox_time += t.elapsed();
            let prepared = match prepared {
                Ok(p) => p,
                Err(e) if e.is_configuration() => return Err(e.into()),
                Err(e) => {
                    attempt.failure = Some(format!("the sandbox failed: {e}"));
                    report.attempts.push(attempt);
                    report.stop_reason = Some(format!("the sandbox failed: {e}"));
                    break;
                }
            };
            let job = Job {
                code: code.clone(),
                inputs: req.inputs.clone(),
                rules: self.policy.runtime_rules(),
            };
            let started = Instant::now();
            let outcome = prepared.execute(&job).await;
            sandbox_time += started.elapsed();
            clock.add("execute", t);
            let outcome = match outcome {
                Ok(o) => o,
                Err(e) => {
                    attempt.failure = Some(format!("the sandbox failed: {e}"));
                    report.attempts.push(attempt);
                    report.stop_reason = Some(format!("the sandbox failed: {e}"));
                    break;
                }
            };
            attempt.outcome = Some(outcome.clone());
            // A repair follows unless this attempt succeeds: start its
            // container now, while the model writes the fix. A successful
            // run then never waits for a container it does not use.
            let may_repair = fixed_code.is_none() && number < attempts_allowed;
            if let Some(problem) = outcome_problem(&outcome) {
                if may_repair {
                    pending = Some(self.start_prepare());
                }
                repairable(&mut report, &mut history, attempt, code.clone(), problem);
                continue;
            }

            // Validate.
            (self.progress)(Stage::Validating { attempt: number });
            let t = Instant::now();
            let result_file = outcome
                .artifacts
                .iter()
                .find(|a| a.name == RESULT_FILE)
                .map(|a| a.bytes.as_slice());
            let validation = validator.validate_output(&outcome.stdout, result_file);
            clock.add("validate", t);
            attempt.result = validation.value.clone();
            attempt.validation_errors = validation.errors.clone();
            if !validation.is_valid() {
                let problem = match truncated_output_problem(&outcome, result_file.is_some()) {
                    Some(cut) => cut,
                    None => validation
                        .problem()
                        .unwrap_or_else(|| "the output did not match the schema".to_string()),
                };
                if may_repair {
                    pending = Some(self.start_prepare());
                }
                repairable(&mut report, &mut history, attempt, code.clone(), problem);
                continue;
            }
            // Repeat runs, output checks, independent verification (src/verify.rs).
            let confirmed = crate::verify::confirm(crate::verify::ConfirmInput {
                policy: self.policy,
                sandbox: self.sandbox,
                model: self.model,
                config: self.sandbox_config(),
                job: &job,
                validator: &validator,
                prompt: &ctx,
                result: validation
                    .value
                    .as_ref()
                    .expect("a valid result has a value"),
                approved: req.is_approved(&attempt.code_sha256),
            })
            .await;
            let stop = confirmed.keep_in(&mut report, &outcome, &mut sandbox_time, &mut model_time);
            if let Some((status, reason)) = stop {
                report.status = status;
                report.stop_reason = Some(reason);
                report.attempts.push(attempt);
                break;
            }
            report.status = ReportStatus::Ok;
            report.result = validation.value;
            report.attempts.push(attempt);
            break;
        }
        if let Some(handle) = pending.take() {
            // An unused container: remove it now rather than on drop.
            let t = Instant::now();
            if let Ok(Ok(p)) = handle.await {
                let _ = p.discard().await;
            }
            sandbox_time += t.elapsed();
        }

        // The final code, verdict and outcome are those of the last attempt.
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

        // Explain.
        if let Some(result) = &report.result {
            (self.progress)(Stage::Explaining);
            let t = Instant::now();
            let explanation = match (self.policy.explain, self.model) {
                (true, Some(model)) => {
                    let called = Instant::now();
                    let reply = explain::explain(
                        model,
                        goal.as_deref().unwrap_or(""),
                        result,
                        self.policy.model.data,
                    )
                    .await;
                    model_time += called.elapsed();
                    match reply {
                        Ok((text, usage)) => {
                            report.usage.add(usage);
                            text
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "explanation failed; using the template");
                            explain::template_explanation(goal.as_deref(), result)
                        }
                    }
                }
                _ => explain::template_explanation(goal.as_deref(), result),
            };
            clock.add("explain", t);
            report.explanation = Some(explanation);
        }
        let total = total.elapsed();
        let ms = |d: Duration| d.as_millis() as u64;
        clock.timings.insert("total".into(), ms(total));
        clock.timings.insert("model".into(), ms(model_time));
        clock.timings.insert("sandbox".into(), ms(sandbox_time));
        clock.timings.insert(
            "loop_overhead".into(),
            ms(total.saturating_sub(model_time + sandbox_time)),
        );
        report.timings_ms = clock.timings;
        report.attach_record(self.policy, self.sandbox).await;
        Ok(report)
    }
}

/// Records a failed attempt whose reason goes back to the model for a repair.
fn repairable(
    report: &mut Report,
    history: &mut Vec<RepairNote>,
    mut attempt: Attempt,
    code: String,
    problem: String,
) {
    attempt.failure = Some(problem.clone());
    history.push(RepairNote { code, problem });
    report.attempts.push(attempt);
}

fn model_stop_reason(e: &ModelError) -> String {
    format!("the model could not be used: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escalate_policy() -> Policy {
        Policy::load(&std::path::PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/policies/escalate.yml"
        )))
        .unwrap()
    }

    /// Neither path below starts a container: escalate and deny stop at the check.
    #[tokio::test]
    async fn an_approval_covers_only_the_approved_code_and_never_a_deny() {
        let Ok(sandbox) = Sandbox::connect().await else {
            panic!("these tests need the Docker engine");
        };
        let policy = escalate_policy();
        let agent = Agent {
            policy: &policy,
            sandbox: &sandbox,
            model: None,
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
        assert!(
            Request {
                approved_sha256: Some("ABC".into()),
                ..Request::default()
            }
            .is_approved("abc")
        );
    }
}
