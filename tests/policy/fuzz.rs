//! Property-based fuzzing (proptest) of the four parsers that read text
//! from outside: the `/compute` command parser, the event reader, the policy
//! loader and the Python checker. Every property first asserts that nothing
//! panics, then one or more invariants that must hold for any input.
//! Cases are bounded (256 per property) so the file runs in seconds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use compute_bot::github::actions::event::{ActionEnv, EnvError, EventError, Trigger};
use compute_bot::github::command::{self, Ask, Command};
use compute_bot::policy::{Decision, Policy, Verdict, check_code};
use proptest::prelude::*;
use serde_json::{Value, json};

const CASES: u32 = 256;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: CASES,
        // Shrinking is bounded too, so a failure still reports quickly.
        max_shrink_iters: 2048,
        // Failures are reported with their minimal input; no files are written.
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn default_yaml() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| std::fs::read_to_string(root().join("policies/default.yml")).unwrap())
}

fn default_policy() -> &'static Policy {
    static POLICY: OnceLock<Policy> = OnceLock::new();
    POLICY.get_or_init(|| Policy::load(&root().join("policies/default.yml")).unwrap())
}

fn corpus() -> &'static Vec<(String, String)> {
    static FILES: OnceLock<Vec<(String, String)>> = OnceLock::new();
    FILES.get_or_init(|| {
        let mut files: Vec<(String, String)> =
            std::fs::read_dir(root().join("tests/policy_corpus"))
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "py"))
                .map(|p| {
                    let name = p.file_name().unwrap().to_string_lossy().into_owned();
                    (name, std::fs::read_to_string(&p).unwrap())
                })
                .collect();
        files.sort();
        assert!(files.len() > 50, "the policy corpus is missing");
        files
    })
}

/// The corpus programs the default policy allows as they are.
fn allowed_corpus() -> &'static Vec<(String, String)> {
    static FILES: OnceLock<Vec<(String, String)>> = OnceLock::new();
    FILES.get_or_init(|| {
        let files: Vec<_> = corpus()
            .iter()
            .filter(|(_, code)| check_code(default_policy(), code).decision == Decision::Allow)
            .cloned()
            .collect();
        assert!(files.len() > 20, "too few allowed corpus programs");
        files
    })
}

/// A text edit applied to a seed document at a fraction of its length.
#[derive(Debug, Clone)]
enum Mutation {
    /// Insert text at the position.
    Insert(f64, String),
    /// Delete up to n characters from the position.
    Delete(f64, usize),
    /// Replace the character at the position.
    Replace(f64, char),
    /// Cut the document at the position.
    Truncate(f64),
    /// Repeat the line at the position.
    DuplicateLine(f64),
    /// Swap the line at the position with the next one.
    SwapLines(f64),
}

/// Text with the characters that matter to YAML and Python, plus any char.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        "[ \t\n:#\\-\\[\\]{}'\"|>&*!%@`,?=()0-9a-z_.\\\\]{0,12}",
        any::<String>().prop_map(|s| s.chars().take(12).collect()),
        Just("\n  ".to_string()),
        Just("\t".to_string()),
        Just("\r\n".to_string()),
        Just("\u{feff}".to_string()),
        Just("é".to_string()),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = 0.0f64..=1.0;
    prop_oneof![
        (at.clone(), fragment()).prop_map(|(p, s)| Mutation::Insert(p, s)),
        (at.clone(), 1usize..40).prop_map(|(p, n)| Mutation::Delete(p, n)),
        (at.clone(), any::<char>()).prop_map(|(p, c)| Mutation::Replace(p, c)),
        at.clone().prop_map(Mutation::Truncate),
        at.clone().prop_map(Mutation::DuplicateLine),
        at.prop_map(Mutation::SwapLines),
    ]
}

fn apply(text: &str, m: &Mutation) -> String {
    let chars: Vec<char> = text.chars().collect();
    let pos = |p: f64| ((chars.len() as f64) * p) as usize;
    let line_at = |p: f64| {
        let lines: Vec<&str> = text.split('\n').collect();
        let n = lines.len();
        let i = ((n as f64) * p) as usize;
        (lines, i.min(n.saturating_sub(1)))
    };
    match m {
        Mutation::Insert(p, s) => {
            let i = pos(*p).min(chars.len());
            chars[..i]
                .iter()
                .chain(s.chars().collect::<Vec<_>>().iter())
                .chain(chars[i..].iter())
                .collect()
        }
        Mutation::Delete(p, n) => {
            let i = pos(*p).min(chars.len());
            let j = (i + n).min(chars.len());
            chars[..i].iter().chain(chars[j..].iter()).collect()
        }
        Mutation::Replace(p, c) => {
            let mut out = chars.clone();
            if let Some(slot) = out.get_mut(pos(*p)) {
                *slot = *c;
            }
            out.into_iter().collect()
        }
        Mutation::Truncate(p) => chars[..pos(*p).min(chars.len())].iter().collect(),
        Mutation::DuplicateLine(p) => {
            let (mut lines, i) = line_at(*p);
            lines.insert(i, lines[i]);
            lines.join("\n")
        }
        Mutation::SwapLines(p) => {
            let (mut lines, i) = line_at(*p);
            if i + 1 < lines.len() {
                lines.swap(i, i + 1);
            }
            lines.join("\n")
        }
    }
}

