//! A TaskRun is an agent's handle on the task it works on: each change it makes is
//! committed with its event at the version last read, and a conflicting change made by
//! someone else (a cancel) is seen on the retry. A run holding the task's lease renews it
//! with every commit and gives it up in the commit that leaves the task terminal or
//! waiting for input; a run that must stop early hands the task over (`hand_over`).
//!
//! A run may start from a write held back ([`Staged`]): the message that made the task
//! runnable, not yet stored. Its changes then stay in memory until the run waits on
//! something (`keeping_lease`) or ends, and go to the store in one commit with the
//! message: an agent that answers at once costs a send one write.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, mpsc};

use super::answer::{Draft, Written};
use super::transition;
use crate::a2a::{Artifact, Message, StreamResponse, TaskState};
use crate::store::{InboundMessage, Store, StoreError, TaskRecord};
use crate::task::lease::Lease;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    /// The task reached a final state through another writer (e.g. CancelTask).
    #[error("task was ended elsewhere ({0:?})")]
    Ended(TaskState),
    #[error("task disappeared from the store")]
    Gone,
    /// Another drive took the task (this one's lease ran out).
    #[error("the task's lease was taken over by another drive")]
    LeaseLost,
    /// The invocation's deadline came during a step: the step was dropped, uncommitted,
    /// and the task handed over to another drive at once.
    #[error("the invocation's deadline cut a step off; the task was handed over")]
    CutOff,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A write a run holds back: the message that made the task runnable, with the events
/// of the change it caused and of the run's changes since. The record it starts from is
/// stored at `base`, or not at all yet (`None`: a new task).
#[derive(Debug, Clone)]
pub struct Staged {
    pub base: Option<u64>,
    pub events: Vec<StreamResponse>,
    pub message: InboundMessage,
}

pub struct TaskRun {
    store: Arc<dyn Store>,
    record: TaskRecord,
    /// The write not yet made, when the run started from one ([`Staged`]).
    staged: Option<Staged>,
    /// The lease this run holds: its owner and how long each renewal lasts.
    lease: Option<(String, Duration)>,
    /// When the invocation running this must have stopped.
    deadline: Option<Instant>,
    handed_over: bool,
    /// The tasks this run created for participants, committed: to announce once it ends.
    pub created: Vec<TaskRecord>,
    /// The run ends waiting on a timer: the sweep wakes the task after this long (a
    /// timer in place of the lease: a remote agent's next poll, a delegation's deadline).
    pub poll_after: Option<Duration>,
    /// What this run's commits have left the answer's artifact showing to streams
    /// ([`super::answer`]); None before it showed any.
    shown: Option<String>,
}

/// How long before its deadline a step in progress is dropped, so the run can still
/// hand the task over (one small commit) before the invocation ends.
const RELEASE_MARGIN: Duration = Duration::from_secs(1);

/// How long before its deadline a run stops taking new steps: enough to checkpoint and
/// release. A step started later than that may be cut off by the deadline; it was not
/// committed, so the drive that takes over after the lease runs out repeats it.
const DEADLINE_MARGIN: Duration = Duration::from_secs(5);

impl TaskRun {
    pub fn new(store: Arc<dyn Store>, record: TaskRecord) -> Self {
        TaskRun {
            store,
            record,
            staged: None,
            lease: None,
            deadline: None,
            handed_over: false,
            created: Vec::new(),
            poll_after: None,
            shown: None,
        }
    }

    /// The run starts from `staged`, a write not yet made, which its first commit makes.
    pub fn staged(mut self, staged: Staged) -> Self {
        self.staged = Some(staged);
        self
    }

    /// Whether the run has stored nothing yet: a failure leaves no trace to clean up.
    pub fn is_staged(&self) -> bool {
        self.staged.is_some()
    }

    /// Makes the write held back, if any, with every change since in it.
    pub async fn flush(&mut self) -> Result<(), RunError> {
        let Some(staged) = self.staged.take() else {
            return Ok(());
        };
        let message = Some(&staged.message);
        self.record = match staged.base {
            None => {
                (self.store)
                    .create_task(&self.record, &staged.events, message)
                    .await?
            }
            Some(base) => {
                (self.store)
                    .commit(&self.record, base, &staged.events, message)
                    .await?
            }
        };
        Ok(())
    }

