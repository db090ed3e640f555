//! The Messages stream (`stream: true`): named events, each with its JSON in a data line.
//!
//! `message_start` carries the message's `usage` (input tokens, the prompt-cache counts,
//! the first output tokens); each content block is a `content_block_start` (a `text`,
//! `thinking` or `tool_use` block with its `id` and `name`), `content_block_delta`s
//! (`text_delta`, `input_json_delta` fragments of a tool's input, `thinking_delta`,
//! `signature_delta`) and a `content_block_stop`; `message_delta` gives the `stop_reason`
//! and the cumulative `usage.output_tokens`; `message_stop` ends the stream. `ping`s come
//! anywhere, and an `error` event (`overloaded_error`, …) ends a failed stream. Events of
//! other types are ignored, as the API asks of clients; so are thinking blocks and the
//! server's own tools (`server_tool_use`), which are not part of the answer.

use std::collections::HashMap;

use serde_json::Value;

use super::{http, usage, PROVIDER};
use crate::models::sse::{Events, Flow};
use crate::models::{Delta, ModelError};

/// What a content block of the answer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Text,
    /// The n-th tool call of the answer.
    Tool(usize),
    /// Thinking, a server tool, or a block type this parser does not know.
    Other,
}

/// The parser of one streamed answer.
#[derive(Debug, Default)]
pub(super) struct MessageStream {
    /// The content blocks begun, by their index in the message.
    blocks: HashMap<u64, Block>,
    calls: usize,
}

impl Events for MessageStream {
    fn event(
        &mut self,
        kind: Option<&str>,
        data: &str,
        emit: &mut dyn FnMut(Delta),
    ) -> Result<Flow, ModelError> {
        let event: Value = serde_json::from_str(data).map_err(|e| {
            ModelError::permanent(format!(
                "{PROVIDER}: the data of a `{}` event is not JSON ({e}; {} bytes)",
                kind.unwrap_or("message"),
                data.len()
            ))
        })?;
        let index = event.get("index").and_then(Value::as_u64);
        match event.get("type").and_then(Value::as_str).or(kind) {
            Some("message_start") => {
                if let Some(message) = event.get("message") {
                    emit(Delta::Usage(usage(message)));
                }
            }
            Some("content_block_start") => {
                let block = event.get("content_block").unwrap_or(&Value::Null);
                let begun = self.start(block, emit);
                if let Some(index) = index {
                    self.blocks.insert(index, begun);
                }
            }
            Some("content_block_delta") => {
                let block = index.and_then(|i| self.blocks.get(&i).copied());
                self.delta(block, event.get("delta").unwrap_or(&Value::Null), emit)?;
            }
            Some("message_delta") => {
                let reason = event.pointer("/delta/stop_reason").and_then(Value::as_str);
                if let Some(reason) = reason {
                    emit(Delta::Finish(reason.to_string()));
                }
                if event.get("usage").is_some_and(Value::is_object) {
                    emit(Delta::Usage(usage(&event)));
                }
            }
            Some("message_stop") => return Ok(Flow::Done),
            Some("error") => return Err(http::stream_error(PROVIDER, &event)),
            // `ping`, `content_block_stop`, and event types added later.
            _ => {}
        }
        Ok(Flow::More)
    }

    fn whole(&self, body: &Value) -> Result<crate::models::ChatResponse, ModelError> {
        super::parse_response(body)
    }
}