fn mutate(seed: &str, ms: &[Mutation]) -> String {
    ms.iter().fold(seed.to_string(), |t, m| apply(&t, m))
}

// ---------------------------------------------------------------- command

/// A goal line: no `=` (no options), not one of the reserved words, never
/// blank after trimming, no line breaks.
fn goal() -> impl Strategy<Value = String> {
    "[A-Za-z0-9 ,.?()'\"`*/#%+<>:;\t\u{e9}\u{4e2d}-]{1,60}".prop_filter("a real goal", |g| {
        let lower = g.trim().to_ascii_lowercase();
        let words: Vec<&str> = lower.split_whitespace().collect();
        // A reserved first word is a subcommand (strictly), never a goal.
        !g.trim().is_empty()
            && !matches!(
                words.first(),
                Some(&("approve" | "deny" | "replay" | "watch" | "run" | "plan"))
            )
    })
}

fn prefix_case() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("/compute".to_string()),
        Just("/COMPUTE".to_string()),
        Just("/Compute".to_string()),
    ]
}

proptest! {
    #![proptest_config(config())]

    /// Any comment and any prefix: no panic, and a match always starts with
    /// the prefix (ASCII case ignored) followed by a blank, a line end or nothing.
    #[test]
    fn command_any_text_never_panics(body in any::<String>(), prefix in prop_oneof![
        Just("/compute".to_string()), Just("/c".to_string()), any::<String>(),
    ]) {
        if let Some(_cmd) = command::parse(&body, &prefix) {
            let p = prefix.trim();
            let text = body.replace("\r\n", "\n").replace('\r', "\n");
            let head = text.get(..p.len()).unwrap_or("");
            prop_assert!(head.eq_ignore_ascii_case(p), "matched without the prefix: {body:?}");
            let next = text[p.len()..].chars().next();
            prop_assert!(matches!(next, None | Some(' ' | '\t' | '\n')), "prefix not a whole word: {body:?}");
        }
    }

    /// Bodies built from the command's own syntax (options, quotes, fences,
    /// CR/LF) in random order: no panic.
    #[test]
    fn command_structured_noise_never_panics(parts in prop::collection::vec(prop_oneof![
        Just("/compute".to_string()), Just(" ".to_string()), Just("\r\n".to_string()),
        Just("\n".to_string()), Just("\r".to_string()), Just("```python\n".to_string()),
        Just("```".to_string()), Just("~~~py\n".to_string()), Just("key=".to_string()),
        Just("\"".to_string()), Just("'".to_string()), Just("\\".to_string()),
        Just("approve".to_string()), Just("deny".to_string()), Just("é".to_string()),
        "[a-z0-9=_ -]{0,8}",
    ], 0..24)) {
        let body = parts.concat();
        let _ = command::parse(&body, "/compute");
    }

    /// A comment whose first line is `/compute <goal>` always parses as a run
    /// with exactly that goal (trimmed), whatever follows on later lines.
    #[test]
    fn command_first_line_goal_is_the_goal(
        p in prefix_case(), g in goal(), rest in any::<String>(), crlf in any::<bool>()
    ) {
        let nl = if crlf { "\r\n" } else { "\n" };
        let body = format!("{p} {g}{nl}{rest}");
        match command::parse(&body, "/compute") {
            Some(Command::Run(Ask { goal, options, .. })) => {
                prop_assert_eq!(goal, g.trim());
                prop_assert!(options.is_empty());
            }
            other => prop_assert!(false, "{body:?} parsed as {other:?}"),
        }
    }

    /// Plain `key=value` options before the goal are read as options, and
    /// the goal is what follows them.
    #[test]
    fn command_options_then_goal(
        opts in prop::collection::btree_map("[a-z_][a-z0-9_-]{0,10}", "[A-Za-z0-9./,:]{1,12}", 1..4),
        g in goal(),
    ) {
        let written: Vec<String> = opts.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let body = format!("/compute {} {g}", written.join(" "));
        match command::parse(&body, "/compute") {
            Some(Command::Run(Ask { goal, options, .. })) => {
                prop_assert_eq!(&options, &opts);
                prop_assert_eq!(goal, g.trim());
            }
            other => prop_assert!(false, "{body:?} parsed as {other:?}"),
        }
    }

    /// A word glued to the prefix (`/computer`, `/compute_x`) is never a command.
    #[test]
    fn command_prefix_must_be_a_whole_word(glued in "[A-Za-z0-9_=/.-][^\r\n]{0,20}", rest in any::<String>()) {
        let body = format!("/compute{glued}\n{rest}");
        prop_assert_eq!(command::parse(&body, "/compute"), None);
    }

    /// `/compute approve <hex>` (8..=64 hex digits) binds the lower-cased prefix.
    #[test]
    fn command_approve_hash(hash in "[0-9a-fA-F]{8,64}", tail in any::<String>()) {
        let body = format!("/compute approve {hash}\n{tail}");
        prop_assert_eq!(
            command::parse(&body, "/compute"),
            Some(Command::Approve { sha256_prefix: Some(hash.to_ascii_lowercase()) })
        );
    }
}

