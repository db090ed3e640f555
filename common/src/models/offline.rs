//! The built-in offline model: what the LLM agent runs on when no model is configured,
//! so the harness works out of the box. It calls no tools and answers every task with a
//! note saying it is not a real model, quoting what it was asked.

use async_trait::async_trait;

use super::{ChatMessage, ChatRequest, ChatResponse, Model, ModelError};

pub const NAME: &str = "offline";

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
        Ok(ChatResponse {
            text: Some(format!(
                "No model is configured, so the built-in offline model answered. You asked: \
                 {asked:?}. Start the harness with --model (see common/docs/models.md) for real answers."
            )),
            ..Default::default()
        })
    }
}
