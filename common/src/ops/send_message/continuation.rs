//! A message on an existing task: who may speak on it, what the message does there (a
//! reply that resumes it, a participant's outcome, a remark, a command), committed with
//! the message, tried again on fresh state when another write got there first.

use super::*;

pub(super) async fn continue_task(
    h: &Harness,
    tenant: &str,
    mut message: Message,
    from: Sender<'_>,
) -> Result<Stored, IntakeError> {
    let mut attempt = 0;
    loop {
        let (current, ext) = admitted(h, tenant, &message, &from).await?;
        let stored = match from.command {
            Some(invoked) => command_on(h, tenant, &mut message, &from, &current, invoked).await?,
            None => message_on(h, tenant, &mut message, &from, &current, &ext).await?,
        };
        match stored {
            Some(stored) => return Ok(stored),
            // Another write got to the task first: read it again and decide again.
            None => {
                attempt += 1;
                crate::engine::backoff(attempt).await;
            }
        }
    }
}

/// The task `message` is on, and its extension, if `from` may speak on it and the message
/// fits it (its context, an id of its own there, a task not yet ended, a webhook it may
/// attach). Anyone else is refused exactly as for a task that does not exist, and audited.
async fn admitted(
    h: &Harness,
    tenant: &str,
    message: &Message,
    from: &Sender<'_>,
) -> Result<(TaskRecord, TaskExtension), IntakeError> {
    // Nothing past the head of a task the caller is not on: its size and what it
    // holds cost a stranger's message nothing, so they cannot be timed.
    let in_tenant = std::sync::atomic::AtomicBool::new(false);
    let admit = |rec: &TaskRecord| {
        let here = rec.tenant == tenant;
        in_tenant.store(here, std::sync::atomic::Ordering::Relaxed);
        here && from.caller.may_see(rec)
    };
    let found = h.store.load_task_for(&message.task_id, &admit).await?;
    let ext = found.as_ref().and_then(TaskRecord::ext);
    let refusal = match &found {
        None if in_tenant.into_inner() => Some(NOT_A_PARTICIPANT),
        None => Some("no such task"),
        Some(_) => channels::admits(ext.as_ref(), Some(from.id)).err(),
    };
    let (Some(current), Some(ext), None) = (found.clone(), ext, refusal) else {
        let reason = refusal.unwrap_or(NOT_A_PARTICIPANT);
        refuse(h, tenant, message, from.id, reason).await;
        return Err(A2aError::task_not_found(&message.task_id).into());
    };
    // Where identity is self-asserted, an agent on the task that names a person in the
    // message would have its words read as theirs, not framed as an agent's.
    let caller = from.caller.participant.as_deref();
    if let Some(agent) = caller.filter(|c| *c != from.id && ext.is_agent(c)) {
        return Err(A2aError::invalid_field(
            "message.metadata.participant_id",
            format!("{agent} is an agent participant of this task and speaks only as itself"),
        )
        .into());
    }
    own_voice(h, tenant, message, from.id, from.caller, || {
        ext.is_agent(from.id)
    })
    .await?;
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
    // The agent knows a task's messages by id: someone else's message under an id the
    // task holds could pass for it (a reply, or hide it from the model). The sender's
    // own, stored by a copy that raced this one past the dedupe check, is a resend.
    if (current.task.history.iter()).any(|m| m.message_id == message.message_id) {
        if let Some(task_id) = (h.store)
            .message_task(tenant, from.id, &message.message_id)
            .await?
        {
            return Err(StoreError::DuplicateMessage {
                message_id: message.message_id.clone(),
                task_id,
            }
            .into());
        }
        return Err(A2aError::invalid_field(
            "message.messageId",
            format!(
                "messageId {} is already used on this task: send the message under an id of its own",
                message.message_id
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
    // An answer link answers its request only while the task waits on it, judged on the
    // record this message's write is conditional on: an answer committed since the link
    // was checked (or a task moved on) refuses it, never takes it in as a second answer.
    if let Some(request) = &from.caller.answer_link {
        let open = crate::engine::medium::Addressed::of(&current)
            .is_some_and(|r| r.request_id == *request && r.to == from.id);
        if !open {
            return Err(A2aError::UnsupportedOperation(NO_LONGER_OPEN.into()).into());
        }
    }
    if let Some(push) = from.push {
        permissions::require(&ext, from.id, Action::ManageWebhooks).map_err(A2aError::from)?;
        // Checked before the message is stored, so a webhook that cannot be attached
        // leaves the task as it was.
        push_config::may_attach(h, current.id(), push, from.id).await?;
    }
    if let Some(place) = from.place {
        place.take(h, current.id(), from.id)?;
    }
    Ok((current, ext))
}

/// Runs the command `invoked` on the task and commits its answer with the message. None:
/// the task changed under it.
async fn command_on(
    h: &Harness,
    tenant: &str,
    message: &mut Message,
    from: &Sender<'_>,
    current: &TaskRecord,
    invoked: &Invoked,
) -> Result<Option<Stored>, IntakeError> {
    let mut next = current.clone();
    message.task_id = current.task.id.clone();
    message.context_id = current.task.context_id.clone();
    let reply = run_command(h, tenant, from.id, Some(&mut next), message, invoked).await?;
    let mut said = reply.message;
    // In place of the question as the status message, it still shows when the answer the
    // task waits on is due.
    if let Some(due) = next.wait_deadline() {
        (said.metadata.get_or_insert_with(Default::default)).insert(
            crate::ext::REPLY_BY_METADATA_KEY.into(),
            due.due_text().into(),
        );
    }
    let event = set_status(&mut next, current.state(), Some(said), Some(reply.metadata));
    let inbound = InboundMessage {
        tenant: tenant.into(),
        sender: from.id.into(),
        message: message.clone(),
    };
    let events = [event];
    let webhook = webhook(h, &mut next, current, from)?;
    // A task the command makes (`/task`'s sub-task) is created by this commit or not at
    // all, and announced once it is.
    let first = reply.creates.as_ref().map(created);
    let along = Along {
        created: (reply.creates.as_ref()).zip(first.as_ref().map(std::slice::from_ref)),
        push: webhook.as_ref(),
    };
    match h
        .store
        .commit_along(&next, current.version, &events, Some(&inbound), along)
        .await
    {
        Ok(record) => {
            if let Some(child) = &reply.creates {
                (h.engine.media()).announce_from(child, Some(from.id)).await;
            }
            attached(h, &record, webhook.as_ref());
            audit_command(h, tenant, message, from.id, &invoked.0).await;
            Ok(Some(Stored::Task {
                record: Box::new(record),
                runnable: false,
                replay_from: current.last_seq,
                settled: true,
            }))
        }
        Err(StoreError::Conflict { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// What the message does on the task (a reply that resumes it, an assignee's outcome that
/// completes it, a remark), committed with it, or held back for the run it starts here.
/// None: the task changed under it.
async fn message_on(
    h: &Harness,
    tenant: &str,
    message: &mut Message,
    from: &Sender<'_>,
    current: &TaskRecord,
    ext: &TaskExtension,
) -> Result<Option<Stored>, IntakeError> {
    let mut next = current.clone();
    if let Some(envelope) = from.envelope {
        let changed = match envelope.applied_to(ext, from.id, &h.config.agent_id) {
            Ok(changed) => changed,
            Err(e) => {
                refuse(h, tenant, message, from.id, &e.to_string()).await;
                return Err(e.into());
            }
        };
        let entry = IdEntry {
            task_id: &current.task.id,
            message_id: &message.message_id,
            ..IdEntry::new(tenant, from.id)
        };
        let op = crate::a2a::Operation::SendMessage;
        (h.check_roster(op, entry, &envelope.field, &ext.participants, &changed)).await?;
        let counted = || {
            from.counted
                .swap(true, std::sync::atomic::Ordering::Relaxed)
        };
        if adds_others(h, from.id, &ext.participants, &changed) && !counted() {
            take_for_others(h, tenant, message, from.id).await?;
        }
        changed.store(&mut next.task);
    }
    let runs = h.engine.runs(current);
    let pending = next.agent.pending_help.clone();
    let mut continues = if !runs {
        // A participant's task: their message is its outcome; others' are remarks.
        ext.assignee().is_some_and(|a| a.id == from.id)
    } else if let Some(pending) = &pending {
        // A task waiting on a question resumes only for its reply.
        pending
            .answered_by(ext, from.id, from.channel)
            .map_err(|rule| A2aError::invalid_field("message.parts", rule))?
    } else {
        true
    };
    // A reply to a question that expired (or is past its due time, its timer not yet
    // fired) is kept as a late remark and resumes nothing.
    let answers = continues && pending.is_some();
    let late = runs
        .then(|| late_reply(&mut next, message, from, answers))
        .flatten();
    if late.is_some() {
        continues = false;
    }
    // Before the status changes, so the question it answers precedes it in history.
    accept_message(&mut next, message, continues);
    let mut events = Vec::new();
    if continues && !runs {
        let outcome = agent_message(
            &next.task,
            vec![Part::text(crate::ext::channel::message_text(message))],
        );
        events.push(set_status(
            &mut next,
            TaskState::Completed,
            Some(outcome),
            None,
        ));
    } else if let Some(pending) = pending.as_ref().filter(|_| continues) {
        next.agent.pending_help = None;
        next.agent.replies.push(Reply {
            message_id: message.message_id.clone(),
            participant_id: from.id.to_owned(),
            question: pending.question.clone(),
        });
        events.push(set_status(&mut next, TaskState::Working, None, None));
    }
    if events.is_empty() && (!continues || !current.state().is_interrupted()) {
        // A message that changes no state (a remark, or a word to a task already
        // working): its own event is how the other members' streams and webhooks see
        // it. One that resumes a waiting task shows as the status update it causes.
        events.push(StreamResponse::message(message.clone()));
    }
    let mut runnable = continues;
    let completed_for_parent = runnable && !runs;
    if completed_for_parent {
        runnable = false;
    } else if runnable {
        runnable = schedule(h, &mut next, from.inline);
    }
    let inbound = InboundMessage {
        tenant: tenant.into(),
        sender: from.id.into(),
        message: message.clone(),
    };
    if runnable && from.stage {
        if pending.is_some() {
            crate::metrics::record(crate::metrics::Event::HelpAnswered);
        }
        let staged = Staged {
            base: Some(current.version),
            events,
            message: inbound,
        };
        return Ok(Some(Stored::Staged {
            record: Box::new(next),
            staged: Box::new(staged),
            replay_from: current.last_seq,
        }));
    }
    let webhook = webhook(h, &mut next, current, from)?;
    let along = Along {
        push: webhook.as_ref(),
        ..Along::default()
    };
    match h
        .store
        .commit_along(&next, current.version, &events, Some(&inbound), along)
        .await
    {
        Ok(record) => {
            attached(h, &record, webhook.as_ref());
            if let Some(question) = late {
                return Ok(Some(Stored::Direct(Box::new(expired_answer(
                    &record, &question,
                )))));
            }
            if continues && runs && pending.is_some() {
                crate::metrics::record(crate::metrics::Event::HelpAnswered);
            }
            if completed_for_parent {
                // Boxed: its 7 KB would otherwise be in every send's future.
                Box::pin(h.engine.wake_parents_logged(&record)).await;
            }
            Ok(Some(Stored::Task {
                record: Box::new(record),
                runnable,
                replay_from: current.last_seq,
                settled: false,
            }))
        }
        Err(StoreError::Conflict { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Whether `message` is a late reply: an answer to the pending question past its due time
/// (its timer not yet fired), or (`agent::waits::late_for`) a message for a question that
/// expired which answers nothing pending. If so the question it came too late for is
/// returned, and the first such reply to it is noted on `next`, to be framed as late for
/// the model (at most [`MAX_EXPIRED`](crate::store::conversation::MAX_EXPIRED) are kept: the head stays bounded).
fn late_reply(
    next: &mut TaskRecord,
    message: &Message,
    from: &Sender<'_>,
    answers: bool,
) -> Option<Reply> {
    let now = crate::task::lease::now_ms();
    let overdue = (next.agent.pending_help.as_ref())
        .filter(|p| answers && p.deadline.is_some_and(|d| now >= d.due_ms));
    let question = match overdue {
        Some(p) => Reply {
            message_id: p.message_id.clone(),
            participant_id: p.participant_id.clone(),
            question: p.question.clone(),
        },
        None if answers => return None,
        None => {
            let in_reply_to = from.channel.and_then(|c| c.in_reply_to.as_deref());
            let i = crate::agent::waits::late_for(next, from.id, in_reply_to)?;
            next.agent.expired.remove(i)
        }
    };
    let late = &mut next.agent.late;
    let noted =
        (late.iter()).any(|l| l.participant_id == from.id && l.question == question.question);
    if !noted {
        late.push(Reply {
            message_id: message.message_id.clone(),
            participant_id: from.id.to_owned(),
            question: question.question.clone(),
        });
        let over = late
            .len()
            .saturating_sub(crate::store::conversation::MAX_EXPIRED);
        late.drain(..over);
    }
    Some(question)
}

/// What the sender of a late reply is answered: the question had expired, and their
/// message is kept.
fn expired_answer(record: &TaskRecord, question: &Reply) -> Message {
    let text = format!(
        "The question \"{}\" had expired before this reply came: it is kept in the task's history and resumes nothing.",
        question.question
    );
    agent_message(&record.task, vec![Part::text(text)])
}

/// The webhook the message attaches, as its commit stores it (with the task marked, so
/// every event from this commit on is marked for the notifier): in the same transaction,
/// so one past the task's limit, or under someone else's id, refuses the message too.
fn webhook(
    h: &Harness,
    next: &mut TaskRecord,
    current: &TaskRecord,
    from: &Sender<'_>,
) -> Result<Option<PushConfigRecord>, IntakeError> {
    let Some(config) = from.push else {
        return Ok(None);
    };
    next.push = true;
    // Handed what comes after the task as the message found it.
    let record =
        push_config::sealed_for(h, current.id(), config.clone(), from.id, current.last_seq)?;
    Ok(Some(record))
}

/// Once the message's commit stored its webhook: delivered from now on.
fn attached(h: &Harness, record: &TaskRecord, webhook: Option<&PushConfigRecord>) {
    if webhook.is_some() {
        push_config::delivered_soon(h, record.id());
    }
}
