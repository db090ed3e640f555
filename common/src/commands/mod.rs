//! Commands (commands extension v1, seed 003): a message whose only part is the text
//! `/<name> <arguments>`, with `<name>` registered, runs on the harness instead of
//! reaching the model.
//!
//! The registry holds each command's [`CommandSpec`] (what the agent card lists, in
//! registration order, under the extension's `params.commands`) and its [`Command`] body.
//! Intake (`ops::send_message`) decides whether a message is a command, after the same
//! identity and membership checks as any message; the reply goes back as the message of
//! a status update in the task's unchanged state, with metadata `{"command": <name>}` and
//! `"task_ref"` when the command created a task. The built-in commands are in `builtin`.

pub mod builtin;

use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;

use crate::a2a::{Message, Part};
use crate::ext::permissions::{Action, Forbidden};
use crate::store::TaskRecord;

/// What clients see of a command on the card (`CommandSpec` of the seed's schema).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandSpec {
    pub name: String,
    pub description: String,
    pub argument_hint: String,
}

impl CommandSpec {
    pub fn new(name: &str, description: &str, argument_hint: &str) -> Self {
        CommandSpec {
            name: name.into(),
            description: description.into(),
            argument_hint: argument_hint.into(),
        }
    }
}

/// What a command may use: the store, the engine (its agent and pushed media), the
/// registry it was found in, the ids no participant may be or look like, how many tasks
/// a sender may assign to others an hour, who sent it, and the task it was sent on (None
/// without a task id). Changes it makes to `task` are committed with its reply, and so is
/// a task it makes on `task` (`creates`): created by that commit, or not at all, so a
/// commit refused (the task changed meanwhile) leaves no task behind.
pub struct Invocation<'a> {
    pub store: &'a dyn crate::store::Store,
    pub engine: &'a crate::engine::Engine,
    pub commands: &'a CommandRegistry,
    pub reserved: &'a crate::ext::participant::Reserved,
    pub tasks_for_others_per_hour: u64,
    pub sender: &'a str,
    pub tenant: &'a str,
    pub context_id: &'a str,
    pub task: Option<&'a mut TaskRecord>,
    /// A task to create with the commit of `task` (as the store's `Along::created`).
    pub creates: Option<TaskRecord>,
}

/// A command's answer: the text of the reply, and the task it created, if any.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reply {
    pub text: String,
    pub task_ref: Option<String>,
}

impl Reply {
    pub fn text(text: impl Into<String>) -> Self {
        Reply {
            text: text.into(),
            task_ref: None,
        }
    }
}

impl Invocation<'_> {
    /// Whether the sender may do `action` on the task the command was sent on (see
    /// `ext::permissions`); without a task there is nothing to refuse.
    pub fn permit(&self, action: Action) -> Result<(), Forbidden> {
        match self.task.as_deref() {
            Some(task) => crate::ext::permissions::require(
                &task.ext().unwrap_or_default(),
                self.sender,
                action,
            ),
            None => Ok(()),
        }
    }
}

/// Why a command did not run: the sender may not do what it does, names an id that
/// cannot stand for a participant, or is past a limit (each answered as invalid params
/// naming the rule, audited, nothing created), or the harness failed (the store). Any
/// other answer the sender should read is a reply.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error(transparent)]
    Forbidden(#[from] Forbidden),
    #[error("{refusal}")]
    BadId {
        id: String,
        refusal: crate::ext::participant::IdRefusal,
    },
    #[error("{0}")]
    Limited(String),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// A command's body.
#[async_trait]
pub trait Command: Send + Sync + 'static {
    async fn run(&self, call: &mut Invocation<'_>, arguments: &str) -> Result<Reply, CommandError>;
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistrationError {
    #[error("command name {0:?} is not valid (expected [a-z][a-z0-9-]*)")]
    InvalidName(String),
    #[error("a command named {0:?} is already registered")]
    DuplicateName(String),
    #[error("command {0:?} has an empty description")]
    EmptyDescription(String),
}

/// The registered commands, in registration order.
#[derive(Clone, Default)]
pub struct CommandRegistry {
    entries: Vec<(CommandSpec, Arc<dyn Command>)>,
}

impl std::fmt::Debug for CommandRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|(s, _)| &s.name))
            .finish()
    }
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

