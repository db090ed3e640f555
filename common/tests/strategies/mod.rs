//! Strategies of valid protocol values (`common::a2a::types`) and of the extensions' wire
//! types (`common::ext`), shared by the property tests: the protocol round trips
//! (`proptest_roundtrip.rs`, issue 9) and the gRPC mapping (`grpc_mapping.rs`, issue 49).
//!
//! They generate values as the A2A proto (and the extensions' schemas) allow them: a
//! `Part` carries exactly one content member, oneofs (`StreamResponse`, `SecurityScheme`,
//! `OAuthFlows`, `SendMessageResponse`) exactly one member, enums their proto names,
//! timestamps in the proto's range (years 1 to 9999) with the milliseconds the type
//! prints, metadata as JSON objects of bounded depth. A `Part`'s `data` is never a bare
//! JSON `null`: lenient input reads `"data": null` as absent (golden
//! `part_text.lenient.json`), so such a part is not representable on the wire.
#![allow(dead_code)]

use common::a2a::*;
use common::ext::channel::{ChannelKind, ChannelMessage};
use common::ext::task::{
    Criterion, Participant, ParticipantKind, Role as ParticipantRole, TaskExtension, TaskRef,
};
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Map, Value};

// ---------------------------------------------------------------------------------------
// strategies: scalars, JSON, metadata
// ---------------------------------------------------------------------------------------

/// A regex strategy, compiled once (a `&str` strategy compiles its regex for every value).
pub fn re(pattern: &str) -> impl Strategy<Value = String> {
    proptest::string::string_regex(pattern).expect("a valid regex")
}

/// Free text: mostly plain, sometimes any characters (quotes, backslashes, control
/// characters, non-ASCII).
pub fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => re("[a-zA-Z0-9 _.,:/-]{0,12}"),
        1 => re(".{0,6}"),
        1 => re("[\"\\\\\\x00-\\x1f\\x7fé€😀]{0,4}"),
    ]
}

/// An identifier: non-empty, no control characters.
pub fn ident() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => re("[a-z0-9-]{1,12}"),
        1 => re("[^\\x00-\\x1f\\x7f]{1,8}"),
    ]
}

/// An identifier that may be empty (an optional proto string).
pub fn opt_ident() -> impl Strategy<Value = String> {
    prop_oneof![1 => Just(String::new()), 3 => ident()]
}

pub fn opt_text() -> impl Strategy<Value = String> {
    prop_oneof![1 => Just(String::new()), 2 => text()]
}

/// A key of a free-form object: no capitals (the round trips rewrite field names to snake_case
/// and must leave these alone).
pub fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => re("[a-z0-9_./-]{1,8}"),
        1 => re("[^\\x00-\\x1fA-Z]{0,6}"),
    ]
}

pub fn url() -> impl Strategy<Value = String> {
    re("https://[a-z]{1,8}\\.example(/[a-z0-9._-]{0,8}){0,2}")
}

pub fn media_type() -> impl Strategy<Value = String> {
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
pub fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        (any::<i32>(), 0u32..7).prop_map(|(m, e)| f64::from(m) / 10f64.powi(e as i32)),
        any::<f64>().prop_filter("finite", |f| f.is_finite()),
    ]
}

pub fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        float().prop_map(Value::from),
        text().prop_map(Value::String),
    ]
}

pub fn json_object_of(
    inner: impl Strategy<Value = Value>,
) -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(key(), inner, 0..4).prop_map(|m| m.into_iter().collect())
}

/// Any JSON value: scalars, and arrays and objects nested at most two deep.
pub fn json() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(2, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            json_object_of(inner).prop_map(Value::Object),
        ]
    })
}

pub fn json_object() -> impl Strategy<Value = Map<String, Value>> {
    json_object_of(json())
}

/// `google.protobuf.Struct` metadata: absent, empty or an object of nested values.
pub fn metadata() -> impl Strategy<Value = Metadata> {
    prop_oneof![
        2 => Just(None),
        1 => Just(Some(Map::new())),
        3 => json_object().prop_map(Some),
    ]
}

pub fn strings(max: usize) -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(ident(), 0..=max)
}

/// A `google.protobuf.Timestamp` in the proto's range, to the millisecond it prints.
pub fn timestamp() -> impl Strategy<Value = Timestamp> {
    // 0001-01-01T00:00:00Z ..= 9999-12-31T23:59:59.999Z
    prop_oneof![
        -62_135_596_800_000i64..=253_402_300_799_999i64,
        // Around now, where real timestamps are.
        1_600_000_000_000i64..1_900_000_000_000i64,
    ]
    .prop_map(|ms| Timestamp(chrono::DateTime::from_timestamp_millis(ms).expect("in range")))
}

