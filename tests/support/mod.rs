//! Loopback stand-ins shared by the integration tests.

pub mod llm_standin;
