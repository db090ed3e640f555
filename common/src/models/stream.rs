//! A model's answer as it is written: the [`Delta`]s a streaming call reports, and the
//! [`Assembly`] that folds them into the whole [`ChatResponse`].
//!
//! Every provider's stream parser turns its API's events into deltas and feeds them to an
//! assembly; the deltas also go to the caller's [`OnDelta`] as they come, so the text can
//! be shown while the model writes. A stream that ends before the provider said it was
//! done (no final event) is cut off: a transient error, and the retry makes the whole call
//! again after a [`Delta::Restart`] that tells the caller to forget what it was shown.

use serde_json::Value;

use super::{ChatResponse, ModelError, ToolCall, Usage};

/// A piece of a streamed answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Delta {
    /// More of the answer's text.
    Text(String),
    /// A piece of the `index`-th tool call: its id and name when they come (usually in
    /// the first piece), and a fragment of its arguments' JSON text.
    ToolCall {
        index: usize,
        id: Option<String>,
        name: Option<String>,
        arguments: String,
    },
    /// Token counts: a count that is not zero replaces the one reported before
    /// (providers report input tokens first and output tokens at the end, or both at the
    /// end).
    Usage(Usage),
    /// Why the model stopped, in the provider's words (`stop`, `end_turn`, `tool_use`, …).
    Finish(String),
    /// The call failed part-way and is made again: everything before this is void.
    Restart,
}

/// Where a streaming call reports its deltas as they come. Called inline by the provider,
/// so it must not block: it hands the delta on (a channel) and returns.
pub type OnDelta<'a> = &'a (dyn Fn(Delta) + Send + Sync);

/// An answer being put together from its deltas.
#[derive(Debug, Default)]
pub struct Assembly {
    text: String,
    calls: Vec<PartialCall>,
    usage: Usage,
    finish: Option<String>,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

impl Assembly {
    /// Takes a delta in (and nothing else: the caller reports it).
    pub fn add(&mut self, delta: &Delta) {
        match delta {
            Delta::Text(t) => self.text.push_str(t),
            Delta::ToolCall {
                index,
                id,
                name,
                arguments,
            } => {
                if self.calls.len() <= *index {
                    self.calls.resize_with(index + 1, PartialCall::default);
                }
                let call = &mut self.calls[*index];
                if let Some(id) = id.as_ref().filter(|id| !id.is_empty()) {
                    call.id.clone_from(id);
                }
                if let Some(name) = name.as_ref().filter(|n| !n.is_empty()) {
                    call.name.clone_from(name);
                }
                call.arguments.push_str(arguments);
            }
            Delta::Usage(u) => {
                if u.input_tokens > 0 {
                    self.usage.input_tokens = u.input_tokens;
                }
                if u.output_tokens > 0 {
                    self.usage.output_tokens = u.output_tokens;
                }
            }
            Delta::Finish(reason) => self.finish = Some(reason.clone()),
            Delta::Restart => *self = Assembly::default(),
        }
    }

    /// Whether the provider said the answer is complete.
    pub fn finished(&self) -> bool {
        self.finish.is_some()
    }

    /// The whole answer. `provider` names the API in errors: a tool call without a name
    /// or whose arguments are not a JSON object is refused, as in a whole response.
    pub fn finish(self, provider: &str) -> Result<ChatResponse, ModelError> {
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for (i, call) in self.calls.into_iter().enumerate() {
            if call.name.is_empty() {
                return Err(ModelError::permanent(format!(
                    "{provider}: tool call {i} in the stream has no name"
                )));
            }
            let arguments = if call.arguments.trim().is_empty() {
                Value::Object(Default::default())
            } else {
                serde_json::from_str(&call.arguments).map_err(|e| {
                    ModelError::permanent(format!(
                        "{provider}: the arguments of the call to tool `{}` are not valid JSON ({e})",
                        call.name
                    ))
                })?
            };
            let id = if call.id.is_empty() {
                format!("call_{i}")
            } else {
                call.id
            };
            tool_calls.push(ToolCall {
                id,
                name: call.name,
                arguments,
            });
        }
        Ok(ChatResponse {
            text: (!self.text.is_empty()).then_some(self.text),
            tool_calls,
            usage: self.usage,
            finish_reason: self.finish,
        })
    }
}

/// The error of a stream that ended before its final event: transient, so the call is
/// made again as a whole.
pub fn cut_off(provider: &str) -> ModelError {
    ModelError::transient(format!(
        "{provider}: the response stream ended before the answer was complete"
    ))
}

/// Reports a whole response as the deltas a stream of it would have given: what a model
/// without a streaming API does.
pub fn replay(response: &ChatResponse, on_delta: OnDelta<'_>) {
    if let Some(text) = response.text.as_ref().filter(|t| !t.is_empty()) {
        on_delta(Delta::Text(text.clone()));
    }
    for (index, call) in response.tool_calls.iter().enumerate() {
        on_delta(Delta::ToolCall {
            index,
            id: Some(call.id.clone()),
            name: Some(call.name.clone()),
            arguments: call.arguments.to_string(),
        });
    }
    on_delta(Delta::Usage(response.usage));
    if let Some(reason) = &response.finish_reason {
        on_delta(Delta::Finish(reason.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_calls_split_across_deltas_are_joined_by_index() {
        let mut a = Assembly::default();
        for d in [
            Delta::Text("Looking".into()),
            Delta::ToolCall {
                index: 1,
                id: Some("b".into()),
                name: Some("second".into()),
                arguments: String::new(),
            },
            Delta::ToolCall {
                index: 0,
                id: Some("a".into()),
                name: Some("first".into()),
                arguments: "{\"q\":".into(),
            },
            Delta::Text(" it up".into()),
            Delta::ToolCall {
                index: 0,
                id: None,
                name: None,
                arguments: " \"x\"}".into(),
            },
            Delta::Usage(Usage {
                input_tokens: 7,
                output_tokens: 0,
            }),
            Delta::Usage(Usage {
                input_tokens: 0,
                output_tokens: 3,
            }),
            Delta::Finish("tool_calls".into()),
        ] {
            a.add(&d);
        }
        assert!(a.finished());
        let r = a.finish("p").expect("whole");
        assert_eq!(r.text.as_deref(), Some("Looking it up"));
        assert_eq!(r.tool_calls[0].name, "first");
        assert_eq!(r.tool_calls[0].arguments, serde_json::json!({"q": "x"}));
        assert_eq!(r.tool_calls[1].arguments, serde_json::json!({}));
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 7,
                output_tokens: 3
            }
        );
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    }

    #[test]
    fn a_restart_forgets_what_came_before() {
        let mut a = Assembly::default();
        a.add(&Delta::Text("half an ans".into()));
        a.add(&Delta::Restart);
        a.add(&Delta::Text("whole".into()));
        assert!(!a.finished());
        assert_eq!(a.finish("p").expect("text").text.as_deref(), Some("whole"));
    }

    #[test]
    fn broken_tool_arguments_are_refused_naming_the_tool() {
        let mut a = Assembly::default();
        a.add(&Delta::ToolCall {
            index: 0,
            id: None,
            name: Some("lookup".into()),
            arguments: "{\"q\": ".into(),
        });
        let err = a.finish("p").expect_err("cut JSON");
        assert!(err.to_string().contains("`lookup`"), "{err}");
    }
}
