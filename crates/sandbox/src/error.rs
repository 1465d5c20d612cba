//! Errors of the execution layer. Each says what to do about it.

/// Why the sandbox could not run something.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The Docker engine could not be reached.
    #[error(
        "cannot reach the Docker engine at {host}: {detail}\n\
         compute-bot runs code only inside Docker containers. Start Docker \
         (`sudo systemctl start docker`, or run `dockerd` as root), or set DOCKER_HOST \
         to a running engine (e.g. DOCKER_HOST=unix:///var/run/docker.sock, or a remote engine's socket forwarded over SSH)."
    )]
    Unreachable {
        /// The engine address tried.
        host: String,
        /// What the client said.
        detail: String,
    },
    /// The sandbox image is not on the engine.
    #[error(
        "the sandbox image `{image}` is not on the Docker engine at {host}.\n\
         Build it without any registry: sandbox/build-debian.sh {image}\n\
         or, where images can be pulled, name the release's sandbox image by digest in the policy's sandbox.image"
    )]
    ImageMissing {
        /// The image reference.
        image: String,
        /// The engine address.
        host: String,
    },
    /// The sandbox image is not on the engine and the bot could not pull
    /// it (registry unreachable, no such image or digest, access refused,
    /// the engine's copy not holding the pinned digest).
    #[error(
        "the sandbox image `{image}` (the policy's `sandbox.image`) is not on the Docker engine \
         at {host} and could not be pulled: {problem}"
    )]
    ImagePull {
        /// The image reference.
        image: String,
        /// The engine address.
        host: String,
        /// What went wrong and what to do ([`super::pull::pull_problem`]).
        problem: String,
    },
    /// An input file is unusable.
    #[error("input file `{name}`: {problem}")]
    BadInput {
        /// The file as named by the user.
        name: String,
        /// What is wrong and what to do.
        problem: String,
    },
    /// The run is ending: [`super::Executor::close`] was called, so no new
    /// container starts.
    #[error("the run is ending (interrupted); no new container is started")]
    Closed,
    /// Neither the first execution environment nor the policy's reserve
    /// could prepare the container (`sandbox.engine`, `sandbox.reserve`).
    #[error(
        "no execution environment can run the code: the first ({first}) and the reserve \
         ({reserve}) both could not prepare the container.\n\
         Start one of them (`sudo systemctl start docker`, scripts/podman-service, \
         scripts/install-gvisor for runsc), or name a reachable engine in the policy's \
         `sandbox.engine` / `sandbox.reserve`."
    )]
    NoEnvironment {
        /// The first environment and what it said.
        first: String,
        /// The reserve and what it said.
        reserve: String,
    },
    /// The engine answered with an error.
    #[error("Docker engine error while {action}: {detail}")]
    Engine {
        /// What the bot was doing.
        action: &'static str,
        /// What the engine said.
        detail: String,
    },
}

impl SandboxError {
    /// True for errors the user fixes by configuration (exit status 2).
    pub fn is_configuration(&self) -> bool {
        matches!(
            self,
            SandboxError::Unreachable { .. }
                | SandboxError::ImageMissing { .. }
                | SandboxError::ImagePull { .. }
                | SandboxError::BadInput { .. }
                | SandboxError::NoEnvironment { .. }
        )
    }

    /// The first line of the message (what happened, without the advice).
    pub(crate) fn short(&self) -> String {
        let text = self.to_string();
        text.lines()
            .next()
            .unwrap_or_default()
            .trim_end_matches('.')
            .to_string()
    }
}
