//! Following a task's event log as a stream: what SendStreamingMessage and SubscribeToTask
//! deliver. Every follower reads the same log in sequence order, so concurrent followers
//! see the same events in the same order.
//!
//! A follower sees the task only while it may: before each batch of events the task's head
//! is read again and put to the follower's test ([`MaySee`]), and a follower whose token
//! stops being accepted ([`Follow::until`]) is done at that instant, so a participant taken
//! off the task, or whose token expired, gets nothing that happened after: their stream
//! ends with the task's not-found, the error a stranger gets.
//!
//! What a stream costs is bounded: it lasts at most [`MAX_STREAM`](crate::config::MAX_STREAM) (then ends; the client
//! subscribes again), re-reads the log without a signal no more often than every
//! [`POLL_MIN`], backing off to [`POLL_MAX`] while nothing happens (a reader in another
//! process than the writer, such as a Lambda function, pays a Query per read), and a task
//! has at most [`MAX_SUBSCRIBERS`] streams in one process, SubscribeToTask's and
//! SendStreamingMessage's together, at most [`MAX_SUBSCRIBERS_EACH`] of them any one
//! participant's (in Lambda, where each stream is an invocation of its own, one process
//! holds one stream at a time: the functions' reserved concurrency bounds them all).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::Stream;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

use crate::a2a::{A2aError, StreamResponse};
use crate::store::conversation::Answering;
use crate::store::{Store, TaskRecord};

/// Re-reads the log this soon after an event even without a signal, for writers in other
/// processes...
pub const POLL_MIN: Duration = Duration::from_millis(250);
/// ...and, doubling while the log stays quiet, at least this often.
pub const POLL_MAX: Duration = Duration::from_secs(2);
/// Most streams of one task at once in one process (SubscribeToTask and
/// SendStreamingMessage together)...
pub const MAX_SUBSCRIBERS: usize = 16;
/// ...and most of them one participant holds, so no one can take a task's every place.
pub const MAX_SUBSCRIBERS_EACH: usize = 4;
const BATCH: usize = 128;

/// The streams each task has in this process, in all and by participant.
#[derive(Debug, Clone, Default)]
pub struct Subscribers(Arc<Mutex<Counts>>);

#[derive(Debug, Default)]
struct Counts {
    tasks: HashMap<String, usize>,
    /// By task, then participant.
    each: HashMap<(String, String), usize>,
}

/// One participant's subscription to a task, counted until dropped (when its stream ends).
#[derive(Debug)]
pub struct Subscription {
    of: Subscribers,
    task_id: String,
    participant: String,
}

/// Why a subscription was not taken.
#[derive(Debug, PartialEq, Eq)]
pub enum Full {
    /// The task has [`MAX_SUBSCRIBERS`].
    Task,
    /// The participant holds [`MAX_SUBSCRIBERS_EACH`] of the task's.
    Participant,
}

impl Subscribers {
    /// A subscription to `task_id` for `participant`, unless either is full.
    pub fn take(&self, task_id: &str, participant: &str) -> Result<Subscription, Full> {
        let mut counts = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let key = (task_id.to_owned(), participant.to_owned());
        if counts
            .each
            .get(&key)
            .is_some_and(|n| *n >= MAX_SUBSCRIBERS_EACH)
        {
            return Err(Full::Participant);
        }
        if counts
            .tasks
            .get(task_id)
            .is_some_and(|n| *n >= MAX_SUBSCRIBERS)
        {
            return Err(Full::Task);
        }
        Ok(self.add(&mut counts, key))
    }

    /// A subscription to `task_id` for `participant`, full or not: the stream of a task
    /// the participant's message has just created (its first, but for a race with a
    /// stream of someone the new task names).
    pub fn hold(&self, task_id: &str, participant: &str) -> Subscription {
        let mut counts = self.0.lock().unwrap_or_else(|e| e.into_inner());
        self.add(&mut counts, (task_id.to_owned(), participant.to_owned()))
    }

