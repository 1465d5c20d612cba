//! The fresh-runner mode of the user path (`-- fresh`): the sandbox image is
//! absent from the engine and comes from a registry (Debian's
//! `docker-registry` on loopback, `scripts/start-registry`), as on a
//! GitHub-hosted runner, whose image store starts empty.
//!
//! The local `compute-bot-sandbox:python` is pushed once to
//! `127.0.0.1:5000/cbs-bench-user-path-<pid>` and the policy pins that copy
//! by digest (`sandbox.image: 127.0.0.1:5000/…@sha256:…`). Each round runs,
//! for each case, both orders a workflow can have, the one that goes first
//! alternating between rounds:
//!
//! - **the bot pulls**: the image removed from the engine (every reference
//!   to its ID, `compute-bot-sandbox:python` included, so its layer is
//!   gone: checked by looking the ID up), then the bot run, which pulls it
//!   beside the permission check, the tracking comment and the model;
//! - **today's order**: the image removed the same way, then a timed
//!   `docker pull` of the pinned reference (a workflow step of its own),
//!   then the bot with the image present, then `docker run --rm` of the
//!   same code in the same image.
//!
//! Today's order's event → posted is the `docker pull` plus the bot's own
//! event → posted after it. `compute-bot-sandbox:python` is tagged again the
//! moment each pull ends (the engine's `pull` event, while the bot goes on
//! running), so the image is absent for as short a time as the measurement
//! allows; it is restored at the end too, and on a panic or Ctrl-C.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bollard::Docker;
use bollard::query_parameters::{
    EventsOptions, ListContainersOptions, RemoveImageOptions, TagImageOptions,
};
use futures_util::StreamExt;

use crate::support::action_fixture::ActionFixture;
use crate::support::registry::{docker, push_and_forget, registry, repo};
use crate::{Case, How, IMAGE, Pulled, docker_run, median, ms, paired, through_action};

/// The bot's log in this mode: its warnings, and the line of its pull
/// (`pulled the sandbox image`, with the time and the bytes downloaded).
const LOG: &str = "warn,compute_bot::sandbox::docker::pull=info";

/// The two model latencies of the model path.
const MODEL_DELAYS: [Duration; 2] = [Duration::from_secs(2), Duration::from_secs(8)];

/// The goal of exact code: event → posted ≤ `docker pull` + this × `docker run`.
const EXACT_GOAL: f64 = 1.0;

/// The goal of the model path with the 8 s model: the fresh run ≤ this × the
/// same run with the image present.
const MODEL_GOAL: f64 = 1.1;

/// The sandbox image as pushed to the registry.
struct Pushed {
    /// Its ID (`sha256:…`), the same on the engine after every pull.
    id: String,
    /// The policy's reference, `127.0.0.1:5000/<repo>@sha256:…`.
    pinned: String,
    /// `127.0.0.1:5000/<repo>`.
    repo: String,
    /// The compressed size of its layers (the registry's manifest).
    compressed: u64,
}

/// Puts `compute-bot-sandbox:python` back when the bench ends or panics
/// (tags the image's ID again, pulling it first if it is gone), and removes
/// the bench repository's references from the engine.
struct Restore {
    id: String,
    pinned: String,
    repo: String,
}

impl Drop for Restore {
    fn drop(&mut self) {
        restore_blocking(&self.id, &self.pinned, &self.repo);
    }
}

/// What [`Restore`] does, with the CLI and without panicking (it runs while
/// a panic unwinds). A `compute-bot-sandbox:python` that is there is left
/// as it is, even if it is another image (someone rebuilt it meanwhile).
fn restore_blocking(id: &str, pinned: &str, repo: &str) {
    let has = |r: &str| docker(&["image", "inspect", r]).status.success();
    if !has(IMAGE) {
        if !has(id) {
            let _ = docker(&["pull", "-q", pinned]);
        }
        let _ = docker(&["tag", id, IMAGE]);
    }
    let refs = docker(&[
        "image",
        "ls",
        "--digests",
        "--format",
        "{{.Repository}} {{.Tag}} {{.Digest}}",
        repo,
    ]);
    for line in String::from_utf8_lossy(&refs.stdout).lines() {
        let f: Vec<&str> = line.split(' ').collect();
        if let [r, t, d] = f[..] {
            if t != "<none>" {
                let _ = docker(&["rmi", &format!("{r}:{t}")]);
            }
            if d != "<none>" {
                let _ = docker(&["rmi", &format!("{r}@{d}")]);
            }
        }
    }
    let now = docker(&["image", "inspect", "--format", "{{.Id}}", IMAGE]);
    if now.status.success() {
        println!(
            "restored: {IMAGE} is {}",
            String::from_utf8_lossy(&now.stdout).trim()
        );
    } else {
        println!(
            "NOT RESTORED: {IMAGE} is missing; run `docker pull {pinned} && docker tag {pinned} {IMAGE}` (or scripts/ensure-sandbox-image)"
        );
    }
}

