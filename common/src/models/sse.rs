//! Streamed answers over HTTP, shared by the OpenAI and Anthropic providers.
//!
//! The request is sent as [`http::respond`] sends every request, so a status before the
//! stream begins (429, 401, 5xx) is classified exactly as for a whole response. The 2xx
//! answer is read as server-sent events by `sse-stream`, each event handed to the
//! provider's [`Events`] parser, whose deltas go to an [`Assembly`] and to the caller as
//! they come. The stream is complete at the provider's final event (`data: [DONE]`,
//! `message_stop`); a stream that ends before it, cleanly or with a broken connection, is
//! cut off ([`stream::cut_off`]): transient, so the retry makes the whole call again. An
//! error the API reports inside the stream is classified by [`http::stream_error`].
//!
//! # Timeouts
//!
//! A whole response is bounded in all by the provider's timeout ([`CALL_TIMEOUT`], 120 s):
//! the model writes the whole answer before the first byte comes back. A streamed answer
//! has two bounds instead:
//!
//! - **Idle:** the same timeout, between any two reads (and until the response's head
//!   arrives). A stalled stream fails as soon as a whole response would have, and a
//!   model that thinks for a while before its first token (reasoning models) has as long
//!   as before. Anthropic's `ping` events count as progress.
//! - **Total:** [`STREAM_TIMEOUT`] (10 min), since a streamed answer may well take longer
//!   than 120 s to write (8,000 tokens at 50 a second is 160 s), but one that never ends
//!   (a server that only pings, a model looping to a huge limit) must fail.
//!
//! Both are transient errors, so the call is retried as a whole; the message says which
//! bound it was.
//!
//! [`CALL_TIMEOUT`]: super::CALL_TIMEOUT

use std::error::Error;
use std::time::{Duration, Instant};

use futures::StreamExt;
use sse_stream::SseStream;

use super::http;
use super::stream::{self, Assembly};
use super::{ChatResponse, Delta, ModelError, OnDelta};

/// The total bound of a streamed answer, unless the provider's timeout is longer.
pub(crate) const STREAM_TIMEOUT: Duration = Duration::from_secs(600);

/// The most bytes a streamed answer may take: a whole answer of the harness's token limit
/// is far less, with every event's JSON around each token.
pub(crate) const MAX_STREAM_BYTES: usize = 16 << 20;

/// Whether a stream goes on after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    More,
    /// The provider's final event: the answer is complete.
    Done,
}

/// A provider's parser of its stream's events.
pub(crate) trait Events {
    /// One event: its type (the `event:` field) when it has one, and its data. The deltas
    /// it holds go to `emit`; an error the API reports in it is returned.
    fn event(
        &mut self,
        kind: Option<&str>,
        data: &str,
        emit: &mut dyn FnMut(Delta),
    ) -> Result<Flow, ModelError>;

    /// The provider's whole response, for a server that answered one instead of a stream.
    fn whole(&self, body: &serde_json::Value) -> Result<ChatResponse, ModelError>;
}

/// How long a streamed call may wait between two reads, and take in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timeouts {
    pub idle: Duration,
    pub total: Duration,
}

/// Sends a streaming request and reads its answer: the deltas go to `on_delta` as they
/// come, and the whole response is returned at the final event. Errors never contain
/// `secret`.
pub(crate) async fn stream(
    provider: &str,
    url: &str,
    request: reqwest::RequestBuilder,
    timeouts: Timeouts,
    secret: Option<&str>,
    mut events: impl Events + Send,
    on_delta: OnDelta<'_>,
) -> Result<ChatResponse, ModelError> {
    let started = Instant::now();
    let result = async {
        let request = request.timeout(timeouts.total);
        let response = http::respond(provider, url, request, timeouts.idle).await?;
        if is_json(&response) {
            return whole(provider, response, &events, on_delta).await;
        }
        read(provider, response.bytes_stream(), &mut events, on_delta)
            .await
            .map_err(|broken| match broken {
                Broken::Model(e) => e,
                Broken::Body(e) => body_error(provider, url, timeouts, started, &*e),
            })
    }
    .await;
    result.map_err(|e| http::redact(e, secret))
}

