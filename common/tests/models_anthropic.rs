//! The Anthropic Messages API provider against a local mock server replaying the API's
//! response shapes: what is sent, and how each kind of answer and failure comes back.

use std::time::Duration;

use common::models::anthropic::Anthropic;
use common::models::retry::Retrying;
use common::models::{ChatMessage, ChatRequest, Model, ModelError, ToolCall, ToolSpec, Usage};
use serde_json::{json, Value};
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const KEY: &str = "sk-ant-api03-test-7d3f9e21";

fn provider(server: &MockServer) -> Anthropic {
    Anthropic::new(Some(server.uri()), KEY, Duration::from_secs(5))
}

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Get the current weather in a given location".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
            },
            "required": ["location"]
        }),
    }
}

fn request(messages: Vec<ChatMessage>, tools: Vec<ToolSpec>) -> ChatRequest {
    ChatRequest {
        model: "claude-sonnet-4-5".into(),
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
            text: "Hello, Claude".into(),
        }],
        vec![],
    )
}

/// A text answer, as the API returns it.
fn text_message() -> Value {
    json!({
        "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": "Hi! My name is Claude."}],
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": {
            "input_tokens": 2095,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 503,
            "service_tier": "standard"
        }
    })
}

/// A tool-use answer: some text, then a `tool_use` block with its input object.
fn tool_use_message() -> Value {
    json!({
        "id": "msg_01Aq9w938a90dw8q",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [
            {"type": "text", "text": "I'll check the current weather in San Francisco for you."},
            {
                "type": "tool_use",
                "id": "toolu_01A09q90qw90lq917835lq9",
                "name": "get_weather",
                "input": {"location": "San Francisco, CA", "unit": "celsius"}
            }
        ],
        "stop_reason": "tool_use",
        "stop_sequence": null,
        "usage": {
            "input_tokens": 384,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 93,
            "service_tier": "standard"
        }
    })
}

fn api_error(kind: &str, message: &str) -> Value {
    json!({
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"
    })
}

async fn mount(server: &MockServer, response: ResponseTemplate) {
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
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
        .and(path("/v1/messages"))
        .and(header("x-api-key", KEY))
        .and(header("anthropic-version", "2023-06-01"))
        .and(header("content-type", "application/json"))
        .respond_with(ResponseTemplate::new(200).set_body_json(text_message()))
        .expect(1)
        .mount(&server)
        .await;

    let response = provider(&server).chat(&hello()).await.unwrap();

    assert_eq!(response.text.as_deref(), Some("Hi! My name is Claude."));
    assert!(response.tool_calls.is_empty());
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 2095,
            output_tokens: 503
        }
    );
    // No tools: the field is left out; the system prompt is a top-level string.
    let body = &received_bodies(&server).await[0];
    assert_eq!(
        body,
        &json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "system": "You are a weather assistant.",
            "messages": [{"role": "user", "content": "Hello, Claude"}],
        })
    );
}

#[tokio::test]
async fn a_tool_use_is_parsed_and_the_request_carries_system_prompt_history_and_tools() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(body_partial_json(json!({
            "system": "You are a weather assistant.",
            "tools": [{"name": "get_weather"}],
        })))
        .respond_with(ResponseTemplate::new(200).set_body_json(tool_use_message()))
        .expect(1)
        .mount(&server)
        .await;

    let conversation = vec![
        ChatMessage::User {
            text: "Weather in Rome, Oslo and San Francisco?".into(),
        },
        ChatMessage::Assistant {
            text: Some("Let me look up Rome and Oslo.".into()),
            tool_calls: vec![
                ToolCall {
                    id: "toolu_rome".into(),
                    name: "get_weather".into(),
                    arguments: json!({"location": "Rome, Italy"}),
                },
                ToolCall {
                    id: "toolu_oslo".into(),
                    name: "get_weather".into(),
                    arguments: json!({"location": "Oslo, Norway"}),
                },
            ],
        },
        ChatMessage::Tool {
            call_id: "toolu_rome".into(),
            name: "get_weather".into(),
            content: "24°C, sunny".into(),
            is_error: false,
        },
        ChatMessage::Tool {
            call_id: "toolu_oslo".into(),
            name: "get_weather".into(),
            content: "weather service unavailable".into(),
            is_error: true,
        },
    ];
    let response = provider(&server)
        .chat(&request(conversation, vec![weather_tool()]))
        .await
        .unwrap();

    assert_eq!(
        response.text.as_deref(),
        Some("I'll check the current weather in San Francisco for you.")
    );
    assert_eq!(
        response.tool_calls,
        vec![ToolCall {
            id: "toolu_01A09q90qw90lq917835lq9".into(),
            name: "get_weather".into(),
            arguments: json!({"location": "San Francisco, CA", "unit": "celsius"}),
        }]
    );
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 384,
            output_tokens: 93
        }
    );

    // Both results of the assistant turn travel in one user message.
    let body = &received_bodies(&server).await[0];
    assert_eq!(
        body,
        &json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "system": "You are a weather assistant.",
            "messages": [
                {"role": "user", "content": "Weather in Rome, Oslo and San Francisco?"},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Let me look up Rome and Oslo."},
                    {"type": "tool_use", "id": "toolu_rome", "name": "get_weather",
                     "input": {"location": "Rome, Italy"}},
                    {"type": "tool_use", "id": "toolu_oslo", "name": "get_weather",
                     "input": {"location": "Oslo, Norway"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_rome",
                     "content": "24°C, sunny", "is_error": false},
                    {"type": "tool_result", "tool_use_id": "toolu_oslo",
                     "content": "weather service unavailable", "is_error": true},
                ]},
            ],
            "tools": [{
                "name": "get_weather",
                "description": "Get the current weather in a given location",
                "input_schema": {
                    "type": "object",
                    "properties": {
                        "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
                        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
                    },
                    "required": ["location"]
                },
            }],
        })
    );
}

