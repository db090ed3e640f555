//! The A2A 1.0 protocol: proto-shaped types, their validation, the error model, the agent
//! card, and the two HTTP bindings (JSON-RPC and HTTP+JSON) with their SSE framing.

pub mod call;
pub mod card;
pub mod error;
pub mod headers;
pub mod jsonrpc;
pub mod rest;
mod serde_util;
pub mod sse;
pub mod timestamp;
pub mod types;
pub mod validate;

pub use call::{Call, Operation};
pub use error::A2aError;
pub use timestamp::Timestamp;
pub use types::*;
