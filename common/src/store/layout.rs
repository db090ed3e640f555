//! How a task record is laid out in a store: a bounded head and append-only parts.
//!
//! The head is the record without its history, its artifacts and the agent's conversation,
//! and without a status message longer than [`STATUS_INLINE_BYTES`]: what ListTasks reads
//! and what every commit rewrites. Each history message and each conversation turn is a
//! part of its own, keyed by task, kind and index, and written once; an artifact is a part
//! written again when a chunk extends it; a long status message is a part of its own. A
//! commit writes the head and the parts that changed since the record was read, so its
//! cost follows what changed, not the size of the task. Both stores keep this layout.
//!
//! The split is also where a task's bounds ([`TaskBounds`]) are kept: it knows what the
//! record holds ([`Size`](super::bounds::Size)) against what the store held when it was read, and both stores
//! make it inside their conditional write, so of two writers that read the same version
//! only one commits, and the other's retry is measured again: no race passes a bound.

use std::hash::{Hash, Hasher};

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use super::bounds::Size;
use super::{StoreError, TaskRecord};
use crate::a2a::{Task, TaskStatus};
use crate::config::TaskBounds;

/// Longest status message (as JSON) the head holds; a longer one is a part of its own.
pub const STATUS_INLINE_BYTES: usize = 4 * 1024;
/// Largest head (as JSON): what a task keeps besides its parts (metadata with the task
/// envelope, the agent's bookkeeping). A commit that would make it larger is refused as
/// too large, so no head item passes 64 KB.
pub const HEAD_BYTES: usize = 48 * 1024;

/// What a part holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PartKind {
    Artifact,
    History,
    Status,
    Turn,
}

impl PartKind {
    pub const ALL: [PartKind; 4] = [
        PartKind::Artifact,
        PartKind::History,
        PartKind::Status,
        PartKind::Turn,
    ];

    /// The stored code of the kind (the embedded store's column).
    pub const fn code(self) -> i64 {
        match self {
            PartKind::Artifact => 0,
            PartKind::History => 1,
            PartKind::Status => 2,
            PartKind::Turn => 3,
        }
    }

    pub fn from_code(code: i64) -> Result<Self, StoreError> {
        PartKind::ALL
            .into_iter()
            .find(|k| k.code() == code)
            .ok_or_else(|| StoreError::Corrupt(format!("unknown part kind {code}")))
    }
}

/// One part as written: its JSON, and whether it is written once (history and turns: a
/// write over an existing one is a conflict) or may replace the one before (artifacts,
/// the status message).
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub kind: PartKind,
    pub index: u64,
    pub json: String,
    pub once: bool,
}

/// How many parts of each kind a task has: kept in the head, so a reader knows what to
/// read (and a reader that asks for the last messages, which).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Counts {
    pub history: u64,
    pub artifacts: u64,
    pub turns: u64,
    /// The status message is a part of its own (too long for the head).
    pub status: bool,
}

/// What the store holds of a record, so the next commit writes only what changed. Not
/// part of the record's content: two records are equal whatever their `Stored`.
#[derive(Debug, Clone, Default)]
pub struct Stored {
    history: usize,
    turns: usize,
    /// Fingerprints of the stored artifacts, in order.
    artifacts: Vec<u64>,
    /// Fingerprint of the stored status-message part.
    status: Option<u64>,
    /// Only some of the task was read (a view for a reader): it cannot be committed.
    partial: bool,
    /// What the store's listing index holds of the task; None when unknown (a store
    /// without such an index, or a task written before it): the next commit writes it all.
    pub listing: Option<Listing>,
    /// Whether an event of the task was stored in more than one item; None when unknown
    /// (a task written before the store kept count): its events' keys cannot be told
    /// from its last seq alone.
    pub events_chunked: Option<bool>,
    /// Bytes of the stored history and conversation parts (they only grow, and a commit
    /// does not print them again).
    history_bytes: u64,
    turn_bytes: u64,
    /// What the task held, as its bounds count it.
    size: Size,
}

