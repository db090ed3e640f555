//! The harness: everything the Lambda functions and the local server do. Functions only
//! wire configuration to what lives here.

pub mod a2a;
pub mod agent;
pub mod auth;
pub mod channels;
pub mod commands;
pub mod config;
pub mod engine;
pub mod ext;
#[doc(hidden)]
pub mod fuzz;
pub mod https;
pub mod keyed_lock;
pub mod lambda;
pub mod logs;
pub mod mcp;
pub mod metrics;
pub mod models;
pub mod ops;
pub mod push;
pub mod redact;
pub mod remote;
pub mod resume;
pub mod secret_file;
pub mod secrets;
pub mod server;
pub mod store;
pub mod ui;
