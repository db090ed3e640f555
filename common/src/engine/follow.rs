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
    /// Sent before anything from the log: the Task as it is now.
    pub first: StreamResponse,
    /// Log events with a greater seq are sent.
    pub after: u64,
    /// Events up to this seq are history and never end the stream...
    pub replay_until: u64,
    /// ...but if the task was already terminal or interrupted then, the stream ends there.
    pub settled: bool,
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
    // Subscribed before the first read, so no commit falls between the two.
    let mut changes = store.changes();
    tx.send(Ok(f.first)).await.map_err(|_| ())?;
    if f.settled && f.after >= f.replay_until {
        return Ok(());
    }
    let mut cursor = f.after;
    loop {
        let events = match store.read_events(&f.task_id, Some(cursor), BATCH).await {
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
            cursor = e.seq;
            let ends = e.event.state().is_some_and(|s| s.ends_stream());
            tx.send(Ok(e.event)).await.map_err(|_| ())?;
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
