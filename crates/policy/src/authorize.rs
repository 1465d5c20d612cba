//! Who may do what: the policy's `who` and `escalation` sections and the one
//! place the decision is made ([`Policy::authorize`](crate::Policy::authorize)).
//! The front ends only say who asks ([`Actor`]) for what ([`Act`]) and word
//! the answer.

use serde::{Deserialize, Serialize};

/// A user's permission on a repository (GitHub's levels), weakest first so
/// `>=` compares. The one permission type: the policy's minimums and what
/// the GitHub API answers.
///
/// `None` (no access, what GitHub answers for a non-collaborator) is a level
/// a user can have but not one a policy can ask for: `min_permission: none`
/// is refused when the policy is read (it would let anyone run code).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    /// No access.
    #[serde(skip_deserializing)]
    None,
    /// Can read the repository.
    Read,
    /// Can manage issues and pull requests without write access.
    Triage,
    /// Can push to the repository.
    Write,
    /// Can manage the repository without access to sensitive actions.
    Maintain,
    /// Full access.
    Admin,
}

impl Permission {
    /// All values, lowest first.
    pub const ALL: [Permission; 6] = [
        Permission::None,
        Permission::Read,
        Permission::Triage,
        Permission::Write,
        Permission::Maintain,
        Permission::Admin,
    ];

    /// The name GitHub uses (`admin`, `maintain`, `write`, `triage`, `read`, `none`).
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::None => "none",
            Permission::Read => "read",
            Permission::Triage => "triage",
            Permission::Write => "write",
            Permission::Maintain => "maintain",
            Permission::Admin => "admin",
        }
    }
}

impl std::fmt::Display for Permission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Permission {
    type Err = String;

    /// Accepts GitHub's names (case-insensitive); `pull` / `push` as the legacy aliases.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "none" => Permission::None,
            "read" | "pull" => Permission::Read,
            "triage" => Permission::Triage,
            "write" | "push" => Permission::Write,
            "maintain" => Permission::Maintain,
            "admin" => Permission::Admin,
            other => {
                return Err(format!(
                    "`{other}` is not a permission; use one of none, read, triage, write, maintain, admin"
                ));
            }
        })
    }
}

/// `who`: who may trigger runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Who {
    /// GitHub logins allowed to trigger runs; empty means anyone who has
    /// `min_permission` on the repository.
    pub(crate) users: Vec<String>,
    /// The weakest repository permission that may trigger runs.
    pub min_permission: Permission,
    /// Whether bot accounts (`[bot]` logins, `type: Bot`) may trigger runs.
    pub allow_bots: bool,
    /// Whether an edited comment may trigger a run (off: an edit could swap
    /// the question after someone reviewed it).
    pub allow_edited_comments: bool,
}

impl Default for Who {
    fn default() -> Self {
        Who {
            users: Vec::new(),
            min_permission: Permission::Write,
            allow_bots: false,
            allow_edited_comments: false,
        }
    }
}

/// `escalation`: who may approve code that escalated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Escalation {
    /// GitHub logins that may approve; empty means anyone with
    /// `min_permission`.
    approvers: Vec<String>,
    /// The weakest repository permission an approver needs.
    pub min_permission: Permission,
}

impl Default for Escalation {
    fn default() -> Self {
        Escalation {
            approvers: Vec::new(),
            min_permission: Permission::Maintain,
        }
    }
}

/// What someone asks the bot to do. `who` governs runs (and replays),
/// `escalation` approvals and denials of escalated code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// Run code or replay a result.
    Run,
    /// Approve code that waits for a human.
    Approve,
    /// Deny code that waits for a human.
    Deny,
}

/// Who asks, as the trigger shows them (nothing looked up).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// The GitHub login.
    pub login: String,
    /// A bot account (`type: Bot`, a `[bot]` login).
    pub is_bot: bool,
    /// The request is an edited comment.
    pub edited: bool,
}

/// Why the policy does not take a request at all. Such a request is ignored
/// with a notice: nothing is posted and no permission is looked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ignored {
    /// A bot account, and the policy does not allow bots (`who.allow_bots`).
    Bot {
        /// The login.
        login: String,
    },
    /// An edited comment, and the policy does not allow them
    /// (`who.allow_edited_comments`).
    Edited,
}

