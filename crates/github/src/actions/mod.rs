//! The Actions runtime I/O: what the runner hands the bot (the environment,
//! the event payload) and what the bot hands back (outputs, the step
//! summary, workflow commands). No API call is made here.

pub mod event;
pub mod workflow;
