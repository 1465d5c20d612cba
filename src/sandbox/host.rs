//! Facts about where the bot runs: the engine address and this machine's
//! host name. A leaf module, so `docker` and `error` both use it without
//! importing each other.

/// Where the engine is, for error messages.
pub(crate) fn docker_host() -> String {
    std::env::var("DOCKER_HOST").unwrap_or_else(|_| "unix:///var/run/docker.sock".to_string())
}

/// This machine's host name (recorded on each container, for operators).
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string())
}
