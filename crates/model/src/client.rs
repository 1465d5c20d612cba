//! The model client the stages use: the first model and, when configured,
//! a fallback that answers while the first is unavailable.

use std::sync::{Arc, Mutex};

use super::config::FALLBACK;
use super::endpoint::Endpoint;
use super::error::FallbackFailure;
use super::reply::ChatReply;
use super::request::ChatRequest;
use super::{ModelConfig, ModelError};

/// Talks to the configured model (and its fallback). Cheap to clone; clones
/// share what was learned about the endpoints and whether the first model
/// was found unavailable.
#[derive(Debug, Clone)]
pub struct ModelClient {
    first: Endpoint,
    fallback: Option<Endpoint>,
    /// Why the first model was unavailable, once it was: later calls go to
    /// the fallback at once instead of waiting out the retries again.
    first_down: Arc<Mutex<Option<ModelError>>>,
}

impl ModelClient {
    /// Builds the HTTP clients of the model and of its fallback
    /// ([`ModelConfig::fallback`], whose errors name the
    /// `COMPUTE_BOT_FALLBACK_*` settings); fails on an invalid base URL, key
    /// or setting of either. Each client sends only its own key, only to its
    /// own base URL, and follows no redirect.
    pub fn new(mut cfg: ModelConfig) -> Result<ModelClient, ModelError> {
        let fallback = match cfg.fallback.take() {
            Some(mut f) => {
                f.vars = &FALLBACK;
                f.fallback = None;
                Some(Endpoint::new(*f, true)?)
            }
            None => None,
        };
        Ok(ModelClient {
            first: Endpoint::new(cfg, false)?,
            fallback,
            first_down: Arc::default(),
        })
    }

    /// The endpoint that answers now: the fallback once the first model was
    /// found unavailable.
    fn current(&self) -> &Endpoint {
        match (&self.fallback, self.down().is_some()) {
            (Some(f), true) => f,
            _ => &self.first,
        }
    }

    fn down(&self) -> Option<ModelError> {
        self.first_down
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// HTTP requests sent to the model providers so far by this client and
    /// its clones (first model and fallback; retries and failed requests
    /// included). The difference over a request is what it took.
    pub fn requests_sent(&self) -> u64 {
        self.first.requests_sent() + self.fallback.as_ref().map_or(0, Endpoint::requests_sent)
    }

    /// The URL requests go to now.
    pub fn endpoint(&self) -> &str {
        self.current().url()
    }

    /// The completion budget (tokens) the next request without its own
    /// `max_tokens` gets from the endpoint that answers now: the generation
    /// prompt states it, so the model sizes its program to it.
    pub fn completion_budget(&self) -> u32 {
        self.current().completion_budget()
    }

    /// False once the endpoint that answers now said it does not do tools.
    pub fn tools_supported(&self) -> bool {
        self.current().tools_supported()
    }

    /// Sends `req` and returns the model's answer. Retries 429, 408, 5xx
    /// (also an error body sent with 200), timeouts and connection errors
    /// with exponential backoff and jitter (or the server's `Retry-After`),
    /// at most `max_retries` times and never waiting past `max_retry_time`
    /// since the first request. Billing/quota errors, 401/403, 404, other
    /// 4xx, redirects and malformed replies are not retried. A 400 naming a
    /// parameter the endpoint does not take (`max_tokens`, `temperature`,
    /// tools) changes the request and is remembered for later calls. An
    /// empty reply cut at the budget (reasoning used it up) is sent again at
    /// once with twice the budget (up to 4× `max_tokens`); any cut reply
    /// raises the budget of later calls the same way.
    ///
    /// With a fallback: when the first model is unavailable after its
    /// retries ([`ModelError::calls_for_fallback`]), the fallback answers the
    /// same request, and every later call of this client (and its clones)
    /// goes to the fallback at once. The reply names the model that answered
    /// ([`ChatReply::answered_by`]); when the fallback fails too, the error
    /// names both ([`ModelError::FallbackFailed`]).
    pub async fn complete(&self, req: &ChatRequest) -> Result<ChatReply, ModelError> {
        let Some(fallback) = &self.fallback else {
            return self.first.complete(req).await;
        };
        let first_error = match self.down() {
            Some(e) => e,
            None => match self.first.complete(req).await {
                Err(e) if e.calls_for_fallback() => {
                    tracing::warn!(
                        first = %self.first.id(),
                        fallback = %fallback.id(),
                        error = %e,
                        "the model is unavailable; the fallback model answers from now on"
                    );
                    *self.first_down.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.clone());
                    e
                }
                other => return other,
            },
        };
        fallback.complete(req).await.map_err(|e| {
            ModelError::FallbackFailed(Box::new(FallbackFailure {
                first_model: self.first.id().clone(),
                first: first_error,
                fallback_model: fallback.id().clone(),
                fallback: e,
            }))
        })
    }
}
