//! The user's path, side by side: from the `/compute` event to the result
//! posted, through the real `compute-bot action` binary with the GitHub
//! stand-in (and the model stand-in for a goal), against `docker run --rm`
//! of the same code in the same image.
//!
//! - (a) exact code `print(json.dumps(...))` in a fenced block;
//! - (b) exact code importing pandas and matplotlib.pyplot (a DataFrame
//!   aggregated, a chart saved);
//! - (c) a goal: the model stand-in answers with the code of (b) after 2 s;
//!   its sandbox stage (the report's `execute` timing: waiting for the
//!   container prepared while the model wrote, running, removing) against a
//!   cold `docker run --rm`;
//! - (d) exact code with pandas and scipy.stats (a t-test and a correlation);
//! - (e) exact code with a scikit-learn fit (a split, a random forest, its
//!   accuracy);
//! - (f) a goal answered with the code of (e) after 2 s (its sandbox stage
//!   against a cold `docker run --rm`, as (c)).
//!
//! "Posted" is when the stand-in received the request that writes the result
//! into the tracking comment; the bot then exits (removing what it left)
//! and that total is shown too. Each round runs every case on both sides,
//! interleaved (the side that goes first alternates); beside the ratio of
//! the medians the table gives each round's own ratio (median, min–max),
//! which a drift of this shared machine's speed between rounds does not
//! move. Every case runs with
//! the stand-in answering at once, and again with every GitHub answer
//! taking `LATENCY` (a round trip to api.github.com), during which a
//! container prepared ahead starts and imports.
//!
//! Run with: `cargo bench --bench user_path` (add `-- 9` for 9 rounds; at
//! least 3 are used; a word of the letters `a`–`f`, e.g. `-- 5 def`, runs
//! only those cases). With `USER_PATH_BASELINE=<path of another
//! compute-bot binary>` (e.g. a build of main) every case also runs through
//! that binary, interleaved with this build and `docker run` in the same
//! rounds: before and after side by side. With `USER_PATH_TRACE=1` each
//! run also prints its timeline: the GitHub requests (ms from the event)
//! and the bot's own log at `compute_bot=trace,bollard=debug`, engine
//! requests included.
//!
//! The fresh-runner mode, `cargo bench --bench user_path -- fresh` (3
//! rounds unless a number says more; cases `ac` unless letters say
//! others), is the path of a GitHub-hosted runner, whose engine starts
//! without the sandbox image: the policy pins the image by digest in the
//! loopback registry (`scripts/start-registry`, Debian's `docker-registry`;
//! the image is pushed there once), and the image is **removed from the
//! engine** before each fresh run, `compute-bot-sandbox:python` included,
//! so its layer is really gone. Side by side in each round: the bot pulling
//! it itself, beside the rest of its work, against today's order (a timed
//! `docker pull` step, then the bot with the image present) and `docker
//! run --rm`; a goal runs with the model taking 2 s and 8 s. Every GitHub
//! answer takes `LATENCY` (add `instant` for none). It prints a warning
//! first: other test suites on the same engine miss the image while it is
//! absent (it is tagged again the moment each pull ends, and at the end,
//! on a panic or Ctrl-C). See `user_path/fresh.rs`.

// Function length is a rule for src/ and crates/*/src/ (Cargo.toml,
// `[workspace.lints]`), not for a test crate or a bench.
#![allow(clippy::too_many_lines)]

#[path = "../tests/support/mod.rs"]
mod support;

#[path = "user_path/fresh.rs"]
mod fresh;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use support::action_fixture::{ActionFixture, COMMENT, fenced};
use support::llm_standin::{CANARY_KEY, LlmStandin, Reply};

const IMAGE: &str = compute_bot::sandbox::DEFAULT_IMAGE;

/// A GitHub API round trip as a hosted runner sees it (stated, not measured
/// here: the API is not reachable from this machine).
const LATENCY: Duration = Duration::from_millis(150);

/// The model's latency in case (c).
const MODEL_DELAY: Duration = Duration::from_secs(2);

const PRINT: &str = "import json\nprint(json.dumps({\"answer\": 6 * 7, \"items\": [1, 2, 3]}))\n";

const PANDAS: &str = "import json\nimport pandas as pd\nimport matplotlib.pyplot as plt\n\
df = pd.DataFrame({\"day\": [d % 7 for d in range(200)], \"v\": [d * 1.5 for d in range(200)]})\n\
by_day = df.groupby(\"day\").v.sum()\n\
by_day.plot.bar()\nplt.savefig(\"/tmp/by_day.png\")\n\
print(json.dumps({\"total\": float(df.v.sum()), \"busiest\": int(by_day.idxmax())}))\n";

