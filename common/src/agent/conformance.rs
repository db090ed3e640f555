//! The conformance agent: behaviour chosen by the messageId prefix, as the A2A TCK's
//! server-under-test contract expects (spec §7.1). Deterministic, no model.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;

use crate::a2a::{Artifact, Message, Part, Role, TaskState};
use crate::engine::transition::new_id;
use crate::engine::Agent;
use crate::engine::{RunError, TaskRun};

/// How long `test-resubscribe-message-id` stays WORKING (two TCK streaming timeouts).
const SLOW_TASK: Duration = Duration::from_secs(4);

#[derive(Debug, Default)]
pub struct ConformanceAgent;

/// What a message's id asks for; the order matters where prefixes overlap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Behaviour {
    MessageResponse,
    InputRequired,
    Reject,
    StreamChunked,
    StreamFile,
    StreamText,
    StreamComplete,
    ArtifactFileUrl,
    ArtifactFile,
    ArtifactText,
    ArtifactData,
    Slow,
    Complete,
}

const PREFIXES: &[(&str, Behaviour)] = &[
    ("tck-message-response", Behaviour::MessageResponse),
    ("tck-input-required", Behaviour::InputRequired),
    ("tck-reject-task", Behaviour::Reject),
    ("tck-stream-artifact-chunked", Behaviour::StreamChunked),
    ("tck-stream-artifact-file", Behaviour::StreamFile),
    ("tck-stream-artifact-text", Behaviour::StreamText),
    ("tck-stream-ordering-001", Behaviour::StreamText),
    ("tck-stream-001", Behaviour::StreamText),
    ("tck-stream-003", Behaviour::StreamText),
    ("tck-stream-002", Behaviour::StreamComplete),
    ("tck-artifact-file-url", Behaviour::ArtifactFileUrl),
    ("tck-artifact-file", Behaviour::ArtifactFile),
    ("tck-artifact-text", Behaviour::ArtifactText),
    ("tck-artifact-data", Behaviour::ArtifactData),
    ("test-resubscribe-message-id", Behaviour::Slow),
    ("tck-complete-task", Behaviour::Complete),
];

fn behaviour(message_id: &str) -> Behaviour {
    PREFIXES
        .iter()
        .find(|(prefix, _)| message_id.starts_with(prefix))
        .map(|(_, b)| *b)
        .unwrap_or(Behaviour::Complete)
}

fn artifact(name: &str, part: Part) -> Artifact {
    Artifact {
        artifact_id: new_id(),
        name: name.into(),
        parts: vec![part],
        ..Default::default()
    }
}

fn text_artifact() -> Artifact {
    artifact("text-artifact", Part::text("Generated text content"))
}

fn file_part(url: bool) -> Part {
    Part {
        raw: (!url).then(|| "dGNr".to_owned()),
        url: url.then(|| "https://example.com/output.txt".to_owned()),
        filename: "output.txt".into(),
        media_type: "text/plain".into(),
        ..Default::default()
    }
}

impl ConformanceAgent {
    async fn complete(run: &mut TaskRun, text: &str) -> Result<(), RunError> {
        let msg = run.agent_message(text);
        run.set_status(TaskState::Completed, Some(msg)).await
    }

    async fn complete_with(run: &mut TaskRun, artifact: Artifact) -> Result<(), RunError> {
        run.add_artifact(artifact, false, false).await?;
        Self::complete(run, "Hello from TCK").await
    }
}

#[async_trait]
impl Agent for ConformanceAgent {
    /// Its slowest drive takes 4 s (the resubscribe behaviour).
    fn drives_quickly(&self) -> bool {
        true
    }

    fn direct_reply(&self, message: &Message) -> Option<Message> {
        (behaviour(&message.message_id) == Behaviour::MessageResponse).then(|| Message {
            message_id: new_id(),
            context_id: message.context_id.clone(),
            role: Role::Agent,
            parts: vec![Part::text("Direct message response")],
            ..Default::default()
        })
    }

    async fn run(&self, run: &mut TaskRun, input: &Message) -> Result<(), RunError> {
        match behaviour(&input.message_id) {
            // Inside a task there is nothing to answer directly: complete it.
            Behaviour::MessageResponse | Behaviour::Complete => {
                Self::complete(run, "Hello from TCK").await
            }
            Behaviour::InputRequired => {
                let msg = run.agent_message("Please provide more input to continue.");
                run.set_status(TaskState::InputRequired, Some(msg)).await
            }
            Behaviour::Reject => {
                let msg = run.agent_message("Task rejected by the conformance agent.");
                run.set_status(TaskState::Rejected, Some(msg)).await
            }
            Behaviour::StreamComplete => Self::complete(run, "Hello from TCK").await,
            Behaviour::StreamText => {
                run.set_status(TaskState::Working, None).await?;
                Self::complete_with(run, text_artifact()).await
            }
            Behaviour::StreamFile => {
                run.set_status(TaskState::Working, None).await?;
                Self::complete_with(run, artifact("file-artifact", file_part(false))).await
            }
            Behaviour::StreamChunked => {
                run.set_status(TaskState::Working, None).await?;
                let first = artifact("chunked-artifact", Part::text("chunk-1 "));
                let second = Artifact {
                    parts: vec![Part::text("chunk-2")],
                    ..first.clone()
                };
                run.add_artifact(first, false, false).await?;
                run.add_artifact(second, true, true).await?;
                Self::complete(run, "Hello from TCK").await
            }
            Behaviour::ArtifactText => Self::complete_with(run, text_artifact()).await,
            Behaviour::ArtifactFile => {
                Self::complete_with(run, artifact("file-artifact", file_part(false))).await
            }
            Behaviour::ArtifactFileUrl => {
                Self::complete_with(run, artifact("file-artifact", file_part(true))).await
            }
            Behaviour::ArtifactData => {
                let part = Part::data(json!({"key": "value", "count": 42}));
                Self::complete_with(run, artifact("data-artifact", part)).await
            }
            Behaviour::Slow => {
                run.set_status(TaskState::Working, None).await?;
                // Stored (a write held back is made first) and leased while it waits.
                run.keeping_lease(tokio::time::sleep(SLOW_TASK)).await?;
                Self::complete(run, "Hello from TCK").await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_prefixes_pick_the_longer_behaviour() {
        assert_eq!(
            behaviour("tck-artifact-file-url-1234"),
            Behaviour::ArtifactFileUrl
        );
        assert_eq!(behaviour("tck-artifact-file-1234"), Behaviour::ArtifactFile);
        assert_eq!(
            behaviour("tck-stream-artifact-text-1"),
            Behaviour::StreamText
        );
        assert_eq!(behaviour("anything-else"), Behaviour::Complete);
    }
}
