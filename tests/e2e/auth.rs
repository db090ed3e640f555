//! Identity over HTTP, on both bindings and both stores: in `jwt` mode a request is who
//! its bearer token says (verified against a JWKS this test serves on loopback), a bad or
//! missing token gets 401 with a challenge and learns nothing, a token binds the sender
//! of its messages, and a stranger with a valid token sees nothing of another's task. In
//! every mode nobody acts as the harness's own id.

use harness_e2e::identity::*;
use harness_e2e::participants::AGENT_ID;
use harness_e2e::*;
use serde_json::{json, Value};

async fn jwt_server(idp: &Idp, backend: Backend) -> Option<Server> {
    let args = idp.server_args();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Server::start_on(backend, &args).await
}

/// A message from whoever sends it, on `task` when given.
fn message(prefix: &str, task: Option<&str>) -> Value {
    let mut m = user_message(&unique(prefix), "hello");
    if let Some(t) = task {
        m["taskId"] = json!(t);
    }
    m
}

// ------------------------------------------------------------------------ valid tokens

async fn a_valid_token_is_its_bearer(backend: Backend) {
    let idp = Idp::start().await;
    let Some(s) = jwt_server(&idp, backend).await else {
        return;
    };
    let rs = Who::Token(idp.token("alice"));
    let es = Who::Token(idp.sign(Alg::Es256, Some(EC_KID), &Idp::claims("alice")));
    for via in Via::BOTH {
        let task = send(&s, &rs, via, message("tck-complete-task", None))
            .await
            .ok()["task"]
            .clone();
        assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
        let people = &task["metadata"][participants::TASK_KEY]["participants"];
        assert_eq!(
            people[0]["id"], "alice",
            "the token's subject reports it: {task}"
        );
        let id = task_id(&task);
        // The other key, the other algorithm: the same participant.
        assert_eq!(task_id(&get(&s, &es, via, &id).await.ok()), id);
        assert!(listed_ids(&list(&s, &es, via).await.ok()).contains(&id));
        // Naming yourself is allowed, in the header or the metadata.
        let both = Who::TokenAndHeader(idp.token("alice"), "alice".into());
        assert_eq!(task_id(&get(&s, &both, via, &id).await.ok()), id);
    }
    // The card stays public.
    let (status, card) = s.rest_get("/.well-known/agent-card.json").await;
    assert_eq!(status, 200);
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"],
        json!({"scheme": "Bearer", "bearerFormat": "JWT",
               "description": "A JWT from the deployment's identity provider; the participant is its identity claim"}),
        "{card}"
    );
    assert_eq!(
        card["securityRequirements"],
        json!([{"schemes": {"bearer": {}}}])
    );
}

#[tokio::test]
async fn a_valid_token_is_its_bearer_on_the_embedded_store() {
    a_valid_token_is_its_bearer(Backend::Embedded).await;
}

#[tokio::test]
async fn a_valid_token_is_its_bearer_on_dynamodb() {
    a_valid_token_is_its_bearer(Backend::DynamoDb).await;
}

// -------------------------------------------------------------------------- bad tokens

