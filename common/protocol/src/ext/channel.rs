//! The channel extension's data part (`application/vnd.tiny-harness.channel+json`, seed
//! 000): its wire type, its validation against `schemas/channel-v1.schema.json`, and how
//! it is found in and added to an A2A message.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{
    compile, is_media_type, problems, CHANNEL_MEDIA_TYPE, CHANNEL_SCHEMA, EVENT_MEDIA_TYPE,
};
use crate::a2a::{A2aError, Message, Part};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChannelKind {
    #[default]
    Message,
    HelpRequest,
    HelpReply,
}

/// `ChannelMessageData`: every field written out, as the seed's model dumps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChannelMessage {
    pub channel_id: String,
    pub sender: String,
    #[serde(default)]
    pub kind: ChannelKind,
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub parts: Vec<Value>,
    #[serde(default)]
    pub in_reply_to: Option<String>,
}

fn validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| compile(CHANNEL_SCHEMA))
}

impl ChannelMessage {
    pub fn new(channel_id: &str, sender: &str, kind: ChannelKind, text: &str) -> Self {
        ChannelMessage {
            channel_id: channel_id.to_owned(),
            sender: sender.to_owned(),
            kind,
            text: text.to_owned(),
            parts: Vec::new(),
            in_reply_to: None,
        }
    }

    /// Data from outside, checked against the seed's schema.
    pub fn parse(value: &Value) -> Result<Self, String> {
        if let Some(p) = problems(validator(), value) {
            return Err(p);
        }
        Self::deserialize(value).map_err(|e| e.to_string())
    }

    /// The data part carrying this message.
    pub fn part(&self) -> Part {
        Part {
            data: Some(serde_json::to_value(self).unwrap_or(Value::Null)),
            media_type: CHANNEL_MEDIA_TYPE.to_owned(),
            ..Default::default()
        }
    }

    /// The text it carries: `text`, else its text parts joined by newlines.
    pub fn body(&self) -> String {
        if !self.text.is_empty() {
            return self.text.clone();
        }
        self.parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// The channel part of a client message, validated; None when it carries none. A part of
/// the channel media type that breaks the schema is invalid params, naming the part.
pub fn of_message(m: &Message) -> Result<Option<ChannelMessage>, A2aError> {
    let Some((i, part)) = m
        .parts
        .iter()
        .enumerate()
        .find(|(_, p)| is_media_type(&p.media_type, CHANNEL_MEDIA_TYPE))
    else {
        return Ok(None);
    };
    let field = format!("message.parts[{i}].data");
    let data = part.data.as_ref().ok_or_else(|| {
        A2aError::invalid_field(&field, "a channel message part must be a data part")
    })?;
    ChannelMessage::parse(data)
        .map(Some)
        .map_err(|e| A2aError::invalid_field(&field, format!("invalid channel message: {e}")))
}

/// The text a message carries for the model: its text parts; with none, the text of its
/// channel part. Envelope parts are not text (their data lands in the task extension);
/// other data parts are given as JSON.
pub fn message_text(m: &Message) -> String {
    let texts: Vec<String> = m.parts.iter().filter_map(|p| p.text.clone()).collect();
    if !texts.is_empty() {
        let data: Vec<String> = m.parts.iter().filter_map(other_data).collect();
        return texts.into_iter().chain(data).collect::<Vec<_>>().join("\n");
    }
    m.parts
        .iter()
        .filter_map(|p| {
            if is_media_type(&p.media_type, CHANNEL_MEDIA_TYPE) {
                let data = p.data.as_ref()?;
                serde_json::from_value::<ChannelMessage>(data.clone())
                    .ok()
                    .map(|c| c.body())
            } else {
                other_data(p)
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn other_data(p: &Part) -> Option<String> {
    if is_media_type(&p.media_type, CHANNEL_MEDIA_TYPE)
        || is_media_type(&p.media_type, EVENT_MEDIA_TYPE)
    {
        return None;
    }
    p.data.as_ref().map(|d| d.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_part_carries_every_field_and_validates_against_the_seed_schema() {
        let m = ChannelMessage::new("t-1", "tiny-harness", ChannelKind::HelpRequest, "Which?");
        let part = m.part();
        assert_eq!(part.media_type, "application/vnd.tiny-harness.channel+json");
        assert_eq!(
            part.data.clone().unwrap(),
            json!({"channel_id": "t-1", "sender": "tiny-harness", "kind": "help_request",
                   "text": "Which?", "parts": [], "in_reply_to": null})
        );
        assert_eq!(ChannelMessage::parse(&part.data.unwrap()).unwrap(), m);
    }

    #[test]
    fn a_part_that_breaks_the_schema_is_invalid_params_naming_the_part() {
        let msg = Message {
            parts: vec![
                Part::text("hi"),
                Part {
                    data: Some(json!({"channel_id": "t", "kind": "gossip", "extra": 1})),
                    media_type: CHANNEL_MEDIA_TYPE.into(),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let err = of_message(&msg).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("invalid channel message"), "{text}");
        assert!(text.contains("sender") && text.contains("gossip"), "{text}");
        assert!(
            matches!(err, A2aError::InvalidParams { field: Some(f), .. } if f == "message.parts[1].data")
        );
    }

    #[test]
    fn defaults_fill_in_and_the_body_falls_back_to_the_text_parts() {
        let m = ChannelMessage::parse(&json!({"channel_id": "t", "sender": "bob",
            "parts": [{"kind": "text", "text": "yes"}]}))
        .unwrap();
        assert_eq!(m.kind, ChannelKind::Message);
        assert_eq!(m.body(), "yes");
    }

    #[test]
    fn the_text_of_a_message_is_its_text_parts_else_its_channel_part() {
        let channel_only = Message {
            parts: vec![ChannelMessage::new("t", "a", ChannelKind::HelpReply, "blue").part()],
            ..Default::default()
        };
        assert_eq!(message_text(&channel_only), "blue");
        let mixed = Message {
            parts: vec![
                Part::text("hello"),
                ChannelMessage::new("t", "a", ChannelKind::Message, "dup").part(),
                Part::data(json!({"k": 1})),
            ],
            ..Default::default()
        };
        assert_eq!(message_text(&mixed), "hello\n{\"k\":1}");
    }
}
