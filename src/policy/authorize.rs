//! Who may do what: the policy's `who` and `escalation` sections and the
//! one decision made from them.

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

/// `who`: who may trigger runs (used by the GitHub front end).
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

/// Why the policy does not let someone do something: the one reason both
/// the decision and the reply are made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A bot account, and the policy does not allow bots (`who.allow_bots`).
    Bot {
        /// The login.
        login: String,
    },
    /// An edited comment, and the policy does not allow them
    /// (`who.allow_edited_comments`).
    Edited,
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
            Refusal::Bot { login } => write!(
                f,
                "`{login}` is a bot account; the policy does not let bots trigger runs (who.allow_bots)"
            ),
            Refusal::Edited => f.write_str(
                "edited comments do not trigger runs (who.allow_edited_comments); post a new comment",
            ),
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

/// `permission` against a policy's minimum: no access (`None`) is never enough.
fn meets(permission: Permission, min: Permission) -> bool {
    permission != Permission::None && permission >= min
}

fn listed(list: &[String], login: &str) -> bool {
    list.is_empty() || list.iter().any(|u| u.eq_ignore_ascii_case(login))
}

impl Who {
    /// Whether `login` (with `permission` on the repository) may trigger a
    /// run; `Err` says why not (its `Display` is fit for a reply). Logins
    /// compare case-insensitively, as on GitHub.
    pub fn permits(
        &self,
        login: &str,
        permission: Permission,
        is_bot: bool,
        edited: bool,
    ) -> Result<(), Refusal> {
        if is_bot && !self.allow_bots {
            return Err(Refusal::Bot {
                login: login.to_string(),
            });
        }
        if edited && !self.allow_edited_comments {
            return Err(Refusal::Edited);
        }
        if !listed(&self.users, login) {
            return Err(Refusal::NotListed {
                login: login.to_string(),
                field: "who.users",
            });
        }
        if !meets(permission, self.min_permission) {
            return Err(Refusal::BelowMinimum {
                login: login.to_string(),
                has: permission,
                needs: self.min_permission,
                field: "who.min_permission",
            });
        }
        Ok(())
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

impl Escalation {
    /// Whether `login` (with `permission` on the repository) may approve or
    /// deny escalated code; `Err` says why not. Logins compare
    /// case-insensitively.
    pub(crate) fn permits(&self, login: &str, permission: Permission) -> Result<(), Refusal> {
        if !listed(&self.approvers, login) {
            return Err(Refusal::NotListed {
                login: login.to_string(),
                field: "escalation.approvers",
            });
        }
        if !meets(permission, self.min_permission) {
            return Err(Refusal::BelowMinimum {
                login: login.to_string(),
                has: permission,
                needs: self.min_permission,
                field: "escalation.min_permission",
            });
        }
        Ok(())
    }

    /// [`Escalation::permits`] as a yes or no.
    pub fn may_approve(&self, login: &str, permission: Permission) -> bool {
        self.permits(login, permission).is_ok()
    }
}
