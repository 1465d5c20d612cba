//! The comment calls: who may ask (the asker's permission), reactions,
//! comments created, edited, read and listed, and the run's tracking
//! comment found and kept up to date. Each goes through the client's
//! retries and rate limits ([`GitHub::call`]).

use octocrab::models::issues::Comment;
use octocrab::models::reactions::ReactionContent;

use crate::actions::event::is_bot;
use tracing::{debug, warn};

use crate::rest::client::{GitHub, PER_PAGE, encode_segment};
use crate::rest::error::{GitHubError, Need};
use compute_bot_policy::Permission;

/// Reactions the bot puts on comments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reaction {
    /// 👀 — seen, working on it.
    Eyes,
    /// 🚀 — done.
    Rocket,
    /// 😕 — failed.
    Confused,
    /// 👎 — refused.
    MinusOne,
    /// 👍 — approved.
    PlusOne,
}

impl Reaction {
    /// GitHub's name for it (`eyes`, `rocket`, `confused`, `-1`, `+1`).
    fn as_str(self) -> &'static str {
        match self {
            Reaction::Eyes => "eyes",
            Reaction::Rocket => "rocket",
            Reaction::Confused => "confused",
            Reaction::MinusOne => "-1",
            Reaction::PlusOne => "+1",
        }
    }

    fn content(self) -> ReactionContent {
        match self {
            Reaction::Eyes => ReactionContent::Eyes,
            Reaction::Rocket => ReactionContent::Rocket,
            Reaction::Confused => ReactionContent::Confused,
            Reaction::MinusOne => ReactionContent::MinusOne,
            Reaction::PlusOne => ReactionContent::PlusOne,
        }
    }
}

/// A comment as the bot needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentInfo {
    /// The comment id.
    pub id: u64,
    /// The text (empty when GitHub sent none).
    pub body: String,
    /// The author's login.
    pub author_login: String,
    /// True when the author is a bot (`type: Bot` or a `[bot]` login).
    author_is_bot: bool,
    /// The comment's web address.
    pub html_url: String,
    /// True when GitHub says it was changed after it was written
    /// (`updated_at` later than `created_at`; both have one-second precision).
    pub edited: bool,
}