    /// The run holds the task's lease as `owner`; every commit renews it for `ttl`.
    pub fn leased(mut self, owner: &str, ttl: Duration, deadline: Option<Instant>) -> Self {
        self.lease = Some((owner.to_owned(), ttl));
        self.deadline = deadline;
        self
    }

    /// Whether the invocation is too near its deadline to start another step.
    pub fn out_of_time(&self) -> bool {
        self.deadline
            .is_some_and(|d| d.saturating_duration_since(Instant::now()) < DEADLINE_MARGIN)
    }

    /// The run stops with work left: on release, the task is left runnable for another
    /// drive to pick up from the checkpoint.
    pub fn hand_over(&mut self) {
        self.handed_over = true;
    }

    /// Gives up the lease (if the run still holds it); a handed-over task that still
    /// has work is left runnable, which is its wake-up. Returns the task as left, stored
    /// (a write held back is made now, with the release in it).
    pub async fn release(mut self) -> Result<TaskRecord, RunError> {
        if holds(&self.lease, &self.record) {
            let hand_over = self.handed_over;
            let poll = self.poll_after;
            self.apply(|rec| {
                rec.lease = poll.map(crate::task::lease::Lease::poll);
                if poll.is_some() {
                    // A poll is not a drive cut off: the sweep's count starts again.
                    rec.handovers = 0;
                }
                // A wake set meanwhile (a sub-task ended) stands: this write wakes it.
                rec.wake |=
                    hand_over && matches!(rec.state(), TaskState::Submitted | TaskState::Working);
                Vec::new()
            })
            .await?;
        }
        self.flush().await?;
        Ok(self.record)
    }

    /// Waits for `work` (a model call) while keeping the run's lease: renewed every third
    /// of its length, so a step slower than the lease is not handed to another drive
    /// mid-call. A renewal that finds the lease taken ends the wait (`LeaseLost`; the work
    /// is dropped, so its answer is never committed). So does the invocation's deadline
    /// (`CutOff`): the task is marked for hand-over at once, not after its lease lapses.
    pub async fn keeping_lease<T>(
        &mut self,
        work: impl std::future::Future<Output = T>,
    ) -> Result<T, RunError> {
        self.waiting(work, None).await
    }

    /// [`keeping_lease`](Self::keeping_lease) for a model call whose text is shown as it
    /// is written: what `written` tells of is committed in batches ([`super::answer`]),
    /// each a renewal of the lease. A batch that finds the task ended (a cancel) or taken
    /// ends the wait as a renewal does, and the call is dropped.
    pub async fn keeping_lease_writing<T>(
        &mut self,
        work: impl std::future::Future<Output = T>,
        written: mpsc::UnboundedReceiver<Written>,
    ) -> Result<T, RunError> {
        self.waiting(work, Some(written)).await
    }

