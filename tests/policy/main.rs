//! The YAML policy, its authorization and the static checker: loading, errors with positions,
//! who may do what, the corpus, robustness; and property-based fuzzing of every reader of
//! untrusted input (the command parser, the event reader, the policy loader, the Python checker).
//!
//! One test crate per area (each links the library once); each file is a module.

mod fuzz;
mod policy_authorize;
mod policy_check;
mod policy_cli;
mod policy_corpus;
mod policy_file;
mod policy_robustness;
