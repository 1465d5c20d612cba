//! Reading a policy file: YAML through serde-saphyr, every error as
//! `file:line:column: message` with what to write instead.
//!
//! Read with [serde-saphyr](https://crates.io/crates/serde-saphyr): pure Rust,
//! `#![forbid(unsafe_code)]`, maintained, rejects duplicate keys and reports
//! line and column for every error (`serde_yaml` is deprecated and archived).
//! Every section denies unknown keys and every field has a safe default, so an
//! empty file is the default policy.

use std::path::{Path, PathBuf};

use crate::located::Located;

use super::config::Policy;

/// Why a policy file could not be used, with where in the file
/// (`file:line:column: message`, see [`Located`]).
pub type PolicyError = Located;

/// Adds a "write this instead" hint to serde's generic messages.
fn add_hint(raw: &str) -> String {
    let raw = raw.trim().to_string();
    if raw.contains("unknown field") {
        format!(
            "{raw}; remove the key or fix its spelling (unknown keys are errors so typos cannot weaken the policy)"
        )
    } else if raw.contains("unknown variant") {
        format!("{raw}; write one of the names listed (see policies/default.yml)")
    } else if raw.contains("duplicate") {
        format!("{raw}; each key may appear once — delete one of them")
    } else if raw.contains("invalid type") {
        format!("{raw}; see policies/default.yml for the expected form of every field")
    } else {
        raw
    }
}

impl Policy {
    /// Reads and validates a policy file. A relative `output.schema` path is
    /// resolved against the file's directory.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let name = path.display().to_string();
        let src = std::fs::read_to_string(path).map_err(|e| {
            PolicyError::at(
                &name,
                0,
                0,
                format!("cannot read the policy file ({e}); check the path"),
            )
        })?;
        let mut p = Self::parse(&src, &name, path.parent())?;
        p.origin = Some(path.to_path_buf());
        Ok(p)
    }

    /// Parses a policy from YAML text. `origin` names the source in errors;
    /// a relative `output.schema` path is resolved against the directory of
    /// `origin` (taken as a path), or the current directory.
    pub fn from_yaml_str(src: &str, origin: &str) -> Result<Policy, PolicyError> {
        Self::parse(src, origin, Path::new(origin).parent())
    }

    fn parse(src: &str, origin: &str, base: Option<&Path>) -> Result<Policy, PolicyError> {
        // An empty document (or only comments) is the default policy.
        let meaningful = src.lines().any(|l| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with('#') && t != "---"
        });
        let mut policy: Policy = if meaningful {
            serde_saphyr::from_str(src).map_err(|e| Located::from_yaml(origin, &e, add_hint))?
        } else {
            Policy::default()
        };
        policy.resolve_schema(src, origin, base)?;
        let t = policy.output.tolerance;
        if !(t.is_finite() && t >= 0.0) {
            let (line, column) = key_position(src, "tolerance");
            return Err(PolicyError::at(
                origin,
                line,
                column,
                format!("output.tolerance `{t}` must be a number ≥ 0, e.g. 1e-9"),
            ));
        }
        Ok(policy)
    }

    fn resolve_schema(
        &mut self,
        src: &str,
        origin: &str,
        base: Option<&Path>,
    ) -> Result<(), PolicyError> {
        let (line, column) = key_position(src, "schema");
        match &self.output.schema {
            serde_json::Value::String(rel) => {
                let rel = rel.clone();
                let dir = base
                    .filter(|b| !b.as_os_str().is_empty())
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| PathBuf::from("."));
                let path = dir.join(&rel);
                let text = std::fs::read_to_string(&path).map_err(|e| {
                    PolicyError::at(
                        origin,
                        line,
                        column,
                        format!(
                            "cannot read output schema `{}` ({e}); give a path relative to the policy file or an inline mapping",
                            path.display()
                        ),
                    )
                })?;
                let value: serde_json::Value = serde_json::from_str(&text)
                    .or_else(|_| serde_saphyr::from_str(&text))
                    .map_err(|e| {
                        PolicyError::at(
                            origin,
                            line,
                            column,
                            format!(
                                "output schema `{}` is neither JSON nor YAML ({e})",
                                path.display()
                            ),
                        )
                    })?;
                self.output.schema = value;
            }
            serde_json::Value::Object(_) | serde_json::Value::Bool(_) => {}
            _ => {
                return Err(PolicyError::at(
                    origin,
                    line,
                    column,
                    "output.schema must be a JSON Schema mapping (e.g. `{type: object}`) or a path to a schema file",
                ));
            }
        }
        if !self.output.schema.is_object() && !self.output.schema.is_boolean() {
            return Err(PolicyError::at(
                origin,
                line,
                column,
                "the output schema must be a JSON Schema object",
            ));
        }
        if let Err(e) = jsonschema::validator_for(&self.output.schema) {
            return Err(PolicyError::at(
                origin,
                line,
                column,
                format!("the output schema is not a valid JSON Schema: {e}"),
            ));
        }
        Ok(())
    }

    /// The effective policy as YAML, with every default filled in and the
    /// output schema resolved. Loading it again gives the same policy.
    pub fn to_effective_yaml(&self) -> String {
        match serde_saphyr::to_string(self) {
            Ok(s) => s,
            Err(e) => {
                tracing::error!("cannot serialize the policy: {e}");
                format!("# cannot serialize the policy: {e}\n")
            }
        }
    }
}

/// The first position of `key:` in the YAML source (best effort, for errors
/// found after parsing).
fn key_position(src: &str, key: &str) -> (u64, u64) {
    for (i, line) in src.lines().enumerate() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix(key)
            && rest.trim_start().starts_with(':')
        {
            let col = line.chars().count() - t.chars().count() + 1;
            return (i as u64 + 1, col as u64);
        }
    }
    (0, 0)
}