impl CommandRegistry {
    /// No commands at all.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a command; refuses a name that is not `[a-z][a-z0-9-]*` or is taken, and an
    /// empty description.
    pub fn register(
        &mut self,
        spec: CommandSpec,
        command: impl Command,
    ) -> Result<(), RegistrationError> {
        if !valid_name(&spec.name) {
            return Err(RegistrationError::InvalidName(spec.name));
        }
        if self.find(&spec.name).is_some() {
            return Err(RegistrationError::DuplicateName(spec.name));
        }
        if spec.description.trim().is_empty() {
            return Err(RegistrationError::EmptyDescription(spec.name));
        }
        self.entries.push((spec, Arc::new(command)));
        Ok(())
    }

    /// The specs, in registration order.
    pub fn specs(&self) -> Vec<CommandSpec> {
        self.entries.iter().map(|(s, _)| s.clone()).collect()
    }

    pub fn find(&self, name: &str) -> Option<Arc<dyn Command>> {
        self.entries
            .iter()
            .find(|(s, _)| s.name == name)
            .map(|(_, c)| c.clone())
    }

    /// The registered command a message invokes, with its arguments: its only part is
    /// text `/<name>` or `/<name> <arguments>`. Anything else is an ordinary message.
    pub fn invoked(&self, message: &Message) -> Option<(String, Arc<dyn Command>, String)> {
        let [Part {
            text: Some(text), ..
        }] = message.parts.as_slice()
        else {
            return None;
        };
        let rest = text.trim_start().strip_prefix('/')?;
        let (name, arguments) = match rest.split_once(char::is_whitespace) {
            Some((name, args)) => (name, args.trim()),
            None => (rest.trim_end(), ""),
        };
        let command = self.find(name)?;
        Some((name.to_owned(), command, arguments.to_owned()))
    }
}

/// The metadata of a command's reply: `{"command": <name>}`, plus `"task_ref"`.
pub fn reply_metadata(name: &str, reply: &Reply) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("command".into(), name.into());
    if let Some(task) = &reply.task_ref {
        m.insert("task_ref".into(), task.clone().into());
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Ping;

    #[async_trait]
    impl Command for Ping {
        async fn run(
            &self,
            _call: &mut Invocation<'_>,
            arguments: &str,
        ) -> Result<Reply, CommandError> {
            Ok(Reply::text(format!("pong {arguments}")))
        }
    }

    fn text(t: &str) -> Message {
        Message {
            parts: vec![Part::text(t)],
            ..Default::default()
        }
    }

    #[test]
    fn registration_enforces_the_name_pattern_and_keeps_the_order() {
        let mut r = CommandRegistry::builtin();
        for bad in ["", "Ping", "1ping", "pi_ng", "ping!", "-ping"] {
            assert_eq!(
                r.register(CommandSpec::new(bad, "x", ""), Ping),
                Err(RegistrationError::InvalidName(bad.into()))
            );
        }
        assert_eq!(
            r.register(CommandSpec::new("help", "again", ""), Ping),
            Err(RegistrationError::DuplicateName("help".into()))
        );
        assert_eq!(
            r.register(CommandSpec::new("ping", " ", ""), Ping),
            Err(RegistrationError::EmptyDescription("ping".into()))
        );
        r.register(CommandSpec::new("ping-2", "Answer pong", "[<text>]"), Ping)
            .expect("valid");
        let names: Vec<String> = r.specs().into_iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            ["model", "help", "participants", "role", "task", "ping-2"]
        );
    }

    #[test]
    fn only_a_single_text_part_naming_a_registered_command_invokes_it() {
        let r = CommandRegistry::builtin();
        let (name, _, args) = r.invoked(&text("/model  gpt-4o ")).expect("a command");
        assert_eq!((name.as_str(), args.as_str()), ("model", "gpt-4o"));
        let (name, _, args) = r.invoked(&text("/help")).expect("a command");
        assert_eq!((name.as_str(), args.as_str()), ("help", ""));
        assert!(r.invoked(&text("/foo bar")).is_none(), "unregistered");
        assert!(r.invoked(&text("please /help")).is_none());
        assert!(r.invoked(&text("/")).is_none());
        let two_parts = Message {
            parts: vec![Part::text("/help"), Part::text("more")],
            ..Default::default()
        };
        assert!(r.invoked(&two_parts).is_none(), "not the only part");
    }
}
