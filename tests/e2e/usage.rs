//! Usage per task (issue 50): a task keeps its model calls and tokens per model id (its
//! turns, a help decision's calls, the summary calls of compaction), and its members see
//! them in `Task.metadata["io.github.madarauchiha-314.tiny-harness/usage"]` on every
//! answer that holds the task (SendMessage, a stream's Task, GetTask, ListTasks); a
//! stranger gets the not-found of a missing task; the numbers stand after a restart; and
//! `/metrics` counts the same calls and tokens under the same `model` labels, which a
//! client cannot make up.
//!
//! The LLM agent runs on two scripted models from a models file: `a`, the default, asks
//! alice; alice chooses `b` with `/model b` and replies; `b`, whose context budget is too
//! small for the task, compacts the conversation (a summary call) and answers. A help
//! decision's call counts on the task's model like a turn.

use std::path::PathBuf;

use harness_e2e::participants::*;
use harness_e2e::*;
use serde_json::{json, Value};

on_both_stores!(
    usage_is_kept_per_model_shown_to_members_and_survives_a_restart,
    a_help_decisions_calls_count_on_the_tasks_model,
);

/// Where a task shows its usage.
const USAGE_KEY: &str = "io.github.madarauchiha-314.tiny-harness/usage";
const QUESTION: &str = "Which colour?";
const ANSWER_B: &str = "Model b painted the shed blue.";

/// The models file and its two scripts (the file is removed at drop).
struct Models {
    a: Script,
    b: Script,
    file: PathBuf,
}

impl Models {
    fn new() -> Models {
        let ask = json!({"tool_calls": [{"name": "ask_participant", "arguments": {
            "participant_id": "alice", "question": QUESTION}}]});
        let a = Script::new(json!([ask, {"text": "Model a painted it."}]));
        let b = Script::new(json!([{"text": "b never answers turn 0"}, {"text": ANSWER_B}]));
        let file = std::env::temp_dir().join(format!("{}.toml", unique("harness-models")));
        let path = |s: &Script| s.model().trim_start_matches("scripted:").to_owned();
        let toml = format!(
            "default = \"a\"\n\n\
             [models.a]\nprovider = \"scripted\"\nmodel = {:?}\n\n\
             [models.b]\nprovider = \"scripted\"\nmodel = {:?}\ncontext_tokens = 500\n",
            path(&a),
            path(&b)
        );
        std::fs::write(&file, toml).expect("write the models file");
        Models { a, b, file }
    }
}

impl Drop for Models {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
    }
}

/// The model id a script's requests carry, which the metrics count under:
/// `scripted:<its file's stem>`.
fn id_of(script: &Script) -> String {
    let model = script.model();
    let stem = std::path::Path::new(model.trim_start_matches("scripted:"))
        .file_stem()
        .and_then(|s| s.to_str())
        .expect("a file stem")
        .to_owned();
    format!("scripted:{stem}")
}

/// What a script's model reported for every request it was sent: the calls, and the
/// tokens as the scripted model counts them (the request's estimated size in; a token
/// per four bytes of the answer's text out, the summary's for a summary call).
fn reported(script: &Script, texts: &[(u64, &str)]) -> Value {
    let requests: Vec<common::models::ChatRequest> = script
        .requests()
        .into_iter()
        .map(|r| serde_json::from_value(r).expect("a request"))
        .collect();
    let mut out = 0;
    for r in &requests {
        let text = match r.purpose {
            common::models::Purpose::Summary => common::models::scripted::DEFAULT_SUMMARY,
            _ => (texts.iter())
                .find(|(turn, _)| *turn == r.turn as u64)
                .map_or("", |(_, t)| t),
        };
        out += text.len().div_ceil(4) as u64;
    }
    let input: u64 = (requests.iter())
        .map(|r| common::models::estimate_tokens(r) as u64)
        .sum();
    json!({"calls": requests.len(), "input_tokens": input, "output_tokens": out})
}

fn usage(task: &Value) -> &Value {
    &task["metadata"][USAGE_KEY]
}

