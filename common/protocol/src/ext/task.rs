//! The task extension's data: name, goal, acceptance criteria, participants and the links
//! between tasks, kept in `Task.metadata["io.github.madarauchiha-314.tiny-harness/task"]`
//! and checked against `schemas/task-v1.schema.json` whenever it comes from outside.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{compile, problems, TASK_METADATA_KEY, TASK_SCHEMA};
use crate::a2a::Task;

/// A participant's role on a task; exactly one per participant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Does the work (the harness's own agent, or the participant of a participant task).
    Assignee,
    /// Asked for the work.
    Reporter,
    /// Follows it.
    Watcher,
    /// May change roles.
    Admin,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Assignee => "assignee",
            Role::Reporter => "reporter",
            Role::Watcher => "watcher",
            Role::Admin => "admin",
        }
    }
}

impl std::str::FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "assignee" => Ok(Role::Assignee),
            "reporter" => Ok(Role::Reporter),
            "watcher" => Ok(Role::Watcher),
            "admin" => Ok(Role::Admin),
            other => Err(format!(
                "unknown role {other:?} (assignee, reporter, watcher or admin)"
            )),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParticipantKind {
    Human,
    Agent,
}

impl ParticipantKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ParticipantKind::Human => "human",
            ParticipantKind::Agent => "agent",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Participant {
    pub id: String,
    pub kind: ParticipantKind,
    pub role: Role,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_name: String,
}

impl Participant {
    pub fn new(id: impl Into<String>, kind: ParticipantKind, role: Role) -> Self {
        Participant {
            id: id.into(),
            kind,
            role,
            display_name: String::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Criterion {
    pub text: String,
    #[serde(default)]
    pub met: bool,
}

/// A link to another task; `agent` is null for a task of this harness.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRef {
    pub task_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<Value>,
}

impl TaskRef {
    pub fn local(task_id: impl Into<String>) -> Self {
        TaskRef {
            task_id: task_id.into(),
            agent: None,
        }
    }
}

/// The task extension's data (`TaskExtensionData` of the schema).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TaskExtension {
    pub name: String,
    pub goal: String,
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(default)]
    pub acceptance_criteria: Vec<Criterion>,
    #[serde(default)]
    pub participants: Vec<Participant>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parent_tasks: Vec<TaskRef>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sub_tasks: Vec<TaskRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Value>,
}

fn validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| compile(TASK_SCHEMA))
}

/// Longest task name taken from a message's first line.
const NAME_CHARS: usize = 60;
/// Most characters of a goal taken from a message's text.
const GOAL_CHARS: usize = 4096;
/// Most participants a task envelope may name (a new task's sender and the harness's
/// agent may join them): each is an item of the store's listing index, rewritten with the
/// task's status, so the roster bounds what a commit writes.
pub const MAX_PARTICIPANTS: usize = 32;

impl TaskExtension {
    /// Data from outside (a task envelope): checked against the schema first, so every
    /// problem is named with its path.
    pub fn parse(value: &Value) -> Result<Self, String> {
        if let Some(p) = problems(validator(), value) {
            return Err(p);
        }
        Self::deserialize(value).map_err(|e| e.to_string())
    }

    /// The extension of a task started by a plain message: name = its first line (at most
    /// 60 characters, "task" when empty), goal = the text (its first 4096 characters and
    /// "…" when longer: the whole message is the task's first history message).
    pub fn from_text(text: &str) -> Self {
        let text = text.trim();
        let first = text.lines().next().unwrap_or("").trim();
        let name: String = first.chars().take(NAME_CHARS).collect();
        TaskExtension {
            name: if name.is_empty() { "task".into() } else { name },
            goal: if text.chars().count() > GOAL_CHARS {
                text.chars().take(GOAL_CHARS).chain(['…']).collect()
            } else {
                text.to_owned()
            },
            ..Default::default()
        }
    }

    /// The task's data; None when it has none (or it cannot be read, which fails closed:
    /// a task without participants is visible to no one).
    pub fn of(task: &Task) -> Option<Self> {
        let v = task.metadata.as_ref()?.get(TASK_METADATA_KEY)?;
        Self::deserialize(v).ok()
    }

    /// Writes the data into the task's metadata.
    pub fn store(&self, task: &mut Task) {
        let value = serde_json::to_value(self).unwrap_or(Value::Null);
        task.metadata
            .get_or_insert_with(Default::default)
            .insert(TASK_METADATA_KEY.to_owned(), value);
    }

    pub fn participant(&self, id: &str) -> Option<&Participant> {
        self.participants.iter().find(|p| p.id == id)
    }

