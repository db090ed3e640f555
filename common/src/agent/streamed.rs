//! A turn's model call, its text shown as the model writes it (`engine::answer` commits
//! it in batches) with the task's nonce masked as it streams: the same text, masked the
//! same way, as the whole answer the turn then commits.

use std::sync::Mutex;

use tokio::sync::mpsc;

use super::context::without_nonce;
use crate::engine::answer::Written;
use crate::engine::{RunError, TaskRun};
use crate::models::{ChatRequest, ChatResponse, Delta, Model, ModelError};

/// Makes the call, showing its text as it comes; the answer comes back masked.
pub(super) async fn call(
    run: &mut TaskRun,
    model: &dyn Model,
    request: &ChatRequest,
    nonce: &str,
) -> Result<Result<ChatResponse, ModelError>, RunError> {
    let (tx, rx) = mpsc::unbounded_channel();
    let mask = Mutex::new(Mask::new(nonce));
    let on_delta = move |delta: Delta| {
        let mut mask = mask.lock().unwrap_or_else(|e| e.into_inner());
        let written = match delta {
            Delta::Text(text) => mask.push(&text).map(Written::Text),
            Delta::Restart => {
                *mask = Mask::new(nonce);
                Some(Written::Restart)
            }
            _ => None,
        };
        if let Some(w) = written {
            // The run stopped listening only when the call is being dropped.
            let _ = tx.send(w);
        }
    };
    let answer = run
        .keeping_lease_writing(model.chat_stream(request, &on_delta), rx)
        .await;
    Ok(counted(answer)?.map(|a| masked(nonce, a)))
}

/// Counts a model call that a cancel of its task cut short.
pub(super) fn counted<T>(call: Result<T, RunError>) -> Result<T, RunError> {
    if let Err(RunError::Ended(crate::a2a::TaskState::Canceled)) = &call {
        crate::metrics::record(crate::metrics::Event::ModelCallCancelled);
    }
    call
}

/// The model's answer with the task's nonce masked wherever it could reach participants
/// (its text, and tool arguments such as a question or a sub-task's goal): a member who
/// talked the model into repeating it would learn how to close its blocks.
pub(super) fn masked(nonce: &str, mut answer: ChatResponse) -> ChatResponse {
    if nonce.is_empty() {
        return answer;
    }
    answer.text = answer.text.map(|t| without_nonce(nonce, &t));
    for call in &mut answer.tool_calls {
        let json = call.arguments.to_string();
        if json.contains(nonce) {
            if let Ok(v) = serde_json::from_str(&without_nonce(nonce, &json)) {
                call.arguments = v;
            }
        }
    }
    answer
}

/// Masks the nonce in text that comes in pieces: an end that is the start of the nonce is
/// held back until the next piece shows whether the nonce goes on. Only that end is kept,
/// so each piece costs its own length, however long the answer grows.
struct Mask<'a> {
    nonce: &'a str,
    /// The text not let through yet: at most the nonce's length less one, between pieces.
    held: String,
}

impl<'a> Mask<'a> {
    fn new(nonce: &'a str) -> Self {
        Mask {
            nonce,
            held: String::new(),
        }
    }

    /// What of the text can be shown now that `piece` has come.
    fn push(&mut self, piece: &str) -> Option<String> {
        self.held.push_str(piece);
        let mut masked = without_nonce(self.nonce, &self.held);
        // Only an end that is the start of a nonce may be one yet; a whole one is masked.
        // The longest such end is held, so any nonce that begins before it is whole in the
        // text and masked, and none can begin in what was let through.
        let partial = (1..self.nonce.len())
            .rev()
            .find(|k| self.nonce.is_char_boundary(*k) && masked.ends_with(&self.nonce[..*k]))
            .unwrap_or(0);
        self.held = masked.split_off(masked.len() - partial);
        (!masked.is_empty()).then_some(masked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(nonce: &str, pieces: &[&str]) -> String {
        let mut mask = Mask::new(nonce);
        pieces.iter().filter_map(|p| mask.push(p)).collect()
    }

    #[test]
    fn a_nonce_split_across_pieces_is_never_let_through() {
        let nonce = "n0nce42";
        let text = format!("before {nonce} after é {nonce}");
        for cut in 1..text.len() {
            let (Some(a), Some(b)) = (text.get(..cut), text.get(cut..)) else {
                continue;
            };
            let out = shown(nonce, &[a, b]);
            assert!(!out.contains(nonce), "{out}");
            assert!(
                without_nonce(nonce, &text).starts_with(&out),
                "{out} is a prefix of the masked whole"
            );
        }
        // Byte by byte, too.
        let bytes: Vec<String> = text.chars().map(String::from).collect();
        let pieces: Vec<&str> = bytes.iter().map(String::as_str).collect();
        assert_eq!(shown(nonce, &pieces), without_nonce(nonce, &text));
    }

    #[test]
    fn what_is_held_back_stays_shorter_than_the_nonce() {
        let nonce = "n0nce42";
        let mut mask = Mask::new(nonce);
        let mut out = String::new();
        for _ in 0..10_000 {
            out.extend(mask.push("n0n"));
            assert!(mask.held.len() < nonce.len(), "{}", mask.held.len());
        }
        assert_eq!(out.len() + mask.held.len(), 30_000);
    }

    #[test]
    fn text_that_cannot_start_a_nonce_is_shown_at_once() {
        assert_eq!(shown("", &["a", "b"]), "ab");
        assert_eq!(shown("n0nce42", &["a", "b"]), "ab");
        let mut mask = Mask::new("n0nce42");
        assert_eq!(mask.push("say n0n").as_deref(), Some("say "));
        assert_eq!(mask.push("sense").as_deref(), Some("n0nsense"));
    }
}