async fn bad_tokens_get_401_and_learn_nothing(backend: Backend) {
    let idp = Idp::start().await;
    let Some(s) = jwt_server(&idp, backend).await else {
        return;
    };
    let alice = Who::Token(idp.token("alice"));
    let task = send(
        &s,
        &alice,
        Via::JsonRpc,
        message("tck-input-required", None),
    )
    .await
    .ok()["task"]
        .clone();
    let id = task_id(&task);

    let with = |f: &dyn Fn(&mut Value)| {
        let mut c = Idp::claims("alice");
        f(&mut c);
        c
    };
    let valid = idp.token("alice");
    let (head_payload, signature) = valid.rsplit_once('.').expect("a JWT");
    let (head, _) = head_payload.split_once('.').expect("a JWT");
    // alice's header and signature over mallory's claims.
    let forged_claims = idp.token("mallory");
    let forged_payload = forged_claims.split('.').nth(1).expect("a JWT");
    let bad: Vec<(&str, Who, Option<&str>)> = vec![
        ("missing", Who::Nobody, None),
        (
            "not bearer",
            Who::Authorization("Basic YWxpY2U6cHc=".into()),
            Some("invalid_request"),
        ),
        (
            "not a JWT",
            Who::Token("not-a-token".into()),
            Some("invalid_token"),
        ),
        (
            "expired",
            Who::Token(idp.sign(
                Alg::Rs256,
                Some(RSA_KID),
                &with(&|c| c["exp"] = json!(1_000_000)),
            )),
            Some("invalid_token"),
        ),
        (
            "not valid yet",
            Who::Token(idp.sign(
                Alg::Rs256,
                Some(RSA_KID),
                &with(&|c| c["nbf"] = json!(c["exp"].as_u64().unwrap_or(0) + 3600)),
            )),
            Some("invalid_token"),
        ),
        (
            "wrong issuer",
            Who::Token(idp.sign(
                Alg::Rs256,
                Some(RSA_KID),
                &with(&|c| c["iss"] = json!("https://evil.example")),
            )),
            Some("invalid_token"),
        ),
        (
            // RFC 7519: `iss` is one StringOrURI; a list naming ours is no issuer (issue 48).
            "issuer as a list",
            Who::Token(idp.sign(
                Alg::Rs256,
                Some(RSA_KID),
                &with(&|c| c["iss"] = json!([c["iss"].clone(), "https://evil.example"])),
            )),
            Some("invalid_token"),
        ),
        (
            "wrong audience",
            Who::Token(idp.sign(
                Alg::Es256,
                Some(EC_KID),
                &with(&|c| c["aud"] = json!("another-service")),
            )),
            Some("invalid_token"),
        ),
        (
            "bad signature",
            Who::Token(format!("{head}.{forged_payload}.{signature}")),
            Some("invalid_token"),
        ),
        (
            "unknown kid",
            Who::Token(idp.sign(Alg::Es256, Some("rotated-away"), &Idp::claims("alice"))),
            Some("invalid_token"),
        ),
        (
            "key of another algorithm",
            Who::Token(idp.sign(Alg::Es256, Some(RSA_KID), &Idp::claims("alice"))),
            Some("invalid_token"),
        ),
        (
            "no subject",
            Who::Token(idp.sign(
                Alg::Rs256,
                Some(RSA_KID),
                &with(&|c| c["sub"] = Value::Null),
            )),
            Some("invalid_token"),
        ),
    ];
    for (what, who, code) in &bad {
        for via in Via::BOTH {
            let mut answers = every_operation(&s, who, via, &id).await;
            answers.push(list(&s, who, via).await);
            for answer in answers {
                answer.unauthenticated();
                let challenge = answer.header("www-authenticate").unwrap_or_default();
                assert!(
                    challenge.starts_with("Bearer realm="),
                    "{what}: {challenge:?}"
                );
                match code {
                    Some(code) => assert!(
                        challenge.contains(&format!("error=\"{code}\"")),
                        "{what}: {challenge}"
                    ),
                    None => assert!(!challenge.contains("error="), "{what}: {challenge}"),
                }
                assert!(!answer.text.contains(&id), "{what}: {}", answer.text);
            }
        }
    }
    // Nothing any of them sent moved or reached the task.
    let after = get(&s, &alice, Via::Rest, &id).await.ok();
    assert_eq!(user_messages(&after), user_messages(&task), "{after}");
    assert_eq!(state(&after), "TASK_STATE_INPUT_REQUIRED");
}

#[tokio::test]
async fn bad_tokens_get_401_and_learn_nothing_on_the_embedded_store() {
    bad_tokens_get_401_and_learn_nothing(Backend::Embedded).await;
}

#[tokio::test]
async fn bad_tokens_get_401_and_learn_nothing_on_dynamodb() {
    bad_tokens_get_401_and_learn_nothing(Backend::DynamoDb).await;
}

// ------------------------------------------------------------- a token binds its bearer