    /// False for no id at all: membership fails closed.
    pub fn is_participant(&self, id: Option<&str>) -> bool {
        id.is_some_and(|id| self.participant(id).is_some())
    }

    pub fn has_role(&self, id: Option<&str>, role: Role) -> bool {
        id.and_then(|id| self.participant(id))
            .is_some_and(|p| p.role == role)
    }

    /// Whether `id` is a participant of kind agent.
    pub fn is_agent(&self, id: &str) -> bool {
        self.participant(id)
            .is_some_and(|p| p.kind == ParticipantKind::Agent)
    }

    pub fn assignee(&self) -> Option<&Participant> {
        self.participants.iter().find(|p| p.role == Role::Assignee)
    }

    /// Whether the participants can stand as given: at most [`MAX_PARTICIPANTS`], each id
    /// once, and the harness's own id (`harness`) only as an agent, so no one is listed
    /// twice and no person can pose as the harness.
    pub fn check_roster(&self, harness: &str) -> Result<(), String> {
        self.check_roster_from(harness, 0)
    }

    /// [`check_roster`](Self::check_roster) for a roster changed from one of `was`
    /// participants: over the limit only if it grew past it (a task started with its
    /// envelope's 32 plus its sender and agent can still be edited).
    fn check_roster_from(&self, harness: &str, was: usize) -> Result<(), String> {
        if self.participants.len() > MAX_PARTICIPANTS.max(was) {
            return Err(format!(
                "a task has at most {MAX_PARTICIPANTS} participants, not {}",
                self.participants.len()
            ));
        }
        for (i, p) in self.participants.iter().enumerate() {
            if self.participants[..i].iter().any(|q| q.id == p.id) {
                return Err(format!("participant {} is listed twice", p.id));
            }
            if p.id == harness && p.kind != ParticipantKind::Agent {
                return Err(format!(
                    "participant {harness} is the harness: its kind is agent"
                ));
            }
        }
        Ok(())
    }

    /// Adds `p` unless a participant with its id is already there.
    pub fn add(&mut self, p: Participant) {
        if self.participant(&p.id).is_none() {
            self.participants.push(p);
        }
    }

