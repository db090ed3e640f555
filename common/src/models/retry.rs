//! Retrying a model call: transient errors are tried again with exponential backoff (or
//! the delay the provider asked for), up to a number of attempts; permanent errors and
//! the last transient one are returned as they are.

use std::time::Duration;

use async_trait::async_trait;

use super::{ChatRequest, ChatResponse, Delta, Model, ModelError, OnDelta};

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

impl<M: Model> Retrying<M> {
    /// Makes `call` until it succeeds, fails for good, or the attempts run out; `retrying`
    /// is told before each new attempt.
    async fn with_retries<'a, F, Fut>(
        &'a self,
        call: F,
        retrying: impl Fn(),
    ) -> Result<ChatResponse, ModelError>
    where
        F: Fn(&'a M) -> Fut,
        Fut: std::future::Future<Output = Result<ChatResponse, ModelError>> + 'a,
    {
        let mut backoff = self.first_backoff;
        for attempt in 1.. {
            match call(&self.inner).await {
                Err(ModelError::Transient {
                    message,
                    retry_after,
                }) if attempt < self.attempts => {
                    let wait = retry_after.unwrap_or(backoff).min(self.max_backoff);
                    tracing::info!(attempt, wait_ms = wait.as_millis() as u64, error = %message, "model call failed; retrying");
                    tokio::time::sleep(wait).await;
                    backoff = (backoff * 2).min(self.max_backoff);
                    retrying();
                }
                other => return other,
            }
        }
        unreachable!("the loop returns on the last attempt")
    }
}

#[async_trait]
impl<M: Model> Model for Retrying<M> {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        self.with_retries(|m| m.chat(request), || {}).await
    }

    /// A stream cut off part-way is made again as a whole; what it reported before is
    /// voided with a [`Delta::Restart`] first, so no text is shown twice.
    async fn chat_stream(
        &self,
        request: &ChatRequest,
        on_delta: OnDelta<'_>,
    ) -> Result<ChatResponse, ModelError> {
        let reported = std::sync::atomic::AtomicBool::new(false);
        let counted = |d: Delta| {
            reported.store(true, std::sync::atomic::Ordering::Relaxed);
            on_delta(d);
        };
        let restart = || {
            if reported.swap(false, std::sync::atomic::Ordering::Relaxed) {
                on_delta(Delta::Restart);
            }
        };
        self.with_retries(|m| m.chat_stream(request, &counted), restart)
            .await
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
