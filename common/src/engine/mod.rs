//! The engine: task state changes (`transition`), the agent's handle on a task (`run`),
//! following a task's event log (`follow`), links between tasks (`links`), and driving a
//! task with the agent: one drive at a time per task, across processes, by the task's
//! lease (`task::lease`). It defines the ports it drives and announces through: the
//! [`Agent`] (`agent`) and the pushed media (`medium`).
//!
//! Who drives: the request whose write made the task runnable (it takes the lease in that
//! write), or, when that write instead left the task runnable and unleased (`wake`), the
//! drive its wake-up starts: the resume function in AWS, `watch_wakeups` locally. The
//! sweep makes tasks whose lease ran out (a drive that was cut off) runnable again, and
//! rings again any wake-up no drive answered (a stream record lost, a process that died
//! between its write and its drive), so no runnable task is left with no one to drive it.
//!
//! A sub-task that ends owes its parents a wake-up: the write that ends it says so
//! (`parents_owed`), and the debt is cleared once they are all woken, by whoever ends it
//! or, failing that, by the sweep.
//!
//! Only tasks assigned to the harness's own agent are run by it. A task assigned to
//! another participant (a sub-task the agent created for them) waits for that
//! participant's message, which completes it at intake; driving it then only wakes its
//! parents, which take the outcome in at their next turn, or takes the step its reply
//! deadline has due (`deadlines`).

pub mod agent;
pub mod answer;
pub mod deadlines;
pub mod follow;
pub mod links;
pub mod medium;
pub mod owners;
pub mod run;
pub mod transition;

pub use agent::{Agent, ModelChoices};

use std::sync::Arc;

use tokio::task::JoinHandle;

use crate::a2a::TaskState;
use crate::keyed_lock::KeyedLocks;
use crate::store::{Store, StoreError, TaskRecord};
use crate::task::lease;
use medium::Media;
pub use run::{RunError, Staged, TaskRun};

/// Sweeps now, then every `period` and as soon as a timer this process set runs out (a
/// reply deadline, a remote's next poll), for as long as the engine lives (what
/// `harness-local` does in place of the scheduled sweeper function). One sleep, for the
/// soonest of the timers it has heard of (at most [`MAX_TIMERS_HEARD`]); none per task: a
/// timer set by a process that stopped is the store's, and the sweep at start or the next
/// period finds it.
pub async fn sweep_every(engine: Arc<Engine>, period: std::time::Duration) {
    use tokio::time::Instant;
    // A few ms after a timer runs out: the sweep takes leases that ran out before now.
    let at = |ms: i64| {
        let left = ms.saturating_sub(lease::now_ms()).max(0) as u64 + 5;
        Instant::now() + std::time::Duration::from_millis(left)
    };
    let mut timers = Some(engine.store.timers());
    // The soonest first; one entry per instant, however many commits set it.
    let mut heard = std::collections::BTreeSet::new();
    let mut next_sweep = Instant::now();
    loop {
        let soonest = heard.first().map(|ms| at(*ms));
        tokio::select! {
            () = tokio::time::sleep_until(soonest.map_or(next_sweep, |t| t.min(next_sweep))) => {}
            set = next_timer(&mut timers) => {
                match set {
                    Some(ms) => {
                        heard.insert(ms);
                        // Full: the latest goes (the period finds it).
                        if heard.len() > MAX_TIMERS_HEARD {
                            heard.pop_last();
                        }
                    }
                    // Signals were missed: sweep now, and on the period after.
                    None => next_sweep = Instant::now(),
                }
                continue;
            }
        }
        let now = lease::now_ms();
        heard = heard.split_off(&now);
        next_sweep = Instant::now() + period;
        match engine.sweep(SWEEP_BATCH).await {
            Ok(woken) if !woken.is_empty() => {
                tracing::info!(tasks = woken.len(), "swept tasks whose drive was cut off")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "the sweep failed"),
        }
    }
}

/// Most timers [`sweep_every`] keeps in mind at once; those past it wait for the period.
pub const MAX_TIMERS_HEARD: usize = 4096;

