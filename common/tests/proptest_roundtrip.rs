//! Property tests: every protocol type (`common::a2a::types`) and every wire type of the
//! extensions (`common::ext`) survives serialise → parse → serialise unchanged, through
//! `serde_json::Value` and through JSON text.
//!
//! The strategies generate valid values, as the A2A proto (and the extensions' schemas)
//! allow them: a `Part` carries exactly one content member, oneofs (`StreamResponse`,
//! `SecurityScheme`, `OAuthFlows`, `SendMessageResponse`) exactly one member, enums their
//! proto names, timestamps in the proto's range (years 1 to 9999) with the milliseconds the
//! type prints, metadata as JSON objects of bounded depth. A `Part`'s `data` is never a bare
//! JSON `null`: lenient input reads `"data": null` as absent (golden
//! `part_text.lenient.json`), so such a part is not representable on the wire.
//!
//! For the A2A types two lenient spellings of the same printed JSON must also parse to the
//! same value: every field name in snake_case, and every enum as its number.

use common::a2a::*;
use common::ext::channel::{ChannelKind, ChannelMessage};
use common::ext::task::{
    Criterion, Participant, ParticipantKind, Role as ParticipantRole, TaskExtension, TaskRef,
};
use common::ext::TASK_METADATA_KEY;
use proptest::prelude::*;
use proptest::sample::select;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

// ---------------------------------------------------------------------------------------
// checks
// ---------------------------------------------------------------------------------------

fn fail(what: &str, e: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(format!("{what}: {e}"))
}

/// serialise → parse → serialise unchanged, through a `Value` and through text.
fn round_trips<T: Serialize + DeserializeOwned>(x: &T) -> Result<Value, TestCaseError> {
    let a = serde_json::to_value(x).map_err(|e| fail("to_value", e))?;
    let y: T = serde_json::from_value(a.clone()).map_err(|e| fail("from_value", e))?;
    let b = serde_json::to_value(&y).map_err(|e| fail("to_value again", e))?;
    prop_assert_eq!(&b, &a);

    let s = serde_json::to_string(x).map_err(|e| fail("to_string", e))?;
    let z: T = serde_json::from_str(&s).map_err(|e| fail("from_str", e))?;
    let t = serde_json::to_string(&z).map_err(|e| fail("to_string again", e))?;
    prop_assert_eq!(&t, &s);
    // The text and the value print the same JSON.
    let parsed: Value = serde_json::from_str(&s).map_err(|e| fail("text as a value", e))?;
    prop_assert_eq!(&parsed, &a);
    Ok(a)
}

/// [`round_trips`], and the lenient spellings of the printed JSON (snake_case names, enum
/// numbers) parse to a value that prints it unchanged.
fn a2a_round_trips<T: Serialize + DeserializeOwned>(x: &T) -> Result<(), TestCaseError> {
    let a = round_trips(x)?;
    for (what, lenient) in [
        ("snake_case names", snake_keys(&a)),
        ("enum numbers", enum_numbers(&a)),
    ] {
        let y: T = serde_json::from_value(lenient.clone())
            .map_err(|e| fail(&format!("{what}: {lenient}"), e))?;
        let b = serde_json::to_value(&y).map_err(|e| fail("to_value", e))?;
        prop_assert_eq!(&b, &a, "parsed from {} {}", what, lenient);
    }
    Ok(())
}

/// Every object key from camelCase to snake_case. Free-form keys (metadata, data, params,
/// scheme names, scopes) are generated without capitals, so this leaves them alone.
fn snake_keys(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let mut snake = String::new();
                    for c in k.chars() {
                        if c.is_ascii_uppercase() {
                            snake.push('_');
                            snake.push(c.to_ascii_lowercase());
                        } else {
                            snake.push(c);
                        }
                    }
                    (snake, snake_keys(v))
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(snake_keys).collect()),
        other => other.clone(),
    }
}

/// Every enum name (`TASK_STATE_*`, `ROLE_*`) as its number. Generated free text never
/// spells one.
fn enum_numbers(v: &Value) -> Value {
    match v {
        Value::String(s) => TaskState::from_name(s)
            .map(|x| Value::from(x.number()))
            .or_else(|| Role::from_name(s).map(|x| Value::from(x.number())))
            .unwrap_or_else(|| v.clone()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), enum_numbers(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(enum_numbers).collect()),
        other => other.clone(),
    }
}

// ---------------------------------------------------------------------------------------
// strategies: scalars, JSON, metadata
// ---------------------------------------------------------------------------------------

/// A regex strategy, compiled once (a `&str` strategy compiles its regex for every value).
fn re(pattern: &str) -> impl Strategy<Value = String> {
    proptest::string::string_regex(pattern).expect("a valid regex")
}

