//! The fallback model (issue 19, part 4) and usage a provider leaves out
//! (part 3): against two loopback stand-ins speaking their real wire
//! formats. The first model fails in each documented way; the fallback
//! answers only when the first is unavailable after its retries, each key
//! goes only to its own host, and the reply, the report, the record and the
//! comment name the model that wrote the code.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::support::llm_standin::{CANARY_KEY, LlmStandin, Recorded, Reply};
use compute_bot::model::{
    ChatRequest, Message, ModelClient, ModelConfig, ModelError, ModelId, ModelOverrides, Provider,
    Secret, TokenUsage,
};
use compute_bot::render::{RenderContext, markdown};
use compute_bot::report::ReportStatus;

/// The fallback stand-in's key: never sent to the first model's host.
const FALLBACK_KEY: &str = "sk-ant-fallback-canary-0d9e8f7a6b5c";
/// The fallback's model name.
const FALLBACK_MODEL: &str = "claude-fallback-1";

fn request() -> ChatRequest {
    ChatRequest {
        system: "You write Python.".into(),
        messages: vec![Message::user("Sum 1..10")],
        max_tokens: None,
        tool: None,
    }
}

/// The first model (OpenAI format, [`CANARY_KEY`]) and an Anthropic
/// fallback (its own key), with few retries so failing runs end quickly.
struct Pair {
    first: LlmStandin,
    fallback: LlmStandin,
}

impl Pair {
    async fn new() -> Pair {
        Pair {
            first: LlmStandin::openai().await,
            fallback: LlmStandin::start(Provider::Anthropic, Some(FALLBACK_KEY)).await,
        }
    }

    fn fallback_config(&self) -> ModelConfig {
        let mut f = ModelConfig::new(
            Provider::Anthropic,
            self.fallback.base_url(),
            FALLBACK_MODEL,
            Some(Secret::new(FALLBACK_KEY)),
        );
        f.timeout = Duration::from_secs(2);
        f.max_retries = 1;
        f
    }

    fn config(&self) -> ModelConfig {
        let mut cfg = self.first.config();
        cfg.max_retries = 2;
        cfg.fallback = Some(Box::new(self.fallback_config()));
        cfg
    }

    fn client(&self) -> ModelClient {
        ModelClient::new(self.config()).expect("client")
    }
}

fn fallback_id() -> ModelId {
    ModelId {
        provider: "anthropic".into(),
        model: FALLBACK_MODEL.into(),
        fallback: true,
    }
}

/// Each host saw only its own key, in its own header, and nowhere else.
fn assert_keys_stay_home(first: &[Recorded], fallback: &[Recorded]) {
    for r in first {
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {CANARY_KEY}").as_str())
        );
        assert_eq!(r.header("x-api-key"), None);
        assert!(!r.everything_but_auth().contains(CANARY_KEY));
        assert!(
            !format!("{:?}{}", r.headers, r.body).contains(FALLBACK_KEY),
            "the fallback's key reached the first model's host"
        );
    }
    for r in fallback {
        assert_eq!(r.header("x-api-key"), Some(FALLBACK_KEY));
        assert_eq!(r.header("authorization"), None);
        assert!(!r.everything_but_auth().contains(FALLBACK_KEY));
        assert!(
            !format!("{:?}{}", r.headers, r.body).contains(CANARY_KEY),
            "the first model's key reached the fallback's host"
        );
    }
}

#[tokio::test]
async fn a_503_on_every_retry_hands_the_request_to_the_fallback_which_is_named() {
    let p = Pair::new().await;
    p.first.push_all((0..3).map(|_| Reply::overloaded()));
    p.fallback
        .push_all([Reply::text("from the fallback"), Reply::text("again")]);
    let c = p.client();
    let reply = c.complete(&request()).await.unwrap();
    assert_eq!(reply.text, "from the fallback");
    assert_eq!(reply.answered_by, fallback_id());
    assert_eq!(p.first.requests().len(), 3, "the first model's retries ran");
    assert_eq!(p.fallback.requests().len(), 1);
    // The fallback got the same request, in its own wire format.
    let f = &p.fallback.requests()[0];
    assert_eq!(f.path, "/v1/messages");
    assert_eq!(f.model().as_deref(), Some(FALLBACK_MODEL));
    assert_eq!(f.system_prompt().as_deref(), Some("You write Python."));
    assert_eq!(
        f.messages(),
        vec![("user".to_string(), "Sum 1..10".to_string())]
    );
    // Later calls (a repair, the explanation) go to the fallback at once,
    // also through a clone.
    let again = c.clone().complete(&request()).await.unwrap();
    assert_eq!(again.text, "again");
    assert_eq!(p.first.requests().len(), 3, "the first is not asked again");
    assert_keys_stay_home(&p.first.requests(), &p.fallback.requests());
}

