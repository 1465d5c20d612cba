//! Models as they behave in practice (issue 9, items 12–21): forced tool
//! calls, reasoning-model rejections, cut replies, Azure routes, errors sent
//! with HTTP 200, quota errors, refusals, the explanation's deadline.

use std::time::{Duration, Instant};

use crate::support::llm_standin::{Azure, CANARY_KEY, LlmStandin, Mode, Reply};
use compute_bot::model::{
    ChatRequest, Message, ModelClient, ModelConfig, ModelError, Provider, Secret,
};
use compute_bot::policy::DataLevel;
use compute_bot::prompt::{PromptError, parse_generated, run_python_tool};

fn code_request() -> ChatRequest {
    ChatRequest {
        system: "You write Python.".into(),
        messages: vec![Message::user("Sum 1..10")],
        max_tokens: None,
        tool: Some(run_python_tool()),
    }
}

fn plain_request() -> ChatRequest {
    ChatRequest {
        tool: None,
        ..code_request()
    }
}

fn client(llm: &LlmStandin) -> ModelClient {
    ModelClient::new(llm.config()).expect("client")
}

#[tokio::test]
async fn openai_forced_tool_call_gives_plan_and_code() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::tool_call("add them", "print(sum(range(11)))"));
    let reply = client(&llm).complete(&code_request()).await.unwrap();
    let g = parse_generated(&reply).unwrap();
    assert_eq!(g.plan.as_deref(), Some("add them"));
    assert_eq!(g.code, "print(sum(range(11)))\n");
    let body = llm.requests()[0].json.clone().unwrap();
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "run_python");
    assert_eq!(
        body["tools"][0]["function"]["parameters"]["required"],
        serde_json::json!(["plan", "code"])
    );
    assert_eq!(
        body["tool_choice"],
        serde_json::json!({"type": "function", "function": {"name": "run_python"}})
    );
}

#[tokio::test]
async fn anthropic_forced_tool_use_gives_plan_and_code() {
    let llm = LlmStandin::anthropic().await;
    llm.push(Reply::tool_call("mean", "print(2)"));
    let reply = client(&llm).complete(&code_request()).await.unwrap();
    let g = parse_generated(&reply).unwrap();
    assert_eq!(g.code, "print(2)\n");
    assert_eq!(g.plan.as_deref(), Some("mean"));
    let body = llm.requests()[0].json.clone().unwrap();
    assert_eq!(body["tools"][0]["name"], "run_python");
    assert!(body["tools"][0]["input_schema"].is_object());
    assert_eq!(
        body["tool_choice"],
        serde_json::json!({"type": "tool", "name": "run_python"})
    );
}

#[tokio::test]
async fn endpoint_without_tools_falls_back_to_fenced_blocks_and_remembers() {
    let llm = LlmStandin::openai().await;
    llm.set_mode(Mode {
        no_tools: true,
        ..Mode::default()
    });
    llm.push(Reply::text(
        "Example:\n```python\ndf.head()\n```\nProgram:\n```py\nprint(1)\n```",
    ));
    llm.push(Reply::code("again", "print(2)"));
    let c = client(&llm);
    let reply = c.complete(&code_request()).await.unwrap();
    // The last complete python block runs, not the example snippet.
    assert_eq!(parse_generated(&reply).unwrap().code, "print(1)\n");
    assert!(!c.tools_supported());
    let reply = c.complete(&code_request()).await.unwrap();
    assert_eq!(parse_generated(&reply).unwrap().code, "print(2)\n");
    let reqs = llm.requests();
    // 400 (tools) → 200, then 200 at once: the switch is remembered.
    assert_eq!(
        reqs.len(),
        3,
        "{:?}",
        reqs.iter().map(|r| &r.body).collect::<Vec<_>>()
    );
    assert!(reqs[0].json.as_ref().unwrap().get("tools").is_some());
    assert!(reqs[1].json.as_ref().unwrap().get("tools").is_none());
    assert!(reqs[2].json.as_ref().unwrap().get("tools").is_none());
}