/// Free text: mostly plain, sometimes any characters (quotes, backslashes, control
/// characters, non-ASCII).
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => re("[a-zA-Z0-9 _.,:/-]{0,12}"),
        1 => re(".{0,6}"),
        1 => re("[\"\\\\\\x00-\\x1f\\x7fé€😀]{0,4}"),
    ]
}

/// An identifier: non-empty, no control characters.
fn ident() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => re("[a-z0-9-]{1,12}"),
        1 => re("[^\\x00-\\x1f\\x7f]{1,8}"),
    ]
}

/// An identifier that may be empty (an optional proto string).
fn opt_ident() -> impl Strategy<Value = String> {
    prop_oneof![1 => Just(String::new()), 3 => ident()]
}

fn opt_text() -> impl Strategy<Value = String> {
    prop_oneof![1 => Just(String::new()), 2 => text()]
}

/// A key of a free-form object: no capitals (see [`snake_keys`]).
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => re("[a-z0-9_./-]{1,8}"),
        1 => re("[^\\x00-\\x1fA-Z]{0,6}"),
    ]
}

fn url() -> impl Strategy<Value = String> {
    re("https://[a-z]{1,8}\\.example(/[a-z0-9._-]{0,8}){0,2}")
}

fn media_type() -> impl Strategy<Value = String> {
    select(vec![
        "",
        "text/plain",
        "application/json",
        "image/png",
        "application/vnd.tiny-harness.channel+json",
    ])
    .prop_map(str::to_owned)
}

/// A finite float whose shortest decimal form parses back exactly.
fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        (any::<i32>(), 0u32..7).prop_map(|(m, e)| f64::from(m) / 10f64.powi(e as i32)),
        any::<f64>().prop_filter("finite", |f| f.is_finite()),
    ]
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        float().prop_map(Value::from),
        text().prop_map(Value::String),
    ]
}

fn json_object_of(
    inner: impl Strategy<Value = Value>,
) -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(key(), inner, 0..4).prop_map(|m| m.into_iter().collect())
}

/// Any JSON value: scalars, and arrays and objects nested at most two deep.
fn json() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(2, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            json_object_of(inner).prop_map(Value::Object),
        ]
    })
}

fn json_object() -> impl Strategy<Value = Map<String, Value>> {
    json_object_of(json())
}

/// `google.protobuf.Struct` metadata: absent, empty or an object of nested values.
fn metadata() -> impl Strategy<Value = Metadata> {
    prop_oneof![
        2 => Just(None),
        1 => Just(Some(Map::new())),
        3 => json_object().prop_map(Some),
    ]
}

fn strings(max: usize) -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(ident(), 0..=max)
}

/// A `google.protobuf.Timestamp` in the proto's range, to the millisecond it prints.
fn timestamp() -> impl Strategy<Value = Timestamp> {
    // 0001-01-01T00:00:00Z ..= 9999-12-31T23:59:59.999Z
    prop_oneof![
        -62_135_596_800_000i64..=253_402_300_799_999i64,
        // Around now, where real timestamps are.
        1_600_000_000_000i64..1_900_000_000_000i64,
    ]
    .prop_map(|ms| Timestamp(chrono::DateTime::from_timestamp_millis(ms).expect("in range")))
}

fn task_state() -> impl Strategy<Value = TaskState> {
    select(TaskState::ALL.to_vec())
}

/// A task's state: a specified one.
fn set_task_state() -> impl Strategy<Value = TaskState> {
    select(TaskState::ALL[1..].to_vec())
}

fn role() -> impl Strategy<Value = Role> {
    select(vec![Role::User, Role::Agent])
}

fn opt_i32() -> impl Strategy<Value = Option<i32>> {
    prop::option::of(prop_oneof![0..100i32, any::<i32>()])
}

// ---------------------------------------------------------------------------------------
// strategies: tasks, messages, events
// ---------------------------------------------------------------------------------------

/// Exactly one of text, raw (standard padded base64), url, data (not a bare null).
fn part() -> impl Strategy<Value = Part> {
    use base64::Engine;
    let content = prop_oneof![
        text().prop_map(|t| Part {
            text: Some(t),
            ..Default::default()
        }),
        prop::collection::vec(any::<u8>(), 0..24).prop_map(|b| Part {
            raw: Some(base64::engine::general_purpose::STANDARD.encode(b)),
            ..Default::default()
        }),
        url().prop_map(|u| Part {
            url: Some(u),
            ..Default::default()
        }),
        json()
            .prop_filter("a bare null reads as absent", |v| !v.is_null())
            .prop_map(|d| Part {
                data: Some(d),
                ..Default::default()
            }),
    ];
    (content, metadata(), opt_text(), media_type()).prop_map(
        |(content, metadata, filename, media_type)| Part {
            metadata,
            filename,
            media_type,
            ..content
        },
    )
}

fn parts() -> impl Strategy<Value = Vec<Part>> {
    prop::collection::vec(part(), 1..3)
}

