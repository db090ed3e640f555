//! Retrying a model call: transient errors are tried again with exponential backoff (or
//! the delay the provider asked for), up to a number of attempts; permanent errors and
//! the last transient one are returned as they are.

use std::time::Duration;

use async_trait::async_trait;

use super::{ChatRequest, ChatResponse, Model, ModelError};

pub struct Retrying<M> {
    inner: M,
    attempts: u32,
    first_backoff: Duration,
    max_backoff: Duration,
}

impl<M: Model> Retrying<M> {
    pub fn new(inner: M) -> Self {
        Retrying {
            inner,
            attempts: 4,
            first_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(20),
        }
    }

    pub fn with_policy(
        mut self,
        attempts: u32,
        first_backoff: Duration,
        max_backoff: Duration,
    ) -> Self {
        self.attempts = attempts.max(1);
        self.first_backoff = first_backoff;
        self.max_backoff = max_backoff;
        self
    }
}

#[async_trait]
impl<M: Model> Model for Retrying<M> {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let mut backoff = self.first_backoff;
        for attempt in 1.. {
            match self.inner.chat(request).await {
                Err(ModelError::Transient {
                    message,
                    retry_after,
                }) if attempt < self.attempts => {
                    let wait = retry_after.unwrap_or(backoff).min(self.max_backoff);
                    tracing::info!(attempt, wait_ms = wait.as_millis() as u64, error = %message, "model call failed; retrying");
                    tokio::time::sleep(wait).await;
                    backoff = (backoff * 2).min(self.max_backoff);
                }
                other => return other,
            }
        }
        unreachable!("the loop returns on the last attempt")
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    struct Flaky {
        failures: u32,
        calls: AtomicU32,
        error: ModelError,
    }

    #[async_trait]
    impl Model for Flaky {
        async fn chat(&self, _: &ChatRequest) -> Result<ChatResponse, ModelError> {
            let n = self.calls.fetch_add(1, Ordering::SeqCst);
            if n < self.failures {
                Err(self.error.clone())
            } else {
                Ok(ChatResponse {
                    text: Some("ok".into()),
                    ..Default::default()
                })
            }
        }
    }

    fn request() -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            system: String::new(),
            messages: vec![],
            tools: vec![],
            max_tokens: 16,
            turn: 0,
            purpose: Default::default(),
            task_id: String::new(),
        }
    }

    fn retrying(failures: u32, error: ModelError) -> Retrying<Flaky> {
        Retrying::new(Flaky {
            failures,
            calls: AtomicU32::new(0),
            error,
        })
        .with_policy(3, Duration::from_millis(1), Duration::from_millis(5))
    }

    #[tokio::test]
    async fn transient_errors_are_retried_until_the_call_succeeds() {
        let m = retrying(2, ModelError::transient("503"));
        assert_eq!(
            m.chat(&request()).await.map(|r| r.text),
            Ok(Some("ok".into()))
        );
        assert_eq!(m.inner.calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn the_last_transient_error_is_returned_after_the_attempts() {
        let m = retrying(5, ModelError::transient("429"));
        assert_eq!(m.chat(&request()).await, Err(ModelError::transient("429")));
        assert_eq!(m.inner.calls.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn permanent_errors_are_not_retried() {
        let m = retrying(5, ModelError::permanent("401"));
        assert_eq!(m.chat(&request()).await, Err(ModelError::permanent("401")));
        assert_eq!(m.inner.calls.load(Ordering::SeqCst), 1);
    }
}
