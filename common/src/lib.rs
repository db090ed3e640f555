//! The harness: everything the Lambda functions and the local server do. Functions only
//! wire configuration to what lives here.
//!
//! # Floors
//!
//! The crate is a house of floors, lowest first; the lowest two (`a2a`, `ext`) and the fuzz
//! entry points over them are the `harness-protocol` crate (`common/protocol`), which
//! Cargo keeps from importing anything here, re-exported under their own names. A module imports only from floors below
//! its own; modules on one floor do not import each other. Where a higher floor plugs into
//! a lower one, the lower floor defines the trait (a port) and the higher implements it:
//! the engine defines the `Agent` it drives, the store the records it keeps. A new module
//! goes on the lowest floor whose modules it needs, and into this table;
//! `common/tests/layers.rs` reads the table and fails on an import that points up or
//! sideways.
//!
//! | floor | modules | what it owns |
//! |---|---|---|
//! | 1 protocol | `a2a` | A2A 1.0 wire types, validation, errors, the bindings' decoding, `Call`/`Operation` (crate `harness-protocol`) |
//! | 2 extensions | `ext` | the task, channel and commands extensions' wire types and rules (crate `harness-protocol`) |
//! | 3 support | `keyed_lock`, `secret_file`, `metrics`, `redact` | per-key locks, secret files, counters, credential redaction |
//! | 4 net | `https`, `sealing` | the outbound HTTPS client, the guard on where it may connect, the AWS SDK config; the deployment's sealing key |
//! | 5 traces | `traces` | OpenTelemetry spans' export (OTLP), the W3C trace context in and out of requests |
//! | 6 logs | `logs` | log set-up: the lines, and the traces' layer beside them |
//! | 7 task | `task` | the task as data: leases and their clock, the pending help request, remote links |
//! | 8 identity | `auth` | who a request comes from: tokens, keys, JWKS |
//! | 9 config | `config` | every setting, its default and its source |
//! | 10 secrets | `secrets` | secrets read from Secrets Manager at a cold start |
//! | 11 store | `store` | the `Store` port, its records, the embedded and DynamoDB stores |
//! | 12 engine | `engine` | task state changes, links between tasks, following a log, driving a task through the `Agent` port, announcing through the `Medium` port, the deadlines of tasks for participants |
//! | 13 push | `push` | webhooks: configs, their sealed secrets, delivery |
//! | 14 models | `models` | the `Model` port, its providers, and the `Tool` a model calls |
//! | 15 channels | `channels` | membership, help decisions, sub-tasks for participants, personal channels |
//! | 16 remote | `remote` | remote A2A agents: registry, cards, client, links |
//! | 17 tools | `mcp` | MCP servers as tool sources |
//! | 18 agent | `agent` | the agents: the LLM agent (context, prompt, tools, delegation with the remote agents it was built with), the conformance agent |
//! | 19 commands | `commands` | `/name args` harness commands |
//! | 20 service | `ops` | one module per A2A operation and the harness they run on |
//! | 21 inbox | `ui` | the web inbox's pages and answer routes |
//! | 22 http | `server` | the axum router: card, JSON-RPC, HTTP+JSON, limits, remote agents' callbacks |
//! | 23 wake-ups | `resume` | the resume worker's stream handler |
//! | 24 edges | `lambda`, `fuzz` | the Lambda runtimes; fuzz entry points (crate `harness-protocol`) |

#[doc(hidden)]
pub use protocol::fuzz;
pub use protocol::{a2a, ext};

pub mod agent;
pub mod auth;
pub mod channels;
pub mod commands;
pub mod config;
pub mod engine;
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
pub mod sealing;
pub mod secret_file;
pub mod secrets;
pub mod server;
pub mod store;
pub mod task;
pub mod traces;
pub mod ui;
