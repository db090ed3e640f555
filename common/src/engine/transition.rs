//! How a task record changes: pure functions that apply one change and return the event
//! that announces it, so the change and its event are committed together.

use serde_json::Value;

use crate::a2a::{
    Artifact, Message, Part, Role, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState,
    TaskStatus, TaskStatusUpdateEvent, Timestamp,
};
use crate::ext::task::TaskExtension;
use crate::store::TaskRecord;

/// A new id for a task, context, message, artifact or push config: a UUIDv7, whose
/// leading timestamp makes the embedded store's inserts land at the end of its indexes
/// (with v4's random ids each insert split a page somewhere in the middle: sends at
/// concurrency 32 went 1.4× faster, their p99 from 50 to 20 ms). All 74 bits after the
/// timestamp are random, which keeps it unguessable: `Uuid::now_v7` fills 42 of them with
/// a counter that counts up within a millisecond, so an id made in the same millisecond as
/// one a caller was given would differ from it in 32 random bits. The time it shows is only
/// when it was made. (The thread's generator is not reseeded in a forked process or a
/// restored VM snapshot; the harness never forks, and its functions are not deployed with
/// SnapStart.)
pub fn new_id() -> String {
    let millis = crate::task::lease::now_ms().max(0) as u64;
    uuid::Builder::from_unix_timestamp_millis(millis, &rand::random())
        .into_uuid()
        .to_string()
}

/// A new delimiter nonce for the task's untrusted blocks (see `agent::context`): 64
/// random bits in hex, from the thread's CSPRNG.
pub fn new_nonce() -> String {
    format!("{:016x}", rand::random::<u64>())
}

/// A new task in SUBMITTED for `message`, which gets the task's ids, with the task
/// extension's data `ext`. Its creation event is the Task itself ([`created`]).
pub fn new_task(tenant: &str, message: &mut Message, ext: &TaskExtension) -> TaskRecord {
    new_task_with_id(new_id(), tenant, message, ext)
}

/// [`new_task`] with a chosen id (a sub-task's is its parent's id with a suffix).
pub fn new_task_with_id(
    id: String,
    tenant: &str,
    message: &mut Message,
    ext: &TaskExtension,
) -> TaskRecord {
    if message.context_id.is_empty() {
        message.context_id = new_id();
    }
    message.task_id = id.clone();
    let task = Task {
        id,
        context_id: message.context_id.clone(),
        status: Some(TaskStatus {
            state: TaskState::Submitted,
            message: None,
            timestamp: Some(Timestamp::now()),
        }),
        artifacts: Vec::new(),
        history: vec![message.clone()],
        metadata: None,
    };
    let mut rec = TaskRecord {
        tenant: tenant.to_owned(),
        task,
        ..Default::default()
    };
    // Made with the task, so framing it never costs a write of its own.
    rec.agent.nonce = new_nonce();
    ext.store(&mut rec.task);
    rec
}

/// The event that opens a task's log (seq 0): the task as created.
pub fn created(rec: &TaskRecord) -> StreamResponse {
    StreamResponse::task(rec.task.clone())
}

/// A task assigned to a participant other than the harness waits for them from the
/// start: INPUT_REQUIRED, with its goal as the status message, addressed to them.
pub fn await_assignee(rec: &mut TaskRecord, goal: &str) {
    let mut message = agent_message(&rec.task, vec![Part::text(goal)]);
    rec.waits_on = rec.ext().and_then(|e| e.assignee().map(|a| a.id.clone()));
    if let Some(assignee) = &rec.waits_on {
        crate::ext::participant::address_to(&mut message, assignee);
    }
    rec.task.status = Some(TaskStatus {
        state: TaskState::InputRequired,
        message: Some(message),
        timestamp: Some(Timestamp::now()),
    });
}

/// Adds a client message to the history of an existing task. With `continues` (a message
/// that continues the task) the status message it answers first moves into the history
/// (as the reference SDK does), so the history stays chronological and `historyLength: 1`
/// is the reply; a remark on a task that stays waiting leaves the question in the status.
pub fn accept_message(rec: &mut TaskRecord, message: &mut Message, continues: bool) {
    message.task_id = rec.task.id.clone();
    message.context_id = rec.task.context_id.clone();
    if continues {
        if let Some(question) = rec.task.status.as_mut().and_then(|s| s.message.take()) {
            rec.task.history.push(question);
        }
    }
    rec.task.history.push(message.clone());
}

/// A message from the agent on this task.
pub fn agent_message(task: &Task, parts: Vec<Part>) -> Message {
    Message {
        message_id: new_id(),
        context_id: task.context_id.clone(),
        task_id: task.id.clone(),
        role: Role::Agent,
        parts,
        ..Default::default()
    }
}

