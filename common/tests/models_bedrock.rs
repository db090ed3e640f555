//! The Bedrock provider through the real `aws-sdk-bedrockruntime` client, its endpoint
//! pointed at a local wiremock server that replays Converse response shapes: a text
//! answer, a tool call, and the service's errors (403 AccessDeniedException, 400
//! ValidationException, 404 ResourceNotFoundException, 429 ThrottlingException and
//! ModelNotReadyException, 500, 503), a response slower than the read timeout and a
//! refused connection. The request the SDK put on the wire is read back from the mock.
//! ConverseStream's tests are in `models_bedrock/stream.rs`.

use std::time::Duration;

use aws_sdk_bedrockruntime::config::retry::RetryConfig;
use aws_sdk_bedrockruntime::config::timeout::TimeoutConfig;
use aws_sdk_bedrockruntime::config::{BehaviorVersion, Credentials, Region};
use common::models::bedrock::Bedrock;
use common::models::retry::Retrying;
use common::models::{
    ChatMessage, ChatRequest, ChatResponse, Model, ModelError, ToolCall, ToolSpec, Usage,
};
use serde_json::{json, Value};
use wiremock::matchers::{method, path_regex};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// ConverseStream: the same client against a loopback server that sends event-stream frames.
#[path = "models_bedrock/stream.rs"]
mod stream;

const MODEL: &str = "anthropic.claude-3-5-haiku-20241022-v1:0";
const ENCODED_PATH: &str = "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse";
const SECRET_KEY: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYSECRETKEY";
const CONVERSE: &str = r"^/model/[^/]+/converse$";

fn client(endpoint: &str, read_timeout: Duration) -> aws_sdk_bedrockruntime::Client {
    let config = aws_sdk_bedrockruntime::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .http_client(common::https::sdk_http_client())
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new(
            "AKIDEXAMPLE",
            SECRET_KEY,
            None,
            None,
            "static",
        ))
        .retry_config(RetryConfig::disabled())
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(2))
                .read_timeout(read_timeout)
                .build(),
        )
        .build();
    aws_sdk_bedrockruntime::Client::from_conf(config)
}

fn bedrock(server: &MockServer) -> Bedrock {
    Bedrock::new(client(&server.uri(), Duration::from_secs(10)))
}

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Current weather for a city".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer", "minimum": 1, "maximum": 14},
                "scale": {"type": "number", "default": 0.5},
                "units": {"enum": ["c", "f", null]}
            },
            "required": ["city"],
            "additionalProperties": false
        }),
    }
}

fn first_question() -> ChatRequest {
    ChatRequest {
        model: MODEL.into(),
        system: "You are a weather bot.".into(),
        messages: vec![ChatMessage::User {
            text: "Weather in Paris?".into(),
        }],
        tools: vec![weather_tool()],
        max_tokens: 512,
        turn: 0,
        purpose: Default::default(),
        task_id: String::new(),
    }
}

/// A conversation that already went through a tool round: two calls, one failed.
fn after_a_tool_round() -> ChatRequest {
    let mut request = first_question();
    request.messages.extend([
        ChatMessage::Assistant {
            text: Some("Let me look that up.".into()),
            tool_calls: vec![
                ToolCall {
                    id: "tooluse_aaa".into(),
                    name: "get_weather".into(),
                    arguments: json!({"city": "Paris", "days": 2}),
                },
                ToolCall {
                    id: "tooluse_bbb".into(),
                    name: "get_weather".into(),
                    arguments: json!({"city": "Lyon", "scale": 1.5, "units": null}),
                },
            ],
        },
        ChatMessage::Tool {
            call_id: "tooluse_aaa".into(),
            name: "get_weather".into(),
            content: "18°C, sunny".into(),
            is_error: false,
        },
        ChatMessage::Tool {
            call_id: "tooluse_bbb".into(),
            name: "get_weather".into(),
            content: "weather service unreachable".into(),
            is_error: true,
        },
    ]);
    request.turn = 1;
    request
}

