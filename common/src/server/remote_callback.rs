//! The callback a remote agent's webhook calls when its task changes:
//! `POST /remote/callback/<task id>/<link number>` with the link's token in
//! `X-A2A-Notification-Token`. The token is checked before anything is read; the body is
//! not trusted (nor read): the remote task is read through the client, and only an ended
//! task or a new question wakes the parent. Every answer is the same small JSON, so a
//! caller without the token learns nothing about the task.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::a2a::TaskState;
use crate::ops::Harness;

/// The header a push notification carries its config's token in.
pub const TOKEN_HEADER: &str = "x-a2a-notification-token";
/// Largest callback body taken (and thrown away).
pub const MAX_BODY: usize = 64 * 1024;

fn answer(status: StatusCode, text: &str) -> Response {
    (status, axum::Json(serde_json::json!({"status": text}))).into_response()
}

pub async fn handle(
    State(h): State<Arc<Harness>>,
    Path((task_id, n)): Path<(String, usize)>,
    headers: HeaderMap,
) -> Response {
    let Some(remotes) = h.remotes() else {
        return answer(StatusCode::NOT_FOUND, "not found");
    };
    let token = (headers.get(TOKEN_HEADER))
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if n == 0 || !remotes.verify(&task_id, n, token) {
        return answer(StatusCode::UNAUTHORIZED, "unauthorized");
    }
    match wakes(&h, &task_id, n).await {
        Ok(()) => answer(StatusCode::OK, "ok"),
        Err(e) => {
            tracing::warn!(%task_id, link = n, error = %e, "remote callback not taken; the remote retries");
            answer(StatusCode::SERVICE_UNAVAILABLE, "try again")
        }
    }
}

/// Wakes the task if its link `n` has news: a send never answered (the drive repairs it),
/// or a remote task that ended or asks something new.
async fn wakes(h: &Harness, task_id: &str, n: usize) -> Result<(), String> {
    let Some(remotes) = h.remotes() else {
        return Ok(());
    };
    let Some(rec) = h
        .store()
        .load_task(task_id)
        .await
        .map_err(|e| e.to_string())?
    else {
        return Ok(());
    };
    let Some(link) = rec.agent.remote.get(n - 1).filter(|l| !l.ended) else {
        return Ok(());
    };
    if rec.state().is_terminal() {
        return Ok(());
    }
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
            .wake_task(task_id)
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The callback's route.
pub fn routes() -> axum::Router<Arc<Harness>> {
    axum::Router::new().route(
        &format!("{}/{{task}}/{{n}}", crate::remote::CALLBACK_PATH),
        axum::routing::post(handle).layer(axum::extract::DefaultBodyLimit::max(MAX_BODY)),
    )
}
