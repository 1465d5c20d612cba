//! Sessions of steps against the real Docker engine: one container and one
//! interpreter per session, globals kept from step to step, each step's
//! output and facts its own, the container frozen between steps, and a
//! forged step end caught.

use std::time::Duration;

use compute_bot::sandbox::{
    InputFile, Job, Outcome, PreparedRun, RunStatus, SandboxConfig, StepOptions, Steps, Then,
    docker::Docker,
};

async fn sandbox() -> Docker {
    Docker::connect()
        .await
        .expect("the Docker engine must be running for the sandbox tests")
}

fn config() -> SandboxConfig {
    crate::long_deadline_config(1.0)
}

fn look() -> StepOptions {
    StepOptions {
        last: false,
        timeout: Duration::from_secs(60),
        then: Then::Wait,
    }
}

fn last() -> StepOptions {
    StepOptions {
        last: true,
        ..look()
    }
}

fn job(code: &str, inputs: Vec<InputFile>) -> Job {
    Job {
        code: code.to_string(),
        inputs,
        rules: compute_bot::policy::Policy::default().runtime_rules(),
    }
}

/// Starts a session with `code` as step 1 in a fresh container.
async fn begin(sb: &Docker, code: &str, inputs: Vec<InputFile>) -> (Outcome, Box<dyn Steps>) {
    let prepared: Box<dyn PreparedRun> = Box::new(sb.prepare(&config()).await.expect("prepare"));
    prepared
        .begin(&job(code, inputs), look())
        .await
        .expect("step 1")
}

/// When the engine last started `container` (`State.StartedAt` in an
/// inspect): a second start changes it. Not the events API: Podman keeps its
/// events in a file it rotates at 1 MiB, which can lose a start event.
async fn started_at(sb: &Docker, container: &str) -> String {
    sb.docker()
        .inspect_container(container, None)
        .await
        .expect("inspect the session's container")
        .state
        .and_then(|s| s.started_at)
        .expect("a started container has a start time")
}

async fn paused(sb: &Docker, container: &str) -> bool {
    sb.docker()
        .inspect_container(container, None)
        .await
        .ok()
        .and_then(|i| i.state)
        .and_then(|s| s.paused)
        == Some(true)
}

