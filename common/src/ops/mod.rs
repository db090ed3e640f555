//! One module per A2A operation, each the whole behaviour of that operation: validate
//! the request, run it against the store and engine, shape the answer. The bindings
//! only decode, call and encode.
//!
//! What they run against is the [`Harness`] (`harness`: its parts and their assembly),
//! with who a request comes from (`identity`), what it may see and do (`access`), how an
//! answer shows a task (`shown`), the audit trail (`audit`), what a caller is told of a
//! failure (`error`) and the card a deployment publishes (`card`) beside it, one concern
//! a file.

mod access;
mod audit;
pub mod cancel_task;
pub mod card;
mod error;
pub mod get_extended_agent_card;
pub mod get_task;
mod harness;
mod identity;
pub mod list_tasks;
pub mod push_config;
pub mod send_message;
mod shown;
pub mod subscribe_to_task;

pub use harness::Harness;
pub use identity::Caller;

use crate::a2a::{A2aError, Call};

/// What an operation answers: one JSON value (printed once, straight from its type), or a
/// stream of events.
pub enum Answer {
    Json(Box<serde_json::value::RawValue>),
    Stream(crate::engine::follow::EventStream),
}

/// How many history messages an answer holds for a request's `historyLength`: the
/// default ([`DEFAULT_HISTORY_LENGTH`](crate::config::DEFAULT_HISTORY_LENGTH)) when it
/// names none, at most [`MAX_HISTORY_LENGTH`](crate::config::MAX_HISTORY_LENGTH) (the spec
/// asks for "at most" that many), and a negative one refused.
fn history_length(n: Option<i32>, field: &str) -> Result<usize, A2aError> {
    use crate::config::{DEFAULT_HISTORY_LENGTH, MAX_HISTORY_LENGTH};
    let n = crate::a2a::validate::history_length(n, field)?;
    Ok(n.unwrap_or(DEFAULT_HISTORY_LENGTH).min(MAX_HISTORY_LENGTH))
}

fn json<T: serde::Serialize>(v: T) -> Result<Answer, A2aError> {
    serde_json::value::to_raw_value(&v)
        .map(Answer::Json)
        .map_err(|e| A2aError::Internal(format!("cannot encode the answer: {e}")))
}

/// Runs one operation for `caller`, in a span named for it.
pub async fn execute(h: &Harness, call: Call, caller: &Caller) -> Result<Answer, A2aError> {
    // Boxed: every operation's future is in it, too large to be carried on the stack twice.
    checked(call, caller, |call| Box::pin(run(h, call, caller))).await
}

/// `op` on the call, in the call's span, once the names it carries are within bounds
/// (checked before the span, whose fields they are: no log line holds an oversized one).
fn checked<'a, F>(
    call: Call,
    caller: &'a Caller,
    op: impl FnOnce(Call) -> F + Send + 'a,
) -> impl std::future::Future<Output = Result<Answer, A2aError>> + Send + 'a
where
    F: std::future::Future<Output = Result<Answer, A2aError>> + Send + 'a,
{
    let named = call.check_names();
    let span = span_of(&call, caller, named.is_ok());
    traced(span, async move {
        named?;
        op(call).await
    })
}

/// The span every line of a request carries (the JSON logs' span fields); the request
/// is counted.
fn span_of(call: &Call, caller: &Caller, named: bool) -> tracing::Span {
    let op = call.operation().name();
    crate::metrics::request(op);
    let (task_id, context_id) = if named { call.names() } else { ("", "") };
    let span = tracing::info_span!(
        "a2a",
        op,
        request_id = %caller.request_id,
        participant = caller.participant.as_deref().unwrap_or(""),
        task_id,
        context_id,
        otel.name = tracing::field::Empty,
        otel.kind = tracing::field::Empty,
    );
    if crate::traces::enabled() {
        // In the trace: named for the operation, a server's span, the child of the
        // caller's `traceparent`.
        span.record("otel.name", format!("a2a {op}").as_str());
        span.record("otel.kind", "server");
        crate::traces::adopt(&span, caller.trace_parent.as_ref());
    }
    span
}