/// What a listing index keeps of a task: who may list it, and where it sorts and filters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    pub members: Vec<String>,
    pub status_ms: i64,
    pub state: i32,
    /// The member the task waits on, listed as "waiting on me" for them.
    pub waiting: Option<String>,
}

impl Listing {
    pub fn of(rec: &TaskRecord) -> Self {
        // The roster is parsed once a commit: `waiting_on` would parse it again.
        let members = rec.members();
        let waiting = (rec.waits_on.as_ref())
            .filter(|w| rec.state() == crate::a2a::TaskState::InputRequired && members.contains(w))
            .cloned();
        Listing {
            members,
            status_ms: rec.status_millis(),
            state: rec.state().number(),
            waiting,
        }
    }
}

impl PartialEq for Stored {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Stored {
    pub fn is_partial(&self) -> bool {
        self.partial
    }

    /// What the stored task holds, as its bounds count it.
    pub fn size(&self) -> Size {
        self.size
    }
}

/// A record ready to be written: the head's JSON and counts, the parts that changed, and
/// what the store holds once they are written.
#[derive(Debug)]
pub struct Split {
    pub head: String,
    pub counts: Counts,
    pub parts: Vec<Part>,
    pub stored: Stored,
}

fn corrupt(e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(e.to_string())
}

fn to_json<T: Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(corrupt)
}

fn fingerprint(json: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    json.hash(&mut h);
    h.finish()
}

/// Serializes a record's task as its head keeps it: no history, no artifacts (the
/// record's `Serialize` is the head's, through this).
pub fn task_head<S: Serializer>(task: &Task, s: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Head<'a> {
        #[serde(skip_serializing_if = "str::is_empty")]
        id: &'a str,
        #[serde(skip_serializing_if = "str::is_empty")]
        context_id: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<&'a TaskStatus>,
        #[serde(skip_serializing_if = "Option::is_none")]
        metadata: Option<&'a Map<String, Value>>,
    }
    Head {
        id: &task.id,
        context_id: &task.context_id,
        status: task.status.as_ref(),
        metadata: task.metadata.as_ref().filter(|m| !m.is_empty()),
    }
    .serialize(s)
}

/// The head and the parts of `rec` that changed since it was read. History and the
/// conversation only grow: a record whose lists are shorter than what was stored, or a
/// view, is refused; so is one that grows past `bounds` (`TaskFull`, see
/// [`Size::passes`]).
pub fn split(rec: &TaskRecord, bounds: &TaskBounds) -> Result<Split, StoreError> {
    let was = &rec.stored;
    let (history, turns) = (&rec.task.history, &rec.agent.conversation);
    if was.partial {
        return Err(corrupt(format!(
            "task {}: a partial view of a task cannot be committed",
            rec.id()
        )));
    }
    if history.len() < was.history
        || turns.len() < was.turns
        || rec.task.artifacts.len() < was.artifacts.len()
    {
        return Err(corrupt(format!(
            "task {}: history, artifacts and conversation only grow",
            rec.id()
        )));
    }
    let mut parts = Vec::new();
    let (mut history_bytes, mut turn_bytes) = (was.history_bytes, was.turn_bytes);
    let mut once = |kind, index: usize, json: String| {
        let bytes = json.len() as u64;
        parts.push(Part {
            kind,
            index: index as u64,
            json,
            once: true,
        });
        bytes
    };
    for (i, m) in history.iter().enumerate().skip(was.history) {
        history_bytes += once(PartKind::History, i, to_json(m)?);
    }
    for (i, t) in turns.iter().enumerate().skip(was.turns) {
        turn_bytes += once(PartKind::Turn, i, to_json(t)?);
    }
    let mut size = Size {
        messages: history.len() as u64,
        bytes: history_bytes + turn_bytes,
    };
    let mut artifacts = Vec::with_capacity(rec.task.artifacts.len());
    for (i, a) in rec.task.artifacts.iter().enumerate() {
        let json = to_json(a)?;
        size.bytes += json.len() as u64;
        let print = fingerprint(&json);
        if was.artifacts.get(i) != Some(&print) {
            parts.push(Part {
                kind: PartKind::Artifact,
                index: i as u64,
                json,
                once: false,
            });
        }
        artifacts.push(print);
    }
    let mut status = None;
    if let Some(m) = rec.task.status.as_ref().and_then(|s| s.message.as_ref()) {
        let json = to_json(m)?;
        size.messages += 1;
        size.bytes += json.len() as u64;
        if json.len() > STATUS_INLINE_BYTES {
            let print = fingerprint(&json);
            if was.status != Some(print) {
                parts.push(Part {
                    kind: PartKind::Status,
                    index: 0,
                    json,
                    once: false,
                });
            }
            status = Some(print);
        }
    }
    let counts = Counts {
        history: history.len() as u64,
        artifacts: artifacts.len() as u64,
        turns: turns.len() as u64,
        status: status.is_some(),
    };
    let head = if status.is_some() {
        // The status message is a part of its own: the head is printed without it.
        let mut head = serde_json::to_value(rec).map_err(corrupt)?;
        if let Some(s) = head
            .pointer_mut("/task/status")
            .and_then(Value::as_object_mut)
        {
            s.remove("message");
        }
        if let Some(o) = head.as_object_mut() {
            o.insert(
                "parts".into(),
                serde_json::to_value(counts).map_err(corrupt)?,
            );
        }
        head.to_string()
    } else {
        to_json(&Head {
            record: rec,
            parts: counts,
        })?
    };
    if head.len() > HEAD_BYTES {
        return Err(StoreError::TooLarge(rec.id().to_owned()));
    }
    if let Some(bound) = size.passes(was.size, bounds, rec.state().is_terminal()) {
        return Err(StoreError::TaskFull {
            task_id: rec.id().to_owned(),
            bound,
        });
    }
    Ok(Split {
        head,
        counts,
        parts,
        stored: Stored {
            history: history.len(),
            turns: turns.len(),
            artifacts,
            status,
            partial: false,
            listing: Some(Listing::of(rec)),
            events_chunked: rec.stored.events_chunked,
            history_bytes,
            turn_bytes,
            size,
        },
    })
}