    fn add(&self, counts: &mut Counts, key: (String, String)) -> Subscription {
        *counts.tasks.entry(key.0.clone()).or_default() += 1;
        *counts.each.entry(key.clone()).or_default() += 1;
        let (task_id, participant) = key;
        Subscription {
            of: self.clone(),
            task_id,
            participant,
        }
    }

    /// [`take`](Self::take), or the error that says which place is full.
    pub fn admit(&self, task_id: &str, participant: &str) -> Result<Subscription, A2aError> {
        self.take(task_id, participant).map_err(|full| {
            A2aError::UnsupportedOperation(match full {
                Full::Task => format!(
                    "Task {task_id} has {MAX_SUBSCRIBERS} streams open already (subscriptions \
                     and streaming sends), the most one task takes; stream again when one ends"
                ),
                Full::Participant => format!(
                    "You hold {MAX_SUBSCRIBERS_EACH} streams of task {task_id} already \
                     (subscriptions and streaming sends together), the most one participant \
                     takes; stream again when one ends, or send without streaming"
                ),
            })
        })
    }

    #[cfg(test)]
    fn open(&self, task_id: &str) -> usize {
        let counts = self.0.lock().unwrap_or_else(|e| e.into_inner());
        counts.tasks.get(task_id).copied().unwrap_or(0)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut counts = self.of.0.lock().unwrap_or_else(|e| e.into_inner());
        let released = |count: Option<&mut usize>| {
            count.is_some_and(|n| {
                *n -= 1;
                *n == 0
            })
        };
        let key = (
            std::mem::take(&mut self.task_id),
            std::mem::take(&mut self.participant),
        );
        if released(counts.tasks.get_mut(&key.0)) {
            counts.tasks.remove(&key.0);
        }
        if released(counts.each.get_mut(&key)) {
            counts.each.remove(&key);
        }
    }
}

/// Whether the follower may see the task as its head now stands (its tenant, and the caller
/// among its participants).
pub type MaySee = Arc<dyn Fn(&TaskRecord) -> bool + Send + Sync>;

/// Where a follower starts and when it stops.
pub struct Follow {
    pub task_id: String,
    /// Asked of the head before each batch; the stream ends, saying nothing more, once it
    /// fails.
    pub may_see: MaySee,
    /// Sent before anything from the log: the Task as it is now.
    pub first: StreamResponse,
    /// Log events with a greater seq are sent.
    pub after: u64,
    /// Events up to this seq are history and never end the stream...
    pub replay_until: u64,
    /// ...but if the task was already terminal or interrupted then, the stream ends there.
    pub settled: bool,
    /// Held for as long as the stream lasts: its place among the task's streams.
    pub subscription: Option<Subscription>,
    /// When the follower's token stops being accepted: the stream ends then, with the
    /// task's not-found (None: no token, or one that outlives any stream).
    pub until: Option<std::time::Instant>,
    /// The answer being written when `first` was read (the task's
    /// [`Answering`]): its text so far is in the log alone, so its updates up to `after`
    /// are sent after `first` (see [`super::answer`]).
    pub answer: Option<Answering>,
}

pub type EventStream = std::pin::Pin<Box<dyn Stream<Item = Result<Sent, A2aError>> + Send>>;

/// An event of a stream, with where in the task's log a client that has it stands (its
/// SSE `id`): the seq of the last log event whose effect it has, and a tag of the task,
/// so that an id another task issued is told apart (`<seq>.<tag>`, opaque to clients).
/// The ids of a stream never go back, and a stream resumed from one
/// (`ops::subscribe_to_task`, `Last-Event-ID`) sends what came after it.
#[derive(Debug, Clone)]
pub struct Sent {
    pub event: StreamResponse,
    /// None for the one message of a send that made no task.
    pub id: Option<String>,
}

impl std::ops::Deref for Sent {
    type Target = StreamResponse;

    fn deref(&self) -> &StreamResponse {
        &self.event
    }
}

/// The cursor in `id`, an SSE id issued for `task_id`; None for any other.
pub fn cursor_of(id: &str, task_id: &str) -> Option<u64> {
    let (cursor, t) = id.split_once('.')?;
    if t != tag(task_id) || cursor.is_empty() || !cursor.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    cursor.parse().ok()
}

