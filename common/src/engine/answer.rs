//! The answer as it is written: the text a model streams goes into the task's log in
//! batches, as `artifactUpdate` events of one artifact, so every stream and webhook of the
//! task (which read the log) shows it growing, on either store and across processes.
//!
//! - **Batches.** The first piece of a model call is committed at once; after it, what
//!   has come is committed every [`BATCH_EVERY`], or as soon as it reaches
//!   [`BATCH_BYTES`], whichever is first. A batch is one conditional commit (the head,
//!   the artifact part, one event), which also renews the run's lease; on DynamoDB its
//!   cost in write units is in `common/docs/streaming.md`.
//! - **One artifact per task.** Its id is kept in the agent's state
//!   ([`AgentState::answer`](crate::store::conversation::AgentState::answer)), so the text of
//!   a turn that ends in tool calls, of a retried call, and the final answer all update
//!   the same artifact; the stored artifact holds the text shown so far as one part.
//! - **What a client sees.** Each model call's first batch replaces what the artifact
//!   showed (`append: false`): the text of an earlier turn, or of an attempt cut off and
//!   retried ([`Written::Restart`]). The batches after it append (`append: true`). The
//!   final answer is committed with the task's end as the rest of its text, appended with
//!   `lastChunk: true`, or, if it does not go on from what was shown, replacing it. A
//!   client that applies `append` as A2A says ends with the answer once; one that joins
//!   the texts of the updates since the last `append: false` does too.
//! - **A late subscriber** gets the task as it stands (the artifact so far) and then the
//!   events after it: the rest of the answer, once.

use std::time::{Duration, Instant};

use crate::a2a::{Artifact, Part, StreamResponse, TaskArtifactUpdateEvent};
use crate::store::TaskRecord;

/// How long text waits, after a batch, before it is committed...
pub const BATCH_EVERY: Duration = Duration::from_millis(250);
/// ...unless it reaches this many bytes first.
pub const BATCH_BYTES: usize = 1024;
/// The name of the answer's artifact.
pub const ANSWER: &str = "answer";

/// What a model writes, as the run is told of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// More text of the answer.
    Text(String),
    /// The call is made again: the text so far is void.
    Restart,
}

/// The text of one model call not committed yet, and when the last batch was.
#[derive(Debug)]
pub(super) struct Draft {
    artifact_id: String,
    pending: String,
    /// The next batch replaces what the artifact shows (a call's first, or after a restart).
    replace: bool,
    last: Option<Instant>,
}

impl Draft {
    pub(super) fn new(artifact_id: String) -> Self {
        Draft {
            artifact_id,
            pending: String::new(),
            replace: true,
            last: None,
        }
    }

    pub(super) fn take(&mut self, written: Written) {
        match written {
            Written::Text(t) => self.pending.push_str(&t),
            Written::Restart => {
                self.pending.clear();
                self.replace = true;
            }
        }
    }

    /// When the pending text is due to be committed (None: nothing pending).
    pub(super) fn due(&self) -> Option<Instant> {
        if self.pending.is_empty() {
            return None;
        }
        match self.last {
            Some(last) if self.pending.len() < BATCH_BYTES => Some(last + BATCH_EVERY),
            _ => Some(Instant::now()),
        }
    }

    /// The batch to commit now, leaving nothing pending.
    pub(super) fn batch(&mut self) -> Batch {
        let batch = Batch {
            artifact_id: self.artifact_id.clone(),
            text: std::mem::take(&mut self.pending),
            append: !self.replace,
        };
        self.replace = false;
        self.last = Some(Instant::now());
        batch
    }
}

/// Text committed as one event.
#[derive(Debug, Clone)]
pub(super) struct Batch {
    artifact_id: String,
    text: String,
    append: bool,
}

impl Batch {
    /// Makes the change on `rec` and returns its event.
    pub(super) fn apply(&self, rec: &mut TaskRecord) -> StreamResponse {
        rec.agent.answer = Some(self.artifact_id.clone());
        let shown = if self.append {
            shown(rec, &self.artifact_id).unwrap_or_default() + &self.text
        } else {
            self.text.clone()
        };
        update(
            rec,
            &self.artifact_id,
            shown,
            &self.text,
            self.append,
            false,
        )
    }
}

/// The text the artifact `id` shows in `rec`, if it has one.
fn shown(rec: &TaskRecord, id: &str) -> Option<String> {
    let artifact = rec.task.artifacts.iter().find(|a| a.artifact_id == id)?;
    Some(
        artifact
            .parts
            .iter()
            .filter_map(|p| p.text.as_deref())
            .collect(),
    )
}