#[tokio::test]
async fn a_429_with_a_long_retry_after_goes_to_the_fallback_at_once() {
    let p = Pair::new().await;
    p.first.push(Reply::rate_limited(300));
    p.fallback.push(Reply::text("no waiting"));
    let start = Instant::now();
    let reply = p.client().complete(&request()).await.unwrap();
    assert_eq!(reply.text, "no waiting");
    assert_eq!(reply.answered_by, fallback_id());
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(p.first.requests().len(), 1);
    assert_keys_stay_home(&p.first.requests(), &p.fallback.requests());
}

#[tokio::test]
async fn a_refused_connection_and_a_timeout_go_to_the_fallback() {
    // Nothing listens on a port just released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let p = Pair::new().await;
    let mut cfg = p.config();
    cfg.base_url = format!("http://127.0.0.1:{port}/v1");
    cfg.max_retries = 1;
    p.fallback.push(Reply::text("reachable"));
    let reply = ModelClient::new(cfg)
        .unwrap()
        .complete(&request())
        .await
        .unwrap();
    assert_eq!(reply.text, "reachable");
    assert_eq!(reply.answered_by, fallback_id());

    // A first model slower than its timeout on every try.
    let p = Pair::new().await;
    p.first
        .push_all((0..2).map(|_| Reply::text("late").with_delay(Duration::from_millis(1500))));
    p.fallback.push(Reply::text("on time"));
    let mut cfg = p.config();
    cfg.timeout = Duration::from_millis(300);
    cfg.max_retries = 1;
    let reply = ModelClient::new(cfg)
        .unwrap()
        .complete(&request())
        .await
        .unwrap();
    assert_eq!(reply.text, "on time");
    assert_eq!(reply.answered_by, fallback_id());
    assert_keys_stay_home(&p.first.requests(), &p.fallback.requests());
}

#[tokio::test]
async fn refusals_a_second_model_would_meet_alike_never_reach_the_fallback() {
    let cases: [(Reply, &str); 6] = [
        (Reply::unauthorized(), "401"),
        (Reply::forbidden(), "403"),
        (Reply::model_not_found(), "404"),
        (
            Reply::raw(
                400,
                r#"{"error":{"message":"messages: bad","type":"invalid_request_error","param":null,"code":null}}"#,
                "application/json",
            ),
            "400",
        ),
        (Reply::insufficient_quota(), "quota"),
        (Reply::spend_limit_reached(), "spend limit"),
    ];
    for (reply, what) in cases {
        let p = Pair::new().await;
        p.first.push(reply);
        p.fallback.push(Reply::text("must not be asked"));
        let e = p.client().complete(&request()).await.unwrap_err();
        assert!(!e.calls_for_fallback(), "{what}: {e:?}");
        assert!(!matches!(e, ModelError::FallbackFailed(_)), "{what}: {e:?}");
        assert_eq!(p.first.requests().len(), 1, "{what}: not retried");
        assert_eq!(p.fallback.requests().len(), 0, "{what}: no fallback");
        if what != "400" {
            assert!(e.is_configuration(), "{what}: {e:?}");
        }
        // The first model's setting is named, never the fallback's.
        assert!(!e.to_string().contains("FALLBACK"), "{what}: {e}");
    }
    // The spend cap is billing, not a rate limit: never waited on.
    let p = Pair::new().await;
    p.fallback.push(Reply::spend_limit_reached());
    let e = ModelClient::new(p.fallback_config())
        .unwrap()
        .complete(&request())
        .await
        .unwrap_err();
    assert!(matches!(e, ModelError::Quota { status: 429, .. }), "{e:?}");
}

