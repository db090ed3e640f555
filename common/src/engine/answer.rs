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
use crate::store::{LoggedEvent, Store, StoreError, TaskRecord};

/// How many events one read of the log takes.
const READ_BATCH: usize = 128;

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

    /// Takes back a batch that was not committed: it goes first in the next.
    pub(super) fn put_back(&mut self, batch: Batch) {
        self.pending.insert_str(0, &batch.text);
        self.replace |= !batch.append;
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

/// How a client that was shown `shown` of the answer's artifact (None or empty: nothing)
/// comes to show a turn's `text`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Show<'a> {
    /// It shows it already: no event.
    Nothing,
    /// The text goes on from what was shown: its rest is appended.
    Append(&'a str),
    /// The text takes the place of what was shown, or is the first the client sees.
    Replace,
}

/// What a turn's `text` needs shown: the final answer (`last`) is always finished with
/// `lastChunk`, even when nothing is left to add; a turn that ends in tool calls shows its
/// text whole before the tools run, and an empty one leaves what was shown.
pub(super) fn show<'a>(shown: Option<&str>, text: &'a str, last: bool) -> Show<'a> {
    let shown = shown.filter(|s| !s.is_empty());
    match shown.and_then(|before| text.strip_prefix(before)) {
        Some(rest) if !rest.is_empty() || last => Show::Append(rest),
        Some(_) => Show::Nothing,
        None if text.is_empty() && !last => Show::Nothing,
        None => Show::Replace,
    }
}

/// Makes the change [`show`] says on `rec` and returns its event, the first of its
/// commit. The final answer (`last`) becomes the stored task's artifact; a turn's text
/// that is not the last is in the log alone, where a late subscriber finds it.
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
    let how = show(shown, text, last);
    if last {
        let artifact = artifact(&id, text);
        match rec.task.artifacts.iter_mut().find(|a| a.artifact_id == id) {
            Some(existing) => *existing = artifact,
            None => rec.task.artifacts.push(artifact),
        }
    } else if how == Show::Replace {
        rec.agent.answer = Some(Answering {
            artifact: id.clone(),
            from: rec.last_seq + 1,
        });
    }
    match how {
        Show::Nothing => None,
        Show::Append(rest) => Some(event(rec, &id, rest, true, last)),
        Show::Replace => Some(event(rec, &id, text, false, last)),
    }
}

/// The updates of the answer being written, in order, from the one that last replaced it
/// up to `upto`: what a client that attaches at `upto` has not been shown of it.
pub async fn written_so_far(
    store: &dyn Store,
    task_id: &str,
    answer: &Answering,
    upto: u64,
) -> Result<Vec<LoggedEvent>, StoreError> {
    let mut updates = Vec::new();
    let mut cursor = answer.from.saturating_sub(1);
    while cursor < upto {
        let events = store.read_events(task_id, Some(cursor), READ_BATCH).await?;
        let before = cursor;
        for e in events.into_iter().take_while(|e| e.seq <= upto) {
            cursor = e.seq;
            let of_answer = (e.event.artifact_update.as_ref())
                .and_then(|u| u.artifact.as_ref())
                .is_some_and(|a| a.artifact_id == answer.artifact);
            if of_answer {
                updates.push(e);
            }
        }
        // The log has nothing more up to `upto` (a read past it, or none).
        if cursor == before {
            break;
        }
    }
    Ok(updates)
}

/// Ends the answer being written where it stands, for a task ended by another writer (a
/// cancel) mid-answer: the stored task gets as its artifact the text its clients were
/// shown, and they get an update that finishes it (`lastChunk`, nothing appended). None
/// when no answer is unfinished. Reads the log, so only when there is one.
pub async fn finish_where_it_stands(
    store: &dyn Store,
    rec: &mut TaskRecord,
) -> Result<Option<StreamResponse>, StoreError> {
    let Some(answer) = rec.agent.answer.clone() else {
        return Ok(None);
    };
    if rec
        .task
        .artifacts
        .iter()
        .any(|a| a.artifact_id == answer.artifact)
    {
        return Ok(None);
    }
    let mut text = String::new();
    for update in written_so_far(store, &rec.task.id, &answer, rec.last_seq).await? {
        let Some(u) = update.event.artifact_update else {
            continue;
        };
        if !u.append {
            text.clear();
        }
        let parts = u.artifact.map(|a| a.parts).unwrap_or_default();
        text.extend(parts.iter().filter_map(|p| p.text.as_deref()));
    }
    if text.is_empty() {
        return Ok(None);
    }
    rec.task.artifacts.push(artifact(&answer.artifact, &text));
    Ok(Some(event(rec, &answer.artifact, "", true, true)))
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
    fn a_turn_that_calls_tools_shows_its_text_whole_and_an_empty_one_nothing() {
        let mut rec = TaskRecord {
            last_seq: 7,
            ..Default::default()
        };
        assert!(settle(&mut rec, Some("Let me look"), "Let me look", false).is_none());
        assert!(settle(&mut rec, None, "", false).is_none());
        assert!(settle(&mut rec, Some("Shown"), "", false).is_none());
        let rest = settle(&mut rec, Some("Let me"), "Let me look", false).expect("the rest");
        assert_eq!(text_of(&rest), (" look".into(), true, false));
        // Text no stream showed (a model that does not stream, an answer quicker than a
        // batch, a retry that replaced what was shown) is shown whole, in place of what was.
        let whole = settle(&mut rec, Some("Let me"), "Checking", false).expect("whole");
        assert_eq!(text_of(&whole), ("Checking".into(), false, false));
        assert_eq!(rec.agent.answer.as_ref().map(|a| a.from), Some(8));
        let first = settle(&mut rec, None, "Checking", false).expect("whole");
        assert_eq!(text_of(&first), ("Checking".into(), false, false));
        assert!(rec.task.artifacts.is_empty());
    }

    /// A final answer after a turn that showed nothing (it only called tools) is a new
    /// artifact to a client, never an append to one it was not shown.
    #[test]
    fn an_answer_nothing_was_shown_of_is_a_new_artifact() {
        for shown in [None, Some("")] {
            let mut rec = TaskRecord::default();
            let end = settle(&mut rec, shown, "whole", true).expect("an event");
            assert_eq!(text_of(&end), ("whole".into(), false, true), "{shown:?}");
            assert_eq!(rec.task.artifacts[0].parts, vec![Part::text("whole")]);
        }
    }

    #[test]
    fn a_final_answer_already_shown_whole_is_finished_with_last_chunk() {
        let mut rec = TaskRecord::default();
        let end = settle(&mut rec, Some("done"), "done", true).expect("an event");
        assert_eq!(text_of(&end), ("".into(), true, true));
    }

    #[test]
    fn a_batch_put_back_goes_first_in_the_next_as_it_was() {
        let mut rec = TaskRecord::default();
        let mut draft = Draft::new("a1".into());
        draft.take(Written::Text("Hel".into()));
        let failed = draft.batch();
        draft.take(Written::Text("lo".into()));
        draft.put_back(failed);
        assert_eq!(
            text_of(&draft.batch().apply(&mut rec)),
            ("Hello".into(), false, false)
        );
        draft.take(Written::Text(", w".into()));
        let failed = draft.batch();
        draft.put_back(failed);
        assert_eq!(
            text_of(&draft.batch().apply(&mut rec)),
            (", w".into(), true, false)
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
