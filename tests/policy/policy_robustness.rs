//! The checker never panics or hangs: mutated snippets, arbitrary bytes,
//! deep nesting and 1 MB of code all produce a verdict quickly, and never
//! an `internal-error` (which is how a panic inside the checker surfaces).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use compute_bot::policy::{Decision, Policy, Verdict, check_code};
use compute_bot::units::ByteSize;

fn big_policy() -> Policy {
    let mut p = Policy::default();
    p.code.max_bytes = ByteSize::mib(1);
    p
}

/// Runs the check and fails on a panic, an internal error or slowness.
fn check_ok(policy: &Policy, code: &str, what: &str, limit: Duration) -> Verdict {
    let t = Instant::now();
    let v = check_code(policy, code);
    let took = t.elapsed();
    assert!(took < limit, "{what}: took {took:?}");
    assert!(
        !v.findings.iter().any(|f| f.rule == "internal-error"),
        "{what}: internal error {:?}",
        v.findings
    );
    v
}

fn has_rule(v: &Verdict, rule: &str) -> bool {
    v.findings.iter().any(|f| f.rule == rule)
}

/// xorshift64*: deterministic, no dependencies.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const TOKENS: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ":",
    "\n",
    "    ",
    "'",
    "\"",
    "\"\"\"",
    "f'{",
    "}'",
    "\\",
    "lambda",
    "import os",
    "getattr",
    "__class__",
    "__subclasses__",
    ".",
    ",",
    "*",
    "**",
    "match x:\n    case ",
    "if",
    "else",
    "async ",
    "await ",
    "yield",
    "=",
    ":=",
    "#",
    "\0",
    "\r",
    "\u{feff}",
    "ｅｖａｌ",
    "é",
    "💥",
    "\t",
    "@",
    "->",
    "type X = ",
    "[T]",
];

fn mutate(rng: &mut Rng, src: &[u8]) -> Vec<u8> {
    let mut v = src.to_vec();
    for _ in 0..1 + rng.below(6) {
        let pos = rng.below(v.len() + 1);
        match rng.below(6) {
            0 if !v.is_empty() => {
                let end = (pos + rng.below(16)).min(v.len());
                v.drain(pos.min(end)..end);
            }
            1 => v.insert(pos, rng.next() as u8),
            2 => {
                let t = TOKENS[rng.below(TOKENS.len())].as_bytes();
                v.splice(pos..pos, t.iter().copied());
            }
            3 if !v.is_empty() => {
                let a = rng.below(v.len());
                let b = (a + rng.below(64)).min(v.len());
                let chunk: Vec<u8> = v[a..b].to_vec();
                v.splice(pos..pos, chunk);
            }
            4 if pos < v.len() => v[pos] = rng.next() as u8,
            _ => v.truncate(pos),
        }
    }
    v
}

#[test]
fn mutated_corpus_snippets_never_panic_or_hang() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/policy_corpus");
    let mut seeds: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    seeds.sort();
    let policy = Policy::default();
    let mut decisions = [0usize; 3];
    // POLICY_FUZZ_ITERS raises the count for a longer local run.
    let iters: usize = std::env::var("POLICY_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    let mut rng = Rng(std::env::var("POLICY_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x9E37_79B9_7F4A_7C15));
    for i in 0..iters {
        let seed = &seeds[rng.below(seeds.len())];
        let bytes = mutate(&mut rng, seed);
        let code = String::from_utf8_lossy(&bytes);
        let v = check_ok(
            &policy,
            &code,
            &format!("mutation {i}"),
            Duration::from_secs(5),
        );
        decisions[match v.decision {
            Decision::Allow => 0,
            Decision::Deny => 1,
            Decision::Escalate => 2,
        }] += 1;
        for f in &v.findings {
            assert!(
                f.line >= 1 && f.column >= 1,
                "mutation {i}: bad position {f:?}"
            );
        }
    }
    assert!(decisions[1] > 0, "{decisions:?}");
}

#[test]
fn arbitrary_bytes_never_panic() {
    let policy = Policy::default();
    let mut rng = Rng(42);
    for i in 0..500 {
        let len = rng.below(2048);
        let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let code = String::from_utf8_lossy(&bytes);
        check_ok(
            &policy,
            &code,
            &format!("random {i}"),
            Duration::from_secs(5),
        );
    }
}