prop_compose! {
    fn message()(
        message_id in ident(),
        context_id in opt_ident(),
        task_id in opt_ident(),
        role in role(),
        parts in parts(),
        metadata in metadata(),
        extensions in prop::collection::vec(url(), 0..2),
        reference_task_ids in strings(2),
    ) -> Message {
        Message { message_id, context_id, task_id, role, parts, metadata, extensions, reference_task_ids }
    }
}

prop_compose! {
    fn task_status()(
        state in set_task_state(),
        message in prop::option::of(message()),
        timestamp in prop::option::of(timestamp()),
    ) -> TaskStatus {
        TaskStatus { state, message, timestamp }
    }
}

prop_compose! {
    fn artifact()(
        artifact_id in ident(),
        name in opt_text(),
        description in opt_text(),
        parts in parts(),
        metadata in metadata(),
        extensions in prop::collection::vec(url(), 0..2),
    ) -> Artifact {
        Artifact { artifact_id, name, description, parts, metadata, extensions }
    }
}

prop_compose! {
    fn task()(
        id in ident(),
        context_id in ident(),
        status in task_status(),
        artifacts in prop::collection::vec(artifact(), 0..3),
        history in prop::collection::vec(message(), 0..3),
        metadata in metadata(),
        ext in prop::option::of(task_extension()),
    ) -> Task {
        let mut task = Task { id, context_id, status: Some(status), artifacts, history, metadata };
        if let Some(ext) = ext {
            ext.store(&mut task);
        }
        task
    }
}

prop_compose! {
    fn status_update()(
        task_id in ident(),
        context_id in ident(),
        status in task_status(),
        metadata in metadata(),
    ) -> TaskStatusUpdateEvent {
        TaskStatusUpdateEvent { task_id, context_id, status: Some(status), metadata }
    }
}

prop_compose! {
    fn artifact_update()(
        task_id in ident(),
        context_id in ident(),
        artifact in artifact(),
        append in any::<bool>(),
        last_chunk in any::<bool>(),
        metadata in metadata(),
    ) -> TaskArtifactUpdateEvent {
        TaskArtifactUpdateEvent { task_id, context_id, artifact: Some(artifact), append, last_chunk, metadata }
    }
}

/// Exactly one member.
fn stream_response() -> impl Strategy<Value = StreamResponse> {
    prop_oneof![
        task().prop_map(StreamResponse::task),
        message().prop_map(StreamResponse::message),
        status_update().prop_map(StreamResponse::status),
        artifact_update().prop_map(StreamResponse::artifact),
    ]
}

// ---------------------------------------------------------------------------------------
// strategies: requests and responses, push configs
// ---------------------------------------------------------------------------------------

prop_compose! {
    fn authentication_info()(scheme in prop_oneof![Just("Bearer".to_owned()), opt_ident()], credentials in opt_text()) -> AuthenticationInfo {
        AuthenticationInfo { scheme, credentials }
    }
}

prop_compose! {
    fn push_config()(
        tenant in opt_ident(),
        id in opt_ident(),
        task_id in opt_ident(),
        url in url(),
        token in opt_text(),
        authentication in prop::option::of(authentication_info()),
    ) -> TaskPushNotificationConfig {
        TaskPushNotificationConfig { tenant, id, task_id, url, token, authentication }
    }
}

prop_compose! {
    fn send_configuration()(
        accepted_output_modes in prop::collection::vec(media_type(), 0..3),
        task_push_notification_config in prop::option::of(push_config()),
        history_length in opt_i32(),
        return_immediately in any::<bool>(),
        blocking in prop::option::of(any::<bool>()),
    ) -> SendMessageConfiguration {
        SendMessageConfiguration {
            accepted_output_modes, task_push_notification_config, history_length,
            return_immediately, blocking,
        }
    }
}

prop_compose! {
    fn send_request()(
        tenant in opt_ident(),
        message in message(),
        configuration in prop::option::of(send_configuration()),
        metadata in metadata(),
    ) -> SendMessageRequest {
        SendMessageRequest { tenant, message: Some(message), configuration, metadata }
    }
}

/// Exactly one member.
fn send_response() -> impl Strategy<Value = SendMessageResponse> {
    prop_oneof![
        task().prop_map(|t| SendMessageResponse {
            task: Some(t),
            message: None
        }),
        message().prop_map(|m| SendMessageResponse {
            task: None,
            message: Some(m)
        }),
    ]
}

prop_compose! {
    fn get_task_request()(tenant in opt_ident(), id in ident(), history_length in opt_i32()) -> GetTaskRequest {
        GetTaskRequest { tenant, id, history_length }
    }
}

prop_compose! {
    fn list_tasks_request()(
        tenant in opt_ident(),
        context_id in opt_ident(),
        status in task_state(),
        page_size in opt_i32(),
        page_token in opt_ident(),
        history_length in opt_i32(),
        status_timestamp_after in prop::option::of(timestamp()),
        include_artifacts in prop::option::of(any::<bool>()),
        waiting_on_me in prop::option::of(any::<bool>()),
    ) -> ListTasksRequest {
        ListTasksRequest {
            tenant, context_id, status, page_size, page_token, history_length,
            status_timestamp_after, include_artifacts, waiting_on_me,
        }
    }
}

