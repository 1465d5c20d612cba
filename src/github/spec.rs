//! One run specification ([`RunSpec`]): what a run is asked to do, built
//! once where the request comes in — a `/compute` or `/compute plan`
//! comment ([`RunSpec::asked`]), an approval or a run of a plan (the
//! request the bot's comment shows, [`RunSpec::shown`]), a dispatch or
//! schedule run ([`RunSpec::dispatched`]), a watch ([`RunSpec::of_watch`])
//! — and taken through the loop unchanged: the agent's
//! [`Request`] ([`RunSpec::request`]) and the request an answer records
//! ([`RunSpec::recorded`]) are made from it, nowhere else.
use serde_json::Value;

use crate::agent::Request;
use crate::github::command::{self, Ask};
use crate::github::followup::EarlierAnswer;
use crate::github::inputs::{self, InputProblem};
use crate::github::texts::{PendingInput, PendingRequest};
use crate::sandbox::InputFile;
use crate::watch_spec::Watch;

/// Who approved which code, for an approved run.
#[derive(Debug, Default)]
pub(crate) struct Approval {
    pub(crate) by: String,
    pub(crate) sha256: String,
    pub(crate) request_url: String,
    /// For code escalated in a session: the steps that ran before it
    /// without an error (read back from the pending comment, hash checked);
    /// they run first, in the same session.
    pub(crate) before: Vec<crate::github::texts::StepBefore>,
}

/// Where the code of a run of a plan (`/compute run`) came from.
#[derive(Debug, Default)]
pub(crate) struct FromPlan {
    pub(crate) by: String,
    pub(crate) sha256: String,
    pub(crate) plan_url: String,
}

/// What one run is asked to do (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct RunSpec {
    pub(crate) goal: Option<String>,
    pub(crate) code: Option<String>,
    /// The checkout's file the comment names as the code (`code=`); read
    /// into `code` by [`RunSpec::take_named_code`].
    pub(crate) code_file: Option<String>,
    /// What the answer's notes say about code read from the checkout (a
    /// notebook's cells as steps).
    pub(crate) code_note: Option<String>,
    pub(crate) context: Option<String>,
    /// Paths named on purpose (workspace files and `github:` sources).
    pub(crate) inputs: Vec<String>,
    /// A JSON Schema in place of the policy's (a watch's `schema`).
    pub(crate) schema: Option<Value>,
    /// The SHA-256 the code must have (a watch's `code_sha256`).
    pub(crate) pinned_sha256: Option<String>,
    /// For an approved run or a run of a plan: the inputs (and hashes) the
    /// comment showed; no paths are taken from the goal then.
    pub(crate) expected_inputs: Option<Vec<PendingInput>>,
    /// Set for an approved run: who approved which code.
    pub(crate) approval: Option<Approval>,
    /// Plan only (`/compute plan`): generate and check, run nothing; the
    /// plan is posted as a new comment that the bot never edits.
    pub(crate) plan_only: bool,
    /// Set for a run of a plan: who asked, which plan, which code.
    pub(crate) from_plan: Option<FromPlan>,
    /// For a follow-up: the earlier answer it builds on (its inputs are
    /// taken when the run names none).
    pub(crate) earlier: Option<EarlierAnswer>,
}

/// `Some` unless blank.
fn given(text: String) -> Option<String> {
    Some(text).filter(|t| !t.trim().is_empty())
}

impl RunSpec {
    /// The run a `/compute` or `/compute plan` comment asks for (blank
    /// goal, context and code are none), to run; the plan handler sets
    /// `plan_only`, and each handler adds the earlier answer.
    pub(crate) fn asked(ask: &Ask) -> RunSpec {
        RunSpec {
            goal: given(ask.goal.clone()),
            code: ask.code.clone().and_then(given),
            code_file: ask.options.get("code").cloned().and_then(given),
            context: given(ask.context.clone()),
            inputs: command::inputs_option(&ask.options),
            ..RunSpec::default()
        }
    }

    /// The run of a `workflow_dispatch` or `schedule` event's inputs.
    pub(crate) fn dispatched(
        goal: Option<String>,
        code: Option<String>,
        inputs: Vec<String>,
    ) -> RunSpec {
        RunSpec {
            goal,
            code,
            inputs,
            ..RunSpec::default()
        }
    }

    /// The run of a watch: its goal or pinned code and its schema (its
    /// inputs and checks are the watch runner's).
    pub(crate) fn of_watch(w: &Watch) -> RunSpec {
        RunSpec {
            goal: w.goal.clone(),
            code: w.code.clone(),
            schema: w.schema.clone(),
            pinned_sha256: w.code_sha256.clone(),
            ..RunSpec::default()
        }
    }

    /// A run of exactly `code` as shown in one of the bot's comments, with
    /// that comment's request (goal, context, the inputs with the hashes
    /// shown); approval and plan runs add who let it run.
    pub(crate) fn shown(request: PendingRequest, code: String) -> RunSpec {
        RunSpec {
            goal: request.goal,
            code: Some(code),
            context: request.context,
            inputs: request.inputs.iter().map(|i| i.path.clone()).collect(),
            expected_inputs: Some(request.inputs),
            ..RunSpec::default()
        }
    }