impl MessageStream {
    fn start(&mut self, block: &Value, emit: &mut dyn FnMut(Delta)) -> Block {
        let text = |field: &str| {
            block
                .get(field)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                if let Some(text) = text("text") {
                    emit(Delta::Text(text));
                }
                Block::Text
            }
            Some("tool_use") => {
                let index = self.calls;
                self.calls += 1;
                // The input comes in `input_json_delta`s; the start has `{}`, unless a
                // proxy sends the whole block at once.
                let arguments = match block.get("input") {
                    Some(Value::Object(o)) if !o.is_empty() => Value::Object(o.clone()).to_string(),
                    _ => String::new(),
                };
                emit(Delta::ToolCall {
                    index,
                    id: text("id"),
                    name: text("name"),
                    arguments,
                });
                Block::Tool(index)
            }
            _ => Block::Other,
        }
    }

    fn delta(
        &mut self,
        block: Option<Block>,
        delta: &Value,
        emit: &mut dyn FnMut(Delta),
    ) -> Result<(), ModelError> {
        let field = |name: &str| delta.get(name).and_then(Value::as_str).unwrap_or_default();
        match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") if block != Some(Block::Other) => {
                let text = field("text");
                if !text.is_empty() {
                    emit(Delta::Text(text.to_string()));
                }
            }
            Some("input_json_delta") => match block {
                Some(Block::Tool(index)) => emit(Delta::ToolCall {
                    index,
                    id: None,
                    name: None,
                    arguments: field("partial_json").to_string(),
                }),
                Some(Block::Other) => {}
                // Whose input it is cannot be known: the call would be wrong.
                _ => {
                    return Err(ModelError::permanent(format!(
                        "{PROVIDER}: the response stream has tool input for a block that did not start as a tool_use"
                    )))
                }
            },
            // Thinking, its signature, citations.
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::models::sse::tests::{read_fixture, read_in_pieces, texts};
    use crate::models::{stream, ToolCall, Usage};

    fn read(name: &str) -> (Vec<Delta>, Result<crate::models::ChatResponse, ModelError>) {
        let path = format!(
            "{}/tests/fixtures/streams/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        read_fixture::<MessageStream>(PROVIDER, &bytes)
    }

    #[test]
    fn plain_text_with_a_ping_then_the_reason_and_the_output_tokens() {
        let (deltas, result) = read("anthropic-text.sse");
        assert_eq!(
            deltas,
            vec![
                Delta::Usage(Usage {
                    input_tokens: 25,
                    output_tokens: 1
                }),
                Delta::Text("Hello".into()),
                Delta::Text("!".into()),
                Delta::Text(" How can I help".into()),
                Delta::Text(" you today?".into()),
                Delta::Finish("end_turn".into()),
                Delta::Usage(Usage {
                    input_tokens: 0,
                    output_tokens: 15
                }),
            ]
        );
        let response = result.expect("complete");
        assert_eq!(
            response.text.as_deref(),
            Some("Hello! How can I help you today?")
        );
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 25,
                output_tokens: 15
            }
        );
        assert_eq!(response.finish_reason.as_deref(), Some("end_turn"));
    }

    #[test]
    fn text_then_a_tool_use_and_the_cached_prompt_counts_as_input() {
        let (deltas, result) = read("anthropic-text-then-tool-use.sse");
        assert_eq!(
            texts(&deltas),
            ["Okay", ", let's check the weather for San Francisco, CA:"]
        );
        let response = result.expect("complete");
        assert_eq!(
            response.tool_calls,
            vec![ToolCall {
                id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
                name: "get_weather".into(),
                arguments: json!({"location": "San Francisco, CA", "unit": "fahrenheit"}),
            }]
        );
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 472 + 1024 + 2048,
                output_tokens: 89
            }
        );
        assert_eq!(response.finish_reason.as_deref(), Some("tool_use"));
    }

    #[test]
    fn thinking_is_left_out_and_two_tool_uses_split_inside_escapes_are_put_together() {
        let (deltas, result) = read("anthropic-thinking-two-tool-uses-split.sse");
        assert!(texts(&deltas).is_empty(), "{deltas:?}");
        // The content blocks are 1 and 2; the calls 0 and 1.
        assert!(deltas.contains(&Delta::ToolCall {
            index: 1,
            id: None,
            name: None,
            arguments: "\\u00".into(),
        }));
        let response = result.expect("complete");
        assert_eq!(response.text, None);
        assert_eq!(
            response.tool_calls,
            vec![
                ToolCall {
                    id: "toolu_01A09q90qw90lq917835lq9".into(),
                    name: "get_weather".into(),
                    arguments: json!({"location": "Paris, France", "unit": "celsius"}),
                },
                ToolCall {
                    id: "toolu_01B7kx2YqRz4Lw9DdP3vN5sT".into(),
                    name: "get_weather".into(),
                    arguments: json!({"location": "Montréal, Québec", "note": "say \"bonjour\""}),
                },
            ]
        );
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 530,
                output_tokens: 146
            }
        );
    }

    #[test]
    fn an_overloaded_error_event_is_transient_as_a_529() {
        let (deltas, result) = read("anthropic-error-overloaded.sse");
        assert_eq!(texts(&deltas), ["Hel"]);
        let err = result.expect_err("overloaded");
        assert!(matches!(err, ModelError::Transient { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "anthropic: the response stream reported an error: Overloaded (overloaded_error)"
        );
        let invalid = "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"invalid_request_error\", \"message\": \"bad\"}}\n\n";
        let (_, result) = read_in_pieces::<MessageStream>(PROVIDER, invalid.as_bytes(), 1000);
        assert!(
            matches!(result, Err(ModelError::Permanent { .. })),
            "{result:?}"
        );
    }

    #[test]
    fn a_stream_cut_off_midway_is_transient_after_the_text_so_far() {
        let (deltas, result) = read("anthropic-cut-off.sse");
        assert_eq!(texts(&deltas), ["Hello", "!"]);
        assert_eq!(result, Err(stream::cut_off(PROVIDER)));
    }

    #[test]
    fn tool_input_for_a_block_that_never_started_is_refused() {
        let bytes = "event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": 3, \"delta\": {\"type\": \"input_json_delta\", \"partial_json\": \"{}\"}}\n\n";
        let (_, result) = read_in_pieces::<MessageStream>(PROVIDER, bytes.as_bytes(), 1000);
        let err = result.expect_err("no such block");
        assert!(err.to_string().contains("did not start"), "{err}");
    }
}
