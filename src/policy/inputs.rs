//! The `inputs` section: which workspace files may be handed to the code,
//! and which of the repository's own activity (`github:` sources) the bot
//! may fetch for it.

use std::path::Path;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use super::defaults::{DEFAULT_INPUT_GLOBS, strs};
use crate::units::ByteSize;

/// `inputs`: which workspace files may be handed to the code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Inputs {
    /// Glob allowlist of workspace-relative paths (`**/*.csv`).
    #[serde(deserialize_with = "de_globs")]
    pub(crate) allow: Vec<String>,
    /// Largest single input file.
    pub max_file_bytes: ByteSize,
    /// Largest total of all input files of one run.
    pub max_total_bytes: ByteSize,
    /// The `github:` sources a request may name (opt-in, none by default):
    /// `pulls`, `reviews`, `issues`, `comments`, `workflow_runs`.
    pub(crate) github: Vec<GithubSource>,
    /// The most rows one `github:` source may have (a query's `limit` is
    /// capped by it).
    pub(crate) github_max_items: u32,
    /// The most REST requests the `github:` sources of one run may make,
    /// list pages and per-item requests (reviews, pull request sizes) together.
    pub(crate) github_max_requests: u32,
}

/// One kind of the repository's own activity the bot can fetch as a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GithubSource {
    /// Pull requests (`GET /repos/{o}/{r}/pulls`, sizes from `pulls/{n}`).
    Pulls,
    /// Reviews of the fetched pull requests (`pulls/{n}/reviews`).
    Reviews,
    /// Issues and pull requests (`GET /repos/{o}/{r}/issues`).
    Issues,
    /// Issue and pull request comments (`GET /repos/{o}/{r}/issues/comments`).
    Comments,
    /// Workflow runs (`GET /repos/{o}/{r}/actions/runs`).
    WorkflowRuns,
}

impl GithubSource {
    /// Every source, in the order the docs list them.
    pub(crate) const ALL: [GithubSource; 5] = [
        GithubSource::Pulls,
        GithubSource::Reviews,
        GithubSource::Issues,
        GithubSource::Comments,
        GithubSource::WorkflowRuns,
    ];

    /// The name written in `github:<name>` and in the policy.
    pub(crate) fn name(self) -> &'static str {
        match self {
            GithubSource::Pulls => "pulls",
            GithubSource::Reviews => "reviews",
            GithubSource::Issues => "issues",
            GithubSource::Comments => "comments",
            GithubSource::WorkflowRuns => "workflow_runs",
        }
    }

    /// The source named `name`, if any.
    pub(crate) fn parse(name: &str) -> Option<GithubSource> {
        GithubSource::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The workflow token permission (read) the source needs.
    pub(crate) fn permission(self) -> &'static str {
        match self {
            GithubSource::Pulls | GithubSource::Reviews => "pull-requests",
            GithubSource::Issues | GithubSource::Comments => "issues",
            GithubSource::WorkflowRuns => "actions",
        }
    }

    /// Every name, for messages (`pulls`, `reviews`, ...).
    pub(crate) fn names() -> String {
        GithubSource::ALL
            .iter()
            .map(|s| format!("`{}`", s.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl Default for Inputs {
    fn default() -> Self {
        Inputs {
            allow: strs(DEFAULT_INPUT_GLOBS),
            max_file_bytes: ByteSize::mib(16),
            max_total_bytes: ByteSize::mib(64),
            github: Vec::new(),
            github_max_items: 5000,
            github_max_requests: 500,
        }
    }
}

impl Inputs {
    /// True when the workspace-relative `path` matches one of the `allow`
    /// globs. Paths with `..` components or absolute paths never match.
    pub fn is_allowed(&self, path: &str) -> bool {
        let p = Path::new(path);
        if p.is_absolute()
            || p.components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            return false;
        }
        let mut b = globset::GlobSetBuilder::new();
        for g in &self.allow {
            if let Ok(glob) = globset::GlobBuilder::new(g).literal_separator(true).build() {
                b.add(glob);
            }
        }
        b.build().map(|s| s.is_match(p)).unwrap_or(false)
    }
}

fn de_globs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    for g in &v {
        if let Err(e) = globset::GlobBuilder::new(g).literal_separator(true).build() {
            return Err(de::Error::custom(format!(
                "`{g}` is not a valid glob ({e}); write e.g. `data/**/*.csv`"
            )));
        }
    }
    Ok(v)
}
