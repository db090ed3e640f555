//! SendMessage and SendStreamingMessage: intake of a client message (validate, name its
//! sender, dedupe by messageId, check membership, start or continue a task, store the
//! message before answering), then either wait for the task to settle, return at once,
//! or stream its events.
//!
//! Intake fails closed: a message that asserts no participant is refused (-32602), and a
//! message on a task from anyone who is not its participant gets exactly the error a task
//! that does not exist gets, streamed or not (A2A answers an unknown task with a plain
//! TaskNotFound before any stream starts, so a refusal does too). A refusal writes nothing
//! into the task; it is audited, within the sender's hourly quota.
//!
//! A messageId is its sender's own: a copy from the same sender is answered with what the
//! first produced, and the same id from anyone else is a message of its own.
//!
//! A client speaks as itself: only an agent participant of the task may send what is the
//! agent's (`ROLE_AGENT`, an update envelope, a help request), and only an answer link
//! sends under an answer link's message id ([`own_voice`]). Both are checked once the
//! sender is known to be on the task, so a stranger is still told only not-found.

mod command;
mod continuation;
mod start;

use command::{audit_command, command_without_task, run_command};
use continuation::continue_task;
use start::start_task;

use super::identity::IdEntry;
use super::shown::shown;
use super::{push_config, Caller, Harness};
use crate::a2a::Operation;
use crate::a2a::{
    validate, A2aError, Message, Part, SendMessageRequest, SendMessageResponse, StreamResponse,
    TaskState,
};
use crate::agent::llm::Reply;
use crate::channels;
use crate::channels::personal::{ANSWER_ID_PREFIX, NO_LONGER_OPEN};
use crate::commands::{self, Command, Invocation};
use crate::config::DEFAULT_HISTORY_LENGTH;
use crate::engine::follow::{follow, EventStream, Follow, Sent, Subscription};
use crate::engine::transition::{
    accept_message, agent_message, await_assignee, created, new_id, new_task, set_status,
};
use crate::engine::{RunError, Staged, Start};
use crate::ext::channel::{self as channel_part, ChannelMessage};
use crate::ext::participant::{self, IdRefusal, NOT_A_PARTICIPANT, NO_PARTICIPANT};
use crate::ext::permissions::{self, Action};
use crate::ext::task::{
    envelope_of, Participant, ParticipantKind, Role, TaskEnvelope, TaskExtension,
};
use crate::store::{Along, AuditRecord, InboundMessage, PushConfigRecord, StoreError, TaskRecord};

/// What intake made of a message.
enum Intake {
    /// The agent answered without a task.
    Direct(Message),
    /// The message started or continued a task; `run` drives it when the message made it
    /// runnable (not, say, a remark on a task that waits for someone else's reply).
    Stored {
        record: TaskRecord,
        run: Option<tokio::task::JoinHandle<Option<TaskRecord>>>,
        /// The last seq before the message: a stream shows what the message caused.
        replay_from: u64,
        /// Whether a stream ends once it has shown that (a command's answer).
        settled: bool,
    },
    /// The messageId was seen before: nothing new happens, the task is as it is.
    Duplicate(TaskRecord),
}

struct Accepted {
    intake: Intake,
    /// Who the message is from: the participant a stream of it follows the task as.
    sender: String,
    history: usize,
    return_immediately: bool,
    /// A streaming send's place among its task's streams, when the task was there before
    /// the message (see [`Place`]).
    place: Option<Subscription>,
}

/// Where a streaming send keeps the place its stream takes among a task's streams (one
/// budget with SubscribeToTask's): taken once its sender is known to be on the task and
/// the message fits it, before anything is stored (`continuation::admitted`), so a send
/// past the budget is refused and stores nothing. A task the message creates has no
/// stream yet: its place is taken once it exists
/// ([`Subscribers::hold`](crate::engine::follow::Subscribers::hold)).
#[derive(Default)]
struct Place(std::sync::Mutex<Option<Subscription>>);