/// The value of the sample line `name` (labels included, as printed), if present.
fn sample(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

async fn command(s: &Server, id: &str, text: &str) -> String {
    let task = send_as(s, Some("alice"), reply_message(&unique("m"), id, text)).await;
    status_text(&task).to_owned()
}

/// A GetTask as `who` that must fail: its JSON-RPC error, with `id` written as `ID`.
async fn get_refused(s: &Server, who: &str, id: &str) -> Value {
    let answer = rpc_as(s, Some(who), "GetTask", json!({"id": id})).await;
    assert!(
        answer.get("result").is_none(),
        "{who} got the task: {answer}"
    );
    serde_json::from_str(&answer["error"].to_string().replace(id, "ID")).expect("JSON")
}

async fn usage_is_kept_per_model_shown_to_members_and_survives_a_restart(backend: Backend) {
    let models = Models::new();
    let file = models.file.display().to_string();
    let args = ["--agent", "llm", "--models", &file];
    let Some(mut s) = Server::start_on(backend, &args).await else {
        return;
    };
    let (a, b) = (id_of(&models.a), id_of(&models.b));

    // a asks alice: its one call is on the task, in the answer that says so.
    let asked = send_as(
        &s,
        Some("alice"),
        user_message(&unique("m"), "Paint the shed"),
    )
    .await;
    assert_eq!(status_text(&asked), QUESTION, "{asked}");
    let id = task_id(&asked);
    let of_a = reported(&models.a, &[]);
    assert_eq!(of_a["calls"], 1);
    let mut want = json!({"calls": 1, "input_tokens": of_a["input_tokens"],
                          "output_tokens": 0, "models": {a.as_str(): of_a}});
    assert_eq!(usage(&asked), &want, "{asked}");

    // A model no catalog names is no choice: a client makes up no model, nor a label.
    let refused = command(&s, &id, "/model openai:made-up").await;
    assert!(refused.starts_with("unknown model"), "{refused}");
    assert_eq!(command(&s, &id, "/model b").await, "model for this task: b");

    // alice's streamed reply: the stream's Task shows a's call; b compacts, then answers.
    let body = json!({"jsonrpc": "2.0", "id": unique("stream"), "method": "SendStreamingMessage",
                      "params": send_params(reply_message(&unique("m"), &id, "Blue"))});
    let resp = s
        .rpc_raw(&headers_as(Some("alice")), body.to_string())
        .await;
    let events = read_sse(expect_stream(resp, "the reply").await).await;
    assert_eq!(events[0].kind(), "task", "{events:?}");
    assert_eq!(usage(events[0].payload()), &want, "{events:?}");
    let done = wait_for_state_as(
        &s,
        "alice",
        &id,
        "TASK_STATE_COMPLETED",
        std::time::Duration::from_secs(60),
    )
    .await;
    assert_eq!(status_text(&done), ANSWER_B, "{done}");
    let of_b = reported(&models.b, &[(1, ANSWER_B)]);
    assert_eq!(of_b["calls"], 2, "a summary call and a turn: {of_b}");
    let sum = |k: &str| of_a[k].as_u64().unwrap() + of_b[k].as_u64().unwrap();
    want = json!({"calls": 3, "input_tokens": sum("input_tokens"),
                  "output_tokens": sum("output_tokens"),
                  "models": {a.as_str(): of_a, b.as_str(): of_b}});
    assert_eq!(usage(&done), &want, "{done}");
    let listed = rpc_ok_as(&s, Some("alice"), "ListTasks", json!({})).await;
    assert_eq!(usage(&listed["tasks"][0]), &want, "{listed}");

    // A stranger gets what a missing task gets, and lists nothing.
    let missing = format!("{id}-missing");
    let stranger = get_refused(&s, "mallory", &id).await;
    assert_eq!(stranger, get_refused(&s, "mallory", &missing).await);
    let theirs = rpc_ok_as(&s, Some("mallory"), "ListTasks", json!({})).await;
    assert!(!theirs.to_string().contains(USAGE_KEY), "{theirs}");

    // The metrics count the same calls and tokens, each under its model's id, and no
    // label a client wrote.
    let text = (s.http.get(s.endpoint("/metrics")).send().await)
        .expect("/metrics")
        .text()
        .await
        .expect("text");
    assert!(!text.contains("made-up"), "{text}");
    for (model, counts) in [(&a, &of_a), (&b, &of_b)] {
        for (name, key) in [
            ("harness_model_calls_total", "calls"),
            ("harness_model_tokens_in_total", "input_tokens"),
            ("harness_model_tokens_out_total", "output_tokens"),
        ] {
            let line = format!("{name}{{model=\"{model}\"}}");
            assert_eq!(sample(&text, &line), counts[key].as_u64(), "{line}: {text}");
        }
    }

    // The numbers are stored with the task.
    s.restart().await;
    let after = get_task_as(&s, "alice", &id).await;
    assert_eq!(usage(&after), &want, "{after}");
}

/// `request_help` makes a `help.decided` call of the task's model: it counts on the task
/// like the turn that asked for it.
async fn a_help_decisions_calls_count_on_the_tasks_model(backend: Backend) {
    let script = Script::new(json!([
        {"tool_calls": [{"name": "request_help", "arguments": {
            "need": "Which region?", "blocking_work": false, "participant_id": ANONYMOUS}}]},
        {"tool_calls": [{"name": "decide_help", "arguments": {
            "route": "ask", "participant_id": ANONYMOUS, "question": QUESTION}}]},
    ]));
    let Some(s) = llm_server(backend, &script).await else {
        return;
    };
    let asked = send_as(&s, None, user_message(&unique("m"), "Deploy the service")).await;
    assert_eq!(status_text(&asked), QUESTION, "{asked}");
    let of_model = reported(&script, &[]);
    assert_eq!(
        of_model["calls"], 2,
        "the turn and the decision: {of_model}"
    );
    let want = json!({"calls": 2, "input_tokens": of_model["input_tokens"], "output_tokens": 0,
                      "models": {id_of(&script): of_model}});
    assert_eq!(usage(&asked), &want, "{asked}");
}
