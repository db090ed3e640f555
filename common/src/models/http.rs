//! HTTP plumbing shared by the OpenAI and Anthropic providers.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue};
use reqwest::StatusCode;
use serde_json::Value;

use crate::models::ModelError;

/// How much of an error body a message quotes.
const MAX_DETAIL_CHARS: usize = 500;

/// A client whose requests time out after `timeout` in all, and after `timeout` without
/// a byte read (the same for a whole response; a streamed one sets a longer total bound
/// of its own, see [`super::sse`]). Building one can fail (the TLS backend); the failure
/// is kept and reported by each call rather than panicking.
pub(crate) fn client(timeout: Duration) -> Result<reqwest::Client, String> {
    crate::https::client_builder()
        .timeout(timeout)
        .read_timeout(timeout)
        .build()
        .map_err(|e| format!("could not build the HTTP client: {}", chain(&e)))
}

pub(crate) fn key_from_env(provider: &str, var: &str) -> Result<String, ModelError> {
    match std::env::var(var) {
        Ok(key) if !key.is_empty() => Ok(key),
        _ => Err(ModelError::permanent(format!(
            "{provider}: the API key variable {var} is not set"
        ))),
    }
}

/// A header value holding a secret: marked sensitive, and an invalid one is reported
/// without quoting it.
pub(crate) fn secret_header(
    provider: &str,
    name: &str,
    value: &str,
) -> Result<HeaderValue, ModelError> {
    let mut value = HeaderValue::from_str(value).map_err(|_| {
        ModelError::permanent(format!(
            "{provider}: the API key contains characters not allowed in the {name} header"
        ))
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// Sends the request and returns the JSON body of a 2xx answer; everything else
/// becomes a [`ModelError`] whose message never contains `secret`.
pub(crate) async fn send(
    provider: &str,
    url: &str,
    request: reqwest::RequestBuilder,
    timeout: Duration,
    secret: Option<&str>,
) -> Result<Value, ModelError> {
    let result = async {
        let response = respond(provider, url, request, timeout).await?;
        let status = response.status();
        let body = response
            .text()
            .await
            .map_err(|e| request_error(provider, url, timeout, &e))?;
        serde_json::from_str(&body).map_err(|e| {
            ModelError::permanent(format!(
                "{provider}: HTTP {} with a body that is not JSON ({e}): {}",
                status_text(status),
                truncate(body.trim())
            ))
        })
    }
    .await;
    result.map_err(|e| redact(e, secret))
}

/// Sends the request and returns a 2xx response, its body unread; a failure to send it
/// and every other status become a [`ModelError`] (not yet redacted): transient or
/// permanent by the status, with the `Retry-After` the server sent and the API's message.
pub(crate) async fn respond(
    provider: &str,
    url: &str,
    request: reqwest::RequestBuilder,
    timeout: Duration,
) -> Result<reqwest::Response, ModelError> {
    let response = request
        .send()
        .await
        .map_err(|e| request_error(provider, url, timeout, &e))?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = retry_after(response.headers());
    let body = response
        .text()
        .await
        .map_err(|e| request_error(provider, url, timeout, &e))?;
    let message = format!(
        "{provider}: HTTP {}{}",
        status_text(status),
        error_detail(&body)
    );
    Err(if is_transient(status) {
        ModelError::Transient {
            message,
            retry_after,
        }
    } else {
        ModelError::Permanent { message }
    })
}

/// An error the API reported inside a stream that had begun (an OpenAI-compatible
/// `{"error": {...}}` or vLLM's `{"object": "error", ...}` in a data line, Anthropic's
/// `error` event), classified as the HTTP status it names or its type stands for would
/// be: a `code` that is a status, else the type (Anthropic's documented error types,
/// which OpenAI shares in part). An error of neither is transient: the server had
/// accepted the request and failed while answering, as a 5xx does.
pub(crate) fn stream_error(provider: &str, event: &Value) -> ModelError {
    let error = match event.get("error") {
        Some(e) if e.is_object() => e,
        _ => event,
    };
    let status = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .or_else(|| {
            Some(match error.get("type").and_then(Value::as_str)? {
                "invalid_request_error" => 400,
                "authentication_error" => 401,
                "permission_error" => 403,
                "not_found_error" => 404,
                "request_too_large" => 413,
                "rate_limit_error" => 429,
                "api_error" | "server_error" => 500,
                "timeout_error" => 504,
                "overloaded_error" => 529,
                _ => return None,
            })
        })
        .and_then(|code| StatusCode::from_u16(code).ok());
    let message = format!(
        "{provider}: the response stream reported an error{}",
        error_detail_of(event)
    );
    match status {
        Some(status) if !is_transient(status) => ModelError::Permanent { message },
        _ => ModelError::transient(message),
    }
}

/// Rate limits, overload (including Anthropic's 529), server errors, and the request
/// timeouts and conflicts the official SDKs also retry.
fn is_transient(status: StatusCode) -> bool {
    matches!(status.as_u16(), 408 | 409 | 429) || status.is_server_error()
}

fn status_text(status: StatusCode) -> String {
    match (status.as_u16(), status.canonical_reason()) {
        (_, Some(reason)) => format!("{} {reason}", status.as_u16()),
        (529, None) => "529 Overloaded".to_string(),
        (code, None) => code.to_string(),
    }
}

fn request_error(provider: &str, url: &str, timeout: Duration, e: &reqwest::Error) -> ModelError {
    if e.is_timeout() {
        ModelError::transient(format!(
            "{provider}: no complete response from {url} within {timeout:?} (timed out)"
        ))
    } else if e.is_connect() {
        ModelError::transient(format!(
            "{provider}: could not connect to {url}: {}",
            chain(e)
        ))
    } else if e.is_builder() || e.is_redirect() {
        ModelError::permanent(format!(
            "{provider}: could not send the request to {url}: {}",
            chain(e)
        ))
    } else {
        // The connection broke while sending or receiving: worth another try.
        ModelError::transient(format!(
            "{provider}: the request to {url} failed: {}",
            chain(e)
        ))
    }
}

/// An error with its causes, `a: b: c`.
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

/// `Retry-After` in (possibly fractional) seconds, or `retry-after-ms` which OpenAI
/// and Anthropic also send. An HTTP-date is not used: the backoff applies instead.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
    };
    if let Some(ms) = number("retry-after-ms") {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    number("retry-after").map(Duration::from_secs_f64)
}

/// `": <the API's message> (<type or code>)"` from an error body, whichever of the
/// common shapes it has: `{"error": {"message", "type", "code"}}` (OpenAI, Anthropic,
/// Ollama, LiteLLM), `{"error": "..."}` or `{"message", "type"}` (vLLM), or else the
/// body itself, shortened. Empty when the body is.
pub(crate) fn error_detail(body: &str) -> String {
    match serde_json::from_str::<Value>(body) {
        Ok(value) => error_detail_of(&value),
        Err(_) if body.trim().is_empty() => String::new(),
        Err(_) => format!(": {}", truncate(body.trim())),
    }
}

pub(crate) fn error_detail_of(value: &Value) -> String {
    let error = value.get("error").unwrap_or(value);
    let text = |v: &Value, field: &str| v.get(field).and_then(Value::as_str).map(str::to_string);
    let message = match error {
        Value::String(s) => Some(s.clone()),
        _ => text(error, "message"),
    };
    let kind = text(error, "code")
        .or_else(|| text(error, "type"))
        .filter(|k| k != "error");
    match (message, kind) {
        (Some(m), Some(k)) => format!(": {} ({k})", truncate(&m)),
        (Some(m), None) => format!(": {}", truncate(&m)),
        (None, Some(k)) => format!(": {k}"),
        (None, None) if value.is_object() || value.is_array() => {
            format!(": {}", truncate(&value.to_string()))
        }
        (None, None) => String::new(),
    }
}

fn truncate(text: &str) -> String {
    match text.char_indices().nth(MAX_DETAIL_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// Takes the key out of a message, in case a server echoes it back.
pub(crate) fn redact(error: ModelError, secret: Option<&str>) -> ModelError {
    let Some(secret) = secret.filter(|s| !s.is_empty()) else {
        return error;
    };
    let clean = |m: String| m.replace(secret, "[redacted]");
    match error {
        ModelError::Transient {
            message,
            retry_after,
        } => ModelError::Transient {
            message: clean(message),
            retry_after,
        },
        ModelError::Permanent { message } => ModelError::Permanent {
            message: clean(message),
        },
    }
}

/// A token count from the response's `usage` object; 0 when absent.
pub(crate) fn usage_tokens(body: &Value, field: &str) -> u64 {
    body.get("usage")
        .and_then(|u| u.get(field))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}
