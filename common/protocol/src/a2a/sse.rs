//! Server-sent events framing (spec §1.3): one `data:` line per event; on JSON-RPC each
//! event is a full response envelope with the request id, on HTTP+JSON a bare
//! StreamResponse. A mid-stream error is an `event: error` and ends the stream.

use axum::response::sse::Event;
use serde_json::{json, Value};

use super::error::A2aError;
use super::jsonrpc;
use super::types::StreamResponse;

/// Which binding's framing to use.
#[derive(Debug, Clone)]
pub enum Framing {
    JsonRpc { id: Value },
    Rest,
}

impl Framing {
    pub fn data(&self, event: &StreamResponse) -> String {
        match self {
            Framing::JsonRpc { id } => jsonrpc::success(id, event),
            Framing::Rest => serde_json::to_string(event).unwrap_or_else(|e| {
                self.error(&A2aError::Internal(format!("cannot encode the event: {e}")))
            }),
        }
    }

    pub fn error(&self, error: &A2aError) -> String {
        match self {
            Framing::JsonRpc { id } => jsonrpc::failure(id, error).to_string(),
            Framing::Rest => json!(error.to_rest()).to_string(),
        }
    }

    /// The SSE event of `item`; an event (not an error) carries its `id`, where a client
    /// resumes from after it, when it has one.
    pub fn frame(&self, item: Result<(StreamResponse, Option<String>), A2aError>) -> Event {
        match item {
            Ok((event, Some(id))) => Event::default().id(id).data(self.data(&event)),
            Ok((event, None)) => Event::default().data(self.data(&event)),
            Err(error) => Event::default().event("error").data(self.error(&error)),
        }
    }
}
