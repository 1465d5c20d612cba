//! `compute-bot action`: the GitHub Action entry point (being built).

/// Runs the action from the process environment; returns the exit status.
pub async fn run_from_process_env() -> i32 {
    eprintln!("error: `compute-bot action` is not available in this build yet");
    2
}