prop_compose! {
    fn list_tasks_response()(
        tasks in prop::collection::vec(task(), 0..3),
        next_page_token in opt_ident(),
        page_size in any::<i32>(),
        total_size in any::<i32>(),
    ) -> ListTasksResponse {
        ListTasksResponse { tasks, next_page_token, page_size, total_size }
    }
}

prop_compose! {
    fn cancel_request()(tenant in opt_ident(), id in ident(), metadata in metadata()) -> CancelTaskRequest {
        CancelTaskRequest { tenant, id, metadata }
    }
}

prop_compose! {
    fn subscribe_request()(tenant in opt_ident(), id in ident()) -> SubscribeToTaskRequest {
        SubscribeToTaskRequest { tenant, id }
    }
}

prop_compose! {
    fn get_push_config_request()(tenant in opt_ident(), task_id in ident(), id in ident())
        -> GetTaskPushNotificationConfigRequest {
        GetTaskPushNotificationConfigRequest { tenant, task_id, id }
    }
}

prop_compose! {
    fn list_push_configs_request()(
        tenant in opt_ident(),
        task_id in ident(),
        page_size in opt_i32(),
        page_token in opt_ident(),
    ) -> ListTaskPushNotificationConfigsRequest {
        ListTaskPushNotificationConfigsRequest { tenant, task_id, page_size, page_token }
    }
}

prop_compose! {
    fn list_push_configs_response()(
        configs in prop::collection::vec(push_config(), 0..3),
        next_page_token in opt_ident(),
    ) -> ListTaskPushNotificationConfigsResponse {
        ListTaskPushNotificationConfigsResponse { configs, next_page_token }
    }
}

prop_compose! {
    fn extended_card_request()(tenant in opt_ident()) -> GetExtendedAgentCardRequest {
        GetExtendedAgentCardRequest { tenant }
    }
}

// ---------------------------------------------------------------------------------------
// strategies: the agent card
// ---------------------------------------------------------------------------------------

prop_compose! {
    fn agent_interface()(
        url in url(),
        protocol_binding in select(vec!["JSONRPC", "HTTP+JSON", "GRPC"]),
        tenant in opt_ident(),
        protocol_version in select(vec!["1.0", "0.3"]),
    ) -> AgentInterface {
        AgentInterface {
            url, protocol_binding: protocol_binding.into(), tenant,
            protocol_version: protocol_version.into(),
        }
    }
}

prop_compose! {
    fn agent_provider()(url in url(), organization in text()) -> AgentProvider {
        AgentProvider { url, organization }
    }
}

prop_compose! {
    fn agent_extension()(
        uri in url(),
        description in opt_text(),
        required in any::<bool>(),
        params in metadata(),
    ) -> AgentExtension {
        AgentExtension { uri, description, required, params }
    }
}

prop_compose! {
    fn agent_capabilities()(
        streaming in prop::option::of(any::<bool>()),
        push_notifications in prop::option::of(any::<bool>()),
        extensions in prop::collection::vec(agent_extension(), 0..3),
        extended_agent_card in prop::option::of(any::<bool>()),
    ) -> AgentCapabilities {
        AgentCapabilities { streaming, push_notifications, extensions, extended_agent_card }
    }
}

prop_compose! {
    fn string_list()(list in strings(3)) -> StringList {
        StringList { list }
    }
}

prop_compose! {
    fn security_requirement()(
        schemes in prop::collection::btree_map(key(), string_list(), 0..3),
    ) -> SecurityRequirement {
        SecurityRequirement { schemes }
    }
}

prop_compose! {
    fn agent_skill()(
        id in ident(),
        name in text(),
        description in text(),
        tags in strings(3),
        examples in prop::collection::vec(text(), 0..3),
        input_modes in prop::collection::vec(media_type(), 0..2),
        output_modes in prop::collection::vec(media_type(), 0..2),
        security_requirements in prop::collection::vec(security_requirement(), 0..2),
    ) -> AgentSkill {
        AgentSkill {
            id, name, description, tags, examples, input_modes, output_modes,
            security_requirements,
        }
    }
}

prop_compose! {
    fn card_signature()(
        protected in re("[A-Za-z0-9_-]{0,16}"),
        signature in re("[A-Za-z0-9_-]{0,16}"),
        header in metadata(),
    ) -> AgentCardSignature {
        AgentCardSignature { protected, signature, header }
    }
}

prop_compose! {
    fn api_key_scheme()(
        description in opt_text(),
        location in select(vec!["header", "query", "cookie"]),
        name in ident(),
    ) -> ApiKeySecurityScheme {
        ApiKeySecurityScheme { description, location: location.into(), name }
    }
}