async fn a_token_speaks_for_its_bearer_only(backend: Backend) {
    let idp = Idp::start().await;
    let Some(s) = jwt_server(&idp, backend).await else {
        return;
    };
    let alice = Who::Token(idp.token("alice"));
    let as_bob = Who::TokenAndHeader(idp.token("alice"), "bob".into());
    let store = s.store();
    for via in Via::BOTH {
        // metadata.participant_id: bob, from alice's token.
        let mut claims_bob = message("tck-complete-task", None);
        claims_bob["metadata"] = json!({"participant_id": "bob"});
        let refused = send(&s, &alice, via, claims_bob.clone()).await;
        refused.invalid_params();
        assert!(
            refused.message().contains("the token authenticates alice"),
            "{}",
            refused.text
        );
        // X-Participant-Id: bob, with alice's token.
        let header = message("tck-complete-task", None);
        let refused = send(&s, &as_bob, via, header.clone()).await;
        refused.invalid_params();
        assert!(
            refused.message().contains("X-Participant-Id names bob"),
            "{}",
            refused.text
        );
        list(&s, &as_bob, via).await.invalid_params();
        // A name that cannot be a participant id is refused as such, not repeated back:
        // in the header and in the metadata alike.
        let long = "b".repeat(20_000);
        let as_long = Who::TokenAndHeader(idp.token("alice"), long.clone());
        let mut claims_long = message("tck-complete-task", None);
        claims_long["metadata"] = json!({"participant_id": long});
        for refused in [
            send(&s, &as_long, via, header.clone()).await,
            send(&s, &alice, via, claims_long.clone()).await,
        ] {
            refused.invalid_params();
            assert!(
                refused.message().contains("1 to 256 characters"),
                "{}",
                refused.text
            );
            assert!(refused.text.len() < 1_000, "{}", refused.text.len());
        }
        // Neither message was stored.
        for m in [&claims_bob, &header] {
            let id = m["messageId"].as_str().expect("id");
            for sender in ["alice", "bob"] {
                let stored = store.message_task("", sender, id).await.expect("read");
                assert_eq!(stored, None, "{id}");
            }
        }
    }
    assert!(listed_ids(&list(&s, &alice, Via::JsonRpc).await.ok()).is_empty());
    let bob = Who::Token(idp.token("bob"));
    assert!(listed_ids(&list(&s, &bob, Via::JsonRpc).await.ok()).is_empty());
}

#[tokio::test]
async fn a_token_speaks_for_its_bearer_only_on_the_embedded_store() {
    a_token_speaks_for_its_bearer_only(Backend::Embedded).await;
}

#[tokio::test]
async fn a_token_speaks_for_its_bearer_only_on_dynamodb() {
    a_token_speaks_for_its_bearer_only(Backend::DynamoDb).await;
}

// -------------------------------------------------------- a stranger with a valid token

/// Every operation on task `t`, as `who`.
async fn every_operation(s: &Server, who: &Who, via: Via, t: &str) -> Vec<Answer> {
    vec![
        get(s, who, via, t).await,
        cancel(s, who, via, t).await,
        subscribe(s, who, via, t).await,
        send(s, who, via, message("tck-complete-task", Some(t))).await,
        create_push(s, who, via, t, "hook").await,
        get_push(s, who, via, t, "hook").await,
        list_push(s, who, via, t).await,
        delete_push(s, who, via, t, "hook").await,
    ]
}

