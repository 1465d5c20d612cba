//! Stage: policy check. The YAML policy and the static check of code against it.

mod check;
pub mod cli;
mod config;
mod rules;
mod verdict;

pub use check::{MAX_NESTING, check_code};
pub use config::{
    Attempts, CodePolicy, DEFAULT_ALLOW_IMPORTS, DEFAULT_DENY_CALLS, DEFAULT_DENY_MODULES,
    Escalation, Inputs, Language, MAX_ATTEMPTS, MAX_CODE_BYTES_LIMIT, Network, Output,
    Permission, Policy, PolicyError, SandboxPolicy, Version, Who,
};
pub use rules::RuleId;
pub use verdict::{Decision, Finding, Severity, Verdict};
