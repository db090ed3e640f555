//! The task as an answer shows it to a member: the engine's view of its record (the last
//! messages, the artifacts if asked for), with the task's usage in its metadata under
//! [`USAGE_METADATA_KEY`]. Every answer that holds a task (SendMessage, a stream's first
//! Task, GetTask, ListTasks, CancelTask) is made here, after the caller was found to be a
//! member; a push delivers no Task.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::a2a::Task;
use crate::engine::transition::view;
use crate::ext::USAGE_METADATA_KEY;
use crate::store::conversation::{AgentState, ModelUsage};

/// What `Task.metadata[USAGE_METADATA_KEY]` holds.
#[derive(Serialize)]
struct Shown<'a> {
    /// Every model call committed on the task.
    calls: u64,
    input_tokens: u64,
    output_tokens: u64,
    /// By the model id each call's request carried (a task from before builds that kept
    /// them counts its earlier calls in the totals only).
    models: &'a BTreeMap<String, ModelUsage>,
}

/// A task as a member is shown it: [`view`] of `task`, and the usage its `agent` state
/// counted once it has made a model call. It takes the task, as [`view`] does; a caller
/// that keeps its record clones the task alone, not the conversation.
pub fn shown(
    task: Task,
    agent: &AgentState,
    history_length: usize,
    include_artifacts: bool,
) -> Task {
    let usage = usage(agent);
    let mut task = view(task, history_length, include_artifacts);
    if let Some(usage) = usage {
        (task.metadata.get_or_insert_with(Default::default))
            .insert(USAGE_METADATA_KEY.to_owned(), usage);
    }
    task
}

/// The usage a task shows; None before its first model call (an agent that calls no
/// model shows none).
fn usage(agent: &AgentState) -> Option<serde_json::Value> {
    let calls = agent.calls();
    if calls == 0 && agent.usage == Default::default() {
        return None;
    }
    let shown = Shown {
        calls,
        input_tokens: agent.usage.input_tokens,
        output_tokens: agent.usage.output_tokens,
        models: &agent.by_model,
    };
    // Numbers and a map with string keys always serialize.
    serde_json::to_value(shown).ok()
}
