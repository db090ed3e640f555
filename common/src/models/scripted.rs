//! The scripted model: deterministic, no network, for tests and offline use. A JSON file
//! `{"turns": [ ... ]}`; the n-th model call of a task (0-based, counting the calls the
//! task has already committed: `ChatRequest::turn`) returns `turns[n]`. A turn is
//! `{"text": "..."}`, `{"tool_calls": [{"name": "...", "arguments": {...}}]}`, or both.
//! In place of `text` a turn may give `"chunks": ["…", …]`: a streaming call reports them
//! one by one, `"chunk_delay_ms": N` apart (the first after `delay_ms`), and the answer's
//! text is all of them joined. `"cut_after": k` makes the turn's first streaming call in
//! this process end after k chunks as a cut-off stream does (a transient error), so the
//! retry's restart can be seen.
//! Past the last turn the call fails permanently, with a message saying so. Optional
//! `call_log` and `request_log` files record each call and its whole request: the call
//! log gets `turn|summary <n> <task id> <pid> <ms>` as a call starts and `done <n> <task
//! id> <pid> <ms>` once it has its answer (ms since the epoch), so a test can tell which
//! process made each call and when, across restarts. A
//! summary call (`Purpose::Summary`, the context budget's) takes no turn: it is answered
//! with the script's `summary` text, or a fixed one. A call reports token usage as a
//! provider would: the request's estimated size in, a token per four bytes of text out.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::{
    ChatRequest, ChatResponse, Delta, Model, ModelError, OnDelta, Purpose, ToolCall, Usage,
};