#[tokio::test]
async fn when_the_fallback_fails_too_the_error_names_both() {
    // Both unavailable: a failed run, naming both models.
    let p = Pair::new().await;
    p.first.push_all((0..3).map(|_| Reply::overloaded()));
    p.fallback.push_all((0..2).map(|_| Reply::overloaded()));
    let e = p.client().complete(&request()).await.unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, ModelError::FallbackFailed(_)), "{e:?}");
    assert!(
        msg.contains("standin-model-1 (openai)") && msg.contains("claude-fallback-1 (anthropic"),
        "{msg}"
    );
    assert!(
        msg.contains("HTTP 503") && msg.contains("HTTP 529"),
        "{msg}"
    );
    assert!(e.is_transient() && !e.is_configuration() && !e.calls_for_fallback());
    assert_eq!(p.fallback.requests().len(), 2, "the fallback's own retries");

    // The fallback's key refused: a configuration error naming its setting.
    let p = Pair::new().await;
    p.first.push_all((0..3).map(|_| Reply::server_error()));
    p.fallback.push(Reply::unauthorized());
    let e = p.client().complete(&request()).await.unwrap_err();
    assert!(e.is_configuration(), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("COMPUTE_BOT_FALLBACK_API_KEY"), "{msg}");
    assert!(!msg.contains(FALLBACK_KEY) && !msg.contains(CANARY_KEY));
}

#[tokio::test]
async fn without_a_fallback_nothing_changes() {
    let llm = LlmStandin::openai().await;
    llm.push_all((0..4).map(|_| Reply::overloaded()));
    let e = ModelClient::new(llm.config())
        .unwrap()
        .complete(&request())
        .await
        .unwrap_err();
    assert!(
        matches!(e, ModelError::Unavailable { status: 503, .. }),
        "{e:?}"
    );
    assert!(e.calls_for_fallback() && e.is_transient());
    llm.push(Reply::text("hi"));
    let r = ModelClient::new(llm.config())
        .unwrap()
        .complete(&request())
        .await
        .unwrap();
    assert_eq!(
        r.answered_by,
        ModelId {
            provider: "openai".into(),
            model: "standin-model-1".into(),
            fallback: false,
        }
    );
}

