//! `output.files`: the files a run leaves in `/out`, shown in the thread —
//! the branch they are committed to and how many of them are shown.

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

use compute_bot_units::ByteSize;

/// The branch the run's files go to unless the policy names another.
pub(crate) const DEFAULT_FILES_BRANCH: &str = "compute-bot-assets";

/// `output.files`: where the run's files are committed and how many are shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Files {
    /// The branch the files are committed to (one folder per run,
    /// `runs/<run id>-<attempt>/`); empty: nothing is committed and the
    /// thread points at the run's artifact instead.
    pub branch: FilesBranch,
    /// Most files committed and linked per run; the others are named in a
    /// note (the run's artifact still has them).
    pub max_files: u32,
    /// Most bytes committed per run, all files together.
    pub max_bytes: ByteSize,
}

impl Default for Files {
    fn default() -> Self {
        Files {
            branch: FilesBranch(DEFAULT_FILES_BRANCH.to_string()),
            max_files: 10,
            max_bytes: ByteSize::mib(10),
        }
    }
}

/// A branch name a policy may give `output.files.branch` (checked when the
/// policy is read, so a bad one is a `file:line` error, not a failed run).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct FilesBranch(String);

impl FilesBranch {
    /// The branch, or `None` when committing is switched off (`""`).
    pub fn get(&self) -> Option<&str> {
        (!self.0.is_empty()).then_some(self.0.as_str())
    }

    /// Why `name` is not a branch to write to, if it is not.
    fn problem(name: &str) -> Option<&'static str> {
        if name.is_empty() {
            return None;
        }
        let ok_chars = name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
        if !ok_chars {
            return Some("use letters, digits, `-`, `_`, `.` and `/` only");
        }
        if name.starts_with(['/', '-', '.'])
            || name.ends_with(['/', '.'])
            || name.ends_with(".lock")
            || name.contains("..")
            || name.contains("//")
            || name.contains("/.")
        {
            return Some("git does not allow this branch name");
        }
        None
    }
}

impl<'de> Deserialize<'de> for FilesBranch {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        match FilesBranch::problem(&name) {
            None => Ok(FilesBranch(name)),
            Some(why) => Err(de::Error::custom(format!(
                "files branch `{name}` cannot be used: {why}; write a branch name such as `{DEFAULT_FILES_BRANCH}`, or \"\" to commit nothing"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_names_git_refuses_are_refused() {
        for bad in ["a b", "-x", "x/", "x..y", "x.lock", "/x", "a//b", "ü"] {
            assert!(FilesBranch::problem(bad).is_some(), "{bad}");
        }
        for good in ["", "compute-bot-assets", "bot/files", "v1.2_x"] {
            assert!(FilesBranch::problem(good).is_none(), "{good}");
        }
        assert_eq!(FilesBranch(String::new()).get(), None);
    }
}