fn text_answer() -> Value {
    json!({
        "output": {"message": {"role": "assistant", "content": [
            {"text": "It is 18°C and sunny in Paris."}
        ]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 412, "outputTokens": 15, "totalTokens": 427},
        "metrics": {"latencyMs": 731}
    })
}

fn tool_use_answer() -> Value {
    json!({
        "output": {"message": {"role": "assistant", "content": [
            {"text": "I'll check the weather."},
            {"toolUse": {
                "toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q",
                "name": "get_weather",
                "input": {
                    "city": "Paris",
                    "days": 3,
                    "offset": -2,
                    "scale": 0.5,
                    "whole": 2.0,
                    "tags": ["a", null, true],
                    "nested": {"empty": [], "flag": false}
                }
            }}
        ]}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 390, "outputTokens": 71, "totalTokens": 461},
        "metrics": {"latencyMs": 1204}
    })
}

fn json_response(status: u16, body: Value) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .insert_header("content-type", "application/json")
        .insert_header("x-amzn-requestid", "5ac1f4b3-0c0e-4b7e-9a55-1f0c1d2e3f40")
        .set_body_json(body)
}

fn aws_error(status: u16, error_type: &str, message: &str) -> ResponseTemplate {
    json_response(status, json!({"message": message})).insert_header(
        "x-amzn-errortype",
        format!("{error_type}:http://internal.amazon.com/coral/com.amazon.bedrock/").as_str(),
    )
}

async fn server_answering(response: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path_regex(CONVERSE))
        .respond_with(response)
        .mount(&server)
        .await;
    server
}

async fn only_request_body(server: &MockServer) -> Value {
    let requests = server.received_requests().await.expect("recording is on");
    assert_eq!(requests.len(), 1, "exactly one Converse call");
    assert_eq!(requests[0].url.path(), ENCODED_PATH);
    requests[0].body_json().expect("the SDK sends JSON")
}

async fn error_for(response: ResponseTemplate) -> ModelError {
    let server = server_answering(response).await;
    let error = bedrock(&server)
        .chat(&first_question())
        .await
        .expect_err("the call fails");
    assert_no_secret(&error);
    error
}

fn assert_no_secret(error: &ModelError) {
    let text = format!("{error} {error:?}");
    assert!(!text.contains(SECRET_KEY), "secret leaked: {text}");
}

fn expect_transient(error: ModelError) -> String {
    match error {
        ModelError::Transient { message, .. } => message,
        other => panic!("expected a transient error, got {other:?}"),
    }
}

fn expect_permanent(error: ModelError) -> String {
    match error {
        ModelError::Permanent { message } => message,
        other => panic!("expected a permanent error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_text_answer_comes_back_with_its_token_usage() {
    let server = server_answering(json_response(200, text_answer())).await;

    let response = bedrock(&server).chat(&first_question()).await.unwrap();

    assert_eq!(
        response,
        ChatResponse {
            text: Some("It is 18°C and sunny in Paris.".into()),
            tool_calls: vec![],
            usage: Usage {
                input_tokens: 412,
                output_tokens: 15
            },
            finish_reason: Some("end_turn".into()),
        }
    );
}

#[tokio::test]
async fn the_first_request_carries_model_system_prompt_question_tools_and_max_tokens() {
    let server = server_answering(json_response(200, text_answer())).await;

    bedrock(&server).chat(&first_question()).await.unwrap();

    let requests = server.received_requests().await.unwrap();
    let auth = requests[0]
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert!(
        auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
            && auth.contains("/us-east-1/bedrock/aws4_request"),
        "SigV4-signed for bedrock in us-east-1: {auth}"
    );
    let body = only_request_body(&server).await;
    assert_eq!(body["system"], json!([{"text": "You are a weather bot."}]));
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [{"text": "Weather in Paris?"}]}])
    );
    assert_eq!(
        body["toolConfig"],
        json!({"tools": [{"toolSpec": {
            "name": "get_weather",
            "description": "Current weather for a city",
            "inputSchema": {"json": weather_tool().parameters}
        }}]})
    );
    assert_eq!(body["inferenceConfig"], json!({"maxTokens": 512}));
}

#[tokio::test]
async fn a_prior_tool_round_is_sent_as_tool_use_then_one_user_message_of_tool_results() {
    let server = server_answering(json_response(200, text_answer())).await;

    bedrock(&server).chat(&after_a_tool_round()).await.unwrap();

    let body = only_request_body(&server).await;
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"text": "Weather in Paris?"}]},
            {"role": "assistant", "content": [
                {"text": "Let me look that up."},
                {"toolUse": {"toolUseId": "tooluse_aaa", "name": "get_weather",
                             "input": {"city": "Paris", "days": 2}}},
                {"toolUse": {"toolUseId": "tooluse_bbb", "name": "get_weather",
                             "input": {"city": "Lyon", "scale": 1.5, "units": null}}}
            ]},
            {"role": "user", "content": [
                {"toolResult": {"toolUseId": "tooluse_aaa",
                                "content": [{"text": "18°C, sunny"}]}},
                {"toolResult": {"toolUseId": "tooluse_bbb",
                                "content": [{"text": "weather service unreachable"}],
                                "status": "error"}}
            ]}
        ])
    );
}

