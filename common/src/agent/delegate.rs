//! The drive's side of a delegation: starting one ([`start`]), taking the remote tasks'
//! news into the conversation and ending those past their deadline ([`take`]), answering
//! a remote's question ([`reply`]) and passing the parent's end on ([`cancel_open`]).
//!
//! What a remote says reaches the model inside the untrusted block, attributed to the
//! agent: its status message and its artifacts' text (data parts as JSON, files as a
//! reference), at most [`MAX_NOTE_CHARS`] characters.

use super::context::untrusted;
use crate::a2a::{
    Message, Part, Role as MessageRole, SendMessageConfiguration, SendMessageRequest, Task,
    TaskPushNotificationConfig, TaskState,
};
use crate::engine::{RunError, TaskRun};
use crate::ext::task::{Participant, ParticipantKind, Role, TaskRef};
use crate::models::ChatMessage;
use crate::models::ToolError;
use crate::remote::card::Chosen;
use crate::remote::client::RemoteError;
use crate::remote::registry::RemoteAgent;
use crate::remote::Remotes;
use crate::store::TaskRecord;
use crate::task::Link;

/// Longest note of a remote task's news the model is given.
pub const MAX_NOTE_CHARS: usize = 8_000;
/// Most delegations one task may make.
pub const MAX_LINKS: usize = 20;
/// Most questions one remote task may ask before the harness stops following it (each
/// costs a model call).
pub const MAX_QUESTIONS: usize = 5;
/// Longest error text from a remote the model is shown.
const MAX_ERROR_CHARS: usize = 300;

/// Delegates `text` to `agent` for the tool call `call` of the task `run` drives, to be
/// answered by `due` (ms since the epoch; the agent's own deadline when sooner or when
/// there is none): checks the agent's card (a card it cannot use sends nothing), commits
/// the link with the agent as a participant, sends, and completes the link. The same call
/// run again after a crash finishes its own link instead of making another. The tool's
/// result text, or why it failed.
pub async fn start(
    remotes: &Remotes,
    run: &mut TaskRun,
    agent: &RemoteAgent,
    (text, due): (String, Option<i64>),
    call: &str,
) -> Result<Result<String, ToolError>, RunError> {
    let created =
        |remote_task: &str| format!("task for {} created (remote task {remote_task})", agent.id);
    let earlier = (run.record().agent.remote.iter())
        .find(|l| l.call == call)
        .cloned();
    if let Some(link) = &earlier {
        if let Some(remote_task) = &link.remote_task {
            return Ok(Ok(created(remote_task)));
        }
        if link.ended {
            return Ok(Err(ToolError::new(
                "remote.failed",
                format!("{}: the delegation failed", agent.id),
            )));
        }
    } else if run.record().agent.remote.len() >= MAX_LINKS {
        return Ok(Err(ToolError::new(
            "remote.limit",
            format!("a task may delegate at most {MAX_LINKS} times"),
        )));
    }
    let chosen = match remotes.client.choose(agent).await {
        Ok(c) => c,
        Err(e) => return Ok(Err(unusable(&agent.id, &e))),
    };
    let n = match earlier {
        Some(link) => link.n,
        None => {
            let n = run.record().agent.remote.len() + 1;
            let link = Link {
                n,
                id: Link::new_id(),
                callback: remotes.new_reference(run.record().id(), n),
                deadline_ms: deadline_of(agent).min(due.unwrap_or(i64::MAX)),
                agent: agent.id.clone(),
                call: call.to_owned(),
                text,
                ..Default::default()
            };
            run.apply(|rec| {
                if let Some(mut ext) = rec.ext() {
                    ext.add(Participant::new(
                        &link.agent,
                        ParticipantKind::Agent,
                        Role::Watcher,
                    ));
                    ext.store(&mut rec.task);
                }
                rec.agent.remote.push(link.clone());
                Vec::new()
            })
            .await?;
            link.n
        }
    };
    match send(remotes, run, n, &chosen).await? {
        Ok(remote_task) => Ok(Ok(created(&remote_task))),
        Err(e) => {
            end(run, n).await?;
            Ok(Err(unusable(&agent.id, &e)))
        }
    }
}

