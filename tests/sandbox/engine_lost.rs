//! The connection to the engine lost while the code runs (through a proxy
//! whose connections are cut): the run ends promptly as `lost`, says why,
//! and its container is removed. Not in the runsc / Podman passes: the
//! proxy forwards to the Docker socket itself.

use std::time::Duration;

use compute_bot::agent::{engine_problem, outcome_problem};
use compute_bot::sandbox::{Job, Limits, RunStatus, SandboxConfig, docker::Docker};

use crate::support::engine_proxy::EngineProxy;

#[tokio::test]
async fn a_lost_engine_connection_ends_the_run_as_lost_and_removes_the_container() {
    let proxy = EngineProxy::start().await;
    let sb = proxy.sandbox().await;
    let cfg = SandboxConfig {
        limits: Limits {
            timeout: Duration::from_secs(30),
            ..Default::default()
        },
        preload: Vec::new(),
        runtime: crate::machine_runtime(),
        ..Default::default()
    };
    let prepared = sb.prepare(&cfg).await.unwrap();
    let name = prepared.name().to_string();
    let job = Job {
        code: "import time\ntime.sleep(60)\n".into(),
        ..Default::default()
    };
    let run = tokio::spawn(async move { prepared.execute(&job).await });
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(proxy.cut() > 0, "no connection was open to cut");
    let o = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .expect("the run should end soon after the connection is lost, not at its deadline")
        .unwrap()
        .expect("an outcome that says what happened, not a bare error");
    assert_eq!(o.status, RunStatus::Lost, "{:?}", o.notes);
    assert!(!o.timed_out);
    assert!(
        o.notes
            .iter()
            .any(|n| n.contains("connection to the Docker engine was lost")),
        "{:?}",
        o.notes
    );
    // The loop stops instead of asking the model to repair code that did
    // nothing wrong; other callers still see an unusable outcome.
    let reason = engine_problem(&o).expect("a lost run is an engine problem");
    assert!(reason.contains("doctor"), "{reason}");
    assert_eq!(outcome_problem(&o), Some(reason));
    sb.close().await;
    let direct = Docker::connect().await.unwrap();
    match direct.docker().inspect_container(&name, None).await {
        Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        }) => {}
        other => panic!("container {name} outlived a lost run: {other:?}"),
    }
}