#[tokio::test]
async fn a_user_message_after_tool_results_joins_their_user_message() {
    let server = server_answering(json_response(200, text_answer())).await;
    let mut request = after_a_tool_round();
    request.messages.push(ChatMessage::User {
        text: "Also, be brief.".into(),
    });

    bedrock(&server).chat(&request).await.unwrap();

    let body = only_request_body(&server).await;
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "roles alternate: {messages:?}");
    assert_eq!(
        messages[2]["content"][2],
        json!({"text": "Also, be brief."})
    );
}

#[tokio::test]
async fn without_tools_or_system_prompt_neither_is_sent() {
    let server = server_answering(json_response(200, text_answer())).await;
    let mut request = first_question();
    request.tools.clear();
    request.system.clear();

    bedrock(&server).chat(&request).await.unwrap();

    let body = only_request_body(&server).await;
    assert!(body.get("toolConfig").is_none(), "{body}");
    assert!(body.get("system").is_none(), "{body}");
}

#[tokio::test]
async fn a_tool_call_comes_back_with_its_id_name_and_json_arguments() {
    let server = server_answering(json_response(200, tool_use_answer())).await;

    let response = bedrock(&server).chat(&first_question()).await.unwrap();

    assert_eq!(response.text.as_deref(), Some("I'll check the weather."));
    assert_eq!(
        response.tool_calls,
        vec![ToolCall {
            id: "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q".into(),
            name: "get_weather".into(),
            arguments: json!({
                "city": "Paris",
                "days": 3,
                "offset": -2,
                "scale": 0.5,
                "whole": 2.0,
                "tags": ["a", null, true],
                "nested": {"empty": [], "flag": false}
            }),
        }]
    );
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 390,
            output_tokens: 71
        }
    );
}

#[tokio::test]
async fn access_denied_403_is_permanent_and_says_what_went_wrong() {
    let error = error_for(aws_error(
        403,
        "AccessDeniedException",
        "You don't have access to the model with the specified model ID.",
    ))
    .await;

    let message = expect_permanent(error);
    assert!(message.contains("AccessDeniedException"), "{message}");
    assert!(message.contains("403"), "{message}");
    assert!(message.contains(MODEL), "{message}");
    assert!(
        message.contains("You don't have access to the model"),
        "{message}"
    );
    assert!(message.contains("bedrock:InvokeModel"), "{message}");
}

#[tokio::test]
async fn validation_exception_400_is_permanent() {
    let error = error_for(aws_error(
        400,
        "ValidationException",
        "The model returned the following errors: messages.0.content: field required",
    ))
    .await;

    let message = expect_permanent(error);
    assert!(message.contains("ValidationException"), "{message}");
    assert!(message.contains("messages.0.content"), "{message}");
}

#[tokio::test]
async fn an_unknown_model_404_is_permanent() {
    let error = error_for(aws_error(
        404,
        "ResourceNotFoundException",
        "Model not found.",
    ))
    .await;

    let message = expect_permanent(error);
    assert!(message.contains("ResourceNotFoundException"), "{message}");
    assert!(message.contains("model id"), "{message}");
}

#[tokio::test]
async fn throttling_429_is_transient() {
    let error = error_for(aws_error(
        429,
        "ThrottlingException",
        "Too many requests, please wait before trying again.",
    ))
    .await;

    let message = expect_transient(error);
    assert!(message.contains("ThrottlingException"), "{message}");
    assert!(message.contains("429"), "{message}");
}

#[tokio::test]
async fn a_retry_after_header_is_passed_on() {
    let error = error_for(
        aws_error(429, "ThrottlingException", "Too many requests.")
            .insert_header("retry-after", "7"),
    )
    .await;

    assert!(matches!(
        error,
        ModelError::Transient {
            retry_after: Some(d),
            ..
        } if d == Duration::from_secs(7)
    ));
}

#[tokio::test]
async fn model_not_ready_is_transient() {
    let error = error_for(aws_error(
        429,
        "ModelNotReadyException",
        "Model is not ready for inference.",
    ))
    .await;

    expect_transient(error);
}