impl Place {
    /// `who`'s place among `task_id`'s streams, unless this send holds it already.
    fn take(&self, h: &Harness, task_id: &str, who: &str) -> Result<(), A2aError> {
        let mut held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if held.is_none() {
            *held = Some(h.subscribers.admit(task_id, who)?);
        }
        Ok(())
    }

    fn held(self) -> Option<Subscription> {
        self.0.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

#[tracing::instrument(skip_all)]
pub async fn send_message(
    h: &Harness,
    req: SendMessageRequest,
    caller: &Caller,
) -> Result<SendMessageResponse, A2aError> {
    let tenant = req.tenant.clone();
    // Boxed: intake's future (~18 KB) would be carried, and copied, in every operation's.
    let accepted = Box::pin(intake(h, Operation::SendMessage, req, caller)).await?;
    // The task as it settles, if its sender is on it still; else as the message left it.
    let visibility = || h.visibility(&tenant, &accepted.sender);
    let record = match accepted.intake {
        Intake::Direct(message) => {
            return Ok(SendMessageResponse {
                message: Some(message),
                task: None,
            })
        }
        Intake::Duplicate(record) => record,
        Intake::Stored { record, run, .. } => match run {
            Some(run) if !accepted.return_immediately => {
                // The run stops at a terminal or interrupted state: that is when to answer,
                // with the task as the run left it (read again only if it did not run).
                let may_see = visibility();
                let last = match run.await {
                    Ok(Some(last)) => Some(last),
                    _ => h.store.load_task_for(record.id(), &*may_see).await?,
                };
                last.filter(|last| may_see(last)).unwrap_or(record)
            }
            // Handed to a drive elsewhere (the resume function): answered once it settles.
            None if !accepted.return_immediately && record.wake => {
                let may_see = visibility();
                settled_elsewhere(h, record, &*may_see, caller.deadline, accepted.history).await?
            }
            _ => record,
        },
    };
    Ok(SendMessageResponse {
        task: Some(shown(record.task, &record.agent, accepted.history, true)),
        message: None,
    })
}

/// What a blocking send keeps of its function's time to answer in.
const ANSWER_MARGIN: std::time::Duration = std::time::Duration::from_secs(2);

/// The task `rec` once a drive elsewhere has left it terminal or interrupted, read from
/// the store (every 250 ms, backing off to 2 s), with its last `history` messages; or as
/// it is when `Config::blocking_wait` or `deadline` (less the time to answer) comes first: the
/// client follows it from there. `rec` as it is when the sender is no longer on the task
/// (`admit`).
async fn settled_elsewhere(
    h: &Harness,
    rec: TaskRecord,
    admit: &crate::store::Admit<'_>,
    deadline: Option<std::time::Instant>,
    history: usize,
) -> Result<TaskRecord, A2aError> {
    use crate::engine::follow::{POLL_MAX, POLL_MIN};
    let now = std::time::Instant::now();
    let mut until = now + h.config.blocking_wait;
    if let Some(d) = deadline {
        until = until.min(d.checked_sub(ANSWER_MARGIN).unwrap_or(now));
    }
    let mut poll = POLL_MIN;
    loop {
        let head = (h.store).load_view(rec.id(), Some(0), false, admit).await?;
        let settled = head.as_ref().is_none_or(|t| t.state().ends_stream());
        let left = until.saturating_duration_since(std::time::Instant::now());
        if settled || left.is_zero() {
            let task = (h.store)
                .load_view(rec.id(), Some(history), true, admit)
                .await?;
            return Ok(task.unwrap_or(rec));
        }
        tokio::time::sleep(poll.min(left)).await;
        poll = (poll * 2).min(POLL_MAX);
    }
}

#[tracing::instrument(skip_all)]
pub async fn send_streaming_message(
    h: &Harness,
    req: SendMessageRequest,
    caller: &Caller,
) -> Result<EventStream, A2aError> {
    let tenant = req.tenant.clone();
    let accepted = Box::pin(intake(h, Operation::SendStreamingMessage, req, caller)).await?;
    let may_see = h.visibility(&tenant, &accepted.sender);
    let place = accepted.place;
    let f = match accepted.intake {
        Intake::Direct(message) => {
            // A message and no task: nothing to resume, so no id.
            return Ok(Box::pin(futures::stream::once(async {
                Ok(Sent {
                    event: StreamResponse::message(message),
                    id: None,
                })
            })));
        }
        Intake::Stored {
            record,
            run,
            replay_from,
            settled,
        } => Follow {
            task_id: record.task.id.clone(),
            may_see,
            first: StreamResponse::task(shown(
                record.task.clone(),
                &record.agent,
                DEFAULT_HISTORY_LENGTH,
                true,
            )),
            after: replay_from,
            replay_until: if run.is_some() {
                replay_from
            } else {
                record.last_seq
            },
            settled: run.is_none() && (settled || record.state().ends_stream()),
            // Without a place taken, the message created the task.
            subscription: Some(
                place.unwrap_or_else(|| h.subscribers.hold(&record.task.id, &accepted.sender)),
            ),
            until: caller.token_expires,
            answer: record.agent.answer.clone(),
        },
        // A resend opens no new work: it takes a place like a subscription.
        Intake::Duplicate(record) => Follow {
            subscription: Some(match place {
                Some(place) => place,
                None => h.subscribers.admit(&record.task.id, &accepted.sender)?,
            }),
            task_id: record.task.id.clone(),
            may_see,
            first: StreamResponse::task(shown(
                record.task.clone(),
                &record.agent,
                DEFAULT_HISTORY_LENGTH,
                true,
            )),
            after: record.last_seq,
            replay_until: record.last_seq,
            settled: record.state().ends_stream(),
            until: caller.token_expires,
            answer: record.agent.answer.clone(),
        },
    };
    Ok(follow(h.store.clone(), f))
}

/// The sender of a message: its metadata's participant, else the caller's. Refused when
/// there is none, it cannot be an id, it is the harness's own, or it differs from the
/// participant a token verified; recorded on the message when it came from the caller.
async fn sender_of(
    h: &Harness,
    op: Operation,
    tenant: &str,
    message: &mut Message,
    caller: &Caller,
) -> Result<String, A2aError> {
    const FIELD: &str = "message.metadata.participant_id";
    let sender = match (participant::asserted(message), &caller.participant) {
        (Some(named), _) => named.to_owned(),
        (None, Some(id)) => id.clone(),
        (None, None) => return Err(A2aError::invalid_params(NO_PARTICIPANT)),
    };
    // Before the comparison with a verified id, whose refusal repeats the sender.
    if !participant::valid_id(&sender) {
        let entry = IdEntry {
            task_id: &message.task_id,
            message_id: &message.message_id,
            ..IdEntry::new(tenant, &sender)
        };
        let refused = h.refuse_id(op, entry, &IdRefusal::Syntax).await;
        return Err(A2aError::invalid_field(FIELD, refused));
    }
    if let Some(id) = caller
        .participant
        .as_ref()
        .filter(|id| caller.verified && sender != **id)
    {
        return Err(A2aError::invalid_field(
            FIELD,
            format!("{FIELD} names {sender}, but the token authenticates {id}"),
        ));
    }
    let sender = h.speaking_as(op, tenant, sender).await?;
    participant::assert_sender(message, &sender);
    Ok(sender)
}

/// The message's channel part, which must be from its sender and, on a task, on that
/// task's channel (a task's channel id is its task id).
fn channel_of(message: &Message, sender: &str) -> Result<Option<ChannelMessage>, A2aError> {
    let Some(c) = channel_part::of_message(message)? else {
        return Ok(None);
    };
    if c.sender != sender {
        return Err(A2aError::invalid_field(
            "message.parts",
            format!(
                "the channel message names sender {:?}, not the asserted participant",
                c.sender
            ),
        ));
    }
    if !message.task_id.is_empty() && c.channel_id != message.task_id {
        return Err(A2aError::invalid_field(
            "message.parts",
            "channel_id must be the task's id: a task's channel is the task",
        ));
    }
    Ok(Some(c))
}

/// Takes the message in (see the module's doc); a streaming send's stream takes its place
/// among its task's streams on the way ([`Place`]).
async fn intake(
    h: &Harness,
    op: Operation,
    req: SendMessageRequest,
    caller: &Caller,
) -> Result<Accepted, A2aError> {
    let place = (op == Operation::SendStreamingMessage).then(Place::default);
    let mut accepted = take_in(h, op, req, caller, place.as_ref()).await?;
    accepted.place = place.and_then(Place::held);
    Ok(accepted)
}

async fn take_in(
    h: &Harness,
    op: Operation,
    req: SendMessageRequest,
    caller: &Caller,
    place: Option<&Place>,
) -> Result<Accepted, A2aError> {
    let mut message = req
        .message
        .ok_or_else(|| A2aError::invalid_field("message", "message is required"))?;
    validate::message(&mut message, "message")?;
    // Before anything reads it: nothing stored, audited, shown to the model, sent to a
    // webhook or logged holds a credential the client pasted.
    crate::redact::active().message(&mut message);
    let sender = sender_of(h, op, &req.tenant, &mut message, caller).await?;
    if let Err(e) = crate::ext::check_data_parts(&message) {
        refuse(h, &req.tenant, &message, &sender, &e.to_string()).await;
        return Err(e);
    }
    let channel = channel_of(&message, &sender)?;
    let envelope = envelope_of(&message)?;
    let command = h.commands.invoked(&message);
    let config = req.configuration.unwrap_or_default();
    let history = super::history_length(config.history_length, "configuration.historyLength")?;
    let accepted = |intake| Accepted {
        intake,
        sender: sender.clone(),
        history,
        return_immediately: config.returns_immediately(),
        place: None,
    };
    let tenant = req.tenant;
    // Drive the task right away (taking its lease in the write that makes it runnable),
    // or leave the write to wake a drive elsewhere: in Lambda, for returnImmediately, and
    // for an agent whose drive could outlive this function (the resume function drives
    // it, and a blocking send follows the task in the store until it settles).
    let inline = h.config.detached_runs
        || (!config.returns_immediately() && h.engine.agent().drives_quickly());
    // A webhook is checked before anything is stored, so a bad one leaves no task behind.
    let push = config.task_push_notification_config.clone();
    if let Some(push) = &push {
        h.notifier()?.check(push)?;
    }

    // On a task, once the sender is known to be on it (`continuation::admitted`). A new
    // task's sender is never its agent participant: an envelope may not make its own
    // sender one (`Harness::check_roster`).
    if message.task_id.is_empty() {
        own_voice(h, &tenant, &message, &sender, caller, || false).await?;
    }

    // A command may act before its write: a copy of one is caught first. Any other copy
    // is caught by the write itself (the message's dedupe item is in it, on the
    // condition that it is new), or, on a task, by its history.
    if command.is_some() {
        if let Some(task_id) = (h.store)
            .message_task(&tenant, &sender, &message.message_id)
            .await?
        {
            return Ok(accepted(
                duplicate(h, &tenant, &task_id, &message, caller).await?,
            ));
        }
    }

    // A new task's envelope, checked once before the write (which may be tried again).
    // One that names others counts once against the sender's tasks-for-others limit,
    // unless it is a copy of a message already taken in.
    let mut ext = None;
    if let (Some(e), true, None) = (&envelope, message.task_id.is_empty(), &command) {
        let started = match e.starting(&h.config.agent_id) {
            Ok(started) => started,
            Err(e) => {
                refuse(h, &tenant, &message, &sender, &e.to_string()).await;
                return Err(e);
            }
        };
        let entry = IdEntry {
            message_id: &message.message_id,
            ..IdEntry::new(&tenant, &sender)
        };
        // With the sender, who joins it as its reporter unless listed.
        let mut roster = started.clone();
        roster.add(Participant::new(
            &sender,
            ParticipantKind::Human,
            Role::Reporter,
        ));
        h.check_roster(op, entry, &e.field, &[], &roster).await?;
        if adds_others(h, &sender, &[], &started) {
            if let Some(task_id) = (h.store)
                .message_task(&tenant, &sender, &message.message_id)
                .await?
            {
                return Ok(accepted(
                    duplicate(h, &tenant, &task_id, &message, caller).await?,
                ));
            }
            take_for_others(h, &tenant, &message, &sender).await?;
        }
        ext = Some(started);
    }
    // An envelope on a task that adds others counts once, however often its write is tried.
    let counted = std::sync::atomic::AtomicBool::new(false);

    // A blocking send to an agent that answers at once holds its write back for the run,
    // which makes it with its own: one commit for the message and the answer.
    let mut stage = matches!(op, Operation::SendMessage)
        && inline
        && !config.returns_immediately()
        && h.engine.agent().drives_quickly()
        && push.is_none()
        && command.is_none();
    let outcome = loop {
        let outcome = if let (Some(command), true) = (&command, message.task_id.is_empty()) {
            command_without_task(h, &tenant, message.clone(), &sender, command).await
        } else if message.task_id.is_empty() {
            let new = NewTask {
                push: push.is_some(),
                sender: &sender,
                ext: ext.clone(),
                inline,
                stage,
            };
            start_task(h, &tenant, message.clone(), new).await
        } else {
            let on = Sender {
                id: &sender,
                caller,
                push: push.as_ref(),
                channel: channel.as_ref(),
                envelope: envelope.as_ref(),
                command: command.as_ref(),
                counted: &counted,
                inline,
                stage,
                place,
            };
            // Boxed, so a send that starts a task does not carry (and copy when it is
            // boxed itself) a future the size of this one.
            Box::pin(continue_task(h, &tenant, message.clone(), on)).await
        };
        let Ok(Stored::Staged {
            record,
            staged,
            replay_from,
        }) = outcome
        else {
            break outcome;
        };
        match drive_staged(h, *record, *staged, caller).await {
            Ok(record) => {
                break Ok(Stored::Task {
                    record: Box::new(record),
                    runnable: false,
                    replay_from,
                    settled: false,
                })
            }
            // Someone wrote to the task between its read and the run's write, or the
            // message and the answer together would pass the task's bounds: the message
            // is taken in the ordinary way, its write first (refused alone only if it
            // alone passes them; an answer past them then fails the task).
            Err(IntakeError::Store(StoreError::Conflict { .. } | StoreError::TaskFull { .. })) => {
                stage = false
            }
            Err(e) => break Err(e),
        }
    };
    match outcome {
        Ok(Stored::Direct(reply)) => Ok(accepted(Intake::Direct(*reply))),
        Ok(Stored::Task {
            record,
            runnable,
            replay_from,
            settled,
        }) => {
            let record = *record;
            // A message on a task attached its webhook with its own commit; the task a
            // message creates gets it now (it has no config yet, so none can be past the
            // limit).
            let attached = push.is_some() && message.task_id.is_empty();
            if let (Some(push), true) = (push, attached) {
                push_config::attach(h, record.clone(), push, &sender, replay_from).await?;
            }
            // The drive starts from the record as committed, unless attaching the
            // webhook wrote the task again.
            let run = runnable.then(|| {
                let start = if attached {
                    Start::Load(record.task.id.clone())
                } else {
                    Start::Fresh(Box::new(record.clone()))
                };
                h.engine.start_at(start, caller.deadline)
            });
            Ok(accepted(Intake::Stored {
                record,
                run,
                replay_from,
                settled,
            }))
        }
        // Not reached: the loop above makes every write held back.
        Ok(Stored::Staged { .. }) => {
            Err(StoreError::Unavailable("a write was held back".into()).into())
        }
        // Two copies of one message raced; the other stored it first.
        Err(IntakeError::Store(StoreError::DuplicateMessage { task_id, .. })) => Ok(accepted(
            duplicate(h, &tenant, &task_id, &message, caller).await?,
        )),
        Err(IntakeError::Store(e)) => Err(e.into()),
        Err(IntakeError::A2a(e)) => Err(e),
    }
}

/// What was stored for a message that is not a duplicate.
enum Stored {
    Direct(Box<Message>),
    /// Nothing yet: the task as the message leaves it and the write held back, which the
    /// run makes with its own (see [`drive_staged`]).
    Staged {
        record: Box<TaskRecord>,
        staged: Box<Staged>,
        replay_from: u64,
    },
    /// The task after the message, whether the message gives its agent work, the task's
    /// last seq before it, and whether what it caused is all there is to stream.
    Task {
        record: Box<TaskRecord>,
        runnable: bool,
        replay_from: u64,
        settled: bool,
    },
}

/// Who a message on a task is from, and what it carries besides its text.
struct Sender<'a> {
    id: &'a str,
    caller: &'a Caller,
    /// The webhook it attaches (`taskPushNotificationConfig`).
    push: Option<&'a crate::a2a::TaskPushNotificationConfig>,
    channel: Option<&'a ChannelMessage>,
    envelope: Option<&'a TaskEnvelope>,
    command: Option<&'a Invoked>,
    /// Whether its envelope has been counted against the tasks-for-others limit.
    counted: &'a std::sync::atomic::AtomicBool,
    /// Whether a run it makes possible starts in this request.
    inline: bool,
    /// Whether that run makes the message's write (it answers at once).
    stage: bool,
    /// A streaming send's place among the task's streams, taken once it is admitted.
    place: Option<&'a Place>,
}

/// What a message that starts a task brings.
struct NewTask<'a> {
    push: bool,
    sender: &'a str,
    ext: Option<TaskExtension>,
    inline: bool,
    stage: bool,
}