fn engine_error(e: bollard::errors::Error) -> String {
    e.to_string()
}

/// Every reference (tags and digests) the engine holds to `id`; `None`
/// when the image is not there.
async fn references(d: &Docker, id: &str) -> Option<Vec<String>> {
    let i = d.inspect_image(id).await.ok()?;
    Some(
        i.repo_tags
            .unwrap_or_default()
            .into_iter()
            .chain(i.repo_digests.unwrap_or_default())
            .collect(),
    )
}

async fn untag(d: &Docker, reference: &str) -> Result<(), String> {
    d.remove_image(reference, None::<RemoveImageOptions>, None)
        .await
        .map(|_| ())
        .map_err(engine_error)
}

/// Tags the image `id` as `compute-bot-sandbox:python`.
async fn tag_back(d: &Docker, id: &str) -> Result<(), String> {
    let (repo, tag) = IMAGE.split_once(':').expect("IMAGE is name:tag");
    d.tag_image(
        id,
        Some(TagImageOptions {
            repo: Some(repo.to_string()),
            tag: Some(tag.to_string()),
        }),
    )
    .await
    .map_err(engine_error)
}

/// Takes the image off the engine: the bench repository's references,
/// then (after waiting up to 20 s for references of other people's tests
/// to go by themselves; removed after that, and said) the last one,
/// `compute-bot-sandbox:python`, retried for up to 30 s while a container
/// uses it. Returns what disturbed it (empty: the image and its layer are
/// gone).
async fn make_absent(d: &Docker, img: &Pushed) -> Vec<String> {
    let mut notes = Vec::new();
    let held = d.inspect_image(IMAGE).await.ok().and_then(|i| i.id);
    assert_eq!(
        held.as_deref(),
        Some(img.id.as_str()),
        "{IMAGE} is no longer the image pushed at the start (rebuilt or removed meanwhile?): stopping"
    );
    let mine = |r: &str| {
        r.strip_prefix(img.repo.as_str())
            .is_some_and(|rest| rest.starts_with(':') || rest.starts_with('@'))
    };
    for r in references(d, &img.id).await.unwrap_or_default() {
        if mine(&r) {
            let _ = untag(d, &r).await;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let others: Vec<String> = references(d, &img.id)
            .await
            .unwrap_or_default()
            .into_iter()
            .filter(|r| r != IMAGE && !mine(r))
            .collect();
        if others.is_empty() {
            break;
        }
        if Instant::now() > deadline {
            for r in &others {
                let _ = untag(d, r).await;
            }
            notes.push(format!("removed others' references {others:?}"));
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let asked = Instant::now();
    let deadline = asked + Duration::from_secs(30);
    loop {
        match untag(d, IMAGE).await {
            Ok(()) => {
                if asked.elapsed() > Duration::from_secs(1) {
                    notes.push(format!(
                        "waited {:.1} s for a container of others to end before removing {IMAGE}",
                        asked.elapsed().as_secs_f64()
                    ));
                }
                break;
            }
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(500)).await
            }
            Err(e) => {
                notes.push(format!("could not remove {IMAGE}: {e}"));
                break;
            }
        }
    }
    if d.inspect_image(&img.id).await.is_ok() {
        notes.push("the image (and its layer) stayed on the engine".to_string());
        // Not left untagged for the others' tests.
        let _ = tag_back(d, &img.id).await;
    }
    notes
}

/// Waits for the engine's `pull` event of the bench repository and tags
/// `compute-bot-sandbox:python` again at once; when that happened.
fn restore_on_pull(d: &Docker, img: &Pushed) -> tokio::task::JoinHandle<Option<Instant>> {
    let (d, repo, id) = (d.clone(), img.repo.clone(), img.id.clone());
    tokio::spawn(async move {
        let filters = HashMap::from([
            ("type".to_string(), vec!["image".to_string()]),
            ("event".to_string(), vec!["pull".to_string()]),
        ]);
        let mut events = d.events(Some(EventsOptions {
            filters: Some(filters),
            ..Default::default()
        }));
        while let Some(Ok(e)) = events.next().await {
            let ours = e
                .actor
                .and_then(|a| a.id)
                .is_some_and(|a| a.starts_with(&format!("{repo}@")));
            if ours {
                let _ = tag_back(&d, &id).await;
                return Some(Instant::now());
            }
        }
        None
    })
}

/// `docker pull <pinned>` as a workflow step runs it: its time, and
/// whether its output shows a layer the engine already had.
fn docker_pull(pinned: &str) -> (Duration, bool) {
    let t = Instant::now();
    let out = docker(&["pull", pinned]);
    let d = t.elapsed();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "docker pull {pinned}: {}{said}",
        String::from_utf8_lossy(&out.stderr)
    );
    (d, said.contains("Already exists"))
}

