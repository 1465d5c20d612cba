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
    let authority = rest.split('/').next().unwrap_or_default();
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    let loopback = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    (!loopback).then(|| {
        format!(
            "the engine `{address}` is plain TCP to another machine: the code, the inputs and the \
             engine's whole API would cross the network unencrypted and unauthenticated. Reach a \
             remote engine over SSH instead: `ssh -nNT -L /tmp/remote-docker.sock:/var/run/docker.sock \
             user@host`, then `unix:///tmp/remote-docker.sock`"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::plain_remote;

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
