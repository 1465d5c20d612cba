//! Stand-ins shared by the integration tests.

pub mod github_standin;