/// `event` with the id of a client that has it: standing at `cursor` of the task `tag`.
fn sent(event: StreamResponse, cursor: u64, tag: &str) -> Sent {
    Sent {
        event,
        id: Some(format!("{cursor}.{tag}")),
    }
}

fn tag(task_id: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(task_id.as_bytes());
    digest[..6].iter().map(|b| format!("{b:02x}")).collect()
}

/// Streams the events; ends after an event that leaves the task terminal or interrupted,
/// after [`MAX_STREAM`](crate::config::MAX_STREAM), or with the task's not-found once the
/// follower may no longer see it.
pub fn follow(store: Arc<dyn Store>, f: Follow) -> EventStream {
    follow_for(store, f, crate::config::MAX_STREAM)
}

/// [`follow`] for at most `longest`.
fn follow_for(store: Arc<dyn Store>, f: Follow, longest: Duration) -> EventStream {
    let (tx, mut rx) = mpsc::channel(64);
    tokio::spawn(async move {
        let gone = A2aError::task_not_found(&f.task_id);
        let until = f.until;
        let expired = async move {
            match until {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            // First: a token expired already sees nothing.
            biased;
            () = expired => {
                let _ = tx.send(Err(gone)).await;
            }
            _ = tokio::time::timeout(longest, produce(store, f, &tx)) => {}
        }
    });
    Box::pin(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)))
}

type Tx = mpsc::Sender<Result<Sent, A2aError>>;

/// Err means the follower went away.
async fn produce(store: Arc<dyn Store>, f: Follow, tx: &Tx) -> Result<(), ()> {
    // Subscribed before the first read, so no commit falls between the two.
    let mut changes = store.changes();
    let answer = f.answer.as_ref().filter(|a| a.from <= f.after);
    // The task holds every effect up to `after` but the answer's text: a client that has
    // it stands before the answer's first update, which follows it.
    let stands = answer.map_or(f.after, |a| a.from.saturating_sub(1));
    let tag = tag(&f.task_id);
    tx.send(Ok(sent(f.first, stands, &tag)))
        .await
        .map_err(|_| ())?;
    if f.settled && f.after >= f.replay_until {
        return Ok(());
    }
    if let Some(answer) = answer {
        answer_so_far(&*store, &f.task_id, answer, f.after, &tag, tx).await?;
    }
    let mut cursor = f.after;
    let mut poll = POLL_MIN;
    loop {
        let events = match store.read_events(&f.task_id, Some(cursor), BATCH).await {
            Ok(events) => events,
            Err(e) => {
                let _ = tx.send(Err(e.into())).await;
                return Ok(());
            }
        };
        if events.is_empty() {
            if tx.is_closed() {
                return Err(());
            }
            wait_for(&mut changes, &f.task_id, poll).await;
            poll = (poll * 2).min(POLL_MAX);
            continue;
        }
        poll = POLL_MIN;
        match store
            .load_view(&f.task_id, Some(0), false, &*f.may_see)
            .await
        {
            Ok(Some(_)) => {}
            // Off the task now: what a stranger is told, and nothing that came after.
            Ok(None) => {
                let _ = tx.send(Err(A2aError::task_not_found(&f.task_id))).await;
                return Ok(());
            }
            Err(e) => {
                let _ = tx.send(Err(e.into())).await;
                return Ok(());
            }
        }
        for e in events {
            cursor = e.seq;
            let ends = e.event.state().is_some_and(|s| s.ends_stream());
            tx.send(Ok(sent(e.event, e.seq, &tag)))
                .await
                .map_err(|_| ())?;
            let end = if e.seq <= f.replay_until {
                f.settled && e.seq == f.replay_until
            } else {
                ends
            };
            if end {
                return Ok(());
            }
        }
    }
}

/// Sends the updates of the answer's artifact from where its text starts up to `upto`.
async fn answer_so_far(
    store: &dyn Store,
    task_id: &str,
    answer: &Answering,
    upto: u64,
    tag: &str,
    tx: &Tx,
) -> Result<(), ()> {
    match super::answer::written_so_far(store, task_id, answer, upto).await {
        Ok(updates) => {
            for update in updates {
                let event = sent(update.event, update.seq, tag);
                tx.send(Ok(event)).await.map_err(|_| ())?;
            }
            Ok(())
        }
        Err(e) => {
            let _ = tx.send(Err(e.into())).await;
            Err(())
        }
    }
}