pub fn task_state() -> impl Strategy<Value = TaskState> {
    select(TaskState::ALL.to_vec())
}

/// A task's state: a specified one.
pub fn set_task_state() -> impl Strategy<Value = TaskState> {
    select(TaskState::ALL[1..].to_vec())
}

pub fn role() -> impl Strategy<Value = Role> {
    select(vec![Role::User, Role::Agent])
}

pub fn opt_i32() -> impl Strategy<Value = Option<i32>> {
    prop::option::of(prop_oneof![0..100i32, any::<i32>()])
}

// ---------------------------------------------------------------------------------------
// strategies: tasks, messages, events
// ---------------------------------------------------------------------------------------

/// Exactly one of text, raw (standard padded base64), url, data (not a bare null).
pub fn part() -> impl Strategy<Value = Part> {
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

pub fn parts() -> impl Strategy<Value = Vec<Part>> {
    prop::collection::vec(part(), 1..3)
}

prop_compose! {
    pub fn message()(
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
    pub fn task_status()(
        state in set_task_state(),
        message in prop::option::of(message()),
        timestamp in prop::option::of(timestamp()),
    ) -> TaskStatus {
        TaskStatus { state, message, timestamp }
    }
}

prop_compose! {
    pub fn artifact()(
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
    pub fn task()(
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
    pub fn status_update()(
        task_id in ident(),
        context_id in ident(),
        status in task_status(),
        metadata in metadata(),
    ) -> TaskStatusUpdateEvent {
        TaskStatusUpdateEvent { task_id, context_id, status: Some(status), metadata }
    }
}

prop_compose! {
    pub fn artifact_update()(
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
pub fn stream_response() -> impl Strategy<Value = StreamResponse> {
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
    pub fn authentication_info()(scheme in prop_oneof![Just("Bearer".to_owned()), opt_ident()], credentials in opt_text()) -> AuthenticationInfo {
        AuthenticationInfo { scheme, credentials }
    }
}

prop_compose! {
    pub fn push_config()(
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
    pub fn send_configuration()(
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
    pub fn send_request()(
        tenant in opt_ident(),
        message in message(),
        configuration in prop::option::of(send_configuration()),
        metadata in metadata(),
    ) -> SendMessageRequest {
        SendMessageRequest { tenant, message: Some(message), configuration, metadata }
    }
}

/// Exactly one member.
pub fn send_response() -> impl Strategy<Value = SendMessageResponse> {
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
    pub fn get_task_request()(tenant in opt_ident(), id in ident(), history_length in opt_i32()) -> GetTaskRequest {
        GetTaskRequest { tenant, id, history_length }
    }
}

prop_compose! {
    pub fn list_tasks_request()(
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
    pub fn list_tasks_response()(
        tasks in prop::collection::vec(task(), 0..3),
        next_page_token in opt_ident(),
        page_size in any::<i32>(),
        total_size in any::<i32>(),
    ) -> ListTasksResponse {
        ListTasksResponse { tasks, next_page_token, page_size, total_size }
    }
}

prop_compose! {
    pub fn cancel_request()(tenant in opt_ident(), id in ident(), metadata in metadata()) -> CancelTaskRequest {
        CancelTaskRequest { tenant, id, metadata }
    }
}

prop_compose! {
    pub fn subscribe_request()(tenant in opt_ident(), id in ident()) -> SubscribeToTaskRequest {
        SubscribeToTaskRequest { tenant, id }
    }
}

prop_compose! {
    pub fn get_push_config_request()(tenant in opt_ident(), task_id in ident(), id in ident())
        -> GetTaskPushNotificationConfigRequest {
        GetTaskPushNotificationConfigRequest { tenant, task_id, id }
    }
}

prop_compose! {
    pub fn list_push_configs_request()(
        tenant in opt_ident(),
        task_id in ident(),
        page_size in opt_i32(),
        page_token in opt_ident(),
    ) -> ListTaskPushNotificationConfigsRequest {
        ListTaskPushNotificationConfigsRequest { tenant, task_id, page_size, page_token }
    }
}

prop_compose! {
    pub fn list_push_configs_response()(
        configs in prop::collection::vec(push_config(), 0..3),
        next_page_token in opt_ident(),
    ) -> ListTaskPushNotificationConfigsResponse {
        ListTaskPushNotificationConfigsResponse { configs, next_page_token }
    }
}

prop_compose! {
    pub fn extended_card_request()(tenant in opt_ident()) -> GetExtendedAgentCardRequest {
        GetExtendedAgentCardRequest { tenant }
    }
}

// ---------------------------------------------------------------------------------------
// strategies: the agent card
// ---------------------------------------------------------------------------------------

prop_compose! {
    pub fn agent_interface()(
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
    pub fn agent_provider()(url in url(), organization in text()) -> AgentProvider {
        AgentProvider { url, organization }
    }
}

prop_compose! {
    pub fn agent_extension()(
        uri in url(),
        description in opt_text(),
        required in any::<bool>(),
        params in metadata(),
    ) -> AgentExtension {
        AgentExtension { uri, description, required, params }
    }
}

prop_compose! {
    pub fn agent_capabilities()(
        streaming in prop::option::of(any::<bool>()),
        push_notifications in prop::option::of(any::<bool>()),
        extensions in prop::collection::vec(agent_extension(), 0..3),
        extended_agent_card in prop::option::of(any::<bool>()),
    ) -> AgentCapabilities {
        AgentCapabilities { streaming, push_notifications, extensions, extended_agent_card }
    }
}

prop_compose! {
    pub fn string_list()(list in strings(3)) -> StringList {
        StringList { list }
    }
}

prop_compose! {
    pub fn security_requirement()(
        schemes in prop::collection::btree_map(key(), string_list(), 0..3),
    ) -> SecurityRequirement {
        SecurityRequirement { schemes }
    }
}

prop_compose! {
    pub fn agent_skill()(
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
    pub fn card_signature()(
        protected in re("[A-Za-z0-9_-]{0,16}"),
        signature in re("[A-Za-z0-9_-]{0,16}"),
        header in metadata(),
    ) -> AgentCardSignature {
        AgentCardSignature { protected, signature, header }
    }
}

prop_compose! {
    pub fn api_key_scheme()(
        description in opt_text(),
        location in select(vec!["header", "query", "cookie"]),
        name in ident(),
    ) -> ApiKeySecurityScheme {
        ApiKeySecurityScheme { description, location: location.into(), name }
    }
}

prop_compose! {
    pub fn http_auth_scheme()(
        description in opt_text(),
        scheme in select(vec!["Bearer", "Basic"]),
        bearer_format in prop_oneof![Just(String::new()), Just("JWT".to_owned())],
    ) -> HttpAuthSecurityScheme {
        HttpAuthSecurityScheme { description, scheme: scheme.into(), bearer_format }
    }
}

prop_compose! {
    pub fn oauth_flow()(
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
pub fn oauth_flows() -> impl Strategy<Value = OAuthFlows> {
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
    pub fn oauth2_scheme()(
        description in opt_text(),
        flows in prop::option::of(oauth_flows()),
        oauth2_metadata_url in prop_oneof![Just(String::new()), url()],
    ) -> OAuth2SecurityScheme {
        OAuth2SecurityScheme { description, flows, oauth2_metadata_url }
    }
}

prop_compose! {
    pub fn oidc_scheme()(description in opt_text(), open_id_connect_url in url()) -> OpenIdConnectSecurityScheme {
        OpenIdConnectSecurityScheme { description, open_id_connect_url }
    }
}

prop_compose! {
    pub fn mtls_scheme()(description in opt_text()) -> MutualTlsSecurityScheme {
        MutualTlsSecurityScheme { description }
    }
}

/// Exactly one member.
pub fn security_scheme() -> impl Strategy<Value = SecurityScheme> {
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
    pub fn agent_card()(
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

pub fn participant_role() -> impl Strategy<Value = ParticipantRole> {
    select(vec![
        ParticipantRole::Assignee,
        ParticipantRole::Reporter,
        ParticipantRole::Watcher,
        ParticipantRole::Admin,
    ])
}

pub fn participant_kind() -> impl Strategy<Value = ParticipantKind> {
    select(vec![ParticipantKind::Human, ParticipantKind::Agent])
}

prop_compose! {
    pub fn participant()(
        id in ident(),
        kind in participant_kind(),
        role in participant_role(),
        display_name in opt_text(),
    ) -> Participant {
        Participant { id, kind, role, display_name }
    }
}

prop_compose! {
    pub fn criterion()(text in text(), met in any::<bool>()) -> Criterion {
        Criterion { text, met }
    }
}

/// `EntityRef` of the schema: kind, id and an optional version.
pub fn entity_ref() -> impl Strategy<Value = Value> {
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
    pub fn task_ref()(task_id in ident(), agent in prop::option::of(entity_ref())) -> TaskRef {
        TaskRef { task_id, agent }
    }
}

/// `Plan` of the schema: steps with their optional fields.
pub fn plan() -> impl Strategy<Value = Value> {
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
    pub fn task_extension()(
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

pub fn channel_kind() -> impl Strategy<Value = ChannelKind> {
    select(vec![
        ChannelKind::Message,
        ChannelKind::HelpRequest,
        ChannelKind::HelpReply,
    ])
}

/// `ContentPart` of the channel schema: text, or JSON data with a media type.
pub fn content_part() -> impl Strategy<Value = Value> {
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
    pub fn channel_message()(
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
