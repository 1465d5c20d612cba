//! Exact code in steps: exact code with two or more `# %%` cells (a fenced
//! block, a `--code` file, an `.ipynb`'s code cells) runs as the steps of
//! one session, each cell its own step with its own output, the last cell
//! the final step whose printed JSON is validated. Every cell passes the
//! policy check before anything runs (a refused cell stops the request
//! with the rule and the line in the code as given). Exact code is not
//! repaired: a step that raises, times out or ends the session stops the
//! request there, and the later cells do not run.

use std::time::{Duration, Instant};

use super::session::{end_steps, step_of};
use super::{Agent, AgentError, Next, Run, Stage, finish_attempts, settle_end};
use crate::notebook::cells::{CodeCell, Origin, percent_cells};
use crate::policy::{Decision, Verdict, check_code};
use crate::problems::{engine_problem, findings_text, outcome_problem};
use crate::prompt::EarlierStep;
use crate::report::{Attempt, Report};
use crate::sandbox::{Job, Outcome, SandboxError, StepOptions, Steps, Then, sha256_hex};

/// The cells of a request's exact code when they run as steps: two or more
/// `# %%` cells, under a policy that runs sessions (`session.max_steps`
/// above 1), not a plan. `None`: the code runs as one program.
pub(crate) fn exact_cells(code: &str, in_steps: bool) -> Option<Vec<CodeCell>> {
    let cells = percent_cells(code);
    (in_steps && cells.len() > 1).then_some(cells)
}

/// The cells of exact code approved in a session: the steps that ran
/// before it (`before`, each its own cell) and then the code, when there
/// are such steps and the policy runs sessions; `None` otherwise.
pub(crate) fn with_before(
    before: &[EarlierStep],
    code: &str,
    in_steps: bool,
) -> Option<Vec<CodeCell>> {
    if before.is_empty() || !in_steps {
        return None;
    }
    let mut cells: Vec<CodeCell> = before
        .iter()
        .enumerate()
        .map(|(i, s)| CodeCell {
            title: Some(format!("the earlier step {}", i + 1)),
            code: s.code.clone().unwrap_or_default(),
            origin: Origin::Cell(i + 1),
        })
        .collect();
    cells.push(CodeCell {
        title: Some("the approved code".to_string()),
        code: code.to_string(),
        origin: Origin::Line(1),
    });
    Some(cells)
}

/// The 1-based line of `code` where `cell`'s code begins (the line after its
/// marker; the first line for the code before any marker).
pub(crate) fn first_line(code: &str, cell: &CodeCell) -> usize {
    let Origin::Line(n) = cell.origin else {
        return 1;
    };
    let marked = code.lines().nth(n - 1).is_some_and(|l| {
        let l = l.trim_start();
        l.starts_with("# %%") || l.starts_with("#%%")
    });
    if marked { n + 1 } else { n }
}

/// How the answer names a cell: `cell 4` (a notebook's, as its joined
/// program's marker says), else `the cell at line 12`.
fn cell_name(code: &str, cell: &CodeCell) -> String {
    match &cell.title {
        Some(t) if t.starts_with("cell ") || t.starts_with("the ") => t.clone(),
        _ => format!("the cell at line {}", first_line(code, cell)),
    }
}

/// `verdict` with its findings' lines moved to the whole code's lines.
fn in_whole_code(mut verdict: Verdict, first: usize) -> Verdict {
    for f in &mut verdict.findings {
        f.line += first as u32 - 1;
    }
    verdict
}

/// The cell a step runs: the cell, whether it is the last, and the whole
/// text and program it came from (for its name and its lines).
struct CellAt<'a> {
    cell: &'a CodeCell,
    last: bool,
    whole: &'a str,
    program: &'a str,
}

