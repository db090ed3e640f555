//! A message that starts a task: the task it creates (its extension, who is on it), stored
//! with the message, and whether the agent runs it.

use super::*;

pub(super) async fn start_task(
    h: &Harness,
    tenant: &str,
    mut message: Message,
    new: NewTask<'_>,
) -> Result<Stored, IntakeError> {
    if message.context_id.is_empty() {
        message.context_id = new_id();
    }
    if let Some(reply) = h.engine.agent().direct_reply(&message) {
        h.store
            .put_message(&InboundMessage {
                tenant: tenant.into(),
                sender: new.sender.into(),
                message,
            })
            .await?;
        return Ok(Stored::Direct(Box::new(reply)));
    }
    let ext = task_extension(h, new.ext, &message, new.sender);
    if new.push {
        // An envelope may have made the sender something other than the reporter.
        permissions::require(&ext, new.sender, Action::ManageWebhooks).map_err(A2aError::from)?;
    }
    let mut record = new_task(tenant, &mut message, &ext);
    let runs = h.engine.runs(&record);
    if !runs {
        await_assignee(&mut record, &ext.goal);
    } else if new.inline {
        record.lease = Some(h.engine.new_lease());
    } else {
        record.wake = true;
    }
    record.push = new.push;
    let inbound = InboundMessage {
        tenant: tenant.into(),
        sender: new.sender.into(),
        message,
    };
    if runs && new.inline && new.stage {
        let staged = Staged {
            base: None,
            events: vec![created(&record)],
            message: inbound,
        };
        return Ok(Stored::Staged {
            record: Box::new(record),
            staged: Box::new(staged),
            replay_from: 0,
        });
    }
    let record = h
        .store
        .create_task(&record, &[created(&record)], Some(&inbound))
        .await?;
    Ok(Stored::Task {
        runnable: runs && new.inline,
        record: Box::new(record),
        replay_from: 0,
        settled: false,
    })
}

/// A new task's extension: the envelope's, or one named after the message's text; the
/// sender is a participant (the reporter, unless the envelope gave them a role), and the
/// harness's agent the assignee unless the envelope named one.
fn task_extension(
    h: &Harness,
    envelope: Option<TaskExtension>,
    message: &Message,
    sender: &str,
) -> TaskExtension {
    let mut ext = envelope
        .unwrap_or_else(|| TaskExtension::from_text(&crate::ext::channel::message_text(message)));
    if ext.participant(sender).is_none() {
        let reporter = Participant::new(sender, ParticipantKind::Human, Role::Reporter);
        ext.participants.insert(0, reporter);
    }
    if ext.assignee().is_none() {
        ext.add(Participant::new(
            &h.config.agent_id,
            ParticipantKind::Agent,
            Role::Assignee,
        ));
    }
    ext
}