    async fn waiting<T>(
        &mut self,
        work: impl std::future::Future<Output = T>,
        mut written: Option<mpsc::UnboundedReceiver<Written>>,
    ) -> Result<T, RunError> {
        // What the run did so far is stored before it waits.
        self.flush().await?;
        let ttl = self.lease.as_ref().map(|(_, ttl)| *ttl);
        let far = tokio::time::Instant::now() + Duration::from_secs(365 * 24 * 3600);
        let period = ttl.map_or(Duration::from_secs(3600), |ttl| {
            (ttl / 3).max(Duration::from_millis(50))
        });
        let cut_off = (self.deadline)
            .filter(|_| ttl.is_some())
            .map(|d| tokio::time::Instant::from_std(d.checked_sub(RELEASE_MARGIN).unwrap_or(d)))
            .unwrap_or(far);
        let id = match &self.record.agent.answer {
            Some(answering) => answering.artifact.clone(),
            None => transition::new_id(),
        };
        let mut draft = Draft::new(id);
        tokio::pin!(work);
        let mut renew = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        // Another writer in this process (a CancelTask, a sweep) is heard at once; one in
        // another process at the next commit (a batch, a renewal), which finds it.
        let mut changes = Some(self.store.changes());
        loop {
            let due = draft.due().map(tokio::time::Instant::from_std);
            tokio::select! {
                // An answer complete takes its text whole: no batch of what it wrote last.
                // The text comes last, so that however fast it comes, the batches, the
                // lease's renewal and the cut-off are not put off by it.
                biased;
                out = &mut work => return Ok(out),
                () = tokio::time::sleep_until(cut_off) => {
                    self.hand_over();
                    return Err(RunError::CutOff);
                }
                changed = next_change(&mut changes) => match changed {
                    Some(id) if id != self.record.task.id => {}
                    // This task, or perhaps (signals were missed): it may have ended.
                    Some(_) | None => self.still_held().await?,
                },
                _ = renew.tick(), if ttl.is_some() => {
                    self.apply(|_| Vec::new()).await?;
                    heard(&mut changes);
                }
                () = tokio::time::sleep_until(due.unwrap_or(far)), if due.is_some() => {
                    let batch = draft.batch();
                    match self.apply(|rec| vec![batch.apply(rec)]).await {
                        Ok(()) => {}
                        // A batch need not be stored: one the store failed (throttled, a
                        // timeout) goes with the next, rather than end the model's call.
                        Err(RunError::Store(StoreError::Unavailable(why))) => {
                            tracing::warn!(task_id = %self.record.task.id, error = %why, "a batch of the answer was not stored; it goes with the next");
                            draft.put_back(batch);
                            continue;
                        }
                        Err(e) => return Err(e),
                    }
                    heard(&mut changes);
                    match self.shown.as_mut() {
                        Some(shown) if batch.append => shown.push_str(&batch.text),
                        _ => self.shown = Some(batch.text),
                    }
                    renew.reset();
                }
                w = next(&mut written) => draft.take(w),
            }
        }
    }

    /// Commits `change` with the answer's artifact left showing `text`: the final answer
    /// (`last`), which the stored task gets as its artifact, or the whole text of a turn
    /// whose start streams were shown ([`super::answer`]).
    pub async fn answer(
        &mut self,
        text: &str,
        last: bool,
        change: impl Fn(&mut TaskRecord) -> Vec<StreamResponse>,
    ) -> Result<(), RunError> {
        let shown = self.shown.clone();
        self.apply(|rec| {
            let shown = super::answer::settle(rec, shown.as_deref(), text, last);
            shown.into_iter().chain(change(rec)).collect()
        })
        .await?;
        if super::answer::show(shown.as_deref(), text, last) != super::answer::Show::Nothing {
            self.shown = Some(text.to_owned());
        }
        Ok(())
    }

    /// Whether the task, as stored now, is still the run's: not ended by another writer
    /// (`Ended`), its lease not taken (`LeaseLost`). One read of its head.
    async fn still_held(&mut self) -> Result<(), RunError> {
        let fresh = (self.store.load_task(&self.record.task.id).await?).ok_or(RunError::Gone)?;
        if fresh.state().is_terminal() {
            return Err(RunError::Ended(fresh.state()));
        }
        if self.lease.is_some() && !holds(&self.lease, &fresh) {
            return Err(RunError::LeaseLost);
        }
        Ok(())
    }

    /// What this run's streams show of the answer's artifact (None: nothing yet).
    pub fn shown(&self) -> Option<&str> {
        self.shown.as_deref()
    }