const SCIPY: &str = "import json\nimport pandas as pd\nfrom scipy import stats\n\
df = pd.DataFrame({\"g\": [d % 2 for d in range(400)], \"v\": [(d * 37) % 101 for d in range(400)]})\n\
t = stats.ttest_ind(df[df.g == 0].v, df[df.g == 1].v)\n\
r = stats.pearsonr(df.index, df.v)\n\
print(json.dumps({\"t_p\": float(t.pvalue), \"r\": float(r.statistic)}))\n";

const SKLEARN: &str = "import json\nimport numpy as np\n\
from sklearn.ensemble import RandomForestClassifier\n\
from sklearn.model_selection import train_test_split\n\
rng = np.random.default_rng(0)\nX = rng.normal(size=(600, 6))\ny = (X[:, 0] + X[:, 1] > 0).astype(int)\n\
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=42)\n\
m = RandomForestClassifier(n_estimators=30, random_state=42).fit(Xtr, ytr)\n\
print(json.dumps({\"accuracy\": float(m.score(Xte, yte))}))\n";

#[derive(Clone, Copy, PartialEq)]
enum Case {
    Print,
    Pandas,
    Goal,
    Scipy,
    Sklearn,
    SklearnGoal,
}

impl Case {
    fn code(self) -> &'static str {
        match self {
            Case::Print => PRINT,
            Case::Pandas | Case::Goal => PANDAS,
            Case::Scipy => SCIPY,
            Case::Sklearn | Case::SklearnGoal => SKLEARN,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Case::Print => "(a) exact code, `print(json.dumps(...))`",
            Case::Pandas => "(b) exact code, pandas + pyplot",
            Case::Goal => "(c) a goal, the model answers after 2 s",
            Case::Scipy => "(d) exact code, pandas + scipy.stats",
            Case::Sklearn => "(e) exact code, a scikit-learn fit",
            Case::SklearnGoal => "(f) a goal, the model answers with (e) after 2 s",
        }
    }

    fn letter(self) -> char {
        match self {
            Case::Print => 'a',
            Case::Pandas => 'b',
            Case::Goal => 'c',
            Case::Scipy => 'd',
            Case::Sklearn => 'e',
            Case::SklearnGoal => 'f',
        }
    }

    /// The goal's words: (f) asks for what its code does, so the container
    /// prepared while the model writes can preload by them.
    fn goal(self) -> &'static str {
        match self {
            Case::SklearnGoal => {
                "/compute train a random forest classifier on the data and report its test accuracy"
            }
            _ => "/compute the figures of the data",
        }
    }

    fn is_goal(self) -> bool {
        matches!(self, Case::Goal | Case::SklearnGoal)
    }
}

/// One run through the Action: (event → result posted, event → exit, the
/// report's sandbox stage in ms, the waiting notes, the preloaded modules
/// and those the preload skipped because the code had arrived, and the
/// bot's own pull of the image when its log says it pulled one).
struct Through {
    posted: Duration,
    exited: Duration,
    execute_ms: f64,
    notes: usize,
    preloaded: usize,
    skipped: usize,
    pulled: Option<Pulled>,
}

/// The bot's log line `pulled the sandbox image` (at `info` for
/// `compute_bot::sandbox::docker::pull`): how long its pull took and the
/// compressed bytes it downloaded.
#[derive(Clone, Copy)]
struct Pulled {
    ms: f64,
    bytes: u64,
}

impl Pulled {
    fn from_log(stderr: &str) -> Option<Pulled> {
        let line = stderr
            .lines()
            .map(strip_ansi)
            .find(|l| l.contains("pulled the sandbox image"))?;
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
                .and_then(|v| v.parse::<u64>().ok())
        };
        Some(Pulled {
            ms: field("ms")? as f64,
            bytes: field("downloaded_bytes")?,
        })
    }
}

/// `s` without its terminal colour sequences (`ESC [ … m`).
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// How one run is made besides its case: the model's latency (goals only)
/// and the bot's log filter (`COMPUTE_BOT_LOG`; `USER_PATH_TRACE` wins).
#[derive(Clone, Copy)]
struct How {
    model_delay: Duration,
    log: Option<&'static str>,
}

impl Default for How {
    fn default() -> Self {
        How {
            model_delay: MODEL_DELAY,
            log: None,
        }
    }
}