enum IntakeError {
    A2a(A2aError),
    Store(StoreError),
}

impl From<StoreError> for IntakeError {
    fn from(e: StoreError) -> Self {
        IntakeError::Store(e)
    }
}

impl From<commands::CommandError> for IntakeError {
    fn from(e: commands::CommandError) -> Self {
        match e {
            commands::CommandError::Forbidden(f) => IntakeError::A2a(f.into()),
            commands::CommandError::BadId { id, refusal } => {
                IntakeError::A2a(A2aError::invalid_params(format!(
                    "participant id {} refused: {refusal}",
                    participant::shown(&id)
                )))
            }
            commands::CommandError::Limited(rule) => {
                IntakeError::A2a(A2aError::invalid_params(rule))
            }
            commands::CommandError::Store(e) => IntakeError::Store(e),
        }
    }
}

impl From<A2aError> for IntakeError {
    fn from(e: A2aError) -> Self {
        IntakeError::A2a(e)
    }
}

/// Runs the agent on `record` from the write held back, which the run makes with its
/// own; the task as stored. Nothing is stored when it fails.
async fn drive_staged(
    h: &Harness,
    record: TaskRecord,
    staged: Staged,
    caller: &Caller,
) -> Result<TaskRecord, IntakeError> {
    let stopped = |why: String| IntakeError::Store(StoreError::Unavailable(why));
    match h.engine.start_staged(record, staged, caller.deadline).await {
        Ok(Ok(Some(record))) => Ok(record),
        Ok(Ok(None)) => Err(stopped(
            "the task's run stopped before it stored the task".into(),
        )),
        Ok(Err(RunError::Store(e))) => Err(e.into()),
        Ok(Err(e)) => Err(stopped(format!("the task's run failed: {e}"))),
        Err(e) => Err(stopped(format!("the task's run failed: {e}"))),
    }
}

