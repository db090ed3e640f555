//! Webhook secrets are their creator's (issue 17, item 4), on both bindings and both
//! stores: a config's token and credentials are shown to the participant who created it
//! and to no one else who may see the config (not in any byte of their answers); a create
//! reusing the id of someone else's config is refused and leaves it as it was (its webhook
//! still gets the task's events with its creator's token); the creator or an admin deletes
//! a config, another reporter may not; a URL carrying a user name or password is refused
//! without the password in the answer or in the server's log.
//!
//! Every task here is started by alice (reporter) with a task envelope naming ada (admin)
//! and rita (a second reporter); the harness is the assignee.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use harness_e2e::identity::*;
use harness_e2e::participants::{participant, task_envelope_part};
use harness_e2e::*;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

fn alice() -> Who {
    Who::header("alice")
}
fn ada() -> Who {
    Who::header("ada")
}
fn rita() -> Who {
    Who::header("rita")
}

/// A server that knows no one by default, on `backend`; None when DynamoDB Local is not
/// configured.
async fn server(backend: Backend) -> Option<Server> {
    Server::start_on(backend, &[FAIL_CLOSED]).await
}

/// alice's new task (waiting for input), with ada as admin and rita as a second reporter.
async fn team_task(s: &Server, via: Via) -> String {
    let people = json!([
        participant("alice", "human", "reporter"),
        participant("ada", "human", "admin"),
        participant("rita", "human", "reporter"),
    ]);
    let m = json!({"messageId": unique("tck-input-required"), "role": "ROLE_USER",
        "parts": [{"text": "Paint the shed"}, task_envelope_part("Shed", "Paint the shed", people)]});
    let task = send(s, &alice(), via, m).await.ok()["task"].clone();
    assert_eq!(state(&task), "TASK_STATE_INPUT_REQUIRED", "{task}");
    task_id(&task)
}

/// A config of task `task` with id `id`, a notification token and Bearer credentials.
fn config(task: &str, id: &str, url: &str, token: &str, credentials: &str) -> Value {
    json!({"taskId": task, "id": id, "url": url, "token": token,
        "authentication": {"scheme": "Bearer", "credentials": credentials}})
}

/// Checks that the server's log holds none of `secrets` (when the test can read it).
fn log_holds_none_of(s: &Server, secrets: &[&str]) {
    let Some(log) = s.log_text() else { return };
    assert!(!log.is_empty(), "the server's log was not captured");
    for secret in secrets {
        assert!(!log.contains(secret), "the server logged {secret}:\n{log}");
    }
}

/// alice's configs (one created, one attached to her message) show their secrets to her
/// and to no one else: ada (an admin) and rita (a reporter) get them by Get and List
/// without token or credentials, in no byte of the answer.
async fn only_the_creator_sees_a_webhooks_secrets(backend: Backend) {
    let Some(s) = server(backend).await else {
        return;
    };
    for via in Via::BOTH {
        let id = team_task(&s, via).await;
        let (token, credentials) = (unique("alices-token"), unique("alices-credentials"));
        let made = config(&id, "made", "https://example.com/a", &token, &credentials);
        create_push_config(&s, &alice(), via, made).await.ok();
        let (sent_token, sent_credentials) = (unique("sent-token"), unique("sent-credentials"));
        let sent = config(
            &id,
            "sent",
            "https://example.com/b",
            &sent_token,
            &sent_credentials,
        );
        let m = reply_message(&unique("tck-input-required"), &id, "and tell me");
        send_with_config(&s, &alice(), via, m, sent).await.ok();
        let secrets = [&token, &credentials, &sent_token, &sent_credentials].map(String::as_str);

        for other in [ada(), rita()] {
            for config_id in ["made", "sent"] {
                let got = get_push(&s, &other, via, &id, config_id).await;
                let shown = got.ok();
                assert_eq!(shown["id"], config_id, "{shown}");
                assert_eq!(shown["authentication"]["scheme"], "Bearer", "{shown}");
                for secret in secrets {
                    assert!(
                        !got.text.contains(secret),
                        "{other:?} {via:?}: {}",
                        got.text
                    );
                }
            }
            let listed = list_push(&s, &other, via, &id).await;
            assert_eq!(listed.ok()["configs"].as_array().map(Vec::len), Some(2));
            for secret in secrets {
                assert!(
                    !listed.text.contains(secret),
                    "{other:?} {via:?}: {}",
                    listed.text
                );
            }
        }

        let mine = get_push(&s, &alice(), via, &id, "made").await.ok();
        assert_eq!(mine["token"], token.as_str(), "{mine}");
        assert_eq!(mine["authentication"]["credentials"], credentials.as_str());
        let listed = list_push(&s, &alice(), via, &id).await.ok();
        let sent = listed["configs"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["id"] == "sent"))
            .cloned()
            .unwrap_or_else(|| panic!("alice lists her sent config: {listed}"));
        assert_eq!(sent["token"], sent_token.as_str(), "{sent}");
        assert_eq!(
            sent["authentication"]["credentials"],
            sent_credentials.as_str()
        );
        log_holds_none_of(&s, &secrets);
    }
}

