//! Stage: execute. Locked-down Docker runs through bollard.

mod types;

pub use types::*;