/// Who drives a task a message made runnable: this request (taking the lease in the same
/// write; true), a drive woken by the write itself (`wake`), or the drive that holds the
/// lease already, which takes the message in at its next turn.
fn schedule(h: &Harness, next: &mut TaskRecord, inline: bool) -> bool {
    // A timer the task waited under (a question's deadline, a remote's next poll) is put
    // out: this write is its wake-up now, which a timer in the lease's place would hide.
    if (next.lease.as_ref()).is_some_and(crate::task::lease::Lease::is_timer) {
        next.lease = None;
    }
    let elsewhere = next
        .lease
        .as_ref()
        .is_some_and(|l| l.held() && !h.engine.owns(l));
    if elsewhere {
        false
    } else if inline {
        next.lease = Some(h.engine.new_lease());
        true
    } else {
        next.wake = true;
        false
    }
}

/// A registered command a message invokes: its name, its body, its arguments.
type Invoked = (String, std::sync::Arc<dyn Command>, String);

/// Records a refused message in the audit trail, and nothing else: the task (if there is
/// one) is not written, so a stranger can neither disturb its members nor grow it, and the
/// sender's answer is the same not-found whatever happened.
async fn refuse(h: &Harness, tenant: &str, message: &Message, sender: &str, reason: &str) {
    let record =
        AuditRecord::of_message(tenant, "SendMessage", message, sender, false, reason.into());
    tracing::info!(participant = sender, reason, "message refused");
    h.audit(&record).await;
}

