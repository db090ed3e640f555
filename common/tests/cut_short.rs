//! A model call that nobody wants any more stops (issue 52, part 3): a cancel of its task,
//! or its lease taken by another drive, drops the call in the process that drives it at
//! once, not when the answer is done; nothing more is written and nothing follows it. On
//! both stores.

mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use common::a2a::{Call, CancelTaskRequest, Message, Part, Role, SendMessageRequest};
use common::models::{ChatRequest, ChatResponse, Delta, Model, ModelError, OnDelta};
use common::ops::{execute, Caller, Harness};
use common::store::Store;
use common::task::lease::Lease;

/// Writes "word " every 100 ms for a minute, or until its call is dropped; after
/// `words` of them it goes silent (as a model thinking, or writing a tool call's
/// arguments, shows nothing). Says when it was dropped and how many calls were made.
#[derive(Default)]
struct Endless {
    words: usize,
    dropped: Arc<Mutex<Option<Instant>>>,
    calls: Arc<Mutex<usize>>,
}

struct OnDrop(Arc<Mutex<Option<Instant>>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    }
}

#[async_trait]
impl Model for Endless {
    async fn chat(&self, _: &ChatRequest) -> Result<ChatResponse, ModelError> {
        Err(ModelError::permanent("streams only"))
    }

    async fn chat_stream(
        &self,
        _: &ChatRequest,
        on_delta: OnDelta<'_>,
    ) -> Result<ChatResponse, ModelError> {
        *self.calls.lock().unwrap() += 1;
        let _guard = OnDrop(self.dropped.clone());
        for i in 0..600 {
            if i < self.words {
                on_delta(Delta::Text("word ".into()));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(ChatResponse {
            text: Some("word ".repeat(600)),
            ..Default::default()
        })
    }
}

struct Running {
    h: Arc<Harness>,
    store: Arc<dyn Store>,
    id: String,
    dropped: Arc<Mutex<Option<Instant>>>,
    calls: Arc<Mutex<usize>>,
}

/// A task on `store` whose model is writing (`words` in all): after its first two batches.
async fn answering(store: Arc<dyn Store>, words: usize) -> Running {
    let model = Endless {
        words,
        ..Default::default()
    };
    let (dropped, calls) = (model.dropped.clone(), model.calls.clone());
    let h = support::llm_harness(store.clone(), Arc::new(model));
    let send = SendMessageRequest {
        message: Some(Message {
            message_id: common::engine::transition::new_id(),
            role: Role::User,
            parts: vec![Part::text("Write on.")],
            ..Default::default()
        }),
        ..Default::default()
    };
    let id = support::streaming_until(&h, send, &Caller::named("alice"), 2).await;
    Running {
        h,
        store,
        id,
        dropped,
        calls,
    }
}

impl Running {
    async fn cancel(&self) -> Instant {
        let cancel = CancelTaskRequest {
            id: self.id.clone(),
            ..Default::default()
        };
        assert!(self.dropped.lock().unwrap().is_none(), "still writing");
        let at = Instant::now();
        let answer = execute(&self.h, Call::CancelTask(cancel), &Caller::named("alice")).await;
        assert!(answer.is_ok(), "cancelled: {:?}", answer.err());
        at
    }

    async fn logged(&self) -> usize {
        let events = self.store.read_events(&self.id, None, 10_000).await;
        events.expect("events").len()
    }

    /// The call was dropped within `within` of `since`, and nothing was written or called
    /// after.
    async fn stopped(&self, since: Instant, within: Duration) {
        let logged = self.logged().await;
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let dropped = self.dropped.lock().unwrap().expect("the call was dropped");
        assert!(
            dropped.saturating_duration_since(since) < within,
            "dropped {:?} after",
            dropped.saturating_duration_since(since)
        );
        assert_eq!(self.logged().await, logged, "nothing written after");
        assert_eq!(*self.calls.lock().unwrap(), 1, "no model call follows");
    }
}

fn cancelled_calls() -> f64 {
    let text = common::metrics::render_prometheus();
    text.lines()
        .find_map(|l| l.strip_prefix("harness_model_calls_cancelled_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

/// Writing, the call stops at its next batch, which finds the task cancelled: in any
/// process, so on Lambda too.
#[tokio::test]
async fn a_cancel_ends_the_model_call_as_it_writes_and_counts_it() {
    for store in support::stores().await {
        let before = cancelled_calls();
        let task = answering(store, 600).await;
        let at = task.cancel().await;
        task.stopped(at, Duration::from_secs(2)).await;
        assert!(cancelled_calls() >= before + 1.0, "counted");
    }
}

/// Silent, the call stops as soon as the process that drives it hears of the cancel, not
/// at the lease's next renewal (a third of its 5 minutes).
#[tokio::test]
async fn a_cancel_ends_a_silent_model_call_in_the_process_that_took_it() {
    for store in support::stores().await {
        let task = answering(store, 2).await;
        let at = task.cancel().await;
        task.stopped(at, Duration::from_secs(2)).await;
    }
}

#[tokio::test]
async fn a_drive_whose_lease_is_taken_stops_writing() {
    for store in support::stores().await {
        let task = answering(store, 2).await;
        let mut rec = (task.store.load_task(&task.id).await)
            .expect("read")
            .expect("the task");
        // Another drive has it now (as after a sweep took an expired lease).
        rec.lease = Some(Lease::new("another-drive", Duration::from_secs(300)));
        assert!(task.dropped.lock().unwrap().is_none(), "still writing");
        let at = Instant::now();
        (task.store.commit(&rec, rec.version, &[], None).await).expect("taken");
        task.stopped(at, Duration::from_secs(2)).await;
    }
}
