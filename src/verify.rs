//! Checking an answer beyond its schema: repeat runs (`output.repeat`),
//! invariant checks (`output.checks`) and an independent second program
//! (`output.verify: independent`).
//!
//! Every function takes plain data and the sandbox; the loop calls
//! [`confirm`] once a result has passed the schema. A result that changes
//! between runs, breaks a check or disagrees with the second program is not
//! posted as fact: [`Confirmation::stop`] says why, with both values shown.

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

use crate::model::{ModelClient, TokenUsage};
use crate::policy::{Decision, OnCheckFailure, Policy, VerifyMode, check_code};
use crate::problems::{RESULT_FILE, outcome_problem};
use crate::prompt::{self, PromptContext};
use crate::record::result_sha256;
use crate::report::ReportStatus;
use crate::sandbox::{Executor, Job, Outcome, RuntimeRules, SandboxConfig, sha256_hex};
use crate::validate::Validator;

use crate::record::{CheckOutcome, RepeatRun, Verification};

/// What the confirmation steps found.
#[derive(Debug, Clone, Default)]
pub(crate) struct Confirmation {
    /// Further runs (`output.repeat`).
    repeats: Vec<RepeatRun>,
    /// Check outcomes (`output.checks`).
    checks: Vec<CheckOutcome>,
    /// The second program (`output.verify`).
    verification: Option<Verification>,
    /// When the result must not be posted as fact: the status and the reason.
    stop: Option<(ReportStatus, String)>,
    /// Tokens the second program used.
    usage: TokenUsage,
    /// Time spent in the sandbox.
    sandbox_time: Duration,
    /// Time spent waiting on the model.
    model_time: Duration,
}

impl Confirmation {
    /// Puts what was found into the report's record (the loop's final
    /// [`attach_record`](crate::report::Report::attach_record) keeps it), adds tokens and times, and
    /// returns the stop, if any.
    pub(crate) fn keep_in(
        self,
        report: &mut crate::report::Report,
        outcome: &Outcome,
        sandbox_time: &mut Duration,
        model_time: &mut Duration,
    ) -> Option<(ReportStatus, String)> {
        *sandbox_time += self.sandbox_time;
        *model_time += self.model_time;
        report.usage.add(self.usage);
        if !self.repeats.is_empty() || !self.checks.is_empty() || self.verification.is_some() {
            let mut r = crate::record::RunRecord::of_outcome(
                outcome,
                &[],
                &RuntimeRules::default(),
                &Default::default(),
                None,
            );
            r.repeats = self.repeats;
            r.checks = self.checks;
            r.verification = self.verification;
            report.record = Some(r);
        }
        self.stop
    }
}

/// Everything [`confirm`] needs; plain data plus the sandbox and model.
pub(crate) struct ConfirmInput<'a> {
    /// The policy in force (`output.repeat`, `checks`, `verify`, `tolerance`).
    pub(crate) policy: &'a Policy,
    /// The sandbox.
    pub(crate) sandbox: &'a dyn Executor,
    /// The model, for `verify: independent`.
    pub(crate) model: Option<&'a ModelClient>,
    /// The container settings of the original run.
    pub(crate) config: SandboxConfig,
    /// The job of the original run (code, inputs, rules).
    pub(crate) job: &'a Job,
    /// The schema validator.
    pub(crate) validator: &'a Validator,
    /// The prompt context (goal, inputs, schema), for the second program.
    pub(crate) prompt: &'a PromptContext,
    /// The validated result of the original run.
    pub(crate) result: &'a Value,
    /// True when a human approved this code (a failed check that escalates
    /// is then accepted, with the failure recorded).
    pub(crate) approved: bool,
}

/// Most characters of one result shown in a stop reason.
const SHOWN_MAX: usize = 2_000;

fn shown(v: &Value) -> String {
    let s = serde_json::to_string(v).unwrap_or_default();
    if s.chars().count() > SHOWN_MAX {
        format!("{}…", s.chars().take(SHOWN_MAX).collect::<String>())
    } else {
        s
    }
}

/// Numbers agree when `|a − b| ≤ tol` or `|a − b| ≤ tol · max(|a|, |b|)`.
fn close(a: f64, b: f64, tol: f64) -> bool {
    let d = (a - b).abs();
    d <= tol || d <= tol * a.abs().max(b.abs())
}

/// Where two JSON values differ, as `path: left ≠ right` lines (at most 20).
/// Numbers compare within `tol`; everything else exactly.
pub(crate) fn differences(a: &Value, b: &Value, tol: f64) -> Vec<String> {
    let mut out = Vec::new();
    diff_at("", a, b, tol, &mut out);
    if out.len() > 20 {
        let more = out.len() - 20;
        out.truncate(20);
        out.push(format!("… and {more} more"));
    }
    out
}