/// Whether the roster `after` lists anyone `before` does not but the sender and the
/// harness's agent: a new task naming others, or an envelope adding them to a task. Either
/// counts once against the sender's tasks-for-others limit ([`take_for_others`]), as
/// `/task` for someone else does: the agent may ask them, and post to their channels, on
/// the sender's word.
fn adds_others(h: &Harness, sender: &str, before: &[Participant], after: &TaskExtension) -> bool {
    (after.participants.iter())
        .any(|p| p.id != sender && p.id != h.config.agent_id && before.iter().all(|b| b.id != p.id))
}

/// Counts one task for others against the sender's hourly limit; past it the message is
/// refused (-32602 naming the limit, audited, nothing stored).
async fn take_for_others(
    h: &Harness,
    tenant: &str,
    message: &Message,
    sender: &str,
) -> Result<(), A2aError> {
    let limit = h.config.tasks_for_others_per_hour;
    match commands::builtin::take_tasks_for_others(h.store.as_ref(), sender, limit).await {
        Ok(()) => Ok(()),
        Err(commands::CommandError::Store(e)) => Err(e.into()),
        Err(limited) => {
            let rule = limited.to_string();
            refuse(h, tenant, message, sender, &rule).await;
            Err(A2aError::invalid_params(rule))
        }
    }
}

