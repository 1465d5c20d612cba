//! [`Session`]: the backend connection of one process run, made on first
//! use and closed once at the end.

use std::sync::Arc;

use tokio::sync::OnceCell;

use super::{Environments, Executor, SandboxError};

/// The backend connection of one process run. The first run that needs a
/// container connects ([`super::connect`], to the environments it names; a
/// process runs one command, so later calls get that connection) and
/// removes leftovers of dead bots on each engine it connects to; the front end calls [`Session::close`] once, after the command
/// ended or was dropped (Ctrl-C, SIGTERM), so every container is gone before
/// the runtime is.
#[derive(Default)]
pub struct Session {
    executor: OnceCell<Arc<dyn Executor>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("connected", &self.executor.initialized())
            .finish()
    }
}

impl Session {
    /// The connection to `envs` (the policy's first environment and
    /// reserve), made on first use.
    pub async fn sandbox(&self, envs: &Environments) -> Result<&dyn Executor, SandboxError> {
        let executor = self
            .executor
            .get_or_try_init(|| super::connect(envs))
            .await?;
        Ok(executor.as_ref())
    }

    /// A session already connected to `executor`: the one seam through
    /// which a test hands the bot an in-memory executor (its handlers reach
    /// the sandbox only through [`Session::sandbox`]); the front ends make
    /// their sessions with [`Session::default`] and connect on first use.
    pub fn with_executor(executor: Arc<dyn Executor>) -> Session {
        Session {
            executor: OnceCell::from(executor),
        }
    }

    /// Removes what the session's runs left (see [`Executor::close`]); a
    /// session that never connected has nothing to do.
    pub async fn close(&self) {
        if let Some(executor) = self.executor.get() {
            executor.close().await;
        }
    }
}