prop_compose! {
    fn http_auth_scheme()(
        description in opt_text(),
        scheme in select(vec!["Bearer", "Basic"]),
        bearer_format in prop_oneof![Just(String::new()), Just("JWT".to_owned())],
    ) -> HttpAuthSecurityScheme {
        HttpAuthSecurityScheme { description, scheme: scheme.into(), bearer_format }
    }
}

prop_compose! {
    fn oauth_flow()(
        authorization_url in prop_oneof![Just(String::new()), url()],
        device_authorization_url in prop_oneof![Just(String::new()), url()],
        token_url in prop_oneof![Just(String::new()), url()],
        refresh_url in prop_oneof![Just(String::new()), url()],
        scopes in prop::collection::btree_map(key(), text(), 0..3),
        pkce_required in any::<bool>(),
    ) -> OAuthFlow {
        OAuthFlow {
            authorization_url, device_authorization_url, token_url, refresh_url, scopes,
            pkce_required,
        }
    }
}

/// Exactly one flow.
fn oauth_flows() -> impl Strategy<Value = OAuthFlows> {
    (0..5usize, oauth_flow()).prop_map(|(which, flow)| {
        let mut f = OAuthFlows::default();
        let slot = match which {
            0 => &mut f.authorization_code,
            1 => &mut f.client_credentials,
            2 => &mut f.device_code,
            3 => &mut f.implicit,
            _ => &mut f.password,
        };
        *slot = Some(flow);
        f
    })
}

prop_compose! {
    fn oauth2_scheme()(
        description in opt_text(),
        flows in prop::option::of(oauth_flows()),
        oauth2_metadata_url in prop_oneof![Just(String::new()), url()],
    ) -> OAuth2SecurityScheme {
        OAuth2SecurityScheme { description, flows, oauth2_metadata_url }
    }
}

prop_compose! {
    fn oidc_scheme()(description in opt_text(), open_id_connect_url in url()) -> OpenIdConnectSecurityScheme {
        OpenIdConnectSecurityScheme { description, open_id_connect_url }
    }
}

prop_compose! {
    fn mtls_scheme()(description in opt_text()) -> MutualTlsSecurityScheme {
        MutualTlsSecurityScheme { description }
    }
}

/// Exactly one member.
fn security_scheme() -> impl Strategy<Value = SecurityScheme> {
    prop_oneof![
        api_key_scheme().prop_map(|s| SecurityScheme {
            api_key_security_scheme: Some(s),
            ..Default::default()
        }),
        http_auth_scheme().prop_map(|s| SecurityScheme {
            http_auth_security_scheme: Some(s),
            ..Default::default()
        }),
        oauth2_scheme().prop_map(|s| SecurityScheme {
            oauth2_security_scheme: Some(s),
            ..Default::default()
        }),
        oidc_scheme().prop_map(|s| SecurityScheme {
            open_id_connect_security_scheme: Some(s),
            ..Default::default()
        }),
        mtls_scheme().prop_map(|s| SecurityScheme {
            mtls_security_scheme: Some(s),
            ..Default::default()
        }),
    ]
}

prop_compose! {
    fn agent_card()(
        (name, description, version) in (text(), text(), re("[0-9]{1,2}\\.[0-9]{1,2}\\.[0-9]{1,2}")),
        supported_interfaces in prop::collection::vec(agent_interface(), 1..3),
        provider in prop::option::of(agent_provider()),
        documentation_url in prop::option::of(url()),
        capabilities in agent_capabilities(),
        security_schemes in prop::collection::btree_map(key(), security_scheme(), 0..3),
        security_requirements in prop::collection::vec(security_requirement(), 0..2),
        default_input_modes in prop::collection::vec(media_type(), 0..3),
        default_output_modes in prop::collection::vec(media_type(), 0..3),
        skills in prop::collection::vec(agent_skill(), 0..3),
        signatures in prop::collection::vec(card_signature(), 0..2),
        icon_url in prop::option::of(url()),
    ) -> AgentCard {
        AgentCard {
            name, description, supported_interfaces, provider, version, documentation_url,
            capabilities, security_schemes, security_requirements, default_input_modes,
            default_output_modes, skills, signatures, icon_url,
        }
    }
}

// ---------------------------------------------------------------------------------------
// strategies: the extensions (valid against schemas/task-v1 and channel-v1)
// ---------------------------------------------------------------------------------------

fn participant_role() -> impl Strategy<Value = ParticipantRole> {
    select(vec![
        ParticipantRole::Assignee,
        ParticipantRole::Reporter,
        ParticipantRole::Watcher,
        ParticipantRole::Admin,
    ])
}

fn participant_kind() -> impl Strategy<Value = ParticipantKind> {
    select(vec![ParticipantKind::Human, ParticipantKind::Agent])
}

prop_compose! {
    fn participant()(
        id in ident(),
        kind in participant_kind(),
        role in participant_role(),
        display_name in opt_text(),
    ) -> Participant {
        Participant { id, kind, role, display_name }
    }
}

