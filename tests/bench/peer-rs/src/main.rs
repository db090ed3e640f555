//! The bench's Rust peer: the official Rust A2A SDK's server (`a2a-server-lf` 0.5.3, on
//! axum) with the same agent as `tests/bench/reference_server.py`: every task is created,
//! then completed with one agent text message ("done"), nothing else.
//!
//! - JSON-RPC at `/`, the HTTP+JSON routes, the well-known agent card; streaming on, push off.
//! - `DefaultRequestHandler` with the SDK's `InMemoryTaskStore`.
//! - Served by `axum::serve` on tokio's multi-threaded runtime (its default), TCP_NODELAY
//!   set on each connection.
//!
//! ```text
//! bench-peer-rs --port 9100        # or PORT=9100 bench-peer-rs
//! ```
//!
//! Prints `peer-rs serving http://127.0.0.1:PORT` once it is listening.

use std::sync::Arc;

use a2a::{
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Message, Part, Role, StreamResponse,
    Task, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use a2a_server::agent_card::agent_card_router;
use a2a_server::jsonrpc::jsonrpc_router;
use a2a_server::rest::rest_router;
use a2a_server::{
    AgentExecutor, DefaultRequestHandler, ExecutorContext, InMemoryTaskStore, StaticAgentCard,
};
use axum::serve::ListenerExt;
use futures::stream::{self, BoxStream};

/// Every task: created, then completed with one agent text message, nothing else: the
/// Python executor's steps. Where the handler gives the executor no task (a streaming
/// request for a new one), the executor sends the new task first, as the Python one
/// enqueues `new_task_from_user_message`; then `TaskUpdater.complete(...)`'s status update.
struct CompleteAtOnce;

fn status_update(
    ctx: &ExecutorContext,
    state: TaskState,
    message: Option<Message>,
) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: ctx.task_id.clone(),
        context_id: ctx.context_id.clone(),
        status: TaskStatus {
            state,
            message,
            timestamp: Some(chrono::Utc::now()),
        },
        metadata: None,
    })
}

/// `message` as one of the task's: its task and context ids filled in.
fn of_task(ctx: &ExecutorContext, mut message: Message) -> Message {
    message.context_id = Some(ctx.context_id.clone());
    message.task_id = Some(ctx.task_id.clone());
    message
}

impl AgentExecutor for CompleteAtOnce {
    fn execute(
        &self,
        ctx: ExecutorContext,
    ) -> BoxStream<'static, Result<StreamResponse, a2a::A2AError>> {
        let mut events = Vec::with_capacity(2);
        if ctx.stored_task.is_none() {
            events.push(Ok(StreamResponse::Task(Task {
                id: ctx.task_id.clone(),
                context_id: ctx.context_id.clone(),
                status: TaskStatus {
                    state: TaskState::Submitted,
                    message: None,
                    timestamp: None,
                },
                artifacts: None,
                history: ctx.message.clone().map(|m| vec![of_task(&ctx, m)]),
                metadata: None,
            })));
        }
        let done = of_task(&ctx, Message::new(Role::Agent, vec![Part::text("done")]));
        events.push(Ok(status_update(&ctx, TaskState::Completed, Some(done))));
        Box::pin(stream::iter(events))
    }

    fn cancel(
        &self,
        ctx: ExecutorContext,
    ) -> BoxStream<'static, Result<StreamResponse, a2a::A2AError>> {
        let canceled = status_update(&ctx, TaskState::Canceled, None);
        Box::pin(stream::once(async move { Ok(canceled) }))
    }
}

fn card(url: &str) -> AgentCard {
    AgentCard {
        name: "peer-rs".into(),
        description: "a2a-server-lf 0.5.3 peer server for benchmarks".into(),
        version: "1.0.0".into(),
        supported_interfaces: vec![
            AgentInterface::new(url, "JSONRPC"),
            AgentInterface::new(url, "HTTP+JSON"),
        ],
        capabilities: capabilities(),
        default_input_modes: vec!["text/plain".into()],
        default_output_modes: vec!["text/plain".into()],
        skills: vec![AgentSkill {
            id: "complete".into(),
            name: "complete".into(),
            description: "completes every task at once".into(),
            tags: vec!["bench".into()],
            examples: None,
            input_modes: None,
            output_modes: None,
            security_requirements: None,
        }],
        provider: None,
        documentation_url: None,
        icon_url: None,
        security_schemes: None,
        security_requirements: None,
        signatures: None,
    }
}

fn capabilities() -> AgentCapabilities {
    AgentCapabilities {
        streaming: Some(true),
        push_notifications: Some(false),
        ..Default::default()
    }
}

fn port() -> Result<u16, String> {
    let mut args = std::env::args().skip(1);
    let port = match (args.next().as_deref(), args.next()) {
        (Some("--port"), Some(p)) => p,
        (None, _) => std::env::var("PORT").map_err(|_| "--port PORT (or PORT) is required")?,
        _ => return Err("usage: bench-peer-rs --port PORT".into()),
    };
    port.parse().map_err(|e| format!("port {port}: {e}"))
}

#[tokio::main]
async fn main() {
    let port = port().unwrap_or_else(|e| {
        eprintln!("bench-peer-rs: {e}");
        std::process::exit(2);
    });
    let url = format!("http://127.0.0.1:{port}");
    let handler = Arc::new(
        DefaultRequestHandler::new(CompleteAtOnce, InMemoryTaskStore::new())
            .with_capabilities(capabilities()),
    );
    let app = agent_card_router(Arc::new(StaticAgentCard::new(card(&url))))
        .merge(jsonrpc_router(handler.clone()))
        .merge(rest_router(handler));
    // TCP_NODELAY on every connection, as axum's own documentation sets it: uvicorn (asyncio)
    // and node's http server set it by default, and harness-local sets it too; without it,
    // an SSE answer's last small write waits out the client's delayed ACK (~40 ms).
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap_or_else(|e| panic!("cannot listen on 127.0.0.1:{port}: {e}"))
        .tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
    println!("peer-rs serving {url}");
    axum::serve(listener, app).await.expect("the server runs");
}
