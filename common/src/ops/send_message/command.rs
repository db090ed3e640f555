//! A `/name args` message: the command runs on the harness, its reply is the answer, and
//! the run is audited.

use super::*;

/// A command's answer, as the message (and status update metadata) it goes back in, and
/// the task it creates with that answer's commit.
pub(super) struct CommandAnswer {
    pub(super) message: Message,
    pub(super) metadata: serde_json::Map<String, serde_json::Value>,
    pub(super) creates: Option<TaskRecord>,
}

/// Runs a command for `sender`, on `task` when it was sent on one (its changes to the
/// task are committed with the answer by the caller).
pub(super) async fn run_command(
    h: &Harness,
    tenant: &str,
    sender: &str,
    task: Option<&mut TaskRecord>,
    message: &Message,
    (name, command, arguments): &Invoked,
) -> Result<CommandAnswer, IntakeError> {
    let mut call = Invocation {
        store: h.store.as_ref(),
        engine: &h.engine,
        commands: &h.commands,
        reserved: h.reserved().await?,
        tasks_for_others_per_hour: h.config.tasks_for_others_per_hour,
        sender,
        tenant,
        context_id: &message.context_id,
        task,
        creates: None,
    };
    let reply = match command.run(&mut call, arguments).await {
        Ok(reply) => reply,
        Err(e) => {
            audit_refused(h, tenant, message, sender, &e).await;
            return Err(e.into());
        }
    };
    let creates = call.creates.take();
    let metadata = commands::reply_metadata(name, &reply);
    let answer = Message {
        message_id: new_id(),
        context_id: message.context_id.clone(),
        task_id: message.task_id.clone(),
        role: crate::a2a::Role::Agent,
        parts: vec![Part::text(reply.text)],
        metadata: Some(metadata.clone()),
        ..Default::default()
    };
    Ok(CommandAnswer {
        message: answer,
        metadata,
        creates,
    })
}

/// A command sent without a task: answered with a direct message, no task created.
pub(super) async fn command_without_task(
    h: &Harness,
    tenant: &str,
    mut message: Message,
    sender: &str,
    invoked: &Invoked,
) -> Result<Stored, IntakeError> {
    if message.context_id.is_empty() {
        message.context_id = new_id();
    }
    // Stored first, so a repeated messageId is answered as a duplicate and never runs twice.
    h.store
        .put_message(&InboundMessage {
            tenant: tenant.into(),
            sender: sender.into(),
            message: message.clone(),
        })
        .await?;
    let answer = run_command(h, tenant, sender, None, &message, invoked).await?;
    audit_command(h, tenant, &message, sender, &invoked.0).await;
    Ok(Stored::Direct(Box::new(answer.message)))
}

/// A command refused for an id it names or past a limit is audited.
async fn audit_refused(
    h: &Harness,
    tenant: &str,
    message: &Message,
    sender: &str,
    e: &commands::CommandError,
) {
    let entry = IdEntry {
        task_id: &message.task_id,
        message_id: &message.message_id,
        ..IdEntry::new(tenant, "")
    };
    match e {
        commands::CommandError::BadId { id, refusal } => {
            h.refuse_id("command", IdEntry { id, ..entry }, refusal)
                .await;
        }
        commands::CommandError::Limited(rule) => {
            let record =
                AuditRecord::of_message(tenant, "command", message, sender, false, rule.clone());
            h.audit(&record).await;
        }
        _ => {}
    }
}

/// Every command is audited: who ran which, on what.
pub(super) async fn audit_command(
    h: &Harness,
    tenant: &str,
    message: &Message,
    sender: &str,
    name: &str,
) {
    let record =
        AuditRecord::of_message(tenant, "command", message, sender, true, format!("/{name}"));
    h.audit(&record).await;
}