/// When the next timer this process set runs out (None: perhaps several, the signals
/// were missed); pending for ever once the signals have ended.
async fn next_timer(timers: &mut Option<tokio::sync::broadcast::Receiver<i64>>) -> Option<i64> {
    let Some(rx) = timers.as_mut() else {
        return std::future::pending().await;
    };
    match rx.recv().await {
        Ok(ms) => Some(ms),
        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => None,
        Err(tokio::sync::broadcast::error::RecvError::Closed) => {
            *timers = None;
            std::future::pending().await
        }
    }
}

/// What a task's participants are told when something failed: a short, stable `reason`
/// and an id to find the details by in the log, which gets `error`. Provider error
/// bodies, internal URLs and SDK messages never reach a task, its history or its events.
pub fn failure_notice(reason: &str, error: &dyn std::fmt::Display) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    let id = &id[..12];
    tracing::warn!(error_id = id, error = %error, "{reason}");
    format!("{reason} (error {id}; the details are in the harness's log).")
}

/// Waits a little before retrying a commit that lost a race: longer with each attempt
/// (up to ~50 ms) and jittered, so many writers of one task do not collide in lockstep.
pub async fn backoff(attempt: u32) {
    crate::metrics::record(crate::metrics::Event::StoreRetry);
    let jitter = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let cap_ms = 5 * u64::from(attempt.min(10));
    let ms = u64::from(jitter) % (cap_ms + 1);
    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
}

/// Most tasks one sweep hands on.
pub const SWEEP_BATCH: usize = 100;
/// How many tasks a sweep hands on at once.
/// Hand-overs by the sweep without a drive's progress in between, after which a task
/// fails instead of being handed on again.
pub const MAX_HANDOVERS: u32 = 10;

const SWEEP_CONCURRENCY: usize = 8;

/// Where a drive starts: the task as stored, the task as the caller just committed it
/// (not read again), or a write the caller held back for the run to make.
pub enum Start {
    Load(String),
    Fresh(Box<TaskRecord>),
    Staged(Box<(TaskRecord, Staged)>),
}

impl Start {
    fn task_id(&self) -> &str {
        match self {
            Start::Load(id) => id,
            Start::Fresh(rec) => rec.id(),
            Start::Staged(staged) => staged.0.id(),
        }
    }
}

pub struct Engine {
    store: Arc<dyn Store>,
    agent: Arc<dyn Agent>,
    /// The harness's own participant id: tasks assigned to it are the agent's to run.
    agent_id: String,
    /// Who this engine is when it holds a lease (one per process or Lambda environment).
    owner: String,
    /// Which other owners are provably gone (harness-local's lock files).
    owner_locks: Option<Arc<owners::LockFiles>>,
    lease_ttl: std::time::Duration,
    /// Serialises runs of one task inside this process.
    running: KeyedLocks,
    /// The pushed media that carry the requests addressed to members to them.
    media: Media,
}

impl Engine {
    pub fn new(
        store: Arc<dyn Store>,
        agent: Arc<dyn Agent>,
        config: &crate::config::Config,
        media: Media,
    ) -> Result<Arc<Self>, String> {
        let owner_locks = match &config.owner_locks {
            Some(dir) => Some(Arc::new(owners::LockFiles::claim(dir).map_err(|e| {
                format!("the lease owners' lock files in {}: {e}", dir.display())
            })?)),
            None => None,
        };
        Ok(Arc::new(Engine {
            media,
            store,
            agent,
            agent_id: config.agent_id.clone(),
            owner: (owner_locks.as_ref().map(|l| l.owner().to_owned()))
                .or_else(|| config.lease_owner.clone())
                .unwrap_or_else(transition::new_id),
            owner_locks,
            lease_ttl: config.lease_ttl,
            running: KeyedLocks::default(),
        }))
    }

    pub fn agent(&self) -> &dyn Agent {
        self.agent.as_ref()
    }

    pub fn agent_id(&self) -> &str {
        &self.agent_id
    }

    /// Whether this engine holds `lease`.
    pub fn owns(&self, lease: &lease::Lease) -> bool {
        lease.owner == self.owner
    }