#[tokio::test]
async fn reasoning_model_parameters_are_learned_once_per_client() {
    // A deployment whose name does not reveal a reasoning model.
    let llm = LlmStandin::openai().await;
    llm.set_mode(Mode {
        reasoning: true,
        ..Mode::default()
    });
    llm.push_all([Reply::text("one"), Reply::text("two")]);
    let c = client(&llm);
    assert_eq!(c.complete(&plain_request()).await.unwrap().text, "one");
    let second = c.complete(&plain_request()).await.unwrap();
    assert_eq!(second.text, "two");
    assert_eq!(second.requests, 1);
    let reqs = llm.requests();
    // Before: 400 → 400 → 200 on every call (6 requests for 2 calls). Now 4.
    assert_eq!(reqs.len(), 4);
    let last = reqs[3].json.clone().unwrap();
    assert!(last.get("max_tokens").is_none());
    assert!(last.get("temperature").is_none());
    assert!(last.get("max_completion_tokens").is_some());
    // A clone shares what was learned.
    llm.push(Reply::text("three"));
    c.clone().complete(&plain_request()).await.unwrap();
    assert_eq!(llm.requests().len(), 5);
}

#[tokio::test]
async fn known_reasoning_model_names_start_with_the_right_parameters() {
    let llm = LlmStandin::openai().await;
    llm.set_mode(Mode {
        reasoning: true,
        ..Mode::default()
    });
    llm.push_all([Reply::text("one"), Reply::text("two")]);
    let mut cfg = llm.config();
    cfg = ModelConfig::new(cfg.provider, cfg.base_url, "o3-mini", cfg.api_key);
    assert_eq!(
        cfg.max_tokens,
        compute_bot::model::DEFAULT_REASONING_MAX_TOKENS
    );
    let c = ModelClient::new(cfg).unwrap();
    c.complete(&plain_request()).await.unwrap();
    c.complete(&plain_request()).await.unwrap();
    assert_eq!(llm.requests().len(), 2, "one request per call");
}

#[tokio::test]
async fn empty_reply_cut_by_reasoning_is_resent_with_a_larger_budget_and_usage_adds_up() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::cut("", 4096));
    llm.push(Reply::tool_call("p", "print(1)"));
    let c = client(&llm);
    let reply = c.complete(&code_request()).await.unwrap();
    assert_eq!(parse_generated(&reply).unwrap().code, "print(1)\n");
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].json.as_ref().unwrap()["max_tokens"], 4096);
    assert_eq!(reqs[1].json.as_ref().unwrap()["max_tokens"], 8192);
    // Usage as the responses said: the cut reply's 4096 tokens count.
    assert_eq!(reply.usage.output_tokens, Some(4096 + 20));
    assert_eq!(reply.usage.input_tokens, Some(200));
    assert_eq!(reply.reasoning_tokens, 4096);
    assert_eq!(reply.max_tokens, 8192);
}

#[tokio::test]
async fn a_cut_reply_is_a_repair_and_the_next_call_gets_a_larger_budget() {
    let llm = LlmStandin::openai().await;
    llm.set_mode(Mode {
        no_tools: true,
        ..Mode::default()
    });
    llm.push(Reply::cut("Plan: x\n```python\nimport json\nprint(", 0));
    llm.push(Reply::code("x", "print(1)"));
    let c = client(&llm);
    let reply = c.complete(&code_request()).await.unwrap();
    let err = parse_generated(&reply).unwrap_err();
    assert_eq!(err, PromptError::Cut { budget: 4096 });
    assert!(err.to_string().contains("larger budget"), "{err}");
    c.complete(&code_request()).await.unwrap();
    let last = llm.requests().last().unwrap().json.clone().unwrap();
    assert_eq!(last["max_tokens"], 8192);
}

#[tokio::test]
async fn refusals_and_empty_replies_are_repairable_with_the_providers_words() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::refusal("I can't help with that."));
    llm.push(Reply::text(""));
    llm.push(Reply::named_tool_call("python", "p", "print(3)"));
    let c = client(&llm);
    let e = parse_generated(&c.complete(&code_request()).await.unwrap()).unwrap_err();
    assert!(
        matches!(&e, PromptError::Refused(m) if m.contains("can't help")),
        "{e}"
    );
    let e = parse_generated(&c.complete(&code_request()).await.unwrap()).unwrap_err();
    assert_eq!(e, PromptError::Empty);
    // A wrongly named tool with a `code` argument still gives the code.
    let g = parse_generated(&c.complete(&code_request()).await.unwrap()).unwrap();
    assert_eq!(g.code, "print(3)\n");
}