/// Whether `container` is paused within two seconds (the pause goes on
/// while the outcome returns).
async fn frozen_soon(sb: &Docker, container: &str) -> bool {
    for _ in 0..100 {
        if paused(sb, container).await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test]
async fn a_session_keeps_its_globals_and_each_step_has_its_own_output_in_one_container() {
    let sb = sandbox().await;
    let csv = InputFile::new(
        "sales.csv",
        b"region,amount\nnorth,10\nsouth,5\nnorth,7\n".to_vec(),
    );
    let (one, mut steps) = begin(
        &sb,
        "import pandas as pd\ndf = pd.read_csv('/data/sales.csv')\nprint(df['region'].value_counts().to_dict())\n",
        vec![csv],
    )
    .await;
    assert_eq!(one.status, RunStatus::Ok, "{one:#?}");
    assert_eq!(one.step, Some(1));
    assert_eq!(one.stdout, "{'north': 2, 'south': 1}\n");
    let container = one.container.clone();
    let started = started_at(&sb, &container).await;
    // The pause goes on while the outcome returns.
    let frozen = frozen_soon(&sb, &container).await;
    assert!(frozen, "the container is frozen while the model thinks");

    let two = steps
        .step(
            "total = int(df['amount'].sum())\nprint('rows', len(df))\ntotal * 2",
            look(),
        )
        .await
        .expect("step 2");
    assert_eq!(two.status, RunStatus::Ok, "{two:#?}");
    assert_eq!(two.step, Some(2));
    assert_eq!(two.stdout, "rows 3\n", "step 2's output is its own");
    assert_eq!(
        two.value.as_deref(),
        Some("44"),
        "the last expression's value"
    );
    assert_eq!(two.container, container);

    // A crash keeps the session: the next step repairs from the same state.
    let three = steps
        .step("print('before')\nundefined_name + 1\n", look())
        .await
        .expect("step 3");
    assert_eq!(three.status, RunStatus::Error);
    assert_eq!(three.stdout, "before\n");
    assert!(
        three.stderr.contains("step3.py") && three.stderr.contains("NameError"),
        "{}",
        three.stderr
    );
    assert!(
        !steps.is_over(),
        "a step that raised leaves the session open"
    );

    let mut four = steps
        .step(
            "import json, os\nos.makedirs('/out', exist_ok=True)\nopen('/out/note.txt', 'w').write('n')\nprint(json.dumps({'total': total}))\n",
            last(),
        )
        .await
        .expect("step 4");
    assert_eq!(four.status, RunStatus::Ok, "{four:#?}");
    assert_eq!(four.stdout, "{\"total\": 22}\n");
    assert_eq!(
        four.artifacts
            .iter()
            .map(|a| a.name.as_str())
            .collect::<Vec<_>>(),
        ["note.txt"],
        "a last step's /out files are collected"
    );
    assert!(
        one.artifacts.is_empty() && two.artifacts.is_empty(),
        "a look step's are not"
    );
    assert_eq!(
        started_at(&sb, &container).await,
        started,
        "one container start per session"
    );
    steps.end(Some(&mut four)).await;
    assert_eq!(four.status, RunStatus::Ok, "{four:#?}");
    sb.settled().await;
    assert!(
        sb.docker()
            .inspect_container(&container, None)
            .await
            .is_err(),
        "the session's container is removed at its end"
    );
}

/// The files of a step's kernel record (runc: the runner's, per step;
/// runsc: the Sentry's log, cut at each step's report), checked to be seen
/// outside the code's process and named so.
fn kernel_files(o: &Outcome) -> Vec<String> {
    use compute_bot::sandbox::{Source, Witness};
    let (witness, source) = if crate::machine_runtime() == compute_bot::sandbox::Runtime::Runsc {
        (Witness::Sentry, Source::SandboxKernelObserved)
    } else {
        (Witness::Runner, Source::KernelObserved)
    };
    let k = o.audit.kernel.as_ref().expect("the kernel's record");
    assert_eq!(
        k.witness(),
        Some(witness),
        "step {:?}: no record of the opens (under runsc: register runsc-audit with scripts/install-gvisor): {:?}",
        o.step,
        o.notes
    );
    assert_eq!(o.sources.get("audit.kernel.files"), Some(&source));
    k.files.iter().map(|f| f.path.clone()).collect()
}

#[tokio::test]
async fn each_step_has_its_own_record_of_files() {
    let sb = sandbox().await;
    let (one, mut steps) = begin(
        &sb,
        "text = open('/data/a.csv').read()\nprint(len(text))\n",
        vec![
            InputFile::new("a.csv", b"a\n1\n".to_vec()),
            InputFile::new("b.csv", b"b\n2\n".to_vec()),
        ],
    )
    .await;
    assert_eq!(one.status, RunStatus::Ok, "{one:#?}");
    let files = kernel_files(&one);
    assert!(files.contains(&"/data/a.csv".to_string()), "{files:?}");
    assert!(
        !files.contains(&"/data/b.csv".to_string()),
        "step 2's open is not step 1's: {files:?}"
    );

    let two = steps
        .step(
            "more = open('/data/b.csv').read()\nopen('/tmp/x', 'w').write(text + more)\nprint('ok')\n",
            look(),
        )
        .await
        .expect("step 2");
    assert_eq!(two.status, RunStatus::Ok, "{two:#?}");
    let files = kernel_files(&two);
    for own in ["/data/b.csv", "/tmp/x"] {
        assert!(files.contains(&own.to_string()), "{own}: {files:?}");
    }
    assert!(
        !files.contains(&"/data/a.csv".to_string()),
        "step 1's open is not step 2's: {files:?}"
    );

    // Step 1's file again, in the step that gives the result: listed in
    // this step, and the session's end adds no other step's file to it.
    let mut three = steps
        .step("print(len(open('/data/a.csv').read()))\n", last())
        .await
        .expect("step 3");
    assert_eq!(three.status, RunStatus::Ok, "{three:#?}");
    steps.end(Some(&mut three)).await;
    assert_eq!(three.status, RunStatus::Ok, "{three:#?}");
    let files = kernel_files(&three);
    assert!(files.contains(&"/data/a.csv".to_string()), "{files:?}");
    for other in ["/data/b.csv", "/tmp/x"] {
        assert!(!files.contains(&other.to_string()), "{other}: {files:?}");
    }
    sb.settled().await;
}

#[tokio::test]
async fn nothing_the_code_left_running_works_between_steps() {
    let sb = sandbox().await;
    let (one, mut steps) = begin(
        &sb,
        "import threading, time\nticks = [0]\ndef tick():\n    while True:\n        ticks[0] += 1\n        time.sleep(0.01)\nthreading.Thread(target=tick, daemon=True).start()\ntime.sleep(0.2)\nprint(ticks[0])\n",
        vec![],
    )
    .await;
    assert_eq!(one.status, RunStatus::Ok, "{one:#?}");
    let before: u64 = one.stdout.trim().parse().expect("a count");
    // The model thinks for a second.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let two = steps
        .step("print(ticks[0])\n", look())
        .await
        .expect("step 2");
    let after: u64 = two.stdout.trim().parse().expect("a count");
    assert!(
        after < before + 40,
        "the thread ticked {} times while the container waited (frozen: a few at most)",
        after - before
    );
    steps.end(None).await;
    sb.settled().await;
}

#[tokio::test]
async fn a_forged_step_end_makes_the_session_tampered() {
    let sb = sandbox().await;
    // The code writes a step's end on the interpreter's audit channel
    // itself, then goes on: its output and facts would land in the next
    // step's account.
    let (one, mut steps) = begin(
        &sb,
        "import os, sys, time\nos.write(int(sys.argv[2]), b'stepend\\t0\\t0\\t\\n')\ntime.sleep(0.3)\nprint('late')\n",
        vec![],
    )
    .await;
    let two = if steps.is_over() {
        one
    } else {
        steps.step("print('two')\n", look()).await.expect("step 2")
    };
    assert_eq!(two.status, RunStatus::Tampered, "{two:#?}");
    assert!(
        two.tampered.iter().any(|t| t.contains("step")),
        "{:?}",
        two.tampered
    );
    assert!(steps.is_over(), "a tampered step ends the session");
    steps.end(None).await;
    sb.settled().await;
}

#[tokio::test]
async fn a_step_past_its_deadline_ends_the_session_as_a_timeout() {
    let sb = sandbox().await;
    let (one, mut steps) = begin(&sb, "x = 1\n", vec![]).await;
    assert_eq!(one.status, RunStatus::Ok, "{one:#?}");
    let two = steps
        .step(
            "import time\ntime.sleep(30)\n",
            StepOptions {
                last: false,
                timeout: Duration::from_secs(2),
                then: Then::Wait,
            },
        )
        .await
        .expect("step 2");
    assert_eq!(two.status, RunStatus::Timeout, "{two:#?}");
    assert!(steps.is_over());
    assert!(steps.step("print(x)\n", look()).await.is_err());
    let container = two.container.clone();
    steps.end(None).await;
    sb.settled().await;
    assert!(
        sb.docker()
            .inspect_container(&container, None)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_forged_step_end_in_the_last_step_is_caught_at_the_sessions_end() {
    let sb = sandbox().await;
    let prepared: Box<dyn PreparedRun> = Box::new(sb.prepare(&config()).await.expect("prepare"));
    let (mut one, steps) = prepared
        .begin(
            &job(
                "import os, sys, time\nprint('{\"total\": 1}')\nos.write(int(sys.argv[2]), b'stepend\\t0\\t0\\t\\n')\ntime.sleep(0.3)\nopen('/tmp/after', 'w').write('x')\n",
                vec![],
            ),
            last(),
        )
        .await
        .expect("step 1");
    steps.end(Some(&mut one)).await;
    assert_eq!(one.status, RunStatus::Tampered, "{one:#?}");
    sb.settled().await;
}

#[tokio::test]
async fn a_step_the_code_writes_to_the_runners_stdin_never_runs() {
    let sb = sandbox().await;
    // pid 1's stdin carries the bot's steps: the code cannot open it for
    // writing (runc: the runner refuses /proc/1/fd/*, ELOOP; runsc: it is
    // the runner's uid's, EACCES). Were it written, a step line without
    // the session key's tag would never run and would make the session
    // tampered (the runner checks every step's tag).
    // No runtime rules: the interpreter's hook would refuse the open
    // first; what is tested is the runner and the kernel.
    let prepared: Box<dyn PreparedRun> = Box::new(sb.prepare(&config()).await.expect("prepare"));
    let code = "import os\ntry:\n    fd = os.open('/proc/1/fd/0', os.O_WRONLY)\n    os.write(fd, b'step 17 0 5000 ' + b'0' * 32 + b'\\nprint(\"injected\")')\n    print('written')\nexcept OSError as e:\n    print('refused', e.errno)\n";
    let job = Job {
        code: code.into(),
        ..Default::default()
    };
    let (one, mut steps) = prepared.begin(&job, look()).await.expect("step 1");
    assert_eq!(one.status, RunStatus::Ok, "{one:#?}");
    let two = steps.step("print('two')\n", look()).await.expect("step 2");
    assert!(!two.stdout.contains("injected"), "{two:#?}");
    if one.stdout.starts_with("written") {
        assert_eq!(two.status, RunStatus::Tampered, "{two:#?}");
        assert!(
            two.tampered
                .iter()
                .any(|t| t.contains("without the bot's tag")),
            "{:?}",
            two.tampered
        );
    } else {
        assert!(one.stdout.starts_with("refused"), "{}", one.stdout);
        assert_eq!(two.stdout, "two\n", "{two:#?}");
    }
    steps.end(None).await;
    sb.settled().await;
}

#[tokio::test]
async fn a_step_whose_calls_flood_gvisors_log_is_stopped_and_flagged_alone() {
    if crate::machine_runtime() != compute_bot::sandbox::Runtime::Runsc {
        // The cap is on gVisor's log; under runc the runner's record has
        // its caps per step.
        return;
    }
    let sb = sandbox().await;
    let (one, mut steps) = begin(
        &sb,
        "print(len(open('/data/a.csv').read()))\n",
        vec![InputFile::new("a.csv", b"a\n1\n".to_vec())],
    )
    .await;
    assert_eq!(one.status, RunStatus::Ok, "{one:#?}");
    assert!(one.tampered.is_empty(), "{:?}", one.tampered);
    // The flood would go on for 100 s: only the log's cap stops it sooner.
    let flood = "import os, time\nend = time.time() + 100\ni = 0\nwhile time.time() < end:\n    for _ in range(1000):\n        try:\n            os.close(os.open('/tmp/nx%d' % i, os.O_RDONLY))\n        except OSError:\n            pass\n        i += 1\nprint(i)\n";
    let two = steps
        .step(
            flood,
            StepOptions {
                last: false,
                timeout: Duration::from_secs(110),
                then: Then::Wait,
            },
        )
        .await
        .expect("step 2");
    assert_eq!(two.status, RunStatus::Tampered, "{:?}", two.notes);
    assert!(
        two.tampered.iter().any(|t| t.contains("passed its cap")),
        "{:?}",
        two.tampered
    );
    assert!(two.stdout.trim().is_empty(), "the flood ran to its end");
    assert!(steps.is_over(), "a stopped step ends the session");
    steps.end(None).await;
    sb.settled().await;
}

#[tokio::test]
async fn steps_that_follow_at_once_are_not_frozen_and_a_wait_still_is() {
    let sb = sandbox().await;
    let next = StepOptions {
        then: Then::Next,
        ..look()
    };
    let prepared: Box<dyn PreparedRun> = Box::new(sb.prepare(&config()).await.expect("prepare"));
    let (one, mut steps) = prepared
        .begin(&job("a = 1\n", vec![]), next)
        .await
        .expect("step 1");
    assert_eq!(one.status, RunStatus::Ok, "{one:#?}");
    let container = one.container.clone();
    let started = started_at(&sb, &container).await;
    // Exact cells: the next one follows at once, so no pause is asked for.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !paused(&sb, &container).await,
        "a step followed at once is not frozen"
    );
    let two = steps.step("b = a + 1\n", look()).await.expect("step 2");
    assert_eq!(two.status, RunStatus::Ok, "{two:#?}");
    // A wait follows step 2 (`Then::Wait`): frozen while it lasts.
    let frozen = frozen_soon(&sb, &container).await;
    assert!(frozen, "a step a wait follows is frozen");
    let three = steps.step("print(b)\n", last()).await.expect("step 3");
    assert_eq!(three.stdout, "2\n", "{three:#?}");
    // Not started again between the steps: the engine's own start time.
    assert_eq!(
        started_at(&sb, &container).await,
        started,
        "one container start"
    );
    steps.end(None).await;
    sb.settled().await;
}
