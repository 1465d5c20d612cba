//! Side-by-side benchmark of a session of steps against one program.
//!
//! (a) six trivial steps in one session (step 1 with the container's
//!     start, five more, each paused and thawed between) against one
//!     program doing the same six statements: the difference over five is
//!     a step's own overhead (the round trip through the runner and the
//!     thaw; the freeze runs while the model thinks, 150 ms here, not
//!     counted), without the code's time and the model's;
//! (b) a one-step session (its code given as the last step, then the
//!     session's end) against a run of the same code today;
//! (c) the six steps as exact cells (`Then::Next`: the next step follows
//!     at once, so the container is neither frozen nor thawed between),
//!     against the same program: a step's overhead where nothing waits.
//!
//! Both sides start from a container prepared ahead and end with it
//! removed; rounds are interleaved so machine noise hits both alike.
//! Run with: `cargo bench --bench session` (add `-- 30` for 30 rounds).

use std::time::{Duration, Instant};

use compute_bot::sandbox::{Job, PreparedRun, SandboxConfig, StepOptions, Then, docker::Docker};

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1000.0
}

fn line(name: &str, v: &[Duration]) -> f64 {
    let m = median(v.to_vec());
    println!("{name:<58} n={:<3} median {m:>7.1} ms", v.len());
    m
}

const STEPS: [&str; 6] = [
    "a = 1",
    "b = a + 1",
    "c = b * 2",
    "d = [a, b, c]",
    "e = sum(d)",
    "print(e)",
];

fn options(last: bool) -> StepOptions {
    StepOptions {
        last,
        timeout: Duration::from_secs(60),
        then: Then::Wait,
    }
}

fn job(code: &str) -> Job {
    Job {
        code: code.into(),
        ..Default::default()
    }
}

/// Each later step's whole time and its collection (from the code handed
/// over to its report), for the split printed at the end.
static COLLECTED: std::sync::Mutex<Vec<(Duration, Duration)>> = std::sync::Mutex::new(Vec::new());

/// What the model takes between steps here: not counted. The container's
/// freeze runs in it, as it does while a real model writes.
const MODEL: Duration = Duration::from_millis(150);

/// Six steps in one session: the time from handing over step 1 to the
/// session's end (the container removed), without the model's time
/// between steps.
async fn session(sb: &Docker, cfg: &SandboxConfig, then: Then) -> Duration {
    let prepared: Box<dyn PreparedRun> = Box::new(sb.prepare(cfg).await.unwrap());
    tokio::time::sleep(Duration::from_millis(400)).await;
    let t = Instant::now();
    let options = |last: bool| StepOptions {
        then,
        ..options(last)
    };
    let (_, mut steps) = prepared
        .begin(&job(STEPS[0]), options(false))
        .await
        .unwrap();
    let mut took = t.elapsed();
    let mut last = None;
    for (i, code) in STEPS.iter().enumerate().skip(1) {
        if then == Then::Wait {
            tokio::time::sleep(MODEL).await;
        }
        let t = Instant::now();
        let o = steps
            .step(code, options(i == STEPS.len() - 1))
            .await
            .unwrap();
        let spent = t.elapsed();
        took += spent;
        if then == Then::Wait {
            COLLECTED
                .lock()
                .unwrap()
                .push((spent, Duration::from_millis(o.collected_ms)));
        }
        last = Some(o);
    }
    let mut last = last.unwrap();
    let t = Instant::now();
    steps.end(Some(&mut last)).await;
    took += t.elapsed();
    assert_eq!(last.stdout.trim(), "7", "{last:?}");
    took
}

/// The same six statements as one program.
async fn program(sb: &Docker, cfg: &SandboxConfig, code: &str) -> Duration {
    let prepared = sb.prepare(cfg).await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let t = Instant::now();
    let o = prepared.execute(&job(code)).await.unwrap();
    let took = t.elapsed();
    assert_eq!(o.stdout.trim(), "7", "{o:?}");
    took
}

/// The program as a one-step session.
async fn one_step(sb: &Docker, cfg: &SandboxConfig, code: &str) -> Duration {
    let prepared: Box<dyn PreparedRun> = Box::new(sb.prepare(cfg).await.unwrap());
    tokio::time::sleep(Duration::from_millis(400)).await;
    let t = Instant::now();
    let (mut o, steps) = prepared.begin(&job(code), options(true)).await.unwrap();
    steps.end(Some(&mut o)).await;
    let took = t.elapsed();
    assert_eq!(o.stdout.trim(), "7", "{o:?}");
    took
}

fn main() {
    let rounds: usize = std::env::args()
        .filter_map(|a| a.parse().ok())
        .next()
        .unwrap_or(15);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let sb = Docker::connect().await.expect("Docker engine");
        let cfg = SandboxConfig::default();
        let whole = STEPS.join("\n");
        // Warm-up: image facts cached, page cache warm on every side.
        session(&sb, &cfg, Then::Wait).await;
        program(&sb, &cfg, &whole).await;
        let (mut six, mut one, mut single, mut cells) = (vec![], vec![], vec![], vec![]);
        for _ in 0..rounds {
            six.push(session(&sb, &cfg, Then::Wait).await);
            one.push(program(&sb, &cfg, &whole).await);
            single.push(one_step(&sb, &cfg, &whole).await);
            cells.push(session(&sb, &cfg, Then::Next).await);
        }
        println!("session benchmark, {rounds} interleaved rounds (handover to removal):");
        let s = line("(a) six trivial steps in one session", &six);
        let p = line("(a) one program with the same six statements", &one);
        println!(
            "    a step's own overhead: ({s:.1} - {p:.1}) / 5 = {:.1} ms",
            (s - p) / 5.0
        );
        let split = COLLECTED.lock().unwrap().clone();
        let whole = median(split.iter().map(|s| s.0).collect());
        let runner = median(split.iter().map(|s| s.1).collect());
        println!(
            "    a later step, median: {whole:.1} ms in all, {runner:.1} ms from handover to its report (the rest: thaw and the bot)"
        );
        let o = line("(b) the program as a one-step session", &single);
        println!("    one-step session / run: {:.2}x", o / p);
        let c = line("(c) six trivial steps as exact cells (no freeze)", &cells);
        println!(
            "    a cell's own overhead: ({c:.1} - {p:.1}) / 5 = {:.1} ms",
            (c - p) / 5.0
        );
    });
}