// ------------------------------------------------------------------ event

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        any::<String>().prop_map(Value::String),
        prop_oneof![
            Just("created"),
            Just("edited"),
            Just("deleted"),
            Just("octo/data"),
            Just("a[bot]")
        ]
        .prop_map(|s| Value::String(s.to_string())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    "[a-z_]{1,10}",
                    prop_oneof![
                        Just("action"),
                        Just("issue"),
                        Just("comment"),
                        Just("number"),
                        Just("id"),
                        Just("user"),
                        Just("login"),
                        Just("body"),
                        Just("type"),
                        Just("inputs"),
                        Just("goal"),
                        Just("code"),
                        Just("repository"),
                        Just("full_name"),
                        Just("pull_request"),
                    ]
                    .prop_map(str::to_string),
                ],
                inner,
                0..6,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// An `issue_comment` payload with each field either right or replaced by
/// arbitrary JSON (or removed).
fn comment_payload() -> impl Strategy<Value = (Value, bool)> {
    let field = |good: Value| {
        prop_oneof![
            3 => Just(Some(good)),
            1 => json_value().prop_map(Some),
            1 => Just(None),
        ]
    };
    (
        field(json!("created")),
        field(json!(17)),
        field(json!(9001)),
        field(json!("octocat")),
        any::<String>(),
        field(json!("octo-org/data")),
        json_value(),
    )
        .prop_map(|(action, number, id, login, body, full, extra)| {
            let mut p = serde_json::Map::new();
            let mut all_good = true;
            let mut put = |obj: &mut serde_json::Map<String, Value>,
                           k: &str,
                           v: Option<Value>,
                           good: Value| {
                all_good &= v.as_ref() == Some(&good);
                if let Some(v) = v {
                    obj.insert(k.to_string(), v);
                }
            };
            put(&mut p, "action", action, json!("created"));
            let mut issue = serde_json::Map::new();
            put(&mut issue, "number", number, json!(17));
            let mut user = serde_json::Map::new();
            put(&mut user, "login", login, json!("octocat"));
            let mut comment = serde_json::Map::new();
            put(&mut comment, "id", id, json!(9001));
            comment.insert("user".into(), Value::Object(user));
            comment.insert("body".into(), Value::String(body));
            let mut repo = serde_json::Map::new();
            put(&mut repo, "full_name", full, json!("octo-org/data"));
            p.insert("issue".into(), Value::Object(issue));
            p.insert("comment".into(), Value::Object(comment));
            p.insert("repository".into(), Value::Object(repo));
            p.insert("sender".into(), extra);
            (Value::Object(p), all_good)
        })
}