fn diff_at(path: &str, a: &Value, b: &Value, tol: f64, out: &mut Vec<String>) {
    let here = if path.is_empty() { "/" } else { path };
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if x != y {
                match (x.as_f64(), y.as_f64()) {
                    (Some(p), Some(q)) if close(p, q, tol) => {}
                    _ => out.push(format!("{here}: {x} ≠ {y}")),
                }
            }
        }
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                let p = format!("{path}/{k}");
                match y.get(k) {
                    Some(w) => diff_at(&p, v, w, tol, out),
                    None => out.push(format!("{p}: {} ≠ (missing)", shown(v))),
                }
            }
            for (k, w) in y {
                if !x.contains_key(k) {
                    out.push(format!("{path}/{k}: (missing) ≠ {}", shown(w)));
                }
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                out.push(format!("{here}: {} items ≠ {} items", x.len(), y.len()));
            }
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                diff_at(&format!("{path}/{i}"), v, w, tol, out);
            }
        }
        _ if a == b => {}
        _ => out.push(format!("{here}: {} ≠ {}", shown(a), shown(b))),
    }
}

/// The result a run produced (`/out/result.json` or stdout's last line),
/// validated; `Err` says why there is none.
fn result_of(outcome: &Outcome, validator: &Validator) -> Result<Value, String> {
    if let Some(p) = outcome_problem(outcome) {
        return Err(p);
    }
    let file = outcome
        .artifacts
        .iter()
        .find(|a| a.name == RESULT_FILE)
        .map(|a| a.bytes.as_slice());
    let v = validator.validate_output(&outcome.stdout, file);
    match (v.is_valid(), v.value) {
        (true, Some(value)) => Ok(value),
        (_, _) => Err(v
            .errors
            .first()
            .cloned()
            .unwrap_or_else(|| "no result".to_string())),
    }
}

/// Runs the job `extra` more times, each in a fresh container, and
/// compares each result with `first` exactly (canonical JSON).
async fn repeat_runs(
    sandbox: &dyn Executor,
    cfg: &SandboxConfig,
    job: &Job,
    validator: &Validator,
    first: &Value,
    extra: u32,
) -> Vec<RepeatRun> {
    let mut runs = Vec::new();
    for i in 0..extra {
        let run = i + 2;
        let outcome = match sandbox.run(cfg, job).await {
            Ok(o) => o,
            Err(e) => {
                runs.push(RepeatRun {
                    run,
                    status: "sandbox_error".into(),
                    stdout_sha256: String::new(),
                    result_sha256: None,
                    duration_ms: 0,
                    differences: vec![format!("the sandbox failed: {e}")],
                });
                continue;
            }
        };
        let (result_sha, diffs) = match result_of(&outcome, validator) {
            Ok(v) => (Some(result_sha256(&v)), differences(first, &v, 0.0)),
            Err(problem) => (None, vec![format!("no result: {problem}")]),
        };
        runs.push(RepeatRun {
            run,
            status: outcome.status.as_str().to_string(),
            stdout_sha256: sha256_hex(outcome.stdout.as_bytes()),
            result_sha256: result_sha,
            duration_ms: outcome.duration_ms,
            differences: diffs,
        });
    }
    runs
}

/// The Python program that evaluates `checks` over `result` and prints one
/// JSON line: a list of `{passed, error}`. JSON string and list literals
/// are valid Python literals, so nothing from the result is ever code.
fn check_program(checks: &[String], result: &Value) -> String {
    let result_text = serde_json::to_string(&serde_json::to_string(result).unwrap_or_default())
        .unwrap_or_default();
    let checks_text = serde_json::to_string(checks).unwrap_or_default();
    format!(
        r#"import json, math
result = json.loads({result_text})
CHECKS = {checks_text}
out = []
for i, src in enumerate(CHECKS):
    env = {{"result": result, "math": math}}
    name = "check " + str(i + 1)
    try:
        try:
            code = compile(src, name, "eval")
            held = bool(eval(code, env))
            out.append({{"passed": held, "error": None if held else "the expression is false"}})
        except SyntaxError:
            exec(compile(src, name, "exec"), env)
            out.append({{"passed": True, "error": None}})
    except AssertionError as e:
        out.append({{"passed": False, "error": "AssertionError" + (": " + str(e) if str(e) else "")}})
    except Exception as e:
        out.append({{"passed": False, "error": type(e).__name__ + ": " + str(e)}})
print(json.dumps(out))
"#
    )
}