/// A head as printed: the record (whose task is printed without its lists, see
/// [`task_head`]) and the counts of its parts.
#[derive(Serialize)]
struct Head<'a> {
    #[serde(flatten)]
    record: &'a TaskRecord,
    parts: Counts,
}

/// A record from its head, with the counts of the parts it has. A head written before
/// this layout holds everything (and no counts): its lists are read from it, and the next
/// commit writes them as parts.
pub fn decode_head(json: &str) -> Result<(TaskRecord, Counts), StoreError> {
    /// The head's counts alone; the record passes over them. Two passes over the text
    /// cost less than building a `Value` of it to take them out (a sixth of GetTask's CPU).
    #[derive(Deserialize)]
    struct Parts {
        #[serde(default)]
        parts: Counts,
    }
    let rec: TaskRecord = serde_json::from_str(json).map_err(corrupt)?;
    let Parts { parts } = serde_json::from_str(json).map_err(corrupt)?;
    Ok((rec, parts))
}

/// What of a task a reader wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Want {
    /// The last this many history messages; all when None.
    pub history: Option<usize>,
    pub artifacts: bool,
    /// The agent's conversation (only a whole record, which can be committed, has it).
    pub turns: bool,
    /// Most bytes of history parts read: the store reads them newest first and stops
    /// before this many ([`Want::keeping`] says how many it kept). None: no budget.
    pub history_bytes: Option<usize>,
}

impl Want {
    /// Everything: a record that can be committed.
    pub const WHOLE: Want = Want {
        history: None,
        artifacts: true,
        turns: true,
        history_bytes: None,
    };

    /// A reader's view: at most [`RESPONSE_BYTES`](crate::config::RESPONSE_BYTES) of
    /// history, whatever `history` asks.
    pub fn view(history: Option<usize>, artifacts: bool) -> Want {
        Want {
            history,
            artifacts,
            turns: false,
            history_bytes: Some(crate::config::RESPONSE_BYTES),
        }
    }

    /// The want once a budgeted read of the history kept its newest `n` messages.
    pub fn keeping(self, n: usize) -> Want {
        Want {
            history: Some(n),
            ..self
        }
    }