/// When a delegation to `agent` starting now ends unanswered (ms since the epoch).
fn deadline_of(agent: &RemoteAgent) -> i64 {
    crate::task::lease::now_ms().saturating_add(agent.deadline.as_millis() as i64)
}

fn unusable(agent: &str, e: &RemoteError) -> ToolError {
    let code = match e {
        RemoteError::Unusable(_) => "remote.unusable",
        _ => "remote.failed",
    };
    ToolError::new(code, format!("{agent}: {}", bounded(&e.to_string())))
}

/// A remote's words in an error: at most [`MAX_ERROR_CHARS`] characters.
fn bounded(text: &str) -> String {
    let mut out: String = text.chars().take(MAX_ERROR_CHARS).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

/// Sends link `n`'s message (again, after a crash: the same message id) and completes the
/// link with the remote task; the remote task's id.
async fn send(
    remotes: &Remotes,
    run: &mut TaskRun,
    n: usize,
    chosen: &Chosen,
) -> Result<Result<String, RemoteError>, RunError> {
    let task_id = run.record().task.id.clone();
    let Some(link) = run.record().agent.remote.get(n - 1).cloned() else {
        return Err(RunError::Gone);
    };
    let Some(agent) = remotes.registry.get(&link.agent) else {
        return Ok(Err(RemoteError::Malformed(
            "no longer in the registry".into(),
        )));
    };
    // A link from before references has none kept: a new one opens the same.
    let reference = match link.callback.as_str() {
        "" => remotes.new_reference(&task_id, n),
        kept => kept.to_owned(),
    };
    let (url, token) = remotes.callback(&reference, link.deadline_ms);
    // A remote without push notifications is polled instead.
    let push = chosen.push.then(|| TaskPushNotificationConfig {
        url,
        token,
        ..Default::default()
    });
    let mut message = Message {
        message_id: link.message_id(&task_id),
        role: MessageRole::User,
        parts: vec![Part::text(link.text.clone())],
        ..Default::default()
    };
    crate::ext::participant::assert_sender(&mut message, remotes.client.sender());
    let request = SendMessageRequest {
        message: Some(message),
        configuration: Some(SendMessageConfiguration {
            return_immediately: true,
            task_push_notification_config: push,
            ..Default::default()
        }),
        ..Default::default()
    };
    let answer = match run
        .keeping_lease(remotes.client.send(agent, chosen, request))
        .await?
    {
        Ok(a) => a,
        Err(e) => return Ok(Err(e)),
    };
    let Some(task) = answer.task else {
        // An agent that answers at once, with no task: that answer is the outcome.
        let said = answer.message.map(|m| message_note(&m)).unwrap_or_default();
        let note = note(&run.record().agent.nonce, &link.agent, "answered", &said);
        run.apply(|rec| {
            if let Some(l) = rec.agent.remote.get_mut(n - 1) {
                l.ended = true;
            }
            rec.agent.conversation.push(note.clone());
            super::actor::heard(&mut rec.agent, &link.agent);
            Vec::new()
        })
        .await?;
        return Ok(Ok("(none: it answered at once)".into()));
    };
    if !crate::ext::participant::valid_id(&task.id)
        || !crate::ext::participant::valid_id(&task.context_id)
    {
        return Ok(Err(RemoteError::Malformed(format!(
            "its task id or context id is not 1 to {} characters without control characters",
            crate::ext::participant::MAX_ID_LEN
        ))));
    }
    let remote_id = task.id.clone();
    run.apply(|rec| {
        if let Some(l) = rec.agent.remote.get_mut(n - 1) {
            l.remote_task = Some(task.id.clone());
            l.context_id = Some(task.context_id.clone());
        }
        if let Some(mut ext) = rec.ext() {
            ext.sub_tasks.push(TaskRef {
                task_id: task.id.clone(),
                agent: Some(serde_json::json!({"kind": "agent", "id": link.agent})),
            });
            ext.store(&mut rec.task);
        }
        Vec::new()
    })
    .await?;
    Ok(Ok(remote_id))
}

async fn end(run: &mut TaskRun, n: usize) -> Result<(), RunError> {
    run.update_agent(|a| {
        if let Some(l) = a.remote.get_mut(n - 1) {
            l.ended = true;
        }
    })
    .await
}

/// What the task waits on after [`take`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Waiting {
    /// A remote task is still at work: the task waits for it.
    pub working: bool,
    /// The task is to be woken after this long whatever it hears: the next poll of a
    /// remote without push notifications, or the earliest deadline of its open links.
    pub wake_in: Option<std::time::Duration>,
}