async fn bobs_token_never_sees_alices_task(backend: Backend) {
    let idp = Idp::start().await;
    let Some(s) = jwt_server(&idp, backend).await else {
        return;
    };
    let alice = Who::Token(idp.token("alice"));
    let bob = Who::Token(idp.token("bob"));
    let task = send(
        &s,
        &alice,
        Via::JsonRpc,
        message("tck-input-required", None),
    )
    .await
    .ok()["task"]
        .clone();
    let id = task_id(&task);
    assert_eq!(
        create_push(&s, &alice, Via::JsonRpc, &id, "hook")
            .await
            .ok()["id"],
        "hook"
    );
    let missing = unique("missing-task");
    for via in Via::BOTH {
        let alices = every_operation(&s, &bob, via, &id).await;
        let nobodys = every_operation(&s, &bob, via, &missing).await;
        for (a, m) in alices.iter().zip(&nobodys) {
            a.not_found();
            assert_eq!(
                a.text.replace(&id, "<TASK>"),
                m.text.replace(&missing, "<TASK>"),
                "{via:?}: alice's task answers bob as a missing one"
            );
        }
        assert!(listed_ids(&list(&s, &bob, via).await.ok()).is_empty());
    }
    // alice's task and webhook are as she left them: nothing bob sent reached it.
    let after = get(&s, &alice, Via::Rest, &id).await.ok();
    assert_eq!(state(&after), "TASK_STATE_INPUT_REQUIRED", "{after}");
    assert_eq!(user_messages(&after), user_messages(&task), "{after}");
    assert_eq!(
        get_push(&s, &alice, Via::Rest, &id, "hook").await.ok()["url"],
        "https://example.com/hook"
    );
}

#[tokio::test]
async fn bobs_token_never_sees_alices_task_on_the_embedded_store() {
    bobs_token_never_sees_alices_task(Backend::Embedded).await;
}

#[tokio::test]
async fn bobs_token_never_sees_alices_task_on_dynamodb() {
    bobs_token_never_sees_alices_task(Backend::DynamoDb).await;
}

// ------------------------------------------------------------- the provider being down

/// With no JWKS to be had, every request fails closed with 503 and Retry-After, on both
/// bindings, and the card is still served.
#[tokio::test]
async fn an_unreachable_identity_provider_fails_closed_with_503() {
    let idp = Idp::start().await;
    // A port nothing listens on.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let url = format!("http://127.0.0.1:{closed}/.well-known/jwks.json");
    let args = [
        "--auth",
        "jwt",
        "--jwks-url",
        &url,
        "--jwt-issuer",
        ISSUER,
        "--jwt-audience",
        AUDIENCE,
        FAIL_CLOSED,
    ];
    let s = Server::start_with(&args).await;
    let alice = Who::Token(idp.token("alice"));
    for via in Via::BOTH {
        let answer = list(&s, &alice, via).await;
        answer.refused(-32603, 503, "UNAVAILABLE", "UNAVAILABLE");
        assert_eq!(answer.header("retry-after").as_deref(), Some("30"));
        assert_eq!(answer.header("www-authenticate"), None);
    }
    assert_eq!(s.rest_get("/.well-known/agent-card.json").await.0, 200);
}

/// A token signed by a key the provider published after the harness fetched its keys
/// (a rotation) is verified after one more fetch; forged key ids do not make it fetch
/// again and again.
#[tokio::test]
async fn an_unknown_key_id_refetches_the_jwks_once_not_per_request() {
    let idp = Idp::start().await;
    let s = jwt_server(&idp, Backend::Embedded)
        .await
        .expect("the embedded store");
    let alice = Who::Token(idp.token("alice"));
    list(&s, &alice, Via::JsonRpc).await.ok();
    let after_first = idp.fetches();
    assert_eq!(after_first, 1);
    for _ in 0..20 {
        let forged = Who::Token(idp.sign(Alg::Es256, Some(&unique("kid")), &Idp::claims("a")));
        list(&s, &forged, Via::Rest).await.unauthenticated();
    }
    assert!(
        idp.fetches() <= after_first + 1,
        "{} fetches for 20 unknown key ids",
        idp.fetches()
    );
}

// ----------------------------------------------------- nobody acts as the harness itself