/// Runs the checks over `result` in a fresh container. `Err` when the
/// check program itself could not run.
async fn run_checks(
    sandbox: &dyn Executor,
    cfg: &SandboxConfig,
    checks: &[String],
    result: &Value,
) -> Result<Vec<CheckOutcome>, String> {
    let job = Job {
        code: check_program(checks, result),
        inputs: Vec::new(),
        rules: RuntimeRules::default(),
    };
    // The check program imports only `json`: nothing to preload.
    let cfg = SandboxConfig {
        preload: Vec::new(),
        ..cfg.clone()
    };
    let outcome = sandbox
        .run(&cfg, &job)
        .await
        .map_err(|e| format!("the sandbox failed: {e}"))?;
    if let Some(p) = outcome_problem(&outcome) {
        return Err(format!("the checks could not run: {p}"));
    }
    #[derive(Deserialize)]
    struct Line {
        passed: bool,
        error: Option<String>,
    }
    let line = outcome.stdout.lines().last().unwrap_or_default();
    let lines: Vec<Line> = serde_json::from_str(line)
        .map_err(|e| format!("the checks gave no readable answer ({e})"))?;
    Ok(checks
        .iter()
        .zip(lines)
        .map(|(c, l)| CheckOutcome {
            check: c.clone(),
            passed: l.passed,
            error: l.error,
        })
        .collect())
}

/// The request for the second program: the same goal, inputs and schema,
/// no history and nothing of the first program.
fn independent_request(ctx: &PromptContext) -> crate::model::ChatRequest {
    let mut req = prompt::generation_request(ctx, &[]);
    if let Some(m) = req.messages.last_mut() {
        m.content.push_str(
            "\n\nThis program is an independent check: another program answers the same goal and \
             the two results are compared. Solve it your own way (prefer a different method where \
             one exists) and print the result in the same JSON shape.",
        );
    }
    req
}

/// Asks the model for a second program, checks it against the policy, runs
/// it and compares the results within the policy's tolerance.
async fn verify_independent(
    input: &ConfirmInput<'_>,
    model: &ModelClient,
    usage: &mut TokenUsage,
    model_time: &mut Duration,
    sandbox_time: &mut Duration,
) -> Verification {
    let tolerance = input.policy.output.tolerance;
    let mut v = Verification {
        agreed: false,
        tolerance,
        code_sha256: None,
        code: None,
        result: None,
        differences: Vec::new(),
        problem: None,
    };
    let t = Instant::now();
    let reply = model.complete(&independent_request(input.prompt)).await;
    *model_time += t.elapsed();
    let code = match reply.map(|r| {
        usage.add(r.usage);
        prompt::parse_reply(&r.text)
    }) {
        Ok(Ok(g)) => g.code,
        Ok(Err(e)) => {
            v.problem = Some(format!("the model gave no usable second program: {e}"));
            return v;
        }
        Err(e) => {
            v.problem = Some(format!("the model could not be asked: {e}"));
            return v;
        }
    };
    v.code_sha256 = Some(sha256_hex(code.as_bytes()));
    v.code = Some(code.clone());
    let verdict = check_code(input.policy, &code);
    if verdict.decision != Decision::Allow {
        v.problem = Some(format!(
            "the policy did not allow the second program:\n{}",
            crate::problems::findings_text(&verdict)
        ));
        return v;
    }
    let job = Job {
        code,
        ..input.job.clone()
    };
    // The second program preloads what it imports, not what the first did.
    let config = SandboxConfig {
        preload: input.policy.preload_of(&verdict),
        ..input.config.clone()
    };
    let t = Instant::now();
    let outcome = input.sandbox.run(&config, &job).await;
    *sandbox_time += t.elapsed();
    match outcome
        .map_err(|e| format!("the sandbox failed: {e}"))
        .and_then(|o| result_of(&o, input.validator))
    {
        Ok(second) => {
            v.differences = differences(input.result, &second, tolerance);
            v.agreed = v.differences.is_empty();
            v.result = Some(second);
        }
        Err(p) => v.problem = Some(format!("the second program gave no result: {p}")),
    }
    v
}

