//! Getting the policy's image onto an engine that does not have it, as
//! plain data (the engine side is `docker/pull.rs`): which references the
//! bot pulls ([`ImageRef::pulls`]), the progress of a pull
//! ([`PullProgress`], bytes done of the sizes known), the check that the
//! engine holds the pinned digest ([`pinned_digest_held`]), what a failed
//! pull means for the user ([`pull_problem`]) and the registry credentials
//! of the job ([`registry_credentials`]: the Docker client's config that
//! `docker login` writes; never the policy).

use std::collections::HashMap;

use base64::Engine as _;

/// An image reference split as the engine reads it:
/// `[registry/]path[:tag][@sha256:hex]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    /// The repository with its registry, without tag or digest
    /// (`127.0.0.1:5000/compute-bot-sandbox`).
    pub name: String,
    /// The tag, when named.
    pub tag: Option<String>,
    /// The pinned digest (`sha256:…`), when named.
    pub digest: Option<String>,
}

impl ImageRef {
    /// Splits `reference`; `None` when it is no reference the bot pulls
    /// from (empty name, a digest that is not `sha256:` and 64 hex digits).
    pub fn parse(reference: &str) -> Option<ImageRef> {
        let (rest, digest) = match reference.split_once('@') {
            Some((rest, d)) => {
                let hex = d.strip_prefix("sha256:")?;
                if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return None;
                }
                (rest, Some(d.to_ascii_lowercase()))
            }
            None => (reference, None),
        };
        // A `:` after the last `/` starts the tag (one before it is a port).
        let last = rest.rsplit('/').next().unwrap_or(rest);
        let (name, tag) = match last.rsplit_once(':') {
            Some((_, tag)) => (
                &rest[..rest.len() - tag.len() - 1],
                Some(tag.to_string()).filter(|t| !t.is_empty()),
            ),
            None => (rest, None),
        };
        if name.is_empty() || name.ends_with('/') {
            return None;
        }
        Some(ImageRef {
            name: name.to_string(),
            tag,
            digest,
        })
    }

    /// The registry the name points at: its first component when that is
    /// a host (has a `.` or a `:`, or is `localhost`), else Docker Hub.
    pub fn registry(&self) -> Option<&str> {
        let (first, _) = self.name.split_once('/')?;
        (first.contains('.') || first.contains(':') || first == "localhost").then_some(first)
    }

    /// True when the bot pulls this reference when the engine lacks it:
    /// pinned by digest, or naming its registry. A bare name like the
    /// default `compute-bot-sandbox:python` is built locally
    /// (`scripts/ensure-sandbox-image`), never looked up on Docker Hub,
    /// where anyone may own that name.
    pub fn pulls(&self) -> bool {
        self.digest.is_some() || self.registry().is_some()
    }

    /// What the engine is asked for: `fromImage` and `tag` (the digest when
    /// pinned: the pull is then by digest and any tag is only applied after).
    pub fn pull_query(&self) -> (String, String) {
        let tag = self
            .digest
            .clone()
            .or_else(|| self.tag.clone())
            .unwrap_or_else(|| "latest".to_string());
        (self.name.clone(), tag)
    }

    /// The tag given to the image after a pull by digest, so later steps
    /// of the job find it and `docker image prune` keeps it (an image with
    /// no tag counts as dangling): the policy's tag when it names one
    /// (`name:tag@sha256:…`), else `sha256-<hex>` of the pin. `None` for a
    /// pull by tag (the engine tags it itself).
    pub fn tag_after_pull(&self) -> Option<(String, String)> {
        let digest = self.digest.as_deref()?;
        let tag = self.tag.clone().unwrap_or_else(|| digest.replace(':', "-"));
        Some((self.name.clone(), tag))
    }
}

/// Where a pull stands.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum PullPhase {
    /// Under way.
    #[default]
    Pulling,
    /// The image is on the engine (digest checked, tagged).
    Done,
    /// The pull failed; why, as [`pull_problem`] said it.
    Failed(String),
}

