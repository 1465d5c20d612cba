//! The REST layer: every call the bot makes to GitHub's API. It knows the
//! repository it works on and the token, never a command, a handler or a
//! text the bot posts.

pub mod client;
pub mod comments;
pub mod error;
pub mod repo;