/// The JSON answer of a server that ignored `stream: true` (some OpenAI-compatible servers
/// and proxies do): a whole response, shown at once as a model without a streaming API
/// shows it, or an error it said in a 2xx. An error quotes the body's error alone, never
/// other content (it may hold the answer's text).
async fn whole(
    provider: &str,
    response: reqwest::Response,
    events: &impl Events,
    on_delta: OnDelta<'_>,
) -> Result<ChatResponse, ModelError> {
    let body = response.bytes().await.unwrap_or_default();
    let value: serde_json::Value = serde_json::from_slice(&body).map_err(|e| {
        ModelError::permanent(format!(
            "{provider}: the JSON answer to a streaming request does not parse ({e}; {} bytes)",
            body.len()
        ))
    })?;
    if value.get("error").is_some_and(|e| !e.is_null()) {
        return Err(http::stream_error(provider, &value));
    }
    let answer = events.whole(&value)?;
    stream::replay(&answer, on_delta);
    Ok(answer)
}

/// Why reading a stream stopped short.
pub(crate) enum Broken {
    /// The events said so (an error event, a malformed event, no final event).
    Model(ModelError),
    /// Reading the body failed (a broken connection, a timeout).
    Body(Box<dyn Error + Send + Sync>),
}

/// Reads the events in `bytes` until the final one, each event's deltas going to the
/// assembly and to `on_delta`.
pub(crate) async fn read<S, B, E>(
    provider: &str,
    bytes: S,
    events: &mut (impl Events + Send),
    on_delta: OnDelta<'_>,
) -> Result<ChatResponse, Broken>
where
    S: futures::Stream<Item = Result<B, E>> + Send,
    B: bytes::Buf + Send,
    E: Error + Send + Sync + 'static,
{
    let mut assembly = Assembly::default();
    // What is read is bounded in all: the parser holds an unfinished line or event whole,
    // and the assembly the answer, so a server sending without end would take memory
    // without end.
    let mut read = 0usize;
    let over = std::sync::atomic::AtomicBool::new(false);
    let bytes = bytes.take_while(|chunk| {
        read = read.saturating_add(chunk.as_ref().map_or(0, bytes::Buf::remaining));
        let within = read <= MAX_STREAM_BYTES;
        if !within {
            over.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        std::future::ready(within)
    });
    let mut sse = std::pin::pin!(SseStream::from_bytes_stream(bytes));
    while let Some(event) = sse.next().await {
        let event = match event {
            Ok(event) => event,
            Err(sse_stream::Error::Body(e)) => return Err(Broken::Body(e)),
            Err(e) => {
                return Err(Broken::Model(ModelError::permanent(format!(
                    "{provider}: the response is not a valid event stream ({e})"
                ))))
            }
        };
        let Some(data) = event.data else {
            continue;
        };
        let mut emit = |delta: Delta| {
            assembly.add(&delta);
            on_delta(delta);
        };
        let flow = events
            .event(event.event.as_deref(), &data, &mut emit)
            .map_err(Broken::Model)?;
        if flow == Flow::Done {
            return assembly.finish(provider).map_err(Broken::Model);
        }
    }
    if over.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(Broken::Model(ModelError::permanent(format!(
            "{provider}: the response stream went on past {} MiB",
            MAX_STREAM_BYTES >> 20
        ))));
    }
    Err(Broken::Model(stream::cut_off(provider)))
}

fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// A body that could not be read: transient, whether the connection broke or a bound ran
/// out (the message says which).
fn body_error(
    provider: &str,
    url: &str,
    timeouts: Timeouts,
    started: Instant,
    e: &(dyn Error + 'static),
) -> ModelError {
    let timed_out = e
        .downcast_ref::<reqwest::Error>()
        .is_some_and(reqwest::Error::is_timeout);
    ModelError::transient(if !timed_out {
        format!(
            "{provider}: the response stream from {url} broke off: {}",
            http::chain(e)
        )
    } else if started.elapsed() >= timeouts.total {
        format!(
            "{provider}: the response stream from {url} did not end within {:?} (timed out)",
            timeouts.total
        )
    } else {
        format!(
            "{provider}: the response stream from {url} was silent for {:?} (timed out)",
            timeouts.idle
        )
    })
}

#[cfg(test)]
pub(crate) mod tests {
    //! Reading a fixture stream as the providers' unit tests do: whole, and split at
    //! every byte, which must give the same deltas.
    use super::*;

    /// The deltas and the result of reading `bytes` in pieces of `piece` bytes.
    pub(crate) fn read_in_pieces<P: Events + Send + Default>(
        provider: &str,
        bytes: &[u8],
        piece: usize,
    ) -> (Vec<Delta>, Result<ChatResponse, ModelError>) {
        let pieces: Vec<Result<bytes::Bytes, std::io::Error>> = bytes
            .chunks(piece.max(1))
            .map(|p| Ok(bytes::Bytes::copy_from_slice(p)))
            .collect();
        let seen = std::sync::Mutex::new(Vec::new());
        let on_delta = |d: Delta| seen.lock().expect("deltas").push(d);
        let mut events = P::default();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let result = runtime.block_on(read(
            provider,
            futures::stream::iter(pieces),
            &mut events,
            &on_delta,
        ));
        let result = result.map_err(|broken| match broken {
            Broken::Model(e) => e,
            Broken::Body(e) => panic!("an in-memory body does not break: {e}"),
        });
        (seen.into_inner().expect("deltas"), result)
    }

    /// Reads `bytes` whole, in pieces of every size up to 64 bytes, and one byte at a
    /// time; every way must give the same deltas and result, which are returned.
    /// The text deltas among `deltas`.
    pub(crate) fn texts(deltas: &[Delta]) -> Vec<&str> {
        deltas
            .iter()
            .filter_map(|d| match d {
                Delta::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    pub(crate) fn read_fixture<P: Events + Send + Default>(
        provider: &str,
        bytes: &[u8],
    ) -> (Vec<Delta>, Result<ChatResponse, ModelError>) {
        let (deltas, result) = read_in_pieces::<P>(provider, bytes, bytes.len());
        let text = |ds: &[Delta]| texts(ds).concat();
        for piece in 1..=64 {
            let (d, r) = read_in_pieces::<P>(provider, bytes, piece);
            // Events split differently give the same text, calls and result.
            assert_eq!(text(&d), text(&deltas), "pieces of {piece}");
            assert_eq!(d.len(), deltas.len(), "pieces of {piece}");
            assert_eq!(r, result, "pieces of {piece}");
        }
        (deltas, result)
    }

    #[derive(Default)]
    struct Echo;

    impl Events for Echo {
        fn event(
            &mut self,
            kind: Option<&str>,
            data: &str,
            emit: &mut dyn FnMut(Delta),
        ) -> Result<Flow, ModelError> {
            if kind == Some("end") {
                return Ok(Flow::Done);
            }
            emit(Delta::Text(data.to_string()));
            Ok(Flow::More)
        }

        fn whole(&self, _: &serde_json::Value) -> Result<ChatResponse, ModelError> {
            Err(ModelError::permanent("no whole responses"))
        }
    }

    /// A line without end is not held without end: past the bound, the stream is refused
    /// for good (it was held whole, then called cut off and made again).
    #[test]
    fn a_stream_past_its_bound_is_refused_as_too_long() {
        let mut bytes = b"data: ".to_vec();
        bytes.resize(MAX_STREAM_BYTES + 2, b'x');
        let (deltas, result) = read_in_pieces::<Echo>("p", &bytes, 1 << 20);
        assert!(deltas.is_empty());
        let err = result.expect_err("too long");
        assert!(matches!(err, ModelError::Permanent { .. }), "{err:?}");
        assert!(err.to_string().contains("past 16 MiB"), "{err}");
    }

    #[test]
    fn events_split_anywhere_are_read_whole_and_multi_line_data_is_joined() {
        let bytes = "data: h\u{e9}llo\r\n\r\n: a comment\n\ndata: two\ndata: lines\n\nevent: end\ndata: {}\n\n";
        let (deltas, result) = read_fixture::<Echo>("p", bytes.as_bytes());
        assert_eq!(
            deltas,
            vec![
                Delta::Text("h\u{e9}llo".into()),
                Delta::Text("two\nlines".into())
            ]
        );
        assert_eq!(
            result.expect("done").text.as_deref(),
            Some("h\u{e9}llotwo\nlines")
        );
    }

    #[test]
    fn a_stream_without_its_final_event_is_cut_off_and_transient() {
        let (_, result) = read_in_pieces::<Echo>("p", b"data: half\n\ndata: an unfinished ev", 7);
        assert_eq!(result, Err(stream::cut_off("p")));
    }

    #[test]
    fn a_line_that_is_no_event_field_is_a_permanent_error() {
        let (_, result) = read_in_pieces::<Echo>("p", b"{\"not\": \"an event\"}\n\n", 100);
        let err = result.expect_err("malformed");
        assert!(matches!(err, ModelError::Permanent { .. }), "{err:?}");
        assert!(
            err.to_string().contains("not a valid event stream"),
            "{err}"
        );
    }
}