/// The progress of one image pull, for a display such as "preparing the
/// sandbox image, 120 of 180 MB". The total grows as the engine starts each
/// layer (it learns a layer's size when its download begins); layers the
/// engine already had count for nothing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PullProgress {
    /// The reference pulled.
    pub image: String,
    /// Compressed bytes downloaded so far.
    pub done_bytes: u64,
    /// Compressed bytes of the layers whose size is known so far.
    pub total_bytes: u64,
    /// Layers to download (known so far).
    pub layers: u32,
    /// Of those, the layers whose size is known.
    pub layers_sized: u32,
    /// Where the pull stands.
    pub phase: PullPhase,
}

impl PullProgress {
    /// `preparing the sandbox image, 120 of 180 MB` (`of at least` while
    /// some layer's size is unknown; `…, 3 layers` before any size is).
    pub fn line(&self) -> String {
        const MB: u64 = 1_000_000;
        if self.total_bytes == 0 {
            return match self.layers {
                0 => "preparing the sandbox image".to_string(),
                1 => "preparing the sandbox image, 1 layer".to_string(),
                n => format!("preparing the sandbox image, {n} layers"),
            };
        }
        let of = if self.layers_sized < self.layers {
            "of at least"
        } else {
            "of"
        };
        format!(
            "preparing the sandbox image, {} {of} {} MB",
            self.done_bytes
                .div_ceil(MB)
                .min(self.total_bytes.div_ceil(MB)),
            self.total_bytes.div_ceil(MB)
        )
    }
}

/// One layer as the engine's progress messages describe it.
#[derive(Debug, Clone, Default)]
struct Layer {
    done: u64,
    total: Option<u64>,
    /// The engine had it: nothing to download.
    present: bool,
}

/// Adds the engine's progress messages (`Pulling fs layer`,
/// `Downloading` with current/total, `Download complete`, `Already
/// exists`, ...) up into a [`PullProgress`].
#[derive(Debug, Default)]
pub struct Tally {
    layers: Vec<(String, Layer)>,
}

impl Tally {
    /// One message: the layer it is about (`id`), its status and, for
    /// `Downloading`, the bytes so far of its size.
    pub fn see(
        &mut self,
        id: Option<&str>,
        status: &str,
        current: Option<i64>,
        total: Option<i64>,
    ) {
        let Some(id) = id else { return };
        let layer_status = matches!(
            status,
            "Pulling fs layer"
                | "Waiting"
                | "Downloading"
                | "Verifying Checksum"
                | "Download complete"
                | "Extracting"
                | "Pull complete"
                | "Already exists"
        ) || status.starts_with("Retrying");
        if !layer_status {
            return;
        }
        let at = match self.layers.iter().position(|(i, _)| i == id) {
            Some(at) => at,
            None => {
                self.layers.push((id.to_string(), Layer::default()));
                self.layers.len() - 1
            }
        };
        let layer = &mut self.layers[at].1;
        match status {
            "Already exists" => layer.present = true,
            "Downloading" => {
                if let Some(t) = total.filter(|t| *t > 0) {
                    layer.total = Some(t as u64);
                }
                if let Some(c) = current.filter(|c| *c >= 0) {
                    layer.done = layer.done.max(c as u64);
                }
            }
            "Download complete" | "Extracting" | "Pull complete" => {
                if let Some(t) = layer.total {
                    layer.done = t;
                }
            }
            _ => {}
        }
    }

    /// The sums so far for `image`, still [`PullPhase::Pulling`].
    pub fn progress(&self, image: &str) -> PullProgress {
        let mut p = PullProgress {
            image: image.to_string(),
            ..Default::default()
        };
        for (_, l) in self.layers.iter().filter(|(_, l)| !l.present) {
            p.layers += 1;
            if let Some(t) = l.total {
                p.layers_sized += 1;
                p.total_bytes += t;
                p.done_bytes += l.done.min(t);
            }
        }
        p
    }
}

