//! The OpenAI Chat Completions provider against a local mock server replaying the API's
//! response shapes: what is sent, and how each kind of answer and failure comes back.

use std::time::Duration;

use common::models::openai::{MaxTokensField, OpenAi};
use common::models::retry::Retrying;
use common::models::{ChatMessage, ChatRequest, Model, ModelError, ToolCall, ToolSpec, Usage};
use serde_json::{json, Value};
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const KEY: &str = "sk-test-4f9c2a7e1b8d";

fn provider(server: &MockServer) -> OpenAi {
    OpenAi::new(
        format!("{}/v1", server.uri()),
        Some(KEY.into()),
        Duration::from_secs(5),
    )
}

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Current weather for a city".into(),
        parameters: json!({
            "type": "object",
            "properties": {"location": {"type": "string"}},
            "required": ["location"],
        }),
    }
}

fn request(messages: Vec<ChatMessage>, tools: Vec<ToolSpec>) -> ChatRequest {
    ChatRequest {
        model: "gpt-4.1".into(),
        system: "You are a weather assistant.".into(),
        messages,
        tools,
        max_tokens: 1024,
        turn: 0,
        purpose: Default::default(),
        task_id: String::new(),
    }
}

fn hello() -> ChatRequest {
    request(
        vec![ChatMessage::User {
            text: "Hello!".into(),
        }],
        vec![],
    )
}

/// A text answer, as the API returns it.
fn text_completion() -> Value {
    json!({
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion",
        "created": 1741569952,
        "model": "gpt-4.1-2025-04-14",
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Hello! How can I assist you today?",
                "refusal": null,
                "annotations": []
            },
            "logprobs": null,
            "finish_reason": "stop"
        }],
        "usage": {
            "prompt_tokens": 19,
            "completion_tokens": 10,
            "total_tokens": 29,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0
            }
        },
        "service_tier": "default",
        "system_fingerprint": null
    })
}

/// A tool-call answer: no content, the arguments as a JSON string.
fn tool_call_completion(arguments: &str) -> Value {
    json!({
        "id": "chatcmpl-BRvq2uS6zMWTqSGmWXJeBmWmdvOfA",
        "object": "chat.completion",
        "created": 1745955546,
        "model": "gpt-4.1-2025-04-14",
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant",
                "content": null,
                "tool_calls": [{
                    "id": "call_2yFeLJqXMLmkcGvNalDPgxtx",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": arguments}
                }],
                "refusal": null,
                "annotations": []
            },
            "logprobs": null,
            "finish_reason": "tool_calls"
        }],
        "usage": {
            "prompt_tokens": 95,
            "completion_tokens": 17,
            "total_tokens": 112,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0
            }
        },
        "service_tier": "default",
        "system_fingerprint": null
    })
}

fn api_error(message: &str, kind: &str, code: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

async fn mount(server: &MockServer, response: ResponseTemplate) {
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(response)
        .mount(server)
        .await;
}

async fn received_bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r: &Request| r.body_json().expect("the request body is JSON"))
        .collect()
}

#[tokio::test]
async fn a_text_answer_comes_back_as_text_with_its_token_usage() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .and(header("content-type", "application/json"))
        .respond_with(ResponseTemplate::new(200).set_body_json(text_completion()))
        .expect(1)
        .mount(&server)
        .await;

    let response = provider(&server).chat(&hello()).await.unwrap();

    assert_eq!(
        response.text.as_deref(),
        Some("Hello! How can I assist you today?")
    );
    assert!(response.tool_calls.is_empty());
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 19,
            output_tokens: 10
        }
    );
    // No tools: the field is left out, and the system prompt comes first.
    let body = &received_bodies(&server).await[0];
    assert_eq!(
        body,
        &json!({
            "model": "gpt-4.1",
            "messages": [
                {"role": "system", "content": "You are a weather assistant."},
                {"role": "user", "content": "Hello!"},
            ],
            "max_tokens": 1024,
        })
    );
}