impl Agent<'_> {
    /// Answers exact code whose cells run as steps.
    pub(super) async fn answer_cells(
        &self,
        mut run: Run,
        cells: Vec<CodeCell>,
        total: Instant,
    ) -> Result<Report, AgentError> {
        let whole = run.fixed_code.clone().expect("exact code");
        let whole_sha = sha256_hex(whole.as_bytes());
        // What the repeat runs and checks re-run as one program: the whole
        // code, after the steps that ran before approved code.
        let program = match run.request.before.is_empty() {
            true => whole.clone(),
            false => cells
                .iter()
                .map(|c| c.code.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        };
        let mut steps: Option<Box<dyn Steps>> = None;
        let verdict = match self.check_cells(&mut run, &cells, &whole, &whole_sha) {
            Ok(v) => Some(v),
            Err(refused) => {
                let (attempt, next) = *refused;
                settle_cell(&mut run, attempt, next);
                None
            }
        };
        if let Some(verdict) = &verdict {
            run.attempts_allowed = cells.len() as u32;
            let mut used = Duration::ZERO;
            for (i, cell) in cells.iter().enumerate() {
                let mut attempt = Attempt {
                    number: i as u32 + 1,
                    code: cell.code.clone(),
                    code_sha256: sha256_hex(cell.code.as_bytes()),
                    ..Default::default()
                };
                let last = i + 1 == cells.len();
                let next = self
                    .cell_step(
                        &mut run,
                        &mut steps,
                        &mut attempt,
                        CellAt {
                            cell,
                            last,
                            whole: &whole,
                            program: &program,
                        },
                        verdict,
                        &mut used,
                    )
                    .await;
                if settle_cell(&mut run, attempt, next) || run.fatal.is_some() {
                    break;
                }
            }
        }
        end_steps(&mut run, &mut steps, None).await;
        self.discard_pending(&mut run).await;
        if let Some(e) = run.fatal.take() {
            return Err(e);
        }
        finish_attempts(&mut run.report);
        run.report.code = Some(whole);
        run.report.code_sha256 = Some(whole_sha);
        if let Some(v) = verdict {
            run.report.verdict = Some(v);
        }
        self.explain(&mut run).await;
        self.close(run, total).await
    }

    /// The policy check of every cell (lines in the whole code) and then of
    /// the whole code; the whole code's verdict when all may run, else the
    /// attempt that stops the request and why.
    fn check_cells(
        &self,
        run: &mut Run,
        cells: &[CodeCell],
        whole: &str,
        whole_sha: &str,
    ) -> Result<Verdict, Box<(Attempt, Next)>> {
        (self.progress)(Stage::Checking { attempt: 1 });
        if let Some(reason) = run.request.unpinned(whole_sha) {
            let attempt = Attempt {
                number: 1,
                code: whole.to_string(),
                code_sha256: whole_sha.to_string(),
                failure: Some(reason.clone()),
                ..Default::default()
            };
            return Err(Box::new((attempt, Next::Stop(reason))));
        }
        let approved = run.request.is_approved(whole_sha);
        let named: Vec<(String, Verdict, &str)> = cells
            .iter()
            .map(|c| {
                let v = in_whole_code(check_code(self.policy, &c.code), first_line(whole, c));
                (cell_name(whole, c), v, c.code.as_str())
            })
            .chain(std::iter::once((
                "the code as a whole".to_string(),
                check_code(self.policy, whole),
                whole,
            )))
            .collect();
        for (name, verdict, code) in &named {
            let why = match verdict.decision {
                Decision::Allow => continue,
                Decision::Escalate if approved => continue,
                Decision::Escalate => "needs a human approval before it may run",
                Decision::Deny => "was denied by the policy",
            };
            let reason = format!(
                "{name} {why}, so none of the cells ran (lines are the code's as given):\n{}",
                findings_text(verdict)
            );
            let attempt = Attempt {
                number: 1,
                code: code.to_string(),
                code_sha256: sha256_hex(code.as_bytes()),
                verdict: Some(verdict.clone()),
                failure: Some(reason.clone()),
                ..Default::default()
            };
            let next = match verdict.decision {
                Decision::Escalate => Next::NeedsApproval(reason),
                _ => Next::Stop(reason),
            };
            return Err(Box::new((attempt, next)));
        }
        Ok(named.last().expect("the whole code").1.clone())
    }

    /// One cell as a step: run, recorded in the report, and for the last
    /// cell validated and confirmed (the whole code re-run as one program
    /// by the repeat runs and checks).
    async fn cell_step(
        &self,
        run: &mut Run,
        steps: &mut Option<Box<dyn Steps>>,
        attempt: &mut Attempt,
        at: CellAt<'_>,
        verdict: &Verdict,
        used: &mut Duration,
    ) -> Next {
        let CellAt {
            cell,
            last,
            whole,
            program,
        } = at;
        let name = cell_name(whole, cell);
        attempt.verdict = Some(verdict.clone());
        let Some(time) = self.policy.session.code_time.checked_sub(*used) else {
            return Next::Stop(format!(
                "the session's code time (session.code_time) was used up before {name}"
            ));
        };
        let options = StepOptions {
            last,
            timeout: time.min(self.policy.limits().timeout),
            // Exact cells: the next one is known, nothing waits between.
            then: Then::Next,
        };
        (self.progress)(Stage::Running {
            attempt: attempt.number,
        });
        let t = Instant::now();
        let ran = match steps.as_mut() {
            Some(s) => s.step(&cell.code, options).await,
            None => {
                self.begin_cells(run, steps, &cell.code, verdict, options)
                    .await
            }
        };
        run.clock.sandbox += t.elapsed();
        run.clock.add("execute", t);
        let mut outcome = match ran {
            Ok(o) => o,
            Err(e) => return Next::Stop(format!("the sandbox failed at {name}: {e}")),
        };
        *used += Duration::from_millis(outcome.duration_ms);
        attempt.outcome = Some(outcome.clone());
        let number = outcome.step.unwrap_or(attempt.number);
        run.report
            .steps
            .push(step_of(number, attempt.number, last, &cell.code, &outcome));
        if let Some(reason) = engine_problem(&outcome) {
            return Next::Stop(format!("step {number} ({name}): {reason}"));
        }
        if let Some(problem) = outcome_problem(&outcome) {
            return Next::Stop(format!(
                "step {number} ({name}) failed, so the later cells did not run: {problem}"
            ));
        }
        if let Some(why) = other_output(run, attempt.number, &outcome) {
            return Next::Stop(format!("step {number} ({name}) {why}"));
        }
        if steps.as_ref().is_none_or(|s| s.is_over()) {
            return Next::Stop(format!("step {number} ({name}) ended the session"));
        }
        if !last {
            return Next::Continue;
        }
        let value = match self.validate(run, attempt, &outcome) {
            Ok(v) => v,
            Err(next) => return next,
        };
        end_steps(run, steps, Some(&mut outcome)).await;
        attempt.outcome = Some(outcome.clone());
        if let Some(step) = run.report.steps.last_mut() {
            step.result = true;
        }
        let job = Job {
            code: program.to_string(),
            inputs: run.request.inputs.clone(),
            rules: self.policy.runtime_rules(),
        };
        self.confirm(run, attempt, &job, &outcome, &value).await
    }

    /// Step 1: the session begins in the container prepared for the code
    /// (ahead of the request, or now).
    async fn begin_cells(
        &self,
        run: &mut Run,
        steps: &mut Option<Box<dyn Steps>>,
        code: &str,
        verdict: &Verdict,
        options: StepOptions,
    ) -> Result<Outcome, SandboxError> {
        let (outcome, begun) = self.begin_prepared(run, verdict, code, options).await?;
        *steps = Some(begun);
        Ok(outcome)
    }
}

/// Why the step of cell `number` cannot be the state approved code was
/// written for: it is one of the steps that ran before the approval, and
/// its stdout now differs from the one recorded then.
fn other_output(run: &Run, number: u32, outcome: &Outcome) -> Option<String> {
    let before = run.request.before.get(number.checked_sub(1)? as usize)?;
    let now = sha256_hex(outcome.stdout.as_bytes());
    (now != before.stdout_sha256).then(|| {
        format!(
            "printed other output than before the approval (stdout sha256 {}…, then {}…), so \
the approved code did not run",
            &now[..12],
            before
                .stdout_sha256
                .get(..12)
                .unwrap_or(&before.stdout_sha256)
        )
    })
}

/// Keeps a cell's attempt in the report and acts on `next` (exact code is
/// not repaired: a repair is a stop); true when the request ends here.
fn settle_cell(run: &mut Run, mut attempt: Attempt, next: Next) -> bool {
    let ends = match next {
        Next::Repair(reason) | Next::Stop(reason) => {
            attempt.failure.get_or_insert(reason.clone());
            settle_end(&mut run.report, &attempt, Next::Stop(reason))
        }
        next => settle_end(&mut run.report, &attempt, next),
    };
    run.report.attempts.push(attempt);
    ends
}