async fn through_action(
    f: &ActionFixture,
    bin: &Path,
    case: Case,
    run_id: u64,
    how: How,
) -> Through {
    let llm = LlmStandin::openai().await;
    let (body, env) = match case {
        Case::Goal | Case::SklearnGoal => {
            llm.push(Reply::code("Compute it.", case.code()).with_delay(how.model_delay));
            llm.push(Reply::text("Done."));
            let env = f.env(COMMENT, &run_id.to_string()).model(&llm, CANARY_KEY);
            (case.goal().to_string(), env)
        }
        _ => (
            format!("/compute the figures\n{}", fenced(case.code())),
            f.env(COMMENT, &run_id.to_string()),
        ),
    };
    f.comment("alice", &body);
    let trace = std::env::var_os("USER_PATH_TRACE").is_some();
    let env = match (trace, how.log) {
        (true, _) => env.with("COMPUTE_BOT_LOG", "compute_bot=trace,bollard=debug"),
        (false, Some(filter)) => env.with("COMPUTE_BOT_LOG", filter),
        (false, None) => env,
    };
    let before = f.gh.requests().len();
    let wall = std::time::SystemTime::now();
    let t = Instant::now();
    let run = f.run_env_bin(bin, env).await;
    if trace {
        println!("--- trace {} t0={:?}", case.label(), wall);
        for r in &f.gh.requests()[before..] {
            println!(
                "gh +{:>6.0} ms {} {} {}",
                ms(r.at.duration_since(t)),
                r.method,
                r.path,
                r.status
            );
        }
        println!("{}", run.stderr);
    }
    let exited = t.elapsed();
    assert_eq!(run.code, 0, "{}", run.log());
    let report = f.report(&run);
    assert_eq!(report["status"], "ok", "{report}");
    // The result is written into the tracking comment: the last PATCH of it.
    let posted_at = f.gh.requests()[before..]
        .iter()
        .filter(|r| r.method == "PATCH" && r.path.contains("/issues/comments/") && r.status < 400)
        .map(|r| r.at)
        .max()
        .expect("the result was posted");
    let outcome = &report["attempts"][0]["outcome"];
    let notes = outcome["notes"]
        .as_array()
        .map(|n| {
            n.iter()
                .filter(|n| n.as_str().is_some_and(|n| n.contains("waited")))
                .count()
        })
        .unwrap_or(0);
    let count = |key: &str| outcome["audit"][key].as_array().map_or(0, Vec::len);
    Through {
        posted: posted_at.duration_since(t),
        exited,
        execute_ms: report["timings_ms"]["execute"].as_f64().unwrap_or(f64::NAN),
        notes,
        preloaded: count("preloaded"),
        skipped: count("preload_skipped"),
        pulled: Pulled::from_log(&run.stderr),
    }
}

