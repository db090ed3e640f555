//! The Chat Completions stream (`stream: true`, `stream_options.include_usage`): each
//! event is a `data:` line holding a `chat.completion.chunk`, and `data: [DONE]` ends it.
//!
//! `choices[0].delta` carries `content` (or `refusal`) fragments, and `tool_calls` pieces
//! with their `index`: the `id` and `function.name` in a call's first piece,
//! `function.arguments` fragments after it. A chunk's `finish_reason` says why the model
//! stopped; with `include_usage` the last chunk has empty `choices` and the call's
//! `usage`. Compatible servers differ: Ollama and some vLLM versions send no usage chunk,
//! and a failure after the stream began comes as an `error` object in a data line
//! (vLLM's as a top-level `{"object": "error", "code": <status>}`).

use serde_json::Value;

use super::{http, Usage, PROVIDER};
use crate::models::sse::{Events, Flow};
use crate::models::{Delta, ModelError};

/// The parser of one streamed answer.
#[derive(Debug, Default)]
pub(super) struct Chunks {
    /// How many tool calls have begun: a piece's `index` may be one of them or the next.
    calls: usize,
}

impl Events for Chunks {
    fn event(
        &mut self,
        _kind: Option<&str>,
        data: &str,
        emit: &mut dyn FnMut(Delta),
    ) -> Result<Flow, ModelError> {
        if data.trim() == "[DONE]" {
            return Ok(Flow::Done);
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            ModelError::permanent(format!(
                "{PROVIDER}: an event of the response stream is not JSON ({e}; {} bytes)",
                data.len()
            ))
        })?;
        if chunk.get("error").is_some_and(|e| !e.is_null())
            || chunk.get("object").and_then(Value::as_str) == Some("error")
        {
            return Err(http::stream_error(PROVIDER, &chunk));
        }
        let choices = chunk.get("choices").and_then(Value::as_array);
        // One answer was asked for: choice 0.
        let first = choices
            .into_iter()
            .flatten()
            .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0);
        if let Some(choice) = first {
            if let Some(delta) = choice.get("delta") {
                self.delta(delta, emit)?;
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                emit(Delta::Finish(reason.to_string()));
            }
        }
        if chunk.get("usage").is_some_and(Value::is_object) {
            let tokens = |field: &str| http::usage_tokens(&chunk, field);
            emit(Delta::Usage(Usage {
                input_tokens: tokens("prompt_tokens"),
                output_tokens: tokens("completion_tokens"),
            }));
        }
        Ok(Flow::More)
    }

    fn whole(&self, body: &Value) -> Result<crate::models::ChatResponse, ModelError> {
        super::parse_response(body)
    }
}