async fn nobody_acts_as_the_harness(backend: Backend) {
    let idp = Idp::start().await;
    let Some(open) = Server::start_on(backend, &[FAIL_CLOSED]).await else {
        return;
    };
    let Some(verified) = jwt_server(&idp, backend).await else {
        return;
    };
    // alice's task lists the harness as its assignee.
    let alice = Who::header("alice");
    let task = send(
        &open,
        &alice,
        Via::JsonRpc,
        message("tck-input-required", None),
    )
    .await
    .ok()["task"]
        .clone();
    let id = task_id(&task);
    let people = &task["metadata"][participants::TASK_KEY]["participants"];
    assert_eq!(people[1]["id"], AGENT_ID, "{task}");

    let as_harness = [
        (&open, Who::header(AGENT_ID)),
        (&verified, Who::Token(idp.token(AGENT_ID))),
    ];
    for (s, who) in &as_harness {
        for via in Via::BOTH {
            let listed = list(s, who, via).await;
            listed.invalid_params();
            assert!(listed.message().contains("reserved"), "{}", listed.text);
            get(s, who, via, &id).await.invalid_params();
            let m = message("tck-complete-task", Some(&id));
            send(s, who, via, m.clone()).await.invalid_params();
            let fresh = message("tck-complete-task", None);
            send(s, who, via, fresh.clone()).await.invalid_params();
            for m in [&m, &fresh] {
                let mid = m["messageId"].as_str().expect("id");
                let stored = s.store().message_task("", AGENT_ID, mid).await;
                assert_eq!(stored.expect("read"), None);
            }
        }
    }
    // Nor by naming it in a message's metadata, whoever the request is from.
    for via in Via::BOTH {
        let mut m = message("tck-complete-task", Some(&id));
        m["metadata"] = json!({"participant_id": AGENT_ID});
        send(&open, &alice, via, m).await.invalid_params();
    }
    let after = get(&open, &alice, Via::Rest, &id).await.ok();
    assert_eq!(user_messages(&after), user_messages(&task), "{after}");
    assert_eq!(state(&after), "TASK_STATE_INPUT_REQUIRED");
    // Nor by listing it as a person on a new task, nor through a sub-task made with /task,
    // whose first message is from the participant who asked.
    let people = json!([
        participants::participant("alice", "human", "reporter"),
        participants::participant("walt", "human", "watcher"),
    ]);
    for via in Via::BOTH {
        let posing = json!([participants::participant(AGENT_ID, "human", "admin")]);
        let m = json!({"messageId": unique("tck-input-required"), "role": "ROLE_USER",
            "parts": [{"text": "x"}, participants::task_envelope_part("x", "x", posing)]});
        let refused = send(&open, &alice, via, m.clone()).await;
        refused.invalid_params();
        assert!(
            refused.message().contains("the harness"),
            "{}",
            refused.text
        );
        let mid = m["messageId"].as_str().expect("id");
        assert_eq!(
            open.store()
                .message_task("", "alice", mid)
                .await
                .expect("read"),
            None
        );

        let m = json!({"messageId": unique("tck-input-required"), "role": "ROLE_USER",
            "parts": [{"text": "x"}, participants::task_envelope_part("x", "x", people.clone())]});
        let parent = task_id(&send(&open, &alice, via, m).await.ok()["task"]);
        let mut order = message("tck-input-required", Some(&parent));
        order["parts"] = json!([{"text": "/task walt Buy the paint"}]);
        send(&open, &alice, via, order).await.ok();
        let child = get(&open, &alice, via, &format!("{parent}.1")).await.ok();
        assert_eq!(
            child["history"][0]["metadata"]["participant_id"], "alice",
            "{child}"
        );
    }
    // Each attempt is audited.
    let trail = open.store().audit_trail("").await.expect("audit");
    let refused = trail
        .iter()
        .filter(|r| r.participant == AGENT_ID && !r.accepted)
        .count();
    assert!(refused >= 4 * 2, "{refused} audited refusals: {trail:?}");
}

#[tokio::test]
async fn nobody_acts_as_the_harness_on_the_embedded_store() {
    nobody_acts_as_the_harness(Backend::Embedded).await;
}

#[tokio::test]
async fn nobody_acts_as_the_harness_on_dynamodb() {
    nobody_acts_as_the_harness(Backend::DynamoDb).await;
}