async fn wait_for(
    changes: &mut tokio::sync::broadcast::Receiver<String>,
    task_id: &str,
    poll: Duration,
) {
    let deadline = tokio::time::sleep(poll);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            _ = &mut deadline => return,
            r = changes.recv() => match r {
                Ok(id) if id == task_id => return,
                Ok(_) => {}
                Err(RecvError::Lagged(_)) => return,
                Err(RecvError::Closed) => { (&mut deadline).await; return }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::{Task, TaskState, TaskStatus};
    use crate::store::{EmbeddedStore, TaskRecord};
    use futures::StreamExt;

    #[test]
    fn a_task_takes_at_most_its_subscribers_and_a_dropped_one_frees_its_place() {
        let subscribers = Subscribers::default();
        let people = MAX_SUBSCRIBERS / MAX_SUBSCRIBERS_EACH;
        let held: Vec<_> = (0..MAX_SUBSCRIBERS)
            .map(|i| {
                let who = format!("p{}", i % people);
                subscribers.take("t", &who).expect("a place")
            })
            .collect();
        assert_eq!(
            subscribers.take("t", "someone else").err(),
            Some(Full::Task)
        );
        assert!(subscribers.take("other", "p0").is_ok(), "per task");
        drop(held);
        assert_eq!(subscribers.open("t"), 0);
        assert!(subscribers
            .0
            .lock()
            .unwrap()
            .each
            .keys()
            .all(|(t, _)| t == "other"));
        assert!(subscribers.take("t", "p0").is_ok());
    }

    #[test]
    fn one_participant_takes_at_most_their_share_of_a_task() {
        let subscribers = Subscribers::default();
        let mine: Vec<_> = (0..MAX_SUBSCRIBERS_EACH)
            .map(|_| subscribers.take("t", "walt").expect("a place"))
            .collect();
        assert_eq!(subscribers.take("t", "walt").err(), Some(Full::Participant));
        assert!(
            subscribers.take("t", "ada").is_ok(),
            "others still subscribe"
        );
        assert!(subscribers.take("u", "walt").is_ok(), "per task");
        // The stream of a task walt's message created is held however full.
        let created = subscribers.hold("t", "walt");
        drop(mine);
        let again: Vec<_> = (1..MAX_SUBSCRIBERS_EACH)
            .map(|_| subscribers.take("t", "walt").expect("a place"))
            .collect();
        assert_eq!(subscribers.take("t", "walt").err(), Some(Full::Participant));
        drop((created, again));
        assert!(subscribers.take("t", "walt").is_ok());
    }

    /// A stream on a task that never settles ends at its longest, without an error.
    #[tokio::test]
    async fn a_stream_ends_at_its_longest() {
        let dir = tempfile::Builder::new()
            .prefix("harness-follow-")
            .tempdir()
            .expect("a temporary directory");
        let store = Arc::new(EmbeddedStore::open(dir.path()).expect("store"));
        let rec = TaskRecord {
            task: Task {
                id: "t".into(),
                context_id: "c".into(),
                status: Some(TaskStatus {
                    state: TaskState::Working,
                    message: None,
                    timestamp: None,
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let first = StreamResponse::task(rec.task.clone());
        store
            .create_task(&rec, std::slice::from_ref(&first), None)
            .await
            .expect("task");
        let f = Follow {
            task_id: "t".into(),
            may_see: Arc::new(|_| true),
            first,
            after: 0,
            replay_until: 0,
            settled: false,
            subscription: None,
            until: None,
            answer: None,
        };
        let stream = follow_for(store, f, Duration::from_millis(300));
        let events = tokio::time::timeout(Duration::from_secs(5), stream.collect::<Vec<_>>())
            .await
            .expect("the stream ended");
        assert_eq!(events.len(), 1, "the task, then nothing");
    }
}