#[tokio::test]
async fn openrouter_error_in_a_200_body_is_retried_or_stopped_by_its_code() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::error_in_200(502, "Provider returned error"));
    llm.push(Reply::text("ok"));
    let c = client(&llm);
    assert_eq!(c.complete(&plain_request()).await.unwrap().text, "ok");
    assert_eq!(llm.requests().len(), 2);

    llm.push(Reply::error_in_200(
        400,
        "This model's maximum context length is 8192 tokens",
    ));
    let e = c.complete(&plain_request()).await.unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(e, ModelError::Rejected { status: 400, .. }),
        "{e:?}"
    );
    assert!(
        msg.contains("maximum context length") && msg.contains("upstream said no"),
        "{msg}"
    );
    assert!(
        msg.contains("prompt is too long") && !msg.contains("COMPUTE_BOT_TEMPERATURE"),
        "{msg}"
    );

    llm.push(Reply::error_in_200(402, "Insufficient credits"));
    let e = c.complete(&plain_request()).await.unwrap_err();
    assert!(matches!(e, ModelError::Quota { status: 402, .. }), "{e:?}");
    assert_eq!(llm.requests().len(), 4, "quota is not retried");
}

#[tokio::test]
async fn insufficient_quota_is_never_retried_and_is_a_configuration_error() {
    let llm = LlmStandin::openai().await;
    llm.push_all([Reply::insufficient_quota(), Reply::text("never")]);
    let e = client(&llm).complete(&plain_request()).await.unwrap_err();
    assert!(matches!(e, ModelError::Quota { status: 429, .. }), "{e:?}");
    assert!(e.is_configuration() && !e.is_transient());
    let msg = e.to_string();
    assert!(
        msg.contains("not temporary") && msg.contains("billing"),
        "{msg}"
    );
    assert_eq!(llm.requests().len(), 1);
}

#[tokio::test]
async fn a_retry_after_beyond_the_budget_says_what_the_server_asked() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::rate_limited(300));
    let start = Instant::now();
    let e = client(&llm).complete(&plain_request()).await.unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(2));
    let msg = e.to_string();
    assert!(msg.contains("asked to retry after 300s"), "{msg}");
    assert!(msg.contains("COMPUTE_BOT_MODEL_RETRY_TIME"), "{msg}");
}

#[tokio::test]
async fn auth_and_not_found_are_configuration_errors() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::unauthorized());
    let e = client(&llm).complete(&plain_request()).await.unwrap_err();
    assert!(e.is_configuration(), "{e:?}");
    llm.push(Reply::model_not_found());
    let e = client(&llm).complete(&plain_request()).await.unwrap_err();
    assert!(e.is_configuration(), "{e:?}");
    llm.push(Reply::server_error());
    llm.push(Reply::server_error());
    llm.push(Reply::server_error());
    llm.push(Reply::server_error());
    let mut cfg = llm.config();
    cfg.max_retries = 0;
    let e = ModelClient::new(cfg)
        .unwrap()
        .complete(&plain_request())
        .await
        .unwrap_err();
    assert!(!e.is_configuration(), "{e:?}");
}

#[tokio::test]
async fn azure_deployment_form_sends_api_version_and_api_key_header() {
    let llm = LlmStandin::openai().await;
    llm.set_mode(Mode {
        azure: Some(Azure::Deployment("gpt4o-prod".into())),
        ..Mode::default()
    });
    llm.push_all([Reply::text("a"), Reply::text("b")]);
    let base = format!(
        "{}/openai/deployments/gpt4o-prod?api-version=2024-10-21",
        llm.root()
    );
    let cfg = ModelConfig::new(
        Provider::OpenAi,
        base,
        "gpt-4o",
        Some(Secret::new(CANARY_KEY)),
    );
    let c = ModelClient::new(cfg).unwrap();
    assert_eq!(c.complete(&plain_request()).await.unwrap().text, "a");
    let r = &llm.requests()[0];
    assert_eq!(r.path, "/openai/deployments/gpt4o-prod/chat/completions");
    assert_eq!(r.query.as_deref(), Some("api-version=2024-10-21"));
    assert_eq!(r.header("api-key"), Some(CANARY_KEY));
    assert_eq!(r.header("authorization"), None);

    // Without api-version in the base URL a GA version is sent.
    let base = format!("{}/openai/deployments/gpt4o-prod/", llm.root());
    let cfg = ModelConfig::new(
        Provider::OpenAi,
        base,
        "gpt-4o",
        Some(Secret::new(CANARY_KEY)),
    );
    ModelClient::new(cfg)
        .unwrap()
        .complete(&plain_request())
        .await
        .unwrap();
    assert_eq!(
        llm.requests()[1].query.as_deref(),
        Some(
            format!(
                "api-version={}",
                compute_bot::model::AZURE_DEFAULT_API_VERSION
            )
            .as_str()
        )
    );
}