/// Refuses (audited, nothing stored) a message that speaks as someone it is not: content
/// that is the agent's ([`permissions::agent_side`]) unless `agent()` (whether the sender
/// is an agent participant of the task), and a message under an answer link's id
/// ([`ANSWER_ID_PREFIX`]) unless the link sent it.
async fn own_voice(
    h: &Harness,
    tenant: &str,
    message: &Message,
    sender: &str,
    caller: &Caller,
    agent: impl FnOnce() -> bool,
) -> Result<(), A2aError> {
    let link = caller.answer_link.is_some();
    let refusal = if message.message_id.starts_with(ANSWER_ID_PREFIX) && !link {
        A2aError::invalid_field(
            "message.messageId",
            format!(
                "message.messageId: ids starting with {ANSWER_ID_PREFIX:?} are the answer \
                 links'; send the message under an id of its own"
            ),
        )
    } else if let Some((field, what)) = permissions::agent_side(message).filter(|_| !agent()) {
        let why = format!("{field} is {what}: {}", permissions::AGENT_SIDE_RULE);
        A2aError::invalid_field(field, why)
    } else {
        return Ok(());
    };
    refuse(h, tenant, message, sender, &refusal.to_string()).await;
    Err(refusal)
}

/// A repeated messageId: answer with what the first copy produced, doing nothing again.
async fn duplicate(
    h: &Harness,
    tenant: &str,
    task_id: &str,
    message: &Message,
    caller: &Caller,
) -> Result<Intake, A2aError> {
    if task_id.is_empty() {
        let mut message = message.clone();
        if message.context_id.is_empty() {
            message.context_id = new_id();
        }
        let reply = h.engine.agent().direct_reply(&message).ok_or_else(|| {
            A2aError::invalid_params(format!(
                "message {} was already received and answered",
                message.message_id
            ))
        })?;
        return Ok(Intake::Direct(reply));
    }
    // The sender's own message, but maybe on a task they may no longer see: its id is
    // not told again.
    let admit = |rec: &TaskRecord| rec.tenant == tenant && caller.may_see(rec);
    match h.store.load_task_for(task_id, &admit).await? {
        Some(rec) => Ok(Intake::Duplicate(rec)),
        _ => Err(A2aError::invalid_params(format!(
            "message {} was already received",
            message.message_id
        ))),
    }
}
