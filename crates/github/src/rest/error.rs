//! What a failed GitHub call was ([`GitHubError`], never with the token in
//! it), and which permission a call needs ([`Need`]) so that a 403 or 404
//! says which `permissions:` the workflow token lacks.

/// What a failed GitHub call was, with what to do about it. Never contains the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GitHubError {
    /// GitHub answered with an error status.
    #[error("{action} failed: GitHub answered HTTP {status} ({message}).{hint}")]
    Api {
        /// What the bot was doing.
        action: String,
        /// The HTTP status.
        status: u16,
        /// GitHub's message.
        message: String,
        /// What to change (starts with a space, or is empty).
        hint: String,
    },
    /// No answer: connection refused, reset, timed out.
    #[error(
        "{action} failed: could not reach the GitHub API at {api_url} after {tries} tries: {message}"
    )]
    Transport {
        /// What the bot was doing.
        action: String,
        /// The API root.
        api_url: String,
        /// How many tries were made.
        tries: u32,
        /// The last error.
        message: String,
    },
    /// The answer could not be read.
    #[error("{action} failed: the answer from GitHub could not be read: {message}")]
    Decode {
        /// What the bot was doing.
        action: String,
        /// The parser's message.
        message: String,
    },
    /// GitHub's rate limit lasts longer than the wait budget left.
    #[error(
        "{action} failed: rate limited until {until} (GitHub's {kind} rate limit: {message}). compute-bot waits for rate limits at most {budget_secs} s per run (COMPUTE_BOT_GITHUB_WAIT) and had waited {waited_secs} s; re-run the job after {until}."
    )]
    RateLimited {
        /// What the bot was doing.
        action: String,
        /// `primary` or `secondary`.
        kind: String,
        /// Until when GitHub refuses requests (RFC 3339, UTC).
        until: String,
        /// GitHub's message, or why the request was not sent.
        message: String,
        /// Seconds already waited on rate limits in this run.
        waited_secs: u64,
        /// The wait budget in seconds.
        budget_secs: u64,
    },
    /// The client could not be built (bad `GITHUB_API_URL`, ...).
    #[error("cannot set up the GitHub client: {0}")]
    Setup(String),
}

impl GitHubError {
    /// The HTTP status, when GitHub answered (rate limits have none: they are
    /// not a 403 about permissions).
    pub fn status(&self) -> Option<u16> {
        match self {
            GitHubError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// True for [`GitHubError::RateLimited`].
    pub fn is_rate_limited(&self) -> bool {
        matches!(self, GitHubError::RateLimited { .. })
    }
}

/// Which permission a call needs, for the 403/404 hint.
#[derive(Clone, Copy)]
pub enum Need {
    /// Comments and reactions, written.
    WriteComments,
    /// Issue and pull-request comments, read.
    ReadComments,
    /// A collaborator's permission on the repository.
    Collaborators,
    /// Blobs, trees, commits and refs (the Git Data API).
    WriteContents,
    /// Files, blobs, trees, commits and refs at a ref.
    ReadContents,
    /// A pull request and its files.
    ReadPulls,
    /// The issues list and the repository's issue comments.
    ReadIssues,
    /// Workflow runs.
    ReadActions,
}

impl Need {
    pub(super) fn hint(self) -> &'static str {
        match self {
            Need::WriteComments => {
                " The workflow token cannot write comments or reactions here: give the job `permissions: issues: write` (and `pull-requests: write` to comment on pull requests) in the workflow file."
            }
            Need::ReadComments => {
                " The workflow token cannot read comments here: give the job `permissions: issues: read` (and `pull-requests: read` for pull requests), or `issues: write` which includes it."
            }
            Need::Collaborators => {
                " The workflow token cannot read collaborator permissions: it needs `metadata: read` on this repository (every workflow token has it unless `permissions:` is set to `{}`); a 404 also means the user or repository does not exist."
            }
            Need::WriteContents => {
                " The workflow token cannot write to this repository: give the job `permissions: contents: write` in the workflow file. A pull request from a fork always runs with a read-only token; there nothing can be committed."
            }
            Need::ReadContents => {
                " The workflow token cannot read this repository's files: give the job `permissions: contents: read` (or `contents: write`, which includes it); a 404 also means the path, ref or repository does not exist."
            }
            Need::ReadPulls => {
                " The workflow token cannot read pull requests here: give the job `permissions: pull-requests: read` (or `pull-requests: write`); a 404 also means the pull request does not exist."
            }
            Need::ReadIssues => {
                " The workflow token cannot read issues here: give the job `permissions: issues: read` (or `issues: write`)."
            }
            Need::ReadActions => {
                " The workflow token cannot read workflow runs here: give the job `permissions: actions: read`."
            }
        }
    }
}