impl Waiting {
    fn wake_within(&mut self, after: std::time::Duration) {
        self.working = true;
        self.wake_in = Some(self.wake_in.map_or(after, |w| w.min(after)));
    }
}

/// The first poll of a remote without push notifications, after the send.
pub const FIRST_POLL: std::time::Duration = std::time::Duration::from_secs(2);
/// Polls are spaced twice as far each time, up to this.
pub const MAX_POLL_INTERVAL: std::time::Duration = std::time::Duration::from_secs(300);
/// Most polls of one remote task (about a day at the longest interval), after which the
/// harness stops following it and tells the model.
pub const MAX_POLLS: u32 = 300;

fn poll_interval(polls: u32) -> std::time::Duration {
    FIRST_POLL
        .saturating_mul(2u32.saturating_pow(polls.min(16)))
        .min(MAX_POLL_INTERVAL)
}

/// Takes the news of the task's open remote tasks into the conversation: repairs a link
/// whose send was never answered, reads each remote task, and notes an outcome or a new
/// question. Says whether one is still at work (the task then waits for its callback, or
/// for its next poll).
pub async fn take(remotes: Option<&Remotes>, run: &mut TaskRun) -> Result<Waiting, RunError> {
    let Some(remotes) = remotes else {
        return Ok(Waiting::default());
    };
    let open: Vec<Link> = (run.record().agent.remote.iter())
        .filter(|l| !l.ended)
        .cloned()
        .collect();
    let mut waiting = Waiting::default();
    for mut link in open {
        let Some(agent) = remotes.registry.get(&link.agent).cloned() else {
            fail(run, &link, "it is no longer in the registry").await?;
            continue;
        };
        if link.deadline_ms == 0 {
            // A link from before deadlines: its deadline runs from now.
            link.deadline_ms = deadline_of(&agent);
            let (n, at) = (link.n, link.deadline_ms);
            run.update_agent(|a| {
                if let Some(l) = a.remote.get_mut(n - 1) {
                    l.deadline_ms = at;
                }
            })
            .await?;
        }
        // Past its deadline, a link is given up unless its remote task has ended when read:
        // the result is read first, so one that came just before is not thrown away.
        let past = crate::task::lease::now_ms() >= link.deadline_ms;
        if past && link.remote_task.is_none() {
            expire(remotes, run, &link, Via::Choose).await?;
            continue;
        }
        let chosen = match remotes.client.choose(&agent).await {
            Ok(c) => c,
            Err(e) => {
                let via = Via::Unreachable;
                give_up(remotes, run, &link, (past, via), &e.to_string()).await?;
                continue;
            }
        };
        let remote_id = match &link.remote_task {
            Some(id) => id.clone(),
            // Committed, then the harness stopped before the answer was: the same message
            // again finds the task the first made.
            None => match send(remotes, run, link.n, &chosen).await? {
                Ok(id) => id,
                Err(e) => {
                    fail(run, &link, &e.to_string()).await?;
                    continue;
                }
            },
        };
        let task = match run
            .keeping_lease(remotes.client.get_task(&agent, &chosen, &remote_id))
            .await?
        {
            Ok(t) => t,
            Err(e) => {
                let via = Via::Chosen(&chosen);
                give_up(remotes, run, &link, (past, via), &e.to_string()).await?;
                continue;
            }
        };
        let state = task.status.as_ref().map(|s| s.state).unwrap_or_default();
        // The remote's own id for its question: kept, so bounded.
        let status_id: String = (task.status.as_ref())
            .and_then(|s| s.message.as_ref())
            .map(|m| {
                m.message_id
                    .chars()
                    .take(crate::ext::participant::MAX_ID_LEN)
                    .collect()
            })
            .unwrap_or_default();
        if past && !state.is_terminal() {
            expire(remotes, run, &link, Via::Chosen(&chosen)).await?;
            continue;
        }
        let nonce = run.record().agent.nonce.clone();
        if state.is_terminal() {
            let said = outcome(&task);
            let word = state.as_str().trim_start_matches("TASK_STATE_");
            let note = note(&nonce, &link.agent, &format!("is {word}"), &said);
            let n = link.n;
            run.apply(|rec| {
                if let Some(l) = rec.agent.remote.get_mut(n - 1) {
                    l.ended = true;
                    l.noted = Some((state, status_id.clone()));
                }
                rec.agent.conversation.push(note.clone());
                super::actor::heard(&mut rec.agent, &link.agent);
                Vec::new()
            })
            .await?;
        } else if state == TaskState::InputRequired {
            let new = link.noted.as_ref().is_none_or(|(_, id)| *id != status_id);
            if new && link.questions >= MAX_QUESTIONS {
                let why = format!("it asked more than {MAX_QUESTIONS} questions");
                fail(run, &link, &why).await?;
            } else if new {
                let asked = outcome(&task);
                let note = note(
                    &nonce,
                    &link.agent,
                    "asks (answer with reply_to_agent, or ask a participant)",
                    &asked,
                );
                let n = link.n;
                run.apply(|rec| {
                    if let Some(l) = rec.agent.remote.get_mut(n - 1) {
                        l.noted = Some((state, status_id.clone()));
                        l.questions += 1;
                    }
                    rec.agent.conversation.push(note.clone());
                    super::actor::heard(&mut rec.agent, &link.agent);
                    Vec::new()
                })
                .await?;
            } else if link.answered.as_deref() == Some(status_id.as_str()) {
                // Answered; the remote has not taken the answer in yet.
                still_working(run, &link, &chosen, &mut waiting).await?;
            }
        } else {
            still_working(run, &link, &chosen, &mut waiting).await?;
        }
    }
    Ok(waiting)
}