prop_compose! {
    fn criterion()(text in text(), met in any::<bool>()) -> Criterion {
        Criterion { text, met }
    }
}

/// `EntityRef` of the schema: kind, id and an optional version.
fn entity_ref() -> impl Strategy<Value = Value> {
    (
        select(vec![
            "prompt",
            "skill",
            "tool",
            "llm",
            "system_one",
            "hook",
            "channel",
            "renderer",
            "surface",
            "store",
            "agent",
        ]),
        ident(),
        prop::option::of(prop::option::of(re("[0-9.]{1,5}"))),
    )
        .prop_map(|(kind, id, version)| {
            let mut m = Map::new();
            m.insert("kind".into(), kind.into());
            m.insert("id".into(), id.into());
            if let Some(v) = version {
                m.insert("version".into(), v.map_or(Value::Null, Value::String));
            }
            Value::Object(m)
        })
}

prop_compose! {
    /// `agent` is absent for a task of this harness (a bare `null` means the same).
    fn task_ref()(task_id in ident(), agent in prop::option::of(entity_ref())) -> TaskRef {
        TaskRef { task_id, agent }
    }
}

/// `Plan` of the schema: steps with their optional fields.
fn plan() -> impl Strategy<Value = Value> {
    let step = (
        text(),
        prop::option::of(ident()),
        prop::option::of(text()),
        prop::option::of(select(vec!["pending", "active", "done", "failed"])),
        prop::option::of(strings(2)),
        prop::option::of(prop::collection::vec(task_ref(), 0..2)),
        prop::option::of(prop::option::of(text())),
    )
        .prop_map(
            |(name, id, description, state, depends_on, linked, output)| {
                let mut m = Map::new();
                m.insert("name".into(), name.into());
                if let Some(id) = id {
                    m.insert("id".into(), id.into());
                }
                if let Some(d) = description {
                    m.insert("description".into(), d.into());
                }
                if let Some(s) = state {
                    m.insert("state".into(), s.into());
                }
                if let Some(d) = depends_on {
                    m.insert("depends_on".into(), d.into());
                }
                if let Some(l) = linked {
                    let l = serde_json::to_value(l).expect("task refs print");
                    m.insert("linked_tasks".into(), l);
                }
                if let Some(o) = output {
                    m.insert("output".into(), o.map_or(Value::Null, Value::String));
                }
                Value::Object(m)
            },
        );
    prop::option::of(prop::collection::vec(step, 0..3)).prop_map(|steps| {
        let mut m = Map::new();
        if let Some(steps) = steps {
            m.insert("steps".into(), Value::Array(steps));
        }
        Value::Object(m)
    })
}

prop_compose! {
    fn task_extension()(
        name in text(),
        goal in text(),
        kind in prop::option::of(ident()),
        description in opt_text(),
        acceptance_criteria in prop::collection::vec(criterion(), 0..3),
        participants in prop::collection::vec(participant(), 0..4),
        parent_tasks in prop::collection::vec(task_ref(), 0..2),
        sub_tasks in prop::collection::vec(task_ref(), 0..2),
        plan in prop::option::of(plan()),
    ) -> TaskExtension {
        TaskExtension {
            name, goal, kind, description, acceptance_criteria, participants, parent_tasks,
            sub_tasks, plan,
        }
    }
}

fn channel_kind() -> impl Strategy<Value = ChannelKind> {
    select(vec![
        ChannelKind::Message,
        ChannelKind::HelpRequest,
        ChannelKind::HelpReply,
    ])
}

/// `ContentPart` of the channel schema: text, or JSON data with a media type.
fn content_part() -> impl Strategy<Value = Value> {
    prop_oneof![
        text().prop_map(|t| serde_json::json!({"kind": "text", "text": t})),
        (
            prop::option::of(json_object()),
            prop::option::of(media_type())
        )
            .prop_map(|(data, media_type)| {
                serde_json::json!({"kind": "data", "data": data, "media_type": media_type})
            }),
    ]
}

prop_compose! {
    fn channel_message()(
        channel_id in ident(),
        sender in ident(),
        kind in channel_kind(),
        text in opt_text(),
        parts in prop::collection::vec(content_part(), 0..3),
        in_reply_to in prop::option::of(ident()),
    ) -> ChannelMessage {
        ChannelMessage { channel_id, sender, kind, text, parts, in_reply_to }
    }
}

// ---------------------------------------------------------------------------------------
// the properties
// ---------------------------------------------------------------------------------------

/// One property per type, `name: Type = strategy;`, each checked with `$check` in
/// `$cases` cases.
macro_rules! round_trip_properties {
    ($check:ident, $cases:expr, { $($name:ident: $ty:ty = $strategy:expr;)+ }) => {
        proptest! {
            #![proptest_config(ProptestConfig::with_cases($cases))]
            $(
                #[test]
                fn $name(x in $strategy) {
                    $check::<$ty>(&x)?;
                }
            )+
        }
    };
}

