//! Side-by-side benchmark of the execution layer against the `docker` CLI.
//!
//! (a) a cold run of `print(1)` through the bot's layer (create, attach,
//!     start, hand over, collect, remove) against `docker run --rm` with the
//!     same restrictions running `python3 -c 'print(1)'`;
//! (b) executing `print(1)` on a container prepared ahead of time.
//!
//! Runs are interleaved so machine noise hits both sides alike.
//! Run with: `cargo bench --bench sandbox` (add `-- 50` for 50 rounds).

use std::process::Command;
use std::time::{Duration, Instant};

use compute_bot::sandbox::{DEFAULT_IMAGE, Job, Limits, SandboxConfig, docker::Docker};

fn stats(name: &str, mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let median = ms(v[v.len() / 2]);
    let p95 = ms(v[((v.len() as f64 * 0.95).ceil() as usize).min(v.len()) - 1]);
    println!(
        "{name:<44} n={:<3} median {median:>7.1} ms   p95 {p95:>7.1} ms",
        v.len()
    );
    (median, p95)
}

fn docker_cli(limits: &Limits) -> Duration {
    let start = Instant::now();
    let out = Command::new("docker")
        .args([
            "run",
            "--rm",
            "-i",
            "--init",
            "--network",
            "none",
            "--read-only",
        ])
        .args([
            "--cap-drop",
            "ALL",
            "--security-opt",
            "no-new-privileges:true",
        ])
        .args(["--user", "10001:10001", "--log-driver", "none"])
        .args(["--pids-limit", &limits.pids.to_string()])
        .args(["--memory", &limits.memory.bytes().to_string()])
        .args(["--memory-swap", &limits.memory.bytes().to_string()])
        .args(["--cpu-period", "100000", "--cpu-quota", "100000"])
        .args([
            "--tmpfs",
            "/tmp:rw,noexec,nosuid,nodev,size=67108864,mode=1777",
        ])
        .args([
            "--tmpfs",
            "/data:rw,noexec,nosuid,nodev,size=67108864,mode=0700,uid=10001,gid=10001",
        ])
        .args([
            "--tmpfs",
            "/out:rw,noexec,nosuid,nodev,size=8388608,mode=0700,uid=10001,gid=10001",
        ])
        .args(["--ulimit", "nofile=256:256", "--ulimit", "core=0:0"])
        .args(["--ulimit", "fsize=67108864:67108864"])
        .args([DEFAULT_IMAGE, "python3", "-I", "-c", "print(1)"])
        .output()
        .expect("docker CLI");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1", "{out:?}");
    start.elapsed()
}

fn main() {
    let rounds: usize = std::env::args()
        .filter_map(|a| a.parse().ok())
        .next()
        .unwrap_or(30);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let sb = Docker::connect().await.expect("Docker engine");
        let cfg = SandboxConfig::default();
        let job = Job {
            code: "print(1)".into(),
            ..Default::default()
        };
        // Warm-up: image facts cached, page cache warm on both sides.
        sb.run(&cfg, &job).await.unwrap();
        docker_cli(&cfg.limits);

        let (mut layer, mut cli, mut exec, mut answer) = (vec![], vec![], vec![], vec![]);
        for _ in 0..rounds {
            let t = Instant::now();
            let o = sb.run(&cfg, &job).await.unwrap();
            layer.push(t.elapsed());
            assert_eq!(o.stdout.trim(), "1");

            cli.push(docker_cli(&cfg.limits));

            let prepared = sb.prepare(&cfg).await.unwrap();
            // Give the runner time to start, as when the model is still writing.
            tokio::time::sleep(Duration::from_millis(400)).await;
            let t = Instant::now();
            let o = prepared.execute(&job).await.unwrap();
            exec.push(t.elapsed());
            answer.push(Duration::from_millis(o.collected_ms));
            assert_eq!(o.stdout.trim(), "1");
        }
        println!("sandbox benchmark, {rounds} interleaved rounds, print(1):");
        let (a, ap) = stats("(a) cold run through compute-bot (bollard)", layer);
        let (b, bp) = stats("(a) docker run --rm, same restrictions", cli);
        println!(
            "    ratio layer/CLI: median {:.2}x  p95 {:.2}x",
            a / b,
            ap / bp
        );
        stats("(b) prepared: code handed over -> outcome", answer);
        stats("(b) prepared: the same plus container removal", exec);
    });
}