/// A remote task still at work: waited on until its deadline, and if its agent has no
/// push notifications, polled (or, polled [`MAX_POLLS`] times, given up).
async fn still_working(
    run: &mut TaskRun,
    link: &Link,
    chosen: &Chosen,
    waiting: &mut Waiting,
) -> Result<(), RunError> {
    let left = link
        .deadline_ms
        .saturating_sub(crate::task::lease::now_ms());
    waiting.wake_within(std::time::Duration::from_millis(left.max(0) as u64));
    if chosen.push {
        return Ok(());
    }
    if link.polls >= MAX_POLLS {
        let why = format!("it did not finish after {MAX_POLLS} polls");
        return fail(run, link, &why).await;
    }
    let n = link.n;
    run.update_agent(|a| {
        if let Some(l) = a.remote.get_mut(n - 1) {
            l.polls += 1;
        }
    })
    .await?;
    waiting.wake_within(poll_interval(link.polls));
    Ok(())
}

/// Ends a link whose deadline passed unanswered: its remote task is cancelled (best
/// effort, logged) and the model told whether the cancel was sent, so it can go on
/// without it, ask someone else, or give up.
async fn expire(
    remotes: &Remotes,
    run: &mut TaskRun,
    link: &Link,
    via: Via<'_>,
) -> Result<(), RunError> {
    let task_id = run.record().id().to_owned();
    let cancel = match run
        .keeping_lease(cancel_one(remotes, &task_id, link, via))
        .await?
    {
        None => "it made no remote task to cancel",
        Some(true) => "the harness cancelled the remote task",
        // The remote's error is in the log, not before the model.
        Some(false) => "the harness could not send the remote task a cancel",
    };
    let note = note(
        &run.record().agent.nonce,
        &link.agent,
        "did not answer within its deadline",
        &format!(
            "No answer by {}: {cancel}, and stopped following it. Go on without it, \
             ask someone else, or fail the task.",
            crate::task::Deadline {
                due_ms: link.deadline_ms,
                remind_ms: None
            }
            .due_text()
        ),
    );
    tracing::info!(%task_id, agent = %link.agent, "a delegation passed its deadline");
    let n = link.n;
    run.apply(|rec| {
        if let Some(l) = rec.agent.remote.get_mut(n - 1) {
            l.ended = true;
        }
        rec.agent.conversation.push(note.clone());
        Vec::new()
    })
    .await
}