#[tokio::test]
async fn a_tool_call_is_parsed_and_the_request_carries_system_prompt_history_and_tools() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_partial_json(
            json!({"tools": [{"type": "function", "function": {"name": "get_weather"}}]}),
        ))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(tool_call_completion(r#"{"location":"Paris, France"}"#)),
        )
        .expect(1)
        .mount(&server)
        .await;

    let conversation = vec![
        ChatMessage::User {
            text: "Weather in Paris and Rome?".into(),
        },
        ChatMessage::Assistant {
            text: None,
            tool_calls: vec![
                ToolCall {
                    id: "call_rome".into(),
                    name: "get_weather".into(),
                    arguments: json!({"location": "Rome, Italy"}),
                },
                ToolCall {
                    id: "call_oslo".into(),
                    name: "get_weather".into(),
                    arguments: json!({"location": "Oslo, Norway"}),
                },
            ],
        },
        ChatMessage::Tool {
            call_id: "call_rome".into(),
            name: "get_weather".into(),
            content: "24°C, sunny".into(),
            is_error: false,
        },
        ChatMessage::Tool {
            call_id: "call_oslo".into(),
            name: "get_weather".into(),
            content: "weather service unavailable".into(),
            is_error: true,
        },
        ChatMessage::Assistant {
            text: Some("Rome is sunny; let me try Paris.".into()),
            tool_calls: vec![],
        },
    ];
    let response = provider(&server)
        .chat(&request(conversation, vec![weather_tool()]))
        .await
        .unwrap();

    assert_eq!(response.text, None);
    assert_eq!(
        response.tool_calls,
        vec![ToolCall {
            id: "call_2yFeLJqXMLmkcGvNalDPgxtx".into(),
            name: "get_weather".into(),
            arguments: json!({"location": "Paris, France"}),
        }]
    );
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 95,
            output_tokens: 17
        }
    );

    let body = &received_bodies(&server).await[0];
    assert_eq!(
        body,
        &json!({
            "model": "gpt-4.1",
            "messages": [
                {"role": "system", "content": "You are a weather assistant."},
                {"role": "user", "content": "Weather in Paris and Rome?"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_rome", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"location\":\"Rome, Italy\"}"}},
                    {"id": "call_oslo", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"location\":\"Oslo, Norway\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "call_rome", "content": "24°C, sunny"},
                {"role": "tool", "tool_call_id": "call_oslo",
                 "content": "Error: weather service unavailable"},
                {"role": "assistant", "content": "Rome is sunny; let me try Paris."},
            ],
            "tools": [{
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Current weather for a city",
                    "parameters": {
                        "type": "object",
                        "properties": {"location": {"type": "string"}},
                        "required": ["location"],
                    },
                },
            }],
            "max_tokens": 1024,
        })
    );
}

#[tokio::test]
async fn tool_call_arguments_that_are_not_json_fail_permanently_naming_the_tool() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(200).set_body_json(tool_call_completion(r#"{"location": "Par"#)),
    )
    .await;

    let error = provider(&server).chat(&hello()).await.unwrap_err();

    let ModelError::Permanent { message } = error else {
        panic!("expected a permanent error, got {error:?}");
    };
    assert!(message.contains("get_weather"), "{message}");
}

#[tokio::test]
async fn an_unauthorized_key_fails_permanently_with_the_status_and_the_api_message_but_not_the_key()
{
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(401).set_body_json(api_error(
            "Incorrect API key provided: sk-test-********b8d. You can find your API key at https://platform.openai.com/account/api-keys.",
            "invalid_request_error",
            Some("invalid_api_key"),
        )),
    )
    .await;

    let error = provider(&server).chat(&hello()).await.unwrap_err();

    let ModelError::Permanent { message } = error else {
        panic!("expected a permanent error, got {error:?}");
    };
    assert!(message.starts_with("openai: HTTP 401"), "{message}");
    assert!(message.contains("Incorrect API key provided"), "{message}");
    assert!(message.contains("invalid_api_key"), "{message}");
    assert!(!message.contains(KEY), "{message}");
}

#[tokio::test]
async fn a_server_echoing_the_key_in_its_error_does_not_leak_it() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(400).set_body_json(api_error(
            &format!("key {KEY} is not allowed to use this model"),
            "invalid_request_error",
            None,
        )),
    )
    .await;

    let error = provider(&server).chat(&hello()).await.unwrap_err();

    let ModelError::Permanent { message } = error else {
        panic!("expected a permanent error, got {error:?}");
    };
    assert!(message.contains("HTTP 400"), "{message}");
    assert!(!message.contains(KEY), "{message}");
}

