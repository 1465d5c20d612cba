//! Stage: policy check. The YAML policy and the static check of code against it.
//!
//! The crate `compute-bot-policy`: it knows the sandbox's plain types
//! (`Limits`, `RuntimeRules`, the default image) and the units, never an
//! engine, a model or GitHub; compute-bot re-exports it as
//! `compute_bot::policy`. Two modules of plain data ride with it because the
//! policy reads them and so do parts of the bot above it: [`located`] (a
//! problem in a file the user wrote, with its position) and [`sources`] (the
//! `github:` sources as written); the bot re-exports them under their old
//! names, `compute_bot::located` and `compute_bot::sources`. They use
//! nothing else of the crate.
//!
//! # What this is, honestly
//!
//! The static check is a **first gate that explains itself**: it parses the
//! code with ruff's Python parser (a real AST, Python 3.12+ syntax incl.
//! PEP 695 and PEP 701), resolves imports and aliases, and denies or
//! escalates before any container starts. It errs towards denying: what it
//! cannot resolve statically (computed attribute names, dynamic imports,
//! `getattr` passed around as a value) is denied. It is not the security
//! boundary. The container is (no network, read-only root, dropped
//! capabilities, cgroup limits), and the in-sandbox runner's audit hooks are
//! a second line that refuses [`Policy::runtime_rules`] imports and file
//! opens outside `/data`, `/tmp` and `/out` while the code runs.
//!
//! # The policy file
//!
//! See [`Policy`] and `policies/default.yml` (every field commented). Read
//! with serde-saphyr: pure Rust, `forbid(unsafe_code)`, maintained, rejects
//! duplicate keys and reports line and column (`serde_yaml` is deprecated
//! and archived). Unknown keys are errors; omitted fields take safe
//! defaults; errors read `file:line:column: message` and say what to write.
//!
//! # Rule ids
//!
//! Stable ids used in findings, in `code.escalate` and in reports, each
//! declared once in `rules.rs` (id, severity, whether it may escalate, what
//! it catches); the table of docs/policy.md ("Rule ids") is made from that
//! declaration and held to it by a test. The names each family rule denies
//! are declared once in `families.rs`, which the default `deny_modules` is
//! made from too. The built-in families cannot be switched off by a policy;
//! a policy can only add to them (`deny_modules`, `deny_calls`) or turn
//! findings into escalations (`code.escalate`).
//!
//! # How names are resolved
//!
//! A flow-insensitive pass binds every name to the dotted names it may
//! hold: `import a.b as c`, `from a import b`, assignments and tuple
//! unpacking, walrus, `for x in [..]`, comprehension targets, parameter
//! defaults, `getattr(x, <constant>)`, `__import__('<constant>')`,
//! `sys.modules['<constant>']`. Constants fold through `+`, implicit
//! concatenation, f-strings of constants, `''.join([...])`, `[::-1]`,
//! `chr(n)`, `.lower()/.upper()/.strip()` and names assigned one constant.
//! Identifiers are NFKC-normalized by the parser, as Python does
//! (`ｅｖａｌ` is `eval`). Builtins that matter (`eval`, `getattr`, `open`,
//! ...) are checked even when the code also binds the name.
//!
//! # Robustness
//!
//! [`check_code`] never panics or hangs: size is checked first, bracket and
//! AST nesting are bounded, resolution and folding have fixed depth and
//! width limits, and parsing and walking run on a dedicated thread whose
//! stack is sized for the input (ruff's parser grows its own stack with
//! `stacker`; dropping a very deep tree is recursive). A panic on that
//! thread becomes an `internal-error` deny.

#![deny(missing_docs)]

mod authorize;
mod check;
pub mod cli;
mod code;
mod config;
mod counted;
mod defaults;
mod environment;
mod families;
mod files;
mod inputs;
pub mod located;
mod output;
mod prices;
mod reader;
mod rules;
mod sandbox;
mod session;
pub mod sources;
mod verdict;

pub use authorize::{
    Act, Actor, Authorization, Ignored, Permission, PermissionCheck, Refusal, Who,
};
pub use check::allows;
pub use check::check_code;
pub use config::{DataLevel, Explain, Policy};
pub use files::Files;
pub use inputs::Inputs;
pub use output::{OnCheckFailure, Repeat, VerifyMode};
pub use prices::Prices;
pub use reader::PolicyError;
pub use rules::RuleId;
pub use session::{MaxSteps, Session};
pub use verdict::{Decision, Finding, Severity, Verdict};
