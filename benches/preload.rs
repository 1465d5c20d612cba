//! The preloaded data stack, side by side: the sandbox stage (code handed
//! over → outcome collected) of 20 pandas / matplotlib tasks on a container
//! that preloaded pandas, numpy and matplotlib.pyplot while it waited, against
//! the same container without preload; plus the memory each idle container
//! holds once ready (the cost of preloading).
//!
//! Each task runs on both sides, interleaved, after the same simulated model
//! latency (the container waits `WAIT` before the code arrives).
//! Run with: `cargo bench --bench preload` (add `-- 2` for 2 rounds).

use std::time::{Duration, Instant};

use bollard::query_parameters::StatsOptions;
use compute_bot::sandbox::{
    DEFAULT_PRELOAD, Job, Limits, RunStatus, SandboxConfig, docker::Docker,
};
use futures_util::StreamExt;

/// The simulated model latency: the container is prepared, then the code
/// arrives this much later.
const WAIT: Duration = Duration::from_millis(3000);

const SETUP: &str = "import pandas as pd\nimport numpy as np\nimport matplotlib.pyplot as plt\n\
df = pd.DataFrame({'day': np.arange(200) % 7, 'v': np.arange(200) * 1.5, 'k': np.arange(200) % 3})\n";

const TASKS: &[&str] = &[
    "print(df.v.mean())",
    "print(df.groupby('day').v.sum().to_json())",
    "print(df.describe().to_json())",
    "print(df.pivot_table(index='day', columns='k', values='v', aggfunc='mean').round(2).to_json())",
    "print(df.sort_values('v', ascending=False).head(3).to_json())",
    "print(df.v.rolling(5).mean().dropna().iloc[-1])",
    "print(df.merge(df.groupby('k').v.mean().rename('m').reset_index(), on='k').shape)",
    "print(df.assign(r=df.v.rank()).r.max())",
    "print(df.v.quantile([.1, .5, .9]).to_json())",
    "print(df.corr().round(3).to_json())",
    "print(pd.to_datetime(['2024-01-01', '2024-02-01']).month.tolist())",
    "print(df.to_csv(index=False)[:20])",
    "df.to_csv('/out/x.csv'); print(len(pd.read_csv('/out/x.csv')))",
    "print(np.linalg.norm(df[['v', 'k']].to_numpy()))",
    "plt.plot(df.v); plt.savefig('/out/a.png'); print('ok')",
    "df.v.hist(bins=20); plt.savefig('/out/h.png'); print('ok')",
    "fig, ax = plt.subplots(); df.groupby('day').v.mean().plot.bar(ax=ax); fig.savefig('/out/b.png'); print('ok')",
    "plt.scatter(df.v, df.k); plt.title('s'); plt.savefig('/out/s.png'); print('ok')",
    "df.plot(x='v', y='k'); plt.savefig('/out/l.png', dpi=50); print('ok')",
    "print(df.set_index('day').groupby(level=0).v.agg(['min', 'max']).to_json())",
];

fn cfg(preload: bool) -> SandboxConfig {
    SandboxConfig {
        limits: Limits {
            timeout: Duration::from_secs(60),
            memory: compute_bot::units::ByteSize::mib(512),
            ..Default::default()
        },
        preload: if preload {
            DEFAULT_PRELOAD.iter().map(|m| m.to_string()).collect()
        } else {
            Vec::new()
        },
        ..Default::default()
    }
}

async fn memory_of(sb: &Docker, name: &str) -> u64 {
    let mut s = sb.docker().stats(
        name,
        Some(StatsOptions {
            stream: false,
            one_shot: true,
        }),
    );
    match s.next().await {
        Some(Ok(st)) => st.memory_stats.and_then(|m| m.usage).unwrap_or(0),
        _ => 0,
    }
}

/// One task on one side: (sandbox stage, idle memory of the ready container).
async fn one(sb: &Docker, code: &str, preload: bool) -> (Duration, u64) {
    let prepared = sb.prepare(&cfg(preload)).await.expect("prepare");
    tokio::time::sleep(WAIT).await;
    let mem = memory_of(sb, prepared.name()).await;
    let job = Job {
        code: format!("{SETUP}{code}\n"),
        ..Default::default()
    };
    let start = Instant::now();
    let o = prepared.execute(&job).await.expect("execute");
    let stage = Duration::from_millis(o.collected_ms).min(start.elapsed());
    assert_eq!(o.status, RunStatus::Ok, "{code}: {o:?}");
    (stage, mem)
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[(((v.len() as f64) * p).ceil() as usize).clamp(1, v.len()) - 1]
}

#[tokio::main]
async fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(1);
    let sb = Docker::connect().await.expect("Docker engine");
    let (mut with, mut without, mut mem_with, mut mem_without) = (vec![], vec![], vec![], vec![]);
    for round in 0..rounds {
        for (i, task) in TASKS.iter().enumerate() {
            // Alternate which side goes first so drift hits both alike.
            let order = if (i + round) % 2 == 0 {
                [true, false]
            } else {
                [false, true]
            };
            for preload in order {
                let (d, m) = one(&sb, task, preload).await;
                let ms = d.as_secs_f64() * 1000.0;
                if preload {
                    with.push(ms);
                    mem_with.push(m as f64 / 1048576.0);
                } else {
                    without.push(ms);
                    mem_without.push(m as f64 / 1048576.0);
                }
            }
        }
    }
    let n = with.len();
    let (p50w, p50n) = (pct(&mut with, 0.5), pct(&mut without, 0.5));
    let (p95w, p95n) = (pct(&mut with, 0.95), pct(&mut without, 0.95));
    let (mw, mn) = (pct(&mut mem_with, 0.5), pct(&mut mem_without, 0.5));
    println!(
        "{} pandas/matplotlib tasks x {rounds} round(s), n={n} per side, model latency simulated: {} ms",
        TASKS.len(),
        WAIT.as_millis()
    );
    println!("| | sandbox stage p50 | p95 | idle container memory (median) |");
    println!("| --- | --- | --- | --- |");
    println!("| without preload | {p50n:.0} ms | {p95n:.0} ms | {mn:.1} MiB |");
    println!(
        "| with preload (pandas, numpy, matplotlib.pyplot) | {p50w:.0} ms | {p95w:.0} ms | {mw:.1} MiB |"
    );
    println!(
        "| ratio | **{:.2}x** | {:.2}x | +{:.1} MiB |",
        p50w / p50n,
        p95w / p95n,
        mw - mn
    );
}