impl std::fmt::Display for Ignored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ignored::Bot { login } => write!(
                f,
                "comments by bots (`{login}`) are ignored; the policy does not let bots trigger runs (who.allow_bots)"
            ),
            Ignored::Edited => f.write_str(
                "edited comments are ignored (who.allow_edited_comments); post a new comment",
            ),
        }
    }
}

/// Why the policy refuses someone a request it takes: the one reason both
/// the decision and the reply are made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The policy lists logins and this one is not among them.
    NotListed {
        /// The login.
        login: String,
        /// The list: `who.users` or `escalation.approvers`.
        field: &'static str,
    },
    /// The permission on the repository is below the policy's minimum.
    BelowMinimum {
        /// The login.
        login: String,
        /// What they have.
        has: Permission,
        /// What the policy needs.
        needs: Permission,
        /// The setting: `who.min_permission` or `escalation.min_permission`.
        field: &'static str,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NotListed { login, field } => {
                write!(f, "`{login}` is not in the policy's list ({field})")
            }
            Refusal::BelowMinimum {
                login,
                has,
                needs,
                field,
            } => write!(
                f,
                "`{login}` has {has} permission; the policy needs at least {needs} ({field})"
            ),
        }
    }
}

/// The policy's answer to a request before the asker's permission is known.
#[derive(Debug)]
#[must_use]
pub enum Authorization<'p> {
    /// Not taken at all (see [`Ignored`]); no permission needs looking up.
    Ignore(Ignored),
    /// Taken; whether it may go on depends on the asker's permission on the
    /// repository, which the caller looks up and hands to
    /// [`PermissionCheck::decide`].
    NeedsPermission(PermissionCheck<'p>),
}

/// The second step of [`Policy::authorize`](crate::Policy::authorize): who asks, and the section that
/// governs what they ask for.
#[derive(Debug)]
pub struct PermissionCheck<'p> {
    login: String,
    gate: Gate<'p>,
}

/// A section's allowlist and minimum permission, with their keys for the
/// reason.
#[derive(Debug, Clone, Copy)]
struct Gate<'p> {
    logins: &'p [String],
    logins_key: &'static str,
    min: Permission,
    min_key: &'static str,
}

/// Who may do what, decided here and nowhere else: the body of
/// [`Policy::authorize`](crate::Policy::authorize) (which documents
/// it), over the two sections that decide.
pub(super) fn authorize<'p>(
    who: &'p Who,
    escalation: &'p Escalation,
    actor: &Actor,
    act: Act,
) -> Authorization<'p> {
    if actor.edited && !who.allow_edited_comments {
        return Authorization::Ignore(Ignored::Edited);
    }
    if actor.is_bot && !who.allow_bots {
        return Authorization::Ignore(Ignored::Bot {
            login: actor.login.clone(),
        });
    }
    let gate = match act {
        Act::Run => Gate {
            logins: &who.users,
            logins_key: "who.users",
            min: who.min_permission,
            min_key: "who.min_permission",
        },
        Act::Approve | Act::Deny => Gate {
            logins: &escalation.approvers,
            logins_key: "escalation.approvers",
            min: escalation.min_permission,
            min_key: "escalation.min_permission",
        },
    };
    Authorization::NeedsPermission(PermissionCheck {
        login: actor.login.clone(),
        gate,
    })
}

impl PermissionCheck<'_> {
    /// Who asks.
    pub fn login(&self) -> &str {
        &self.login
    }

    /// Whether the request may go on, given the asker's permission on the
    /// repository; `Err` says why not (its `Display` is fit for a reply).
    pub fn decide(self, has: Permission) -> Result<(), Refusal> {
        let Gate {
            logins,
            logins_key,
            min,
            min_key,
        } = self.gate;
        if !logins.is_empty() && !logins.iter().any(|u| u.eq_ignore_ascii_case(&self.login)) {
            return Err(Refusal::NotListed {
                login: self.login,
                field: logins_key,
            });
        }
        if has == Permission::None || has < min {
            return Err(Refusal::BelowMinimum {
                login: self.login,
                has,
                needs: min,
                field: min_key,
            });
        }
        Ok(())
    }
}