impl Chunks {
    fn delta(&mut self, delta: &Value, emit: &mut dyn FnMut(Delta)) -> Result<(), ModelError> {
        let text = |field: &str| {
            delta
                .get(field)
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
        };
        // A refusal stands in for the text, as in a whole response.
        if let Some(text) = text("content").or_else(|| text("refusal")) {
            emit(Delta::Text(text.to_string()));
        }
        let pieces = delta.get("tool_calls").and_then(Value::as_array);
        for (position, piece) in pieces.into_iter().flatten().enumerate() {
            let index = piece
                .get("index")
                .and_then(Value::as_u64)
                .map_or(position, |i| usize::try_from(i).unwrap_or(usize::MAX));
            // Calls are numbered from 0 in order: a piece of a call further on than the
            // next is malformed (and must not make the assembly grow to its index).
            if index > self.calls {
                return Err(ModelError::permanent(format!(
                    "{PROVIDER}: the response stream has a piece of tool call {index} before call {}",
                    self.calls
                )));
            }
            self.calls = self.calls.max(index + 1);
            let function = piece.get("function");
            let field = |v: Option<&Value>, name: &str| {
                v.and_then(|v| v.get(name))
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
            };
            let arguments = match function.and_then(|f| f.get("arguments")) {
                Some(Value::String(s)) => s.clone(),
                // Some compatible servers send the whole arguments as an object.
                Some(v @ Value::Object(_)) => v.to_string(),
                _ => String::new(),
            };
            emit(Delta::ToolCall {
                index,
                id: field(Some(piece), "id"),
                name: field(function, "name"),
                arguments,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::models::sse::tests::{read_fixture, read_in_pieces, texts};
    use crate::models::{stream, ToolCall};

    fn fixture(name: &str) -> Vec<u8> {
        let path = format!(
            "{}/tests/fixtures/streams/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn read(name: &str) -> (Vec<Delta>, Result<crate::models::ChatResponse, ModelError>) {
        read_fixture::<Chunks>(PROVIDER, &fixture(name))
    }

    #[test]
    fn plain_text_comes_in_fragments_then_the_reason_and_the_usage() {
        let (deltas, result) = read("openai-text.sse");
        assert_eq!(
            texts(&deltas),
            ["Hello", "!", " How", " can", " I", " assist", " you", " today", "?"]
        );
        let usage = Usage {
            input_tokens: 19,
            output_tokens: 10,
        };
        assert_eq!(
            deltas[deltas.len() - 2..],
            [Delta::Finish("stop".into()), Delta::Usage(usage)]
        );
        let response = result.expect("complete");
        assert_eq!(
            response.text.as_deref(),
            Some("Hello! How can I assist you today?")
        );
        assert_eq!(response.usage, usage);
        assert_eq!(response.finish_reason.as_deref(), Some("stop"));
        assert!(response.tool_calls.is_empty());
    }

    #[test]
    fn text_then_a_tool_call_whose_later_pieces_spell_out_nulls() {
        let (deltas, result) = read("openai-text-then-tool-call.sse");
        assert_eq!(
            deltas[4],
            Delta::ToolCall {
                index: 0,
                id: Some("call_DdmO9pD3xa9XTPNJ32zg2hcA".into()),
                name: Some("get_weather".into()),
                arguments: String::new(),
            }
        );
        assert_eq!(
            deltas[6],
            Delta::ToolCall {
                index: 0,
                id: None,
                name: None,
                arguments: "location".into(),
            }
        );
        let response = result.expect("complete");
        assert_eq!(response.text.as_deref(), Some("Let me check the weather."));
        assert_eq!(
            response.tool_calls,
            vec![ToolCall {
                id: "call_DdmO9pD3xa9XTPNJ32zg2hcA".into(),
                name: "get_weather".into(),
                arguments: json!({"location": "Paris, France"}),
            }]
        );
        assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 95,
                output_tokens: 27
            }
        );
    }

    #[test]
    fn two_tool_calls_split_inside_strings_and_escapes_are_put_together() {
        let (deltas, result) = read("openai-two-tool-calls-split.sse");
        let fragments: Vec<&str> = deltas
            .iter()
            .filter_map(|d| match d {
                Delta::ToolCall {
                    index: 1,
                    arguments,
                    ..
                } => Some(arguments.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            fragments,
            [
                "",
                "{\"location\": \"Montr",
                "\\u00",
                "e9al, Qu\\u",
                "00e9bec\", ",
                "\"note\": \"say \\",
                "\"bonjour\\\"",
                "\"}"
            ]
        );
        let response = result.expect("complete");
        assert_eq!(response.text, None);
        assert_eq!(
            response.tool_calls,
            vec![
                ToolCall {
                    id: "call_6LhoR3pXfkAm3oaQ0J7bWkz1".into(),
                    name: "get_weather".into(),
                    arguments: json!({"location": "Paris, France", "unit": "celsius"}),
                },
                ToolCall {
                    id: "call_Xq2v0rWbO7dKZJzNfA1LmT8s".into(),
                    name: "get_weather".into(),
                    arguments: json!({"location": "Montréal, Québec", "note": "say \"bonjour\""}),
                },
            ]
        );
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 102,
                output_tokens: 64
            }
        );
    }

    #[test]
    fn a_compatible_server_without_usage_gives_zero_counts() {
        let (deltas, result) = read("openai-compatible-no-usage.sse");
        assert!(!deltas.iter().any(|d| matches!(d, Delta::Usage(_))));
        let response = result.expect("complete");
        assert_eq!(response.text.as_deref(), Some("Hi there"));
        assert_eq!(response.usage, Usage::default());
        assert_eq!(response.finish_reason.as_deref(), Some("stop"));
    }

    #[test]
    fn an_error_in_a_data_line_is_classified_by_its_type_or_status() {
        let (deltas, result) = read("openai-error.sse");
        assert_eq!(texts(&deltas), ["Hel"]);
        let err = result.expect_err("server error");
        assert!(matches!(err, ModelError::Transient { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "openai: the response stream reported an error: The server had an error while \
             processing your request. Sorry about that! (server_error)"
        );

        let (_, result) = read("openai-compatible-error-400.sse");
        let err = result.expect_err("bad request");
        assert!(matches!(err, ModelError::Permanent { .. }), "{err:?}");
        assert!(err.to_string().contains("maximum context length"), "{err}");
    }

    #[test]
    fn a_stream_cut_off_midway_is_transient_after_the_text_so_far() {
        let (deltas, result) = read("openai-cut-off.sse");
        assert_eq!(texts(&deltas), ["Hello", "!", " How", " can", " I"]);
        assert_eq!(result, Err(stream::cut_off(PROVIDER)));
    }

    #[test]
    fn a_piece_of_a_call_out_of_order_is_refused_before_it_is_assembled() {
        let event = |index: u64| {
            format!(
                "data: {}\n\n",
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                    {"index": index, "id": "c", "function": {"name": "f", "arguments": ""}}
                ]}}]})
            )
        };
        let bytes = format!("{}{}data: [DONE]\n\n", event(0), event(1));
        let (_, result) = read_in_pieces::<Chunks>(PROVIDER, bytes.as_bytes(), 1000);
        assert_eq!(result.expect("in order").tool_calls.len(), 2);
        let bytes = format!("{}{}", event(0), event(1 << 40));
        let (deltas, result) = read_in_pieces::<Chunks>(PROVIDER, bytes.as_bytes(), 1000);
        assert_eq!(deltas.len(), 1);
        let err = result.expect_err("out of order");
        assert!(err.to_string().contains("before call 1"), "{err}");
    }
}
