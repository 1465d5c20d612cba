//! The release files agree with each other and with the code: the example
//! workflows' `if:` accepts exactly what the command parser accepts, every
//! `uses:` is pinned to a commit, the policy path is the one the guide names,
//! the one sandbox recipe installs the lock file and is the one the release
//! builds with (its build steps are scripts `.ci/run` runs too), and the bot
//! image builds FROM scratch.

use std::path::PathBuf;

use compute_bot::github::command;
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn yaml(path: &str) -> Value {
    serde_saphyr::from_str(&read(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A value of GitHub's expression language (the part the workflows use).
#[derive(Debug, Clone, PartialEq)]
enum V {
    Null,
    Bool(bool),
    Str(String),
    Arr(Vec<V>),
}

impl V {
    fn truthy(&self) -> bool {
        match self {
            V::Null => false,
            V::Bool(b) => *b,
            V::Str(s) => !s.is_empty(),
            V::Arr(_) => true,
        }
    }
    fn text(&self) -> String {
        match self {
            V::Null => String::new(),
            V::Bool(b) => b.to_string(),
            V::Str(s) => s.clone(),
            V::Arr(_) => "Array".into(),
        }
    }
    fn from_json(v: &Value) -> V {
        match v {
            Value::Null => V::Null,
            Value::Bool(b) => V::Bool(*b),
            Value::String(s) => V::Str(s.clone()),
            Value::Array(a) => V::Arr(a.iter().map(V::from_json).collect()),
            other => V::Str(other.to_string()),
        }
    }
}

/// GitHub compares strings ignoring case (docs: "Operators", "Functions").
fn eq(a: &V, b: &V) -> bool {
    match (a, b) {
        (V::Str(x), V::Str(y)) => x.to_lowercase() == y.to_lowercase(),
        _ => a == b,
    }
}

/// A small recursive-descent evaluator of GitHub Actions expressions: `||`,
/// `&&`, `!`, `==`, `!=`, parentheses, string literals ('' escapes), property
/// paths looked up in `ctx`, and `contains`, `startsWith`, `format`, `fromJSON`.
struct Eval<'a> {
    s: &'a [u8],
    i: usize,
    ctx: &'a dyn Fn(&str) -> V,
}

impl Eval<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn eat(&mut self, t: &str) -> bool {
        self.ws();
        if self.s[self.i..].starts_with(t.as_bytes()) {
            self.i += t.len();
            true
        } else {
            false
        }
    }
    fn or(&mut self) -> V {
        let mut v = self.and();
        while self.eat("||") {
            let r = self.and();
            v = if v.truthy() { v } else { r };
        }
        v
    }
    fn and(&mut self) -> V {
        let mut v = self.cmp();
        while self.eat("&&") {
            let r = self.cmp();
            v = if v.truthy() { r } else { v };
        }
        v
    }
    fn cmp(&mut self) -> V {
        let l = self.unary();
        if self.eat("==") {
            V::Bool(eq(&l, &self.unary()))
        } else if self.eat("!=") {
            V::Bool(!eq(&l, &self.unary()))
        } else {
            l
        }
    }
    fn unary(&mut self) -> V {
        if self.eat("!") {
            return V::Bool(!self.unary().truthy());
        }
        if self.eat("(") {
            let v = self.or();
            assert!(self.eat(")"), "expected ) at {}", self.i);
            return v;
        }
        self.ws();
        if self.s[self.i] == b'\'' {
            let mut out = Vec::new();
            self.i += 1;
            loop {
                if self.s[self.i] == b'\'' {
                    if self.s.get(self.i + 1) == Some(&b'\'') {
                        out.push(b'\'');
                        self.i += 2;
                        continue;
                    }
                    self.i += 1;
                    break;
                }
                out.push(self.s[self.i]);
                self.i += 1;
            }
            return V::Str(String::from_utf8(out).unwrap());
        }
        let start = self.i;
        while self.i < self.s.len()
            && (self.s[self.i].is_ascii_alphanumeric() || b"._-".contains(&self.s[self.i]))
        {
            self.i += 1;
        }
        let name = std::str::from_utf8(&self.s[start..self.i])
            .unwrap()
            .to_string();
        assert!(!name.is_empty(), "unexpected input at {}", self.i);
        if !self.eat("(") {
            return (self.ctx)(&name);
        }
        let mut args = Vec::new();
        if !self.eat(")") {
            loop {
                args.push(self.or());
                if self.eat(")") {
                    break;
                }
                assert!(self.eat(","), "expected , at {}", self.i);
            }
        }
        call(&name, &args)
    }
}

fn call(name: &str, a: &[V]) -> V {
    match name {
        "contains" => V::Bool(match &a[0] {
            V::Arr(items) => items.iter().any(|x| eq(x, &a[1])),
            s => s
                .text()
                .to_lowercase()
                .contains(&a[1].text().to_lowercase()),
        }),
        "startsWith" => V::Bool(
            a[0].text()
                .to_lowercase()
                .starts_with(&a[1].text().to_lowercase()),
        ),
        "format" => {
            let mut out = a[0].text();
            for (n, v) in a[1..].iter().enumerate() {
                out = out.replace(&format!("{{{n}}}"), &v.text());
            }
            V::Str(out)
        }
        "fromJSON" => V::from_json(&serde_json::from_str(&a[0].text()).unwrap()),
        other => panic!("function {other} is not modelled"),
    }
}

fn job_starts(expr: &str, body: &str, association: &str) -> bool {
    let ctx = |path: &str| match path {
        "github.event.comment.body" => V::Str(body.to_string()),
        "github.event.comment.author_association" => V::Str(association.to_string()),
        "github.event_name" => V::Str("issue_comment".into()),
        other => panic!("context {other} is not modelled"),
    };
    let mut e = Eval {
        s: expr.as_bytes(),
        i: 0,
        ctx: &ctx,
    };
    let v = e.or();
    e.ws();
    assert_eq!(e.i, expr.len(), "trailing input in {expr}");
    v.truthy()
}

#[test]
fn comment_filter_accepts_exactly_what_the_parser_accepts() {
    let bodies = [
        "/compute mean of x",
        "/compute",
        "/compute ",
        "/compute\tmean",
        "/compute\nmore context",
        "/compute\r\nmore context",
        "/compute\rold mac line end",
        "/COMPUTE mean of x",
        "/Compute approve 0123abcd",
        "/compute approve",
        "/compute deny",
        "/computer mean",
        "/compute-x mean",
        "/compute\u{a0}mean",
        "\n/compute mean",
        "\n\n/compute mean",
        " /compute mean",
        "\r\n/compute mean",
        "please /compute mean",
        "thanks!\n/compute mean",
        "",
        "compute mean",
        "/comput",
        "`/compute` is the command",
    ];
    // compute.yml is what `compute-bot init` writes.
    for file in ["compute-comment.yml", "compute.yml"] {
        let w = yaml(&format!("examples/workflows/{file}"));
        let expr = w["jobs"]["compute"]["if"].as_str().unwrap().to_string();
        filter_matches_parser(&expr, &bodies);
    }
}

fn filter_matches_parser(expr: &str, bodies: &[&str]) {
    for &body in bodies {
        let parsed = command::parse(body, "/compute").is_some();
        for assoc in ["OWNER", "MEMBER", "COLLABORATOR"] {
            assert_eq!(
                job_starts(expr, body, assoc),
                parsed,
                "{body:?} by {assoc}: filter and parser disagree"
            );
        }
        for assoc in [
            "CONTRIBUTOR",
            "FIRST_TIME_CONTRIBUTOR",
            "FIRST_TIMER",
            "MANNEQUIN",
            "NONE",
        ] {
            assert!(
                !job_starts(expr, body, assoc),
                "{body:?} by {assoc} starts a runner"
            );
        }
    }
}

#[test]
fn evaluator_models_github_semantics() {
    // The properties the filter relies on: case-insensitive comparison and
    // fromJSON producing control characters.
    assert!(job_starts("startsWith('ABC', 'ab') && 'x' == 'X'", "", ""));
    assert!(job_starts(
        "format('a{0}b', fromJSON('\"\\n\"')) == fromJSON('\"a\\nb\"')",
        "",
        ""
    ));
    assert!(!job_starts("contains(fromJSON('[\"A\"]'), 'b')", "", ""));
}

/// Every `uses:` names a full commit SHA followed by `# v<version>`.
#[test]
fn every_action_is_pinned_to_a_commit_with_its_version() {
    let mut files: Vec<String> = Vec::new();
    for dir in ["examples/workflows", ".github/workflows"] {
        for e in std::fs::read_dir(root().join(dir)).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            if name.ends_with(".yml") {
                files.push(format!("{dir}/{name}"));
            }
        }
    }
    assert!(files.len() >= 5, "{files:?}");
    let mut seen = 0;
    for f in &files {
        for (n, line) in read(f).lines().enumerate() {
            let t = line.trim_start().trim_start_matches("- ");
            let Some(rest) = t.strip_prefix("uses: ") else {
                continue;
            };
            if rest.starts_with("docker://") {
                continue;
            }
            seen += 1;
            let (action, comment) = rest.split_once(" # ").unwrap_or((rest, ""));
            let sha = action.rsplit_once('@').map(|(_, s)| s).unwrap_or("");
            assert!(
                sha.len() == 40 && sha.chars().all(|c| c.is_ascii_hexdigit()),
                "{f}:{}: {action} is not pinned to a commit SHA",
                n + 1
            );
            assert!(
                comment.starts_with('v'),
                "{f}:{}: no `# v<version>` after {action}",
                n + 1
            );
        }
    }
    assert!(seen >= 10);
}

