//! The built-in offline model: what the LLM agent runs on when no model is configured,
//! so the harness works out of the box. It calls no tools and answers every task with a
//! note saying it is not a real model, quoting the start of what it was asked (at most
//! [`QUOTED_CHARS`] characters: a long message answered whole would double what its task
//! stores).

use async_trait::async_trait;

use super::{ChatMessage, ChatRequest, ChatResponse, Model, ModelError};

pub const NAME: &str = "offline";

/// How much of the message the answer quotes, in characters.
pub const QUOTED_CHARS: usize = 200;

#[derive(Debug, Default)]
pub struct Offline;

#[async_trait]
impl Model for Offline {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let asked = request
            .messages
            .iter()
            .rev()
            .find_map(|m| match m {
                ChatMessage::User { text } => Some(text.as_str()),
                _ => None,
            })
            .unwrap_or("");
        let mut quoted: String = asked.chars().take(QUOTED_CHARS).collect();
        if quoted.len() < asked.len() {
            quoted.push('…');
        }
        let asked = quoted;
        Ok(ChatResponse {
            text: Some(format!(
                "No model is configured, so the built-in offline model answered. You asked: \
                 {asked:?}. Start the harness with --model (see common/docs/models.md) for real answers."
            )),
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_long_message_is_quoted_by_its_start() {
        let long = "é".repeat(900_000);
        let request = ChatRequest {
            model: NAME.into(),
            system: String::new(),
            messages: vec![ChatMessage::User { text: long }],
            tools: Vec::new(),
            max_tokens: 0,
            turn: 0,
            purpose: Default::default(),
            task_id: String::new(),
        };
        let text = Offline.chat(&request).await.unwrap().text.unwrap();
        assert!(text.len() < 1_000, "{} bytes", text.len());
        assert!(
            text.contains(&format!("{}…", "é".repeat(QUOTED_CHARS))),
            "{text}"
        );
    }
}
