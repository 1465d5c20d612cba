//! The `inputs` section: which workspace files may be handed to the code.

use std::path::Path;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use super::defaults::{DEFAULT_INPUT_GLOBS, strs};
use crate::units::ByteSize;

/// `inputs`: which workspace files may be handed to the code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Inputs {
    /// Glob allowlist of workspace-relative paths (`**/*.csv`).
    #[serde(deserialize_with = "de_globs")]
    pub(crate) allow: Vec<String>,
    /// Largest single input file.
    pub max_file_bytes: ByteSize,
    /// Largest total of all input files of one run.
    pub max_total_bytes: ByteSize,
}

impl Default for Inputs {
    fn default() -> Self {
        Inputs {
            allow: strs(DEFAULT_INPUT_GLOBS),
            max_file_bytes: ByteSize::mib(16),
            max_total_bytes: ByteSize::mib(64),
        }
    }
}

impl Inputs {
    /// True when the workspace-relative `path` matches one of the `allow`
    /// globs. Paths with `..` components or absolute paths never match.
    pub fn is_allowed(&self, path: &str) -> bool {
        let p = Path::new(path);
        if p.is_absolute()
            || p.components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            return false;
        }
        let mut b = globset::GlobSetBuilder::new();
        for g in &self.allow {
            if let Ok(glob) = globset::GlobBuilder::new(g).literal_separator(true).build() {
                b.add(glob);
            }
        }
        b.build().map(|s| s.is_match(p)).unwrap_or(false)
    }
}

fn de_globs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    for g in &v {
        if let Err(e) = globset::GlobBuilder::new(g).literal_separator(true).build() {
            return Err(de::Error::custom(format!(
                "`{g}` is not a valid glob ({e}); write e.g. `data/**/*.csv`"
            )));
        }
    }
    Ok(v)
}
