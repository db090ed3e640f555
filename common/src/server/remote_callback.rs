//! The callback a remote agent's webhook calls when its task changes:
//! `POST /remote/callback/<reference>` (the link's opaque reference, which names the task
//! and link only to this harness) with the link's token in `X-A2A-Notification-Token`.
//! The token is checked before anything is read, and so is that the delegation is still
//! open: a token that ran out (the delegation's deadline), a link that ended, or a parent
//! that ended is refused like a wrong token, and each such refusal leaves an audit row
//! under its task. A token this harness did not sign names no one and no task: it is
//! refused without a write (a stranger's flood must not use up the audit's hourly rows),
//! counted (`remote_callbacks_forged`) and logged at most once a minute. The
//! body is not trusted (nor read): the remote task is read through the client, and only an
//! ended task or a new question wakes the parent. Every answer is the same small JSON, so
//! a caller without the token learns nothing about the task.

use std::sync::Arc;

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::a2a::TaskState;
use crate::ops::Harness;
use crate::remote::TokenCheck;
use crate::store::{AuditRecord, TaskRecord};

/// The header a push notification carries its config's token in.
pub const TOKEN_HEADER: &str = "x-a2a-notification-token";
/// Largest callback body taken (and thrown away).
pub const MAX_BODY: usize = 64 * 1024;
/// The operation callbacks are audited under.
const OPERATION: &str = "RemoteCallback";

fn answer(status: StatusCode, text: &str) -> Response {
    (status, axum::Json(serde_json::json!({"status": text}))).into_response()
}

pub async fn handle(
    State(h): State<Arc<Harness>>,
    reference: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
) -> Response {
    let Some(remotes) = h.remotes() else {
        return answer(StatusCode::NOT_FOUND, "not found");
    };
    // A reference that is no text (its escapes not UTF-8) is none this harness signed:
    // refused like any other, not in axum's words.
    let Ok(Path(reference)) = reference else {
        return forged();
    };
    let token = (headers.get(TOKEN_HEADER))
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let check = remotes.check_token(&reference, token);
    let named = (check != TokenCheck::Forged)
        .then(|| remotes.open_reference(&reference))
        .flatten();
    let Some((task_id, n)) = named else {
        return forged();
    };
    let rec = match h.store().load_task(&task_id).await {
        Ok(rec) => rec,
        Err(e) => return not_taken(&task_id, n, &e.to_string()),
    };
    // The token ran out at the link's deadline; the link may have ended before.
    let link = rec.as_ref().and_then(|r| r.agent.remote.get(n - 1));
    let agent = link.map(|l| l.agent.clone()).unwrap_or_default();
    if check == TokenCheck::Expired {
        return refused(&h, &task_id, &agent, "the token ran out").await;
    }
    let Some(rec) = rec
        .as_ref()
        .filter(|r| !r.state().is_terminal() && link.is_some_and(|l| !l.ended))
    else {
        return refused(&h, &task_id, &agent, "the delegation has ended").await;
    };
    match wakes(&h, rec, n).await {
        Ok(()) => answer(StatusCode::OK, "ok"),
        Err(e) => not_taken(&task_id, n, &e),
    }
}

fn not_taken(task_id: &str, n: usize, e: &str) -> Response {
    tracing::warn!(%task_id, link = n, error = %e, "remote callback not taken; the remote retries");
    answer(StatusCode::SERVICE_UNAVAILABLE, "try again")
}

/// The refusal of a callback whose token this harness did not sign: counted, and logged
/// at most once a minute (with how many since), never written to the store.
fn forged() -> Response {
    use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
    static LAST_LOGGED_MINUTE: AtomicI64 = AtomicI64::new(i64::MIN);
    static SINCE: AtomicU64 = AtomicU64::new(0);
    crate::metrics::record(crate::metrics::Event::RemoteCallbackForged);
    let since = SINCE.fetch_add(1, Ordering::Relaxed) + 1;
    let minute = crate::task::lease::now_ms().div_euclid(60_000);
    if LAST_LOGGED_MINUTE.swap(minute, Ordering::Relaxed) != minute {
        SINCE.store(0, Ordering::Relaxed);
        tracing::warn!(
            refused = since,
            "remote callbacks refused: a token this harness did not sign"
        );
    }
    answer(StatusCode::UNAUTHORIZED, "unauthorized")
}

/// The refusal of a callback with a token this harness signed, audited under the task it
/// names and the agent it was delegated to.
async fn refused(h: &Harness, task_id: &str, agent: &str, why: &str) -> Response {
    h.audit(&AuditRecord {
        operation: OPERATION.into(),
        task_id: task_id.into(),
        participant: agent.into(),
        detail: why.into(),
        ..Default::default()
    })
    .await;
    answer(StatusCode::UNAUTHORIZED, "unauthorized")
}

/// Wakes the task if its link `n` has news: a send never answered (the drive repairs it),
/// or a remote task that ended or asks something new.
async fn wakes(h: &Harness, rec: &TaskRecord, n: usize) -> Result<(), String> {
    let (Some(remotes), Some(link)) = (h.remotes(), rec.agent.remote.get(n - 1)) else {
        return Ok(());
    };
    let news = match (&link.remote_task, remotes.registry.get(&link.agent)) {
        (None, _) => true,
        (Some(remote_id), Some(agent)) => {
            let chosen = remotes
                .client
                .choose(agent)
                .await
                .map_err(|e| e.to_string())?;
            let task = (remotes.client.get_task(agent, &chosen, remote_id).await)
                .map_err(|e| e.to_string())?;
            let status = task.status.unwrap_or_default();
            let asked = status.message.map(|m| m.message_id).unwrap_or_default();
            status.state.is_terminal()
                || (status.state == TaskState::InputRequired
                    && link.noted.as_ref().is_none_or(|(_, id)| *id != asked))
        }
        // Gone from the registry: the drive ends the link and tells the model.
        (Some(_), None) => true,
    };
    if news {
        h.engine()
            .wake_task(rec.id())
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The callback's route.
pub fn routes() -> axum::Router<Arc<Harness>> {
    axum::Router::new().route(
        &format!("{}/{{reference}}", crate::remote::CALLBACK_PATH),
        axum::routing::post(handle).layer(axum::extract::DefaultBodyLimit::max(MAX_BODY)),
    )
}
