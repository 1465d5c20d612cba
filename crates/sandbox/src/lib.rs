//! Stage: execute. The execution layer: one backend seam and the Docker
//! backend behind it. Runs untrusted Python in a hardened container (Docker,
//! Podman, gVisor) under kernel limits and records what the code did, each
//! fact with who observed it ([`Source`]); it knows no policy, model or
//! GitHub (compute-bot re-exports it as `compute_bot::sandbox`).
//!
//! - `types.rs`: the plain data in and out of a run (`SandboxConfig`,
//!   `Limits`, `Job`, `Outcome`, the runtime);
//! - `executor.rs`: the seam every stage uses, [`Executor`] and
//!   [`PreparedRun`], with [`EngineFacts`];
//! - `preload.rs`: what a prepared container imports before the code
//!   arrives (the policy's list, or exactly the code's heavy imports);
//! - `collect.rs` and `protocol.rs`: the runner's wire protocol and turning
//!   its frames into an [`Outcome`] — plain bytes, no engine;
//! - `trust.rs`: who saw each fact of a run ([`Source`]) and the kernel's
//!   record of what the code did ([`KernelRecord`]);
//! - `input.rs`: [`InputFile`], an input held in memory or streamed from
//!   its file in chunks, checked against its admitted SHA-256;
//! - `docker/`: the Docker (and Podman) backend through bollard, the only
//!   place that knows an engine;
//! - `environment.rs`: the first execution environment and the policy's
//!   reserve, and the one place that decides which prepares a container;
//! - `pull.rs` (and `docker/pull.rs`): the policy's image pulled when the
//!   engine lacks it, beside the run's other work, with its progress;
//! - `session.rs`: the connection of one process run; [`connect`] picks the
//!   backend.
//!
//! A run has two halves so the slow part (the engine starting a container)
//! can happen while the model is still writing code: [`Executor::prepare`]
//! starts a hardened container whose runner waits for a job on stdin, and
//! [`PreparedRun::execute`] hands over the code and inputs, collects the
//! framed output under a byte cap and a wall-clock deadline, and removes the
//! container in every case.

#![deny(missing_docs)]

mod collect;
pub mod docker;
mod environment;
mod error;
mod executor;
mod files;
mod host;
mod input;
mod preload;
mod protocol;
mod pull;
mod sentry_log;
mod session;
mod trust;
mod types;

use std::sync::Arc;

use sha2::{Digest, Sha256};

pub use docker::{
    ContainerFacts, LABEL_EXPIRES, LABEL_MANAGED, LABEL_PID, LABEL_RUN, Prepared,
    RUNSC_PIDS_OVERHEAD, SECCOMP_PROFILE, STOPPED_GRACE_SECONDS, is_leftover,
};
pub use environment::{Environment, Role};
pub use environment::{Environments, Reserve};
pub use error::SandboxError;
pub use executor::{
    Begun, EngineFacts, Executor, PreparedRun, Preparing, StepOptions, Steps, Then,
};
pub use files::{FileKind, write_files};
pub(crate) use host::docker_host;
pub use host::plain_remote;
pub(crate) use input::InputChanged;
pub use input::InputFile;
pub use preload::{HEAVY_PACKAGES, preload_for, preload_while_writing};
pub use pull::{ImageRef, PullPhase, PullProgress};
pub use sentry_log::{LOG_CAP, LogRuntime, RECORD_RUNTIME, TRACED};
pub use session::Session;
pub use trust::{
    CgroupFacts, CpuQuota, FileChange, KernelOpen, KernelRecord, LIBRARY_PATHS, SocketCall, Source,
    StartAttempt, Supervision, Witness, sources,
};
pub use types::*;

/// Connects to the backend this process uses: the Docker engine (or
/// Podman's compatible API) at the first environment's address, with the
/// policy's reserve behind it ([`environment::Fallback`]). The one place a
/// backend is chosen.
pub async fn connect(envs: &Environments) -> Result<Arc<dyn Executor>, SandboxError> {
    Ok(Arc::new(environment::Fallback::connect(envs).await?))
}

/// What a connection is for: a session's runs, or one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// The runs of a command: removals go on beside the answer, and the
    /// containers an earlier process left behind are swept in the
    /// background.
    Session,
    /// One look at the engine and the image (`doctor`): nothing runs.
    Check,
}

/// Connects to the backend at one engine `address`, for `usage`: the one
/// arm per backend. Every address speaks the Docker Engine API today
/// (Docker itself, or Podman's compatible service), so the Docker backend
/// ([`docker::Docker`]) takes it; a second backend is a module of its own
/// and an arm here. [`connect`] and the reserve reach every engine through
/// it, and so does `doctor`.
pub async fn connect_to(address: &str, usage: Use) -> Result<Arc<dyn Executor>, SandboxError> {
    let docker = docker::Docker::connect_to(address).await?;
    Ok(match usage {
        Use::Session => {
            let docker = docker.removing_beside_the_answer();
            docker.sweep_in_background();
            Arc::new(docker)
        }
        Use::Check => Arc::new(docker),
    })
}

/// Hex SHA-256 of some bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn random_hex(n: usize) -> String {
    let mut b = vec![0u8; n];
    rand::fill(&mut b[..]);
    hex::encode(b)
}
