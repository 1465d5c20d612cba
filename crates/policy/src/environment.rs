//! `sandbox.engine` and `sandbox.reserve`: where the code's containers run.
//! The first engine is `sandbox.engine` (else `DOCKER_HOST`, else the local
//! socket); the reserve names another engine, another runtime or both, and
//! is used only when the first cannot prepare or start a container
//! (`sandbox::Environments`, decided in `sandbox/environment.rs`).

use serde::Deserialize;
use serde::de::{self, Deserializer};

use compute_bot_sandbox::{Reserve, Runtime};

/// An engine address: `unix:///path/to.sock`, `tcp://host:port` or
/// `http://host:port`.
pub(super) struct EngineAddress(pub(super) String);

impl<'de> Deserialize<'de> for EngineAddress {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let rest = ["unix://", "tcp://", "http://"]
            .iter()
            .find_map(|scheme| s.strip_prefix(scheme));
        match rest {
            Some(rest) if !rest.is_empty() && !s.chars().any(char::is_whitespace) => {
                match compute_bot_sandbox::plain_remote(&s) {
                    Some(why) => Err(de::Error::custom(why)),
                    None => Ok(EngineAddress(s)),
                }
            }
            _ => Err(de::Error::custom(format!(
                "engine `{s}` is not an engine address; write `unix:///var/run/docker.sock`, \
                 `unix:///run/podman/podman.sock` or `tcp://127.0.0.1:2375`"
            ))),
        }
    }
}

/// `sandbox.reserve`: `engine` and/or `runtime`, at least one.
pub(super) struct ReserveSection(pub(super) Reserve);

impl<'de> Deserialize<'de> for ReserveSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Raw {
            #[serde(default)]
            engine: Option<EngineAddress>,
            #[serde(default)]
            runtime: Option<Runtime>,
        }
        let raw = Raw::deserialize(d)?;
        if raw.engine.is_none() && raw.runtime.is_none() {
            return Err(de::Error::custom(
                "the reserve names no environment; give it an `engine` (e.g. \
                 `unix:///run/podman/podman.sock`), a `runtime` (`runc` or `runsc`), or both",
            ));
        }
        Ok(ReserveSection(Reserve {
            engine: raw.engine.map(|e| e.0),
            runtime: raw.runtime,
        }))
    }
}

/// The problem with a reserve that is the first environment again (same
/// engine, same runtime), if it is one.
pub(super) fn same_as_first(
    engine: Option<&str>,
    runtime: Option<Runtime>,
    reserve: &Reserve,
) -> Option<String> {
    let same_engine = match (&reserve.engine, engine) {
        (None, _) => true,
        (Some(r), Some(e)) => r == e,
        // The first engine comes from DOCKER_HOST: it may differ.
        (Some(_), None) => false,
    };
    let same_runtime = match reserve.runtime {
        None => true,
        Some(r) => runtime == Some(r),
    };
    (same_engine && same_runtime).then(|| {
        "the reserve is the first environment again (same engine, same runtime); name another \
         `engine` or another `runtime` in `sandbox.reserve`"
            .to_string()
    })
}

#[cfg(test)]
mod tests {
    use crate::Policy;
    use compute_bot_sandbox::Runtime;

    fn read(sandbox: &str) -> Result<Policy, String> {
        Policy::from_yaml_str(&format!("version: 1\nsandbox:\n{sandbox}"), "p.yml")
            .map_err(|e| e.to_string())
    }

    #[test]
    fn the_engine_and_the_reserve_are_read_and_written_back() {
        let p = read(
            "  engine: unix:///var/run/docker.sock\n  runtime: runsc\n  reserve:\n    engine: unix:///run/podman/podman.sock\n    runtime: runc\n",
        )
        .unwrap();
        let envs = p.sandbox.environments();
        assert_eq!(envs.engine, "unix:///var/run/docker.sock");
        let reserve = envs.reserve.unwrap();
        assert_eq!(
            reserve.engine.as_deref(),
            Some("unix:///run/podman/podman.sock")
        );
        assert_eq!(reserve.runtime, Some(Runtime::Runc));
        let yaml = p.to_effective_yaml();
        assert!(
            yaml.contains("engine: unix:///var/run/docker.sock"),
            "{yaml}"
        );
        assert!(yaml.contains("reserve:"), "{yaml}");
        assert_eq!(Policy::from_yaml_str(&yaml, "effective").unwrap(), p);
        // None named: no reserve, and the first engine is DOCKER_HOST's.
        assert!(Policy::default().sandbox.environments().reserve.is_none());
    }

    #[test]
    fn a_bad_engine_or_reserve_is_an_error_that_names_the_fix() {
        let e = read("  engine: /var/run/docker.sock\n").unwrap_err();
        assert!(
            e.contains("p.yml:3") && e.contains("unix:///var/run/docker.sock"),
            "{e}"
        );
        let e = read("  reserve: {}\n").unwrap_err();
        assert!(e.contains("names no environment"), "{e}");
        let e = read("  reserve:\n    engine: tcp://127.0.0.1:2375\n    image: x\n").unwrap_err();
        assert!(e.contains("image"), "{e}");
        let e = read("  runtime: runsc\n  reserve:\n    runtime: runsc\n").unwrap_err();
        assert!(e.contains("the first environment again"), "{e}");
        let e =
            read("  engine: tcp://127.0.0.1:2375\n  reserve:\n    engine: tcp://127.0.0.1:2375\n")
                .unwrap_err();
        assert!(e.contains("the first environment again"), "{e}");
        // Plain TCP to another machine: refused where the policy names it.
        let e = read("  reserve:\n    engine: tcp://10.0.0.5:2375\n").unwrap_err();
        assert!(e.contains("p.yml:") && e.contains("over SSH"), "{e}");
        // Another runtime on the same engine is a reserve.
        assert!(read("  runtime: runsc\n  reserve:\n    runtime: runc\n").is_ok());
    }
}