/// Ends a link that could not be read: past its deadline, as expired (its remote task
/// cancelled `via` what was reached, the model told of the deadline), whatever the error;
/// else as failed.
async fn give_up(
    remotes: &Remotes,
    run: &mut TaskRun,
    link: &Link,
    (past, via): (bool, Via<'_>),
    why: &str,
) -> Result<(), RunError> {
    if past {
        tracing::info!(task_id = %run.record().id(), agent = %link.agent, %why, "a delegation past its deadline could not be read");
        expire(remotes, run, link, via).await
    } else {
        fail(run, link, why).await
    }
}

/// Ends a link that cannot go on, telling the model why.
async fn fail(run: &mut TaskRun, link: &Link, why: &str) -> Result<(), RunError> {
    let note = note(
        &run.record().agent.nonce,
        &link.agent,
        "cannot be followed",
        &bounded(why),
    );
    let n = link.n;
    run.apply(|rec| {
        if let Some(l) = rec.agent.remote.get_mut(n - 1) {
            l.ended = true;
        }
        rec.agent.conversation.push(note.clone());
        super::actor::heard(&mut rec.agent, &link.agent);
        Vec::new()
    })
    .await
}

/// Answers the question the remote task of `agent` asks, on that task.
pub async fn reply(
    remotes: &Remotes,
    run: &mut TaskRun,
    agent_id: &str,
    text: &str,
) -> Result<Result<String, ToolError>, RunError> {
    let asking = (run.record().agent.remote.iter()).rfind(|l| {
        l.agent == agent_id
            && !l.ended
            && matches!(&l.noted, Some((TaskState::InputRequired, id)) if l.answered.as_ref() != Some(id))
    });
    let Some(link) = asking.cloned() else {
        return Ok(Err(ToolError::new(
            "remote.not_asking",
            format!("no task delegated to {agent_id} is waiting for an answer"),
        )));
    };
    let (Some(agent), Some(remote_id)) = (remotes.registry.get(agent_id), &link.remote_task) else {
        return Ok(Err(ToolError::new(
            "remote.not_asking",
            format!("no task delegated to {agent_id} is waiting for an answer"),
        )));
    };
    let chosen = match remotes.client.choose(agent).await {
        Ok(c) => c,
        Err(e) => return Ok(Err(unusable(agent_id, &e))),
    };
    let task_id = run.record().task.id.clone();
    let mut message = Message {
        // The same on a retry after a crash, so the remote takes it once.
        message_id: format!("{}:reply:{}", link.message_id(&task_id), link.replies + 1),
        task_id: remote_id.clone(),
        context_id: link.context_id.clone().unwrap_or_default(),
        role: MessageRole::User,
        parts: vec![Part::text(text)],
        ..Default::default()
    };
    crate::ext::participant::assert_sender(&mut message, remotes.client.sender());
    let request = SendMessageRequest {
        message: Some(message),
        configuration: Some(SendMessageConfiguration {
            return_immediately: true,
            ..Default::default()
        }),
        ..Default::default()
    };
    if let Err(e) = run
        .keeping_lease(remotes.client.send(agent, &chosen, request))
        .await?
    {
        return Ok(Err(unusable(agent_id, &e)));
    }
    let n = link.n;
    let question = link.noted.as_ref().map(|(_, id)| id.clone());
    run.update_agent(|a| {
        if let Some(l) = a.remote.get_mut(n - 1) {
            l.replies += 1;
            l.answered = question.clone();
        }
    })
    .await?;
    Ok(Ok(format!("answer sent to {agent_id}")))
}

/// Cancels the open remote tasks of `rec`, a task that just ended (by whoever ended it:
/// its drive, or CancelTask), all at once; a failure is logged, the task's end stands.
/// Their links need no write: a callback for an ended task is refused.
pub async fn cancel_open(remotes: Option<&Remotes>, rec: &TaskRecord) {
    let Some(remotes) = remotes else {
        return;
    };
    let cancels = (rec.agent.remote.iter())
        .filter(|l| !l.ended)
        .map(|link| cancel_one(remotes, rec.id(), link, Via::Choose));
    // All at once, within one bound: a CancelTask answers in time however many there are.
    let all = futures::future::join_all(cancels);
    if tokio::time::timeout(CANCEL_WITHIN, all).await.is_err() {
        tracing::warn!(task_id = %rec.task.id, "remote tasks not all cancelled in time");
    }
}

/// How a cancel reaches a remote agent: by the interface its card offers (read now), by
/// one already chosen, or not at all (reading its card just failed: not tried twice).
enum Via<'a> {
    Choose,
    Chosen(&'a Chosen),
    Unreachable,
}

/// Cancels the remote task of `link` of the task `task_id`: None if it has none, else
/// whether the cancel was taken. A failure is logged.
async fn cancel_one(remotes: &Remotes, task_id: &str, link: &Link, via: Via<'_>) -> Option<bool> {
    let (Some(agent), Some(remote_id)) = (remotes.registry.get(&link.agent), &link.remote_task)
    else {
        return None;
    };
    let chosen = match via {
        Via::Choose => remotes
            .client
            .choose(agent)
            .await
            .map(std::borrow::Cow::Owned),
        Via::Chosen(chosen) => Ok(std::borrow::Cow::Borrowed(chosen)),
        Via::Unreachable => {
            tracing::warn!(%task_id, agent = %link.agent, "the remote task could not be cancelled: its agent is unreachable");
            return Some(false);
        }
    };
    let cancelled = match chosen {
        Ok(chosen) => (remotes.client.cancel(agent, &chosen, remote_id).await).map(|_| ()),
        Err(e) => Err(e),
    };
    match &cancelled {
        Ok(()) => tracing::info!(%task_id, agent = %link.agent, "the remote task was cancelled"),
        Err(e) => {
            tracing::warn!(%task_id, agent = %link.agent, error = %e, "the remote task could not be cancelled")
        }
    }
    Some(cancelled.is_ok())
}

/// Longest a cancel waits for the remote agents to take theirs.
const CANCEL_WITHIN: std::time::Duration = std::time::Duration::from_secs(15);

/// How a remote's news reaches the model: `Remote task of agent <id> <what>:` and what it
/// said, inside the untrusted block (source `agent:<id>`).
fn note(nonce: &str, agent: &str, what: &str, said: &str) -> ChatMessage {
    let said: String = said.chars().take(MAX_NOTE_CHARS).collect();
    // As every tool result: a secret the remote echoes back never reaches the model.
    let said = crate::redact::active().redact_str(&said);
    ChatMessage::User {
        text: untrusted(
            nonce,
            &format!("agent:{agent}"),
            &format!("Remote task of agent {agent} {what}:\n{said}"),
        ),
    }
}

/// A remote task's status message and artifacts as text.
fn outcome(task: &Task) -> String {
    let mut out = Vec::new();
    if let Some(m) = task.status.as_ref().and_then(|s| s.message.as_ref()) {
        out.push(message_note(m));
    }
    for a in &task.artifacts {
        let name = if a.name.is_empty() {
            "artifact"
        } else {
            &a.name
        };
        out.push(format!("[{name}]\n{}", parts_text(&a.parts)));
    }
    out.join("\n")
}

/// A message's text for the model (its channel part only when it has no text).
fn message_note(m: &Message) -> String {
    crate::ext::channel::message_text(m)
}

/// Text as it is, data as JSON, a file as a reference (its name, type and URL).
fn parts_text(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(|p| {
            if let Some(t) = &p.text {
                return Some(t.clone());
            }
            if let Some(d) = &p.data {
                return Some(d.to_string());
            }
            let file = serde_json::json!({
                "file": p.filename, "mediaType": p.media_type, "url": p.url,
            });
            (p.url.is_some() || p.raw.is_some()).then(|| file.to_string())
        })
        .collect::<Vec<_>>()
        .join("\n")
}