fn traced(
    span: tracing::Span,
    run: impl std::future::Future<Output = Result<Answer, A2aError>>,
) -> impl std::future::Future<Output = Result<Answer, A2aError>> {
    use futures::FutureExt;
    use tracing::Instrument;
    // Combinators, not an async fn: an async fn holds the future it was given and, while
    // awaiting it, a second copy of it (2.7 KB each here), in every request's future.
    let refused = span.clone();
    run.instrument(span).inspect(move |result| {
        if let Err(e) = result {
            refused.in_scope(|| tracing::info!(code = e.json_rpc_code(), error = %e, "refused"));
        }
    })
}

/// Which operations a server runs. The server is generic over it, so a function built
/// on [`Reads`] links nothing that only the other operations reach: the agent, the
/// models, webhook deliveries.
pub trait Operations: Send + Sync + 'static {
    /// Whether any operation writes: the routes that only writes need (answers from the
    /// inbox, remote agents' callbacks, the metrics page) are left out of those that
    /// do not.
    const WRITES: bool;

    fn execute<'a>(
        h: &'a Harness,
        call: Call,
        caller: &'a Caller,
    ) -> impl std::future::Future<Output = Result<Answer, A2aError>> + Send + 'a;
}

/// Every operation.
pub struct All;

impl Operations for All {
    const WRITES: bool = true;

    fn execute<'a>(
        h: &'a Harness,
        call: Call,
        caller: &'a Caller,
    ) -> impl std::future::Future<Output = Result<Answer, A2aError>> + Send + 'a {
        execute(h, call, caller)
    }
}

/// The operations that change nothing: GetTask, ListTasks, GetPushConfig,
/// ListPushConfigs, GetExtendedAgentCard. Any other is unsupported.
pub struct Reads;

impl Operations for Reads {
    const WRITES: bool = false;

    fn execute<'a>(
        h: &'a Harness,
        call: Call,
        caller: &'a Caller,
    ) -> impl std::future::Future<Output = Result<Answer, A2aError>> + Send + 'a {
        checked(call, caller, move |call| read(h, call, caller))
    }
}

/// The operations that change nothing, for both servers; any other is unsupported.
async fn read(h: &Harness, call: Call, c: &Caller) -> Result<Answer, A2aError> {
    match call {
        Call::GetTask(r) => json(get_task::get_task(h, r, c).await?),
        Call::ListTasks(r) => json(list_tasks::list_tasks(h, r, c).await?),
        Call::GetPushConfig(r) => json(push_config::get(h, r, c).await?),
        Call::ListPushConfigs(r) => json(push_config::list(h, r, c).await?),
        Call::GetExtendedAgentCard(r) => {
            json(get_extended_agent_card::get_extended_agent_card(h, r).await?)
        }
        other => Err(A2aError::UnsupportedOperation(format!(
            "{} is not served here",
            other.operation().name()
        ))),
    }
}

async fn run(h: &Harness, call: Call, c: &Caller) -> Result<Answer, A2aError> {
    match call {
        Call::SendMessage(r) => json(send_message::send_message(h, r, c).await?),
        Call::SendStreamingMessage(r) => Ok(Answer::Stream(
            send_message::send_streaming_message(h, r, c).await?,
        )),
        // Boxed: its future is ~20 KB, and this one holds the largest of its arms.
        Call::CancelTask(r) => json(Box::pin(cancel_task::cancel_task(h, r, c)).await?),
        Call::SubscribeToTask(r) => Ok(Answer::Stream(
            subscribe_to_task::subscribe_to_task(h, r, c).await?,
        )),
        Call::CreatePushConfig(r) => json(push_config::create(h, r, c).await?),
        Call::DeletePushConfig(r) => {
            push_config::delete(h, r, c).await?;
            json(serde_json::json!({}))
        }
        Call::GetTask(_)
        | Call::ListTasks(_)
        | Call::GetPushConfig(_)
        | Call::ListPushConfigs(_)
        | Call::GetExtendedAgentCard(_) => read(h, call, c).await,
    }
}
