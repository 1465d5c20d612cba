//! A loopback TCP proxy to the Docker engine's Unix socket whose open
//! connections can be cut at once (the listener stays, so later
//! connections work again): the engine connection lost mid-run. Shared by
//! the sandbox tests and the reliability bench.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The proxy; point `DOCKER_HOST` at `tcp://127.0.0.1:{port}`.
pub struct EngineProxy {
    /// The loopback port it listens on.
    pub port: u16,
    conns: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
    accepted: Arc<AtomicUsize>,
}

impl EngineProxy {
    /// Listens on a free loopback port and forwards to `/var/run/docker.sock`.
    pub async fn start() -> EngineProxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let conns = Arc::new(Mutex::new(Vec::new()));
        let accepted = Arc::new(AtomicUsize::new(0));
        let (list, count) = (conns.clone(), accepted.clone());
        tokio::spawn(async move {
            while let Ok((mut tcp, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let task = tokio::spawn(async move {
                    if let Ok(mut unix) =
                        tokio::net::UnixStream::connect("/var/run/docker.sock").await
                    {
                        let _ = tokio::io::copy_bidirectional(&mut tcp, &mut unix).await;
                    }
                });
                list.lock().unwrap().push(task.abort_handle());
            }
        });
        EngineProxy {
            port,
            conns,
            accepted,
        }
    }

    /// Its address, for `DOCKER_HOST` or a policy's `sandbox.engine`.
    pub fn address(&self) -> String {
        format!("tcp://127.0.0.1:{}", self.port)
    }

    /// How many connections it has accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Drops every open connection (the attach stream, pooled requests);
    /// returns how many were open.
    pub fn cut(&self) -> usize {
        let mut conns = self.conns.lock().unwrap();
        let n = conns.iter().filter(|c| !c.is_finished()).count();
        conns.drain(..).for_each(|c| c.abort());
        n
    }

    /// A sandbox connected through the proxy.
    pub async fn sandbox(&self) -> compute_bot::sandbox::docker::Docker {
        // SAFETY: set before the client is built and removed right after;
        // each test runs in its own process, and nothing else reads
        // DOCKER_HOST concurrently here.
        unsafe { std::env::set_var("DOCKER_HOST", format!("tcp://127.0.0.1:{}", self.port)) };
        let sandbox = compute_bot::sandbox::docker::Docker::connect().await;
        unsafe { std::env::remove_var("DOCKER_HOST") };
        sandbox.expect("the Docker engine through the proxy")
    }
}
