//! Check-then-act races, each made to happen (issue 48, item 8): a store wrapper runs a
//! conflicting write at the critical point, between what a request checked and what it
//! writes, on the embedded store and on DynamoDB (Local, when `tests/run` names it).

mod support;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use common::a2a::{
    Call, Message, Part, Role, SendMessageConfiguration, SendMessageRequest, StreamResponse,
    TaskPushNotificationConfig, TaskState,
};
use common::config::Config;
use common::engine::transition::{created, new_id, new_task, set_status};
use common::ext::task::{Participant, ParticipantKind, Role as ParticipantRole, TaskExtension};
use common::ops::{execute, Answer, Caller, Harness};
use common::sealing::PushKey;
use common::store::{
    Admit, Along, AuditRecord, Due, DynamoStore, EmbeddedStore, InboundMessage, LoggedEvent,
    PushConfigRecord, Quota, Store, StoreError, TaskPage, TaskQuery, TaskRecord,
};
use futures::future::BoxFuture;

/// Where a hook runs: just before a commit that stores the message `message_id`, or just
/// after the first read of task `task_id` (its whole record, or its push configs), whose
/// caller then acts on what it read.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Point {
    Commit(String),
    Load(String),
    ListPush(String),
}

/// The conflicting write: given the store beneath.
type Hook = Box<dyn FnOnce(Arc<dyn Store>) -> BoxFuture<'static, ()> + Send>;

/// A store that runs each hook once, at its point, on the store beneath.
struct Interleaved {
    inner: Arc<dyn Store>,
    hooks: Mutex<Vec<(Point, Hook)>>,
}

impl Interleaved {
    fn new(inner: Arc<dyn Store>) -> Arc<Self> {
        Arc::new(Interleaved {
            inner,
            hooks: Mutex::new(Vec::new()),
        })
    }

    fn at(&self, point: Point, hook: Hook) {
        self.hooks.lock().unwrap().push((point, hook));
    }

    async fn run(&self, point: Point) {
        let hook = {
            let mut hooks = self.hooks.lock().unwrap();
            let found = hooks.iter().position(|(p, _)| *p == point);
            found.map(|i| hooks.remove(i).1)
        };
        if let Some(hook) = hook {
            hook(self.inner.clone()).await;
        }
    }
}

#[async_trait]
impl Store for Interleaved {
    async fn create_task(
        &self,
        record: &TaskRecord,
        events: &[StreamResponse],
        message: Option<&InboundMessage>,
    ) -> Result<TaskRecord, StoreError> {
        self.inner.create_task(record, events, message).await
    }

    async fn commit_along(
        &self,
        record: &TaskRecord,
        expected_version: u64,
        events: &[StreamResponse],
        message: Option<&InboundMessage>,
        along: Along<'_>,
    ) -> Result<TaskRecord, StoreError> {
        if let Some(m) = message {
            self.run(Point::Commit(m.message.message_id.clone())).await;
        }
        (self.inner)
            .commit_along(record, expected_version, events, message, along)
            .await
    }

    async fn put_message(&self, message: &InboundMessage) -> Result<(), StoreError> {
        self.inner.put_message(message).await
    }

    async fn message_task(
        &self,
        tenant: &str,
        sender: &str,
        message_id: &str,
    ) -> Result<Option<String>, StoreError> {
        self.inner.message_task(tenant, sender, message_id).await
    }

    async fn load_task_for(
        &self,
        task_id: &str,
        admit: &Admit<'_>,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let loaded = self.inner.load_task_for(task_id, admit).await;
        self.run(Point::Load(task_id.to_owned())).await;
        loaded
    }

    async fn load_view(
        &self,
        task_id: &str,
        history: Option<usize>,
        artifacts: bool,
        admit: &Admit<'_>,
    ) -> Result<Option<TaskRecord>, StoreError> {
        (self.inner)
            .load_view(task_id, history, artifacts, admit)
            .await
    }

    async fn read_events(
        &self,
        task_id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        self.inner.read_events(task_id, after, limit).await
    }

    async fn list_tasks(&self, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        self.inner.list_tasks(query).await
    }

    async fn put_push_config(&self, record: &PushConfigRecord) -> Result<(), StoreError> {
        self.inner.put_push_config(record).await
    }

    async fn get_push_config(
        &self,
        task_id: &str,
        id: &str,
    ) -> Result<Option<PushConfigRecord>, StoreError> {
        self.inner.get_push_config(task_id, id).await
    }