/// ada (an admin) creating a config with the id of alice's, directly or on a message, is
/// refused without alice's secrets in the answer; alice's config keeps its URL and token,
/// and its webhook gets the task's next event with her token while ada's gets nothing.
/// alice re-creating her own id replaces it.
async fn a_create_reusing_someone_elses_config_id_is_refused(backend: Backend) {
    let Some(s) = server(backend).await else {
        return;
    };
    for via in Via::BOTH {
        let (alices_hook, adas_hook) = (Hook::start().await, Hook::start().await);
        let id = team_task(&s, via).await;
        let token = unique("alices-token");
        let alices = config(&id, "hook", &alices_hook.url, &token, "alices-credentials");
        create_push_config(&s, &alice(), via, alices.clone())
            .await
            .ok();

        let adas = config(
            &id,
            "hook",
            &adas_hook.url,
            "adas-token",
            "adas-credentials",
        );
        let refused = create_push_config(&s, &ada(), via, adas.clone()).await;
        refused.invalid_params();
        assert!(
            refused
                .message()
                .contains("created a push notification config"),
            "{}",
            refused.text
        );
        assert!(!refused.text.contains(&token), "{}", refused.text);
        let before = s.store().load_task(&id).await.expect("load").expect("task");
        let m = reply_message(&unique("tck-input-required"), &id, "tell me instead");
        let on_message = send_with_config(&s, &ada(), via, m.clone(), adas).await;
        on_message.invalid_params();
        assert!(!on_message.text.contains(&token), "{}", on_message.text);
        // Refused before anything was stored: the message is not in the task.
        let after = s.store().load_task(&id).await.expect("load").expect("task");
        assert_eq!(
            (after.version, after.last_seq),
            (before.version, before.last_seq)
        );
        let mid = m["messageId"].as_str().expect("id");
        assert_eq!(s.store().message_task("", "ada", mid).await, Ok(None));

        let kept = get_push(&s, &alice(), via, &id, "hook").await.ok();
        assert_eq!(kept["url"], alices_hook.url.as_str(), "{kept}");
        assert_eq!(kept["token"], token.as_str(), "{kept}");
        assert_eq!(kept["authentication"]["credentials"], "alices-credentials");

        cancel(&s, &alice(), via, &id).await.ok();
        let got = alices_hook.wait_for("TASK_STATE_CANCELED").await;
        assert!(
            got.iter()
                .all(|r| r.token.as_deref() == Some(token.as_str())),
            "{got:?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            adas_hook.received().is_empty(),
            "{:?}",
            adas_hook.received()
        );

        // Her own id, again: replaced (an idempotent create stays possible).
        let new_token = unique("alices-new-token");
        let again = config(
            &id,
            "hook",
            &alices_hook.url,
            &new_token,
            "alices-credentials",
        );
        create_push_config(&s, &alice(), via, again).await.ok();
        let replaced = get_push(&s, &alice(), via, &id, "hook").await.ok();
        assert_eq!(replaced["token"], new_token.as_str(), "{replaced}");
    }
}

/// The creator or an admin deletes a config; rita, a reporter who did not create it, is
/// refused and it stays.
async fn the_creator_or_an_admin_deletes_a_config(backend: Backend) {
    let Some(s) = server(backend).await else {
        return;
    };
    for via in Via::BOTH {
        let id = team_task(&s, via).await;
        for (creator, config_id) in [(alice(), "alices"), (ada(), "adas")] {
            let c = config(&id, config_id, "https://example.com/h", "t", "c");
            create_push_config(&s, &creator, via, c).await.ok();
        }
        let refused = delete_push(&s, &rita(), via, &id, "alices").await;
        refused.invalid_params();
        assert!(
            refused.message().contains("or an admin may delete it"),
            "{}",
            refused.text
        );
        get_push(&s, &alice(), via, &id, "alices").await.ok();
        delete_push(&s, &alice(), via, &id, "adas")
            .await
            .invalid_params();
        get_push(&s, &ada(), via, &id, "adas").await.ok();

        delete_push(&s, &ada(), via, &id, "alices").await.ok();
        delete_push(&s, &ada(), via, &id, "adas").await.ok();
        let left = list_push(&s, &alice(), via, &id).await.ok();
        assert_eq!(left["configs"].as_array().map(Vec::len).unwrap_or(0), 0);
    }
}

