//! Shared by the integration tests: a client for the test DynamoDB server and the
//! deployed table definition, and a harness whose agent is the LLM agent on a given model.
#![allow(dead_code)]

/// A client for the test DynamoDB server, or None when none is configured (then the
/// DynamoDB half is skipped, unless `HARNESS_TEST_REQUIRE_DYNAMODB` makes that an error).
pub fn dynamo_client() -> Option<aws_sdk_dynamodb::Client> {
    dynamo_config().map(|c| aws_sdk_dynamodb::Client::from_conf(c.build()))
}

/// The client configuration for the test server, to add to before building.
pub fn dynamo_config() -> Option<aws_sdk_dynamodb::config::Builder> {
    use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
    let Ok(endpoint) = std::env::var("HARNESS_TEST_DYNAMODB_ENDPOINT") else {
        assert!(
            std::env::var_os("HARNESS_TEST_REQUIRE_DYNAMODB").is_none(),
            "HARNESS_TEST_DYNAMODB_ENDPOINT is not set but DynamoDB tests are required"
        );
        eprintln!("skipped: set HARNESS_TEST_DYNAMODB_ENDPOINT (tests/run starts DynamoDB Local)");
        return None;
    };
    Some(
        aws_sdk_dynamodb::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .http_client(common::https::sdk_http_client())
            .endpoint_url(endpoint)
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("test", "test", None, None, "static")),
    )
}

/// The table `template.yaml` deploys: its `Properties` as JSON, which `tests/run`
/// extracts into the file named by `HARNESS_TEST_TABLE_DEFINITION`; without its stream,
/// which no test here reads and which DynamoDB Local makes every later write pay for
/// (`harness_e2e::fresh_table` says how much).
pub fn template_table() -> serde_json::Value {
    let path = std::env::var("HARNESS_TEST_TABLE_DEFINITION").expect(
        "HARNESS_TEST_TABLE_DEFINITION names the table definition taken from template.yaml",
    );
    let text = std::fs::read_to_string(&path).expect("table definition file");
    let mut table: serde_json::Value =
        serde_json::from_str(&text).expect("table definition is JSON");
    table
        .as_object_mut()
        .map(|t| t.remove("StreamSpecification"));
    table
}

/// A new table named uniquely, created from the deployed definition.
pub async fn fresh_table(client: &aws_sdk_dynamodb::Client) -> String {
    let table = format!("harness-test-{}", common::engine::transition::new_id());
    common::store::DynamoStore::create_table(client, &table, &template_table())
        .await
        .expect("create table");
    table
}

/// A harness over `store` whose agent is the LLM agent on `model` (the built-in tools,
/// the default prompt), with a push key so that webhooks may be set.
pub fn llm_harness(
    store: std::sync::Arc<dyn common::store::Store>,
    model: std::sync::Arc<dyn common::models::Model>,
) -> std::sync::Arc<common::ops::Harness> {
    use common::agent::{context::SystemPrompt, llm::LlmAgent, tools::ToolRegistry};
    let agent = LlmAgent::new(
        model,
        "scripted",
        ToolRegistry::builtin(),
        SystemPrompt::default(),
    );
    let config = common::config::Config {
        push_key: Some(common::sealing::PushKey::generate()),
        ..Default::default()
    };
    common::ops::Harness::new(store, std::sync::Arc::new(agent), config).expect("harness")
}

/// A new embedded store, and a DynamoDB store on a fresh table when the test server is
/// configured: what a test that must hold on both stores runs on.
pub async fn stores() -> Vec<std::sync::Arc<dyn common::store::Store>> {
    let mut stores = vec![embedded_store()];
    if let Some(client) = dynamo_client() {
        let table = fresh_table(&client).await;
        stores.push(std::sync::Arc::new(common::store::DynamoStore::new(
            client, table,
        )));
    }
    stores
}

/// Sends `send` as `caller` with SendStreamingMessage and reads its stream until `updates`
/// artifact updates have come (a model writing its answer); the task's id.
pub async fn streaming_until(
    h: &common::ops::Harness,
    send: common::a2a::SendMessageRequest,
    caller: &common::ops::Caller,
    updates: usize,
) -> String {
    use futures::StreamExt;
    let call = common::a2a::Call::SendStreamingMessage(send);
    let Ok(common::ops::Answer::Stream(mut stream)) = common::ops::execute(h, call, caller).await
    else {
        panic!("a stream");
    };
    let (mut id, mut seen) = (None, 0);
    while let Some(event) = stream.next().await {
        let event = event.expect("an event");
        if let Some(task) = &event.task {
            id = Some(task.id.clone());
        }
        seen += usize::from(event.artifact_update.is_some());
        if seen == updates {
            break;
        }
    }
    id.expect("the task first")
}

/// A new embedded store in a directory of its own.
pub fn embedded_store() -> std::sync::Arc<dyn common::store::Store> {
    let id = common::engine::transition::new_id();
    let dir = std::env::temp_dir().join(format!("harness-test-{id}"));
    std::sync::Arc::new(common::store::EmbeddedStore::open(&dir).expect("store"))
}
