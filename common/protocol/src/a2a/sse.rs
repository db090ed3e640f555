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

    pub fn frame(&self, item: Result<StreamResponse, A2aError>) -> Event {
        match item {
            Ok(event) => Event::default().data(self.data(&event)),
            Err(error) => Event::default().event("error").data(self.error(&error)),
        }
    }
}