/// The examples pass the path the guide tells people to commit, and the
/// examples, the guide and `init` agree on it.
#[test]
fn examples_use_the_policy_path_of_the_guide() {
    let guide = read("docs/setup.md");
    assert!(guide.contains("Commit `.github/compute-bot.yml`"));
    for page in ["docs/setup.md", "docs/github-action.md"] {
        assert!(
            !read(page).contains("INPUT_POLICY: .github/compute-policy.yml"),
            "{page}"
        );
    }
    for f in [
        "compute-comment.yml",
        "compute-dispatch.yml",
        "compute-weekly.yml",
    ] {
        let w = yaml(&format!("examples/workflows/{f}"));
        let steps = w["jobs"]["compute"]["steps"].as_array().unwrap();
        let bot = steps
            .iter()
            .find(|s| s.get("id").and_then(Value::as_str) == Some("compute"))
            .unwrap();
        assert_eq!(bot["with"]["policy"], ".github/compute-bot.yml", "{f}");
    }
}

fn lock_versions() -> Vec<(String, String)> {
    read("sandbox/requirements.lock")
        .lines()
        .filter_map(|l| l.split_once("=="))
        .map(|(n, v)| (n.to_string(), v.trim_end_matches(" \\").to_string()))
        .collect()
}

/// The guide's two sentences that name the image's data stack name every
/// library the image labels (`sandbox/build-debian.sh`'s
/// `org.compute-bot.<import name>` labels, the comment's "Data stack" row),
/// and each of those is in the lock (the recipe labels the version it
/// installed from it).
#[test]
fn the_guides_stack_lines_name_every_library_the_image_labels() {
    let guide = read("docs/setup.md");
    let recipe = read("sandbox/build-debian.sh");
    let label_line = recipe
        .lines()
        .find(|l| l.contains("LABEL org.compute-bot.sandbox=python"))
        .expect("build-debian.sh writes the labels");
    let versions = lock_versions();
    let sentence = |from: &str, to: &str| {
        let start = guide
            .find(from)
            .unwrap_or_else(|| panic!("the guide lacks `{from}`"));
        let end = guide[start..]
            .find(to)
            .unwrap_or_else(|| panic!("no `{to}` after `{from}`"));
        guide[start..start + end]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let lines = [
        sentence("Its data stack", "is the same everywhere"),
        sentence("The sandbox image's labels name", "versions"),
    ];
    // Import name (label key) → the lock's name and the name people know.
    fn known(import: &str) -> (&str, &str) {
        match import {
            "sklearn" => ("scikit-learn", "scikit-learn"),
            "scipy" => ("scipy", "SciPy"),
            "duckdb" => ("duckdb", "DuckDB"),
            other => (other, other),
        }
    }
    let bookkeeping = [
        "sandbox",
        "recipe",
        "python",
        "lock-sha256",
        "recipe-sha256",
    ];
    let mut labelled = 0;
    for label in label_line.split("org.compute-bot.").skip(1) {
        let Some((key, _)) = label.split_once('=') else {
            continue;
        };
        if bookkeeping.contains(&key) || key.contains(char::is_whitespace) {
            continue;
        }
        labelled += 1;
        let (locked, shown) = known(key);
        assert!(
            versions.iter().any(|(n, _)| n == locked),
            "the image labels {key}, the lock does not have {locked}"
        );
        for line in &lines {
            assert!(
                line.contains(shown),
                "docs/setup.md names the stack without {shown}: \"{line}\""
            );
        }
    }
    assert!(labelled >= 10, "only {labelled} libraries labelled");
}

/// The one sandbox recipe installs the lock with hashes, finishes the root with
/// `finish-rootfs.sh`, makes a reproducible layer and labels every library.
#[test]
fn the_sandbox_recipe_installs_the_one_lock() {
    let lock = read("sandbox/requirements.lock");
    let versions = lock_versions();
    // The data stack, and the readers of data files with their dependencies
    // (pip installs with --no-deps, so the lock must list them).
    for name in [
        "pandas",
        "numpy",
        "matplotlib",
        "duckdb",
        "fastparquet",
        "cramjam",
        "fsspec",
        "openpyxl",
        "et-xmlfile",
        // the analyst's instruments and their own dependencies
        "scipy",
        "statsmodels",
        "patsy",
        "scikit-learn",
        "joblib",
        "threadpoolctl",
        "seaborn",
    ] {
        assert!(versions.iter().any(|(n, _)| n == name), "{name} not locked");
    }
    // Every requirement carries at least one hash (pip --require-hashes).
    let entries = lock.split("\n").filter(|l| l.contains("==")).count();
    assert_eq!(entries, versions.len());
    assert!(lock.matches("--hash=sha256:").count() >= entries);
    let major = |n: &str| {
        versions
            .iter()
            .find(|(k, _)| k == n)
            .unwrap()
            .1
            .split('.')
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(major("pandas"), "2");
    assert_eq!(major("numpy"), "2");
    assert_eq!(major("matplotlib"), "3");

    let debian = read("sandbox/build-debian.sh");
    assert!(debian.contains("requirements.lock"));
    assert!(debian.contains("--require-hashes --no-deps"));
    assert!(debian.contains("org.compute-bot.lock-sha256"));
    // It finishes the root (trim, font cache, bytecode) and never deletes the
    // bytecode again.
    assert!(debian.contains("finish-rootfs.sh"));
    assert!(!debian.contains("__pycache__"));
    let finish = read("sandbox/finish-rootfs.sh");
    assert!(finish.contains("compileall") && finish.contains("--invalidation-mode unchecked-hash"));
    assert!(debian.contains("SOURCE_DATE_EPOCH") && debian.contains("--sort=name"));
    assert!(debian.contains("bookworm"));
    // The labels are keyed by import name (scikit-learn is `sklearn`).
    for label in [
        "pandas",
        "numpy",
        "matplotlib",
        "duckdb",
        "fastparquet",
        "openpyxl",
        "scipy",
        "statsmodels",
        "sklearn",
        "seaborn",
    ] {
        assert!(
            debian.contains(&format!("org.compute-bot.{label}=$")),
            "build-debian.sh writes no {label} label"
        );
    }
    // joblib runs scikit-learn's n_jobs in the one process.
    assert!(debian.contains("JOBLIB_MULTIPROCESSING=0"));
}

/// What ships is what is tested (issue 43): there is one sandbox recipe, and
/// the release builds the published sandbox image with it — its sandbox job
/// runs `scripts/release-sandbox-image`, which builds with
/// `sandbox/build-debian.sh` twice (`scripts/check-sandbox-reproducible`) —,
/// records the layer for `doctor` (`scripts/release-layers`) in the release
/// commit, checks the bot image it pushes (`scripts/check-bot-image`), and
/// `.ci/run` runs the same build steps (`scripts/release-check`).
#[test]
fn the_release_builds_the_sandbox_image_with_the_tested_recipe() {
    assert!(
        !root().join("sandbox/python/Dockerfile").exists(),
        "a second sandbox recipe is back"
    );
    let release = yaml(".github/workflows/release.yml");
    let text = read(".github/workflows/release.yml");
    assert!(!text.contains("sandbox/python") && !text.contains("debian:bookworm"));
    let runs = |job: &str| -> String {
        release["jobs"][job]["steps"]
            .as_array()
            .unwrap_or_else(|| panic!("no job {job}"))
            .iter()
            .filter_map(|s| s["run"].as_str())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let uses = |job: &str| -> Vec<String> {
        release["jobs"][job]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["uses"].as_str().map(str::to_string))
            .collect()
    };
    assert!(runs("sandbox").contains("scripts/release-sandbox-image \"$ARCH\""));
    // BuildKit builds only the bot image, from the context the script wrote.
    assert!(
        !uses("sandbox")
            .iter()
            .any(|u| u.starts_with("docker/build-push-action"))
    );
    let build = runs("build");
    assert!(build.contains("scripts/release-bot-image \"$ARCH\""));
    assert!(build.contains("scripts/check-bot-image --release-layer \"$BOT_IMAGE@$BOT_DIGEST\""));
    assert_eq!(release["jobs"]["build"]["needs"], "sandbox");
    let publish = runs("publish");
    assert!(publish.contains("scripts/release-layers dist"));
    assert!(
        publish.contains("sandbox/release-layers"),
        "the release commit carries the layers"
    );
    assert!(
        publish.contains("sandbox-$arch.layer"),
        "the notes print the layers"
    );
    // Both platforms, each on a runner of its own platform.
    for job in ["sandbox", "build"] {
        let matrix = &release["jobs"][job]["strategy"]["matrix"]["include"];
        let pairs: Vec<(&str, &str)> = matrix
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["arch"].as_str().unwrap(), m["runner"].as_str().unwrap()))
            .collect();
        assert_eq!(
            pairs,
            [("amd64", "ubuntu-24.04"), ("arm64", "ubuntu-24.04-arm")],
            "{job}"
        );
    }
    // The scripts chain down to the one recipe.
    assert!(read("scripts/release-sandbox-image").contains("scripts/check-sandbox-reproducible"));
    assert!(read("scripts/check-sandbox-reproducible").contains("sandbox/build-debian.sh \"$a\""));
    assert!(
        read("scripts/release-bot-image")
            .contains("scripts/build-bot-image target/release/compute-bot")
    );
    let ci = read(".ci/run");
    assert!(
        ci.lines()
            .any(|l| !l.starts_with('#') && l.contains("scripts/release-check")),
        ".ci/run does not run the release's build steps"
    );
    let check = read("scripts/release-check");
    assert!(
        check.contains("scripts/release-sandbox-image")
            && check.contains("scripts/release-bot-image")
    );
}

