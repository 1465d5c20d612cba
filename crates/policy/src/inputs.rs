//! The `inputs` section: which workspace files may be handed to the code,
//! and which of the repository's own activity (`github:` sources) the bot
//! may fetch for it.

use std::path::Path;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use super::defaults::{DEFAULT_INPUT_GLOBS, strs};
use crate::sources::{GithubSource, Query};
use compute_bot_units::ByteSize;

/// `inputs`: which workspace files may be handed to the code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Inputs {
    /// Glob allowlist of workspace-relative paths (`**/*.csv`).
    #[serde(deserialize_with = "de_globs")]
    pub allow: Vec<String>,
    /// Largest single input file.
    pub max_file_bytes: ByteSize,
    /// Largest total of all input files of one run.
    pub max_total_bytes: ByteSize,
    /// The `github:` sources a request may name (opt-in, none by default):
    /// `pulls`, `reviews`, `issues`, `comments`, `workflow_runs`.
    pub github: Vec<GithubSource>,
    /// The most rows one `github:` source may have (a query's `limit` is
    /// capped by it).
    pub github_max_items: u32,
    /// The most REST requests the `github:` sources of one run may make,
    /// list pages and per-item requests (reviews, pull request sizes) together.
    pub github_max_requests: u32,
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
    /// What the policy says against one parsed `github:` source, or `None`:
    /// it must be opted in (`inputs.github`) and its `limit` within
    /// `inputs.github_max_items`. The request, the watch run and `watch
    /// check` all ask here.
    pub fn github_problem(&self, q: &Query) -> Option<String> {
        let name = q.source.name();
        if !self.github.contains(&q.source) {
            let allowed = if self.github.is_empty() {
                "none".to_string()
            } else {
                self.github
                    .iter()
                    .map(|s| s.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Some(format!(
                "`github:{name}` is not allowed by the policy (sources allowed: {allowed}); add `{name}` to `inputs.github` in the policy file to let requests fetch it"
            ));
        }
        q.limit.filter(|l| *l > self.github_max_items).map(|_| {
            format!(
                "`{}`: `limit` is over the policy's {} rows per source (`inputs.github_max_items`); lower it or raise the policy's",
                q.text, self.github_max_items
            )
        })
    }

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
