//! Model configuration from flags and environment (a map, never the process env).

use std::collections::BTreeMap;
use std::time::Duration;

use compute_bot::model::{ModelChoice, ModelConfig, ModelError, ModelOverrides, Provider, Secret};

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn load(pairs: &[(&str, &str)]) -> Result<Option<ModelConfig>, ModelError> {
    ModelConfig::from_env_with(&ModelOverrides::default(), &env(pairs))
}

#[test]
fn nothing_configured_is_none_even_with_an_ambient_provider_key() {
    assert_eq!(load(&[]).unwrap(), None);
    assert_eq!(
        load(&[("OPENAI_API_KEY", "sk-ambient-123456")]).unwrap(),
        None
    );
    assert_eq!(load(&[("COMPUTE_BOT_MODEL", "  ")]).unwrap(), None);
}

#[test]
fn model_alone_defaults_to_openai_with_its_key_variable() {
    let cfg = load(&[
        ("COMPUTE_BOT_MODEL", "gpt-4o-mini"),
        ("OPENAI_API_KEY", "sk-openai-1"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(cfg.provider, Provider::OpenAi);
    assert_eq!(cfg.base_url, "https://api.openai.com/v1");
    assert_eq!(cfg.model, "gpt-4o-mini");
    assert_eq!(cfg.api_key, Some(Secret::new("sk-openai-1")));
    assert_eq!(cfg.timeout, Duration::from_secs(60));
    assert_eq!(cfg.max_tokens, 4096);
    assert_eq!(cfg.temperature, 0.0);
    assert_eq!(cfg.max_retries, 4);
    assert_eq!(cfg.max_retry_time, Duration::from_secs(120));
}

#[test]
fn anthropic_uses_its_default_url_and_key_variable() {
    let cfg = load(&[
        ("COMPUTE_BOT_PROVIDER", "Anthropic"),
        ("COMPUTE_BOT_MODEL", "claude-sonnet-4-20250514"),
        ("OPENAI_API_KEY", "sk-openai-1"),
        ("ANTHROPIC_API_KEY", "sk-ant-2"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(cfg.provider, Provider::Anthropic);
    assert_eq!(cfg.base_url, "https://api.anthropic.com");
    assert_eq!(cfg.api_key, Some(Secret::new("sk-ant-2")));
    // Inferred from the only provider key present.
    let cfg = load(&[
        ("COMPUTE_BOT_MODEL", "claude-x"),
        ("ANTHROPIC_API_KEY", "k"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(cfg.provider, Provider::Anthropic);
}

#[test]
fn compute_bot_key_wins_and_flags_win_over_env() {
    let e = env(&[
        ("COMPUTE_BOT_PROVIDER", "openai"),
        ("COMPUTE_BOT_BASE_URL", "http://localhost:11434/v1/"),
        ("COMPUTE_BOT_MODEL", "llama3"),
        ("COMPUTE_BOT_API_KEY", "bot-key"),
        ("OPENAI_API_KEY", "sk-openai-1"),
        ("COMPUTE_BOT_MODEL_TIMEOUT", "90s"),
        ("COMPUTE_BOT_MAX_TOKENS", "1000"),
        ("COMPUTE_BOT_TEMPERATURE", "0.2"),
    ]);
    let cfg = ModelConfig::from_env_with(&ModelOverrides::default(), &e)
        .unwrap()
        .unwrap();
    assert_eq!(cfg.base_url, "http://localhost:11434/v1");
    assert_eq!(cfg.api_key, Some(Secret::new("bot-key")));
    assert_eq!(cfg.timeout, Duration::from_secs(90));
    assert_eq!(cfg.max_tokens, 1000);
    assert_eq!(cfg.temperature, 0.2);

    let flags = ModelOverrides {
        first: ModelChoice {
            provider: Some(Provider::Anthropic),
            base_url: Some("https://proxy.example/anthropic/v1".into()),
            model: Some("claude-y".into()),
            api_key: Some(Secret::new("flag-key")),
        },
        max_tokens: Some(10),
        ..ModelOverrides::default()
    };
    let cfg = ModelConfig::from_env_with(&flags, &e).unwrap().unwrap();
    assert_eq!(cfg.provider, Provider::Anthropic);
    // The client appends /v1/messages, so a trailing /v1 is dropped.
    assert_eq!(cfg.base_url, "https://proxy.example/anthropic");
    assert_eq!(cfg.model, "claude-y");
    assert_eq!(cfg.api_key, Some(Secret::new("flag-key")));
    assert_eq!(cfg.max_tokens, 10);
}

#[test]
fn errors_name_the_setting_to_fix() {
    let e = load(&[("COMPUTE_BOT_PROVIDER", "gemini")]).unwrap_err();
    assert!(e.to_string().contains("COMPUTE_BOT_PROVIDER"), "{e}");
    assert!(e.to_string().contains("`openai`"), "{e}");

    let e = load(&[("COMPUTE_BOT_API_KEY", "k")]).unwrap_err();
    assert!(e.to_string().contains("COMPUTE_BOT_MODEL"), "{e}");
    assert!(!e.to_string().contains("k "), "{e}");

    let e = load(&[
        ("COMPUTE_BOT_MODEL", "m"),
        ("COMPUTE_BOT_BASE_URL", "ftp://x"),
    ])
    .unwrap_err();
    assert!(e.to_string().contains("COMPUTE_BOT_BASE_URL"), "{e}");

    let e = load(&[
        ("COMPUTE_BOT_MODEL", "m"),
        ("COMPUTE_BOT_MAX_TOKENS", "lots"),
    ])
    .unwrap_err();
    assert!(e.to_string().contains("COMPUTE_BOT_MAX_TOKENS"), "{e}");

    let e = load(&[("COMPUTE_BOT_MODEL", "m"), ("COMPUTE_BOT_TEMPERATURE", "7")]).unwrap_err();
    assert!(e.to_string().contains("COMPUTE_BOT_TEMPERATURE"), "{e}");

    let e = load(&[
        ("COMPUTE_BOT_MODEL", "m"),
        ("COMPUTE_BOT_MODEL_TIMEOUT", "soon"),
    ])
    .unwrap_err();
    assert!(e.to_string().contains("COMPUTE_BOT_MODEL_TIMEOUT"), "{e}");
}

#[test]
fn secret_never_prints() {
    let key = "sk-canary-config-0123456789";
    let s = Secret::new(key);
    assert_eq!(format!("{s}"), "***");
    assert_eq!(format!("{s:?}"), "***");
    assert_eq!(s.expose(), key);
    let cfg = load(&[("COMPUTE_BOT_MODEL", "m"), ("COMPUTE_BOT_API_KEY", key)])
        .unwrap()
        .unwrap();
    let dbg = format!("{cfg:?}");
    assert!(!dbg.contains(key), "{dbg}");
    assert!(dbg.contains("api_key: Some(***)"), "{dbg}");
    assert_eq!(
        s.redact(&format!("got {key} and sk-canar****6789.")),
        "got *** and ***"
    );
}

#[test]
fn a_providers_own_key_never_goes_to_another_host() {
    // OPENAI_API_KEY with a foreign base URL: not sent.
    let cfg = load(&[
        ("COMPUTE_BOT_MODEL", "llama3"),
        ("COMPUTE_BOT_BASE_URL", "https://proxy.example.net/v1"),
        ("OPENAI_API_KEY", "sk-openai-home-only-123"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(cfg.api_key, None);
    assert!(cfg.key_setting().starts_with("COMPUTE_BOT_API_KEY"));
    assert!(
        cfg.key_setting()
            .contains("only sent to https://api.openai.com")
    );
    // ANTHROPIC_API_KEY likewise.
    let cfg = load(&[
        ("COMPUTE_BOT_PROVIDER", "anthropic"),
        ("COMPUTE_BOT_MODEL", "claude"),
        ("COMPUTE_BOT_BASE_URL", "http://127.0.0.1:9/"),
        ("ANTHROPIC_API_KEY", "sk-ant-home-only-123"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(cfg.api_key, None);
    // Its own host gets it; COMPUTE_BOT_API_KEY goes wherever configured.
    let cfg = load(&[
        ("COMPUTE_BOT_MODEL", "gpt-4o"),
        ("COMPUTE_BOT_BASE_URL", "https://api.openai.com/v1/"),
        ("OPENAI_API_KEY", "sk-openai-home-only-123"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(cfg.api_key, Some(Secret::new("sk-openai-home-only-123")));
    let cfg = load(&[
        ("COMPUTE_BOT_MODEL", "llama3"),
        ("COMPUTE_BOT_BASE_URL", "https://proxy.example.net/v1"),
        ("COMPUTE_BOT_API_KEY", "bot-key"),
        ("OPENAI_API_KEY", "sk-openai-home-only-123"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(cfg.api_key, Some(Secret::new("bot-key")));
}

#[test]
fn anthropic_temperature_is_checked_against_its_range() {
    let e = load(&[
        ("COMPUTE_BOT_PROVIDER", "anthropic"),
        ("COMPUTE_BOT_MODEL", "claude"),
        ("COMPUTE_BOT_TEMPERATURE", "1.5"),
    ])
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("between 0 and 1") && e.contains("COMPUTE_BOT_TEMPERATURE"),
        "{e}"
    );
    // OpenAI accepts up to 2.
    assert!(
        load(&[
            ("COMPUTE_BOT_MODEL", "gpt-4o"),
            ("COMPUTE_BOT_TEMPERATURE", "1.5")
        ])
        .unwrap()
        .is_some()
    );
    // A directly built configuration is checked by the client too.
    let mut cfg = ModelConfig::new(Provider::Anthropic, "https://api.anthropic.com", "c", None);
    cfg.temperature = 1.5;
    assert!(compute_bot::model::ModelClient::new(cfg).is_err());
}

#[test]
fn retry_budget_and_token_budget_are_settings() {
    let cfg = load(&[
        ("COMPUTE_BOT_MODEL", "gpt-4o"),
        ("COMPUTE_BOT_MODEL_RETRIES", "0"),
        ("COMPUTE_BOT_MODEL_RETRY_TIME", "5m"),
        ("COMPUTE_BOT_MAX_TOKENS", "12000"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(cfg.max_retries, 0);
    assert_eq!(cfg.max_retry_time, Duration::from_secs(300));
    assert_eq!(cfg.max_tokens, 12000);
    let e = load(&[
        ("COMPUTE_BOT_MODEL", "gpt-4o"),
        ("COMPUTE_BOT_MODEL_RETRIES", "lots"),
    ])
    .unwrap_err()
    .to_string();
    assert!(e.contains("COMPUTE_BOT_MODEL_RETRIES"), "{e}");
    // Reasoning models get the larger default budget.
    for (model, budget) in [
        ("o3-mini", 16_384),
        ("gpt-5", 16_384),
        ("openai/o4-mini", 16_384),
        ("deepseek-r1:7b", 16_384),
        ("gpt-4o-mini", 4096),
    ] {
        let cfg = load(&[("COMPUTE_BOT_MODEL", model)]).unwrap().unwrap();
        assert_eq!(cfg.max_tokens, budget, "{model}");
    }
}

#[test]
fn fallback_settings_are_checked_and_never_borrow_the_first_key() {
    // No fallback settings: no fallback.
    let cfg = load(&[
        ("COMPUTE_BOT_MODEL", "gpt-4o"),
        ("COMPUTE_BOT_API_KEY", "k1"),
    ])
    .unwrap()
    .unwrap();
    assert_eq!(cfg.fallback, None);
    // The provider defaults to the first's, the base URL to its public API,
    // and the first model's key is not the fallback's.
    let cfg = load(&[
        ("COMPUTE_BOT_MODEL", "gpt-4o"),
        ("COMPUTE_BOT_API_KEY", "first-key"),
        ("COMPUTE_BOT_FALLBACK_MODEL", "gpt-4o-mini"),
    ])
    .unwrap()
    .unwrap();
    let f = cfg.fallback.unwrap();
    assert_eq!(f.provider, Provider::OpenAi);
    assert_eq!(f.base_url, "https://api.openai.com/v1");
    assert_eq!(f.api_key, None);
    // Its provider's own key, for that provider's host.
    let cfg = load(&[
        ("COMPUTE_BOT_MODEL", "gpt-4o"),
        ("COMPUTE_BOT_FALLBACK_PROVIDER", "anthropic"),
        ("COMPUTE_BOT_FALLBACK_MODEL", "claude-haiku-4-5"),
        ("ANTHROPIC_API_KEY", "sk-ant-home"),
    ])
    .unwrap()
    .unwrap();
    let f = cfg.fallback.unwrap();
    assert_eq!(f.base_url, "https://api.anthropic.com");
    assert_eq!(f.api_key, Some(Secret::new("sk-ant-home")));
    // Errors name the fallback's settings.
    let e = load(&[
        ("COMPUTE_BOT_MODEL", "gpt-4o"),
        ("COMPUTE_BOT_FALLBACK_API_KEY", "k2"),
    ])
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("COMPUTE_BOT_FALLBACK_MODEL") && !e.contains("k2"),
        "{e}"
    );
    let e = load(&[
        ("COMPUTE_BOT_MODEL", "gpt-4o"),
        ("COMPUTE_BOT_FALLBACK_PROVIDER", "gemini"),
        ("COMPUTE_BOT_FALLBACK_MODEL", "g"),
    ])
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("COMPUTE_BOT_FALLBACK_PROVIDER") && e.contains("`anthropic`"),
        "{e}"
    );
    let e = load(&[
        ("COMPUTE_BOT_MODEL", "gpt-4o"),
        ("COMPUTE_BOT_FALLBACK_MODEL", "g"),
        ("COMPUTE_BOT_FALLBACK_BASE_URL", "ftp://x"),
    ])
    .unwrap_err()
    .to_string();
    assert!(e.contains("COMPUTE_BOT_FALLBACK_BASE_URL"), "{e}");
    let e = load(&[("COMPUTE_BOT_FALLBACK_MODEL", "g")])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no first model") && e.contains("COMPUTE_BOT_MODEL"),
        "{e}"
    );
    // The shared temperature must suit the fallback's provider too.
    let e = load(&[
        ("COMPUTE_BOT_MODEL", "gpt-4o"),
        ("COMPUTE_BOT_TEMPERATURE", "1.5"),
        ("COMPUTE_BOT_FALLBACK_PROVIDER", "anthropic"),
        ("COMPUTE_BOT_FALLBACK_MODEL", "c"),
    ])
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("anthropic") && e.contains("between 0 and 1"),
        "{e}"
    );
}
