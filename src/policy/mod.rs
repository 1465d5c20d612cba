//! Stage: policy check. The YAML policy and the static check of code against it.

mod verdict;

pub use verdict::{Decision, Finding, Severity, Verdict};