/// The compressed size of the pushed image's layers, from the registry's
/// manifest.
async fn compressed_size(pinned: &str) -> u64 {
    let (name, digest) = pinned.split_once('@').expect("pinned by digest");
    let path = name
        .strip_prefix(&format!("{}/", registry()))
        .expect("in the registry");
    let manifest: serde_json::Value = reqwest::Client::new()
        .get(format!("http://{}/v2/{path}/manifests/{digest}", registry()))
        .header(
            "Accept",
            "application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json",
        )
        .send()
        .await
        .expect("the registry answers")
        .json()
        .await
        .expect("a manifest");
    manifest["layers"]
        .as_array()
        .map(|l| l.iter().filter_map(|l| l["size"].as_u64()).sum())
        .unwrap_or(0)
}

/// Running containers on the engine (others' tests: a disturbance).
async fn others_running(d: &Docker) -> usize {
    d.list_containers(None::<ListContainersOptions>)
        .await
        .map_or(0, |c| c.len())
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_default()
}

/// One case of this mode: a case of the bench, with its model's latency
/// for a goal.
#[derive(Clone, Copy)]
struct FreshCase {
    case: Case,
    delay: Duration,
}

impl FreshCase {
    fn label(self) -> String {
        if self.case.is_goal() {
            let code = if self.case == Case::Goal {
                "(b)"
            } else {
                "(e)"
            };
            format!(
                "({}) model path, the model answers with {code} after {} s",
                self.case.letter(),
                self.delay.as_secs()
            )
        } else {
            self.case.label().to_string()
        }
    }

    fn how(self) -> How {
        How {
            model_delay: self.delay,
            log: Some(LOG),
        }
    }
}

#[derive(Default)]
struct FreshSamples {
    /// The bot pulling: event → posted, event → exited.
    fresh: Vec<f64>,
    fresh_exited: Vec<f64>,
    /// The bot's own pull, from its log.
    bot_pull: Vec<Pulled>,
    /// `docker pull`.
    pull: Vec<f64>,
    /// The bot with the image present (after the `docker pull`).
    present: Vec<f64>,
    /// `docker run --rm`.
    docker: Vec<f64>,
}

/// min, median, max of `v` as `median (min–max)` in ms.
fn spread(v: &[f64]) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{:.0} ms ({lo:.0}–{hi:.0})", median(v.to_vec()))
}

