//! Golden-JSON tests for the A2A 1.0 protocol types (spec `a2a-1.0.md` §1.4 and §3).
//!
//! Every fixture pair in `tests/golden/` is `<name>.lenient.json` (what a client may send:
//! snake_case names, integer enums, `null` for absent, unknown keys such as `kind` and
//! `final`, timestamps with 0/6/9 fraction digits or UTC offsets) and `<name>.strict.json`
//! (what the server must print: camelCase, defaults omitted, no extra keys, timestamps as
//! UTC with exactly three fraction digits and `Z`). For each pair the lenient input must
//! parse and re-serialise to exactly the strict golden, and the strict golden must
//! round-trip unchanged.
//!
//! Tests assert the spec's behaviour, not the implementation's: a failure here is a spec
//! deviation in `common::a2a`, not a wrong fixture.

use std::collections::BTreeSet;
use std::path::PathBuf;

use common::a2a::validate;
use common::a2a::*;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn fixture(file: &str) -> Value {
    let path = golden_dir().join(file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read fixture {}: {e}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("fixture {} is not JSON: {e}", path.display()))
}

fn parse<T: DeserializeOwned>(v: &Value, what: &str) -> T {
    serde_json::from_value(v.clone())
        .unwrap_or_else(|e| panic!("{what} must parse as {}: {e}", std::any::type_name::<T>()))
}

fn print<T: Serialize>(t: &T) -> Value {
    serde_json::to_value(t).expect("serialisation cannot fail")
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap()
}

/// Parses `input` as `T` and prints it again.
fn reprint<T: DeserializeOwned + Serialize>(input: Value) -> Value {
    print(&parse::<T>(&input, &format!("input {input}")))
}

fn assert_json_eq(actual: &Value, expected: &Value, context: &str) {
    assert!(
        actual == expected,
        "{context}\n--- expected ---\n{}\n--- actual ---\n{}",
        pretty(expected),
        pretty(actual)
    );
}

/// Keys whose value is a free-form `google.protobuf.Struct`/`Value`: not checked for shape.
const FREE_FORM_KEYS: &[&str] = &["metadata", "data", "params", "header"];
/// Keys whose value is a proto `map<string, …>`: its keys are user names, its values typed.
const MAP_KEYS: &[&str] = &["scopes", "schemes", "securitySchemes"];
/// Keys that 0.3 or drafts printed and the 1.0 proto does not have.
const FORBIDDEN_KEYS: &[&str] = &["kind", "final", "index"];
const TIMESTAMP_KEYS: &[&str] = &["timestamp", "statusTimestampAfter"];

