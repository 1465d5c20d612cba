//! A problem in a file the user wrote (the policy, a watch file), with where
//! it is: `file:line:column: message`, the message saying what to write
//! instead. One type, so every file the bot reads reports alike.

use std::fmt;

/// Why a file the user wrote cannot be used, with where in the file.
///
/// Displayed as `file:line:column: message` (or `file: message` when the
/// problem has no position, e.g. the file cannot be read).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Located {
    /// The file (or the origin the text was given with).
    pub file: String,
    /// 1-based line, 0 when unknown.
    pub line: u64,
    /// 1-based column, 0 when unknown.
    pub column: u64,
    /// What is wrong and what to write instead.
    pub message: String,
}

impl fmt::Display for Located {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.file, self.line, self.column, self.message
            )
        }
    }
}

impl Located {
    /// A problem at `line`:`column` of `file` (0, 0: no position).
    pub fn at(file: &str, line: u64, column: u64, message: impl Into<String>) -> Self {
        Located {
            file: file.to_string(),
            line,
            column,
            message: message.into(),
        }
    }

    /// A YAML reader's error at its position, its message in plain words
    /// and passed through `hint` (which adds what to write instead).
    pub fn from_yaml(file: &str, err: &serde_saphyr::Error, hint: fn(&str) -> String) -> Self {
        use serde_saphyr::MessageFormatter;
        let inner = err.without_snippet();
        let (line, column) = inner
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((0, 0));
        let raw = serde_saphyr::UserMessageFormatter
            .format_message(inner)
            .into_owned();
        Located::at(file, line, column, hint(&raw))
    }
}
