//! Property tests: every protocol type (`common::a2a::types`) and every wire type of the
//! extensions (`common::ext`) survives serialise → parse → serialise unchanged, through
//! `serde_json::Value` and through JSON text.
//!
//! The strategies (`strategies/mod.rs`) generate valid values, as the A2A proto (and the
//! extensions' schemas) allow them.
//!
//! For the A2A types two lenient spellings of the same printed JSON must also parse to the
//! same value: every field name in snake_case, and every enum as its number.

mod strategies;

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
use serde_json::Value;
use strategies::*;

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
