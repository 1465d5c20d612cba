//! Pure decisions (who may run what), taking plain data so they can be tested
//! without GitHub: the policy's own [`Who`] decides.
//!
//! Order for a comment: [`screen`] first (no API call: is it a command, is the
//! author a bot, is it an edit?); then the orchestration fetches the author's
//! permission and decides with the policy's own rules (`policy::Who::permits`,
//! `policy::Escalation::permits`, and their `Refusal` for the reply) — one
//! source of truth for who may do what.

use crate::github::command::{self, Command};
use crate::github::event::Trigger;
use crate::policy::Who;

/// What to do with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Go on.
    Proceed,
    /// Reply with this text (ready to post) and a 👎; run nothing.
    Refuse(String),
}

/// The outcome of [`screen`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Screened {
    /// A comment command that needs the author's permission checked.
    Comment {
        /// The parsed command.
        command: Command,
        /// Who wrote it.
        author: String,
    },
    /// A dispatch or schedule run: whoever can start the workflow may run it.
    Workflow,
    /// Nothing to do; the reason is for a notice.
    Ignore(String),
}

/// Looks at a trigger before any API call: comments without the command,
/// edited comments (unless allowed) and bots (unless allowed) are ignored.
pub fn screen(trigger: &Trigger, prefix: &str, who: &Who) -> Screened {
    match trigger {
        Trigger::Ignored { reason } => Screened::Ignore(reason.clone()),
        Trigger::Dispatch { .. } | Trigger::Schedule { .. } => Screened::Workflow,
        Trigger::Comment {
            author_login,
            author_is_bot,
            body,
            edited,
            ..
        } => {
            let Some(command) = command::parse(body, prefix) else {
                return Screened::Ignore(format!("the comment does not start with `{prefix}`"));
            };
            if *edited && !who.allow_edited_comments {
                return Screened::Ignore(
                    "edited comments are ignored (the policy's `who` does not allow them)".into(),
                );
            }
            if *author_is_bot && !who.allow_bots {
                return Screened::Ignore(format!(
                    "comments by bots ({author_login}) are ignored unless the policy allows bots"
                ));
            }
            Screened::Comment {
                command,
                author: author_login.clone(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::github::event::RepoRef;

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

    #[test]
    fn screen_ignores_non_commands_edits_and_bots() {
        let who = Who::default();
        assert!(matches!(
            screen(&comment("hello", "a", false, false), "/compute", &who),
            Screened::Ignore(_)
        ));
        assert!(matches!(
            screen(&comment("/compute x", "a", false, true), "/compute", &who),
            Screened::Ignore(r) if r.contains("edited")
        ));
        assert!(matches!(
            screen(&comment("/compute x", "dependabot[bot]", true, false), "/compute", &who),
            Screened::Ignore(r) if r.contains("bots")
        ));
        let lenient = Who {
            allow_bots: true,
            allow_edited_comments: true,
            ..Who::default()
        };
        assert!(matches!(
            screen(
                &comment("/compute x", "dependabot[bot]", true, true),
                "/compute",
                &lenient
            ),
            Screened::Comment { .. }
        ));
        assert_eq!(
            screen(
                &Trigger::Schedule {
                    goal: Some("g".into()),
                    code: None,
                    inputs: vec![],
                    issue: None
                },
                "/compute",
                &who
            ),
            Screened::Workflow
        );
    }
}