/// What a summary call gets when the script has no `summary`.
pub const DEFAULT_SUMMARY: &str = "Summary of the earlier turns (scripted).";

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptedCall {
    name: String,
    #[serde(default)]
    arguments: Value,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Turn {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ScriptedCall>,
    /// How long the call takes, to stand for a slow model (and let tests interrupt it).
    #[serde(default)]
    delay_ms: u64,
    /// The text in the pieces a stream reports (in place of `text`).
    #[serde(default)]
    chunks: Option<Vec<String>>,
    /// How long before each chunk after the first.
    #[serde(default)]
    chunk_delay_ms: u64,
    /// The first streaming call of the turn ends, cut off, after this many chunks.
    #[serde(default)]
    cut_after: Option<usize>,
}

impl Turn {
    fn text(&self) -> Option<String> {
        match &self.chunks {
            Some(chunks) => Some(chunks.concat()),
            None => self.text.clone(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Script {
    turns: Vec<Turn>,
    /// A file each call appends its start and end to (see the module doc), so calls can
    /// be counted and placed in time across restarts and processes.
    #[serde(default)]
    call_log: Option<std::path::PathBuf>,
    /// A file each call appends its whole request to, as one JSON line, so tests can see
    /// what the model was given.
    #[serde(default)]
    request_log: Option<std::path::PathBuf>,
    /// The answer to every summary call.
    #[serde(default)]
    summary: Option<String>,
}

#[derive(Debug)]
pub struct Scripted {
    source: String,
    turns: Vec<Turn>,
    call_log: Option<std::path::PathBuf>,
    request_log: Option<std::path::PathBuf>,
    summary: String,
    calls: AtomicUsize,
    /// The turns whose cut (`cut_after`) this process has made.
    cut: std::sync::Mutex<std::collections::HashSet<usize>>,
}

impl Scripted {
    /// Reads a script file; a malformed one is refused with the reason.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the model script {}: {e}", path.display()))?;
        Self::parse(&path.display().to_string(), &text)
    }

    pub fn parse(source: &str, json: &str) -> Result<Self, String> {
        let script: Script =
            serde_json::from_str(json).map_err(|e| format!("model script {source}: {e}"))?;
        for (i, t) in script.turns.iter().enumerate() {
            let problem = match (&t.text, &t.chunks) {
                (None, None) if t.tool_calls.is_empty() => "has neither text nor tool_calls",
                (Some(_), Some(_)) => "has both text and chunks",
                (_, Some(c)) if c.is_empty() => "has no chunks",
                (_, None) if t.chunk_delay_ms > 0 || t.cut_after.is_some() => {
                    "has chunk_delay_ms or cut_after without chunks"
                }
                _ => continue,
            };
            return Err(format!("model script {source}: turn {i} {problem}"));
        }
        Ok(Scripted {
            source: source.to_owned(),
            turns: script.turns,
            call_log: script.call_log,
            request_log: script.request_log,
            summary: script.summary.unwrap_or_else(|| DEFAULT_SUMMARY.to_owned()),
            calls: AtomicUsize::new(0),
            cut: Default::default(),
        })
    }

    /// How many calls this model has answered (for tests of crash safety).
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

/// Appends a line to a log file, durably (the logs count calls across a crash).
fn append(log: &Path, line: &str) -> Result<(), ModelError> {
    use std::io::Write;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .and_then(|mut f| f.write_all(line.as_bytes()).and_then(|()| f.sync_all()))
        .map_err(|e| ModelError::permanent(format!("cannot write the log {}: {e}", log.display())))
}

/// What a call is answered with.
enum Answer<'a> {
    Summary(ChatResponse),
    Turn(&'a Turn),
}

impl Scripted {
    /// Logs the call, then finds its answer.
    fn begin(&self, request: &ChatRequest) -> Result<Answer<'_>, ModelError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if let Some(log) = &self.request_log {
            let line = serde_json::to_string(request).unwrap_or_default() + "\n";
            append(log, &line)?;
        }
        if request.purpose == Purpose::Summary {
            self.logged("summary", request)?;
            self.logged("done", request)?;
            return Ok(Answer::Summary(ChatResponse {
                usage: reported(request, Some(&self.summary)),
                text: Some(self.summary.clone()),
                ..Default::default()
            }));
        }
        self.logged("turn", request)?;
        let turn = self.turns.get(request.turn).ok_or_else(|| {
            ModelError::permanent(format!(
                "the model script {} has {} turns and turn {} was asked for",
                self.source,
                self.turns.len(),
                request.turn + 1
            ))
        })?;
        Ok(Answer::Turn(turn))
    }

    fn logged(&self, what: &str, request: &ChatRequest) -> Result<(), ModelError> {
        match &self.call_log {
            Some(log) => append(
                log,
                &format!(
                    "{what} {} {} {} {}\n",
                    request.turn,
                    request.task_id,
                    std::process::id(),
                    crate::a2a::Timestamp::now().millis()
                ),
            ),
            None => Ok(()),
        }
    }

    /// The turn's answer, once it has been given.
    fn answered(&self, request: &ChatRequest, turn: &Turn) -> Result<ChatResponse, ModelError> {
        self.logged("done", request)?;
        let text = turn.text();
        Ok(ChatResponse {
            tool_calls: turn
                .tool_calls
                .iter()
                .enumerate()
                .map(|(i, c)| ToolCall {
                    id: format!("call-{}-{i}", request.turn),
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                })
                .collect(),
            usage: reported(request, text.as_deref()),
            finish_reason: Some(
                if turn.tool_calls.is_empty() {
                    "stop"
                } else {
                    "tool_calls"
                }
                .into(),
            ),
            text,
        })
    }
}

/// The usage of an answer of `text` to `request`, as a provider reports it: the request's
/// estimated size in, a token per four bytes of the text out.
fn reported(request: &ChatRequest, text: Option<&str>) -> Usage {
    Usage {
        input_tokens: super::estimate_tokens(request) as u64,
        output_tokens: text.map_or(0, |t| t.len().div_ceil(4)) as u64,
    }
}

async fn sleep_ms(ms: u64) {
    if ms > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
}

#[async_trait]
impl Model for Scripted {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let turn = match self.begin(request)? {
            Answer::Summary(response) => return Ok(response),
            Answer::Turn(turn) => turn,
        };
        let chunks = turn.chunks.as_ref().map_or(0, Vec::len) as u64;
        sleep_ms(turn.delay_ms + turn.chunk_delay_ms * chunks.saturating_sub(1)).await;
        self.answered(request, turn)
    }

    async fn chat_stream(
        &self,
        request: &ChatRequest,
        on_delta: OnDelta<'_>,
    ) -> Result<ChatResponse, ModelError> {
        let turn = match self.begin(request)? {
            Answer::Summary(response) => {
                super::stream::replay(&response, on_delta);
                return Ok(response);
            }
            Answer::Turn(turn) => turn,
        };
        sleep_ms(turn.delay_ms).await;
        let Some(chunks) = &turn.chunks else {
            let response = self.answered(request, turn)?;
            super::stream::replay(&response, on_delta);
            return Ok(response);
        };
        let cut = turn.cut_after.filter(|_| {
            let mut cut = self.cut.lock().unwrap_or_else(|e| e.into_inner());
            cut.insert(request.turn)
        });
        for (i, chunk) in chunks.iter().enumerate() {
            if cut == Some(i) {
                return Err(super::stream::cut_off("scripted"));
            }
            if i > 0 {
                sleep_ms(turn.chunk_delay_ms).await;
            }
            on_delta(Delta::Text(chunk.clone()));
        }
        let response = self.answered(request, turn)?;
        let whole = ChatResponse {
            text: None,
            ..response.clone()
        };
        super::stream::replay(&whole, on_delta);
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(turn: usize) -> ChatRequest {
        ChatRequest {
            model: "scripted".into(),
            system: String::new(),
            messages: vec![],
            tools: vec![],
            max_tokens: 64,
            turn,
            purpose: Default::default(),
            task_id: String::new(),
        }
    }

    const SCRIPT: &str = r#"{"turns": [
        {"tool_calls": [{"name": "lookup", "arguments": {"q": "x"}}]},
        {"text": "the answer"}
    ]}"#;

    #[tokio::test]
    async fn the_nth_call_of_a_task_gets_the_nth_turn() {
        let m = Scripted::parse("test", SCRIPT).expect("script");
        let first = m.chat(&request(0)).await.expect("turn 0");
        assert_eq!(first.tool_calls[0].name, "lookup");
        assert_eq!(first.tool_calls[0].arguments, serde_json::json!({"q": "x"}));
        assert_eq!(
            m.chat(&request(1)).await.expect("turn 1").text.as_deref(),
            Some("the answer")
        );
        assert_eq!(m.calls(), 2);
    }

    #[tokio::test]
    async fn past_the_last_turn_the_call_fails_with_a_clear_message() {
        let m = Scripted::parse("test", SCRIPT).expect("script");
        let err = m.chat(&request(2)).await.expect_err("no third turn");
        assert_eq!(
            err,
            ModelError::permanent("the model script test has 2 turns and turn 3 was asked for")
        );
    }

    #[tokio::test]
    async fn a_chunked_turn_streams_its_chunks_and_a_cut_one_restarts_without_doubling() {
        let m = super::super::retry::Retrying::new(
            Scripted::parse(
                "test",
                r#"{"turns": [{"chunks": ["Hel", "lo ", "world"], "cut_after": 2}]}"#,
            )
            .expect("script"),
        )
        .with_policy(2, std::time::Duration::ZERO, std::time::Duration::ZERO);
        let seen = std::sync::Mutex::new(Vec::new());
        let on = |d: Delta| seen.lock().unwrap().push(d);
        let r = m.chat_stream(&request(0), &on).await.expect("retried");
        assert_eq!(r.text.as_deref(), Some("Hello world"));
        let mut shown = String::new();
        for d in seen.into_inner().unwrap() {
            match d {
                Delta::Text(t) => shown.push_str(&t),
                Delta::Restart => shown.clear(),
                _ => {}
            }
        }
        assert_eq!(shown, "Hello world", "the cut attempt's text is voided");
        // The cut is the first call's only: the whole call gets the whole text.
        assert_eq!(
            m.chat(&request(0)).await.expect("whole").text.as_deref(),
            Some("Hello world")
        );
    }

    #[test]
    fn malformed_scripts_are_refused_with_the_reason() {
        for (script, why) in [
            (
                r#"{"turns": [{"text": "a", "chunks": ["b"]}]}"#,
                "both text and chunks",
            ),
            (r#"{"turns": [{"chunks": []}]}"#, "no chunks"),
            (
                r#"{"turns": [{"text": "a", "chunk_delay_ms": 5}]}"#,
                "without chunks",
            ),
        ] {
            let err = Scripted::parse("t", script).unwrap_err();
            assert!(err.contains(why), "{err}");
        }
        assert!(Scripted::parse("t", r#"{"turns": [{}]}"#)
            .unwrap_err()
            .contains("neither text nor tool_calls"));
        assert!(Scripted::parse("t", r#"{"turns": [{"txt": "x"}]}"#)
            .unwrap_err()
            .contains("unknown field"));
        assert!(Scripted::parse("t", "[]").is_err());
    }
}