/// The policy's output checks (`output.checks`) on the validated result,
/// recorded in `c`; a failure that ends the run sets `c.stop`. Runs nothing
/// when the policy has no checks.
async fn check_result(input: &ConfirmInput<'_>, c: &mut Confirmation) {
    let checks = &input.policy.output.checks;
    if checks.is_empty() {
        return;
    }
    let t = Instant::now();
    let ran = run_checks(input.sandbox, &input.config, checks, input.result).await;
    c.sandbox_time += t.elapsed();
    match ran {
        Ok(outcomes) => c.checks = outcomes,
        Err(e) => {
            c.stop = Some((ReportStatus::Failed, e));
            return;
        }
    }
    let failed: Vec<String> = c
        .checks
        .iter()
        .filter(|o| !o.passed)
        .map(|o| format!("`{}` — {}", o.check, o.error.as_deref().unwrap_or("failed")))
        .collect();
    if !failed.is_empty() {
        let text = format!(
            "the result failed {} of the policy's output checks:\n{}\nThe result was {}",
            failed.len(),
            failed.join("\n"),
            shown(input.result)
        );
        match input.policy.output.on_check_failure {
            OnCheckFailure::Escalate if input.approved => {
                tracing::info!("a failed check was accepted: a human approved this code");
            }
            OnCheckFailure::Escalate => {
                c.stop = Some((
                    ReportStatus::NeedsApproval,
                    format!("{text}\nA human may approve the code to accept this result."),
                ));
            }
            OnCheckFailure::Stop => c.stop = Some((ReportStatus::Failed, text)),
        }
    }
}

/// Repeat runs, checks and independent verification of a validated result,
/// as the policy asks. Runs nothing when the policy asks for none of them.
pub(crate) async fn confirm(input: ConfirmInput<'_>) -> Confirmation {
    let mut c = Confirmation::default();
    let runs = u32::from(input.policy.output.repeat.get());
    let extra = runs.saturating_sub(1);
    if extra > 0 {
        let t = Instant::now();
        c.repeats = repeat_runs(
            input.sandbox,
            &input.config,
            input.job,
            input.validator,
            input.result,
            extra,
        )
        .await;
        c.sandbox_time += t.elapsed();
        if let Some(r) = c.repeats.iter().find(|r| !r.differences.is_empty()) {
            c.stop = Some((
                ReportStatus::Failed,
                format!(
                    "the result changed between runs, so it is not reported as fact (run 1 of {}: \
                     {}; run {}: {}). Seed random generators, sort unordered collections and avoid \
                     the clock.\nDifferences:\n{}",
                    runs,
                    shown(input.result),
                    r.run,
                    r.result_sha256
                        .as_ref()
                        .map(|_| "another result")
                        .unwrap_or("no result"),
                    r.differences.join("\n")
                ),
            ));
            return c;
        }
    }
    check_result(&input, &mut c).await;
    if c.stop.is_some() {
        return c;
    }
    if input.policy.output.verify == VerifyMode::Independent {
        let Some(model) = input.model else {
            c.stop = Some((
                ReportStatus::Failed,
                "the policy asks for independent verification (`output.verify: independent`), \
                 which needs a model; configure one (COMPUTE_BOT_PROVIDER / COMPUTE_BOT_MODEL)"
                    .to_string(),
            ));
            return c;
        };
        let (mut usage, mut mt, mut st) = (TokenUsage::default(), Duration::ZERO, Duration::ZERO);
        let v = verify_independent(&input, model, &mut usage, &mut mt, &mut st).await;
        c.usage.add(usage);
        c.model_time += mt;
        c.sandbox_time += st;
        if !v.agreed {
            let reason = match &v.problem {
                Some(p) => format!("the result could not be verified independently: {p}"),
                None => format!(
                    "an independent second program disagrees (tolerance {}), so neither result is \
                     reported as fact.\nFirst program: {}\nSecond program: {}\nDifferences:\n{}",
                    v.tolerance,
                    shown(input.result),
                    v.result.as_ref().map(shown).unwrap_or_default(),
                    v.differences.join("\n")
                ),
            };
            c.stop = Some((ReportStatus::Failed, reason));
        }
        c.verification = Some(v);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn differences_name_the_path_and_respect_the_tolerance() {
        let a = json!({"avg": 0.5, "rows": [1, 2], "name": "x"});
        let b = json!({"avg": 0.5000000001, "rows": [1, 3], "extra": true, "name": "x"});
        let d = differences(&a, &b, 1e-6);
        assert_eq!(
            d,
            vec![
                "/rows/1: 2 ≠ 3".to_string(),
                "/extra: (missing) ≠ true".into()
            ]
        );
        assert_eq!(differences(&a, &b, 0.0).len(), 3);
        assert!(differences(&a, &a, 0.0).is_empty());
        assert_eq!(
            differences(&json!(1), &json!("1"), 1.0),
            vec!["/: 1 ≠ \"1\""]
        );
    }

    #[test]
    fn the_check_program_embeds_the_result_as_data() {
        let p = check_program(
            &["result['a'] < 1".into()],
            &json!({"a": "\"); import os; (\"", "b": "'''"}),
        );
        assert!(p.contains(r#"result = json.loads("{\"a\":"#), "{p}");
        assert!(p.contains(r#"CHECKS = ["result['a'] < 1"]"#), "{p}");
    }
}
