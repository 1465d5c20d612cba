//! [`Session`]: the engine connection of one process run, made on first use
//! and closed once at the end.

use tokio::sync::OnceCell;

use super::{Sandbox, SandboxError};

/// The engine connection of one process run. The first run that needs a
/// container connects (and removes leftovers of dead bots); the front end
/// calls [`Session::close`] once, after the command ended or was dropped
/// (Ctrl-C, SIGTERM), so every container is gone before the runtime is.
#[derive(Debug, Default)]
pub(crate) struct Session {
    sandbox: OnceCell<Sandbox>,
}

impl Session {
    /// The connection, made on first use.
    pub(crate) async fn sandbox(&self) -> Result<&Sandbox, SandboxError> {
        self.sandbox
            .get_or_try_init(|| async {
                let sandbox = Sandbox::connect().await?;
                if let Err(e) = sandbox.cleanup_leftovers().await {
                    tracing::warn!(error = %e, "could not clean up leftover containers");
                }
                Ok(sandbox)
            })
            .await
    }

    /// Removes what the session's runs left (see [`Sandbox::close`]); a
    /// session that never connected has nothing to do.
    pub(crate) async fn close(&self) {
        if let Some(sandbox) = self.sandbox.get() {
            sandbox.close().await;
        }
    }
}
