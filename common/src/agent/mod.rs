//! Agents: what runs a task. An agent either answers a message directly (no task) or
//! works on a task through its [`TaskRun`], ending terminal or waiting for input.

pub mod conformance;
pub mod context;
pub mod tools;

use async_trait::async_trait;

use crate::a2a::Message;
use crate::engine::{RunError, TaskRun};

#[async_trait]
pub trait Agent: Send + Sync + 'static {
    /// A direct reply to a message that names no task, instead of starting one.
    fn direct_reply(&self, _message: &Message) -> Option<Message> {
        None
    }

    /// Works on the task with the message that (re)started it. Returns when the task is
    /// terminal or waits for input.
    async fn run(&self, run: &mut TaskRun, input: &Message) -> Result<(), RunError>;
}

/// The agents a server can be started with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentKind {
    Conformance,
}

impl std::str::FromStr for AgentKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "conformance" => Ok(AgentKind::Conformance),
            other => Err(format!("unknown agent {other:?} (known: conformance)")),
        }
    }
}

pub fn build(kind: AgentKind) -> std::sync::Arc<dyn Agent> {
    match kind {
        AgentKind::Conformance => std::sync::Arc::new(conformance::ConformanceAgent),
    }
}