/// The environment as the CLI reads it: each model's key variable.
fn env(pairs: &[(&str, String)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

#[tokio::test]
async fn the_fallback_variables_configure_a_second_host_with_its_own_key() {
    let p = Pair::new().await;
    let vars = env(&[
        ("COMPUTE_BOT_PROVIDER", "openai".into()),
        ("COMPUTE_BOT_BASE_URL", p.first.base_url()),
        ("COMPUTE_BOT_MODEL", "standin-model-1".into()),
        ("COMPUTE_BOT_API_KEY", CANARY_KEY.into()),
        ("COMPUTE_BOT_MODEL_RETRIES", "1".into()),
        ("COMPUTE_BOT_FALLBACK_PROVIDER", "anthropic".into()),
        ("COMPUTE_BOT_FALLBACK_BASE_URL", p.fallback.base_url()),
        ("COMPUTE_BOT_FALLBACK_MODEL", FALLBACK_MODEL.into()),
        ("COMPUTE_BOT_FALLBACK_API_KEY", FALLBACK_KEY.into()),
        // The provider's own key is for its public host only.
        ("ANTHROPIC_API_KEY", "sk-ant-public-host-only-000000".into()),
    ]);
    let cfg = ModelConfig::from_env_with(&ModelOverrides::default(), &vars)
        .unwrap()
        .unwrap();
    let f = cfg.fallback.as_deref().expect("a fallback");
    assert_eq!(f.provider, Provider::Anthropic);
    assert_eq!(f.api_key, Some(Secret::new(FALLBACK_KEY)));
    assert_eq!(f.max_retries, 1, "the retry settings are shared");
    assert!(f.key_setting().starts_with("COMPUTE_BOT_FALLBACK_API_KEY"));
    p.first.push_all((0..2).map(|_| Reply::server_error()));
    p.fallback
        .push(Reply::text("configured by the environment"));
    let reply = ModelClient::new(cfg)
        .unwrap()
        .complete(&request())
        .await
        .unwrap();
    assert_eq!(reply.answered_by, fallback_id());
    assert_keys_stay_home(&p.first.requests(), &p.fallback.requests());
    for r in p.first.requests().iter().chain(&p.fallback.requests()) {
        assert!(!format!("{:?}", r.headers).contains("sk-ant-public-host-only"));
    }
}

#[tokio::test]
async fn usage_a_provider_leaves_out_is_unknown_not_zero() {
    for llm in [LlmStandin::openai().await, LlmStandin::anthropic().await] {
        llm.push(Reply::text("no usage").without_usage());
        llm.push(Reply::text("with usage").with_usage(12, 3));
        let c = ModelClient::new(llm.config()).unwrap();
        let r = c.complete(&request()).await.unwrap();
        assert_eq!(r.text, "no usage");
        assert_eq!(r.usage, TokenUsage::UNKNOWN, "{}", llm.provider());
        let mut total = r.usage;
        let r = c.complete(&request()).await.unwrap();
        assert_eq!(r.usage, TokenUsage::known(12, 3));
        total.add(r.usage);
        assert_eq!(total, TokenUsage::UNKNOWN, "a sum with an unknown part");
        assert_eq!(
            serde_json::to_value(total).unwrap(),
            serde_json::json!({"input_tokens": null, "output_tokens": null})
        );
    }
}

// ---------------------------------------------------------------------------
// Through the whole loop (real sandbox)
// ---------------------------------------------------------------------------

const SUM: &str = "import json\nprint(json.dumps({'total': sum(range(11))}))\n";

async fn answer(
    model: &ModelClient,
) -> Result<compute_bot::report::Report, compute_bot::agent::AgentError> {
    let policy = compute_bot::policy::Policy::from_yaml_str(
        "version: 1\nattempts: 2\nsession: {max_steps: 1}\n",
        "inline",
    )
    .unwrap();
    let sandbox = compute_bot::sandbox::docker::Docker::connect()
        .await
        .expect("the Docker engine must be running");
    compute_bot::agent::Agent {
        policy: &policy,
        sandbox: &sandbox,
        model: Some(model),
        progress: &|_| {},
        runtime: compute_bot::sandbox::Runtime::default(),
    }
    .answer(compute_bot::agent::Request {
        goal: Some("sum of 0..10".into()),
        ..Default::default()
    })
    .await
}

#[tokio::test]
async fn the_report_the_record_and_the_comment_name_the_fallback_that_wrote_the_code() {
    let p = Pair::new().await;
    p.first.push_all((0..3).map(|_| Reply::overloaded()));
    p.fallback
        .push(Reply::code("Add them.", SUM).without_usage());
    p.fallback.push(Reply::text("The total is 55."));
    let r = answer(&p.client()).await.expect("answer");
    assert_eq!(r.status, ReportStatus::Ok, "{r:#?}");
    assert_eq!(r.result, Some(serde_json::json!({"total": 55})));
    assert_eq!(r.attempts[0].model, Some(fallback_id()));
    assert_eq!(r.code_model(), Some(&fallback_id()));
    assert_eq!(
        r.record.as_ref().and_then(|rec| rec.model.clone()),
        Some(fallback_id())
    );
    assert_eq!(r.explanation.as_deref(), Some("The total is 55."));
    assert_eq!(
        p.first.requests().len(),
        3,
        "the explanation went to the fallback"
    );
    // The generation's usage was not reported: unknown, in the attempt and the total.
    assert_eq!(r.attempts[0].usage, TokenUsage::UNKNOWN);
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["usage"]["input_tokens"], serde_json::Value::Null);
    assert_eq!(
        json["attempts"][0]["model"],
        serde_json::json!({"provider": "anthropic", "model": FALLBACK_MODEL, "fallback": true})
    );
    let md = markdown(&r, &RenderContext::default());
    assert!(
        md.contains("code by the fallback model `claude-fallback-1` (anthropic)"),
        "{md}"
    );
    assert!(
        !md.contains(" tokens in"),
        "unknown usage is not shown as a number"
    );
    assert_keys_stay_home(&p.first.requests(), &p.fallback.requests());
}

#[tokio::test]
async fn a_run_whose_models_both_fail_stops_with_a_reason_naming_both() {
    let p = Pair::new().await;
    p.first.push_all((0..3).map(|_| Reply::overloaded()));
    p.fallback.push_all((0..2).map(|_| Reply::server_error()));
    let r = answer(&p.client())
        .await
        .expect("a failed run, not an error");
    assert_eq!(r.status, ReportStatus::Failed, "{r:#?}");
    let reason = r.stop_reason.as_deref().unwrap();
    assert!(
        reason.contains("standin-model-1 (openai)")
            && reason.contains("claude-fallback-1 (anthropic, fallback)"),
        "{reason}"
    );
    assert_eq!(r.attempts.len(), 1);
    assert_eq!(r.attempts[0].model, None, "no code was written");
}