    /// Reads the code the request names in the checkout at `workspace`
    /// into `code`: the `code=` file, else the one `.ipynb` notebook the
    /// goal or context mentions (see [`inputs::named_code`]; a notebook's
    /// cells run as steps when `steps`). A fenced block and `code=` together
    /// are a problem; a fenced block alone wins over a mentioned notebook.
    pub(crate) fn take_named_code(
        &mut self,
        workspace: &std::path::Path,
        steps: bool,
    ) -> Result<(), InputProblem> {
        let has_block = self.code.is_some();
        if has_block && self.code_file.is_none() {
            return Ok(());
        }
        if let (true, Some(file)) = (has_block, &self.code_file) {
            return Err(InputProblem {
                path: file.clone(),
                problem: "is named with `code=`, and the comment has a fenced code block too; keep one of them".into(),
            });
        }
        let mentioned = [self.goal.as_deref(), self.context.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("\n");
        if let Some(named) =
            inputs::named_code(workspace, self.code_file.as_deref(), &mentioned, steps)?
        {
            self.code = Some(named.program.code);
            self.code_note = named.program.note;
            self.code_file = Some(named.path);
        }
        Ok(())
    }

    /// Whether the run has exact code: the `code` given, or a fenced block
    /// in the goal (then no model writes it).
    pub(crate) fn has_code(&self) -> bool {
        self.code.as_deref().is_some_and(|c| !c.trim().is_empty())
            || self
                .goal
                .as_deref()
                .and_then(crate::prompt::extract_fenced_code)
                .is_some_and(|c| !c.trim().is_empty())
    }

    /// The agent's request for this run, on `inputs` with `context` (the
    /// run's context with what its `github:` sources are).
    pub(crate) fn request(&self, inputs: Vec<InputFile>, context: Option<String>) -> Request {
        Request {
            goal: self.goal.clone(),
            code: self.code.clone(),
            inputs,
            schema: self.schema.clone(),
            context,
            approved_sha256: self.approval.as_ref().map(|a| a.sha256.clone()),
            pinned_sha256: self.pinned_sha256.clone(),
            plan_only: self.plan_only,
            earlier: self.earlier.as_ref().map(|e| e.answer.clone()),
            before: self
                .approval
                .iter()
                .flat_map(|a| &a.before)
                .map(|s| crate::prompt::EarlierStep {
                    code: Some(s.code.clone()),
                    code_sha256: crate::sandbox::sha256_hex(s.code.as_bytes()),
                    stdout_sha256: s.stdout_sha256.clone(),
                    error: false,
                })
                .collect(),
        }
    }

    /// What an answer records of its request (goal, context, the inputs
    /// `shown` with their hashes): an approval or a plan's run takes it, a
    /// follow-up builds on it.
    pub(crate) fn recorded(&self, shown: &[PendingInput]) -> PendingRequest {
        PendingRequest {
            goal: self.goal.clone(),
            context: self.context.clone(),
            inputs: shown.to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::github::command::{Command, parse};

    /// The run of a `/compute` or `/compute plan` command, as its handler
    /// builds it.
    fn spec_of(command: &Command) -> RunSpec {
        let (Command::Run(ask) | Command::Plan(ask)) = command else {
            panic!("not a run: {command:?}");
        };
        let spec = RunSpec::asked(ask);
        RunSpec {
            plan_only: matches!(command, Command::Plan(_)),
            ..spec
        }
    }

    #[test]
    fn a_comment_a_plan_and_nothing_else_name_a_run() {
        let cmd = parse(
            "/compute inputs=data/a.csv mean\nper day\n```python\nprint(1)\n```",
            "/compute",
        )
        .unwrap();
        let spec = spec_of(&cmd);
        assert_eq!(spec.goal.as_deref(), Some("mean"));
        assert_eq!(spec.context.as_deref(), Some("per day"));
        assert_eq!(spec.code.as_deref(), Some("print(1)\n"));
        assert_eq!(spec.inputs, vec!["data/a.csv"]);
        assert!(!spec.plan_only && spec.has_code());
        let plan = spec_of(&parse("/compute plan mean", "/compute").unwrap());
        assert!(plan.plan_only && !plan.has_code() && plan.context.is_none());
        let blank = spec_of(&parse("/compute \n```python\n \n```", "/compute").unwrap());
        assert!(blank.goal.is_none() && blank.code.is_none());
    }

    #[test]
    fn the_request_and_the_record_come_from_the_spec() {
        let spec = RunSpec {
            goal: Some("g".into()),
            context: Some("c".into()),
            approval: Some(Approval {
                sha256: "ab".into(),
                ..Approval::default()
            }),
            pinned_sha256: Some("cd".into()),
            ..RunSpec::default()
        };
        let r = spec.request(Vec::new(), Some("c and sources".into()));
        assert_eq!(r.goal.as_deref(), Some("g"));
        assert_eq!(r.context.as_deref(), Some("c and sources"));
        assert_eq!(r.approved_sha256.as_deref(), Some("ab"));
        assert_eq!(r.pinned_sha256.as_deref(), Some("cd"));
        let rec = spec.recorded(&[]);
        assert_eq!(
            (rec.goal.as_deref(), rec.context.as_deref()),
            (Some("g"), Some("c"))
        );
    }
}