fn env_vars(event: &str, path: &Path) -> BTreeMap<String, String> {
    [
        ("GITHUB_EVENT_NAME", event),
        ("GITHUB_EVENT_PATH", path.to_str().unwrap()),
        ("GITHUB_REPOSITORY", "octo-org/data"),
        ("GITHUB_RUN_ID", "6001"),
        ("GITHUB_WORKSPACE", "/github/workspace"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

fn read_trigger(event: &str, file_text: &str) -> Result<Trigger, EventError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("event.json");
    std::fs::write(&path, file_text).unwrap();
    let env = ActionEnv::from_map(&env_vars(event, &path)).unwrap();
    Trigger::from_env(&env)
}

const EVENTS: &[&str] = &[
    "issue_comment",
    "workflow_dispatch",
    "schedule",
    "pull_request",
    "push",
];

proptest! {
    #![proptest_config(config())]

    /// Any JSON payload under any event name: no panic; a comment trigger
    /// carries the body exactly as in the payload.
    #[test]
    fn event_any_json_never_panics(v in json_value(), e in 0..EVENTS.len()) {
        match read_trigger(EVENTS[e], &v.to_string()) {
            Ok(Trigger::Comment { body, .. }) => {
                prop_assert_eq!(Some(body.as_str()), v.pointer("/comment/body").and_then(Value::as_str));
            }
            Ok(_) | Err(EventError::Field { .. } | EventError::Input { .. }) => {}
            Err(other) => prop_assert!(false, "valid JSON gave {other}"),
        }
    }

    /// Any bytes as the event file: no panic; a parse error points at a
    /// 1-based line and column inside the file.
    #[test]
    fn event_any_text_reports_a_position(text in prop_oneof![
        any::<String>(),
        json_value().prop_flat_map(|v| {
            let s = v.to_string();
            let n = s.chars().count();
            (Just(s), 0..=n).prop_map(|(s, cut)| s.chars().take(cut).collect())
        }),
    ]) {
        match read_trigger("issue_comment", &text) {
            Err(EventError::Parse { line, column, .. }) => {
                let lines = text.split('\n').count();
                prop_assert!(line >= 1 && line <= lines, "line {line} of {lines}");
                let width = text.split('\n').nth(line - 1).map_or(0, |l| l.len());
                prop_assert!(column <= width + 1, "column {column} past the line ({width} bytes)");
            }
            Err(EventError::Read { .. }) => prop_assert!(false, "the file was written"),
            _ => prop_assert!(serde_json::from_str::<Value>(&text).is_ok()),
        }
    }

    /// A comment payload with fields mutated: a well-formed one always gives
    /// the comment with its exact body; a broken required field gives an
    /// error naming the field, never a wrong trigger.
    #[test]
    fn event_comment_payload_fields((v, all_good) in comment_payload()) {
        let got = read_trigger("issue_comment", &v.to_string());
        if all_good {
            match got {
                Ok(Trigger::Comment { body, issue_number, comment_id, author_login, edited, .. }) => {
                    prop_assert_eq!(Some(body.as_str()), v.pointer("/comment/body").and_then(Value::as_str));
                    prop_assert_eq!((issue_number, comment_id, author_login.as_str(), edited), (17, 9001, "octocat", false));
                }
                other => prop_assert!(false, "well-formed payload gave {other:?}"),
            }
        } else if let Err(e) = got {
            match e {
                EventError::Field { field, .. } => prop_assert!(
                    ["action", "issue.number", "comment.id", "comment.user.login", "repository.full_name"]
                        .contains(&field.as_str()),
                    "unexpected field {field}"
                ),
                other => prop_assert!(false, "unexpected error {other}"),
            }
        }
    }

    /// Any values for the Actions variables: no panic; a missing or blank
    /// required variable is named in the error.
    #[test]
    fn event_env_values(values in prop::collection::vec(prop_oneof![
        any::<String>(), Just(String::new()), Just("  ".to_string()), Just("#12".to_string()),
        Just("octo/data".to_string()), Just("0".to_string()), "[0-9#/a-z ]{0,6}",
    ], 12)) {
        const NAMES: [&str; 12] = [
            "GITHUB_EVENT_NAME", "GITHUB_EVENT_PATH", "GITHUB_REPOSITORY", "GITHUB_RUN_ID",
            "GITHUB_WORKSPACE", "GITHUB_RUN_ATTEMPT", "GITHUB_API_URL", "INPUT_ISSUE",
            "INPUT_INPUTS", "INPUT_COMMAND", "INPUT_CODE", "INPUT_GOAL",
        ];
        let vars: BTreeMap<String, String> =
            NAMES.iter().zip(&values).map(|(k, v)| (k.to_string(), v.clone())).collect();
        match ActionEnv::from_map(&vars) {
            Ok(env) => {
                prop_assert!(!env.event_name.is_empty() && !env.run_id.is_empty());
                prop_assert!(!env.api_url.ends_with('/'));
                prop_assert!(env.inputs.inputs.iter().all(|p| !p.trim().is_empty()));
            }
            Err(EnvError::Missing(name)) => {
                prop_assert!(NAMES[..5].contains(&name.as_str()), "{name}");
                prop_assert!(vars[&name].trim().is_empty());
            }
            Err(EnvError::Invalid { name, .. }) => {
                prop_assert!(vars.contains_key(&name), "{name}");
            }
        }
    }
}

// ----------------------------------------------------------------- policy

fn check_policy_error(text: &str) -> Result<(), TestCaseError> {
    match Policy::from_yaml_str(text, "fuzz.yml") {
        Ok(p) => {
            // What loads must survive its own effective form.
            let again = Policy::from_yaml_str(&p.to_effective_yaml(), "effective.yml");
            prop_assert!(
                again.is_ok(),
                "effective YAML does not load: {:?}",
                again.err()
            );
        }
        Err(e) => {
            prop_assert_eq!(e.file.as_str(), "fuzz.yml");
            prop_assert!(!e.message.trim().is_empty());
            prop_assert!(e.line >= 1 && e.column >= 1, "no line:column: {e}");
            let lines = text.split(['\n', '\r']).count() as u64 + 1;
            prop_assert!(
                e.line <= lines,
                "line {} past the end ({lines}): {e}",
                e.line
            );
            let shown = e.to_string();
            let want = format!("fuzz.yml:{}:{}: ", e.line, e.column);
            prop_assert!(shown.starts_with(&want), "{shown}");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// Any text as a policy file: no panic; an error names the file, a
    /// line:column inside the text and a message.
    #[test]
    fn policy_any_text(text in prop_oneof![
        any::<String>(),
        prop::collection::vec(fragment(), 0..30).prop_map(|v| v.concat()),
    ]) {
        check_policy_error(&text)?;
    }

    /// policies/default.yml with random edits (inserts, deletions, swapped
    /// or doubled lines, cuts): no panic; an error carries its line:column.
    #[test]
    fn policy_mutated_default(ms in prop::collection::vec(mutation(), 1..5)) {
        check_policy_error(&mutate(default_yaml(), &ms))?;
    }
}

// ---------------------------------------------------------------- checker

/// Line starts as the checker counts them (`\n`, `\r\n` and a lone `\r` end a line).
fn lines_of(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let b = code.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\n' || b[i] == b'\r' {
            out.push(&code[start..i]);
            if b[i] == b'\r' && b.get(i + 1) == Some(&b'\n') {
                i += 1;
            }
            start = i + 1;
        }
        i += 1;
    }
    out.push(&code[start..]);
    out
}

fn check_verdict(code: &str) -> Result<Verdict, TestCaseError> {
    let v = check_code(default_policy(), code);
    let lines = lines_of(code);
    for f in &v.findings {
        prop_assert!(
            f.line >= 1 && (f.line as usize) <= lines.len(),
            "{}: line {} of {}",
            f.rule,
            f.line,
            lines.len()
        );
        let width = lines[f.line as usize - 1].chars().count();
        prop_assert!(
            f.column >= 1 && (f.column as usize) <= width + 1,
            "{}: column {} on a line of {width} chars",
            f.rule,
            f.column
        );
        prop_assert!(!f.rule.is_empty() && !f.message.is_empty());
    }
    let implied = Verdict::from_findings(v.findings.clone()).decision;
    prop_assert_eq!(v.decision, implied, "decision disagrees with the findings");
    Ok(v)
}

proptest! {
    #![proptest_config(config())]

    /// Any text as Python: no panic; every finding lies within the source and
    /// the decision is the one its findings imply.
    #[test]
    fn checker_any_text(code in prop_oneof![
        any::<String>(),
        prop::collection::vec(fragment(), 0..40).prop_map(|v| v.concat()),
    ]) {
        check_verdict(&code)?;
    }

    /// The policy corpus with random edits: no panic, findings inside the
    /// source; the same text always gets the same verdict.
    #[test]
    fn checker_mutated_corpus(i in any::<prop::sample::Index>(), ms in prop::collection::vec(mutation(), 1..4)) {
        let files = corpus();
        let (name, seed) = &files[i.index(files.len())];
        let code = mutate(seed, &ms);
        let v = check_verdict(&code)?;
        prop_assert_eq!(&check_code(default_policy(), &code), &v, "{} not deterministic", name);
    }

    /// Appending a line that calls `eval` to any corpus program the policy
    /// allows never lets it through: the added call is found, on the added line.
    #[test]
    fn checker_added_eval_is_denied(i in any::<prop::sample::Index>(), arg in "[a-z0-9+ ]{0,10}") {
        let files = allowed_corpus();
        let (name, seed) = &files[i.index(files.len())];
        let code = format!("{}\neval('{arg}')\n", seed.trim_end());
        let v = check_verdict(&code)?;
        prop_assert_eq!(v.decision, Decision::Deny, "{}", name);
        let last = lines_of(&code).len() as u32 - 1;
        prop_assert!(v.findings.iter().any(|f| f.line == last), "{name}: nothing on line {last}: {:?}", v.findings);
    }
}