    /// One line per participant, `- <id> (<kind>): <role>` plus ` — <display name>`.
    pub fn render_participants(&self) -> String {
        if self.participants.is_empty() {
            return "(no participants)".into();
        }
        self.participants
            .iter()
            .map(|p| {
                let mut line = format!("- {} ({}): {}", p.id, p.kind.as_str(), p.role.as_str());
                if !p.display_name.is_empty() {
                    line.push_str(" — ");
                    line.push_str(&p.display_name);
                }
                line
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A `task` event envelope found in a message: its payload, and the field naming its part
/// (for errors about it).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskEnvelope {
    pub payload: Value,
    pub field: String,
}

/// Fields a task envelope may change on an existing task, with who may (the reporter or
/// an admin; an admin).
const OPEN_FIELDS: &[&str] = &["name", "description", "acceptance_criteria"];
const ADMIN_FIELDS: &[&str] = &["participants"];

impl TaskEnvelope {
    /// `ext` as changed by this envelope from participant `editor`: name, description and
    /// acceptance criteria by the reporter or an admin, participants by an admin (see
    /// `ext::permissions`, and [`TaskExtension::check_roster`] with the harness's id
    /// `harness`), nothing else; the result must still match the schema.
    pub fn applied_to(
        &self,
        ext: &TaskExtension,
        editor: &str,
        harness: &str,
    ) -> Result<TaskExtension, crate::a2a::A2aError> {
        use super::permissions::{permits, Action};
        let changes = self.payload.as_object().cloned().unwrap_or_default();
        let fixed: Vec<&str> = changes
            .keys()
            .map(String::as_str)
            .filter(|k| !OPEN_FIELDS.contains(k) && !ADMIN_FIELDS.contains(k))
            .collect();
        if !fixed.is_empty() {
            return Err(self.refuse(format!("task envelope cannot change {}", fixed.join(", "))));
        }
        for (fields, action) in [
            (OPEN_FIELDS, Action::Edit),
            (ADMIN_FIELDS, Action::ChangeParticipants),
        ] {
            let touched = changes.keys().any(|k| fields.contains(&k.as_str()));
            if touched && !permits(ext, editor, action) {
                return Err(self.refuse(action.rule().into()));
            }
        }
        let mut merged = serde_json::to_value(ext).unwrap_or_default();
        if let Some(obj) = merged.as_object_mut() {
            obj.extend(changes);
        }
        let changed = TaskExtension::parse(&merged)
            .map_err(|e| self.refuse(format!("invalid task extension: {e}")))?;
        changed
            .check_roster_from(harness, ext.participants.len())
            .map_err(|e| self.refuse(e))?;
        Ok(changed)
    }

    /// The extension of the task it starts, for the harness `harness` (see
    /// [`TaskExtension::check_roster`]). It links no tasks: links are the harness's to
    /// make (`channels::subtask`), or a client could name any task as its sub-task and
    /// have the agent read it.
    pub fn starting(&self, harness: &str) -> Result<TaskExtension, crate::a2a::A2aError> {
        let ext = TaskExtension::parse(&self.payload)
            .map_err(|e| self.refuse(format!("invalid task extension: {e}")))?;
        if !ext.sub_tasks.is_empty() || !ext.parent_tasks.is_empty() {
            return Err(self.refuse(
                "task envelope cannot set sub_tasks or parent_tasks: the harness links tasks"
                    .into(),
            ));
        }
        ext.check_roster(harness).map_err(|e| self.refuse(e))?;
        Ok(ext)
    }

    fn refuse(&self, why: String) -> crate::a2a::A2aError {
        crate::a2a::A2aError::invalid_field(&self.field, why)
    }
}

/// The `task` event envelope (`application/vnd.tiny-harness.event+json`, `{"kind": "task" |
/// "status_update" | "artifact_update", "payload": {...}}`) of a message: None when there
/// is no `task` envelope (the other kinds speak as the agent: only an agent participant's
/// message may carry them, see `permissions::agent_side`, and they are kept as its
/// content), invalid params naming the part when an envelope is malformed.
pub fn envelope_of(m: &crate::a2a::Message) -> Result<Option<TaskEnvelope>, crate::a2a::A2aError> {
    use crate::a2a::A2aError;
    let Some((i, part)) = m
        .parts
        .iter()
        .enumerate()
        .find(|(_, p)| super::is_media_type(&p.media_type, super::EVENT_MEDIA_TYPE))
    else {
        return Ok(None);
    };
    let field = format!("message.parts[{i}].data");
    let bad = |why: String| A2aError::invalid_field(&field, why);
    let obj = part
        .data
        .as_ref()
        .and_then(Value::as_object)
        .ok_or_else(|| bad("invalid event envelope: not a JSON object".into()))?;
    if let Some(k) = obj.keys().find(|k| *k != "kind" && *k != "payload") {
        return Err(bad(format!("invalid event envelope: unknown field {k:?}")));
    }
    let payload = obj
        .get("payload")
        .filter(|p| p.is_object())
        .ok_or_else(|| bad("invalid event envelope: payload must be an object".into()))?;
    match obj.get("kind").and_then(Value::as_str) {
        Some("task") => Ok(Some(TaskEnvelope {
            payload: payload.clone(),
            field,
        })),
        Some("status_update" | "artifact_update") => Ok(None),
        other => Err(bad(format!(
            "invalid event envelope: kind {other:?} is not task, status_update or artifact_update"
        ))),
    }
}

/// The ids of a task's participants (empty when it has no extension data).
pub fn participant_ids(task: &Task) -> Vec<String> {
    TaskExtension::of(task)
        .map(|e| e.participants.into_iter().map(|p| p.id).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn envelope(payload: Value) -> TaskEnvelope {
        TaskEnvelope {
            payload,
            field: "message.parts[0].data".into(),
        }
    }

    /// `test_inbox_envelopes.py` / `durable/test_envelopes.py`: open fields from the
    /// reporter or an admin (the reference let any participant), participants from
    /// admins only, anything else refused.
    #[test]
    fn an_envelope_on_a_task_changes_open_fields_and_participants_only_for_admins() {
        let mut ext = TaskExtension::from_text("Ship it");
        for (id, role) in [
            ("rita", Role::Reporter),
            ("ada", Role::Admin),
            ("walt", Role::Watcher),
        ] {
            ext.add(Participant::new(id, ParticipantKind::Human, role));
        }
        let criteria = envelope(json!({"acceptance_criteria": [{"text": "green build"}]}));
        let changed = criteria.applied_to(&ext, "rita", "h").unwrap();
        assert_eq!(changed.acceptance_criteria[0].text, "green build");
        assert_eq!(changed.goal, "Ship it");
        let err = criteria
            .applied_to(&ext, "walt", "h")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("only the task's reporter or an admin"),
            "{err}"
        );

        let people = envelope(json!({"participants": [
            {"id": "rita", "kind": "human", "role": "admin"}
        ]}));
        let err = people
            .applied_to(&ext, "rita", "h")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("only an admin may change participants"),
            "{err}"
        );
        let by_admin = people.applied_to(&ext, "ada", "h").unwrap();
        assert!(by_admin.has_role(Some("rita"), Role::Admin));

        let goal = envelope(json!({"goal": "something else", "sub_tasks": []}));
        let err = goal.applied_to(&ext, "ada", "h").unwrap_err().to_string();
        assert!(
            err.contains("task envelope cannot change goal, sub_tasks"),
            "{err}"
        );
        let broken = envelope(json!({"acceptance_criteria": [{"met": true}]}));
        let err = broken.applied_to(&ext, "ada", "h").unwrap_err().to_string();
        assert!(err.contains("invalid task extension"), "{err}");
    }

    #[test]
    fn no_one_is_listed_twice_and_no_person_poses_as_the_harness() {
        let starting = |people: Value| {
            envelope(json!({"name": "n", "goal": "g", "participants": people}))
                .starting("tiny-harness")
                .map_err(|e| e.to_string())
        };
        let e = starting(json!([{"id": "tiny-harness", "kind": "human", "role": "reporter"}]));
        assert!(e.unwrap_err().contains("the harness"));
        let e = starting(json!([
            {"id": "alice", "kind": "human", "role": "watcher"},
            {"id": "alice", "kind": "human", "role": "admin"}
        ]));
        assert!(e.unwrap_err().contains("listed twice"));
        assert!(starting(json!([
            {"id": "alice", "kind": "human", "role": "reporter"},
            {"id": "tiny-harness", "kind": "agent", "role": "assignee"}
        ]))
        .is_ok());
        let crowd = |n: usize| {
            (0..n)
                .map(|i| json!({"id": format!("p{i}"), "kind": "human", "role": "watcher"}))
                .collect::<Vec<_>>()
        };
        assert!(starting(json!(crowd(MAX_PARTICIPANTS))).is_ok());
        let e = starting(json!(crowd(MAX_PARTICIPANTS + 1))).unwrap_err();
        assert!(e.contains("at most 32 participants, not 33"), "{e}");
        // Its sender and agent joined a full envelope's: the task can still be edited,
        // not grown.
        let mut full = TaskExtension::parse(&json!({"name": "n", "goal": "g",
            "participants": crowd(MAX_PARTICIPANTS + 2)}))
        .expect("extension");
        full.participants[0].role = Role::Admin;
        let rename = envelope(json!({"name": "renamed"}));
        assert!(rename.applied_to(&full, "p0", "tiny-harness").is_ok());
        let mut more = crowd(MAX_PARTICIPANTS + 3);
        more[0]["role"] = json!("admin");
        let grow = envelope(json!({"participants": more}));
        assert!(grow.applied_to(&full, "p0", "tiny-harness").is_err());
    }

    #[test]
    fn a_valid_envelope_payload_parses_and_round_trips_through_the_metadata() {
        let v = json!({
            "name": "Review", "goal": "Review the PR",
            "acceptance_criteria": [{"text": "tests pass"}],
            "participants": [{"id": "alice", "kind": "human", "role": "admin", "display_name": "Alice"}]
        });
        let ext = TaskExtension::parse(&v).unwrap();
        assert!(!ext.acceptance_criteria[0].met);
        assert!(ext.has_role(Some("alice"), Role::Admin));
        let mut task = Task::default();
        ext.store(&mut task);
        assert_eq!(TaskExtension::of(&task), Some(ext));
    }

    #[test]
    fn schema_problems_are_named_with_their_paths() {
        let err = TaskExtension::parse(&json!({
            "name": "x", "goal": "y",
            "participants": [{"id": "bob", "kind": "robot", "role": "boss"}],
            "colour": "red"
        }))
        .unwrap_err();
        assert!(err.contains("/participants/0/kind"), "{err}");
        assert!(err.contains("/participants/0/role"), "{err}");
        assert!(err.contains("colour"), "{err}");
        assert!(TaskExtension::parse(&json!({"name": "x"}))
            .unwrap_err()
            .contains("goal"));
    }

    #[test]
    fn membership_fails_closed_and_roles_are_exact() {
        let mut ext = TaskExtension::from_text("Fix the build\nIt is red.");
        assert_eq!(ext.name, "Fix the build");
        assert_eq!(ext.goal, "Fix the build\nIt is red.");
        ext.add(Participant::new(
            "u-1",
            ParticipantKind::Human,
            Role::Reporter,
        ));
        assert!(!ext.is_participant(None));
        assert!(!ext.is_participant(Some("")));
        assert!(ext.is_participant(Some("u-1")));
        assert!(!ext.has_role(Some("u-1"), Role::Admin));
        assert_eq!(ext.render_participants(), "- u-1 (human): reporter");
        assert_eq!(TaskExtension::from_text("  ").name, "task");
    }
}
