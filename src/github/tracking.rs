//! The one tracking comment of a workflow run: created (or found again on a
//! re-run) at the start, edited through the stages, finally replaced by the
//! result.

use crate::github::rest::client::{GitHub, GitHubError};
use crate::github::texts::{self, Step};

/// Keeps the id of this run's tracking comment on one issue or pull request.
#[derive(Debug)]
pub struct Tracker<'a> {
    gh: &'a GitHub,
    issue: u64,
    marker: String,
    run_url: Option<String>,
    id: Option<u64>,
}

impl<'a> Tracker<'a> {
    /// A tracker for `issue`; `marker` is [`texts::run_marker`] of this run.
    pub fn new(gh: &'a GitHub, issue: u64, marker: String, run_url: Option<String>) -> Self {
        Tracker {
            gh,
            issue,
            marker,
            run_url,
            id: None,
        }
    }

    /// The comment id, once the comment exists.
    pub(crate) fn comment_id(&self) -> Option<u64> {
        self.id
    }

    async fn write(&mut self, body: &str) -> Result<u64, GitHubError> {
        let body = if body.contains(&self.marker) {
            body.to_string()
        } else {
            format!("{}\n{body}", self.marker)
        };
        let id = match self.id {
            Some(id) => {
                self.gh.update_comment(id, &body).await?;
                id
            }
            None => self.find_or_create(&body).await?,
        };
        self.id = Some(id);
        Ok(id)
    }

    /// Edits this run's comment from an earlier attempt (a re-run) if there
    /// is one, else creates it. When the comments cannot be listed, the
    /// comment is created anyway: a result reaches the thread whenever any
    /// write can succeed (a re-run may then add a second comment).
    async fn find_or_create(&self, body: &str) -> Result<u64, GitHubError> {
        match self
            .gh
            .find_tracking_comment(self.issue, &self.marker)
            .await
        {
            Ok(Some((id, _))) => {
                self.gh.update_comment(id, body).await?;
                Ok(id)
            }
            Ok(None) => self.gh.create_comment(self.issue, body).await,
            Err(e) => {
                tracing::warn!(
                    "cannot list the comments to find this run's comment ({e}); creating one"
                );
                self.gh.create_comment(self.issue, body).await
            }
        }
    }

    /// Posts (or, on a re-run, rewrites) the "got it, starting" comment.
    pub async fn acknowledge(&mut self) -> Result<u64, GitHubError> {
        let body = texts::acknowledged(&self.marker, self.run_url.as_deref());
        self.write(&body).await
    }

    /// Shows the current stage.
    pub async fn stage(
        &mut self,
        stage: Step,
        attempt: u32,
        max_attempts: u32,
    ) -> Result<u64, GitHubError> {
        self.stage_noted(stage, attempt, max_attempts, None).await
    }

    /// Shows the current stage with a note after it (the sandbox image's
    /// pull progress).
    pub async fn stage_noted(
        &mut self,
        stage: Step,
        attempt: u32,
        max_attempts: u32,
        note: Option<&str>,
    ) -> Result<u64, GitHubError> {
        let body = texts::progress(
            &self.marker,
            stage,
            attempt,
            max_attempts,
            note,
            self.run_url.as_deref(),
        );
        self.write(&body).await
    }

    /// Replaces the comment with the final text (e.g. [`crate::render::markdown`]
    /// rendered with this marker). The marker is added when missing.
    pub async fn finish(&mut self, body: &str) -> Result<u64, GitHubError> {
        self.write(body).await
    }
}
