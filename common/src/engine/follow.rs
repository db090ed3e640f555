//! Following a task's event log as a stream: what SendStreamingMessage and SubscribeToTask
//! deliver. Every follower reads the same log in sequence order, so concurrent followers
//! see the same events in the same order.

use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

use crate::a2a::{A2aError, StreamResponse};
use crate::store::Store;

/// Re-reads the log this often even without a signal, for writers in other processes.
const POLL: Duration = Duration::from_millis(250);
const BATCH: usize = 128;

/// Where a follower starts and when it stops.
pub struct Follow {
    pub task_id: String,
    /// Sent before anything from the log (the current Task).
    pub first: Option<StreamResponse>,
    /// Read events with seq greater than this (None: from the start).
    pub after: Option<u64>,
    /// Events up to this seq are replayed history and never end the stream; once they
    /// are sent, the stream ends if `ended_at_replay` says the task is already settled.
    pub replay_until: Option<u64>,
    pub ended_at_replay: bool,
}

pub type EventStream =
    std::pin::Pin<Box<dyn Stream<Item = Result<StreamResponse, A2aError>> + Send>>;

/// Streams the events; ends after an event that leaves the task terminal or interrupted.
pub fn follow(store: Arc<dyn Store>, f: Follow) -> EventStream {
    let (tx, mut rx) = mpsc::channel(64);
    tokio::spawn(async move {
        let _ = produce(store, f, &tx).await;
    });
    Box::pin(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)))
}

type Tx = mpsc::Sender<Result<StreamResponse, A2aError>>;

/// Err means the follower went away.
async fn produce(store: Arc<dyn Store>, f: Follow, tx: &Tx) -> Result<(), ()> {
    let mut changes = store.changes();
    if let Some(first) = f.first {
        tx.send(Ok(first)).await.map_err(|_| ())?;
    }
    let mut cursor = f.after;
    let is_replay = |seq: u64| f.replay_until.is_some_and(|r| seq <= r);
    let nothing_to_replay = match (f.replay_until, cursor) {
        (Some(r), Some(c)) => c >= r,
        _ => false,
    };
    if nothing_to_replay && f.ended_at_replay {
        return Ok(());
    }
    loop {
        let events = match store.read_events(&f.task_id, cursor, BATCH).await {
            Ok(events) => events,
            Err(e) => {
                let _ = tx.send(Err(A2aError::Internal(e.to_string()))).await;
                return Ok(());
            }
        };
        if events.is_empty() {
            if tx.is_closed() {
                return Err(());
            }
            wait_for(&mut changes, &f.task_id).await;
            continue;
        }
        for e in events {
            cursor = Some(e.seq);
            let replayed = is_replay(e.seq);
            let ends = e.event.state().is_some_and(|s| s.ends_stream());
            tx.send(Ok(e.event)).await.map_err(|_| ())?;
            let end = if replayed {
                f.ended_at_replay && f.replay_until == Some(e.seq)
            } else {
                ends
            };
            if end {
                return Ok(());
            }
        }
    }
}

async fn wait_for(changes: &mut tokio::sync::broadcast::Receiver<String>, task_id: &str) {
    let deadline = tokio::time::sleep(POLL);
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