/// Cases for the properties of the types holding messages: each case holds parts with
/// metadata and data objects.
const MESSAGE_CASES: u32 = 128;

/// Cases for the properties of the large nested types (tasks, responses, the card): each
/// case already holds many messages, parts and metadata objects.
const NESTED_CASES: u32 = 64;

round_trip_properties!(a2a_round_trips, 256, {
    task_state_round_trips: TaskState = task_state();
    role_round_trips: Role = select(Role::ALL.to_vec());
    timestamp_round_trips: Timestamp = timestamp();
    part_round_trips: Part = part();
    send_configuration_round_trips: SendMessageConfiguration = send_configuration();
    get_task_request_round_trips: GetTaskRequest = get_task_request();
    list_tasks_request_round_trips: ListTasksRequest = list_tasks_request();
    cancel_request_round_trips: CancelTaskRequest = cancel_request();
    subscribe_request_round_trips: SubscribeToTaskRequest = subscribe_request();
    authentication_info_round_trips: AuthenticationInfo = authentication_info();
    push_config_round_trips: TaskPushNotificationConfig = push_config();
    get_push_config_request_round_trips: GetTaskPushNotificationConfigRequest = get_push_config_request();
    delete_push_config_request_round_trips: DeleteTaskPushNotificationConfigRequest = get_push_config_request();
    list_push_configs_request_round_trips: ListTaskPushNotificationConfigsRequest = list_push_configs_request();
    list_push_configs_response_round_trips: ListTaskPushNotificationConfigsResponse = list_push_configs_response();
    extended_card_request_round_trips: GetExtendedAgentCardRequest = extended_card_request();
    agent_interface_round_trips: AgentInterface = agent_interface();
    agent_provider_round_trips: AgentProvider = agent_provider();
    agent_capabilities_round_trips: AgentCapabilities = agent_capabilities();
    agent_extension_round_trips: AgentExtension = agent_extension();
    agent_skill_round_trips: AgentSkill = agent_skill();
    security_requirement_round_trips: SecurityRequirement = security_requirement();
    string_list_round_trips: StringList = string_list();
    card_signature_round_trips: AgentCardSignature = card_signature();
    security_scheme_round_trips: SecurityScheme = security_scheme();
    api_key_scheme_round_trips: ApiKeySecurityScheme = api_key_scheme();
    http_auth_scheme_round_trips: HttpAuthSecurityScheme = http_auth_scheme();
    oauth2_scheme_round_trips: OAuth2SecurityScheme = oauth2_scheme();
    oidc_scheme_round_trips: OpenIdConnectSecurityScheme = oidc_scheme();
    mtls_scheme_round_trips: MutualTlsSecurityScheme = mtls_scheme();
    oauth_flows_round_trips: OAuthFlows = oauth_flows();
    oauth_flow_round_trips: OAuthFlow = oauth_flow();
});

round_trip_properties!(a2a_round_trips, MESSAGE_CASES, {
    message_round_trips: Message = message();
    task_status_round_trips: TaskStatus = task_status();
    artifact_round_trips: Artifact = artifact();
    status_update_round_trips: TaskStatusUpdateEvent = status_update();
    artifact_update_round_trips: TaskArtifactUpdateEvent = artifact_update();
});

round_trip_properties!(a2a_round_trips, NESTED_CASES, {
    task_round_trips: Task = task();
    stream_response_round_trips: StreamResponse = stream_response();
    send_response_round_trips: SendMessageResponse = send_response();
    list_tasks_response_round_trips: ListTasksResponse = list_tasks_response();
    agent_card_round_trips: AgentCard = agent_card();
    send_request_round_trips: SendMessageRequest = send_request();
});

round_trip_properties!(round_trips, 256, {
    task_extension_round_trips: TaskExtension = task_extension();
    participant_round_trips: Participant = participant();
    participant_role_round_trips: ParticipantRole = participant_role();
    participant_kind_round_trips: ParticipantKind = participant_kind();
    criterion_round_trips: Criterion = criterion();
    task_ref_round_trips: TaskRef = task_ref();
    channel_message_round_trips: ChannelMessage = channel_message();
    channel_kind_round_trips: ChannelKind = channel_kind();
});