    pub fn record(&self) -> &TaskRecord {
        &self.record
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Commits a change to the agent's state (a checkpoint), with no event.
    pub async fn update_agent(
        &mut self,
        change: impl Fn(&mut crate::store::conversation::AgentState),
    ) -> Result<(), RunError> {
        self.apply(|rec| {
            change(&mut rec.agent);
            // A checkpoint is progress: the sweep's count of fruitless hand-overs restarts.
            rec.handovers = 0;
            Vec::new()
        })
        .await
    }

    pub fn agent_message(&self, text: &str) -> Message {
        transition::agent_message(&self.record.task, vec![crate::a2a::Part::text(text)])
    }

    pub async fn set_status(
        &mut self,
        state: TaskState,
        message: Option<Message>,
    ) -> Result<(), RunError> {
        self.apply(|rec| vec![transition::set_status(rec, state, message.clone(), None)])
            .await
    }

    pub async fn add_artifact(
        &mut self,
        artifact: Artifact,
        append: bool,
        last_chunk: bool,
    ) -> Result<(), RunError> {
        self.apply(|rec| {
            vec![transition::add_artifact(
                rec,
                artifact.clone(),
                append,
                last_chunk,
            )]
        })
        .await
    }

    /// Commits `change` (and the events it returns) at the version read. On a conflict it
    /// reloads, stops if the task has ended, and otherwise applies the change again to
    /// the fresh record. A run with a write held back adds the change to it instead.
    pub async fn apply(
        &mut self,
        change: impl Fn(&mut TaskRecord) -> Vec<StreamResponse>,
    ) -> Result<(), RunError> {
        if let Some(staged) = self.staged.as_mut() {
            // Nothing stored can conflict with a write not made yet: the change is made
            // in place.
            staged
                .events
                .extend(changed(&self.lease, &mut self.record, &change));
            return Ok(());
        }
        let mut reloaded: Option<TaskRecord> = None;
        let mut attempt = 0;
        loop {
            let base = reloaded.as_ref().unwrap_or(&self.record);
            let mut next = base.clone();
            let events = changed(&self.lease, &mut next, &change);
            match self.store.commit(&next, base.version, &events, None).await {
                Ok(stored) => {
                    if let Some((owner, _)) = &self.lease {
                        // The lease trail: which drive wrote which version of the task.
                        let held = if stored.lease.is_some() {
                            "renewed"
                        } else {
                            "given up"
                        };
                        tracing::debug!(target: "harness::lease", task_id = %stored.task.id, version = stored.version, %owner, "lease {held}");
                    }
                    self.record = stored;
                    return Ok(());
                }
                Err(StoreError::Conflict { .. }) => {
                    attempt += 1;
                    super::backoff(attempt).await;
                    let fresh = (self.store.load_task(&self.record.task.id).await?)
                        .ok_or(RunError::Gone)?;
                    if fresh.state().is_terminal() {
                        return Err(RunError::Ended(fresh.state()));
                    }
                    // A sweep took an expired lease away, or another drive has it now.
                    if self.lease.is_some() && !holds(&self.lease, &fresh) {
                        return Err(RunError::LeaseLost);
                    }
                    reloaded = Some(fresh);
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// What the writer tells of next; never, once it is done.
async fn next(written: &mut Option<mpsc::UnboundedReceiver<Written>>) -> Written {
    if let Some(rx) = written.as_mut() {
        if let Some(w) = rx.recv().await {
            return w;
        }
        *written = None;
    }
    std::future::pending().await
}

/// Whether `lease` (a run's owner and renewal) is the lease `rec` holds.
/// The next task this process changed (None: perhaps several, the signals were missed);
/// pending for ever once the signals have ended.
async fn next_change(changes: &mut Option<broadcast::Receiver<String>>) -> Option<String> {
    let Some(rx) = changes.as_mut() else {
        return std::future::pending().await;
    };
    match rx.recv().await {
        Ok(id) => Some(id),
        Err(broadcast::error::RecvError::Lagged(_)) => None,
        Err(broadcast::error::RecvError::Closed) => {
            *changes = None;
            std::future::pending().await
        }
    }
}

/// Forgets the signals the run's own commit sent: it knows what it wrote.
fn heard(changes: &mut Option<broadcast::Receiver<String>>) {
    if let Some(rx) = changes.as_mut() {
        *rx = rx.resubscribe();
    }
}

fn holds(lease: &Option<(String, Duration)>, rec: &TaskRecord) -> bool {
    match (lease, &rec.lease) {
        (Some((owner, _)), Some(l)) => &l.owner == owner,
        _ => false,
    }
}

/// Applies `change` to `rec` and leaves the lease as the commit leaves it: renewed by
/// every commit of the run that holds it, given up with the one that leaves nothing to do.
fn changed(
    lease: &Option<(String, Duration)>,
    rec: &mut TaskRecord,
    change: impl Fn(&mut TaskRecord) -> Vec<StreamResponse>,
) -> Vec<StreamResponse> {
    let events = change(rec);
    if let (Some((owner, ttl)), true) = (lease, holds(lease, rec)) {
        let done = rec.state().is_terminal() || rec.state() == TaskState::InputRequired;
        rec.lease = (!done).then(|| Lease::new(owner, *ttl));
    }
    events
}
