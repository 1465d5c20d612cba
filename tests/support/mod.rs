//! Loopback stand-ins shared by the integration tests: the GitHub API and
//! the model providers, speaking their real wire formats and keeping state.
#![allow(dead_code)]

pub mod github_standin;
pub mod llm_standin;