proptest! {
    #![proptest_config(ProptestConfig::with_cases(NESTED_CASES))]

    /// The generated values are valid: what validation checks of them passes and changes
    /// nothing (so the round trips above are of values the server accepts).
    #[test]
    fn generated_messages_and_events_are_valid(m in message(), r in stream_response()) {
        let mut checked = m.clone();
        prop_assert!(validate::message(&mut checked, "message").is_ok());
        prop_assert_eq!(checked, m);
        prop_assert!(validate::stream_response(&r).is_ok());
    }

    /// The extensions' data as printed is valid against their schemas and parses back
    /// (through the schema check) to the same value; a task keeps it in its metadata.
    #[test]
    fn extension_data_as_printed_passes_its_schema(
        ext in task_extension(),
        channel in channel_message(),
    ) {
        let printed = serde_json::to_value(&ext).expect("prints");
        prop_assert_eq!(TaskExtension::parse(&printed), Ok(ext.clone()));
        let mut task = Task::default();
        ext.store(&mut task);
        let task: Task = serde_json::from_str(&serde_json::to_string(&task).expect("prints"))
            .expect("parses");
        prop_assert!(task.metadata.as_ref().is_some_and(|m| m.contains_key(TASK_METADATA_KEY)));
        prop_assert_eq!(TaskExtension::of(&task), Some(ext));

        let printed = serde_json::to_value(&channel).expect("prints");
        prop_assert_eq!(ChannelMessage::parse(&printed), Ok(channel.clone()));
        let part = channel.part();
        let part: Part = serde_json::from_str(&serde_json::to_string(&part).expect("prints"))
            .expect("parses");
        let msg = Message { parts: vec![part], ..Default::default() };
        prop_assert_eq!(common::ext::channel::of_message(&msg).ok().flatten(), Some(channel));
    }
}

// ---------------------------------------------------------------------------------------
// timestamps as clients may write them
// ---------------------------------------------------------------------------------------

/// The first and last instants a `google.protobuf.Timestamp` can hold, in milliseconds
/// (0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z).
const FIRST_MS: i64 = -62_135_596_800_000;
const LAST_MS: i64 = 253_402_300_799_999;

/// RFC 3339 text as a client may write it: any UTC offset (or `Z`, `z`), 0 to 9 fraction
/// digits, at times of day near midnight (so an offset may carry the instant across a
/// day, or out of the proto's range at year 1 and year 9999).
fn rfc3339_text() -> impl Strategy<Value = String> {
    // The first and last days the proto allows, or any day.
    let date = prop_oneof![
        1 => Just((1, 1, 1)),
        1 => Just((9999, 12, 31)),
        2 => (1i32..=9999, 1u32..=12, prop_oneof![Just(1u32), Just(31), 1u32..=28]),
    ];
    let hour = prop_oneof![Just(0u32), Just(23), 0u32..24];
    // 60: a leap second, which RFC 3339 allows.
    let second = prop_oneof![20 => 0u32..60, 1 => Just(60u32)];
    let fraction = (0usize..=9, 0u32..1_000_000_000).prop_map(|(digits, nanos)| {
        if digits == 0 {
            String::new()
        } else {
            format!(".{:09}", nanos)[..digits + 1].to_owned()
        }
    });
    let offset = prop_oneof![
        Just("Z".to_owned()),
        Just("z".to_owned()),
        (any::<bool>(), 0u32..24, 0u32..60)
            .prop_map(|(east, h, m)| { format!("{}{h:02}:{m:02}", if east { '+' } else { '-' }) }),
    ];
    (date, hour, 0u32..60, second, fraction, offset).prop_filter_map(
        "a day of the month",
        |((y, mo, d), h, mi, s, frac, off)| {
            chrono::NaiveDate::from_ymd_opt(y, mo, d)?;
            Some(format!(
                "{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}{frac}{off}"
            ))
        },
    )
}

proptest! {
    /// A timestamp a client writes is accepted when its instant is in the proto's range
    /// and refused when it is not (before `Timestamp` checked the range,
    /// `9999-12-31T23:30:00-01:00` was read, and printed as `+10000-01-01T00:30:00.000Z`,
    /// which cannot be read back); once accepted, it prints (in UTC, to the millisecond)
    /// as text that parses back to the same instant and prints the same again.
    #[test]
    fn a_timestamp_in_any_offset_prints_as_text_that_parses_back(text in rfc3339_text()) {
        let instant = chrono::DateTime::parse_from_rfc3339(&text).expect("RFC 3339");
        let ms = instant.timestamp_millis();
        let in_range = (FIRST_MS..=LAST_MS).contains(&ms);
        let parsed: Result<Timestamp, _> = serde_json::from_value(Value::String(text.clone()));
        // A leap second reads as the second before it plus a fraction; in the last second
        // of 9999 that is past the end of the range by less than a second: either answer.
        let leap = &text[17..19] == "60";
        if !leap {
            prop_assert_eq!(parsed.is_ok(), in_range, "{} parsed as {:?}", text, parsed);
        }
        if let Ok(t) = parsed {
            prop_assert_eq!(t.millis(), ms);
            let printed = serde_json::to_value(t).expect("prints");
            let again: Timestamp = serde_json::from_value(printed.clone())
                .map_err(|e| fail(&format!("{text} printed as {printed}"), e))?;
            prop_assert_eq!(again.millis(), ms);
            prop_assert_eq!(serde_json::to_value(again).expect("prints"), printed);
        }
    }
}
