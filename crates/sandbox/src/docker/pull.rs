//! Pulling the policy's image when the engine lacks it (the plain rules are
//! `sandbox/pull.rs`): `POST /images/create` through bollard's
//! `create_image`, its progress stream added up into a
//! [`PullProgress`], by digest when the policy pins one, with the job's
//! registry credentials. The engine answers 200 and streams; an error can
//! come inside that stream (`errorDetail`, which bollard turns into
//! `DockerStreamError`, or a bare `error` it does not), so the end of the
//! stream is not taken for success: the image is looked up after it, its
//! `RepoDigests` must hold the pinned digest, and it is then tagged
//! ([`ImageRef::tag_after_pull`]).
//!
//! One pull per image and connection: a second run preparing while the
//! first pulls waits for the same pull ([`Pulls::start`]), and so does a run
//! prepared after a pull started ahead ([`super::Docker::pull_ahead`]). A
//! failed pull stays failed for the connection (its error returns at
//! once; the reserve, a connection of its own, tries its own engine).

use std::collections::HashMap;
use std::sync::Mutex;

use bollard::Docker as Bollard;
use bollard::auth::DockerCredentials;
use bollard::query_parameters::{CreateImageOptions, TagImageOptions};
use futures_util::StreamExt;
use tokio::sync::watch;

use super::super::SandboxError;
use super::super::pull::{
    ImageRef, PullPhase, PullProgress, Tally, pinned_digest_held, pull_problem,
    registry_credentials,
};

/// The pulls of one connection, by reference.
#[derive(Default)]
pub(crate) struct Pulls {
    by_image: Mutex<HashMap<String, watch::Receiver<PullProgress>>>,
}

impl Pulls {
    /// The pull of `image` under way or done on this connection.
    pub(crate) fn get(&self, image: &str) -> Option<watch::Receiver<PullProgress>> {
        self.by_image.lock().expect("lock").get(image).cloned()
    }

    /// Starts pulling `image` on the current runtime, or returns the pull
    /// already started. `None` without a runtime.
    pub(crate) fn start(
        &self,
        docker: &Bollard,
        image: &str,
    ) -> Option<watch::Receiver<PullProgress>> {
        let mut map = self.by_image.lock().expect("lock");
        if let Some(rx) = map.get(image) {
            return Some(rx.clone());
        }
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        let (tx, rx) = watch::channel(PullProgress {
            image: image.to_string(),
            ..Default::default()
        });
        map.insert(image.to_string(), rx.clone());
        let (docker, image) = (docker.clone(), image.to_string());
        // Not cancelled with the run that started it: the image is for the
        // job's later steps too. A runtime that ends drops the request and
        // the engine stops the pull.
        runtime.spawn(async move {
            let started = std::time::Instant::now();
            let phase = match pull(&docker, &image, &tx).await {
                Ok(()) => PullPhase::Done,
                Err(problem) => PullPhase::Failed(problem),
            };
            let last = tx.borrow().clone();
            match &phase {
                // The run's error says it (or the reserve's warning).
                PullPhase::Failed(problem) => {
                    tracing::info!(image = %image, problem = %problem, "could not pull the sandbox image")
                }
                _ => tracing::info!(
                    image = %image,
                    ms = started.elapsed().as_millis() as u64,
                    downloaded_bytes = last.done_bytes,
                    "pulled the sandbox image"
                ),
            }
            tx.send_replace(PullProgress { phase, ..last });
        });
        Some(rx)
    }
}

/// Waits for the pull `rx` watches to end: `Ok` once the image is on the
/// engine, else the pull's problem as [`SandboxError::ImagePull`].
pub(crate) async fn finished(
    mut rx: watch::Receiver<PullProgress>,
    host: &str,
) -> Result<(), SandboxError> {
    let end = rx
        .wait_for(|p| p.phase != PullPhase::Pulling)
        .await
        .map(|p| p.clone());
    let failed = |problem: String| SandboxError::ImagePull {
        image: rx.borrow().image.clone(),
        host: host.to_string(),
        problem,
    };
    match end {
        Ok(PullProgress {
            phase: PullPhase::Done,
            ..
        }) => Ok(()),
        Ok(PullProgress {
            phase: PullPhase::Failed(problem),
            ..
        }) => Err(failed(problem)),
        Ok(_) | Err(_) => Err(failed("the pull stopped before it ended".into())),
    }
}

/// One pull of `reference` into the engine, with progress on `tx`; the
/// error is the user's text ([`pull_problem`]).
async fn pull(
    docker: &Bollard,
    reference: &str,
    tx: &watch::Sender<PullProgress>,
) -> Result<(), String> {
    let wanted = ImageRef::parse(reference)
        .ok_or_else(|| format!("`{reference}` is no image reference the bot can pull"))?;
    let (from_image, tag) = wanted.pull_query();
    let credentials = registry_credentials(wanted.registry()).map(|c| DockerCredentials {
        username: c.username,
        password: c.password,
        identitytoken: c.identity_token,
        serveraddress: Some(c.server),
        ..Default::default()
    });
    tracing::info!(image = %reference, credentials = credentials.is_some(), "pulling the sandbox image");
    let options = CreateImageOptions {
        from_image: Some(from_image),
        tag: Some(tag),
        ..Default::default()
    };
    let mut stream = docker.create_image(Some(options), None, credentials);
    let mut tally = Tally::default();
    let mut last_status = String::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(info) => {
                let status = info.status.unwrap_or_default();
                let (current, total) = info
                    .progress_detail
                    .map(|d| (d.current, d.total))
                    .unwrap_or_default();
                tally.see(info.id.as_deref(), &status, current, total);
                tx.send_if_modified(|p| {
                    let now = tally.progress(reference);
                    let changed = *p != now;
                    *p = now;
                    changed
                });
                if !status.is_empty() {
                    last_status = status;
                }
            }
            Err(bollard::errors::Error::DockerStreamError { error }) => {
                return Err(pull_problem(reference, &error));
            }
            Err(e) => return Err(pull_problem(reference, &e.to_string())),
        }
    }
    // An error the stream carried without `errorDetail` reads as a message
    // with no status: the image's presence is the proof.
    let image = match docker.inspect_image(reference).await {
        Ok(image) => image,
        Err(e) => {
            return Err(pull_problem(
                reference,
                &format!("the pull ended without the image ({e}; last status: {last_status:?})"),
            ));
        }
    };
    if let Some(why) = pinned_digest_held(&wanted, &image.repo_digests.unwrap_or_default()) {
        return Err(why);
    }
    if let Some((repo, tag)) = wanted.tag_after_pull() {
        let options = TagImageOptions {
            repo: Some(repo.clone()),
            tag: Some(tag.clone()),
        };
        // The image is there and pinned: a tag that cannot be set only
        // costs later steps the short name.
        match docker.tag_image(reference, Some(options)).await {
            Ok(()) => {
                tracing::info!(image = %reference, tag = %format!("{repo}:{tag}"), "tagged the pulled image")
            }
            Err(e) => {
                tracing::warn!(image = %reference, error = %e, "could not tag the pulled image")
            }
        }
    }
    Ok(())
}