    async fn list_push_configs(
        &self,
        task_id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<PushConfigRecord>, StoreError> {
        let listed = self.inner.list_push_configs(task_id, after, limit).await;
        self.run(Point::ListPush(task_id.to_owned())).await;
        listed
    }

    async fn advance_push_config(
        &self,
        record: &PushConfigRecord,
        from: u64,
    ) -> Result<bool, StoreError> {
        self.inner.advance_push_config(record, from).await
    }

    async fn delete_push_config(&self, task_id: &str, id: &str) -> Result<(), StoreError> {
        self.inner.delete_push_config(task_id, id).await
    }

    async fn audit(&self, record: &AuditRecord) -> Result<bool, StoreError> {
        self.inner.audit(record).await
    }

    async fn take_quota(
        &self,
        quota: Quota,
        participant: &str,
        hour: i64,
        limit: u64,
    ) -> Result<bool, StoreError> {
        (self.inner)
            .take_quota(quota, participant, hour, limit)
            .await
    }

    async fn record_agent_id(&self, id: &str) -> Result<(), StoreError> {
        self.inner.record_agent_id(id).await
    }

    async fn agent_ids(&self) -> Result<Vec<String>, StoreError> {
        self.inner.agent_ids().await
    }

    async fn audit_trail(&self, task_id: &str) -> Result<Vec<AuditRecord>, StoreError> {
        self.inner.audit_trail(task_id).await
    }

    fn changes(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.inner.changes()
    }

    fn wakeups(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.inner.wakeups()
    }

    fn pushes(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.inner.pushes()
    }

    async fn due_tasks(
        &self,
        leases_before: i64,
        woken_before: i64,
        limit: usize,
    ) -> Result<Due, StoreError> {
        (self.inner)
            .due_tasks(leases_before, woken_before, limit)
            .await
    }
}

/// The stores to race on: the embedded one, and DynamoDB when configured. The directory
/// is kept while the test runs.
async fn stores() -> Vec<(Arc<dyn Store>, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let embedded: Arc<dyn Store> = Arc::new(EmbeddedStore::open(dir.path()).expect("store"));
    let mut stores = vec![(embedded, Some(dir))];
    if let Some(client) = support::dynamo_client() {
        let table = support::fresh_table(&client).await;
        stores.push((Arc::new(DynamoStore::new(client, table)), None));
    }
    stores
}

/// A harness on `store` with the conformance agent, push on (delivered by no one here)
/// and `config`'s other settings.
fn harness(store: Arc<dyn Store>, config: Config) -> Arc<Harness> {
    let config = Config {
        push_key: Some(PushKey::generate()),
        push_in_process: false,
        push_allow_private_urls: true,
        ..config
    };
    Harness::new(store, common::agent::conformance(), config).expect("harness")
}

/// A task of alice's (its reporter and an admin), with bob watching and the harness's
/// agent as assignee, stored WORKING.
async fn alices_task(store: &dyn Store) -> TaskRecord {
    let mut ext = TaskExtension::from_text("Count the sheds");
    for (id, kind, role) in [
        ("alice", ParticipantKind::Human, ParticipantRole::Admin),
        ("bob", ParticipantKind::Human, ParticipantRole::Watcher),
        (
            "tiny-harness",
            ParticipantKind::Agent,
            ParticipantRole::Assignee,
        ),
    ] {
        ext.add(Participant::new(id, kind, role));
    }
    let mut first = text_message(&new_id(), "Count the sheds");
    common::ext::participant::assert_sender(&mut first, "alice");
    let mut rec = new_task("", &mut first, &ext);
    let events = [created(&rec)];
    let _ = set_status(&mut rec, TaskState::Working, None, None);
    store
        .create_task(&rec, &events, None)
        .await
        .expect("create")
}

fn text_message(id: &str, text: &str) -> Message {
    Message {
        message_id: id.into(),
        role: Role::User,
        parts: vec![Part::text(text)],
        ..Default::default()
    }
}

/// Sends `message` as `who`, with `configuration`; the answer's JSON, or the error.
async fn send(
    h: &Harness,
    who: &str,
    message: Message,
    configuration: Option<SendMessageConfiguration>,
) -> Result<serde_json::Value, common::a2a::A2aError> {
    let call = Call::SendMessage(SendMessageRequest {
        message: Some(message),
        configuration,
        ..Default::default()
    });
    match execute(h, call, &Caller::named(who)).await? {
        Answer::Json(body) => Ok(serde_json::from_str(body.get()).expect("JSON")),
        Answer::Stream(_) => panic!("a blocking send streams nothing"),
    }
}

/// Commits `change` to the task as it is now.
async fn change(
    store: &dyn Store,
    task_id: &str,
    change: impl FnOnce(&mut TaskRecord) -> Vec<StreamResponse>,
) {
    let rec = store
        .load_task(task_id)
        .await
        .expect("load")
        .expect("the task");
    let mut next = rec.clone();
    let events = change(&mut next);
    store
        .commit(&next, rec.version, &events, None)
        .await
        .expect("the conflicting write");
}

// ------------------------------------------------------- `/task` and its parent's commit

/// `/task bob …` on alice's task, while the task is cancelled between the command's read
/// and its commit: the command's commit is refused (the task changed), its retry finds the
/// task ended, and no sub-task is left behind. Before, the sub-task was created before the
/// parent's commit and stayed, an orphan its parent never linked.
#[tokio::test]
async fn a_task_command_refused_by_its_parents_commit_leaves_no_sub_task() {
    for (store, _dir) in stores().await {
        let parent = alices_task(store.as_ref()).await;
        let hooked = Interleaved::new(store.clone());
        let command_id = new_id();
        let id = parent.task.id.clone();
        hooked.at(
            Point::Commit(command_id.clone()),
            Box::new(move |store| {
                Box::pin(async move {
                    change(store.as_ref(), &id, |rec| {
                        vec![set_status(rec, TaskState::Canceled, None, None)]
                    })
                    .await;
                })
            }),
        );
        let h = harness(hooked.clone(), Config::default());
        let mut message = text_message(&command_id, "/task bob Check the numbers");
        message.task_id = parent.task.id.clone();
        let answer = send(&h, "alice", message, None).await;
        assert!(
            answer.is_err(),
            "the ended task took the command: {answer:?}"
        );
        let child = format!("{}.1", parent.task.id);
        let orphan = store.load_task(&child).await.expect("load");
        assert!(orphan.is_none(), "an orphan sub-task: {orphan:?}");
        let after = store
            .load_task(&parent.task.id)
            .await
            .expect("load")
            .expect("parent");
        assert!(after.ext().unwrap_or_default().sub_tasks.is_empty());
    }
}

// ------------------------------------------------- a webhook past the limit, on a send

/// alice's message on her task attaches a webhook while the task has one place left, and
/// the place is taken between the send's check of the limit and its write: the send is
/// refused naming the limit and stores nothing, the message included. Before, the message
/// was stored, and then the webhook refused.
#[tokio::test]
async fn a_webhook_past_the_limit_on_a_send_stores_nothing() {
    for (store, _dir) in stores().await {
        let task = alices_task(store.as_ref()).await;
        let key = PushKey::generate();
        let config = |id: &str| TaskPushNotificationConfig {
            id: id.into(),
            task_id: task.task.id.clone(),
            url: "https://hooks.example/h".into(),
            ..Default::default()
        };
        let sealed = |id: &str, who: &str| {
            let mut c = config(id);
            PushConfigRecord {
                sealed: key.seal(&mut c),
                config: c,
                creator: who.into(),
                ..Default::default()
            }
        };
        let most = common::store::MAX_CONFIGS_PER_TASK;
        for n in 1..most {
            let record = sealed(&format!("theirs-{n}"), "carol");
            store.put_push_config(&record).await.expect("a config");
        }
        let hooked = Interleaved::new(store.clone());
        let last = sealed("the-last", "carol");
        hooked.at(
            Point::ListPush(task.task.id.clone()),
            Box::new(move |store| {
                Box::pin(async move {
                    store.put_push_config(&last).await.expect("the last place");
                })
            }),
        );
        let h = harness(hooked.clone(), Config::default());
        let message_id = new_id();
        let mut message = text_message(&message_id, "and tell my hook");
        message.task_id = task.task.id.clone();
        let configuration = SendMessageConfiguration {
            task_push_notification_config: Some(TaskPushNotificationConfig {
                id: "alices".into(),
                url: "https://hooks.example/alice".into(),
                ..Default::default()
            }),
            return_immediately: true,
            ..Default::default()
        };
        let answer = send(&h, "alice", message, Some(configuration)).await;
        let e = answer.expect_err("past the limit");
        assert!(e.to_string().contains("the limit"), "{e}");
        let after = store
            .load_task(&task.task.id)
            .await
            .expect("load")
            .expect("task");
        assert_eq!(after.version, task.version, "the task was written");
        assert!(
            after
                .task
                .history
                .iter()
                .all(|m| m.message_id != message_id),
            "the refused message was stored"
        );
        let seen = store
            .message_task("", "alice", &message_id)
            .await
            .expect("read");
        assert_eq!(seen, None, "the refused message's id was taken");
    }
}

// ------------------------------------------------------- an answer link and its question

/// bob's answer link is used while bob answers the same question another way: the link's
/// check (the question is the one pending) passes, then his other answer is committed, then
/// the link's answer is written. It is refused as no longer open and stores nothing. Before,
/// the check and the write were apart: the link's text went into the task as a second
/// answer, a new instruction to a task already working on the first.
#[tokio::test]
async fn an_answer_link_racing_another_answer_is_refused_and_stores_nothing() {
    use tower::ServiceExt;
    for (store, _dir) in stores().await {
        let task = alices_task(store.as_ref()).await;
        let id = task.task.id.clone();
        let question_id = format!("{id}:help:1");
        let asked = question_id.clone();
        change(store.as_ref(), &id, move |rec| {
            rec.agent.pending_help = Some(common::task::HelpRequest {
                participant_id: "bob".into(),
                question: "Which colour?".into(),
                options: Vec::new(),
                message_id: asked.clone(),
                call_id: "call-1".into(),
                deadline: None,
            });
            let mut question = common::engine::transition::agent_message(
                &rec.task,
                vec![Part::text("Which colour?")],
            );
            question.message_id = asked;
            common::ext::participant::address_to(&mut question, "bob");
            vec![set_status(
                rec,
                TaskState::InputRequired,
                Some(question),
                None,
            )]
        })
        .await;
        let waiting = store.load_task(&id).await.expect("load").expect("task");
        let request = common::engine::medium::Addressed::of(&waiting).expect("asks bob");

        let hooked = Interleaved::new(store.clone());
        let other_answer = new_id();
        let answered = other_answer.clone();
        let task_id = id.clone();
        hooked.at(
            Point::Load(id.clone()),
            Box::new(move |store| {
                Box::pin(async move {
                    // bob answers in his inbox: the task resumes, asking nothing.
                    change(store.as_ref(), &task_id, |rec| {
                        rec.agent.pending_help = None;
                        let mut reply = text_message(&answered, "Red");
                        common::ext::participant::assert_sender(&mut reply, "bob");
                        common::engine::transition::accept_message(rec, &mut reply, true);
                        vec![set_status(rec, TaskState::Working, None, None)]
                    })
                    .await;
                })
            }),
        );
        let config = Config {
            personal_channels: Some(common::config::Source::Text {
                origin: "the test".into(),
                text: "[bob]\nurl = \"http://127.0.0.1:9/hook\"\n".into(),
            }),
            ..Config::default()
        };
        let h = harness(hooked.clone(), config);
        let links = h.personal().expect("personal channels").links();
        let now = common::task::lease::now_ms() / 1000;
        let link = links.link(&request, now);
        let token = link.split_once('#').expect("a token").1;
        let claim = links.verify(token, now).expect("a good link");
        let link_message = links.message_id(&claim);
        let body = serde_json::json!({"token": token, "text": "Blue"}).to_string();
        let request = axum::http::Request::post("/ui/answer")
            .header("content-type", "application/json")
            .body(axum::body::Body::from(body))
            .expect("a request");
        let router = common::server::router(h.clone(), common::server::Endpoint::All);
        let answer = router.oneshot(request).await.expect("an answer");
        let status = answer.status().as_u16();
        let body = axum::body::to_bytes(answer.into_body(), 1 << 20)
            .await
            .expect("body");
        let body = String::from_utf8_lossy(&body);
        assert_eq!(status, 409, "{body}");
        assert!(body.contains("no longer open"), "{body}");
        let after = store.load_task(&id).await.expect("load").expect("task");
        let ids: Vec<&str> = (after.task.history.iter())
            .map(|m| m.message_id.as_str())
            .collect();
        assert!(
            !ids.contains(&link_message.as_str()),
            "a second answer: {ids:?}"
        );
        assert!(ids.contains(&other_answer.as_str()), "{ids:?}");
    }
}
