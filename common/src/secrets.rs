//! Secrets a deployment keeps in AWS Secrets Manager, read once per cold start by the
//! functions that need them and never put in the environment, the template or a log: the
//! model provider's API key (for the function that calls the model) and the participants'
//! personal channels (for those that send to them or take their answers).
//!
//! A key's `SecretString` is the key itself, or a JSON object holding it as `api_key`
//! (the shape the console's "other type of secret" key/value editor writes).

use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("cannot read the secret {arn}: {reason}")]
    Unreadable { arn: String, reason: String },
    #[error("the secret {arn} holds no {what}: {reason}")]
    Empty {
        arn: String,
        what: &'static str,
        reason: &'static str,
    },
}

/// The API key held by the secret `arn`.
pub async fn api_key(arn: &str) -> Result<String, SecretError> {
    key_of(&text(arn, "API key").await?).ok_or_else(|| SecretError::Empty {
        arn: arn.to_owned(),
        what: "API key",
        reason: "expected the key, or a JSON object with a non-empty \"api_key\"",
    })
}

/// The text of the secret `arn` (which should hold `what`), through the SDK configuration
/// the other clients use (`AWS_ENDPOINT_URL_SECRETS_MANAGER` points it elsewhere).
pub async fn text(arn: &str, what: &'static str) -> Result<String, SecretError> {
    let sdk = crate::https::sdk_config().await;
    let mut config = aws_sdk_secretsmanager::config::Builder::from(&sdk);
    if let Some(url) = crate::https::service_endpoint("SECRETS_MANAGER") {
        config = config.endpoint_url(url);
    }
    let client = aws_sdk_secretsmanager::Client::from_conf(config.build());
    let out = client
        .get_secret_value()
        .secret_id(arn)
        .send()
        .await
        .map_err(|e| SecretError::Unreadable {
            arn: arn.to_owned(),
            // The error's own text names the service's reason; it never holds the value.
            reason: aws_sdk_secretsmanager::error::DisplayErrorContext(&e).to_string(),
        })?;
    out.secret_string()
        .map(str::to_owned)
        .ok_or_else(|| SecretError::Empty {
            arn: arn.to_owned(),
            what,
            reason: "it has no SecretString (a binary secret)",
        })
}

/// The key in a secret's text: the text itself, or a JSON object's `api_key`.
fn key_of(text: &str) -> Option<String> {
    let text = text.trim();
    let key = if text.starts_with('{') {
        match serde_json::from_str::<Value>(text).ok()?.get("api_key")? {
            Value::String(key) => key.trim().to_owned(),
            _ => return None,
        }
    } else {
        text.to_owned()
    };
    (!key.is_empty()).then_some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_the_text_or_a_json_api_key() {
        assert_eq!(key_of(" sk-abc \n").as_deref(), Some("sk-abc"));
        assert_eq!(
            key_of(r#"{"api_key":"sk-abc","note":"x"}"#).as_deref(),
            Some("sk-abc")
        );
        assert_eq!(key_of(r#"{"key":"sk-abc"}"#), None);
        assert_eq!(key_of(r#"{"api_key":""}"#), None);
        assert_eq!(key_of("   "), None);
    }
}
