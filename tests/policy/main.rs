//! The YAML policy and the static checker: loading, errors with positions, the corpus, robustness.
//!
//! One test crate per area (each links the library once); each file is a module.

mod policy_check;
mod policy_cli;
mod policy_corpus;
mod policy_file;
mod policy_robustness;