#[tokio::test]
async fn a_rate_limit_is_transient_and_carries_the_retry_after_seconds() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(429)
            .insert_header("retry-after", "7")
            .set_body_json(api_error(
                "Rate limit reached for gpt-4.1 in organization org-abc on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 7s.",
                "requests",
                Some("rate_limit_exceeded"),
            )),
    )
    .await;

    let error = provider(&server).chat(&hello()).await.unwrap_err();

    let ModelError::Transient {
        message,
        retry_after,
    } = error
    else {
        panic!("expected a transient error, got {error:?}");
    };
    assert_eq!(retry_after, Some(Duration::from_secs(7)));
    assert!(message.contains("429"), "{message}");
    assert!(message.contains("rate_limit_exceeded"), "{message}");
}

#[tokio::test]
async fn a_server_error_is_transient() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(500).set_body_json(api_error(
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
            None,
        )),
    )
    .await;

    let error = provider(&server).chat(&hello()).await.unwrap_err();

    let ModelError::Transient {
        message,
        retry_after,
    } = error
    else {
        panic!("expected a transient error, got {error:?}");
    };
    assert_eq!(retry_after, None);
    assert!(message.contains("500"), "{message}");
}

#[tokio::test]
async fn a_response_slower_than_the_timeout_is_transient() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(200)
            .set_body_json(text_completion())
            .set_delay(Duration::from_secs(3)),
    )
    .await;
    let provider = OpenAi::new(
        format!("{}/v1", server.uri()),
        Some(KEY.into()),
        Duration::from_millis(200),
    );

    let error = provider.chat(&hello()).await.unwrap_err();

    let ModelError::Transient { message, .. } = error else {
        panic!("expected a transient error, got {error:?}");
    };
    assert!(message.contains("timed out"), "{message}");
}

#[tokio::test]
async fn a_server_that_is_not_listening_is_transient() {
    // A port that was free a moment ago and has no listener now. (A dropped MockServer
    // goes back to wiremock's pool and keeps answering, so it will not do.)
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let uri = format!("http://127.0.0.1:{port}/v1");

    let error = OpenAi::new(uri, None, Duration::from_secs(2))
        .chat(&hello())
        .await
        .unwrap_err();

    assert!(
        matches!(error, ModelError::Transient { .. }),
        "expected a transient error, got {error:?}"
    );
}

#[tokio::test]
async fn retrying_gets_past_a_server_error_to_the_answer() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(500).set_body_json(api_error(
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
            None,
        )))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    mount(
        &server,
        ResponseTemplate::new(200).set_body_json(text_completion()),
    )
    .await;
    let model = Retrying::new(provider(&server)).with_policy(
        3,
        Duration::from_millis(1),
        Duration::from_millis(5),
    );

    let response = model.chat(&hello()).await.unwrap();

    assert_eq!(
        response.text.as_deref(),
        Some("Hello! How can I assist you today?")
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn without_a_key_no_authorization_header_is_sent() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(200).set_body_json(text_completion()),
    )
    .await;

    OpenAi::new(
        format!("{}/v1/", server.uri()),
        None,
        Duration::from_secs(5),
    )
    .chat(&hello())
    .await
    .unwrap();

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1);
    assert!(!requests[0].headers.contains_key("authorization"));
}

#[tokio::test]
async fn the_output_limit_can_be_sent_as_max_completion_tokens() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(200).set_body_json(text_completion()),
    )
    .await;

    provider(&server)
        .with_max_tokens_field(MaxTokensField::MaxCompletionTokens)
        .chat(&hello())
        .await
        .unwrap();

    let body = &received_bodies(&server).await[0];
    assert_eq!(body["max_completion_tokens"], json!(1024));
    assert!(body.get("max_tokens").is_none());
}

#[test]
fn a_named_key_variable_that_is_unset_is_a_permanent_error_naming_it() {
    let error = OpenAi::from_env(
        "http://localhost:11434/v1",
        Some("HARNESS_TEST_SURELY_UNSET_OPENAI_KEY"),
        Duration::from_secs(1),
    )
    .unwrap_err();

    let ModelError::Permanent { message } = error else {
        panic!("expected a permanent error, got {error:?}");
    };
    assert!(
        message.contains("HARNESS_TEST_SURELY_UNSET_OPENAI_KEY"),
        "{message}"
    );
}