#[tokio::test]
async fn internal_server_error_500_is_transient() {
    let error = error_for(aws_error(
        500,
        "InternalServerException",
        "The server encountered an error processing your request.",
    ))
    .await;

    let message = expect_transient(error);
    assert!(message.contains("500"), "{message}");
}

#[tokio::test]
async fn a_bare_500_without_an_error_type_is_transient() {
    let error = error_for(ResponseTemplate::new(500)).await;

    let message = expect_transient(error);
    assert!(message.contains("500"), "{message}");
}

#[tokio::test]
async fn service_unavailable_503_is_transient() {
    let error = error_for(aws_error(
        503,
        "ServiceUnavailableException",
        "Service is temporarily unavailable.",
    ))
    .await;

    expect_transient(error);
}

#[tokio::test]
async fn an_unknown_4xx_is_permanent() {
    let error = error_for(aws_error(
        400,
        "ServiceQuotaExceededException",
        "Your request exceeds the service quota for your account.",
    ))
    .await;

    expect_permanent(error);
}

#[tokio::test]
async fn a_response_slower_than_the_read_timeout_is_transient() {
    let server =
        server_answering(json_response(200, text_answer()).set_delay(Duration::from_secs(5))).await;
    let model = Bedrock::new(client(&server.uri(), Duration::from_millis(200)));

    let started = std::time::Instant::now();
    let error = model.chat(&first_question()).await.unwrap_err();

    assert!(
        started.elapsed() < Duration::from_secs(4),
        "gave up in time"
    );
    assert_no_secret(&error);
    let message = expect_transient(error);
    assert!(
        message.contains("timed out") || message.contains("timeout"),
        "{message}"
    );
}

#[tokio::test]
async fn a_refused_connection_is_transient() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let model = Bedrock::new(client(
        &format!("http://127.0.0.1:{port}"),
        Duration::from_secs(2),
    ));

    let error = model.chat(&first_question()).await.unwrap_err();

    assert_no_secret(&error);
    expect_transient(error);
}

#[tokio::test]
async fn a_2xx_body_that_is_not_converse_json_is_an_error_not_a_panic() {
    let error = error_for(
        ResponseTemplate::new(200)
            .insert_header("content-type", "application/json")
            .set_body_string("{\"output\": "),
    )
    .await;

    let message = expect_permanent(error);
    assert!(message.contains("HTTP 200"), "{message}");
    assert!(message.contains("unexpected end"), "{message}");
}

#[tokio::test]
async fn retrying_gets_past_a_throttle() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path_regex(CONVERSE))
        .respond_with(aws_error(429, "ThrottlingException", "Too many requests."))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path_regex(CONVERSE))
        .respond_with(json_response(200, text_answer()))
        .with_priority(2)
        .mount(&server)
        .await;
    let model = Retrying::new(bedrock(&server)).with_policy(
        3,
        Duration::from_millis(10),
        Duration::from_millis(50),
    );

    let response = model.chat(&first_question()).await.unwrap();

    assert_eq!(
        response.text.as_deref(),
        Some("It is 18°C and sunny in Paris.")
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

/// The only test here that touches the environment; the others configure their clients
/// explicitly and never read it.
#[tokio::test]
async fn from_env_takes_credentials_region_and_endpoint_from_the_standard_chain() {
    let server = server_answering(json_response(200, text_answer())).await;
    for (name, value) in [
        ("AWS_ACCESS_KEY_ID", "AKIDFROMENV"),
        ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
        ("AWS_REGION", "eu-west-3"),
        ("AWS_ENDPOINT_URL", server.uri().as_str()),
        ("AWS_MAX_ATTEMPTS", "1"),
        ("AWS_EC2_METADATA_DISABLED", "true"),
        ("AWS_CONFIG_FILE", "/nonexistent/aws-config"),
        (
            "AWS_SHARED_CREDENTIALS_FILE",
            "/nonexistent/aws-credentials",
        ),
    ] {
        std::env::set_var(name, value);
    }

    let response = Bedrock::from_env().await.chat(&first_question()).await;

    assert_eq!(
        response.unwrap().text.as_deref(),
        Some("It is 18°C and sunny in Paris.")
    );
    let requests = server.received_requests().await.unwrap();
    let auth = requests[0]
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(
        auth.contains("Credential=AKIDFROMENV/") && auth.contains("/eu-west-3/bedrock/"),
        "{auth}"
    );
}