/// Moves the task to `state`. The message of the status it replaces joins the history,
/// so the history holds every message once and the current one is in the status.
pub fn set_status(
    rec: &mut TaskRecord,
    state: TaskState,
    message: Option<Message>,
    metadata: Option<serde_json::Map<String, Value>>,
) -> StreamResponse {
    if let Some(old) = rec.task.status.take().and_then(|s| s.message) {
        rec.task.history.push(old);
    }
    // Who it waits on: whom a new question is addressed to; no one once it moves on. A
    // status that keeps it waiting (a command's reply) keeps them.
    if state != TaskState::InputRequired {
        rec.waits_on = None;
    } else if let Some(to) = message
        .as_ref()
        .and_then(crate::ext::participant::addressee)
    {
        rec.waits_on = Some(to.to_owned());
    }
    let status = TaskStatus {
        state,
        message,
        timestamp: Some(Timestamp::now()),
    };
    rec.task.status = Some(status.clone());
    // Written with the change that ends the task, so the parents' wake-up cannot be lost.
    if state.is_terminal() && !super::links::local_parents(rec).is_empty() {
        rec.parents_owed = true;
    }
    StreamResponse::status(TaskStatusUpdateEvent {
        task_id: rec.task.id.clone(),
        context_id: rec.task.context_id.clone(),
        status: Some(status),
        metadata,
    })
}

/// Adds an artifact, or with `append` extends the parts of the one with the same id.
pub fn add_artifact(
    rec: &mut TaskRecord,
    artifact: Artifact,
    append: bool,
    last_chunk: bool,
) -> StreamResponse {
    match rec
        .task
        .artifacts
        .iter_mut()
        .find(|a| a.artifact_id == artifact.artifact_id)
    {
        Some(existing) if append => existing.parts.extend(artifact.parts.iter().cloned()),
        Some(existing) => *existing = artifact.clone(),
        None => rec.task.artifacts.push(artifact.clone()),
    }
    StreamResponse::artifact(TaskArtifactUpdateEvent {
        task_id: rec.task.id.clone(),
        context_id: rec.task.context_id.clone(),
        artifact: Some(artifact),
        append,
        last_chunk,
        metadata: None,
    })
}

/// The task as a client sees it: at most the last `history_length` messages (none when
/// 0), and of those only as many of the newest as hold at most
/// [`RESPONSE_BYTES`](crate::config::RESPONSE_BYTES) of JSON together (what a store's
/// view reads); artifacts only when asked for. It takes the task, so a caller done with
/// its record gives it up rather than copying it.
pub fn view(mut t: Task, history_length: usize, include_artifacts: bool) -> Task {
    let mut keep = 0;
    let mut bytes = 0;
    for m in t.history.iter().rev().take(history_length) {
        bytes += json_len(m);
        if bytes > crate::config::RESPONSE_BYTES {
            break;
        }
        keep += 1;
    }
    let skip = t.history.len() - keep;
    t.history.drain(..skip);
    if !include_artifacts {
        t.artifacts.clear();
    }
    t
}

/// The length of `v` as JSON, counted without printing it anywhere.
fn json_len<T: serde::Serialize>(v: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // A message always prints (its maps have string keys); a failure counts what it wrote.
    let _ = serde_json::to_writer(&mut count, v);
    count.0
}

#[cfg(test)]
mod tests {
    use super::{json_len, new_id, view};
    use crate::a2a::{Message, Part, Task};

    /// A client's view holds the newest messages, as many as asked and no more of them
    /// than fit the answer's bytes.
    #[test]
    fn a_view_holds_the_newest_messages_that_fit_the_answer() {
        let message = |n: usize, len: usize| Message {
            message_id: n.to_string(),
            parts: vec![Part::text("x".repeat(len))],
            ..Default::default()
        };
        let ids = |t: &Task| {
            t.history
                .iter()
                .map(|m| m.message_id.clone())
                .collect::<Vec<_>>()
        };
        let small = Task {
            history: (0..30).map(|n| message(n, 10)).collect(),
            ..Default::default()
        };
        assert_eq!(ids(&view(small.clone(), 3, false)), ["27", "28", "29"]);
        assert!(view(small.clone(), 0, false).history.is_empty());
        assert_eq!(view(small, 100, false).history.len(), 30);
        let third = crate::config::RESPONSE_BYTES / 3;
        let big = Task {
            history: (0..5).map(|n| message(n, third - 100)).collect(),
            ..Default::default()
        };
        let kept = view(big, 100, false);
        assert_eq!(ids(&kept), ["2", "3", "4"]);
        let bytes: usize = kept.history.iter().map(json_len).sum();
        assert!(bytes <= crate::config::RESPONSE_BYTES);
        assert_eq!(
            json_len(&kept.history[0]),
            serde_json::to_string(&kept.history[0]).map_or(0, |j| j.len())
        );
    }

    /// Ids made in the same millisecond share their timestamp and nothing else: the 12
    /// bits after the version (`rand_a`) match between two of them once in 4,096, where a
    /// counter that counts up within the millisecond would make them match nearly always.
    #[test]
    fn ids_made_in_one_millisecond_share_only_the_time() {
        let mut same_ms = 0;
        let mut same_rand_a = 0;
        let mut last = new_id();
        while same_ms < 200 {
            let id = new_id();
            let parsed = uuid::Uuid::parse_str(&id).expect("an id is a uuid");
            assert_eq!(parsed.get_version_num(), 7);
            assert_eq!(parsed.get_variant(), uuid::Variant::RFC4122);
            if id[..13] == last[..13] {
                same_ms += 1;
                same_rand_a += usize::from(id[15..18] == last[15..18]);
            }
            last = id;
        }
        assert!(same_rand_a <= 3, "{same_rand_a} of 200 pairs share rand_a");
    }
}
