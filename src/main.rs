//! The `compute-bot` binary: logging set-up, the runtime, and the one place
//! that turns how a run ended into the process exit.

use compute_bot::status::{Exit, Status};

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("COMPUTE_BOT_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let exit = match tokio::runtime::Runtime::new() {
        Ok(rt) => {
            let exit = rt.block_on(compute_bot::cli::main());
            drop(rt);
            exit
        }
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            Exit::cli(Status::Error)
        }
    };
    std::process::exit(exit.code());
}
