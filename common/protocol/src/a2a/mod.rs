//! The A2A 1.0 protocol: proto-shaped types, their validation, the error model, the agent
//! card, the two HTTP bindings (JSON-RPC and HTTP+JSON) with their SSE framing, and (feature
//! `grpc`) the gRPC binding's messages and mapping.

pub mod call;
pub mod card;
pub mod error;
#[cfg(feature = "grpc")]
pub mod grpc;
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
