//! SendMessage and SendStreamingMessage: intake of a client message (validate, dedupe by
//! messageId, start or continue a task, store the message before answering), then either
//! wait for the task to settle, return at once, or stream its events.

use super::{push_config, Harness};
use crate::a2a::{
    validate, A2aError, Message, SendMessageRequest, SendMessageResponse, StreamResponse,
};
use crate::engine::follow::{follow, EventStream, Follow};
use crate::engine::transition::{accept_message, new_id, new_task, view};
use crate::store::{InboundMessage, StoreError, TaskRecord};

/// What intake made of a message.
enum Intake {
    /// The agent answered without a task.
    Direct(Message),
    /// The message started or continued a task, and a run works on it.
    Running {
        record: TaskRecord,
        run: tokio::task::JoinHandle<()>,
    },
    /// The messageId was seen before: nothing new happens, the task is as it is.
    Duplicate(TaskRecord),
}

struct Accepted {
    intake: Intake,
    history: Option<usize>,
    return_immediately: bool,
}

#[tracing::instrument(skip_all)]
pub async fn send_message(
    h: &Harness,
    req: SendMessageRequest,
) -> Result<SendMessageResponse, A2aError> {
    let accepted = intake(h, req).await?;
    let record = match accepted.intake {
        Intake::Direct(message) => {
            return Ok(SendMessageResponse {
                message: Some(message),
                task: None,
            })
        }
        Intake::Duplicate(record) => record,
        Intake::Running { record, run } => {
            if accepted.return_immediately {
                record
            } else {
                // The run stops at a terminal or interrupted state: that is when to answer.
                let _ = run.await;
                h.store.load_task(record.id()).await?.unwrap_or(record)
            }
        }
    };
    Ok(SendMessageResponse {
        task: Some(view(&record.task, accepted.history, true)),
        message: None,
    })
}

#[tracing::instrument(skip_all)]
pub async fn send_streaming_message(
    h: &Harness,
    req: SendMessageRequest,
) -> Result<EventStream, A2aError> {
    let accepted = intake(h, req).await?;
    let follow_from = |record: &TaskRecord, settled: bool| Follow {
        task_id: record.task.id.clone(),
        first: StreamResponse::task(view(&record.task, None, true)),
        after: record.last_seq,
        replay_until: record.last_seq,
        settled,
    };
    let f = match accepted.intake {
        Intake::Direct(message) => {
            return Ok(Box::pin(futures::stream::once(async {
                Ok(StreamResponse::message(message))
            })))
        }
        Intake::Running { record, .. } => follow_from(&record, false),
        Intake::Duplicate(record) => {
            let settled = record.state().ends_stream();
            follow_from(&record, settled)
        }
    };
    Ok(follow(h.store.clone(), f))
}

async fn intake(h: &Harness, req: SendMessageRequest) -> Result<Accepted, A2aError> {
    let mut message = req
        .message
        .ok_or_else(|| A2aError::invalid_field("message", "message is required"))?;
    validate::message(&mut message, "message")?;
    let config = req.configuration.unwrap_or_default();
    let history = validate::history_length(config.history_length, "configuration.historyLength")?;
    let accepted = |intake| Accepted {
        intake,
        history,
        return_immediately: config.returns_immediately(),
    };
    let tenant = req.tenant;
    // A webhook is checked before anything is stored, so a bad one leaves no task behind.
    let push = config.task_push_notification_config.clone();
    if let Some(push) = &push {
        h.engine.pusher().check(push)?;
    }

    if let Some(task_id) = h.store.message_task(&tenant, &message.message_id).await? {
        return Ok(accepted(duplicate(h, &tenant, &task_id, &message).await?));
    }

    let outcome = if message.task_id.is_empty() {
        start_task(h, &tenant, message.clone(), push.is_some()).await
    } else {
        continue_task(h, &tenant, message.clone()).await
    };
    match outcome {
        Ok(Stored::Direct(reply)) => Ok(accepted(Intake::Direct(reply))),
        Ok(Stored::Task { record, message }) => {
            let record = *record;
            if let Some(push) = push {
                push_config::attach(h, record.clone(), push).await?;
            }
            let run = h.engine.start(record.task.id.clone(), message);
            Ok(accepted(Intake::Running { record, run }))
        }
        // Two copies of one message raced; the other stored it first.
        Err(IntakeError::Store(StoreError::DuplicateMessage { task_id, .. })) => {
            Ok(accepted(duplicate(h, &tenant, &task_id, &message).await?))
        }
        Err(IntakeError::Store(e)) => Err(e.into()),
        Err(IntakeError::A2a(e)) => Err(e),
    }
}

/// What was stored for a message that is not a duplicate.
enum Stored {
    Direct(Message),
    /// The message as stored (with its task's ids) and the task after it.
    Task {
        record: Box<TaskRecord>,
        message: Message,
    },
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

impl From<A2aError> for IntakeError {
    fn from(e: A2aError) -> Self {
        IntakeError::A2a(e)
    }
}

async fn start_task(
    h: &Harness,
    tenant: &str,
    mut message: Message,
    push: bool,
) -> Result<Stored, IntakeError> {
    if message.context_id.is_empty() {
        message.context_id = new_id();
    }
    if let Some(reply) = h.engine.agent().direct_reply(&message) {
        h.store
            .put_message(&InboundMessage {
                tenant: tenant.into(),
                message,
            })
            .await?;
        return Ok(Stored::Direct(reply));
    }
    let (mut record, created) = new_task(tenant, &mut message);
    record.push = push;
    let inbound = InboundMessage {
        tenant: tenant.into(),
        message: message.clone(),
    };
    let record = h
        .store
        .create_task(&record, &[created], Some(&inbound))
        .await?;
    Ok(Stored::Task {
        record: Box::new(record),
        message,
    })
}

async fn continue_task(
    h: &Harness,
    tenant: &str,
    mut message: Message,
) -> Result<Stored, IntakeError> {
    loop {
        let current = h.visible_task(tenant, &message.task_id).await?;
        if !message.context_id.is_empty() && message.context_id != current.task.context_id {
            return Err(A2aError::invalid_field(
                "message.contextId",
                format!(
                    "message.contextId {} does not match the context of task {}",
                    message.context_id, current.task.id
                ),
            )
            .into());
        }
        if current.state().is_terminal() {
            return Err(A2aError::UnsupportedOperation(format!(
                "Task {} is in terminal state {} and accepts no more messages",
                current.task.id,
                current.state().as_str()
            ))
            .into());
        }
        let mut next = current.clone();
        accept_message(&mut next, &mut message);
        let inbound = InboundMessage {
            tenant: tenant.into(),
            message: message.clone(),
        };
        match h
            .store
            .commit(&next, current.version, &[], Some(&inbound))
            .await
        {
            Ok(record) => {
                return Ok(Stored::Task {
                    record: Box::new(record),
                    message,
                })
            }
            Err(StoreError::Conflict { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// A repeated messageId: answer with what the first copy produced, doing nothing again.
async fn duplicate(
    h: &Harness,
    tenant: &str,
    task_id: &str,
    message: &Message,
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
    Ok(Intake::Duplicate(h.visible_task(tenant, task_id).await?))
}
