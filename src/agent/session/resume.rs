//! A follow-up on a session answer continues from its state: before the
//! model's first new step, the earlier answer's steps that ran without an
//! error are replayed in the new session's interpreter (their exact code,
//! found by hash in the earlier comment, each checked by the policy), and
//! each replayed step's stdout must hash to what the earlier record says.
//! The model then sees those steps and their outputs as earlier turns.
//!
//! Where that cannot be done (a step's code is not found, an input is not
//! the same, the policy no longer allows a step, a step fails or prints
//! other output now) the session starts fresh, as a follow-up did before,
//! and the report's `continued` line says why.

use std::time::Duration;

use super::{Session, end_steps, step_of};
use crate::agent::{Agent, Run};
use crate::policy::{Decision, Verdict, check_code};
use crate::problems::{engine_problem, outcome_problem};
use crate::prompt::{self, Earlier, EarlierStep, Turn};
use crate::report::Attempt;
use crate::sandbox::{InputFile, RunStatus, StepOptions, Then, sha256_hex};

/// A step of the earlier answer to replay.
struct Replay {
    /// Its number in the earlier session.
    number: u32,
    /// Its exact code.
    code: String,
    /// The sha256 of the stdout it printed then.
    stdout_sha256: String,
}

impl Agent<'_> {
    /// Replays the earlier answer's clean steps when this request follows
    /// up a session answer; the line that says how the session began
    /// (`None` when the earlier answer was no session).
    pub(super) async fn resume(&self, run: &mut Run, s: &mut Session) -> Option<String> {
        let earlier = run.request.earlier.as_ref()?;
        if earlier.steps.is_empty() {
            return None;
        }
        let planned = continuable(earlier, &run.request.inputs).and_then(|steps| {
            let verdict = self.allowed(&steps)?;
            Ok((steps, verdict))
        });
        let (steps, verdict) = match planned {
            Ok(p) => p,
            Err(why) => return Some(fresh(&why)),
        };
        match self.replay_steps(run, s, &steps, verdict).await {
            Ok(()) => {
                let numbers: Vec<String> = steps.iter().map(|r| r.number.to_string()).collect();
                let plural = if steps.len() == 1 { "" } else { "s" };
                Some(format!(
                    "Continued from the earlier answer's state: its step{plural} {} replayed first \
(exact code, each with the recorded output).",
                    numbers.join(", ")
                ))
            }
            Err(why) => {
                end_steps(run, &mut s.steps, None).await;
                *s = Session::default();
                run.report.steps.clear();
                run.report.replayed.clear();
                Some(fresh(&why))
            }
        }
    }

    /// The policy's verdict on every step (the first step's verdict sets up
    /// the container), or why one may not run.
    fn allowed(&self, steps: &[Replay]) -> Result<Verdict, String> {
        let mut first = None;
        for r in steps {
            let verdict = check_code(self.policy, &r.code);
            match verdict.decision {
                Decision::Allow => {}
                Decision::Escalate => {
                    return Err(format!(
                        "the policy now asks a human to approve its step {}",
                        r.number
                    ));
                }
                Decision::Deny => {
                    return Err(format!("the policy now denies its step {}", r.number));
                }
            }
            first.get_or_insert(verdict);
        }
        first.ok_or_else(|| "none of its steps ran without an error".to_string())
    }

    /// Runs the earlier steps in order as this session's first steps; each
    /// goes into the report and the model's turns. Why one cannot be used.
    async fn replay_steps(
        &self,
        run: &mut Run,
        s: &mut Session,
        steps: &[Replay],
        verdict: Verdict,
    ) -> Result<(), String> {
        let attempt = Attempt {
            verdict: Some(verdict),
            ..Default::default()
        };
        for r in steps {
            let left = self.policy.session.code_time.saturating_sub(s.code_used);
            if left.is_zero() {
                return Err("the session's code time was used up replaying them".to_string());
            }
            let options = StepOptions {
                last: false,
                timeout: left.min(self.policy.limits().timeout),
                // The model is asked after the replayed steps.
                then: Then::Wait,
            };
            let ran = match s.steps.as_mut() {
                Some(steps) => steps.step(&r.code, options).await,
                None => self.begin_session(run, s, &attempt, &r.code, options).await,
            };
            let outcome = ran
                .map_err(|e| format!("the sandbox failed replaying its step {}: {e}", r.number))?;
            s.code_used += Duration::from_millis(outcome.duration_ms);
            if let Some(why) = engine_problem(&outcome).or_else(|| {
                (outcome.status != RunStatus::Ok).then(|| {
                    outcome_problem(&outcome).unwrap_or_else(|| outcome.status.as_str().to_string())
                })
            }) {
                return Err(format!(
                    "its step {} failed when replayed: {}",
                    r.number,
                    first_line(&why)
                ));
            }
            let now = sha256_hex(outcome.stdout.as_bytes());
            if now != r.stdout_sha256 {
                return Err(format!(
                    "its step {} printed other output when replayed (stdout sha256 {}…, recorded {}…)",
                    r.number,
                    &now[..12],
                    r.stdout_sha256.get(..12).unwrap_or(&r.stdout_sha256)
                ));
            }
            let number = outcome.step.unwrap_or(run.report.steps.len() as u32 + 1);
            run.report
                .steps
                .push(step_of(number, 0, false, &r.code, &outcome));
            let plan = format!(
                "the earlier answer's step {}, replayed with its exact code",
                r.number
            );
            let seen = prompt::observe(number, false, &outcome, None, &[], run.ctx.data);
            s.turns.push(Turn::of(false, Some(&plan), &r.code, seen));
            s.clean.push(r.code.clone());
            run.report.replayed.push(outcome);
        }
        Ok(())
    }
}

/// The line of a follow-up that starts a fresh session, and why.
fn fresh(why: &str) -> String {
    format!(
        "Started a fresh session, not from the earlier answer's state: {why}; the earlier answer \
is context only."
    )
}

/// The first line of `text`.
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// The earlier steps that ran without an error, with their code.
fn steps_of(e: &Earlier) -> Vec<Replay> {
    e.steps
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.error)
        .filter_map(|(i, s)| {
            Some(Replay {
                number: i as u32 + 1,
                code: s.code.clone()?,
                stdout_sha256: s.stdout_sha256.clone(),
            })
        })
        .collect()
}

/// The steps to replay, or why the earlier state cannot be rebuilt: a
/// clean step's code is not found by its hash, or an earlier input is not
/// given now with the same sha256.
fn continuable(e: &Earlier, inputs: &[InputFile]) -> Result<Vec<Replay>, String> {
    let found = |s: &EarlierStep| {
        s.code
            .as_ref()
            .is_some_and(|c| sha256_hex(c.as_bytes()).eq_ignore_ascii_case(&s.code_sha256))
    };
    if let Some(i) = e.steps.iter().position(|s| !s.error && !found(s)) {
        return Err(format!(
            "the code of its step {} is not in its comment (no block hashes to the recorded sha256)",
            i + 1
        ));
    }
    for (name, sha) in &e.inputs {
        let shown = name.replace('`', "'");
        match inputs.iter().find(|f| &f.name == name) {
            None => {
                return Err(format!(
                    "its input `{shown}` is not among this request's inputs"
                ));
            }
            Some(f) if !f.sha256().eq_ignore_ascii_case(sha) => {
                return Err(format!(
                    "its input `{shown}` changed since (sha256 differs)"
                ));
            }
            Some(_) => {}
        }
    }
    Ok(steps_of(e))
}