/// When the policy pins a digest: `None` when the engine's `RepoDigests`
/// for the pulled image hold `name@digest` (Docker writes Docker Hub names
/// short: `library/python` as `python`), else why not, naming the policy's
/// field and what to do.
pub fn pinned_digest_held(wanted: &ImageRef, repo_digests: &[String]) -> Option<String> {
    let digest = wanted.digest.as_deref()?;
    let short = |n: &str| {
        let n = n.strip_prefix("docker.io/").unwrap_or(n);
        n.strip_prefix("library/").unwrap_or(n).to_string()
    };
    let held = repo_digests.iter().any(|rd| {
        rd.split_once('@')
            .is_some_and(|(n, d)| d.eq_ignore_ascii_case(digest) && short(n) == short(&wanted.name))
    });
    (!held).then(|| {
        let has = if repo_digests.is_empty() {
            "none".to_string()
        } else {
            repo_digests.join(", ")
        };
        format!(
            "the engine's copy does not have the digest that `sandbox.image` pins ({digest}); its \
             digests: {has}. The registry serves another image under this name: pin the digest \
             the image's publisher names (e.g. the release notes), or push the pinned image again"
        )
    })
}

/// What a failed pull means, from what the engine said, with what to do.
/// `reference`: the policy's `sandbox.image`.
pub fn pull_problem(reference: &str, said: &str) -> String {
    let lower = said.to_ascii_lowercase();
    let registry = ImageRef::parse(reference)
        .and_then(|r| r.registry().map(str::to_string))
        .unwrap_or_else(|| "docker.io".to_string());
    let said = said.trim();
    if lower.contains("manifest unknown")
        || lower.contains("not found")
        || lower.contains("does not exist")
    {
        format!(
            "the registry {registry} has no image `{reference}` ({said}). Check the name and the \
             digest in the policy's `sandbox.image`, or push that image"
        )
    } else if lower.contains("unknown blob") || lower.contains("blob unknown") {
        format!(
            "the registry {registry} has the image `{reference}` only in part ({said}): a layer \
             or its configuration is missing there. Push the image to the registry again"
        )
    } else if lower.contains("unauthorized")
        || lower.contains("denied")
        || lower.contains("authentication required")
        || lower.contains("no basic auth")
    {
        format!(
            "the registry {registry} refused the pull ({said}). Log in before the bot starts \
             (`docker login {registry}` in the job, e.g. docker/login-action); credentials come \
             from the job's Docker config, never from the policy"
        )
    } else if lower.contains("verification failed")
        || lower.contains("digest mismatch")
        || lower.contains("does not match")
    {
        format!(
            "what the registry {registry} served does not match the digest the policy's \
             `sandbox.image` pins ({said}). Pin the digest the image's publisher names, or push \
             the pinned image again"
        )
    } else if lower.contains("connection refused")
        || lower.contains("dial tcp")
        || lower.contains("no such host")
        || lower.contains("timeout")
        || lower.contains("connection reset")
        || lower.contains("eof")
        || lower.contains("network is unreachable")
    {
        format!(
            "the registry {registry} cannot be reached ({said}). Check the registry in the \
             policy's `sandbox.image` and that the runner can reach it, or put the image on the \
             engine before the bot starts (`docker pull`, or sandbox/build-debian.sh)"
        )
    } else {
        format!(
            "the engine could not pull it ({said}). Put the image on the engine before the bot \
             starts (`docker pull {reference}`, or sandbox/build-debian.sh) or fix `sandbox.image`"
        )
    }
}

/// Credentials for one registry, as `docker login` stored them.
#[derive(Clone, PartialEq, Eq)]
pub struct RegistryCredentials {
    /// The user name, when a password login was stored.
    pub username: Option<String>,
    /// The password.
    pub password: Option<String>,
    /// An identity token (some registries store one instead).
    pub identity_token: Option<String>,
    /// The registry's address as the config names it.
    pub server: String,
}

impl std::fmt::Debug for RegistryCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryCredentials")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// The job's credentials for `registry` (`None`: Docker Hub) from the
/// Docker client's config: `$DOCKER_CONFIG/config.json`, else
/// `~/.docker/config.json`, where `docker login` (and
/// docker/login-action) write them. Only stored `auths` entries are read;
/// a credential helper (`credsStore`, `credHelpers`) is not run.
pub fn registry_credentials(registry: Option<&str>) -> Option<RegistryCredentials> {
    let dir = std::env::var_os("DOCKER_CONFIG")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".docker")))?;
    let text = std::fs::read_to_string(dir.join("config.json")).ok()?;
    credentials_in(&text, registry)
}