/// Sets the answer's artifact to `text` in `rec`, and returns the event that tells a
/// client so: the rest of it appended when it goes on from what the artifact shows, else
/// the whole of it in place of that. `last` marks the task's final answer. The artifact
/// is the one the task's streamed text went to, or a new one.
pub fn settle(rec: &mut TaskRecord, text: &str, last: bool) -> StreamResponse {
    let id = rec
        .agent
        .answer
        .clone()
        .unwrap_or_else(super::transition::new_id);
    rec.agent.answer = Some(id.clone());
    match shown(rec, &id) {
        Some(before) if text.starts_with(&before) => {
            let rest = text[before.len()..].to_owned();
            update(rec, &id, text.to_owned(), &rest, true, last)
        }
        _ => update(rec, &id, text.to_owned(), text, false, last),
    }
}

/// The rest of a turn's text whose start was shown as it was written (a turn that ends in
/// tool calls), so what is shown is not cut off midway; nothing if none of it was.
pub fn went_on(rec: &mut TaskRecord, text: &str) -> Option<StreamResponse> {
    let id = rec.agent.answer.clone()?;
    let before = shown(rec, &id)?;
    (!before.is_empty() && before.len() < text.len() && text.starts_with(&before))
        .then(|| settle(rec, text, false))
}

/// Leaves the artifact `id` showing `whole` and returns the event carrying `piece`.
fn update(
    rec: &mut TaskRecord,
    id: &str,
    whole: String,
    piece: &str,
    append: bool,
    last_chunk: bool,
) -> StreamResponse {
    let artifact = |text: String| Artifact {
        artifact_id: id.to_owned(),
        name: ANSWER.into(),
        parts: vec![Part::text(text)],
        ..Default::default()
    };
    match rec.task.artifacts.iter_mut().find(|a| a.artifact_id == id) {
        Some(existing) => *existing = artifact(whole),
        None => rec.task.artifacts.push(artifact(whole)),
    }
    StreamResponse::artifact(TaskArtifactUpdateEvent {
        task_id: rec.task.id.clone(),
        context_id: rec.task.context_id.clone(),
        artifact: Some(artifact(piece.to_owned())),
        append,
        last_chunk,
        metadata: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(event: &StreamResponse) -> (String, bool, bool) {
        let json = serde_json::to_value(event).expect("json");
        let u = &json["artifactUpdate"];
        (
            u["artifact"]["parts"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            u["append"].as_bool().unwrap_or(false),
            u["lastChunk"].as_bool().unwrap_or(false),
        )
    }

    #[test]
    fn batches_then_the_rest_of_the_answer_make_the_answer_once() {
        let mut rec = TaskRecord::default();
        let mut draft = Draft::new("a1".into());
        draft.take(Written::Text("Hel".into()));
        let first = draft.batch().apply(&mut rec);
        assert_eq!(text_of(&first), ("Hel".into(), false, false));
        draft.take(Written::Text("lo, ".into()));
        let second = draft.batch().apply(&mut rec);
        assert_eq!(text_of(&second), ("lo, ".into(), true, false));
        let end = settle(&mut rec, "Hello, world", true);
        assert_eq!(text_of(&end), ("world".into(), true, true));
        assert_eq!(shown(&rec, "a1").as_deref(), Some("Hello, world"));
        assert_eq!(rec.task.artifacts.len(), 1);
        assert_eq!(rec.task.artifacts[0].parts.len(), 1);
    }

    #[test]
    fn a_restart_or_a_new_call_replaces_what_was_shown() {
        let mut rec = TaskRecord::default();
        let mut draft = Draft::new("a1".into());
        draft.take(Written::Text("Let me look".into()));
        draft.batch().apply(&mut rec);
        draft.take(Written::Text(" it up".into()));
        draft.take(Written::Restart);
        assert_eq!(draft.due(), None, "the void text is not committed");
        draft.take(Written::Text("The".into()));
        let replaced = draft.batch().apply(&mut rec);
        assert_eq!(text_of(&replaced), ("The".into(), false, false));
        // A final answer that does not go on from what is shown replaces it.
        let end = settle(&mut rec, "An answer", true);
        assert_eq!(text_of(&end), ("An answer".into(), false, true));
    }

    #[test]
    fn an_answer_nothing_was_shown_of_is_a_new_artifact() {
        let mut rec = TaskRecord::default();
        let end = settle(&mut rec, "whole", true);
        assert_eq!(text_of(&end), ("whole".into(), false, true));
        assert_eq!(
            rec.agent.answer.as_deref(),
            Some(rec.task.artifacts[0].artifact_id.as_str())
        );
    }

    #[test]
    fn a_batch_is_due_at_once_first_then_by_time_or_size() {
        let mut draft = Draft::new("a".into());
        assert_eq!(draft.due(), None);
        draft.take(Written::Text("x".into()));
        assert!(draft.due().expect("pending") <= Instant::now());
        draft.batch();
        draft.take(Written::Text("y".into()));
        assert!(draft.due().expect("pending") > Instant::now());
        draft.take(Written::Text("z".repeat(BATCH_BYTES)));
        assert!(draft.due().expect("pending") <= Instant::now());
    }
}