impl From<Comment> for CommentInfo {
    fn from(c: Comment) -> Self {
        CommentInfo {
            id: c.id.into_inner(),
            body: c.body.unwrap_or_default(),
            author_is_bot: is_bot(&c.user.login, Some(&c.user.r#type)),
            author_login: c.user.login,
            html_url: c.html_url.to_string(),
            edited: c.updated_at.is_some_and(|u| u > c.created_at),
        }
    }
}

impl GitHub {
    /// The user's permission on the repository, from a raw
    /// `GET /repos/{o}/{r}/collaborators/{user}/permission` (octocrab's typed
    /// helper cannot parse every value). The finer `role_name` (`maintain`,
    /// `triage`) wins over the legacy `permission` field when GitHub sends it.
    pub async fn permission(&self, user: &str) -> Result<Permission, GitHubError> {
        let route = format!(
            "/repos/{}/{}/collaborators/{}/permission",
            self.repo_ref().owner,
            self.repo_ref().name,
            encode_segment(user)
        );
        let action = format!("reading the permission of @{user} on {}", self.repo_ref());
        let value: serde_json::Value = self
            .call(&action, Need::Collaborators, || {
                self.crab().get(&route, None::<&()>)
            })
            .await?;
        let perm = value
            .get("permission")
            .and_then(|v| v.as_str())
            .and_then(|s| s.parse::<Permission>().ok());
        let role = value
            .get("role_name")
            .and_then(|v| v.as_str())
            .and_then(|s| s.parse::<Permission>().ok());
        let result = match (perm, role) {
            (Some(p), Some(r)) => p.max(r),
            (Some(p), None) => p,
            (None, Some(r)) => r,
            (None, None) => {
                return Err(GitHubError::Decode {
                    action,
                    message: format!("no known `permission` or `role_name` in {value}"),
                });
            }
        };
        debug!("@{user} has {result} on {}", self.repo_ref());
        Ok(result)
    }

    /// Puts a reaction on an issue comment.
    pub async fn add_reaction(
        &self,
        comment_id: u64,
        reaction: Reaction,
    ) -> Result<(), GitHubError> {
        let action = format!(
            "adding the {} reaction to comment {comment_id} in {}",
            reaction.as_str(),
            self.repo_ref()
        );
        let r = self
            .call(&action, Need::WriteComments, || async {
                self.crab()
                    .issues(&self.repo_ref().owner, &self.repo_ref().name)
                    .create_comment_reaction(comment_id, reaction.content())
                    .await
            })
            .await?;
        self.learn_login(&r.user.login);
        Ok(())
    }

    /// Creates a comment on an issue or pull request; returns its id.
    pub async fn create_comment(&self, issue: u64, body: &str) -> Result<u64, GitHubError> {
        let action = format!("creating a comment on #{issue} in {}", self.repo_ref());
        let c = self
            .call(&action, Need::WriteComments, || async {
                self.crab()
                    .issues(&self.repo_ref().owner, &self.repo_ref().name)
                    .create_comment(issue, body)
                    .await
            })
            .await?;
        self.learn_login(&c.user.login);
        Ok(c.id.into_inner())
    }

    /// Replaces the text of a comment (`PATCH /repos/{o}/{r}/issues/comments/{id}`).
    pub async fn update_comment(&self, comment_id: u64, body: &str) -> Result<(), GitHubError> {
        let action = format!("editing comment {comment_id} in {}", self.repo_ref());
        let route = format!(
            "/repos/{}/{}/issues/comments/{comment_id}",
            self.repo_ref().owner,
            self.repo_ref().name
        );
        let payload = serde_json::json!({ "body": body });
        let c = self
            .call(&action, Need::WriteComments, || {
                self.crab().patch::<Comment, _, _>(&route, Some(&payload))
            })
            .await?;
        self.learn_login(&c.user.login);
        Ok(())
    }

    /// The text of a comment.
    pub async fn get_comment(&self, comment_id: u64) -> Result<String, GitHubError> {
        Ok(self.comment(comment_id).await?.body)
    }

    /// A comment with its author.
    pub async fn comment(&self, comment_id: u64) -> Result<CommentInfo, GitHubError> {
        let action = format!("reading comment {comment_id} in {}", self.repo_ref());
        let c = self
            .call(&action, Need::ReadComments, || async {
                self.crab()
                    .issues(&self.repo_ref().owner, &self.repo_ref().name)
                    .get_comment(comment_id.into())
                    .await
            })
            .await?;
        Ok(c.into())
    }

    /// Every comment on an issue or pull request, oldest first (follows pagination).
    pub async fn list_comments(&self, issue: u64) -> Result<Vec<CommentInfo>, GitHubError> {
        let action = format!("listing the comments on #{issue} in {}", self.repo_ref());
        let mut page = self
            .call(&action, Need::ReadComments, || async {
                self.crab()
                    .issues(&self.repo_ref().owner, &self.repo_ref().name)
                    .list_comments(issue)
                    .per_page(PER_PAGE)
                    .send()
                    .await
            })
            .await?;
        let mut out: Vec<CommentInfo> = page.take_items().into_iter().map(Into::into).collect();
        let mut pages = 1;
        while let Some(next) = page.next.clone() {
            pages += 1;
            if pages > 1000 {
                warn!("{action}: stopping after 1000 pages");
                break;
            }
            let next = Some(next);
            let got = self
                .call(&action, Need::ReadComments, || {
                    self.crab().get_page::<Comment>(&next)
                })
                .await?;
            let Some(mut p) = got else { break };
            out.extend(p.take_items().into_iter().map(CommentInfo::from));
            page = p;
        }
        Ok(out)
    }

    /// The newest comment by the bot whose text contains `marker`: its id and text.
    /// Only the bot's own comments count (see [`GitHub::own_login`]), so
    /// neither a user nor another bot can plant a marker.
    pub async fn find_tracking_comment(
        &self,
        issue: u64,
        marker: &str,
    ) -> Result<Option<(u64, String)>, GitHubError> {
        let comments = self.list_comments(issue).await?;
        let own = self.own_login().await?;
        Ok(comments
            .into_iter()
            .rev()
            .filter(|c| c.author_login.eq_ignore_ascii_case(&own))
            .find(|c| c.body.contains(marker))
            .map(|c| (c.id, c.body)))
    }
}

impl GitHub {
    /// Writes the tracking comment of this run: edits the bot's comment that
    /// carries `marker` if there is one (a re-run of the same workflow run),
    /// else creates it. Returns the comment id. `body` should contain the marker.
    pub async fn upsert_tracking_comment(
        &self,
        issue: u64,
        marker: &str,
        body: &str,
    ) -> Result<u64, GitHubError> {
        match self.find_tracking_comment(issue, marker).await? {
            Some((id, _)) => {
                self.update_comment(id, body).await?;
                Ok(id)
            }
            None => self.create_comment(issue, body).await,
        }
    }
}