#[tokio::test]
async fn azure_v1_form_needs_no_api_version() {
    let llm = LlmStandin::openai().await;
    llm.set_mode(Mode {
        azure: Some(Azure::V1),
        ..Mode::default()
    });
    llm.push(Reply::text("v1"));
    let base = format!("{}/openai/v1/", llm.root());
    let cfg = ModelConfig::new(
        Provider::OpenAi,
        base,
        "gpt-4o",
        Some(Secret::new(CANARY_KEY)),
    );
    let c = ModelClient::new(cfg).unwrap();
    assert_eq!(c.complete(&plain_request()).await.unwrap().text, "v1");
    let r = &llm.requests()[0];
    assert_eq!(r.path, "/openai/v1/chat/completions");
    assert_eq!(r.query, None);
    assert_eq!(r.header("api-key"), Some(CANARY_KEY));
    assert!(!r.everything_but_auth().contains(CANARY_KEY));
}

#[tokio::test]
async fn the_explanation_gives_up_at_its_deadline() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::text("late").with_delay(Duration::from_secs(5)));
    let start = Instant::now();
    let r = compute_bot::explain::explain_within(
        &client(&llm),
        "mean",
        &serde_json::json!({"mean": 1}),
        DataLevel::Preview,
        Duration::from_millis(300),
    )
    .await;
    assert!(r.is_err());
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    // At `none` nothing is sent at all.
    let r = compute_bot::explain::explain(
        &client(&llm),
        "mean",
        &serde_json::json!({"mean": 1}),
        DataLevel::None,
    )
    .await;
    assert!(r.is_err());
    assert_eq!(llm.requests().len(), 1);
}

// ---------------------------------------------------------------------------
// Through the whole loop (real sandbox)
// ---------------------------------------------------------------------------

async fn run_loop(
    policy_yaml: &str,
    llm: &LlmStandin,
    goal: &str,
    csv: &[u8],
) -> compute_bot::report::Report {
    // One program per request: these tests are about the one-program loop.
    let yaml = format!("{policy_yaml}\nsession: {{max_steps: 1}}\n");
    let policy = compute_bot::policy::Policy::from_yaml_str(&yaml, "inline").unwrap();
    let sandbox = compute_bot::sandbox::docker::Docker::connect()
        .await
        .expect("the Docker engine must be running");
    let model = client(llm);
    let agent = compute_bot::agent::Agent {
        policy: &policy,
        sandbox: &sandbox,
        model: Some(&model),
        runtime: compute_bot::sandbox::Runtime::default(),
        progress: &|_| {},
    };
    agent
        .answer(compute_bot::agent::Request {
            goal: Some(goal.into()),
            inputs: vec![compute_bot::sandbox::InputFile::new(
                "sales.csv",
                csv.to_vec(),
            )],
            ..Default::default()
        })
        .await
        .expect("answer")
}

const SUM: &str = "import csv, json\nrows = list(csv.DictReader(open('/data/sales.csv')))\nprint(json.dumps({'total': sum(float(r['amount']) for r in rows)}))\n";