/// A webhook URL with a user name or password is refused, on Create and on SendMessage,
/// with an answer that does not hold the password, and the server's log holds it nowhere.
async fn a_url_with_a_user_and_password_is_refused_and_never_logged(backend: Backend) {
    let Some(s) = server(backend).await else {
        return;
    };
    for via in Via::BOTH {
        let id = team_task(&s, via).await;
        let password = unique("hunter2");
        for url in [
            format!("https://alice:{password}@hooks.example/x"),
            format!("https://{password}@hooks.example/x"),
            format!("https://alice:{password}@hooks example/x"),
        ] {
            let c = json!({"taskId": id, "id": "userinfo", "url": url});
            let refused = create_push_config(&s, &alice(), via, c).await;
            refused.invalid_params();
            assert!(
                refused.message().contains("user name or password"),
                "{}",
                refused.text
            );
            assert!(!refused.text.contains(&password), "{}", refused.text);

            let m = json!({"messageId": unique("tck-input-required"), "role": "ROLE_USER",
                "parts": [{"text": "a new task"}]});
            let sent = send_with_config(&s, &alice(), via, m.clone(), json!({"url": url})).await;
            sent.invalid_params();
            assert!(!sent.text.contains(&password), "{}", sent.text);
            let message_id = m["messageId"].as_str().unwrap_or_default();
            let stored = s.store().message_task("", "alice", message_id).await;
            assert_eq!(stored, Ok(None));
        }
        let none = list_push(&s, &alice(), via, &id).await.ok();
        assert!(!none.to_string().contains(&password), "{none}");
        log_holds_none_of(&s, &[&password]);
    }
}

on_both_stores!(
    only_the_creator_sees_a_webhooks_secrets,
    a_create_reusing_someone_elses_config_id_is_refused,
    the_creator_or_an_admin_deletes_a_config,
    a_url_with_a_user_and_password_is_refused_and_never_logged,
);

// ------------------------------------------------------------------ a webhook

/// One delivery a [`Hook`] received: its notification token and the task state its
/// statusUpdate carries.
#[derive(Debug, Clone)]
struct Delivery {
    token: Option<String>,
    state: Option<String>,
}

/// A webhook on 127.0.0.1 that answers 200 to every request and records it.
struct Hook {
    url: String,
    got: Arc<Mutex<Vec<Delivery>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Hook {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Hook {
    async fn start() -> Hook {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind a hook");
        let port = listener.local_addr().expect("its address").port();
        let got = Arc::new(Mutex::new(Vec::new()));
        let log = got.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let log = log.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 8192];
                    loop {
                        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                            match conn.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                            continue;
                        };
                        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                        let header = |name: &str| {
                            head.lines()
                                .filter_map(|l| l.split_once(':'))
                                .find(|(k, _)| k.trim() == name)
                                .map(|(_, v)| v.trim().to_owned())
                        };
                        let len: usize = header("content-length")
                            .and_then(|v| v.parse().ok())
                            .unwrap_or(0);
                        // The token as sent (the head was lower-cased for the names only).
                        let raw = String::from_utf8_lossy(&buf[..end]).into_owned();
                        let token = raw
                            .lines()
                            .filter_map(|l| l.split_once(':'))
                            .find(|(k, _)| {
                                k.trim().eq_ignore_ascii_case("x-a2a-notification-token")
                            })
                            .map(|(_, v)| v.trim().to_owned());
                        while buf.len() < end + 4 + len {
                            match conn.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        }
                        let body: Value = serde_json::from_slice(&buf[end + 4..end + 4 + len])
                            .unwrap_or_default();
                        buf.drain(..end + 4 + len);
                        let state = body["statusUpdate"]["status"]["state"]
                            .as_str()
                            .map(str::to_owned);
                        log.lock()
                            .expect("the hook's log")
                            .push(Delivery { token, state });
                        let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
                        if conn.write_all(ok).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Hook {
            url: format!("http://127.0.0.1:{port}/hook"),
            got,
            task,
        }
    }

    fn received(&self) -> Vec<Delivery> {
        self.got.lock().expect("the hook's log").clone()
    }

    /// Waits (10 s at most) for a statusUpdate with `state`; every delivery so far.
    async fn wait_for(&self, state: &str) -> Vec<Delivery> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let got = self.received();
            if got.iter().any(|d| d.state.as_deref() == Some(state)) {
                return got;
            }
            assert!(Instant::now() < deadline, "no {state} delivered: {got:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