#[tokio::test]
async fn an_invalid_key_fails_permanently_with_the_status_and_the_api_message_but_not_the_key() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(401)
            .set_body_json(api_error("authentication_error", "invalid x-api-key")),
    )
    .await;

    let error = provider(&server).chat(&hello()).await.unwrap_err();

    let ModelError::Permanent { message } = error else {
        panic!("expected a permanent error, got {error:?}");
    };
    assert!(message.starts_with("anthropic: HTTP 401"), "{message}");
    assert!(message.contains("invalid x-api-key"), "{message}");
    assert!(message.contains("authentication_error"), "{message}");
    assert!(!message.contains(KEY), "{message}");
}

#[tokio::test]
async fn a_rejected_request_fails_permanently_with_the_api_message() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(400).set_body_json(api_error(
            "invalid_request_error",
            "messages.1.content.0.tool_use.input: Input should be a valid dictionary",
        )),
    )
    .await;

    let error = provider(&server).chat(&hello()).await.unwrap_err();

    let ModelError::Permanent { message } = error else {
        panic!("expected a permanent error, got {error:?}");
    };
    assert!(message.contains("HTTP 400"), "{message}");
    assert!(
        message.contains("Input should be a valid dictionary"),
        "{message}"
    );
}

#[tokio::test]
async fn a_rate_limit_is_transient_and_carries_the_retry_after_seconds() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(429)
            .insert_header("retry-after", "7")
            .set_body_json(api_error(
                "rate_limit_error",
                "Number of request tokens has exceeded your per-minute rate limit (https://docs.claude.com/en/api/rate-limits); see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later.",
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
    assert!(message.contains("rate_limit_error"), "{message}");
}

#[tokio::test]
async fn a_server_error_is_transient() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(500).set_body_json(api_error("api_error", "Internal server error")),
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
async fn an_overloaded_api_is_transient() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(529).set_body_json(api_error("overloaded_error", "Overloaded")),
    )
    .await;

    let error = provider(&server).chat(&hello()).await.unwrap_err();

    let ModelError::Transient { message, .. } = error else {
        panic!("expected a transient error, got {error:?}");
    };
    assert!(message.contains("529"), "{message}");
    assert!(message.contains("overloaded_error"), "{message}");
}

#[tokio::test]
async fn a_response_slower_than_the_timeout_is_transient() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(200)
            .set_body_json(text_message())
            .set_delay(Duration::from_secs(3)),
    )
    .await;
    let provider = Anthropic::new(Some(server.uri()), KEY, Duration::from_millis(200));

    let error = provider.chat(&hello()).await.unwrap_err();

    let ModelError::Transient { message, .. } = error else {
        panic!("expected a transient error, got {error:?}");
    };
    assert!(message.contains("timed out"), "{message}");
}

#[tokio::test]
async fn retrying_gets_past_a_server_error_to_the_answer() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(
            ResponseTemplate::new(500)
                .set_body_json(api_error("api_error", "Internal server error")),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    mount(
        &server,
        ResponseTemplate::new(200).set_body_json(text_message()),
    )
    .await;
    let model = Retrying::new(provider(&server)).with_policy(
        3,
        Duration::from_millis(1),
        Duration::from_millis(5),
    );

    let response = model.chat(&hello()).await.unwrap();

    assert_eq!(response.text.as_deref(), Some("Hi! My name is Claude."));
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[test]
fn an_unset_key_variable_is_a_permanent_error_naming_it() {
    let error = Anthropic::from_env(
        None,
        "HARNESS_TEST_SURELY_UNSET_ANTHROPIC_KEY",
        Duration::from_secs(1),
    )
    .unwrap_err();

    let ModelError::Permanent { message } = error else {
        panic!("expected a permanent error, got {error:?}");
    };
    assert!(
        message.contains("HARNESS_TEST_SURELY_UNSET_ANTHROPIC_KEY"),
        "{message}"
    );
}