pub async fn run(cases: &[Case], rounds: usize, latency: Option<Duration>) {
    let fresh_cases: Vec<FreshCase> = cases
        .iter()
        .flat_map(|&case| {
            let delays: Vec<Duration> = if case.is_goal() {
                MODEL_DELAYS.to_vec()
            } else {
                vec![Duration::ZERO]
            };
            delays
                .into_iter()
                .map(move |delay| FreshCase { case, delay })
        })
        .collect();
    let d = Docker::connect_with_defaults().expect("the Docker engine");
    let d = d
        .negotiate_version()
        .await
        .expect("the Docker engine answers");
    let id = d
        .inspect_image(IMAGE)
        .await
        .ok()
        .and_then(|i| i.id)
        .unwrap_or_else(|| {
            panic!("{IMAGE} is not on the engine: run scripts/ensure-sandbox-image")
        });
    let repo = repo("bench-user-path");
    println!(
        "WARNING: the fresh mode REMOVES {IMAGE} ({id}) from this Docker engine before each fresh run \
         ({} times in all): other test suites on this engine that need the image fail while it is absent. \
         It is tagged again as soon as each pull ends, at the end, and on a panic or Ctrl-C.",
        2 * rounds * fresh_cases.len()
    );
    let pinned = push_and_forget(IMAGE, &repo);
    let _restore = Restore {
        id: id.clone(),
        pinned: pinned.clone(),
        repo: repo.clone(),
    };
    {
        let (id, pinned, repo) = (id.clone(), pinned.clone(), repo.clone());
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                restore_blocking(&id, &pinned, &repo);
                std::process::exit(130);
            }
        });
    }
    let img = Pushed {
        compressed: compressed_size(&pinned).await,
        id,
        pinned,
        repo,
    };
    println!(
        "fresh runner: {rounds} interleaved rounds; the policy's image {} ({:.0} MB compressed), {}",
        img.pinned,
        img.compressed as f64 / 1e6,
        match latency {
            None => "GitHub stand-in answering at once".to_string(),
            Some(l) => format!("every GitHub answer after {} ms", l.as_millis()),
        }
    );
    let policy = format!(
        "version: 1\nsandbox:\n  image: {}\n  timeout: 60s\n",
        img.pinned
    );
    let f = ActionFixture::builder().policy(&policy).start().await;
    if let Some(l) = latency {
        f.gh.set_latency(l);
    }
    let bin = std::path::PathBuf::from(env!("CARGO_BIN_EXE_compute-bot"));
    let mut run_id = 40_000u64;
    // Warm-up with the image present (its digest reference only: the layer
    // is there), not counted.
    docker_pull(&img.pinned);
    for fc in &fresh_cases {
        run_id += 1;
        through_action(&f, &bin, fc.case, run_id, fc.how()).await;
        docker_run(fc.case.code());
    }
    let mut samples: Vec<FreshSamples> = fresh_cases.iter().map(|_| Default::default()).collect();
    let mut disturbed: Vec<String> = Vec::new();
    let mut absent: Vec<Duration> = Vec::new();
    for round in 0..rounds {
        println!(
            "round {}: load {} at its start, {} containers of others running",
            round + 1,
            load(),
            others_running(&d).await
        );
        for (i, &fc) in fresh_cases.iter().enumerate() {
            for k in 0..2 {
                let s = &mut samples[i];
                let mut note = |what: &str, n: Vec<String>| {
                    for n in n {
                        disturbed.push(format!("round {} {} ({what}): {n}", round + 1, fc.label()));
                    }
                };
                let running = others_running(&d).await;
                if running > 0 {
                    note(
                        "before",
                        vec![format!("{running} containers of others running")],
                    );
                }
                let notes = make_absent(&d, &img).await;
                let gone = Instant::now();
                if (round + k) % 2 == 0 {
                    // The bot pulls the image itself.
                    note("the bot pulls", notes);
                    let watch = restore_on_pull(&d, &img);
                    run_id += 1;
                    let t = through_action(&f, &bin, fc.case, run_id, fc.how()).await;
                    watch.abort();
                    let back = match watch.await {
                        Ok(Some(at)) => at,
                        _ => {
                            let _ = tag_back(&d, &img.id).await;
                            Instant::now()
                        }
                    };
                    absent.push(back.duration_since(gone));
                    s.fresh.push(ms(t.posted));
                    s.fresh_exited.push(ms(t.exited));
                    match t.pulled {
                        Some(p) => {
                            if p.bytes < img.compressed * 9 / 10 {
                                note(
                                    "the bot pulls",
                                    vec![format!(
                                        "the bot downloaded only {} of {} bytes",
                                        p.bytes, img.compressed
                                    )],
                                );
                            }
                            s.bot_pull.push(p);
                        }
                        None => note(
                            "the bot pulls",
                            vec!["the bot's log has no pull".to_string()],
                        ),
                    }
                } else {
                    // Today's order: `docker pull`, then the bot.
                    note("today's order", notes);
                    let (pull, had) = docker_pull(&img.pinned);
                    let _ = tag_back(&d, &img.id).await;
                    absent.push(gone.elapsed());
                    if had {
                        note(
                            "today's order",
                            vec!["`docker pull` found a layer already there".to_string()],
                        );
                    }
                    s.pull.push(ms(pull));
                    run_id += 1;
                    let t = through_action(&f, &bin, fc.case, run_id, fc.how()).await;
                    if t.pulled.is_some() {
                        note(
                            "today's order",
                            vec!["the bot pulled although the image was present".to_string()],
                        );
                    }
                    s.present.push(ms(t.posted));
                    s.docker.push(ms(docker_run(fc.case.code())));
                }
            }
        }
    }
    report(&fresh_cases, &samples, rounds);
    let total: Duration = absent.iter().sum();
    let longest = absent.iter().max().copied().unwrap_or_default();
    println!(
        "\n{IMAGE} was absent {} times, {:.1} s in all, {:.1} s at the longest.",
        absent.len(),
        total.as_secs_f64(),
        longest.as_secs_f64()
    );
    if disturbed.is_empty() {
        println!("no disturbance seen (no other container running, every layer downloaded).");
    } else {
        println!("disturbances seen:");
        for n in &disturbed {
            println!("- {n}");
        }
    }
}