#[test]
fn deeply_nested_expressions_are_denied_not_crashed() {
    let policy = big_policy();
    let n = 5000;
    let cases = [
        (
            "parens",
            format!("x = {}1{}\n", "(".repeat(n), ")".repeat(n)),
        ),
        (
            "lists",
            format!("x = {}1{}\n", "[".repeat(n), "]".repeat(n)),
        ),
        (
            "calls",
            format!("x = {}1{}\n", "f(".repeat(n), ")".repeat(n)),
        ),
        ("unary", format!("x = {}1\n", "-".repeat(100_000))),
        ("not", format!("x = {}True\n", "not ".repeat(50_000))),
        ("lambdas", format!("f = {}0\n", "lambda: ".repeat(20_000))),
        ("attributes", format!("x = a{}\n", ".b".repeat(200_000))),
        ("subscripts", format!("x = a{}\n", "[0]".repeat(100_000))),
        ("binop chain", format!("x = 1{}\n", "+1".repeat(400_000))),
        (
            "fstrings",
            format!("x = {}1{}\n", "f'{".repeat(2000), "}'".repeat(2000)),
        ),
        (
            "dicts",
            format!("x = {}1{}\n", "{'a': ".repeat(n), "}".repeat(n)),
        ),
        (
            "getattr",
            format!("x = {}os{}\n", "getattr(".repeat(n), ", 'a')".repeat(n)),
        ),
    ];
    for (what, code) in &cases {
        let v = check_ok(&policy, code, what, Duration::from_secs(20));
        assert_eq!(v.decision, Decision::Deny, "{what}: {:?}", v.findings);
        assert!(
            has_rule(&v, "too-complex") || has_rule(&v, "syntax-error"),
            "{what}: {:?}",
            v.findings
        );
    }
}

#[test]
fn deeply_nested_blocks_are_handled() {
    let policy = big_policy();
    let mut code = String::new();
    for i in 0..400 {
        code.push_str(&" ".repeat(i));
        code.push_str("if x:\n");
    }
    code.push_str(&" ".repeat(400));
    code.push_str("pass\n");
    let v = check_ok(&policy, &code, "nested ifs", Duration::from_secs(20));
    assert_eq!(v.decision, Decision::Deny);
}

#[test]
fn a_megabyte_of_code_is_checked_or_refused_quickly() {
    let line =
        "total = sum(x * 2 for x in range(10)) + len(str(total if 'total' in dir() else 0))\n";
    let mut code = String::new();
    while code.len() + line.len() < 1024 * 1024 {
        code.push_str(line);
    }
    // default policy: refused on size before parsing
    let v = check_ok(
        &Policy::default(),
        &code,
        "1MB default",
        Duration::from_secs(1),
    );
    assert!(has_rule(&v, "code-too-large"), "{:?}", v.findings);
    // a policy that accepts 1 MiB: fully checked
    let v = check_ok(&big_policy(), &code, "1MB big", Duration::from_secs(30));
    assert_eq!(v.decision, Decision::Allow, "{:?}", v.findings.first());
    // 1 MB with a denied call at the very end is still found
    let mut bad = code.clone();
    bad.truncate(1024 * 1024 - 64);
    bad.truncate(bad.rfind('\n').unwrap() + 1);
    bad.push_str("import os\nos.system('id')\n");
    let v = check_ok(&big_policy(), &bad, "1MB bad", Duration::from_secs(30));
    assert!(has_rule(&v, "process"), "{:?}", v.findings);
    // 1 MB of a single string literal / comment
    let s = format!("x = '{}'\n", "a".repeat(1024 * 1000));
    check_ok(&big_policy(), &s, "1MB string", Duration::from_secs(30));
    let c = format!("#{}\n", "x".repeat(1024 * 1000));
    check_ok(&big_policy(), &c, "1MB comment", Duration::from_secs(30));
}

#[test]
fn empty_and_whitespace_code_is_allowed() {
    for code in [
        "",
        "\n",
        "   \n\t\n",
        "# nothing\n",
        "\u{feff}x = 1\n",
        "x = 1\r\ny = 2\r",
    ] {
        let v = check_ok(&Policy::default(), code, code, Duration::from_secs(1));
        assert_eq!(v.decision, Decision::Allow, "{code:?}: {:?}", v.findings);
    }
}

#[test]
fn syntax_errors_carry_their_position() {
    let v = check_code(&Policy::default(), "x = 1\ny = (2,\nz = 3 +\n");
    let f = v
        .findings
        .iter()
        .find(|f| f.rule == "syntax-error")
        .unwrap();
    assert_eq!(v.decision, Decision::Deny);
    assert!(f.line >= 2, "{f:?}");
    let v = check_code(&Policy::default(), "a = 1\nb = 2 +\n");
    let f = &v.findings[0];
    assert_eq!((f.rule.as_str(), f.line), ("syntax-error", 2), "{f:?}");
    assert_eq!(f.snippet, "b = 2 +");
}