    fn whole(&self) -> bool {
        *self == Want::WHOLE
    }

    /// The first history index to read, of `count`.
    pub fn first_history(&self, count: u64) -> u64 {
        self.history.map_or(0, |n| count.saturating_sub(n as u64))
    }

    /// Whether parts of `kind` are read at all, given the head's counts.
    pub fn reads(&self, kind: PartKind, counts: &Counts) -> bool {
        match kind {
            PartKind::Artifact => self.artifacts && counts.artifacts > 0,
            PartKind::History => self.first_history(counts.history) < counts.history,
            PartKind::Status => counts.status,
            PartKind::Turn => self.turns && counts.turns > 0,
        }
    }

    /// The range of indexes of `kind` to read, given the head's counts.
    pub fn range(&self, kind: PartKind, counts: &Counts) -> std::ops::Range<u64> {
        match kind {
            PartKind::Artifact => 0..counts.artifacts,
            PartKind::History => self.first_history(counts.history)..counts.history,
            PartKind::Status => 0..1,
            PartKind::Turn => 0..counts.turns,
        }
    }
}

/// Puts the parts read for `want` (any order; parts past the head's counts, written
/// after it was read, are left out) into the record decoded from the head.
pub fn attach(
    rec: &mut TaskRecord,
    counts: &Counts,
    want: Want,
    mut parts: Vec<(PartKind, u64, String)>,
) -> Result<(), StoreError> {
    parts.retain(|(kind, index, _)| {
        want.reads(*kind, counts) && want.range(*kind, counts).contains(index)
    });
    parts.sort_by_key(|(kind, index, _)| (*kind, *index));
    let mut artifacts = Vec::new();
    let mut status = None;
    let (mut bytes, mut history_bytes, mut turn_bytes) = (0u64, 0u64, 0u64);
    for (kind, _, json) in &parts {
        let bad = |e: serde_json::Error| corrupt(format!("{kind:?} part: {e}"));
        let len = json.len() as u64;
        bytes += len;
        match kind {
            PartKind::History => history_bytes += len,
            PartKind::Turn => turn_bytes += len,
            PartKind::Artifact | PartKind::Status => {}
        }
        match kind {
            PartKind::Artifact => {
                rec.task
                    .artifacts
                    .push(serde_json::from_str(json).map_err(bad)?);
                artifacts.push(fingerprint(json));
            }
            PartKind::History => rec
                .task
                .history
                .push(serde_json::from_str(json).map_err(bad)?),
            PartKind::Turn => rec
                .agent
                .conversation
                .push(serde_json::from_str(json).map_err(bad)?),
            PartKind::Status => {
                if let Some(s) = rec.task.status.as_mut() {
                    s.message = Some(serde_json::from_str(json).map_err(bad)?);
                }
                status = Some(fingerprint(json));
            }
        }
    }
    let expected = |kind| {
        let r = want.range(kind, counts);
        if want.reads(kind, counts) {
            r.end - r.start
        } else {
            0
        }
    };
    let got = |kind| parts.iter().filter(|p| p.0 == kind).count() as u64;
    if let Some(kind) = PartKind::ALL.into_iter().find(|k| got(*k) != expected(*k)) {
        return Err(corrupt(format!(
            "task {}: {kind:?} parts missing ({} of {})",
            rec.id(),
            got(kind),
            expected(kind)
        )));
    }
    rec.stored = if want.whole() {
        // A head from before this layout has its lists inline and nothing as parts: the
        // next commit writes them all.
        let inline = counts == &Counts::default();
        let message = rec.task.status.as_ref().and_then(|s| s.message.as_ref());
        if let (Some(m), None) = (message, status) {
            // The status message the head holds.
            bytes += to_json(m)?.len() as u64;
        }
        let size = Size {
            messages: rec.task.history.len() as u64 + u64::from(message.is_some()),
            bytes,
        };
        Stored {
            history: if inline { 0 } else { rec.task.history.len() },
            turns: if inline {
                0
            } else {
                rec.agent.conversation.len()
            },
            artifacts: if inline { Vec::new() } else { artifacts },
            status,
            partial: false,
            listing: None,
            events_chunked: None,
            history_bytes: if inline { 0 } else { history_bytes },
            turn_bytes: if inline { 0 } else { turn_bytes },
            size: if inline { Size::default() } else { size },
        }
    } else {
        Stored {
            partial: true,
            ..Stored::default()
        }
    };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::{Artifact, Message, Part as A2aPart, TaskState};
    use crate::store::conversation::ChatMessage;
    use crate::store::Bound;

    fn message(text: &str) -> Message {
        Message {
            message_id: text.into(),
            parts: vec![A2aPart::text(text)],
            ..Default::default()
        }
    }

    fn record() -> TaskRecord {
        let mut rec = TaskRecord::default();
        rec.task.id = "t".into();
        rec.task.status = Some(TaskStatus {
            state: TaskState::Working,
            ..Default::default()
        });
        rec.task.history = vec![message("a"), message("b")];
        rec.agent.conversation = vec![ChatMessage::User {
            text: "turn-text".into(),
        }];
        rec
    }

    /// Stores `split` the way a store does, and reads it back whole.
    fn round_trip(split: &Split) -> TaskRecord {
        let (mut back, counts) = decode_head(&split.head).expect("head");
        let parts = split
            .parts
            .iter()
            .map(|p| (p.kind, p.index, p.json.clone()))
            .collect();
        attach(&mut back, &counts, Want::WHOLE, parts).expect("attach");
        back
    }

    #[test]
    fn a_commit_writes_only_what_changed_and_the_head_holds_no_lists() {
        let rec = record();
        let first = split(&rec, &TaskBounds::default()).expect("split");
        assert_eq!(first.parts.len(), 3, "two messages and a turn");
        assert!(!first.head.contains("\"history\":[") && !first.head.contains("turn-text"));
        let mut back = round_trip(&first);
        assert_eq!(back, rec);

        back.stored = first.stored;
        back.task.history.push(message("c"));
        back.add_test_artifact("x", "one");
        let second = split(&back, &TaskBounds::default()).expect("split");
        let kinds: Vec<_> = second.parts.iter().map(|p| (p.kind, p.index)).collect();
        assert_eq!(kinds, [(PartKind::History, 2), (PartKind::Artifact, 0)]);

        back.stored = second.stored;
        back.task.artifacts[0].parts.push(A2aPart::text("two"));
        let third = split(&back, &TaskBounds::default()).expect("split");
        let kinds: Vec<_> = third.parts.iter().map(|p| (p.kind, p.index)).collect();
        assert_eq!(
            kinds,
            [(PartKind::Artifact, 0)],
            "an extended artifact is written again"
        );
        assert!(!third.parts[0].once);
    }

    #[test]
    fn every_field_of_the_head_reads_back() {
        let mut rec = record();
        rec.tenant = "acme".into();
        rec.task.context_id = "ctx".into();
        rec.task.metadata = serde_json::json!({"k": {"b": 1, "a": [true, null]}})
            .as_object()
            .cloned();
        (rec.version, rec.last_seq, rec.handovers) = (7, 12, 2);
        (rec.push, rec.wake, rec.parents_owed) = (true, true, true);
        rec.waits_on = Some("bob".into());
        rec.lease = Some(crate::task::lease::Lease::new(
            "owner",
            std::time::Duration::from_secs(30),
        ));
        let s = split(&rec, &TaskBounds::default()).expect("split");
        assert_eq!(round_trip(&s), rec);
    }

    #[test]
    fn a_long_status_message_is_a_part_and_reads_back() {
        let mut rec = record();
        let long = message(&"x".repeat(STATUS_INLINE_BYTES));
        rec.task.status.as_mut().expect("status").message = Some(long.clone());
        let s = split(&rec, &TaskBounds::default()).expect("split");
        assert!(s.counts.status && s.head.len() < STATUS_INLINE_BYTES);
        assert!(s.parts.iter().any(|p| p.kind == PartKind::Status));
        assert_eq!(round_trip(&s), rec);
    }

    #[test]
    fn a_task_is_measured_as_its_bounds_count_it_whether_split_or_read() {
        let mut rec = record();
        rec.add_test_artifact("x", "one");
        let status = message("status");
        rec.task.status.as_mut().expect("status").message = Some(status.clone());
        let s = split(&rec, &TaskBounds::NONE).expect("split");
        let parts: u64 = s.parts.iter().map(|p| p.json.len() as u64).sum();
        let inline = serde_json::to_string(&status).expect("json").len() as u64;
        let size = Size {
            messages: 3,
            bytes: parts + inline,
        };
        assert_eq!(s.stored.size(), size, "two history messages and the status");
        assert_eq!(round_trip(&s).stored.size(), size, "read back whole");
    }

    #[test]
    fn only_growth_past_a_bound_is_refused_and_an_ending_passes_by_its_status() {
        let bounds = TaskBounds {
            messages: 3,
            bytes: 1_000_000,
        };
        let full = {
            let mut rec = round_trip(&split(&record(), &bounds).expect("two messages"));
            rec.task.history.push(message("c"));
            rec.stored = split(&rec, &bounds).expect("three: the bound").stored;
            rec
        };
        let mut more = full.clone();
        more.task.history.push(message("d"));
        let refused = split(&more, &bounds);
        assert!(
            matches!(
                refused,
                Err(StoreError::TaskFull {
                    bound: Bound::Messages(3),
                    ..
                })
            ),
            "{refused:?}"
        );
        let bytes = TaskBounds {
            bytes: 10,
            ..TaskBounds::NONE
        };
        assert!(matches!(
            split(&more, &bytes),
            Err(StoreError::TaskFull {
                bound: Bound::Bytes(10),
                ..
            })
        ));
        // A write that does not grow the task (its lease, say) goes in past a bound
        // lowered since.
        let lowered = TaskBounds {
            messages: 1,
            ..bounds
        };
        assert!(split(&full, &lowered).is_ok());
        // The write that ends it may add one short status message, and no more.
        let mut ended = full.clone();
        ended.task.status = Some(TaskStatus {
            state: TaskState::Failed,
            message: Some(message("the task is full")),
            ..Default::default()
        });
        assert!(split(&ended, &bounds).is_ok());
        ended.task.history.push(message("e"));
        assert!(split(&ended, &bounds).is_err());
    }

    #[test]
    fn shrinking_lists_and_views_are_refused() {
        let rec = record();
        let s = split(&rec, &TaskBounds::default()).expect("split");
        let mut back = round_trip(&s);
        back.stored = s.stored;
        back.task.history.pop();
        assert!(split(&back, &TaskBounds::default()).is_err());

        let (mut view, counts) = decode_head(&s.head).expect("head");
        let last = s
            .parts
            .iter()
            .filter(|p| p.kind == PartKind::History && p.index == 1)
            .map(|p| (p.kind, p.index, p.json.clone()))
            .collect();
        attach(&mut view, &counts, Want::view(Some(1), false), last).expect("view");
        assert_eq!(view.task.history, vec![message("b")]);
        assert!(view.stored.is_partial() && split(&view, &TaskBounds::default()).is_err());
    }

    #[test]
    fn a_head_from_before_the_layout_reads_whole_and_is_written_out_as_parts() {
        let rec = record();
        // The old format: the whole record in one JSON document.
        let mut old = serde_json::to_value(&rec).expect("json");
        old["task"]["history"] = serde_json::to_value(&rec.task.history).expect("history");
        old["agent"]["conversation"] =
            serde_json::to_value(&rec.agent.conversation).expect("turns");
        let (mut back, counts) = decode_head(&old.to_string()).expect("head");
        attach(&mut back, &counts, Want::WHOLE, Vec::new()).expect("attach");
        assert_eq!(back, rec);
        assert_eq!(
            split(&back, &TaskBounds::default())
                .expect("split")
                .parts
                .len(),
            3
        );
    }

    impl TaskRecord {
        fn add_test_artifact(&mut self, id: &str, text: &str) {
            self.task.artifacts.push(Artifact {
                artifact_id: id.into(),
                parts: vec![A2aPart::text(text)],
                ..Default::default()
            });
        }
    }
}