fn report(cases: &[FreshCase], samples: &[FreshSamples], rounds: usize) {
    println!("\nmedians (min–max) of {rounds} rounds:\n");
    println!(
        "| case | the bot pulls the image itself: event → posted | today's order: `docker pull` + the bot: event → posted | `docker pull` | the bot, image present: event → posted | `docker run --rm` | the bot's own pull (its log) |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for (fc, s) in cases.iter().zip(samples) {
        let today: Vec<f64> = s.pull.iter().zip(&s.present).map(|(p, b)| p + b).collect();
        let bot_ms: Vec<f64> = s.bot_pull.iter().map(|p| p.ms).collect();
        let mb = s
            .bot_pull
            .iter()
            .map(|p| p.bytes as f64 / 1e6)
            .fold(0.0, f64::max);
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            fc.label(),
            spread(&s.fresh),
            spread(&today),
            spread(&s.pull),
            spread(&s.present),
            spread(&s.docker),
            if bot_ms.is_empty() {
                "—".to_string()
            } else {
                format!("{}, {mb:.0} MB", spread(&bot_ms))
            }
        );
    }
    println!(
        "\nratios: of the medians, and round by round (the two orders ran back to back in each round): median (min–max)\n"
    );
    println!(
        "| case | the bot pulls ÷ today's order | the bot pulls ÷ image present | goal | the goal's ratio, medians | round by round | goal met |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for (fc, s) in cases.iter().zip(samples) {
        let today: Vec<f64> = s.pull.iter().zip(&s.present).map(|(p, b)| p + b).collect();
        let m = |v: &[f64]| median(v.to_vec());
        let pr = |a: &[f64], b: &[f64]| {
            let (r, lo, hi) = paired(a, b);
            format!("{:.2}× ({lo:.2}–{hi:.2})", r)
        };
        let vs_today = format!("{:.2}×; {}", m(&s.fresh) / m(&today), pr(&s.fresh, &today));
        let vs_present = format!(
            "{:.2}×; {}",
            m(&s.fresh) / m(&s.present),
            pr(&s.fresh, &s.present)
        );
        let goal = if !fc.case.is_goal() {
            let bound: Vec<f64> = s
                .pull
                .iter()
                .zip(&s.docker)
                .map(|(p, r)| p + EXACT_GOAL * r)
                .collect();
            Some((
                format!("≤ `docker pull` + {EXACT_GOAL:.1}× `docker run`"),
                bound,
                1.0,
            ))
        } else if fc.delay == MODEL_DELAYS[1] {
            Some((
                format!("≤ {MODEL_GOAL:.1}× image present"),
                s.present.clone(),
                MODEL_GOAL,
            ))
        } else {
            None
        };
        let (goal, ratio, rounds_col, met) = match goal {
            None => (
                "— (reported)".to_string(),
                "—".into(),
                "—".into(),
                "—".into(),
            ),
            Some((text, bound, limit)) => {
                let r = m(&s.fresh) / m(&bound);
                let per: Vec<f64> = s.fresh.iter().zip(&bound).map(|(a, b)| a / b).collect();
                let ok_rounds = per.iter().filter(|&&x| x <= limit).count();
                let (pm, lo, hi) = paired(&s.fresh, &bound);
                (
                    text,
                    format!("**{r:.2}×** (limit {limit:.2}×)"),
                    format!("{pm:.2}× ({lo:.2}–{hi:.2})"),
                    format!(
                        "{} ({ok_rounds} of {} rounds)",
                        if r <= limit { "**yes**" } else { "**no**" },
                        per.len()
                    ),
                )
            }
        };
        println!(
            "| {} | {vs_today} | {vs_present} | {goal} | {ratio} | {rounds_col} | {met} |",
            fc.label()
        );
    }
}