fn docker_run(code: &str) -> Duration {
    let t = Instant::now();
    let out = Command::new("docker")
        .args([
            "run",
            "--rm",
            "--network",
            "none",
            IMAGE,
            "python3",
            "-c",
            code,
        ])
        .output()
        .expect("docker CLI");
    let d = t.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    d
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The median, least and greatest of `a[i] / b[i]`, the ratios of the
/// samples taken in the same round.
fn paired(a: &[f64], b: &[f64]) -> (f64, f64, f64) {
    let r: Vec<f64> = a.iter().zip(b).map(|(a, b)| a / b).collect();
    let lo = r.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = r.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (median(r), lo, hi)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// One bot binary's samples of one case.
#[derive(Default)]
struct BotSamples {
    posted: Vec<f64>,
    exited: Vec<f64>,
    execute: Vec<f64>,
    notes: usize,
    preloaded: usize,
    skipped: usize,
}

/// One case's samples: each bot binary's and `docker run`'s.
struct Samples {
    bots: Vec<BotSamples>,
    docker: Vec<f64>,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let is_fresh = args.iter().any(|a| a == "fresh");
    let rounds: usize = args
        .iter()
        .find_map(|a| a.parse().ok())
        .unwrap_or(if is_fresh { 3 } else { 7 })
        .max(3);
    let only: Option<&String> = args
        .iter()
        .find(|a| !a.is_empty() && a.chars().all(|c| ('a'..='f').contains(&c)));
    let only = only.map(String::as_str).or(is_fresh.then_some("ac"));
    let cases: Vec<Case> = [
        Case::Print,
        Case::Pandas,
        Case::Goal,
        Case::Scipy,
        Case::Sklearn,
        Case::SklearnGoal,
    ]
    .into_iter()
    .filter(|c| only.is_none_or(|o| o.contains(c.letter())))
    .collect();
    if is_fresh {
        let latency = (!args.iter().any(|a| a == "instant")).then_some(LATENCY);
        fresh::run(&cases, rounds, latency).await;
        return;
    }
    // (label, binary): this build, and the baseline when one is named.
    let mut bots: Vec<(String, PathBuf)> = vec![(
        "this build".to_string(),
        PathBuf::from(env!("CARGO_BIN_EXE_compute-bot")),
    )];
    if let Some(base) = std::env::var_os("USER_PATH_BASELINE") {
        bots.insert(0, ("baseline".to_string(), PathBuf::from(base)));
    }
    for (label, bin) in &bots {
        println!("{label}: {}", bin.display());
    }
    println!("user path: {rounds} interleaved rounds; image {IMAGE}");
    let mut run_id = 20_000u64;
    for latency in [None, Some(LATENCY)] {
        // The built-in policy with a 60 s deadline: on this shared machine a
        // scikit-learn run under the 1-CPU quota can take 10 s of wall time.
        let f = ActionFixture::builder()
            .policy("version: 1\nsandbox:\n  timeout: 60s\n")
            .start()
            .await;
        if let Some(l) = latency {
            f.gh.set_latency(l);
        }
        // Warm-up: one of each, not counted.
        for &case in &cases {
            for (_, bin) in &bots {
                run_id += 1;
                through_action(&f, bin, case, run_id, How::default()).await;
            }
            docker_run(case.code());
        }
        let mut samples: Vec<Samples> = cases
            .iter()
            .map(|_| Samples {
                bots: bots.iter().map(|_| BotSamples::default()).collect(),
                docker: Vec::new(),
            })
            .collect();
        for round in 0..rounds {
            for (i, &case) in cases.iter().enumerate() {
                // The sides in turn, the first one moving each round:
                // index `bots.len()` is `docker run`.
                let sides = bots.len() + 1;
                for k in 0..sides {
                    let side = (round + k) % sides;
                    let s = &mut samples[i];
                    if side == bots.len() {
                        s.docker.push(ms(docker_run(case.code())));
                        continue;
                    }
                    run_id += 1;
                    let t = through_action(&f, &bots[side].1, case, run_id, How::default()).await;
                    let b = &mut s.bots[side];
                    b.posted.push(ms(t.posted));
                    b.exited.push(ms(t.exited));
                    b.execute.push(t.execute_ms);
                    b.notes += t.notes;
                    b.preloaded += t.preloaded;
                    b.skipped += t.skipped;
                }
            }
        }
        let gh = match latency {
            None => "GitHub stand-in answering at once".to_string(),
            Some(l) => format!("every GitHub answer after {} ms", l.as_millis()),
        };
        println!("\n{gh}; medians of {rounds}:\n");
        println!(
            "| case | bot | event → result posted | event → bot exited | `docker run --rm`, same code and image | posted ÷ docker run (medians) | the same, round by round: median (min–max) | sandbox stage (report) | waiting notes | modules preloaded / skipped (all rounds) |"
        );
        println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
        for (i, &case) in cases.iter().enumerate() {
            let s = std::mem::replace(
                &mut samples[i],
                Samples {
                    bots: Vec::new(),
                    docker: Vec::new(),
                },
            );
            let docker = s.docker;
            let d = median(docker.clone());
            for (b, (label, _)) in s.bots.into_iter().zip(&bots) {
                // Each round's own ratio (the two sides ran back to back
                // in it), so that a drift of the machine's speed between
                // rounds cancels out.
                let mine = if case.is_goal() {
                    &b.execute
                } else {
                    &b.posted
                };
                let (r, lo, hi) = paired(mine, &docker);
                let (p, e, x) = (median(b.posted), median(b.exited), median(b.execute));
                let ratio = if case.is_goal() {
                    format!("sandbox stage ÷ docker run: **{:.2}×**", x / d)
                } else {
                    format!("**{:.2}×**", p / d)
                };
                println!(
                    "| {} | {label} | {p:.0} ms | {e:.0} ms | {d:.0} ms | {ratio} | **{r:.2}×** ({lo:.2}–{hi:.2}) | {x:.0} ms | {} | {} / {} |",
                    case.label(),
                    b.notes,
                    b.preloaded,
                    b.skipped
                );
            }
        }
    }
}