#[tokio::test]
async fn the_loop_runs_the_tool_calls_code_states_versions_and_repairs_a_cut_reply() {
    let llm = LlmStandin::openai().await;
    llm.push(Reply::cut("", 4096)); // reasoning used the budget: resent larger at once
    llm.push(Reply::cut("Plan: sum\n```python\nimport csv", 0)); // cut with text: a repair
    llm.push(Reply::tool_call("sum the amounts", SUM));
    llm.push(Reply::text("The total is 19.5."));
    let r = run_loop(
        "version: 1\nattempts: 3\n",
        &llm,
        "total amount",
        b"name,amount\nAlice,12.5\nBob,7\n",
    )
    .await;
    assert_eq!(r.result, Some(serde_json::json!({"total": 19.5})), "{r:#?}");
    assert_eq!(r.attempts.len(), 2, "{r:#?}");
    assert!(
        r.attempts[0]
            .failure
            .as_deref()
            .unwrap()
            .contains("cut off"),
        "{r:#?}"
    );
    assert_eq!(r.plan.as_deref(), Some("sum the amounts"));
    let reqs = llm.requests();
    let budget = |i: usize| reqs[i].json.as_ref().unwrap()["max_tokens"].clone();
    assert_eq!(
        (budget(0), budget(1), budget(2)),
        (4096.into(), 8192.into(), 16384.into())
    );
    let system = reqs[0].system_prompt().unwrap();
    assert!(
        system.contains("Installed in the sandbox:") && system.contains("pandas "),
        "{system}"
    );
    // The explanation request knows the plan and the method.
    let explained = &reqs[3].messages()[0].1;
    assert!(
        explained.contains("<plan>\nsum the amounts\n</plan>")
            && explained.contains("<method>\nimport csv, json\n</method>")
            && explained.contains("<result>\n{\"total\":19.5}\n</result>"),
        "{explained}"
    );
    // Usage as the responses said, the cut replies included.
    assert!(r.usage.output_tokens >= Some(4096), "{:?}", r.usage);
}

#[tokio::test]
async fn a_cut_reply_is_never_run_it_gets_one_shorter_code_repair_then_a_clear_stop() {
    for provider in ["openai", "anthropic"] {
        let llm = if provider == "openai" {
            LlmStandin::openai().await
        } else {
            LlmStandin::anthropic().await
        };
        // A whole tool call and a closed block, both in replies cut at the budget.
        llm.push(Reply::cut_tool_call("sum", SUM));
        llm.push(Reply::cut(
            &format!("Plan: sum\n```python\n{SUM}```\nThat is the"),
            0,
        ));
        let r = run_loop(
            "version: 1\nattempts: 3\n",
            &llm,
            "total amount",
            b"name,amount\nA,1\n",
        )
        .await;
        assert_eq!(r.result, None, "{provider}: {r:#?}");
        assert!(
            r.attempts.iter().all(|a| a.outcome.is_none()),
            "{provider}: a cut reply ran: {r:#?}"
        );
        assert_eq!(r.attempts.len(), 2, "{provider}: {r:#?}");
        let stop = r.stop_reason.as_deref().unwrap_or_default();
        assert!(
            stop.contains("cut at its completion budget again")
                && stop.contains("COMPUTE_BOT_MAX_TOKENS"),
            "{provider}: {stop}"
        );
        let reqs = llm.requests();
        assert_eq!(reqs.len(), 2, "{provider}: no third request after the stop");
        // The repair asks for shorter code, and the prompt stated the budget.
        let repair = reqs[1].messages().last().unwrap().1.clone();
        assert!(
            repair.contains("shorter program") && repair.contains("not run"),
            "{repair}"
        );
        let system = reqs[0].system_prompt().unwrap();
        assert!(
            system.contains("Your reply may use at most 4096 tokens"),
            "{system}"
        );
        assert!(
            reqs[1]
                .system_prompt()
                .unwrap()
                .contains("at most 8192 tokens"),
            "the raised budget is stated"
        );
    }
}

#[tokio::test]
async fn model_data_schema_keeps_values_out_of_every_request() {
    let llm = LlmStandin::openai().await;
    // A program that prints the raw rows to stderr and fails, then a fix.
    llm.push(Reply::tool_call(
        "show",
        "import sys\nprint(open('/data/sales.csv').read(), file=sys.stderr)\nraise ValueError('bad')\n",
    ));
    llm.push(Reply::tool_call("sum", SUM));
    llm.push(Reply::text("Done."));
    let r = run_loop(
        "version: 1\nattempts: 2\nmodel:\n  data: schema\n",
        &llm,
        "total amount",
        b"name,amount\nSecretCustomerZed,12.5\nBob,7\n",
    )
    .await;
    assert_eq!(r.result, Some(serde_json::json!({"total": 19.5})), "{r:#?}");
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 3);
    for req in &reqs {
        assert!(!req.body.contains("SecretCustomerZed"), "{}", req.body);
        assert!(
            !req.body.contains("19.5"),
            "a value reached the model: {}",
            req.body
        );
    }
    assert!(reqs[0].body.contains("amount (number)"), "{}", reqs[0].body);
    assert!(reqs[1].body.contains("ValueError"), "{}", reqs[1].body);
}
