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

/// Why `address` may not be used: a plain `tcp://` or `http://` engine on
/// another machine (the code, the inputs and the engine's whole API would
/// cross the network unencrypted and unauthenticated). Loopback is this
/// machine. `None` when the address may be used. The one rule for the
/// policy's `sandbox.engine` / `sandbox.reserve` and for `DOCKER_HOST`.
pub fn plain_remote(address: &str) -> Option<String> {
    let rest = ["tcp://", "http://"]
        .iter()
        .find_map(|scheme| address.strip_prefix(scheme))?;
    (!loopback(rest)).then(|| {
        format!(
            "the engine `{address}` is plain TCP to another machine: the code, the inputs and the \
             engine's whole API would cross the network unencrypted and unauthenticated. Reach a \
             remote engine over SSH instead: `ssh -nNT -L /tmp/remote-docker.sock:/var/run/docker.sock \
             user@host`, then `unix:///tmp/remote-docker.sock`"
        )
    })
}

/// Whether the host of `authority` (`host:port/...`) is this machine's loopback.
fn loopback(authority: &str) -> bool {
    let authority = authority.split('/').next().unwrap_or_default();
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Whether the engine at `address` runs on this machine, so a path the bot
/// writes names the same file there: a Unix socket or TCP to loopback. (A
/// socket forwarded from another host looks local; a file named to that
/// engine is then missing there, and the engine refuses the container.)
pub fn on_this_machine(address: &str) -> bool {
    if address.starts_with("unix://") {
        return true;
    }
    ["tcp://", "http://", "https://"]
        .iter()
        .find_map(|scheme| address.strip_prefix(scheme))
        .is_some_and(loopback)
}

#[cfg(test)]
mod tests {
    use super::{on_this_machine, plain_remote};

    #[test]
    fn an_engine_on_this_machine_is_a_unix_socket_or_loopback() {
        for local in [
            "unix:///run/podman/podman.sock",
            "tcp://127.0.0.1:2375",
            "http://localhost:8080",
            "tcp://[::1]:2375",
        ] {
            assert!(on_this_machine(local), "{local}");
        }
        for remote in [
            "ssh://ci@build-host",
            "tcp://10.0.0.2:2376",
            "https://build-host:2376",
            "tcp://127.0.0.1.example.com:2375",
        ] {
            assert!(!on_this_machine(remote), "{remote}");
        }
    }

    #[test]
    fn plain_tcp_only_to_this_machine() {
        for ok in [
            "unix:///var/run/docker.sock",
            "tcp://127.0.0.1:2375",
            "tcp://localhost:2375",
            "http://[::1]:2375",
            "tcp://127.0.0.2:1",
        ] {
            assert_eq!(plain_remote(ok), None, "{ok}");
        }
        for bad in [
            "tcp://10.0.0.5:2375",
            "http://docker.example:2375",
            "tcp://[2001:db8::1]:2375",
            "tcp://h:2375",
        ] {
            let e = plain_remote(bad).unwrap_or_else(|| panic!("{bad} allowed"));
            assert!(e.contains(bad) && e.contains("ssh -nNT -L"), "{e}");
        }
    }
}
