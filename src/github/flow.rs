//! Screening a trigger before any API call: is it a command at all?
//!
//! Only the shape of the request is looked at here: a comment that does not
//! start with the command is ignored, a workflow run goes on. Who may do what
//! is the policy's alone ([`crate::policy::Policy::authorize`]): this module
//! only says who asks ([`Actor`]) with what the event shows of them.

use crate::github::actions::event::Trigger;
use crate::github::command::{self, Command};
use crate::policy::Actor;

/// The outcome of [`screen`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Screened {
    /// A comment command, for the policy to authorize.
    Comment {
        /// The parsed command.
        command: Command,
        /// Who wrote it, as the event shows them.
        author: Actor,
    },
    /// A dispatch or schedule run: whoever can start the workflow may run it.
    Workflow,
    /// Nothing to do; the reason is for a notice.
    Ignore(String),
}

/// Looks at a trigger before any API call and before the policy is read:
/// events the bot does not act on and comments without the command are
/// ignored.
pub fn screen(trigger: &Trigger, prefix: &str) -> Screened {
    match trigger {
        Trigger::Ignored { reason } => Screened::Ignore(reason.clone()),
        Trigger::Dispatch { .. }
        | Trigger::Schedule { .. }
        | Trigger::Watches { .. }
        | Trigger::PullRequest { .. } => Screened::Workflow,
        Trigger::Comment {
            author_login,
            author_is_bot,
            body,
            edited,
            ..
        } => match command::parse(body, prefix) {
            None => Screened::Ignore(format!("the comment does not start with `{prefix}`")),
            Some(command) => Screened::Comment {
                command,
                author: Actor {
                    login: author_login.clone(),
                    is_bot: *author_is_bot,
                    edited: *edited,
                },
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::github::actions::event::RepoRef;
    use crate::policy::{Act, Authorization, Policy};

    fn comment(body: &str, login: &str, bot: bool, edited: bool) -> Trigger {
        Trigger::Comment {
            repo: RepoRef {
                owner: "o".into(),
                name: "r".into(),
            },
            issue_number: 1,
            is_pull_request: false,
            comment_id: 2,
            author_login: login.into(),
            author_is_bot: bot,
            body: body.into(),
            edited,
        }
    }

    /// Screening, then the policy: what the default policy ignores before
    /// any API call.
    fn ignored(trigger: &Trigger, policy: &Policy) -> Option<String> {
        match screen(trigger, "/compute") {
            Screened::Ignore(r) => Some(r),
            Screened::Comment { author, .. } => match policy.authorize(&author, Act::Run) {
                Authorization::Ignore(why) => Some(why.to_string()),
                Authorization::NeedsPermission(_) => None,
            },
            Screened::Workflow => None,
        }
    }

    #[test]
    fn screen_ignores_non_commands_and_the_policy_edits_and_bots() {
        let strict = Policy::default();
        assert!(ignored(&comment("hello", "a", false, false), &strict).is_some());
        assert!(matches!(
            ignored(&comment("/compute x", "a", false, true), &strict),
            Some(r) if r.contains("edited")
        ));
        assert!(matches!(
            ignored(&comment("/compute x", "dependabot[bot]", true, false), &strict),
            Some(r) if r.contains("bots")
        ));
        let mut lenient = Policy::default();
        lenient.who.allow_bots = true;
        lenient.who.allow_edited_comments = true;
        assert!(matches!(
            screen(&comment("/compute x", "dependabot[bot]", true, true), "/compute"),
            Screened::Comment { ref author, .. } if author.is_bot && author.edited
        ));
        assert_eq!(
            ignored(
                &comment("/compute x", "dependabot[bot]", true, true),
                &lenient
            ),
            None
        );
        assert_eq!(
            screen(
                &Trigger::Schedule {
                    goal: Some("g".into()),
                    code: None,
                    inputs: vec![],
                    issue: None
                },
                "/compute",
            ),
            Screened::Workflow
        );
    }
}