fn is_lower_camel(key: &str) -> bool {
    let mut chars = key.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_alphanumeric())
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`, exactly.
fn is_utc_millis(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 24
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'.',
            23 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

/// Strict ProtoJSON output: camelCase keys, no `null`, no 0.3 keys, canonical timestamps.
fn strict_shape_violations(v: &Value) -> Vec<String> {
    fn walk(v: &Value, path: &str, keys_are_names: bool, out: &mut Vec<String>) {
        match v {
            Value::Null => out.push(format!("{path}: null is printed")),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, &format!("{path}[{i}]"), false, out);
                }
            }
            Value::Object(map) => {
                for (k, child) in map {
                    let p = format!("{path}.{k}");
                    if !keys_are_names {
                        if FORBIDDEN_KEYS.contains(&k.as_str()) {
                            out.push(format!("{p}: key not in the 1.0 proto"));
                        }
                        if !is_lower_camel(k) {
                            out.push(format!("{p}: key is not lowerCamelCase"));
                        }
                        if TIMESTAMP_KEYS.contains(&k.as_str())
                            && !child.as_str().is_some_and(is_utc_millis)
                        {
                            out.push(format!("{p}: {child} is not UTC with 3 fraction digits"));
                        }
                        if FREE_FORM_KEYS.contains(&k.as_str()) {
                            continue;
                        }
                    }
                    walk(
                        child,
                        &p,
                        !keys_are_names && MAP_KEYS.contains(&k.as_str()),
                        out,
                    );
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, "$", false, &mut out);
    out
}

type Fixup<T> = fn(&mut T) -> Result<(), A2aError>;

fn no_fixup<T>(_: &mut T) -> Result<(), A2aError> {
    Ok(())
}

/// The server validates parts before use; validation also normalises `raw`.
fn validate_part(p: &mut Part) -> Result<(), A2aError> {
    validate::part(p, "part")
}

fn validate_stream_response(r: &mut StreamResponse) -> Result<(), A2aError> {
    validate::stream_response(r)
}

fn assert_lenient_prints_strict<T: DeserializeOwned + Serialize>(stem: &str, fixup: Fixup<T>) {
    let lenient = fixture(&format!("{stem}.lenient.json"));
    let strict = fixture(&format!("{stem}.strict.json"));
    assert_ne!(
        lenient, strict,
        "{stem}.lenient.json must exercise some leniency, it equals the strict golden"
    );
    let violations = strict_shape_violations(&strict);
    assert!(
        violations.is_empty(),
        "{stem}.strict.json is not strict ProtoJSON: {violations:#?}"
    );
    let mut value: T = parse(&lenient, &format!("{stem}.lenient.json"));
    fixup(&mut value).unwrap_or_else(|e| panic!("{stem}.lenient.json must validate: {e}"));
    assert_json_eq(
        &print(&value),
        &strict,
        &format!("{stem}.lenient.json re-serialised must equal {stem}.strict.json"),
    );
}

fn assert_strict_round_trips<T: DeserializeOwned + Serialize>(stem: &str, fixup: Fixup<T>) {
    let strict = fixture(&format!("{stem}.strict.json"));
    let mut value: T = parse(&strict, &format!("{stem}.strict.json"));
    fixup(&mut value).unwrap_or_else(|e| panic!("{stem}.strict.json must validate: {e}"));
    assert_json_eq(
        &print(&value),
        &strict,
        &format!("{stem}.strict.json must round-trip unchanged"),
    );
}

/// One module per fixture pair, each with the two golden tests, plus the list of stems.
macro_rules! goldens {
    ($($module:ident: $ty:ty = $stem:literal $(, $fixup:expr)?;)+) => {
        const GOLDEN_STEMS: &[&str] = &[$($stem),+];
        $(
            mod $module {
                use super::*;

                #[test]
                fn snake_case_integer_enums_nulls_and_unknown_keys_are_read_and_printed_as_the_strict_golden() {
                    assert_lenient_prints_strict::<$ty>($stem, goldens!(@fixup $ty $(, $fixup)?));
                }

                #[test]
                fn strict_golden_round_trips_unchanged() {
                    assert_strict_round_trips::<$ty>($stem, goldens!(@fixup $ty $(, $fixup)?));
                }
            }
        )+
    };
    (@fixup $ty:ty) => { no_fixup::<$ty> };
    (@fixup $ty:ty, $fixup:expr) => { $fixup };
}

goldens! {
    task: Task = "task";
    task_status: TaskStatus = "task_status";
    task_state: Vec<TaskState> = "task_state";
    role: Vec<Role> = "role";
    message: Message = "message";
    part_text: Part = "part_text", validate_part;
    part_raw: Part = "part_raw", validate_part;
    part_url: Part = "part_url", validate_part;
    part_data: Part = "part_data", validate_part;
    artifact: Artifact = "artifact";
    task_status_update_event: TaskStatusUpdateEvent = "task_status_update_event";
    task_artifact_update_event: TaskArtifactUpdateEvent = "task_artifact_update_event";
    stream_response_task: StreamResponse = "stream_response_task", validate_stream_response;
    stream_response_message: StreamResponse = "stream_response_message", validate_stream_response;
    stream_response_status_update: StreamResponse = "stream_response_status_update", validate_stream_response;
    stream_response_artifact_update: StreamResponse = "stream_response_artifact_update", validate_stream_response;
    send_message_request: SendMessageRequest = "send_message_request";
    send_message_configuration: SendMessageConfiguration = "send_message_configuration";
    send_message_response_task: SendMessageResponse = "send_message_response_task";
    send_message_response_message: SendMessageResponse = "send_message_response_message";
    get_task_request: GetTaskRequest = "get_task_request";
    list_tasks_request: ListTasksRequest = "list_tasks_request";
    list_tasks_response: ListTasksResponse = "list_tasks_response";
    list_tasks_response_empty: ListTasksResponse = "list_tasks_response_empty";
    cancel_task_request: CancelTaskRequest = "cancel_task_request";
    subscribe_to_task_request: SubscribeToTaskRequest = "subscribe_to_task_request";
    task_push_notification_config: TaskPushNotificationConfig = "task_push_notification_config";
    authentication_info: AuthenticationInfo = "authentication_info";
    get_task_push_notification_config_request: GetTaskPushNotificationConfigRequest = "get_task_push_notification_config_request";
    delete_task_push_notification_config_request: DeleteTaskPushNotificationConfigRequest = "delete_task_push_notification_config_request";
    list_task_push_notification_configs_request: ListTaskPushNotificationConfigsRequest = "list_task_push_notification_configs_request";
    list_task_push_notification_configs_response: ListTaskPushNotificationConfigsResponse = "list_task_push_notification_configs_response";
    list_task_push_notification_configs_response_empty: ListTaskPushNotificationConfigsResponse = "list_task_push_notification_configs_response_empty";
    get_extended_agent_card_request: GetExtendedAgentCardRequest = "get_extended_agent_card_request";
    agent_card: AgentCard = "agent_card";
    agent_interface: AgentInterface = "agent_interface";
    agent_provider: AgentProvider = "agent_provider";
    agent_capabilities: AgentCapabilities = "agent_capabilities";
    agent_capabilities_unset: AgentCapabilities = "agent_capabilities_unset";
    agent_extension: AgentExtension = "agent_extension";
    agent_skill: AgentSkill = "agent_skill";
    security_requirement: SecurityRequirement = "security_requirement";
    agent_card_signature: AgentCardSignature = "agent_card_signature";
    security_scheme_api_key: SecurityScheme = "security_scheme_api_key";
    security_scheme_http_auth: SecurityScheme = "security_scheme_http_auth";
    security_scheme_oauth2: SecurityScheme = "security_scheme_oauth2";
    security_scheme_open_id_connect: SecurityScheme = "security_scheme_open_id_connect";
    security_scheme_mtls: SecurityScheme = "security_scheme_mtls";
    oauth_flows_authorization_code: OAuthFlows = "oauth_flows_authorization_code";
    oauth_flows_client_credentials: OAuthFlows = "oauth_flows_client_credentials";
    oauth_flows_device_code: OAuthFlows = "oauth_flows_device_code";
    oauth_flows_implicit: OAuthFlows = "oauth_flows_implicit";
    oauth_flows_password: OAuthFlows = "oauth_flows_password";
}

#[test]
fn every_fixture_is_a_lenient_and_strict_pair_checked_by_a_golden_test() {
    let mut on_disk = BTreeSet::new();
    for entry in std::fs::read_dir(golden_dir()).expect("tests/golden exists") {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let stem = name
            .strip_suffix(".lenient.json")
            .or_else(|| name.strip_suffix(".strict.json"))
            .unwrap_or_else(|| {
                panic!("{name}: fixtures are <name>.lenient.json or <name>.strict.json")
            });
        on_disk.insert(stem.to_string());
    }
    let tested: BTreeSet<String> = GOLDEN_STEMS.iter().map(|s| s.to_string()).collect();
    assert_eq!(tested.len(), GOLDEN_STEMS.len(), "a stem is listed twice");
    assert_eq!(on_disk, tested, "fixtures on disk and golden tests differ");
    for stem in GOLDEN_STEMS {
        for kind in ["lenient", "strict"] {
            assert!(
                golden_dir().join(format!("{stem}.{kind}.json")).is_file(),
                "{stem}.{kind}.json is missing"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// lenient input
// ---------------------------------------------------------------------------------------

#[test]
fn timestamps_with_any_fraction_or_offset_are_printed_as_utc_with_exactly_three_fraction_digits() {
    let cases = [
        ("2025-10-28T10:30:00Z", "2025-10-28T10:30:00.000Z"),
        ("2025-10-28T10:30:00.1Z", "2025-10-28T10:30:00.100Z"),
        ("2025-10-28T10:30:00.123Z", "2025-10-28T10:30:00.123Z"),
        ("2025-10-28T10:30:00.123456Z", "2025-10-28T10:30:00.123Z"),
        ("2025-10-28T10:30:00.123456789Z", "2025-10-28T10:30:00.123Z"),
        ("2025-10-28T12:30:00+02:00", "2025-10-28T10:30:00.000Z"),
        ("2025-10-28T05:30:00.250-05:00", "2025-10-28T10:30:00.250Z"),
        (
            "2025-10-28T10:30:00.000000+00:00",
            "2025-10-28T10:30:00.000Z",
        ),
        (
            "2025-10-29T00:30:00.999999999+14:00",
            "2025-10-28T10:30:00.999Z",
        ),
    ];
    for (input, expected) in cases {
        let printed = reprint::<TaskStatus>(json!({"state": 1, "timestamp": input}));
        assert_eq!(
            printed["timestamp"],
            json!(expected),
            "timestamp {input} must print as {expected}"
        );
        let printed = reprint::<ListTasksRequest>(json!({"status_timestamp_after": input}));
        assert_eq!(printed["statusTimestampAfter"], json!(expected), "{input}");
    }
}

#[test]
fn malformed_timestamps_are_rejected() {
    for bad in [
        json!("2025-10-28"),
        json!("2025-10-28T10:30:00"),
        json!("yesterday"),
        json!(1730111400),
        json!(""),
    ] {
        let r = serde_json::from_value::<TaskStatus>(json!({"state": 1, "timestamp": bad}));
        assert!(r.is_err(), "timestamp {bad} must be rejected, got {r:?}");
    }
}

#[test]
fn enums_are_read_from_names_or_integers_and_printed_as_names() {
    for state in TaskState::ALL {
        let by_number = reprint::<TaskStatus>(json!({"state": state.number()}));
        let by_name = reprint::<TaskStatus>(json!({"state": state.as_str()}));
        assert_eq!(by_number, by_name, "{state:?}");
        if *state != TaskState::Unspecified {
            assert_eq!(by_name, json!({"state": state.as_str()}));
        }
    }
    for role in Role::ALL {
        let by_number = reprint::<Message>(json!({"role": role.number()}));
        let by_name = reprint::<Message>(json!({"role": role.as_str()}));
        assert_eq!(by_number, by_name, "{role:?}");
    }
    assert_eq!(
        reprint::<ListTasksRequest>(json!({"status": 7})),
        json!({"status": "TASK_STATE_REJECTED"})
    );
}

#[test]
fn unknown_enum_names_and_numbers_are_an_error() {
    let bad_states = [
        json!("TASK_STATE_UNKNOWN"),
        json!("working"),
        json!("completed"),
        json!("input-required"),
        json!("task_state_working"),
        json!(""),
        json!(9),
        json!(-1),
        json!(2.5),
        json!(true),
        json!({"state": 2}),
    ];
    for bad in &bad_states {
        let r = serde_json::from_value::<TaskStatus>(json!({"state": bad}));
        assert!(
            r.is_err(),
            "TaskStatus.state {bad} must be rejected, got {r:?}"
        );
        let r = serde_json::from_value::<ListTasksRequest>(json!({"status": bad}));
        assert!(
            r.is_err(),
            "ListTasksRequest.status {bad} must be rejected, got {r:?}"
        );
        let r = serde_json::from_value::<Task>(json!({"id": "t", "status": {"state": bad}}));
        assert!(
            r.is_err(),
            "Task.status.state {bad} must be rejected, got {r:?}"
        );
    }
    for bad in [
        json!("user"),
        json!("agent"),
        json!("ROLE_SYSTEM"),
        json!(3),
    ] {
        let r = serde_json::from_value::<Message>(json!({"messageId": "m", "role": bad}));
        assert!(r.is_err(), "Message.role {bad} must be rejected, got {r:?}");
        let r = serde_json::from_value::<StreamResponse>(
            json!({"message": {"messageId": "m", "role": bad, "parts": [{"text": "x"}]}}),
        );
        assert!(
            r.is_err(),
            "nested Message.role {bad} must be rejected, got {r:?}"
        );
    }
}

#[test]
fn null_is_read_as_absent_for_every_kind_of_field() {
    let input = json!({
        "id": null, "context_id": null, "status": null, "artifacts": null,
        "history": null, "metadata": null
    });
    let task: Task = parse(&input, "task with nulls");
    assert_eq!(task, Task::default());

    let input = json!({
        "message_id": null, "context_id": null, "task_id": null, "role": null,
        "parts": null, "metadata": null, "extensions": null, "reference_task_ids": null
    });
    assert_eq!(
        parse::<Message>(&input, "message with nulls"),
        Message::default()
    );

    let input = json!({
        "tenant": null, "context_id": null, "status": null, "page_size": null, "page_token": null,
        "history_length": null, "status_timestamp_after": null, "include_artifacts": null
    });
    assert_eq!(
        parse::<ListTasksRequest>(&input, "list tasks request with nulls"),
        ListTasksRequest::default()
    );

    let input = json!({"streaming": null, "push_notifications": null, "extensions": null, "extended_agent_card": null});
    assert_eq!(
        parse::<AgentCapabilities>(&input, "capabilities with nulls"),
        AgentCapabilities::default()
    );
}

#[test]
fn camel_case_and_snake_case_names_are_read_alike() {
    let snake = json!({
        "message_id": "m", "context_id": "c", "task_id": "t", "role": 1,
        "parts": [{"text": "x", "media_type": "text/plain"}], "reference_task_ids": ["r"]
    });
    let camel = json!({
        "messageId": "m", "contextId": "c", "taskId": "t", "role": "ROLE_USER",
        "parts": [{"text": "x", "mediaType": "text/plain"}], "referenceTaskIds": ["r"]
    });
    assert_eq!(
        parse::<Message>(&snake, "snake"),
        parse::<Message>(&camel, "camel")
    );

    let snake = json!({
        "tenant": "t", "context_id": "c", "page_size": 5, "page_token": "p", "history_length": 1,
        "status_timestamp_after": "2025-10-28T10:30:00Z", "include_artifacts": true
    });
    let camel = json!({
        "tenant": "t", "contextId": "c", "pageSize": 5, "pageToken": "p", "historyLength": 1,
        "statusTimestampAfter": "2025-10-28T10:30:00.000Z", "includeArtifacts": true
    });
    assert_eq!(
        parse::<ListTasksRequest>(&snake, "snake"),
        parse::<ListTasksRequest>(&camel, "camel")
    );
}

#[test]
fn push_notification_config_alias_is_read_as_task_push_notification_config() {
    let expected = json!({"taskPushNotificationConfig": {"url": "https://hook.example/cb"}});
    for key in [
        "taskPushNotificationConfig",
        "task_push_notification_config",
        "pushNotificationConfig",
        "push_notification_config",
    ] {
        let input = json!({ key: {"url": "https://hook.example/cb"} });
        assert_json_eq(
            &reprint::<SendMessageConfiguration>(input),
            &expected,
            &format!("SendMessageConfiguration.{key}"),
        );
    }
}

#[test]
fn rc_blocking_flag_is_read_but_never_printed() {
    let config: SendMessageConfiguration = parse(&json!({"blocking": false}), "rc config");
    assert!(
        config.returns_immediately(),
        "blocking=false means return immediately"
    );
    assert!(print(&config).get("blocking").is_none());

    let config: SendMessageConfiguration = parse(&json!({"blocking": true}), "rc config");
    assert!(!config.returns_immediately());
    assert_json_eq(&print(&config), &json!({}), "blocking is not a 1.0 field");
}

#[test]
fn unknown_keys_from_0_3_payloads_are_ignored_and_not_printed() {
    let event = json!({
        "kind": "status-update", "final": true, "taskId": "t", "contextId": "c",
        "status": {"state": "TASK_STATE_COMPLETED"}, "metadata": null
    });
    assert_json_eq(
        &reprint::<TaskStatusUpdateEvent>(event),
        &json!({"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}),
        "kind and final are dropped",
    );
    let event = json!({
        "kind": "artifact-update", "index": 0, "taskId": "t", "contextId": "c",
        "artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": "x"}]}
    });
    assert_json_eq(
        &reprint::<TaskArtifactUpdateEvent>(event),
        &json!({"taskId": "t", "contextId": "c", "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}}),
        "kind and index are dropped",
    );
}

// ---------------------------------------------------------------------------------------
// strict output
// ---------------------------------------------------------------------------------------

/// Each input sets every non-required field to its default value (explicitly, in
/// snake_case); none of them may be printed.
#[test]
fn default_values_are_omitted_from_output() {
    fn check<T: DeserializeOwned + Serialize>(input: Value, expected: Value) {
        let name = std::any::type_name::<T>();
        assert_json_eq(
            &reprint::<T>(input),
            &expected,
            &format!("{name}: defaults must be omitted"),
        );
    }
    check::<Task>(
        json!({"id": "t", "context_id": "c", "status": {"state": 0, "message": null},
               "history": [], "metadata": {}}),
        json!({"id": "t", "contextId": "c", "status": {}}),
    );
    check::<TaskStatus>(
        json!({"state": 0, "message": null, "timestamp": null}),
        json!({}),
    );
    check::<Message>(
        json!({"message_id": "", "context_id": "", "task_id": "", "role": 0, "parts": [],
               "metadata": {}, "extensions": [], "reference_task_ids": []}),
        json!({}),
    );
    check::<Part>(
        json!({"text": "x", "filename": "", "media_type": "", "metadata": {}}),
        json!({"text": "x"}),
    );
    check::<Artifact>(
        json!({"artifact_id": "", "name": "", "description": "", "parts": [],
               "metadata": {}, "extensions": []}),
        json!({}),
    );
    check::<TaskStatusUpdateEvent>(
        json!({"task_id": "", "context_id": "", "status": {"state": 0}, "metadata": {}}),
        json!({"status": {}}),
    );
    check::<TaskArtifactUpdateEvent>(
        json!({"task_id": "", "context_id": "", "artifact": {"parts": []}, "append": false,
               "last_chunk": false, "metadata": {}}),
        json!({"artifact": {}}),
    );
    check::<StreamResponse>(
        json!({"status_update": {"task_id": "", "status": {"state": 0}}}),
        json!({"statusUpdate": {"status": {}}}),
    );
    check::<SendMessageConfiguration>(
        json!({"accepted_output_modes": [], "return_immediately": false}),
        json!({}),
    );
    check::<SendMessageRequest>(
        json!({"tenant": "", "message": {"role": 0}, "metadata": {}}),
        json!({"message": {}}),
    );
    check::<SendMessageResponse>(
        json!({"task": {"id": "", "context_id": "c", "status": {}}, "message": null}),
        json!({"task": {"contextId": "c", "status": {}}}),
    );
    check::<GetTaskRequest>(json!({"tenant": "", "id": ""}), json!({}));
    check::<ListTasksRequest>(
        json!({"tenant": "", "context_id": "", "page_token": ""}),
        json!({}),
    );
    check::<CancelTaskRequest>(json!({"tenant": "", "id": "", "metadata": {}}), json!({}));
    check::<SubscribeToTaskRequest>(json!({"tenant": "", "id": ""}), json!({}));
    check::<TaskPushNotificationConfig>(
        json!({"tenant": "", "id": "", "task_id": "", "url": "", "token": ""}),
        json!({}),
    );
    check::<AuthenticationInfo>(json!({"scheme": "", "credentials": ""}), json!({}));
    check::<GetTaskPushNotificationConfigRequest>(
        json!({"tenant": "", "task_id": "", "id": ""}),
        json!({}),
    );
    check::<DeleteTaskPushNotificationConfigRequest>(
        json!({"tenant": "", "task_id": "", "id": ""}),
        json!({}),
    );
    check::<ListTaskPushNotificationConfigsRequest>(
        json!({"tenant": "", "task_id": "", "page_token": ""}),
        json!({}),
    );
    check::<GetExtendedAgentCardRequest>(json!({"tenant": ""}), json!({}));
    check::<AgentCapabilities>(json!({"extensions": []}), json!({}));
    check::<AgentExtension>(
        json!({"uri": "", "description": "", "required": false, "params": {}}),
        json!({}),
    );
    check::<AgentInterface>(
        json!({"url": "u", "protocol_binding": "JSONRPC", "protocol_version": "1.0", "tenant": ""}),
        json!({"url": "u", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}),
    );
    check::<AgentSkill>(
        json!({"id": "s", "name": "n", "description": "d", "tags": ["t"], "examples": [],
               "input_modes": [], "output_modes": [], "security_requirements": []}),
        json!({"id": "s", "name": "n", "description": "d", "tags": ["t"]}),
    );
    check::<AgentCard>(
        json!({
            "name": "n", "description": "d", "version": "1",
            "supported_interfaces": [{"url": "u", "protocol_binding": "JSONRPC", "protocol_version": "1.0"}],
            "provider": null, "documentation_url": null, "icon_url": null,
            "capabilities": {}, "security_schemes": {}, "security_requirements": [],
            "default_input_modes": ["text/plain"], "default_output_modes": ["text/plain"],
            "skills": [{"id": "s", "name": "n", "description": "d", "tags": ["t"]}],
            "signatures": []
        }),
        json!({
            "name": "n", "description": "d", "version": "1",
            "supportedInterfaces": [{"url": "u", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "s", "name": "n", "description": "d", "tags": ["t"]}]
        }),
    );
    check::<SecurityScheme>(
        json!({"http_auth_security_scheme": {"description": "", "scheme": "Basic", "bearer_format": ""}}),
        json!({"httpAuthSecurityScheme": {"scheme": "Basic"}}),
    );
    check::<SecurityScheme>(
        json!({"api_key_security_scheme": {"description": "", "location": "query", "name": "k"}}),
        json!({"apiKeySecurityScheme": {"location": "query", "name": "k"}}),
    );
    check::<SecurityScheme>(
        json!({"open_id_connect_security_scheme": {"description": "", "open_id_connect_url": "u"}}),
        json!({"openIdConnectSecurityScheme": {"openIdConnectUrl": "u"}}),
    );
    check::<SecurityScheme>(
        json!({"oauth2_security_scheme": {"description": "", "oauth2_metadata_url": "",
               "flows": {"client_credentials": {"token_url": "t", "refresh_url": "", "scopes": {}}}}}),
        json!({"oauth2SecurityScheme": {"flows": {"clientCredentials": {"tokenUrl": "t", "scopes": {}}}}}),
    );
    check::<StringList>(json!({"list": []}), json!({}));
    check::<AgentCardSignature>(
        json!({"protected": "p", "signature": "s", "header": {}}),
        json!({"protected": "p", "signature": "s"}),
    );
}

#[test]
fn absent_messages_are_omitted_rather_than_printed_as_null() {
    let mut offenders = Vec::new();
    let mut check = |name: &str, v: Value| {
        let nulls: Vec<_> = strict_shape_violations(&v)
            .into_iter()
            .filter(|s| s.ends_with("null is printed"))
            .collect();
        if !nulls.is_empty() {
            offenders.push(format!("{name} printed as {v}: {nulls:?}"));
        }
    };
    check("Task::default()", print(&Task::default()));
    check("TaskStatus::default()", print(&TaskStatus::default()));
    check("Message::default()", print(&Message::default()));
    check("Part::default()", print(&Part::default()));
    check("Artifact::default()", print(&Artifact::default()));
    check(
        "TaskStatusUpdateEvent::default()",
        print(&TaskStatusUpdateEvent::default()),
    );
    check(
        "TaskArtifactUpdateEvent::default()",
        print(&TaskArtifactUpdateEvent::default()),
    );
    check(
        "StreamResponse::default()",
        print(&StreamResponse::default()),
    );
    check(
        "SendMessageRequest::default()",
        print(&SendMessageRequest::default()),
    );
    check(
        "SendMessageConfiguration::default()",
        print(&SendMessageConfiguration::default()),
    );
    check(
        "SendMessageResponse::default()",
        print(&SendMessageResponse::default()),
    );
    check(
        "ListTasksRequest::default()",
        print(&ListTasksRequest::default()),
    );
    check(
        "ListTasksResponse::default()",
        print(&ListTasksResponse::default()),
    );
    check(
        "TaskPushNotificationConfig::default()",
        print(&TaskPushNotificationConfig::default()),
    );
    check("AgentCard::default()", print(&AgentCard::default()));
    check(
        "AgentCapabilities::default()",
        print(&AgentCapabilities::default()),
    );
    check(
        "AgentExtension::default()",
        print(&AgentExtension::default()),
    );
    check(
        "SecurityScheme::default()",
        print(&SecurityScheme::default()),
    );
    check(
        "OAuth2SecurityScheme::default()",
        print(&OAuth2SecurityScheme::default()),
    );
    check("OAuthFlows::default()", print(&OAuthFlows::default()));
    check("OAuthFlow::default()", print(&OAuthFlow::default()));
    check(
        "AgentCardSignature::default()",
        print(&AgentCardSignature::default()),
    );
    // The same, reached from lenient input that leaves the message out.
    check(
        "Task parsed from {\"id\":\"t\",\"context_id\":\"c\"}",
        reprint::<Task>(json!({"id": "t", "context_id": "c"})),
    );
    check(
        "SendMessageRequest parsed from {\"tenant\":\"t\"}",
        reprint::<SendMessageRequest>(json!({"tenant": "t"})),
    );
    assert!(
        offenders.is_empty(),
        "unset fields printed as null:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn an_empty_artifacts_list_is_omitted_from_a_task() {
    // ProtoJSON omits an empty repeated field; ListTasks (§3.3) requires the key to be
    // absent, "not [], not null", when artifacts are not included.
    let printed = reprint::<Task>(json!({
        "id": "t", "context_id": "c", "status": {"state": 3}, "artifacts": []
    }));
    assert_json_eq(
        &printed,
        &json!({"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_COMPLETED"}}),
        "Task.artifacts = [] must not be printed",
    );
    let task = Task {
        id: "t".into(),
        context_id: "c".into(),
        artifacts: vec![],
        ..Default::default()
    };
    assert!(
        print(&task).get("artifacts").is_none(),
        "Task{{artifacts: []}} prints {}",
        print(&task)
    );
}

#[test]
fn an_empty_task_context_id_is_omitted_like_any_default_string() {
    // `string context_id = 2;` is neither REQUIRED nor `optional` in the proto, so ProtoJSON
    // (§3.1) omits "". (§3.2 "always emit contextId" asks the server to fill it in.)
    for input in [
        json!({"id": "t", "status": {"state": 1}}),
        json!({"id": "t", "context_id": "", "status": {"state": 1}}),
        json!({"id": "t", "contextId": null, "status": {"state": 1}}),
    ] {
        assert_json_eq(
            &reprint::<Task>(input.clone()),
            &json!({"id": "t", "status": {"state": "TASK_STATE_SUBMITTED"}}),
            &format!("Task {input} must not print contextId"),
        );
    }
}

#[test]
fn an_unspecified_status_filter_is_omitted_from_list_tasks_request() {
    // `TaskState status = 3;` is not `optional` in the proto, so its zero value is a default.
    for input in [
        json!({"status": 0}),
        json!({"status": "TASK_STATE_UNSPECIFIED"}),
    ] {
        assert_json_eq(
            &reprint::<ListTasksRequest>(input.clone()),
            &json!({}),
            &format!("ListTasksRequest {input} must print as {{}}"),
        );
    }
}

#[test]
fn pkce_required_false_is_omitted_because_it_is_not_an_optional_proto_field() {
    // `bool pkce_required = 5;` in AuthorizationCodeOAuthFlow: false is the default.
    let input = json!({"authorization_code": {
        "authorization_url": "https://auth.example/authorize",
        "token_url": "https://auth.example/token",
        "scopes": {"read": "Read"},
        "pkce_required": false
    }});
    assert_json_eq(
        &reprint::<OAuthFlows>(input),
        &json!({"authorizationCode": {
            "authorizationUrl": "https://auth.example/authorize",
            "tokenUrl": "https://auth.example/token",
            "scopes": {"read": "Read"}
        }}),
        "pkceRequired: false must not be printed",
    );
}

#[test]
fn optional_proto_fields_are_printed_when_set_even_to_their_default() {
    assert_json_eq(
        &reprint::<GetTaskRequest>(json!({"id": "t", "history_length": 0})),
        &json!({"id": "t", "historyLength": 0}),
        "GetTaskRequest.historyLength",
    );
    assert_json_eq(
        &reprint::<SendMessageConfiguration>(json!({"history_length": 0})),
        &json!({"historyLength": 0}),
        "SendMessageConfiguration.historyLength",
    );
    assert_json_eq(
        &reprint::<ListTasksRequest>(
            json!({"page_size": 0, "history_length": 0, "include_artifacts": false}),
        ),
        &json!({"pageSize": 0, "historyLength": 0, "includeArtifacts": false}),
        "ListTasksRequest optional fields",
    );
    assert_json_eq(
        &reprint::<AgentCapabilities>(
            json!({"streaming": false, "push_notifications": false, "extended_agent_card": false}),
        ),
        &json!({"streaming": false, "pushNotifications": false, "extendedAgentCard": false}),
        "AgentCapabilities optional bools",
    );
    let card = reprint::<AgentCard>(json!({"documentation_url": "", "icon_url": ""}));
    assert_eq!(card["documentationUrl"], json!(""));
    assert_eq!(card["iconUrl"], json!(""));
}

#[test]
fn agent_capabilities_print_set_bools_even_when_false_and_omit_unset_ones() {
    let caps = AgentCapabilities {
        streaming: Some(false),
        push_notifications: None,
        extended_agent_card: Some(true),
        ..Default::default()
    };
    assert_json_eq(
        &print(&caps),
        &json!({"streaming": false, "extendedAgentCard": true}),
        "capabilities",
    );
    assert_json_eq(
        &print(&AgentCapabilities::default()),
        &json!({}),
        "no capability set",
    );
}

#[test]
fn list_responses_print_every_key_even_when_empty() {
    assert_json_eq(
        &print(&ListTasksResponse::default()),
        &json!({"tasks": [], "nextPageToken": "", "pageSize": 0, "totalSize": 0}),
        "ListTasksResponse",
    );
    assert_json_eq(
        &print(&ListTaskPushNotificationConfigsResponse::default()),
        &json!({"configs": [], "nextPageToken": ""}),
        "ListTaskPushNotificationConfigsResponse",
    );
}

#[test]
fn oneof_members_are_printed_even_at_their_default_value() {
    for input in [
        json!({"text": ""}),
        json!({"url": ""}),
        json!({"raw": ""}),
        json!({"data": false}),
        json!({"data": 0}),
        json!({"data": ""}),
        json!({"data": {}}),
        json!({"data": []}),
    ] {
        let mut part: Part = parse(&input, "part");
        validate::part(&mut part, "part").unwrap_or_else(|e| panic!("{input}: {e}"));
        assert_json_eq(&print(&part), &input, "a set oneof member is printed");
    }
    assert_json_eq(
        &reprint::<StreamResponse>(json!({"message": {}})),
        &json!({"message": {}}),
        "a set but empty StreamResponse member is printed",
    );
    assert_json_eq(
        &reprint::<SecurityScheme>(json!({"mtls_security_scheme": {}})),
        &json!({"mtlsSecurityScheme": {}}),
        "a set but empty SecurityScheme member is printed",
    );
}

// ---------------------------------------------------------------------------------------
// oneof validation and bytes
// ---------------------------------------------------------------------------------------

fn assert_invalid_params(r: Result<(), A2aError>, what: &str) {
    match r {
        Err(e) => {
            assert_eq!(e.json_rpc_code(), -32602, "{what}: {e}");
            assert!(matches!(e, A2aError::InvalidParams { .. }), "{what}: {e:?}");
        }
        Ok(()) => panic!("{what} must be invalid params"),
    }
}

#[test]
fn a_part_with_two_content_members_is_invalid_params() {
    for input in [
        json!({"text": "a", "url": "https://example.com"}),
        json!({"text": "a", "raw": "AA=="}),
        json!({"raw": "AA==", "data": {"k": 1}}),
        json!({"url": "https://example.com", "data": null, "text": "a"}),
        json!({"text": "a", "raw": "AA==", "url": "u", "data": 1}),
    ] {
        let mut part: Part = parse(&input, "part");
        assert_invalid_params(
            validate::part(&mut part, "message.parts[0]"),
            &input.to_string(),
        );
    }
}

#[test]
fn a_part_with_no_content_member_is_invalid_params() {
    for input in [
        json!({}),
        json!({"mediaType": "text/plain", "filename": "a.txt", "metadata": {"k": 1}}),
        json!({"text": null, "raw": null, "url": null}),
        json!({"kind": "file", "file": {"uri": "https://example.com"}}),
    ] {
        let mut part: Part = parse(&input, "part");
        assert_invalid_params(
            validate::part(&mut part, "message.parts[0]"),
            &input.to_string(),
        );
    }
}

#[test]
fn an_invalid_part_error_names_the_part_in_a_bad_request() {
    let mut part: Part = parse(&json!({"text": "a", "url": "u"}), "part");
    let err = validate::part(&mut part, "message.parts[2]").unwrap_err();
    let details = err.details();
    assert_eq!(details[0]["reason"], json!("INVALID_PARAMS"));
    assert_eq!(
        details[1]["@type"],
        json!("type.googleapis.com/google.rpc.BadRequest")
    );
    assert_eq!(
        details[1]["fieldViolations"][0]["field"],
        json!("message.parts[2]")
    );
}

#[test]
fn a_stream_response_with_two_members_is_invalid_params() {
    let task = json!({"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}});
    let message = json!({"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "x"}]});
    let status = json!({"taskId": "t", "contextId": "c", "status": {"state": 2}});
    let artifact = json!({"taskId": "t", "contextId": "c", "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}});
    for input in [
        json!({"task": task, "message": message}),
        json!({"task": task, "statusUpdate": status}),
        json!({"status_update": status, "artifact_update": artifact}),
        json!({"message": message, "artifactUpdate": artifact}),
        json!({"task": task, "message": message, "statusUpdate": status, "artifactUpdate": artifact}),
    ] {
        let response: StreamResponse = parse(&input, "stream response");
        assert_invalid_params(validate::stream_response(&response), &input.to_string());
    }
}

#[test]
fn a_stream_response_with_no_member_is_invalid_params() {
    for input in [json!({}), json!({"task": null, "kind": "task"})] {
        let response: StreamResponse = parse(&input, "stream response");
        assert_invalid_params(validate::stream_response(&response), &input.to_string());
    }
}

#[test]
fn raw_bytes_in_url_safe_or_unpadded_base64_are_normalised_to_standard_padded() {
    // 0xFB 0xFF is "+/8=" in standard base64 and "-_8=" in URL-safe base64.
    let cases = [
        ("+/8=", "+/8="),
        ("+/8", "+/8="),
        ("-_8=", "+/8="),
        ("-_8", "+/8="),
        ("aGk=", "aGk="),
        ("aGk", "aGk="),
        ("aGVsbG8gd29ybGQ", "aGVsbG8gd29ybGQ="),
        ("__-_", "//+/"),
        ("", ""),
    ];
    for (input, expected) in cases {
        let mut part: Part = parse(
            &json!({"raw": input, "media_type": "application/octet-stream"}),
            "part",
        );
        validate::part(&mut part, "part").unwrap_or_else(|e| panic!("raw {input:?}: {e}"));
        assert_json_eq(
            &print(&part),
            &json!({"raw": expected, "mediaType": "application/octet-stream"}),
            &format!("raw {input:?} must be printed as {expected:?}"),
        );
    }
}

#[test]
fn raw_bytes_that_are_not_base64_are_invalid_params() {
    for bad in ["not base64!", "a", "+/8==="] {
        let mut part: Part = parse(&json!({"raw": bad}), "part");
        assert_invalid_params(validate::part(&mut part, "part"), bad);
    }
}

#[test]
fn a_message_is_validated_part_by_part_and_its_raw_parts_normalised() {
    let mut message: Message = parse(
        &json!({"message_id": "m", "role": 1, "parts": [{"text": "a"}, {"raw": "-_8"}]}),
        "message",
    );
    validate::message(&mut message, "message").expect("valid message");
    assert_eq!(message.parts[1].raw.as_deref(), Some("+/8="));

    let mut message: Message = parse(
        &json!({"message_id": "m", "role": 1, "parts": [{"text": "a"}, {"text": "b", "url": "u"}]}),
        "message",
    );
    let err = validate::message(&mut message, "message").unwrap_err();
    assert_eq!(err.json_rpc_code(), -32602);
    assert_eq!(
        err.details()[1]["fieldViolations"][0]["field"],
        json!("message.parts[1]")
    );
}

// ---------------------------------------------------------------------------------------
// errors (§1.4, §2)
// ---------------------------------------------------------------------------------------

/// One of every variant.
fn every_error() -> Vec<A2aError> {
    vec![
        A2aError::task_not_found("task-1"),
        A2aError::TaskNotCancelable {
            task_id: "task-2".into(),
        },
        A2aError::PushNotificationNotSupported,
        A2aError::UnsupportedOperation("This operation is not supported".into()),
        A2aError::PushConfigNotFound {
            task_id: "t-1".into(),
            id: "c-1".into(),
        },
        A2aError::ContentTypeNotSupported("image/gif".into()),
        A2aError::InvalidAgentResponse("bad".into()),
        A2aError::ExtendedAgentCardNotConfigured,
        A2aError::ExtensionSupportRequired("https://ext.example/v1".into()),
        A2aError::VersionNotSupported("99.0".into()),
        A2aError::Parse("expected value".into()),
        A2aError::InvalidRequest("jsonrpc must be 2.0".into()),
        A2aError::MethodNotFound("message/send".into()),
        A2aError::invalid_params("historyLength must not be negative"),
        A2aError::invalid_field("message.parts", "message.parts must hold at least one part"),
        A2aError::Internal("boom".into()),
        A2aError::Unauthenticated("a bearer token is required".into()),
        A2aError::Unavailable("the identity provider's keys cannot be fetched".into()),
    ]
}

/// The spec's table (§1.4, HTTP column v1.0.1; standard errors per §1.4/§2):
/// (JSON-RPC code, HTTP status, `google.rpc.Code` name, ErrorInfo reason).
fn spec_row(e: &A2aError) -> (i32, u16, &'static str, &'static str) {
    match e {
        A2aError::TaskNotFound { .. } | A2aError::PushConfigNotFound { .. } => {
            (-32001, 404, "NOT_FOUND", "TASK_NOT_FOUND")
        }
        A2aError::TaskNotCancelable { .. } => {
            (-32002, 400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE")
        }
        A2aError::PushNotificationNotSupported => (
            -32003,
            400,
            "FAILED_PRECONDITION",
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
        ),
        A2aError::UnsupportedOperation(_) => {
            (-32004, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION")
        }
        A2aError::ContentTypeNotSupported(_) => (
            -32005,
            400,
            "INVALID_ARGUMENT",
            "CONTENT_TYPE_NOT_SUPPORTED",
        ),
        A2aError::InvalidAgentResponse(_) => (-32006, 500, "INTERNAL", "INVALID_AGENT_RESPONSE"),
        A2aError::ExtendedAgentCardNotConfigured => (
            -32007,
            400,
            "FAILED_PRECONDITION",
            "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
        ),
        A2aError::ExtensionSupportRequired(_) => (
            -32008,
            400,
            "FAILED_PRECONDITION",
            "EXTENSION_SUPPORT_REQUIRED",
        ),
        A2aError::VersionNotSupported(_) => {
            (-32009, 400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED")
        }
        A2aError::Parse(_) => (-32700, 400, "INVALID_ARGUMENT", "PARSE_ERROR"),
        A2aError::InvalidRequest(_) => (-32600, 400, "INVALID_ARGUMENT", "INVALID_REQUEST"),
        A2aError::MethodNotFound(_) => (-32601, 404, "NOT_FOUND", "METHOD_NOT_FOUND"),
        A2aError::InvalidParams { .. } => (-32602, 400, "INVALID_ARGUMENT", "INVALID_PARAMS"),
        A2aError::Internal(_) => (-32603, 500, "INTERNAL", "INTERNAL_ERROR"),
        // Not in the A2A error set: HTTP's own (spec §7), -32000 on JSON-RPC.
        A2aError::Unauthenticated(_) => (-32000, 401, "UNAUTHENTICATED", "UNAUTHENTICATED"),
        A2aError::Unavailable(_) => (-32603, 503, "UNAVAILABLE", "UNAVAILABLE"),
    }
}

fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object()
        .unwrap_or_else(|| panic!("{v} is not an object"))
        .keys()
        .map(String::as_str)
        .collect()
}

fn assert_error_info_first(details: &Value, reason: &str, what: &str) {
    let details = details
        .as_array()
        .unwrap_or_else(|| panic!("{what}: details must be an array"));
    assert!(!details.is_empty(), "{what}: details must not be empty");
    let info = &details[0];
    assert_eq!(
        info["@type"],
        json!("type.googleapis.com/google.rpc.ErrorInfo"),
        "{what}"
    );
    assert_eq!(info["reason"], json!(reason), "{what}");
    assert_eq!(info["domain"], json!("a2a-protocol.org"), "{what}");
    for d in details {
        assert!(
            d["@type"]
                .as_str()
                .is_some_and(|t| t.starts_with("type.googleapis.com/")),
            "{what}: every detail is a ProtoJSON Any with @type: {d}"
        );
    }
}

#[test]
fn json_rpc_errors_have_exactly_code_message_and_data_with_an_error_info_first() {
    for e in every_error() {
        let (code, _, _, reason) = spec_row(&e);
        let rpc = e.to_json_rpc();
        let what = format!("{e:?} as JSON-RPC {rpc}");
        assert_eq!(
            keys(&rpc),
            BTreeSet::from(["code", "message", "data"]),
            "{what}"
        );
        assert_eq!(rpc["code"], json!(code), "{what}");
        assert!(
            rpc["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{what}"
        );
        assert_error_info_first(&rpc["data"], reason, &what);
    }
}

#[test]
fn rest_errors_are_a_google_rpc_status_with_the_spec_http_code_and_status_name() {
    for e in every_error() {
        let (_, http, status, reason) = spec_row(&e);
        let rest = e.to_rest();
        let what = format!("{e:?} as REST {rest}");
        assert_eq!(keys(&rest), BTreeSet::from(["error"]), "{what}");
        let status_obj = &rest["error"];
        assert_eq!(
            keys(status_obj),
            BTreeSet::from(["code", "status", "message", "details"]),
            "{what}"
        );
        assert_eq!(status_obj["code"], json!(http), "{what}");
        assert_eq!(e.http_status(), http, "{what}");
        assert_eq!(status_obj["status"], json!(status), "{what}");
        assert_eq!(status_obj["message"], e.to_json_rpc()["message"], "{what}");
        assert_error_info_first(&status_obj["details"], reason, &what);
        assert_eq!(status_obj["details"], e.to_json_rpc()["data"], "{what}");
    }
}

#[test]
fn task_errors_name_the_task_in_error_info_metadata() {
    let rpc = A2aError::task_not_found("task-1").to_json_rpc();
    assert_eq!(rpc["data"][0]["metadata"], json!({"taskId": "task-1"}));
    let rest = A2aError::TaskNotCancelable {
        task_id: "task-2".into(),
    }
    .to_rest();
    assert_eq!(
        rest["error"]["details"][0]["metadata"],
        json!({"taskId": "task-2"})
    );
}

#[test]
fn invalid_field_errors_add_a_bad_request_after_the_error_info() {
    let e = A2aError::invalid_field("message.parts", "message.parts must hold at least one part");
    assert_json_eq(
        &e.to_json_rpc()["data"][1],
        &json!({
            "@type": "type.googleapis.com/google.rpc.BadRequest",
            "fieldViolations": [{"field": "message.parts", "description": "message.parts must hold at least one part"}]
        }),
        "BadRequest detail",
    );
    assert_eq!(
        A2aError::invalid_params("x").to_json_rpc()["data"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}