    /// Drives every task a commit in this process leaves waiting to be woken (the local
    /// stand-in for the table's stream and the resume function), for as long as the
    /// store lives.
    pub fn watch_wakeups(self: &Arc<Self>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut wakeups = self.store.wakeups();
        let engine = Arc::downgrade(self);
        runtime.spawn(async move {
            loop {
                match wakeups.recv().await {
                    Ok(id) => match engine.upgrade() {
                        Some(e) => {
                            e.start(id);
                        }
                        None => return,
                    },
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                        // Their tasks stay in the sweep's index until a drive takes them.
                        tracing::warn!(
                            missed = n,
                            "wake-ups were missed; the sweep will ring them again"
                        );
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }

    /// A lease for this engine, as taken in the write that makes a task runnable when
    /// the caller drives it right away.
    pub fn new_lease(&self) -> lease::Lease {
        lease::Lease::new(&self.owner, self.lease_ttl)
    }

    /// Whether the harness's agent runs this task (it is its assignee).
    pub fn runs(&self, record: &TaskRecord) -> bool {
        record
            .ext()
            .and_then(|e| e.assignee().map(|a| a.id == self.agent_id))
            .unwrap_or(false)
    }

    /// Drives the task in a task of its own, so a client that goes away does not stop the
    /// work; the handle resolves when the agent stops (done or waiting), to the task as
    /// the drive left it when it drove it.
    pub fn start(self: &Arc<Self>, task_id: String) -> JoinHandle<Option<TaskRecord>> {
        self.start_at(Start::Load(task_id), None)
    }

    /// [`start`](Self::start) from `start`, handing the task over (left runnable for
    /// another drive) before `deadline`: the end of the Lambda invocation that runs it.
    pub fn start_at(
        self: &Arc<Self>,
        start: Start,
        deadline: Option<std::time::Instant>,
    ) -> JoinHandle<Option<TaskRecord>> {
        let engine = self.clone();
        // In the trace of the request that started it, if one did.
        tokio::spawn(crate::traces::carry(async move {
            (engine.drive_from(start, deadline).await)
                .map_err(|e| tracing::warn!(error = %e, "task run ended with an error"))
                .ok()
                .flatten()
        }))
    }

    /// Drives a task whose first write is held back, in a task of its own: the message
    /// that made it runnable and everything the run does until it waits or ends go to the
    /// store in one commit. That write fails as a create or commit would (a duplicate
    /// message, a conflict), and then nothing was stored.
    pub fn start_staged(
        self: &Arc<Self>,
        record: TaskRecord,
        staged: Staged,
        deadline: Option<std::time::Instant>,
    ) -> JoinHandle<Result<Option<TaskRecord>, RunError>> {
        let engine = self.clone();
        let start = Start::Staged(Box::new((record, staged)));
        tokio::spawn(crate::traces::carry(async move {
            engine.drive_from(start, deadline).await
        }))
    }

    /// Drives the task here and now (the resume function's work), handing it over before
    /// `deadline`; an ended task wakes its parents. Returns the task as the drive left
    /// it, when it drove it or found it ended.
    pub async fn drive_now(
        &self,
        task_id: &str,
        deadline: Option<std::time::Instant>,
    ) -> Result<Option<TaskRecord>, RunError> {
        self.drive_from(Start::Load(task_id.to_owned()), deadline)
            .await
    }

    #[tracing::instrument(name = "drive", skip_all, fields(task_id = start.task_id()))]
    async fn drive_from(
        &self,
        start: Start,
        deadline: Option<std::time::Instant>,
    ) -> Result<Option<TaskRecord>, RunError> {
        let mut created = Vec::new();
        let task_id = start.task_id().to_owned();
        // Boxed, as is waking the parents: carried inline they made this future ~20 KB,
        // copied whole by each spawn that starts a drive.
        let drive = Box::pin(self.drive_locked(start, deadline, &mut created));
        let (last, ended_here) = self.running.run(&task_id, drive).await?;
        if let Some(ended) = last.as_ref().filter(|r| r.state().is_terminal()) {
            if ended_here {
                self.agent.ended(ended).await;
            }
            Box::pin(self.wake_parents(ended)).await?;
        }
        // A drive that asks ends waiting on the answer: the only drive that sees the
        // question new, after it is committed.
        for rec in created.iter().chain(last.as_ref()) {
            self.media.announce(rec).await;
        }
        Ok(last)
    }

    /// The pushed media, for the requests addressed to members outside a drive.
    pub fn media(&self) -> &Media {
        &self.media
    }

    /// Runs the agent on the task if it is the agent's, has something to do and no other
    /// drive holds it; returns the task as this drive left it (or found it, ended), so the
    /// caller need not read it again (and an ended task's parents may be waiting on it).
    /// The tasks the run created for participants are added to `created`. Says too whether
    /// this drive ended the task.
    async fn drive_locked(
        &self,
        start: Start,
        deadline: Option<std::time::Instant>,
        created: &mut Vec<TaskRecord>,
    ) -> Result<(Option<TaskRecord>, bool), RunError> {
        let mut found_ended = false;
        let last = (self.drive_claimed(start, deadline, created, &mut found_ended)).await?;
        let ended = last.as_ref().is_some_and(|r| r.state().is_terminal());
        Ok((last, ended && !found_ended))
    }

    async fn drive_claimed(
        &self,
        start: Start,
        deadline: Option<std::time::Instant>,
        created: &mut Vec<TaskRecord>,
        found_ended: &mut bool,
    ) -> Result<Option<TaskRecord>, RunError> {
        let (record, staged) = match start {
            Start::Load(id) => (self.store.load_task(&id).await?, None),
            Start::Fresh(record) => (Some(*record), None),
            Start::Staged(staged) => (Some(staged.0), Some(staged.1)),
        };
        let record = record.ok_or(RunError::Gone)?;
        if record.state().is_terminal() {
            *found_ended = true;
            return Ok(Some(record));
        }
        // A staged record holds this engine's lease in the write it has yet to make.
        let record = match staged {
            Some(_) => record,
            None => match self.claim(record).await? {
                Some(record) => record,
                None => return Ok(None),
            },
        };
        // The message the run answers: the last one a client sent.
        let input = record
            .task
            .history
            .iter()
            .rev()
            .find(|m| m.role == crate::a2a::Role::User)
            .cloned()
            .unwrap_or_default();
        let mut run =
            TaskRun::new(self.store.clone(), record).leased(&self.owner, self.lease_ttl, deadline);
        if !self.runs(run.record()) && run.record().agent.reply_by.is_some() {
            // A participant's task, woken for its deadline: the step due, no agent. The
            // task is handed back (to be announced, its parents woken) only when the step
            // reminded or ended it; an assignee's answer or a cancel meanwhile wins.
            let took = match deadlines::step(&mut run).await {
                Ok(took) => took,
                Err(RunError::Ended(_) | RunError::LeaseLost) => return Ok(None),
                Err(e) => return Err(e),
            };
            return match run.release().await {
                Ok(rec) if took != deadlines::Took::Nothing => Ok(Some(rec)),
                Ok(_) | Err(RunError::Ended(_) | RunError::LeaseLost) => Ok(None),
                Err(e) => Err(e),
            };
        }
        if let Some(staged) = staged {
            run = run.staged(staged);
        }
        let outcome = self.agent.run(&mut run, &input).await;
        created.append(&mut run.created);
        if run.is_staged() && outcome.is_err() {
            // Nothing stored: the failure is the caller's to answer, with nothing to undo.
            return outcome.map(|()| None);
        }
        match outcome {
            // Cut off: handed over, which the release below makes the wake-up.
            Ok(()) | Err(RunError::Ended(_)) | Err(RunError::CutOff) => {}
            Err(RunError::LeaseLost) => return Ok(None),
            Err(RunError::Store(e @ (StoreError::TooLarge(_) | StoreError::TaskFull { .. }))) => {
                // Permanent: the step's write will never fit, so the task fails (a small
                // commit of its own, which gives up the lease, and which a full task takes:
                // it ends the task) and no drive calls its model again.
                let why = match &e {
                    StoreError::TaskFull { bound, .. } => format!(
                        "The task reached its bound of {bound} ({}), so it stopped",
                        bound.setting()
                    ),
                    _ => "A step of the task was larger than the store can write at once, \
                          so it stopped"
                        .to_owned(),
                };
                let msg = run.agent_message(&failure_notice(&why, &e));
                // The agent's bookkeeping is of no use to a failed task, and may be what no
                // longer fits its head.
                let failed = run
                    .apply(|rec| {
                        let a = &mut rec.agent;
                        a.inputs.clear();
                        a.replies.clear();
                        a.noted.clear();
                        a.compaction = None;
                        a.pending_help = None;
                        let failed = Some(msg.clone());
                        vec![transition::set_status(rec, TaskState::Failed, failed, None)]
                    })
                    .await;
                return failed.map(|()| Some(run.record().clone()));
            }
            Err(e @ RunError::Store(StoreError::Unavailable(_))) => {
                // Not the task's fault, so it does not fail; nor is it woken at once (a
                // store that keeps refusing would have the model called again and again):
                // its lease runs out and the sweep hands it on, once per lease at most.
                return Err(e);
            }
            Err(e) => {
                let msg = run.agent_message(&failure_notice("The agent failed", &e));
                if run.set_status(TaskState::Failed, Some(msg)).await.is_ok() {
                    self.agent.ended(run.record()).await;
                }
                let _ = run.release().await;
                return Err(e);
            }
        }
        match run.release().await {
            Ok(rec) => Ok(Some(rec)),
            // Cancelled meanwhile (CancelTask wakes the parents itself), or taken over.
            Err(RunError::Ended(_) | RunError::LeaseLost) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Notes in the lease trail that a drive of this engine starts on `rec`, whose lease
    /// it holds (taken by its own write, or by the request that made the task runnable).
    fn taken(&self, rec: TaskRecord) -> TaskRecord {
        tracing::info!(target: "harness::lease", task_id = %rec.task.id, version = rec.version, owner = %self.owner, "lease taken");
        rec
    }

    /// Whether a drive has something to do on the task: the agent runs it, and it has
    /// neither ended nor waits on a help request (whose deadline has no step due: a
    /// reminder or its expiry is the agent's to take); or, assigned to a participant, its
    /// deadline has a step due (`deadlines`).
    fn has_work(&self, rec: &TaskRecord) -> bool {
        if !self.runs(rec) {
            return deadlines::due(rec);
        }
        let waiting = rec.state() == TaskState::InputRequired
            && (rec.agent.pending_help.as_ref()).is_some_and(|h| !h.due_now());
        !rec.state().is_terminal() && !waiting
    }

    /// Takes the task's lease for this engine, unless there is nothing to drive or another
    /// drive holds it; a lease taken with the write that made the task runnable is kept,
    /// and given back if there turns out to be nothing to do.
    async fn claim(&self, mut rec: TaskRecord) -> Result<Option<TaskRecord>, RunError> {
        loop {
            let ours = rec.lease.as_ref().is_some_and(|l| l.owner == self.owner);
            let idle = !self.has_work(&rec);
            match (idle, ours) {
                (true, false) => return Ok(None),
                (false, true) => return Ok(Some(self.taken(rec))),
                (false, false) if rec.lease.as_ref().is_some_and(lease::Lease::held) => {
                    return Ok(None)
                }
                _ => {}
            }
            let mut next = rec.clone();
            // Nothing to do: a question's deadline timer is kept (or set again).
            next.lease = match idle {
                true => rec.wait_timer(),
                false => Some(self.new_lease()),
            };
            next.wake = false;
            match self.store.commit(&next, rec.version, &[], None).await {
                Ok(stored) => return Ok((!idle).then(|| self.taken(stored))),
                Err(StoreError::Conflict { .. }) => {
                    rec = self
                        .store
                        .load_task(rec.id())
                        .await?
                        .ok_or(RunError::Gone)?;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Hands on what the sweep finds (see [`Store::due_tasks`]) and returns the ids of the
    /// tasks it woke: the sweeper's job, which `harness-local` also does on a timer.
    /// Wake-ups are rung again once they have gone unanswered for [`Self::wake_grace`].
    pub async fn sweep(&self, limit: usize) -> Result<Vec<String>, RunError> {
        let woken_before = lease::now_ms() - self.wake_grace().as_millis() as i64;
        self.sweep_woken_before(limit, woken_before).await
    }

    /// The sweep a process makes as it starts: every wake-up is rung again at once (one
    /// that an ended process wrote will not be answered by it).
    pub async fn sweep_at_start(&self, limit: usize) -> Result<Vec<String>, RunError> {
        self.sweep_woken_before(limit, lease::now_ms()).await
    }

    /// How long a wake-up may go unanswered before the sweep rings it again: the lease's
    /// length, at most a minute. Ringing one twice does no harm (a drive takes the lease
    /// with a conditional write), so this only bounds how long a lost one delays a task.
    pub fn wake_grace(&self) -> std::time::Duration {
        self.lease_ttl.min(std::time::Duration::from_secs(60))
    }

    async fn sweep_woken_before(
        &self,
        limit: usize,
        woken_before: i64,
    ) -> Result<Vec<String>, RunError> {
        let gone = self
            .owner_locks
            .as_ref()
            .map(|l| l.gone())
            .unwrap_or_default();
        // A gone owner's leases are taken whether or not they ran out.
        let leases_before = if gone.is_empty() {
            lease::now_ms()
        } else {
            i64::MAX
        };
        let due = (self.store)
            .due_tasks(leases_before, woken_before, limit)
            .await?;
        // Every lease was looked at: none of the gone owners will hold one any more.
        let all_leases = due.leased.len() < limit;
        // A task that moved from one list to the other between the two reads is in both.
        let mut seen = std::collections::HashSet::new();
        let due: Vec<String> = (due.leased.into_iter().chain(due.woken))
            .filter(|id| seen.insert(id.clone()))
            .collect();
        // A few at a time; one task that cannot be handed on keeps no other from it.
        let mut woken = Vec::new();
        for chunk in due.chunks(SWEEP_CONCURRENCY) {
            let outcomes =
                futures::future::join_all(chunk.iter().map(|id| self.sweep_one(id, &gone)));
            for (id, outcome) in chunk.iter().zip(outcomes.await) {
                match outcome {
                    Ok(true) => woken.push(id.clone()),
                    Ok(false) => {}
                    Err(e) => {
                        tracing::warn!(task_id = %id, error = %e, "the sweep could not hand a task on")
                    }
                }
            }
        }
        if let (Some(locks), true) = (&self.owner_locks, all_leases) {
            locks.forget(&gone);
        }
        Ok(woken)
    }

    /// Hands on one task the sweep found: an ended one's parents are woken; a lease that
    /// ran out (or whose owner is `gone`) is taken away, leaving the task runnable; a
    /// wake-up no drive answered is rung again (or put out, if there is nothing to do).
    /// Each such write is the task's wake-up, and counts a hand-over: one past
    /// [`MAX_HANDOVERS`] without a drive's progress fails the task instead. False when
    /// there was nothing to do.
    async fn sweep_one(&self, id: &str, gone: &[String]) -> Result<bool, RunError> {
        let mut found = self.store.load_task(id).await?;
        while let Some(rec) = found.take() {
            if rec.state().is_terminal() {
                if !rec.parents_owed {
                    return Ok(false);
                }
                self.wake_parents(&rec).await?;
                return Ok(true);
            }
            let mut next = rec.clone();
            match &rec.lease {
                Some(l) if l.held() && !gone.contains(&l.owner) => return Ok(false),
                // A timer yet to run out (found with a gone owner's leases): it stands.
                Some(l) if l.is_timer() && l.until_ms > lease::now_ms() => return Ok(false),
                None if !rec.wake => return Ok(false),
                _ => {}
            }
            next.wake = self.has_work(&rec);
            // Left waiting on a question with a deadline: under its timer again.
            next.lease = (!next.wake).then(|| rec.wait_timer()).flatten();
            let mut events = Vec::new();
            if next.wake && rec.handovers >= MAX_HANDOVERS {
                let why = format!(
                    "The task was handed to a new drive {MAX_HANDOVERS} times without progress \
                     (each drive was cut off or failed before its next step), so it stopped"
                );
                let msg = transition::agent_message(
                    &rec.task,
                    vec![crate::a2a::Part::text(failure_notice(&why, &"no progress"))],
                );
                events.push(transition::set_status(
                    &mut next,
                    TaskState::Failed,
                    Some(msg),
                    None,
                ));
                next.wake = false;
                tracing::warn!(task_id = %id, handovers = rec.handovers, "a task no drive could run failed");
            } else if next.wake {
                next.handovers += 1;
            }
            match self.store.commit(&next, rec.version, &events, None).await {
                Ok(stored) => {
                    if stored.state().is_terminal() {
                        self.agent.ended(&stored).await;
                        self.wake_parents(&stored).await?;
                    }
                    return Ok(next.wake);
                }
                Err(StoreError::Conflict { .. }) => found = self.store.load_task(id).await?,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(false)
    }

    /// A sub-task ended (here, or by CancelTask): each parent that links it back is made
    /// runnable (`wake`), and that write is its wake-up; it takes the outcome in at its
    /// next turn. Then the child's debt (`parents_owed`) is cleared; if any parent could
    /// not be woken it stands, and the sweep tries again.
    pub async fn wake_parents(&self, child: &TaskRecord) -> Result<(), RunError> {
        use links::{linked, Link};
        if !child.parents_owed {
            return Ok(());
        }
        for parent in links::local_parents(child) {
            let found = linked(self.store.as_ref(), child, &parent, Link::Parent).await?;
            self.wake(found).await?;
        }
        let paid = |rec: &TaskRecord| {
            rec.parents_owed.then(|| TaskRecord {
                parents_owed: false,
                ..rec.clone()
            })
        };
        self.commit_fresh(Some(child.clone()), paid).await?;
        Ok(())
    }

    /// [`wake_parents`](Self::wake_parents) where a failure is only logged: the debt stands
    /// in the store and the sweep pays it.
    pub async fn wake_parents_logged(&self, child: &TaskRecord) {
        if let Err(e) = self.wake_parents(child).await {
            tracing::warn!(task_id = %child.task.id, error = %e, "could not wake the parents; the sweep will");
        }
    }

    /// Marks the task `id` runnable, unless it has ended or is gone (a remote agent's
    /// callback).
    pub async fn wake_task(&self, id: &str) -> Result<(), RunError> {
        let found = self.store.load_task(id).await?;
        self.wake(found).await
    }

    /// Marks a task runnable, unless it has ended. A timer it waits under is put out, so
    /// the write is its wake-up now, not when the timer runs out; unless the task has
    /// nothing to do until then (it waits on a question, whose deadline the timer keeps).
    async fn wake(&self, found: Option<TaskRecord>) -> Result<(), RunError> {
        let woken = |rec: &TaskRecord| {
            let timer = (rec.lease.as_ref()).is_some_and(lease::Lease::is_timer);
            let put_out = timer && self.has_work(rec);
            (!rec.state().is_terminal() && (!rec.wake || put_out)).then(|| TaskRecord {
                wake: true,
                lease: rec.lease.clone().filter(|_| !put_out),
                ..rec.clone()
            })
        };
        self.commit_fresh(found, woken).await?;
        Ok(())
    }

    /// Commits what `change` makes of the task at the version read (no events), reading
    /// it again after a conflict; `change` gives None when there is nothing to write.
    async fn commit_fresh(
        &self,
        mut found: Option<TaskRecord>,
        change: impl Fn(&TaskRecord) -> Option<TaskRecord>,
    ) -> Result<(), StoreError> {
        while let Some(rec) = found.take() {
            let Some(next) = change(&rec) else {
                return Ok(());
            };
            match self.store.commit(&next, rec.version, &[], None).await {
                Ok(_) => return Ok(()),
                Err(StoreError::Conflict { .. }) => found = self.store.load_task(rec.id()).await?,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