#[test]
fn bot_image_builds_from_scratch_over_the_release_binary() {
    let d = read("Dockerfile");
    let froms: Vec<&str> = d.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(froms, ["FROM scratch"]);
    assert!(d.contains("COPY rootfs/ /"));
    assert!(d.contains("ENTRYPOINT [\"/usr/local/bin/compute-bot\"]"));
    let script = read("scripts/build-bot-image");
    assert!(script.contains("ca-certificates"));
    assert!(script.contains("ldd"));
}

/// Runs of `scripts/lint-workflows` on one fresh venv path, started half a
/// second apart while the first is still setting it up (as a fresh clone's
/// parallel tests do): every one finishes and passes. Without the lock a later
/// run made the venv again under an earlier one and ran a `pip` that was not
/// there ("No such file or directory").
#[test]
fn lint_workflows_set_up_is_safe_under_parallel_runs() {
    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("lint-venv");
    let runs: Vec<_> = (0..6)
        .map(|i| {
            if i > 0 {
                std::thread::sleep(std::time::Duration::from_millis(500));
            }
            std::process::Command::new(root().join("scripts/lint-workflows"))
                .arg("examples/workflows/compute.yml")
                .env("COMPUTE_BOT_LINT_VENV", &venv)
                .current_dir(root())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    assert!(
        !venv.join(".installed").exists(),
        "the later runs must start while the first is still installing"
    );
    for (i, child) in runs.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "run {i} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(venv.join(".installed").exists());
}

/// The boundary suite's test-only packages stay out of the bot's image: its
/// lock names none of them, neither recipe reads the boundary lock, and the
/// suite's image is not the bot's default.
#[test]
fn the_boundary_image_is_test_only() {
    let names = |lock: &str| -> Vec<String> {
        lock.lines()
            .filter_map(|l| l.split_once("=="))
            .map(|(n, _)| n.to_string())
            .collect()
    };
    // What the corpus imports that the bot's image lacks.
    let test_packages = [
        "requests",
        "psutil",
        "watchdog",
        "pyperclip",
        "pyyaml",
        "jsonpickle",
    ];
    let test_only = names(&read("sandbox/boundary/requirements.lock"));
    for p in test_packages {
        assert!(
            test_only.iter().any(|n| n == p),
            "{p} not in the boundary lock"
        );
    }
    let bot = names(&read("sandbox/requirements.lock"));
    for p in test_packages {
        assert!(
            !bot.contains(&p.to_string()),
            "{p} is in the bot's image lock"
        );
    }
    for recipe in ["sandbox/build-debian.sh", "Dockerfile"] {
        assert!(
            !read(recipe).contains("boundary"),
            "{recipe} reads the boundary files"
        );
    }
    let suite = read("scripts/boundary-suite");
    assert!(suite.contains("BOUNDARY_IMAGE = \"compute-bot-sandbox:boundary\""));
    assert_ne!(
        compute_bot::sandbox::DEFAULT_IMAGE,
        "compute-bot-sandbox:boundary"
    );
    let dockerfile = read("sandbox/boundary/Dockerfile");
    assert!(
        dockerfile.contains("USER 10001:10001"),
        "the base's user is restored"
    );
}