/// [`registry_credentials`] from the config's text.
pub fn credentials_in(config: &str, registry: Option<&str>) -> Option<RegistryCredentials> {
    #[derive(serde::Deserialize, Default)]
    struct Entry {
        #[serde(default)]
        auth: Option<String>,
        #[serde(default)]
        identitytoken: Option<String>,
    }
    #[derive(serde::Deserialize, Default)]
    struct Config {
        #[serde(default)]
        auths: HashMap<String, Entry>,
    }
    let config: Config = serde_json::from_str(config).ok()?;
    let host = registry.unwrap_or("docker.io");
    let host_of = |key: &str| {
        let k = key
            .trim_start_matches("https://")
            .trim_start_matches("http://");
        let k = k.split('/').next().unwrap_or(k).to_string();
        match k.as_str() {
            "index.docker.io" | "registry-1.docker.io" => "docker.io".to_string(),
            _ => k,
        }
    };
    let (server, entry) = config.auths.iter().find(|(k, _)| host_of(k) == host)?;
    let (username, password) = match entry.auth.as_deref() {
        Some(a) if !a.is_empty() => {
            let decoded = base64::engine::general_purpose::STANDARD.decode(a).ok()?;
            let text = String::from_utf8(decoded).ok()?;
            let (u, p) = text.split_once(':')?;
            (Some(u.to_string()), Some(p.to_string()))
        }
        _ => (None, None),
    };
    let identity_token = entry.identitytoken.clone().filter(|t| !t.is_empty());
    if username.is_none() && identity_token.is_none() {
        return None;
    }
    Some(RegistryCredentials {
        username,
        password,
        identity_token,
        server: server.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:f68e8c318b8c3ff4c164cb608edd0316fb13f05c1f9f811d4d4ec56982f678a0";

    #[test]
    fn references_split_as_the_engine_reads_them() {
        let r = ImageRef::parse(&format!("127.0.0.1:5000/compute-bot-sandbox@{D}")).unwrap();
        assert_eq!(r.name, "127.0.0.1:5000/compute-bot-sandbox");
        assert_eq!(r.tag, None);
        assert_eq!(r.digest.as_deref(), Some(D));
        assert_eq!(r.registry(), Some("127.0.0.1:5000"));
        assert!(r.pulls());
        assert_eq!(r.pull_query(), (r.name.clone(), D.to_string()));
        assert_eq!(
            r.tag_after_pull(),
            Some((r.name.clone(), D.replace(':', "-")))
        );

        let r = ImageRef::parse(&format!("ghcr.io/o/sandbox:v1.2@{D}")).unwrap();
        assert_eq!(
            (r.name.as_str(), r.tag.as_deref()),
            ("ghcr.io/o/sandbox", Some("v1.2"))
        );
        // By digest, then tagged with the policy's tag.
        assert_eq!(r.pull_query().1, D);
        assert_eq!(
            r.tag_after_pull(),
            Some(("ghcr.io/o/sandbox".into(), "v1.2".into()))
        );

        // The default image is built locally, never looked up on Docker Hub.
        let r = ImageRef::parse("compute-bot-sandbox:python").unwrap();
        assert_eq!(r.registry(), None);
        assert!(!r.pulls());
        // A port is no tag.
        let r = ImageRef::parse("localhost:5000/x").unwrap();
        assert_eq!(
            (r.name.as_str(), r.tag.as_deref()),
            ("localhost:5000/x", None)
        );
        assert!(r.pulls());
        assert_eq!(r.tag_after_pull(), None);
        assert!(ImageRef::parse("x@sha256:abc").is_none());
        assert!(ImageRef::parse("x@md5:00").is_none());
        assert!(ImageRef::parse(":tag").is_none());
    }

    #[test]
    fn progress_adds_up_the_layers_to_download() {
        let mut t = Tally::default();
        t.see(Some("wt31"), "Pulling from compute-bot-sandbox", None, None);
        t.see(Some("a"), "Already exists", None, None);
        t.see(Some("b"), "Pulling fs layer", None, None);
        t.see(Some("c"), "Pulling fs layer", None, None);
        assert_eq!(
            t.progress("i").line(),
            "preparing the sandbox image, 2 layers"
        );
        t.see(
            Some("b"),
            "Downloading",
            Some(60_000_000),
            Some(120_000_000),
        );
        let p = t.progress("i");
        assert_eq!(
            (p.done_bytes, p.total_bytes, p.layers, p.layers_sized),
            (60_000_000, 120_000_000, 2, 1)
        );
        assert_eq!(
            p.line(),
            "preparing the sandbox image, 60 of at least 120 MB"
        );
        t.see(Some("c"), "Downloading", Some(0), Some(60_000_000));
        t.see(Some("b"), "Download complete", None, None);
        // Extraction's own byte counts are not downloads.
        t.see(Some("b"), "Extracting", Some(5), Some(120_000_000));
        assert_eq!(
            t.progress("i").line(),
            "preparing the sandbox image, 120 of 180 MB"
        );
        t.see(None, "Digest: sha256:00", None, None);
        t.see(Some("c"), "Pull complete", None, None);
        let p = t.progress("i");
        assert_eq!((p.done_bytes, p.total_bytes), (180_000_000, 180_000_000));
        assert_eq!(p.phase, PullPhase::Pulling);
    }

    #[test]
    fn the_pinned_digest_must_be_among_the_engines_digests() {
        let want = ImageRef::parse(&format!("127.0.0.1:5000/compute-bot-sandbox@{D}")).unwrap();
        assert_eq!(
            pinned_digest_held(&want, &[format!("127.0.0.1:5000/compute-bot-sandbox@{D}")]),
            None
        );
        let other = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
        let why = pinned_digest_held(
            &want,
            &[format!("127.0.0.1:5000/compute-bot-sandbox@{other}")],
        )
        .expect("another digest is refused");
        assert!(
            why.contains("`sandbox.image`") && why.contains(D) && why.contains(other),
            "{why}"
        );
        // The same digest under another repository is not the pinned image.
        assert!(pinned_digest_held(&want, &[format!("127.0.0.1:5000/other@{D}")]).is_some());
        // Docker Hub names are written short.
        let hub = ImageRef::parse(&format!("docker.io/library/python@{D}")).unwrap();
        assert_eq!(pinned_digest_held(&hub, &[format!("python@{D}")]), None);
        // Nothing pinned: nothing to check.
        let tag = ImageRef::parse("ghcr.io/o/s:v1").unwrap();
        assert_eq!(pinned_digest_held(&tag, &[]), None);
    }

    #[test]
    fn a_failed_pull_says_what_to_do() {
        let r = format!("127.0.0.1:5000/compute-bot-sandbox@{D}");
        let down = pull_problem(
            &r,
            "Get \"http://127.0.0.1:1/v2/\": dial tcp 127.0.0.1:1: connect: connection refused",
        );
        assert!(
            down.contains("cannot be reached") && down.contains("127.0.0.1:5000"),
            "{down}"
        );
        let unknown = pull_problem(
            &r,
            "manifest for x not found: manifest unknown: manifest unknown",
        );
        assert!(
            unknown.contains("has no image") && unknown.contains("`sandbox.image`"),
            "{unknown}"
        );
        let part = pull_problem(
            &r,
            "error pulling image configuration: download failed after attempts=1: unknown blob",
        );
        assert!(
            part.contains("only in part") && part.contains("again"),
            "{part}"
        );
        let denied = pull_problem(&r, "unauthorized: authentication required");
        assert!(
            denied.contains("docker login") && denied.contains("never from the policy"),
            "{denied}"
        );
    }

    #[test]
    fn credentials_come_from_the_docker_config_of_the_job() {
        let auth = base64::engine::general_purpose::STANDARD.encode("bot:s3cret");
        let config = format!(
            r#"{{"auths": {{"https://ghcr.io": {{"auth": "{auth}"}}, "https://index.docker.io/v1/": {{"identitytoken": "tok"}}}}, "credsStore": "desktop"}}"#
        );
        let c = credentials_in(&config, Some("ghcr.io")).unwrap();
        assert_eq!(c.username.as_deref(), Some("bot"));
        assert_eq!(c.password.as_deref(), Some("s3cret"));
        assert!(!format!("{c:?}").contains("s3cret"));
        let hub = credentials_in(&config, None).unwrap();
        assert_eq!(hub.identity_token.as_deref(), Some("tok"));
        assert!(credentials_in(&config, Some("127.0.0.1:5000")).is_none());
        assert!(credentials_in("not json", Some("ghcr.io")).is_none());
    }
}
