//! The answer as it is written: the text a model streams goes into the task's log in
//! batches, as `artifactUpdate` events of one artifact, so every stream and webhook of the
//! task (which read the log) shows it growing, on either store and across processes.
//!
//! - **Batches.** The first piece of a model call is committed at once; after it, what
//!   has come is committed every [`BATCH_EVERY`], or as soon as it reaches
//!   [`BATCH_BYTES`], whichever is first. A batch is one conditional commit of the head
//!   and one event (it also renews the run's lease): its cost does not grow with the
//!   answer. The stored task gets the artifact once, whole, with the final answer; until
//!   then the text is in the log alone.
//! - **One artifact per task.** Its id, and the seq where the text it shows starts, are
//!   kept in the agent's state
//!   ([`Answering`](crate::store::conversation::Answering)), so the text of a turn that
//!   ends in tool calls, of a retried call, and the final answer all update the same
//!   artifact.
//! - **What a client sees.** Each model call's first batch replaces what the artifact
//!   showed (`append: false`): the text of an earlier turn, or of an attempt cut off and
//!   retried ([`Written::Restart`]). The batches after it append (`append: true`). The
//!   final answer is committed with the task's end as the rest of its text, appended with
//!   `lastChunk: true`, or, if it does not go on from what was shown, replacing it. A
//!   client that applies `append` as A2A says ends with the answer once.
//! - **A late subscriber** gets the task as it stands, then the artifact's updates from
//!   the last replacing one up to the task's snapshot (`engine::follow`), then the events
//!   after it: what has been written so far, and the rest, each once.

use std::time::{Duration, Instant};

use crate::a2a::{Artifact, Part, StreamResponse, TaskArtifactUpdateEvent};
use crate::store::conversation::Answering;
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
    pub(super) text: String,
    pub(super) append: bool,
}

impl Batch {
    /// Makes the change on `rec` and returns its event: the text in the log, not in the
    /// stored artifact.
    pub(super) fn apply(&self, rec: &mut TaskRecord) -> StreamResponse {
        if !self.append {
            rec.agent.answer = Some(Answering {
                artifact: self.artifact_id.clone(),
                // The one event of its commit.
                from: rec.last_seq + 1,
            });
        }
        event(rec, &self.artifact_id, &self.text, self.append, false)
    }
}

/// The event that leaves a client that was shown `shown` of the answer's artifact showing
/// `text`: the rest of it appended when it goes on from what was shown, else the whole of
/// it in place of that. `last` marks the task's final answer, which the stored task gets
/// as its artifact; a turn that is not the last gets an event only to finish what was
/// being shown (`None` when nothing was, or it is whole already).
pub(super) fn settle(
    rec: &mut TaskRecord,
    shown: Option<&str>,
    text: &str,
    last: bool,
) -> Option<StreamResponse> {
    let id = match &rec.agent.answer {
        Some(a) => a.artifact.clone(),
        None => super::transition::new_id(),
    };
    let rest = shown.and_then(|before| text.strip_prefix(before));
    if !last {
        return rest
            .filter(|rest| !rest.is_empty() && shown.is_some_and(|s| !s.is_empty()))
            .map(|rest| event(rec, &id, rest, true, false));
    }
    let artifact = artifact(&id, text);
    match rec.task.artifacts.iter_mut().find(|a| a.artifact_id == id) {
        Some(existing) => *existing = artifact,
        None => rec.task.artifacts.push(artifact),
    }
    Some(match rest {
        Some(rest) => event(rec, &id, rest, true, true),
        None => event(rec, &id, text, false, true),
    })
}

fn artifact(id: &str, text: &str) -> Artifact {
    Artifact {
        artifact_id: id.to_owned(),
        name: ANSWER.into(),
        parts: vec![Part::text(text)],
        ..Default::default()
    }
}

fn event(rec: &TaskRecord, id: &str, text: &str, append: bool, last_chunk: bool) -> StreamResponse {
    StreamResponse::artifact(TaskArtifactUpdateEvent {
        task_id: rec.task.id.clone(),
        context_id: rec.task.context_id.clone(),
        artifact: Some(artifact(id, text)),
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
        let mut rec = TaskRecord {
            last_seq: 4,
            ..Default::default()
        };
        let mut draft = Draft::new("a1".into());
        draft.take(Written::Text("Hel".into()));
        let first = draft.batch().apply(&mut rec);
        assert_eq!(text_of(&first), ("Hel".into(), false, false));
        assert_eq!(rec.agent.answer.as_ref().map(|a| a.from), Some(5));
        rec.last_seq += 1;
        draft.take(Written::Text("lo, ".into()));
        let second = draft.batch().apply(&mut rec);
        assert_eq!(text_of(&second), ("lo, ".into(), true, false));
        assert_eq!(
            rec.agent.answer.as_ref().map(|a| a.from),
            Some(5),
            "appended"
        );
        assert!(
            rec.task.artifacts.is_empty(),
            "the text is in the log alone"
        );
        let end = settle(&mut rec, Some("Hello, "), "Hello, world", true).expect("an event");
        assert_eq!(text_of(&end), ("world".into(), true, true));
        assert_eq!(rec.task.artifacts.len(), 1);
        assert_eq!(rec.task.artifacts[0].artifact_id, "a1");
        assert_eq!(
            rec.task.artifacts[0].parts,
            vec![Part::text("Hello, world")]
        );
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
        let end = settle(&mut rec, Some("The"), "An answer", true).expect("an event");
        assert_eq!(text_of(&end), ("An answer".into(), false, true));
    }

    #[test]
    fn a_turn_that_calls_tools_finishes_what_it_showed_and_nothing_else() {
        let mut rec = TaskRecord::default();
        assert!(settle(&mut rec, None, "Let me look", false).is_none());
        assert!(settle(&mut rec, Some("Let me look"), "Let me look", false).is_none());
        let rest = settle(&mut rec, Some("Let me"), "Let me look", false).expect("the rest");
        assert_eq!(text_of(&rest), (" look".into(), true, false));
        assert!(rec.task.artifacts.is_empty());
    }

    #[test]
    fn an_answer_nothing_was_shown_of_is_a_new_artifact() {
        let mut rec = TaskRecord::default();
        let end = settle(&mut rec, None, "whole", true).expect("an event");
        assert_eq!(text_of(&end), ("whole".into(), false, true));
        assert_eq!(rec.task.artifacts[0].parts, vec![Part::text("whole")]);
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
