//! The Store contract: what every store must do, written once against `Arc<dyn Store>`
//! and run against the embedded store and against DynamoDB (AWS's DynamoDB Local, which
//! `tests/run` starts and names in `HARNESS_TEST_DYNAMODB_ENDPOINT`).

mod support;

use std::collections::HashSet;
use std::sync::Arc;

use common::a2a::{Message, Part, Role, StreamResponse, TaskState};
use common::engine::transition::{created, new_task, set_status};
use common::ext::task::{Participant, ParticipantKind, Role as ParticipantRole, TaskExtension};
use common::store::AuditRecord;
use common::store::{
    DynamoStore, EmbeddedStore, InboundMessage, LoggedEvent, PushConfigRecord, ReadOnly, Store,
    StoreError, TaskQuery, TaskRecord,
};
use tempfile::TempDir;

fn temp_dir(name: &str) -> TempDir {
    tempfile::Builder::new()
        .prefix(&format!("harness-store-{name}-"))
        .tempdir()
        .expect("a temporary directory")
}

fn uuid_like() -> String {
    common::engine::transition::new_id()
}

fn message(id: &str) -> Message {
    Message {
        message_id: id.into(),
        role: Role::User,
        parts: vec![Part::text("hello")],
        ..Default::default()
    }
}

/// A task whose participants are `alice` (reporter) and the harness (assignee).
fn ext_for(member: &str) -> TaskExtension {
    let mut ext = TaskExtension::from_text("hello");
    ext.add(Participant::new(
        member,
        ParticipantKind::Human,
        ParticipantRole::Reporter,
    ));
    ext.add(Participant::new(
        "tiny-harness",
        ParticipantKind::Agent,
        ParticipantRole::Assignee,
    ));
    ext
}

async fn create(store: &dyn Store, tenant: &str, message_id: &str) -> TaskRecord {
    create_for(store, tenant, message_id, "alice").await
}

async fn create_for(store: &dyn Store, tenant: &str, message_id: &str, member: &str) -> TaskRecord {
    try_create_for(store, tenant, message_id, member)
        .await
        .expect("create")
}

/// A new task for `member`'s message `message_id`, as the store answers it.
async fn try_create_for(
    store: &dyn Store,
    tenant: &str,
    message_id: &str,
    member: &str,
) -> Result<TaskRecord, StoreError> {
    let mut m = message(message_id);
    let rec = new_task(tenant, &mut m, &ext_for(member));
    let event = created(&rec);
    let inbound = InboundMessage {
        tenant: tenant.into(),
        sender: member.into(),
        message: m,
    };
    store.create_task(&rec, &[event], Some(&inbound)).await
}

fn embedded(dir: &TempDir) -> Arc<dyn Store> {
    Arc::new(EmbeddedStore::open(dir.path()).expect("open store"))
}

/// The embedded store's database in `dir`, opened beside the store (as an older build or
/// another process would).
fn database(dir: &TempDir) -> rusqlite::Connection {
    rusqlite::Connection::open(dir.path().join("harness.sqlite3")).expect("open the database")
}

/// The one number `sql` (a `SELECT COUNT(*)`) reads from `db`.
fn count(db: &rusqlite::Connection, sql: &str, params: impl rusqlite::Params) -> i64 {
    db.query_row(sql, params, |r| r.get(0)).expect("count")
}

async fn concurrent_commits_on_one_task_lose_nothing(store: Arc<dyn Store>) {
    let rec = create(store.as_ref(), "", "m-concurrent").await;
    let writers = 8;
    let per_writer = 10;
    let mut handles = Vec::new();
    for _ in 0..writers {
        let store = store.clone();
        let id = rec.task.id.clone();
        handles.push(tokio::spawn(async move {
            let mut wins = 0;
            while wins < per_writer {
                let current = store.load_task(&id).await.expect("load").expect("exists");
                let mut next = current.clone();
                let event = set_status(&mut next, TaskState::Working, None, None);
                match store.commit(&next, current.version, &[event], None).await {
                    Ok(_) => wins += 1,
                    Err(StoreError::Conflict { .. }) => {}
                    Err(e) => panic!("unexpected error {e}"),
                }
            }
        }));
    }
    for h in handles {
        h.await.expect("writer");
    }
    let total = (writers * per_writer) as u64;
    let last = store
        .load_task(&rec.task.id)
        .await
        .expect("load")
        .expect("exists");
    assert_eq!(
        last.version,
        1 + total,
        "every winning commit bumped the version once"
    );
    assert_eq!(last.last_seq, total);
    let events = store
        .read_events(&rec.task.id, None, 10_000)
        .await
        .expect("events");
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs,
        (0..=total).collect::<Vec<_>>(),
        "gap-free and in order"
    );
}

async fn a_commit_at_a_stale_version_is_refused(store: Arc<dyn Store>) {
    let rec = create(store.as_ref(), "", "m-stale").await;
    let mut next = rec.clone();
    let ev = set_status(&mut next, TaskState::Working, None, None);
    store
        .commit(&next, rec.version, std::slice::from_ref(&ev), None)
        .await
        .expect("first commit");
    let again = store.commit(&next, rec.version, &[ev], None).await;
    assert!(
        matches!(again, Err(StoreError::Conflict { .. })),
        "{again:?}"
    );
    let events = store
        .read_events(&rec.task.id, None, 100)
        .await
        .expect("events");
    assert_eq!(events.len(), 2, "the refused commit appended nothing");
}

async fn a_repeated_message_id_is_stored_once(store: Arc<dyn Store>) {
    let first = create(store.as_ref(), "t", "m-dup").await;
    let mut m = message("m-dup");
    let rec = new_task("t", &mut m, &ext_for("alice"));
    let event = created(&rec);
    let inbound = InboundMessage {
        tenant: "t".into(),
        sender: "alice".into(),
        message: m,
    };
    let again = store.create_task(&rec, &[event], Some(&inbound)).await;
    assert_eq!(
        again,
        Err(StoreError::DuplicateMessage {
            message_id: "m-dup".into(),
            task_id: first.task.id.clone()
        })
    );
    assert!(
        store.load_task(&rec.task.id).await.expect("load").is_none(),
        "no second task"
    );
    assert_eq!(
        store
            .message_task("t", "alice", "m-dup")
            .await
            .expect("lookup"),
        Some(first.task.id)
    );
    assert_eq!(
        store
            .message_task("other", "alice", "m-dup")
            .await
            .expect("lookup"),
        None,
        "ids are per tenant"
    );
    assert_eq!(
        store
            .message_task("t", "bob", "m-dup")
            .await
            .expect("lookup"),
        None,
        "ids are per sender"
    );
    // Key parts cannot run into each other: tenant `a` and sender `b#c` is not tenant
    // `a#b` and sender `c`.
    let mut m = message("m#1");
    let rec = new_task("a", &mut m, &ext_for("b#c"));
    let inbound = InboundMessage {
        tenant: "a".into(),
        sender: "b#c".into(),
        message: m,
    };
    (store
        .create_task(&rec, &[created(&rec)], Some(&inbound))
        .await)
        .expect("create");
    for (tenant, sender, id) in [
        ("a#b", "c", "m#1"),
        ("a", "b", "c#m#1"),
        ("a", "b#c#m", "1"),
    ] {
        let found = store
            .message_task(tenant, sender, id)
            .await
            .expect("lookup");
        assert_eq!(found, None, "{tenant} {sender} {id}");
    }
    assert_eq!(
        store.message_task("a", "b#c", "m#1").await.expect("lookup"),
        Some(rec.task.id)
    );
}

async fn list_pages_cover_every_task_once_newest_first(store: Arc<dyn Store>) {
    let mut ids = HashSet::new();
    for i in 0..7 {
        ids.insert(
            create(store.as_ref(), "pages", &format!("m-page-{i}"))
                .await
                .task
                .id,
        );
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    let mut seen = Vec::new();
    let mut query = TaskQuery {
        tenant: "pages".into(),
        participant: "alice".into(),
        page_size: 3,
        ..Default::default()
    };
    loop {
        let page = store.list_tasks(&query).await.expect("list");
        assert_eq!(page.total, 7);
        seen.extend(
            page.tasks
                .iter()
                .map(|t| (t.status_millis(), t.task.id.clone())),
        );
        match page.next {
            Some(c) => query.cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(seen.len(), 7);
    assert_eq!(
        seen.iter().map(|s| s.1.clone()).collect::<HashSet<_>>(),
        ids
    );
    assert!(seen.windows(2).all(|w| w[0] >= w[1]), "newest status first");
}

/// Names within their 256 characters that join into a key longer than DynamoDB's (a `#`
/// is written as 3 bytes, a character may be 4) are refused by every store alike, nothing
/// stored: what the embedded store takes locally, the deployed store takes too.
async fn names_too_long_for_dynamodbs_keys_are_refused_alike(store: Arc<dyn Store>) {
    let hashes = "#".repeat(256);
    let mut m = message(&hashes);
    let rec = new_task(&hashes, &mut m, &ext_for(&hashes));
    let inbound = InboundMessage {
        tenant: hashes.clone(),
        sender: hashes.clone(),
        message: m,
    };
    let too_long = |r: Result<_, StoreError>| matches!(r, Err(StoreError::KeyTooLong(_)));
    assert!(too_long(
        store
            .create_task(&rec, &[created(&rec)], Some(&inbound))
            .await
            .map(drop)
    ));
    assert!(store.load_task(&rec.task.id).await.expect("load").is_none());
    assert!(too_long(store.put_message(&inbound).await));
    assert!(too_long(
        store
            .message_task(&hashes, &hashes, &hashes)
            .await
            .map(drop)
    ));

    let task = create(store.as_ref(), "", &uuid_like()).await;
    let emoji = "\u{1F600}".repeat(256);
    let record = PushConfigRecord {
        config: common::a2a::TaskPushNotificationConfig {
            task_id: task.task.id.clone(),
            id: emoji.clone(),
            url: "http://localhost/hook".into(),
            ..Default::default()
        },
        sealed: "v1.sealed".into(),
        ..Default::default()
    };
    assert!(too_long(store.put_push_config(&record).await));
    assert!(too_long(
        store.get_push_config(&task.task.id, &emoji).await.map(drop)
    ));
    assert!(too_long(
        store
            .list_push_configs(&task.task.id, Some(&emoji), 10)
            .await
            .map(drop)
    ));
    assert!(too_long(
        store.delete_push_config(&task.task.id, &emoji).await
    ));
    let listed = store.list_push_configs(&task.task.id, None, 10).await;
    assert!(listed.expect("list").is_empty(), "nothing stored");
}

async fn push_configs_are_kept_per_task_and_deletes_are_idempotent(store: Arc<dyn Store>) {
    let task = create(store.as_ref(), "", &uuid_like()).await;
    let t = task.task.id.clone();
    let mut record = PushConfigRecord {
        config: common::a2a::TaskPushNotificationConfig {
            task_id: t.clone(),
            id: "c1".into(),
            url: "http://localhost/hook".into(),
            ..Default::default()
        },
        sealed: "v1.sealed".into(),
        ..Default::default()
    };
    store.put_push_config(&record).await.expect("put");
    record.config.id = "c2".into();
    store.put_push_config(&record).await.expect("put");
    let listed = store.list_push_configs(&t, None, 10).await.expect("list");
    assert_eq!(
        listed
            .iter()
            .map(|c| c.config.id.as_str())
            .collect::<Vec<_>>(),
        ["c1", "c2"]
    );
    assert_eq!(listed[1], record, "stored as given");
    assert_eq!(
        store
            .list_push_configs(&t, Some("c1"), 10)
            .await
            .expect("list")
            .len(),
        1
    );
    store.delete_push_config(&t, "c1").await.expect("delete");
    store
        .delete_push_config(&t, "c1")
        .await
        .expect("second delete is fine");
    assert!(store
        .get_push_config(&t, "c1")
        .await
        .expect("get")
        .is_none());

    let mut missing = record.clone();
    missing.config.task_id = "no-such-task".into();
    assert_eq!(
        store.put_push_config(&missing).await,
        Err(StoreError::NoTask("no-such-task".into())),
        "a config needs its task"
    );
}

/// A config is replaced only by the participant who created it, in the write itself; one
/// stored without a creator (before creators were kept) is replaced by no one.
async fn a_push_config_is_replaced_only_by_its_creator(store: Arc<dyn Store>) {
    let task = create(store.as_ref(), "", &uuid_like()).await;
    let record = |creator: &str, url: &str| PushConfigRecord {
        config: common::a2a::TaskPushNotificationConfig {
            task_id: task.task.id.clone(),
            id: "c1".into(),
            url: url.into(),
            ..Default::default()
        },
        creator: creator.into(),
        sealed: format!("v1.{creator}"),
        ..Default::default()
    };
    let get = || store.get_push_config(&task.task.id, "c1");
    store
        .put_push_config(&record("alice", "http://localhost/a"))
        .await
        .expect("put");
    let taken = StoreError::PushConfigTaken {
        task_id: task.task.id.clone(),
        id: "c1".into(),
    };
    for other in ["bob", ""] {
        assert_eq!(
            store
                .put_push_config(&record(other, "http://localhost/b"))
                .await,
            Err(taken.clone()),
            "{other:?}"
        );
    }
    assert_eq!(get().await, Ok(Some(record("alice", "http://localhost/a"))));
    let again = record("alice", "http://localhost/a2");
    store.put_push_config(&again).await.expect("her own");
    assert_eq!(get().await, Ok(Some(again)));

    store
        .delete_push_config(&task.task.id, "c1")
        .await
        .expect("delete");
    store
        .put_push_config(&record("", "http://localhost/old"))
        .await
        .expect("a new id, creator or not");
    assert_eq!(
        store
            .put_push_config(&record("", "http://localhost/old2"))
            .await,
        Err(taken)
    );
}

/// Issue 19: the limit of 100 configs a task is kept by the store's write itself: of 20
/// creates racing for the last 5 places, 5 win; a replace takes no place, a delete frees
/// one, and a delete of nothing frees none.
async fn the_push_config_limit_holds_under_concurrent_creates(store: Arc<dyn Store>) {
    use common::store::MAX_CONFIGS_PER_TASK;
    let task = create(store.as_ref(), "", &uuid_like()).await;
    let record = |id: String| PushConfigRecord {
        config: common::a2a::TaskPushNotificationConfig {
            task_id: task.task.id.clone(),
            id,
            url: "http://localhost/hook".into(),
            ..Default::default()
        },
        creator: "alice".into(),
        sealed: "v1.alice".into(),
        ..Default::default()
    };
    for i in 0..MAX_CONFIGS_PER_TASK - 5 {
        store
            .put_push_config(&record(format!("c{i}")))
            .await
            .expect("under the limit");
    }
    let racing = (0..20).map(|i| {
        let (store, r) = (store.clone(), record(format!("race{i}")));
        async move { store.put_push_config(&r).await }
    });
    let results = futures::future::join_all(racing).await;
    let won = results.iter().filter(|r| r.is_ok()).count();
    let full = StoreError::TooManyPushConfigs(task.task.id.clone());
    assert_eq!(won, 5, "{results:?}");
    assert!(results.iter().all(|r| r.is_ok() || *r == Err(full.clone())));
    let count = || async {
        store
            .list_push_configs(&task.task.id, None, 1000)
            .await
            .expect("list")
            .len()
    };
    assert_eq!(count().await, MAX_CONFIGS_PER_TASK);

    assert_eq!(
        store.put_push_config(&record("one-more".into())).await,
        Err(full.clone())
    );
    store
        .put_push_config(&record("c0".into()))
        .await
        .expect("a replace takes no place");
    store
        .delete_push_config(&task.task.id, "no-such-config")
        .await
        .expect("deleting nothing");
    assert_eq!(
        store.put_push_config(&record("one-more".into())).await,
        Err(full)
    );
    store
        .delete_push_config(&task.task.id, "c1")
        .await
        .expect("delete");
    store
        .put_push_config(&record("one-more".into()))
        .await
        .expect("the freed place");
    assert_eq!(count().await, MAX_CONFIGS_PER_TASK);
}

/// A delivery cursor moves only from where the mover read it, and not on a deleted config.
async fn push_cursors_move_only_from_where_they_were(store: Arc<dyn Store>) {
    let task = create(store.as_ref(), "", &uuid_like()).await;
    let mut record = PushConfigRecord {
        config: common::a2a::TaskPushNotificationConfig {
            task_id: task.task.id.clone(),
            id: "c1".into(),
            url: "http://localhost/hook".into(),
            ..Default::default()
        },
        ..Default::default()
    };
    store.put_push_config(&record).await.expect("put");
    record.delivered = 3;
    record.failures = 1;
    record.last_failure = "event 2: HTTP 500 after 3 attempts".into();
    assert!(store
        .advance_push_config(&record, 0)
        .await
        .expect("advance"));
    let mut stale = record.clone();
    stale.delivered = 2;
    assert!(!store.advance_push_config(&stale, 0).await.expect("stale"));
    let stored = store
        .get_push_config(&task.task.id, "c1")
        .await
        .expect("get")
        .expect("there");
    assert_eq!(stored, record);
    store
        .delete_push_config(&task.task.id, "c1")
        .await
        .expect("delete");
    record.delivered = 4;
    assert!(!store.advance_push_config(&record, 3).await.expect("gone"));
    // Made again under its id by someone else: a delivery of the old one in flight does
    // not put it back.
    let theirs = PushConfigRecord {
        creator: "bob".into(),
        delivered: 3,
        ..record.clone()
    };
    store.put_push_config(&theirs).await.expect("put");
    assert!(!store
        .advance_push_config(&record, 3)
        .await
        .expect("not ours"));
    let stored = store
        .get_push_config(&task.task.id, "c1")
        .await
        .expect("get");
    assert_eq!(stored.expect("there").creator, "bob");
}

/// A DynamoDB store on a fresh table of its own.
/// A write refused on its condition leaves nothing of itself: not the message it
/// carried, not its events (the message is stored before the task in the same write).
async fn a_refused_write_stores_none_of_its_message(store: Arc<dyn Store>) {
    let rec = create(store.as_ref(), "", "m-first").await;
    let inbound = |id: &str| InboundMessage {
        tenant: String::new(),
        sender: "alice".into(),
        message: message(id),
    };
    let again = store
        .create_task(&rec, &[created(&rec)], Some(&inbound("m-create-again")))
        .await;
    assert!(
        matches!(again, Err(StoreError::Conflict { .. })),
        "{again:?}"
    );
    let mut next = rec.clone();
    let ev = set_status(&mut next, TaskState::Working, None, None);
    let stale = store
        .commit(
            &next,
            rec.version + 1,
            &[ev],
            Some(&inbound("m-stale-reply")),
        )
        .await;
    assert!(
        matches!(stale, Err(StoreError::Conflict { .. })),
        "{stale:?}"
    );
    for id in ["m-create-again", "m-stale-reply"] {
        assert_eq!(
            store.message_task("", "alice", id).await.expect("lookup"),
            None,
            "{id} was not stored"
        );
    }
    let events = store
        .read_events(&rec.task.id, None, 100)
        .await
        .expect("events");
    assert_eq!(events.len(), 1, "only the creation event");
    // The message ids are still free: the writes that carried them can be made now.
    store
        .commit(&next, rec.version, &[], Some(&inbound("m-stale-reply")))
        .await
        .expect("the reply, at the right version");
}

/// What goes along a commit (issue 48, item 8) is written with it or not at all: a task
/// it creates (`/task`'s sub-task) is created only if the commit's task is still at its
/// version, and a taken id for it refuses the commit (a conflict naming it); a webhook it
/// attaches is stored only with it, and one past the task's limit, or under another's
/// id, refuses it. A refused commit stores none of its message.
async fn what_goes_along_a_commit_is_written_with_it_or_not_at_all(store: Arc<dyn Store>) {
    use common::store::{Along, MAX_CONFIGS_PER_TASK};
    let parent = create(store.as_ref(), "", &uuid_like()).await;
    let id = parent.task.id.clone();
    let inbound = |mid: &str| InboundMessage {
        tenant: String::new(),
        sender: "alice".into(),
        message: message(mid),
    };
    let child = |n: usize| {
        let mut m = message(&format!("{id}.{n}:start"));
        common::engine::transition::new_task_with_id(
            format!("{id}.{n}"),
            "",
            &mut m,
            &ext_for("alice"),
        )
    };
    let (one, two) = (child(1), child(2));
    let (first_one, first_two) = ([created(&one)], [created(&two)]);
    fn with<'a>(c: &'a TaskRecord, first: &'a [StreamResponse; 1]) -> Along<'a> {
        Along {
            created: Some((c, first.as_slice())),
            ..Along::default()
        }
    }
    let stored = |mid: &str| {
        let store = store.clone();
        let mid = mid.to_owned();
        async move { store.message_task("", "alice", &mid).await.expect("read") }
    };
    let version = |store: Arc<dyn Store>, id: String| async move {
        store
            .load_task(&id)
            .await
            .expect("load")
            .expect("task")
            .version
    };

    // Created with the commit.
    let rec = (store.commit_along(
        &parent,
        parent.version,
        &[],
        Some(&inbound("m-1")),
        with(&one, &first_one),
    ))
    .await
    .expect("the commit and its sub-task");
    let made = store
        .load_task(one.id())
        .await
        .expect("load")
        .expect("the sub-task");
    assert_eq!(made.version, 1);
    assert_eq!(stored("m-1").await.as_deref(), Some(id.as_str()));

    // The task changed since: neither is written.
    let stale = (store.commit_along(
        &parent,
        parent.version,
        &[],
        Some(&inbound("m-2")),
        with(&two, &first_two),
    ))
    .await;
    assert!(
        matches!(&stale, Err(StoreError::Conflict { task_id, .. }) if *task_id == id),
        "{stale:?}"
    );
    assert!(
        store.load_task(two.id()).await.expect("load").is_none(),
        "created by a refused commit"
    );
    assert_eq!(stored("m-2").await, None);

    // Its id is taken: the commit is refused, naming it.
    let taken = (store.commit_along(
        &rec,
        rec.version,
        &[],
        Some(&inbound("m-3")),
        with(&one, &first_one),
    ))
    .await;
    assert_eq!(
        taken,
        Err(StoreError::Conflict {
            task_id: one.id().to_owned(),
            expected: 0
        })
    );
    assert_eq!(
        version(store.clone(), id.clone()).await,
        rec.version,
        "the task was written"
    );
    assert_eq!(stored("m-3").await, None);

    // A webhook: stored with the commit, up to the task's limit.
    let config = |cid: &str, creator: &str| PushConfigRecord {
        config: common::a2a::TaskPushNotificationConfig {
            task_id: id.clone(),
            id: cid.into(),
            url: "https://hooks.example/h".into(),
            ..Default::default()
        },
        creator: creator.into(),
        sealed: format!("v1.{creator}"),
        ..Default::default()
    };
    for n in 1..MAX_CONFIGS_PER_TASK {
        store
            .put_push_config(&config(&format!("c{n}"), "carol"))
            .await
            .expect("a config");
    }
    fn attach(c: &PushConfigRecord) -> Along<'_> {
        Along {
            push: Some(c),
            ..Along::default()
        }
    }
    let mut next = rec.clone();
    next.push = true;
    let alices = config("alices", "alice");
    let rec = (store.commit_along(
        &next,
        rec.version,
        &[],
        Some(&inbound("m-4")),
        attach(&alices),
    ))
    .await
    .expect("the last place");
    assert!(rec.push);
    assert!(store
        .get_push_config(&id, "alices")
        .await
        .expect("get")
        .is_some());
    let full = (store.commit_along(
        &rec,
        rec.version,
        &[],
        Some(&inbound("m-5")),
        attach(&config("one-more", "alice")),
    ))
    .await;
    assert_eq!(full, Err(StoreError::TooManyPushConfigs(id.clone())));
    let theirs = (store.commit_along(
        &rec,
        rec.version,
        &[],
        Some(&inbound("m-6")),
        attach(&config("c2", "alice")),
    ))
    .await;
    assert!(
        matches!(theirs, Err(StoreError::PushConfigTaken { .. })),
        "{theirs:?}"
    );
    for mid in ["m-5", "m-6"] {
        assert_eq!(stored(mid).await, None, "{mid} stored by a refused commit");
    }
    assert_eq!(
        version(store.clone(), id.clone()).await,
        rec.version,
        "the task was written"
    );
    assert!(store
        .get_push_config(&id, "one-more")
        .await
        .expect("get")
        .is_none());
    // Its creator's replacement takes no place.
    let mut again = config("alices", "alice");
    again.config.url = "https://hooks.example/again".into();
    (store.commit_along(
        &rec,
        rec.version,
        &[],
        Some(&inbound("m-7")),
        attach(&again),
    ))
    .await
    .expect("a replacement by its creator");
    let got = store
        .get_push_config(&id, "alices")
        .await
        .expect("get")
        .expect("the config");
    assert_eq!(got.config.url, "https://hooks.example/again");
    assert_eq!(
        store
            .list_push_configs(&id, None, 1000)
            .await
            .expect("list")
            .len(),
        MAX_CONFIGS_PER_TASK
    );
}

/// The layout of a task (issue 18): long messages, turns, artifacts extended chunk by
/// chunk, a long status message and long events all read back exactly, from a fresh
/// load, and the record keeps committing after it.
async fn a_task_reads_back_whole_however_long_its_parts(store: Arc<dyn Store>) {
    use common::a2a::Artifact;
    use common::engine::transition::{accept_message, add_artifact};
    use common::models::ChatMessage;
    let rec = create(store.as_ref(), "", &uuid_like()).await;
    let long = |c: char, kb: usize| c.to_string().repeat(kb * 1024);
    let mut next = rec.clone();
    let mut m = message(&uuid_like());
    m.parts = vec![Part::text(long('é', 100))];
    accept_message(&mut next, &mut m, true);
    next.agent.conversation.push(ChatMessage::User {
        text: long('t', 150),
    });
    let artifact = Artifact {
        artifact_id: "a".into(),
        parts: vec![Part::text(long('a', 70))],
        ..Default::default()
    };
    let first = add_artifact(&mut next, artifact.clone(), false, false);
    let rec = store
        .commit(&next, rec.version, &[first], None)
        .await
        .expect("long parts");
    let mut next = rec.clone();
    let chunk = add_artifact(&mut next, artifact, true, true);
    let status_text = long('s', 20);
    let msg = common::engine::transition::agent_message(&next.task, vec![Part::text(&status_text)]);
    let done = set_status(&mut next, TaskState::Completed, Some(msg), None);
    let rec = store
        .commit(&next, rec.version, &[chunk, done], None)
        .await
        .expect("an extended artifact and a long status");

    let back = store
        .load_task(rec.id())
        .await
        .expect("load")
        .expect("task");
    assert_eq!(back, rec);
    assert_eq!(back.task.artifacts[0].parts.len(), 2);
    let events = store
        .read_events(rec.id(), None, 100)
        .await
        .expect("events");
    assert_eq!(events.len(), 4);
    assert_eq!(
        events[3]
            .event
            .status_update
            .as_ref()
            .and_then(|u| u.status.clone()),
        rec.task.status
    );
    // The record as read commits again (its lists grow from what is stored).
    let mut next = back.clone();
    next.agent.conversation.push(ChatMessage::User {
        text: "more".into(),
    });
    let again = store
        .commit(&next, back.version, &[], None)
        .await
        .expect("commit");
    let reread = store
        .load_task(rec.id())
        .await
        .expect("load")
        .expect("task");
    assert_eq!(reread, again);
}

/// Events longer than a read page (DynamoDB: 1 MB) read back whole, in order: a page
/// that ends inside one is not the end of the log.
async fn long_events_read_back_whole_across_pages(store: Arc<dyn Store>) {
    use common::engine::transition::agent_message;
    let rec = create(store.as_ref(), "", &uuid_like()).await;
    let mut next = rec.clone();
    let events: Vec<StreamResponse> = (0..3)
        .map(|i| {
            let text = format!("{i}{}", "b".repeat(400 * 1024));
            let msg = agent_message(&next.task, vec![Part::text(text)]);
            set_status(&mut next, TaskState::Working, Some(msg), None)
        })
        .collect();
    let rec = store
        .commit(&next, rec.version, &events, None)
        .await
        .expect("commit");
    let read = store
        .read_events(rec.id(), Some(0), 100)
        .await
        .expect("events");
    let got: Vec<_> = read.iter().map(|e| e.event.clone()).collect();
    assert_eq!(got, events);
    assert_eq!(read.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3]);
    let one = store
        .read_events(rec.id(), Some(1), 1)
        .await
        .expect("events");
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].seq, 2);
}

/// A view reads the last messages asked for (and artifacts only when asked), never the
/// conversation, nothing for a head its check refuses, and cannot be committed.
async fn a_view_reads_only_what_it_asks_for(store: Arc<dyn Store>) {
    use common::engine::transition::accept_message;
    let rec = create(store.as_ref(), "", &uuid_like()).await;
    let mut next = rec.clone();
    for _ in 0..9 {
        accept_message(&mut next, &mut message(&uuid_like()), true);
    }
    next.agent
        .conversation
        .push(common::models::ChatMessage::User { text: "x".into() });
    let rec = store
        .commit(&next, rec.version, &[], None)
        .await
        .expect("commit");
    assert_eq!(rec.task.history.len(), 10);

    let view = store
        .load_view(rec.id(), Some(3), false, &|_| true)
        .await
        .expect("view")
        .expect("task");
    assert_eq!(view.task.history, rec.task.history[7..]);
    assert!(view.agent.conversation.is_empty());
    assert_eq!(view.version, rec.version);
    let none = store
        .load_view(rec.id(), Some(0), false, &|_| true)
        .await
        .expect("view")
        .expect("task");
    assert!(none.task.history.is_empty());
    let all = store
        .load_view(rec.id(), None, true, &|_| true)
        .await
        .expect("view")
        .expect("task");
    assert_eq!(all.task.history, rec.task.history);
    let stranger = store.load_view(rec.id(), None, true, &|r| r.tenant == "elsewhere");
    assert_eq!(stranger.await.expect("view"), None, "not admitted: nothing");
    let refused = store.commit(&view, view.version, &[], None).await;
    assert!(
        matches!(refused, Err(StoreError::Corrupt(_))),
        "{refused:?}"
    );
    assert_eq!(
        store
            .load_task(rec.id())
            .await
            .expect("load")
            .expect("task")
            .version,
        rec.version
    );
}

async fn dynamo() -> Option<(Arc<dyn Store>, aws_sdk_dynamodb::Client, String)> {
    let client = support::dynamo_client()?;
    let table = support::fresh_table(&client).await;
    let store = Arc::new(DynamoStore::new(client.clone(), table.clone()));
    Some((store, client, table))
}

/// One test per store for each contract function.
macro_rules! contract {
    ($($name:ident),+ $(,)?) => {
        mod embedded_store {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let dir = temp_dir(stringify!($name));
                    super::$name(embedded(&dir)).await;
                }
            )+
        }

        mod dynamodb_store {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    if let Some((store, _, _)) = dynamo().await {
                        super::$name(store).await;
                    }
                }
            )+
        }
    };
}

contract!(
    concurrent_commits_on_one_task_lose_nothing,
    a_commit_at_a_stale_version_is_refused,
    a_repeated_message_id_is_stored_once,
    a_refused_write_stores_none_of_its_message,
    what_goes_along_a_commit_is_written_with_it_or_not_at_all,
    list_pages_cover_every_task_once_newest_first,
    names_too_long_for_dynamodbs_keys_are_refused_alike,
    push_configs_are_kept_per_task_and_deletes_are_idempotent,
    push_cursors_move_only_from_where_they_were,
    a_push_config_is_replaced_only_by_its_creator,
    the_push_config_limit_holds_under_concurrent_creates,
    list_filters_by_context_state_and_time,
    a_participant_lists_only_their_own_tasks,
    a_participant_removed_no_longer_lists_the_task,
    only_cut_off_or_unanswered_tasks_are_found_for_the_sweep,
    refusals_are_kept_in_the_audit_trail_of_the_task_id_named,
    a_participants_audit_rows_are_capped_per_hour,
    a_peers_audit_rows_are_capped_per_hour_whatever_ids_it_names,
    an_hourly_quota_holds_under_concurrent_takes_and_apart_from_the_audits,
    agent_ids_once_recorded_stay_recorded,
    a_task_reads_back_whole_however_long_its_parts,
    a_view_reads_only_what_it_asks_for,
    long_events_read_back_whole_across_pages,
);

/// The sweeper's index: a task is found while it has not ended and holds a lease or a timer
/// that ran out (a drive cut off; a reply deadline while it waits, INPUT_REQUIRED), or once the write that stored it was a wake-up (runnable with no drive, or ended
/// owing its parents one) made before the time asked; a live lease, no lease and no
/// wake-up, or a finished task owing nothing, are not found.
async fn only_cut_off_or_unanswered_tasks_are_found_for_the_sweep(store: Arc<dyn Store>) {
    use common::task::lease::{now_ms, Lease};
    let now = now_ms();
    let lease = |until_ms| {
        Some(Lease {
            owner: "crashed".into(),
            until_ms,
        })
    };
    let timer = |until_ms| {
        Some(Lease {
            owner: common::task::lease::POLL_OWNER.into(),
            until_ms,
        })
    };
    #[derive(PartialEq)]
    enum Found {
        Lease,
        Woken,
        No,
    }
    // (state, lease, wake, parents owed, found as)
    let cases = [
        (
            TaskState::Working,
            lease(now - 60_000),
            false,
            false,
            Found::Lease,
        ),
        (
            TaskState::Submitted,
            lease(now - 30_000),
            false,
            false,
            Found::Lease,
        ),
        // A question's deadline: the task waits on someone under a timer.
        (
            TaskState::InputRequired,
            timer(now - 20_000),
            false,
            false,
            Found::Lease,
        ),
        (
            TaskState::InputRequired,
            timer(now + 60_000),
            false,
            false,
            Found::No,
        ),
        // A drive cut off while it reminded or expired a question.
        (
            TaskState::InputRequired,
            lease(now - 10_000),
            false,
            false,
            Found::Lease,
        ),
        (
            TaskState::Working,
            lease(now + 60_000),
            false,
            false,
            Found::No,
        ),
        (
            TaskState::Working,
            lease(now + 60_000),
            true,
            false,
            Found::No,
        ),
        (TaskState::Working, None, false, false, Found::No),
        (
            TaskState::Completed,
            lease(now - 60_000),
            false,
            false,
            Found::No,
        ),
        (TaskState::Working, None, true, false, Found::Woken),
        (TaskState::Completed, None, true, false, Found::No),
        (TaskState::Completed, None, false, true, Found::Woken),
    ];
    let mut leased = Vec::new();
    let mut woken = Vec::new();
    let tenant = format!("sweep-{}", uuid_like());
    for (i, (state, lease, wake, owed, found)) in cases.into_iter().enumerate() {
        let rec = create(
            store.as_ref(),
            &tenant,
            &format!("m-sweep-{i}-{}", uuid_like()),
        )
        .await;
        let mut next = rec.clone();
        let event = set_status(&mut next, state, None, None);
        next.lease = lease;
        next.wake = wake;
        next.parents_owed = owed;
        let stored = store
            .commit(&next, rec.version, &[event], None)
            .await
            .expect("commit");
        match found {
            Found::Lease => leased.push(stored.task.id),
            Found::Woken => woken.push(stored.task.id),
            Found::No => {}
        }
    }
    let ours = |found: common::store::Due| -> Vec<String> {
        let ids = [&leased[..], &woken[..]].concat();
        (found.leased.into_iter().chain(found.woken))
            .filter(|id| ids.contains(id))
            .collect()
    };
    // Wake-ups written after the time asked are not due yet.
    let found = ours(
        store
            .due_tasks(now, now - 1, 100)
            .await
            .expect("sweep query"),
    );
    assert_eq!(found, leased, "the oldest expiry first, no wake-ups");
    let found = ours((store.due_tasks(now, now_ms() + 1, 100).await).expect("sweep query"));
    assert_eq!(found, [&leased[..], &woken[..]].concat());
}

async fn a_participant_lists_only_their_own_tasks(store: Arc<dyn Store>) {
    let tenant = format!("members-{}", uuid_like());
    let mut alices = HashSet::new();
    for i in 0..4 {
        let member = if i % 2 == 0 { "alice" } else { "bob" };
        let rec = create_for(
            store.as_ref(),
            &tenant,
            &format!("m-{i}-{}", uuid_like()),
            member,
        )
        .await;
        if member == "alice" {
            alices.insert(rec.task.id);
        }
    }
    let query = |participant: &str| TaskQuery {
        tenant: tenant.clone(),
        participant: participant.into(),
        page_size: 1,
        ..Default::default()
    };
    let mut seen = HashSet::new();
    let mut q = query("alice");
    loop {
        let page = store.list_tasks(&q).await.expect("list");
        assert_eq!(page.total, 2, "the count is of alice's tasks only");
        seen.extend(page.tasks.into_iter().map(|t| t.task.id));
        match page.next {
            Some(c) => q.cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(seen, alices);
    // The harness is a member of every task; a stranger, and a prefix of an id, of none.
    assert_eq!(
        store
            .list_tasks(&query("tiny-harness"))
            .await
            .unwrap()
            .total,
        4
    );
    for stranger in ["mallory", "ali", "alice\nbob"] {
        let page = store.list_tasks(&query(stranger)).await.unwrap();
        assert_eq!((page.total, page.tasks.len()), (0, 0), "{stranger:?}");
    }
}

/// Membership is read from the task as committed: a participant removed lists it no more
/// (nor counts it), one added lists it, in the same commit.
async fn a_participant_removed_no_longer_lists_the_task(store: Arc<dyn Store>) {
    let tenant = format!("roster-{}", uuid_like());
    let rec = create_for(store.as_ref(), &tenant, &uuid_like(), "alice").await;
    alice_off_bob_on(store.as_ref(), &rec).await;
    assert_eq!(
        listed(store.as_ref(), &tenant, "alice").await,
        Vec::<String>::new(),
        "alice was removed"
    );
    assert_eq!(
        listed(store.as_ref(), &tenant, "bob").await,
        [rec.task.id.as_str()]
    );
}

/// Commits `rec` with alice taken off its roster and bob added.
async fn alice_off_bob_on(store: &dyn Store, rec: &TaskRecord) {
    let mut next = rec.clone();
    let mut ext = TaskExtension::of(&next.task).expect("extension");
    ext.participants.retain(|p| p.id != "alice");
    ext.add(Participant::new(
        "bob",
        ParticipantKind::Human,
        ParticipantRole::Reporter,
    ));
    ext.store(&mut next.task);
    store
        .commit(&next, rec.version, &[], None)
        .await
        .expect("commit");
}

/// The ids of the tasks `participant` lists in `tenant` (one page of up to 10), checked
/// against the count the page gives.
async fn listed(store: &dyn Store, tenant: &str, participant: &str) -> Vec<String> {
    let page = store
        .list_tasks(&TaskQuery {
            tenant: tenant.into(),
            participant: participant.into(),
            page_size: 10,
            ..Default::default()
        })
        .await
        .expect("list");
    assert_eq!(page.total as usize, page.tasks.len(), "{participant}");
    page.tasks.into_iter().map(|t| t.task.id).collect()
}

async fn refusals_are_kept_in_the_audit_trail_of_the_task_id_named(store: Arc<dyn Store>) {
    let task_id = format!("no-such-task-{}", uuid_like());
    for who in ["mallory", ""] {
        let record = AuditRecord {
            at: Some(common::a2a::Timestamp::now()),
            tenant: "t".into(),
            operation: "SendMessage".into(),
            task_id: task_id.clone(),
            message_id: format!("m-{who}"),
            participant: who.into(),
            accepted: false,
            detail: "not a participant".into(),
            peer: String::new(),
        };
        assert!(store.audit(&record).await.expect("audit"), "{who:?}");
    }
    let trail = store.audit_trail(&task_id).await.expect("trail");
    let who: Vec<&str> = trail.iter().map(|r| r.participant.as_str()).collect();
    assert_eq!(who, ["mallory", ""]);
    assert!(trail
        .iter()
        .all(|r| !r.accepted && r.detail == "not a participant"));
    assert!(store.audit_trail("other").await.unwrap().is_empty());
}

/// A participant's refusals kept per hour are capped, whatever tenant they name; the rest
/// of the hour's are not stored. Other participants, the next hour and accepted decisions
/// are not affected.
async fn a_participants_audit_rows_are_capped_per_hour(store: Arc<dyn Store>) {
    use common::store::AUDIT_ROWS_PER_PARTICIPANT_HOUR as QUOTA;
    let task_id = format!("capped-{}", uuid_like());
    let now = common::a2a::Timestamp::now();
    let record = |who: &str, tenant: &str, at: common::a2a::Timestamp| AuditRecord {
        at: Some(at),
        tenant: tenant.into(),
        operation: "SendMessage".into(),
        task_id: task_id.clone(),
        participant: who.into(),
        detail: "not a participant".into(),
        ..Default::default()
    };
    let mallory = format!("mallory-{}", uuid_like());
    for i in 0..QUOTA + 5 {
        // Half under tenants of her own making: they share her quota.
        let tenant = if i % 2 == 0 { "t" } else { "made-up" };
        let stored = store
            .audit(&record(&mallory, tenant, now))
            .await
            .expect("audit");
        assert_eq!(stored, i < QUOTA, "row {i}");
    }
    let command = AuditRecord {
        accepted: true,
        ..record(&mallory, "t", now)
    };
    assert!(
        store.audit(&command).await.expect("audit"),
        "accepted rows are kept"
    );
    assert!(store
        .audit(&record("alice", "t", now))
        .await
        .expect("audit"));
    let next_hour = common::a2a::Timestamp(now.0 + chrono::TimeDelta::hours(1));
    assert!(store
        .audit(&record(&mallory, "t", next_hour))
        .await
        .expect("audit"));
    let trail = store.audit_trail(&task_id).await.expect("trail");
    assert_eq!(trail.len() as u64, QUOTA + 3);
}

/// Refusals from one address (`none` mode) are capped per hour however many ids they
/// name, before they count against any of those ids; another address, a refusal with no
/// address, the next hour and accepted decisions are not affected, and the address is
/// kept in the row.
async fn a_peers_audit_rows_are_capped_per_hour_whatever_ids_it_names(store: Arc<dyn Store>) {
    use common::store::AUDIT_ROWS_PER_PARTICIPANT_HOUR as QUOTA;
    let task_id = format!("peer-capped-{}", uuid_like());
    let now = common::a2a::Timestamp::now();
    // An address of its own (a table may be shared between runs).
    let peer = format!("192.0.2.1-{}", uuid_like());
    let record = |who: &str, peer: &str, at: common::a2a::Timestamp| AuditRecord {
        at: Some(at),
        operation: "SendMessage".into(),
        task_id: task_id.clone(),
        participant: who.into(),
        detail: "not a participant".into(),
        peer: peer.into(),
        ..Default::default()
    };
    let rotated = |i: u64| format!("rotated-{i}-{}", uuid_like());
    for i in 0..QUOTA + 5 {
        let stored = store
            .audit(&record(&rotated(i), &peer, now))
            .await
            .expect("audit");
        assert_eq!(stored, i < QUOTA, "row {i}");
    }
    // The ids past the address's quota were not counted: each has its whole quota.
    let last = rotated(QUOTA + 4);
    assert!(store.audit(&record(&last, "", now)).await.expect("audit"));
    let other_peer = format!("{peer}-other");
    assert!(store
        .audit(&record(&last, &other_peer, now))
        .await
        .expect("audit"));
    let command = AuditRecord {
        accepted: true,
        ..record(&last, &peer, now)
    };
    assert!(
        store.audit(&command).await.expect("audit"),
        "accepted rows are kept"
    );
    let next_hour = common::a2a::Timestamp(now.0 + chrono::TimeDelta::hours(1));
    assert!(store
        .audit(&record(&last, &peer, next_hour))
        .await
        .expect("audit"));
    let trail = store.audit_trail(&task_id).await.expect("trail");
    assert_eq!(trail.len() as u64, QUOTA + 4);
    assert_eq!(trail[0].peer, peer, "the address is kept");
}

/// A quota counts each participant's uses per hour up to its limit, also when many take at
/// once (the /task throttle's 100 attempts); another quota, participant or hour is apart.
async fn an_hourly_quota_holds_under_concurrent_takes_and_apart_from_the_audits(
    store: Arc<dyn Store>,
) {
    use common::store::Quota;
    let mallory = format!("mallory-{}", uuid_like());
    let hour = common::store::hour_of(common::a2a::Timestamp::now().millis());
    let takes = (0..100).map(|_| {
        let store = store.clone();
        let mallory = mallory.clone();
        tokio::spawn(async move {
            store
                .take_quota(Quota::TasksForOthers, &mallory, hour, 10)
                .await
                .expect("take")
        })
    });
    let mut counted = 0;
    for take in takes.collect::<Vec<_>>() {
        counted += u32::from(take.await.expect("joined"));
    }
    assert_eq!(counted, 10);
    for (quota, who, hour) in [
        (Quota::AuditRows, mallory.as_str(), hour),
        (Quota::TasksForOthers, "alice", hour),
        (Quota::TasksForOthers, mallory.as_str(), hour + 1),
    ] {
        assert!(
            store.take_quota(quota, who, hour, 10).await.expect("take"),
            "{quota:?} {who} {hour}"
        );
    }
}

/// An agent id recorded stays, once however often it is recorded.
async fn agent_ids_once_recorded_stay_recorded(store: Arc<dyn Store>) {
    let (old, new) = (
        format!("old-{}", uuid_like()),
        format!("new-{}", uuid_like()),
    );
    for id in [&old, &old, &new] {
        store.record_agent_id(id).await.expect("record");
    }
    let ids = store.agent_ids().await.expect("ids");
    assert_eq!(ids.iter().filter(|i| **i == old).count(), 1, "{ids:?}");
    assert!(ids.contains(&new), "{ids:?}");
}

async fn list_filters_by_context_state_and_time(store: Arc<dyn Store>) {
    let a = create(store.as_ref(), "filters", "m-f-1").await;
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let b = create(store.as_ref(), "filters", "m-f-2").await;
    let mut next = b.clone();
    let ev = set_status(&mut next, TaskState::Working, None, None);
    store
        .commit(&next, b.version, &[ev], None)
        .await
        .expect("commit");
    let query = |f: fn(&mut TaskQuery)| {
        let mut q = TaskQuery {
            tenant: "filters".into(),
            participant: "alice".into(),
            page_size: 10,
            ..Default::default()
        };
        f(&mut q);
        q
    };
    let ids = |page: common::store::TaskPage| {
        page.tasks
            .into_iter()
            .map(|t| t.task.id)
            .collect::<Vec<_>>()
    };
    let working = store
        .list_tasks(&query(|q| q.state = Some(TaskState::Working)))
        .await
        .expect("list");
    assert_eq!((working.total, ids(working)), (1, vec![b.task.id.clone()]));
    let mut by_context = query(|_| {});
    by_context.context_id = Some(a.task.context_id.clone());
    assert_eq!(
        ids(store.list_tasks(&by_context).await.expect("list")),
        vec![a.task.id.clone()]
    );
    let mut recent = query(|_| {});
    recent.status_after = next.task.status.as_ref().and_then(|s| s.timestamp);
    assert_eq!(
        ids(store.list_tasks(&recent).await.expect("list")),
        vec![b.task.id.clone()]
    );
    let other = TaskQuery {
        tenant: "someone-else".into(),
        participant: "alice".into(),
        page_size: 10,
        ..Default::default()
    };
    assert_eq!(
        store.list_tasks(&other).await.expect("list").total,
        0,
        "tenants are separate"
    );
}

#[tokio::test]
async fn dynamodb_events_of_a_finished_task_expire_through_the_ttl_attribute() {
    use aws_sdk_dynamodb::types::AttributeValue;
    let Some((store, client, table)) = dynamo().await else {
        return;
    };
    let rec = create(store.as_ref(), "", "m-ttl").await;
    let mut next = rec.clone();
    let working = set_status(&mut next, TaskState::Working, None, None);
    let rec = store
        .commit(&next, rec.version, &[working], None)
        .await
        .expect("working");
    let events_ttl = || async {
        let out = client
            .query()
            .table_name(&table)
            .key_condition_expression("pk = :pk AND begins_with(sk, :ev)")
            .expression_attribute_values(":pk", AttributeValue::S(format!("TASK#{}", rec.task.id)))
            .expression_attribute_values(":ev", AttributeValue::S("EV#".into()))
            .send()
            .await
            .expect("query");
        out.items()
            .iter()
            .map(|i| i.contains_key(common::store::dynamodb::TTL_ATTRIBUTE))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        events_ttl().await,
        [false, false],
        "a running task's log does not expire"
    );
    let mut next = rec.clone();
    let done = set_status(&mut next, TaskState::Completed, None, None);
    store
        .commit(&next, rec.version, &[done], None)
        .await
        .expect("completed");
    assert_eq!(
        events_ttl().await,
        [true, true, true],
        "a finished task's log expires"
    );
    let events = store
        .read_events(&rec.task.id, None, 10)
        .await
        .expect("events");
    assert_eq!(
        events.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [0, 1, 2],
        "and is intact until then"
    );
}

/// The commit that ends a task gives its earlier events their expiry in its own
/// transaction while their keys are known; an event stored in more than one item (a
/// long message) makes them unknown, and every item of every event gets it after the
/// commit instead. Either way nothing of the log is left without one.
#[tokio::test]
async fn dynamodb_a_long_event_still_expires_with_its_task() {
    use aws_sdk_dynamodb::types::AttributeValue;
    let Some((store, client, table)) = dynamo().await else {
        return;
    };
    let rec = create(store.as_ref(), "", "m-ttl-long").await;
    let mut next = rec.clone();
    let long = Message {
        message_id: "m-long".into(),
        role: Role::Agent,
        parts: vec![Part::text("x".repeat(150 * 1024))],
        ..Default::default()
    };
    let working = set_status(&mut next, TaskState::Working, Some(long), None);
    let rec = store
        .commit(&next, rec.version, &[working], None)
        .await
        .expect("working");
    let mut next = rec.clone();
    let done = set_status(&mut next, TaskState::Completed, None, None);
    store
        .commit(&next, rec.version, &[done], None)
        .await
        .expect("completed");
    let out = client
        .query()
        .table_name(&table)
        .key_condition_expression("pk = :pk AND begins_with(sk, :ev)")
        .expression_attribute_values(":pk", AttributeValue::S(format!("TASK#{}", rec.task.id)))
        .expression_attribute_values(":ev", AttributeValue::S("EV#".into()))
        .send()
        .await
        .expect("query");
    let items = out.items();
    assert!(
        items.len() > 3,
        "the long event is in several items: {}",
        items.len()
    );
    assert!(
        items
            .iter()
            .all(|i| i.contains_key(common::store::dynamodb::TTL_ATTRIBUTE)),
        "every item of the log expires"
    );
}

/// Issue 19: with a task retention, every item of a finished task (head, listing items,
/// history, events, push configs and their count) expires through the TTL attribute that
/// long after it ended, and a delivery moving a config's cursor keeps its expiry; a
/// message's dedupe record expires after the retention period, whatever the task does.
/// Without a task retention, a finished task's head never expires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_a_finished_task_expires_whole_with_a_task_retention() {
    use aws_sdk_dynamodb::types::AttributeValue as V;
    use common::store::dynamodb::TTL_ATTRIBUTE;
    let Some(client) = support::dynamo_client() else {
        return;
    };
    let table = support::fresh_table(&client).await;
    const DAY: u64 = 24 * 3600;
    let items = |id: String| {
        let (client, table) = (client.clone(), table.clone());
        async move {
            let out = (client.query())
                .table_name(&table)
                .key_condition_expression("pk = :pk")
                .expression_attribute_values(":pk", V::S(format!("TASK#{id}")))
                .send()
                .await
                .expect("query");
            (out.items().iter())
                .map(|i| {
                    let sk = i["sk"].as_s().expect("sk").clone();
                    let ttl = i
                        .get(TTL_ATTRIBUTE)
                        .map(|v| v.as_n().expect("n").parse::<i64>().expect("i64"));
                    (sk, ttl)
                })
                .collect::<Vec<_>>()
        }
    };
    for retention in [Some(std::time::Duration::from_secs(7 * DAY)), None] {
        let store = DynamoStore::new(client.clone(), table.clone()).with_task_retention(retention);
        let message_id = uuid_like();
        let rec = create(&store, "", &message_id).await;
        let mut push = PushConfigRecord {
            config: common::a2a::TaskPushNotificationConfig {
                task_id: rec.task.id.clone(),
                id: "hook".into(),
                url: "http://localhost/hook".into(),
                ..Default::default()
            },
            creator: "alice".into(),
            sealed: "v1.alice".into(),
            ..Default::default()
        };
        store.put_push_config(&push).await.expect("push config");
        let mut next = rec.clone();
        let done = set_status(&mut next, TaskState::Completed, None, None);
        let done = store
            .commit(&next, rec.version, &[done], None)
            .await
            .expect("completed");
        let ended = done.status_millis() / 1000;

        let found = items(rec.task.id.clone()).await;
        let head = found.iter().find(|(sk, _)| sk == "TASK").expect("head");
        let Some(retention) = retention else {
            assert_eq!(head.1, None, "finished tasks are kept");
            break;
        };
        let expires = ended + retention.as_secs() as i64;
        for (sk, ttl) in &found {
            let ttl = ttl.unwrap_or_else(|| panic!("{sk} does not expire: {found:?}"));
            if sk.starts_with("EV#") {
                assert!(ttl <= expires, "{sk}: events go no later than their task");
            } else {
                assert_eq!(ttl, expires, "{sk}");
            }
        }
        for prefix in ["MEMBER#", "HIST#", "EV#", "PUSH#", "COUNT#PUSH"] {
            assert!(
                found.iter().any(|(sk, _)| sk.starts_with(prefix)),
                "{prefix}: {found:?}"
            );
        }
        // A delivery's cursor moves; the config still expires.
        push.delivered = 1;
        assert!(store.advance_push_config(&push, 0).await.expect("advance"));
        let found = items(rec.task.id.clone()).await;
        let hook = found
            .iter()
            .find(|(sk, _)| sk == "PUSH#hook")
            .expect("config");
        assert_eq!(hook.1, Some(expires));

        let dedupe = (client.get_item())
            .table_name(&table)
            .key("pk", V::S(format!("IN##alice#{message_id}")))
            .key("sk", V::S("MSG".into()))
            .send()
            .await
            .expect("get");
        let item = dedupe.item().expect("the dedupe record");
        let at: i64 = item[TTL_ATTRIBUTE].as_n().expect("n").parse().expect("i64");
        let window = common::store::DEFAULT_RETENTION.as_secs() as i64;
        assert!(
            (at - ended - window).abs() < 60,
            "{at} vs {ended} + {window}"
        );
    }
}

#[tokio::test]
async fn dynamodb_audit_records_expire_through_the_ttl_attribute() {
    use aws_sdk_dynamodb::types::AttributeValue;
    let Some((store, client, table)) = dynamo().await else {
        return;
    };
    let record = common::store::AuditRecord {
        task_id: "t-audit".into(),
        message_id: "m-audit".into(),
        accepted: false,
        detail: "not a participant".into(),
        ..Default::default()
    };
    assert!(store.audit(&record).await.expect("audit"));
    let out = client
        .query()
        .table_name(&table)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(":pk", AttributeValue::S("AUDIT#t-audit".into()))
        .send()
        .await
        .expect("query");
    let item = out.items().first().expect("the audit row");
    let expires: i64 = item[common::store::dynamodb::TTL_ATTRIBUTE]
        .as_n()
        .expect("a number")
        .parse()
        .expect("int");
    let now = common::a2a::Timestamp::now().millis() / 1000;
    assert!(
        expires > now + 29 * 24 * 3600,
        "kept for the retention period"
    );
    let ttl = client
        .describe_time_to_live()
        .table_name(&table)
        .send()
        .await
        .expect("describe ttl");
    let spec = ttl.time_to_live_description().expect("ttl description");
    assert_eq!(
        spec.attribute_name(),
        Some(common::store::dynamodb::TTL_ATTRIBUTE)
    );
}

/// Two stores on one directory stand for two processes (`cargo lambda watch` runs one
/// per function): their conditional writes still exclude each other.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_stores_on_one_directory_share_conditional_writes() {
    let dir = temp_dir("shared");
    let a = embedded(&dir);
    let b = embedded(&dir);
    let rec = create(a.as_ref(), "", "m-shared").await;
    let seen = b
        .load_task(&rec.task.id)
        .await
        .expect("load")
        .expect("visible to the other");
    let mut next = seen.clone();
    let ev = set_status(&mut next, TaskState::Working, None, None);
    b.commit(&next, seen.version, std::slice::from_ref(&ev), None)
        .await
        .expect("b commits");
    let stale = a.commit(&next, seen.version, &[ev], None).await;
    assert!(
        matches!(stale, Err(StoreError::Conflict { .. })),
        "{stale:?}"
    );
    let events = a.read_events(&rec.task.id, None, 10).await.expect("events");
    assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), [0, 1]);
    assert!(matches!(
        events[0].event,
        StreamResponse { task: Some(_), .. }
    ));
}

/// The version of task `id`'s view, whole.
async fn view_version(store: &dyn Store, id: &str) -> u64 {
    let view = store.load_view(id, None, true, &|_| true).await;
    view.expect("view").expect("task").version
}

/// Commits `rec` moved to `state`, with its status event, at the version it was read at.
async fn commit_state(
    store: Arc<dyn Store>,
    rec: TaskRecord,
    state: TaskState,
) -> Result<TaskRecord, StoreError> {
    let mut next = rec.clone();
    let ev = set_status(&mut next, state, None, None);
    store.commit(&next, rec.version, &[ev], None).await
}

/// A view a process keeps in memory (GetTask's) is never older than a commit made before
/// it was asked for, by that process or another on the directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn embedded_a_kept_view_follows_every_processs_commits() {
    let dir = temp_dir("views");
    let (a, b) = (embedded(&dir), embedded(&dir));
    let rec = create(a.as_ref(), "", "m-views").await;
    let id = rec.task.id.clone();
    for _ in 0..2 {
        assert_eq!(view_version(a.as_ref(), &id).await, rec.version);
        assert_eq!(view_version(b.as_ref(), &id).await, rec.version);
    }
    let rec = commit_state(a.clone(), rec, TaskState::Working)
        .await
        .expect("a commits");
    for (store, whose) in [(&b, "another process's commit"), (&a, "its own commit")] {
        assert_eq!(
            view_version(store.as_ref(), &id).await,
            rec.version,
            "{whose}"
        );
    }
    let rec = commit_state(b.clone(), rec, TaskState::Completed)
        .await
        .expect("b commits");
    for (store, whose) in [(&b, "its own commit"), (&a, "another process's commit")] {
        assert_eq!(
            view_version(store.as_ref(), &id).await,
            rec.version,
            "{whose}"
        );
    }
}

/// A commit whose caller has gone (a client that hung up while it waited on the writer
/// thread) lands all the same, and drops the views it made stale.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_a_commit_whose_caller_has_gone_still_drops_its_views() {
    use std::time::Duration;
    let dir = temp_dir("views-gone");
    let store = embedded(&dir);
    let rec = create(store.as_ref(), "", "m-views-gone").await;
    let id = rec.task.id.clone();
    assert_eq!(view_version(store.as_ref(), &id).await, rec.version);
    // Another process holds the database: the commit waits on the writer thread.
    let other = database(&dir);
    other.execute_batch("BEGIN IMMEDIATE").expect("hold");
    let commit = tokio::spawn(commit_state(store.clone(), rec.clone(), TaskState::Working));
    tokio::time::sleep(Duration::from_millis(100)).await;
    commit.abort();
    other.execute_batch("COMMIT").expect("release");
    let mut seen = rec.version;
    for _ in 0..200 {
        seen = view_version(store.as_ref(), &id).await;
        if seen != rec.version {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(seen, rec.version + 1, "the view after the commit landed");
}

/// Under steady load a PASSIVE checkpoint never copies the whole write-ahead log, so the
/// log never started over and grew without end (gigabytes under the bench): with commits
/// and reads always in flight, it stays within its bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn embedded_the_write_ahead_log_stays_bounded_under_steady_load() {
    let dir = temp_dir("wal");
    let store = embedded(&dir);
    let wal = dir.path().join("harness.sqlite3-wal");
    let first = create(store.as_ref(), "", "m-wal-first").await;
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut readers = Vec::new();
    for _ in 0..4 {
        let (store, done, id) = (store.clone(), done.clone(), first.task.id.clone());
        readers.push(tokio::spawn(async move {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                store.load_task(&id).await.expect("load");
                tokio::task::yield_now().await;
            }
        }));
    }
    let largest = {
        let (wal, done) = (wal.clone(), done.clone());
        tokio::spawn(async move {
            let mut largest = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                largest = largest.max(std::fs::metadata(&wal).map_or(0, |m| m.len()));
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
            largest
        })
    };
    // ~10 pages a commit (the text is in the record, its event and its message): several
    // times the bound in all.
    let text = "a long message ".repeat(1_000);
    let mut writers = Vec::new();
    for w in 0..16 {
        let (store, text) = (store.clone(), text.clone());
        writers.push(tokio::spawn(async move {
            for i in 0..60 {
                let mut m = message(&format!("m-wal-{w}-{i}"));
                m.parts = vec![Part::text(text.as_str())];
                let rec = new_task("", &mut m, &ext_for("alice"));
                let inbound = InboundMessage {
                    tenant: String::new(),
                    sender: "alice".into(),
                    message: m,
                };
                store
                    .create_task(&rec, &[created(&rec)], Some(&inbound))
                    .await
                    .expect("create");
            }
        }));
    }
    for w in writers {
        w.await.expect("writer");
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    for r in readers {
        r.await.expect("reader");
    }
    let largest = largest.await.expect("sampler");
    // The store's bound: 4096 frames, each a 4 KB page and its 24-byte header. It may be
    // overshot by the commits between two checkpoints.
    let bound = 4096 * (4096 + 24);
    assert!(
        largest <= 2 * bound,
        "the log reached {largest} bytes; its bound is {bound}"
    );
}

/// A directory written before the listing table: its tasks are listed from the `members`
/// column when the table is made, on opening.
#[tokio::test]
async fn embedded_tasks_stored_before_the_listing_table_are_listed() {
    let dir = temp_dir("listing");
    let ids: HashSet<String> = {
        let store = embedded(&dir);
        let mut ids = HashSet::new();
        for i in 0..3 {
            ids.insert(
                create(store.as_ref(), "old", &format!("m-{i}"))
                    .await
                    .task
                    .id,
            );
        }
        ids
    };
    let db = database(&dir);
    db.execute_batch("DROP TABLE task_members")
        .expect("as an older build left it");
    drop(db);
    let store = embedded(&dir);
    let page = store
        .list_tasks(&TaskQuery {
            tenant: "old".into(),
            participant: "alice".into(),
            page_size: 10,
            ..Default::default()
        })
        .await
        .expect("list");
    assert_eq!(page.total, 3);
    let listed: HashSet<String> = page.tasks.into_iter().map(|t| t.task.id).collect();
    assert_eq!(listed, ids);
}

/// Audit rows past their retention go a few hundred a write, so one write after downtime
/// does not stop every other while it deletes the whole backlog; none is kept for good.
#[tokio::test]
async fn embedded_expired_audit_rows_go_a_few_hundred_a_write() {
    let dir = temp_dir("audit-backlog");
    let store = embedded(&dir);
    let db = database(&dir);
    db.execute_batch(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 600)
         INSERT INTO audit (at_ms, record) SELECT 1, '{}' FROM n",
    )
    .expect("a backlog of expired rows");
    let expired =
        |db: &rusqlite::Connection| count(db, "SELECT COUNT(*) FROM audit WHERE at_ms = 1", []);
    let record = AuditRecord {
        operation: "SendMessage".into(),
        participant: "alice".into(),
        accepted: true,
        ..Default::default()
    };
    store.audit(&record).await.expect("audit");
    assert_eq!(expired(&db), 600 - 256);
    for _ in 0..2 {
        store.audit(&record).await.expect("audit");
    }
    assert_eq!(expired(&db), 0);
}

/// The indexes older builds kept and wrote on every commit that no query needs now (every
/// task by time; the listing rows by task, which are deleted by their whole keys) are
/// dropped when the directory is opened.
#[tokio::test]
async fn embedded_an_older_builds_unneeded_indexes_are_dropped() {
    let dir = temp_dir("old-index");
    let id = {
        let store = embedded(&dir);
        create(store.as_ref(), "", "m-old-index").await.task.id
    };
    let db = database(&dir);
    db.execute_batch(
        "CREATE INDEX tasks_by_status ON tasks (tenant, status_ms DESC, id DESC);
         CREATE INDEX task_members_by_task ON task_members (task_id);",
    )
    .expect("as an older build left it");
    drop(db);
    let store = embedded(&dir);
    assert!(store.load_task(&id).await.expect("load").is_some());
    let db = database(&dir);
    let mut stmt = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index'")
        .expect("query");
    let names = stmt.query_map([], |r| r.get(0)).expect("rows");
    let left: Vec<String> = names.collect::<Result<_, _>>().expect("names");
    for gone in ["tasks_by_status", "task_members_by_task"] {
        assert!(!left.iter().any(|n| n == gone), "{gone}: {left:?}");
    }
}

/// A task's events were a table of their own in an older build; opening its directory
/// moves them among the task's parts, where the next events follow them.
#[tokio::test]
async fn embedded_an_older_builds_events_are_kept_and_followed() {
    let dir = temp_dir("old-events");
    let rec = {
        let store = embedded(&dir);
        create(store.as_ref(), "", "m-old-events").await
    };
    let db = database(&dir);
    // The parts' kinds: artifact, history, status, turn; the rest are events.
    db.execute_batch(
        "CREATE TABLE events (
             task_id TEXT NOT NULL,
             seq INTEGER NOT NULL,
             event TEXT NOT NULL,
             PRIMARY KEY (task_id, seq)
         ) WITHOUT ROWID;
         INSERT INTO events SELECT task_id, idx, json FROM task_parts WHERE kind > 3;
         DELETE FROM task_parts WHERE kind > 3;",
    )
    .expect("as an older build left it");
    let moved = count(&db, "SELECT COUNT(*) FROM events", []);
    assert_eq!(moved, 1, "the created task's event");
    drop(db);
    let store = embedded(&dir);
    let seqs = |events: Vec<LoggedEvent>| events.iter().map(|e| e.seq).collect::<Vec<_>>();
    let events = store
        .read_events(&rec.task.id, None, 10)
        .await
        .expect("events");
    assert_eq!(seqs(events), [0]);
    let mut next = rec.clone();
    let ev = set_status(&mut next, TaskState::Working, None, None);
    store
        .commit(&next, rec.version, &[ev], None)
        .await
        .expect("commit");
    let events = store
        .read_events(&rec.task.id, None, 10)
        .await
        .expect("events");
    assert_eq!(seqs(events), [0, 1]);
    let tables = count(
        &database(&dir),
        "SELECT COUNT(*) FROM sqlite_master WHERE name = 'events'",
        [],
    );
    assert_eq!(tables, 0, "the old table is dropped");
}

/// An older build's dedupe rows kept a copy of their message; opening its directory drops
/// the copies, and its messages still name their tasks.
#[tokio::test]
async fn embedded_an_older_builds_dedupe_rows_still_name_their_tasks() {
    let dir = temp_dir("old-inbound");
    let first = {
        let store = embedded(&dir);
        create(store.as_ref(), "t", "m-old-copy").await
    };
    let db = database(&dir);
    db.execute_batch(
        "CREATE TABLE inbound_old (
             tenant TEXT NOT NULL,
             sender TEXT NOT NULL,
             message_id TEXT NOT NULL,
             task_id TEXT NOT NULL,
             received_ms INTEGER NOT NULL,
             message TEXT NOT NULL,
             PRIMARY KEY (tenant, sender, message_id)
         ) WITHOUT ROWID;
         INSERT INTO inbound_old SELECT tenant, sender, message_id, task_id, received_ms,
             '{\"messageId\":\"m-old-copy\"}' FROM inbound;
         DROP TABLE inbound;
         ALTER TABLE inbound_old RENAME TO inbound;",
    )
    .expect("as an older build left it");
    drop(db);
    let store = embedded(&dir);
    assert_eq!(
        store
            .message_task("t", "alice", "m-old-copy")
            .await
            .expect("lookup"),
        Some(first.task.id.clone())
    );
    let again = try_create_for(store.as_ref(), "t", "m-old-copy", "alice").await;
    assert_eq!(
        again,
        Err(StoreError::DuplicateMessage {
            message_id: "m-old-copy".into(),
            task_id: first.task.id
        })
    );
    create(store.as_ref(), "t", "m-new").await;
    let copies = count(
        &database(&dir),
        "SELECT COUNT(*) FROM pragma_table_info('inbound') WHERE name = 'message'",
        [],
    );
    assert_eq!(copies, 0, "the copies are dropped");
}

/// The harness's own id (`with_unlisted`) gets no listing rows: no client may speak as it,
/// so none would read them. A task listed by a store without it (an older build) loses
/// that row with its next change of roster; its people are listed as before.
#[tokio::test]
async fn embedded_the_unlisted_participant_gets_no_listing_rows() {
    let dir = temp_dir("unlisted");
    let rec = {
        let store = embedded(&dir);
        create_for(store.as_ref(), "u", &uuid_like(), "alice").await
    };
    let store: Arc<dyn Store> = Arc::new(
        EmbeddedStore::open(dir.path())
            .expect("open store")
            .with_unlisted("tiny-harness"),
    );
    alice_off_bob_on(store.as_ref(), &rec).await;
    let fresh = create_for(store.as_ref(), "u", &uuid_like(), "carol").await;
    for (who, ids) in [
        ("alice", vec![]),
        ("bob", vec![rec.task.id.as_str()]),
        ("carol", vec![fresh.task.id.as_str()]),
        ("tiny-harness", vec![]),
    ] {
        assert_eq!(listed(store.as_ref(), "u", who).await, ids, "{who}");
    }
    let rows = count(&database(&dir), "SELECT COUNT(*) FROM task_members", []);
    assert_eq!(rows, 2, "bob's and carol's, nothing else");
}

/// A task's listing rows are found by the keys its row in `tasks` holds; should they be
/// keyed otherwise (as an older build might have left them), a change of roster still
/// takes them all away, so whoever was taken off the task no longer lists it.
#[tokio::test]
async fn embedded_listing_rows_keyed_otherwise_still_go_with_a_roster_change() {
    let dir = temp_dir("listing-keys");
    let store = embedded(&dir);
    let rec = create_for(store.as_ref(), "keys", &uuid_like(), "alice").await;
    let db = database(&dir);
    db.execute(
        "UPDATE task_members SET status_ms = status_ms - 1 WHERE task_id = ?1",
        [&rec.task.id],
    )
    .expect("rows keyed otherwise");
    assert_eq!(
        listed(store.as_ref(), "keys", "alice").await,
        [rec.task.id.as_str()]
    );
    alice_off_bob_on(store.as_ref(), &rec).await;
    assert_eq!(
        listed(store.as_ref(), "keys", "alice").await,
        Vec::<String>::new()
    );
    assert_eq!(
        listed(store.as_ref(), "keys", "bob").await,
        [rec.task.id.as_str()]
    );
    let rows = count(
        &db,
        "SELECT COUNT(*) FROM task_members WHERE task_id = ?1",
        [&rec.task.id],
    );
    assert_eq!(rows, 2, "bob's and the harness's, nothing else");
}

#[tokio::test]
async fn state_survives_reopening_the_directory() {
    let dir = temp_dir("reopen");
    let id = {
        let store = embedded(&dir);
        create(store.as_ref(), "", "m-reopen").await.task.id
    };
    let store = embedded(&dir);
    let rec = store
        .load_task(&id)
        .await
        .expect("load")
        .expect("still there");
    assert_eq!(rec.state(), TaskState::Submitted);
    assert_eq!(
        store
            .read_events(&id, None, 10)
            .await
            .expect("events")
            .len(),
        1
    );
}

/// A store written before messageIds were per sender keeps its messages: they move to the
/// sender their metadata names.
#[tokio::test]
async fn messages_stored_by_an_older_build_are_found_under_their_sender() {
    let dir = temp_dir("old-messages");
    std::fs::create_dir_all(dir.path()).expect("dir");
    let old = database(&dir);
    old.execute_batch(
        r#"CREATE TABLE messages (tenant TEXT NOT NULL, message_id TEXT NOT NULL,
               task_id TEXT NOT NULL, received_ms INTEGER NOT NULL, message TEXT NOT NULL,
               PRIMARY KEY (tenant, message_id)) WITHOUT ROWID;
           INSERT INTO messages VALUES ('', 'm-old', 't-old', 0,
               '{"messageId":"m-old","metadata":{"participant_id":"alice"}}');"#,
    )
    .expect("an old store");
    drop(old);
    let store = embedded(&dir);
    let found = store
        .message_task("", "alice", "m-old")
        .await
        .expect("read");
    assert_eq!(found.as_deref(), Some("t-old"));
    assert_eq!(
        store.message_task("", "bob", "m-old").await.expect("read"),
        None
    );
}

/// A task an older build stored whole in its head item (history and conversation inline,
/// no part counts) reads back whole; its lists are written out as parts on that read, so
/// its next commit is small however long the task (150 messages would be over one
/// transaction's 100 items), and it reads as a task of this layout after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_a_task_stored_whole_by_an_older_build_is_written_out_and_commits() {
    use aws_sdk_dynamodb::types::AttributeValue as V;
    use common::engine::transition::accept_message;
    let Some((store, client, table)) = dynamo().await else {
        return;
    };
    let mut rec = create(store.as_ref(), "", &uuid_like()).await;
    for _ in 0..149 {
        accept_message(&mut rec, &mut message(&uuid_like()), true);
    }
    rec.agent.conversation = vec![common::models::ChatMessage::User { text: "x".into() }];
    // The head as an older build wrote it: the record's JSON, lists inline.
    let mut old = serde_json::to_value(&rec).expect("json");
    old["task"] = serde_json::to_value(&rec.task).expect("task");
    old["agent"]["conversation"] = serde_json::to_value(&rec.agent.conversation).expect("turns");
    old.as_object_mut().expect("object").remove("parts");
    client
        .put_item()
        .table_name(&table)
        .item("pk", V::S(format!("TASK#{}", rec.id())))
        .item("sk", V::S("TASK".into()))
        .item("version", V::N(rec.version.to_string()))
        .item("last_seq", V::N(rec.last_seq.to_string()))
        .item("record", V::S(old.to_string()))
        .send()
        .await
        .expect("an old head");

    let back = store
        .load_task(rec.id())
        .await
        .expect("load")
        .expect("task");
    assert_eq!(back.task.history, rec.task.history);
    assert_eq!(back.agent.conversation, rec.agent.conversation);
    let mut next = back.clone();
    accept_message(&mut next, &mut message("the-151st"), true);
    let stored = store
        .commit(&next, back.version, &[], None)
        .await
        .expect("a small commit");
    let view = store
        .load_view(rec.id(), Some(2), false, &|_| true)
        .await
        .expect("view")
        .expect("task");
    assert_eq!(view.task.history, stored.task.history[149..]);
    let whole = store
        .load_task(rec.id())
        .await
        .expect("load")
        .expect("task");
    assert_eq!(whole, stored);
}

/// A head written before the listing index (the tenant's `gsi1` partition, no listing
/// items) is not listed until its next commit, or until the backfill, which lists it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamodb_a_task_written_before_the_listing_index_is_listed_after_the_backfill() {
    use aws_sdk_dynamodb::types::AttributeValue as V;
    let Some(client) = support::dynamo_client() else {
        return;
    };
    let table = support::fresh_table(&client).await;
    let store = DynamoStore::new(client.clone(), table.clone());
    let tenant = format!("old-{}", uuid_like());
    let rec = create(&store, &tenant, &uuid_like()).await;
    // As an older build left it: the head in the tenant's partition, no listing items.
    for member in ["alice", "tiny-harness"] {
        client
            .delete_item()
            .table_name(&table)
            .key("pk", V::S(format!("TASK#{}", rec.id())))
            .key("sk", V::S(format!("MEMBER#{member}")))
            .send()
            .await
            .expect("delete a listing item");
    }
    client
        .update_item()
        .table_name(&table)
        .key("pk", V::S(format!("TASK#{}", rec.id())))
        .key("sk", V::S("TASK".into()))
        .update_expression("REMOVE listed SET gsi1pk = :t, gsi1sk = :s")
        .expression_attribute_values(":t", V::S(format!("TENANT#{tenant}")))
        .expression_attribute_values(
            ":s",
            V::S(format!("{:015}#{}", rec.status_millis(), rec.id())),
        )
        .send()
        .await
        .expect("an old head");
    let query = TaskQuery {
        tenant: tenant.clone(),
        participant: "alice".into(),
        page_size: 10,
        ..Default::default()
    };
    assert_eq!(store.list_tasks(&query).await.expect("list").total, 0);

    assert_eq!(store.backfill_listing().await.expect("backfill"), 1);
    let page = store.list_tasks(&query).await.expect("list");
    assert_eq!(page.total, 1);
    assert_eq!(page.tasks[0].task, rec.task);
    assert_eq!(
        store.backfill_listing().await.expect("again"),
        0,
        "listed once"
    );
}

/// The read-only functions' store: their reads and audit records pass, and every write
/// is refused, leaving the task as it was.
#[tokio::test]
async fn a_read_only_store_reads_and_audits_but_writes_nothing() {
    let dir = temp_dir("read-only");
    let store = EmbeddedStore::open(dir.path()).expect("open store");
    let rec = create(&store, "", "m-read-only").await;
    let reader = ReadOnly(EmbeddedStore::open(dir.path()).expect("open store"));

    let read = reader.load_task(&rec.task.id).await.expect("load");
    assert_eq!(read.map(|r| r.version), Some(rec.version));
    let admit = |_: &TaskRecord| true;
    assert!(reader
        .load_view(&rec.task.id, Some(1), true, &admit)
        .await
        .expect("view")
        .is_some());
    let query = TaskQuery {
        participant: "alice".into(),
        page_size: 10,
        ..Default::default()
    };
    let page = reader.list_tasks(&query).await.expect("list");
    assert!(page.tasks.iter().any(|t| t.task.id == rec.task.id));
    let refusal = AuditRecord {
        at: Some(common::a2a::Timestamp::now()),
        tenant: String::new(),
        operation: "GetTask".into(),
        task_id: rec.task.id.clone(),
        message_id: String::new(),
        participant: "mallory".into(),
        accepted: false,
        detail: "not a participant".into(),
        peer: String::new(),
    };
    assert!(reader.audit(&refusal).await.expect("audit"));

    let mut next = rec.clone();
    let ev = set_status(&mut next, TaskState::Canceled, None, None);
    let writes = [
        reader.commit(&next, rec.version, &[ev], None).await.err(),
        reader.create_task(&next, &[], None).await.err(),
        reader.delete_push_config(&rec.task.id, "c").await.err(),
    ];
    for refused in writes {
        assert!(matches!(refused, Some(StoreError::ReadOnly)), "{refused:?}");
    }
    let after = store
        .load_task(&rec.task.id)
        .await
        .expect("load")
        .expect("task");
    assert_eq!(
        after.version, rec.version,
        "a refused write changed the task"
    );
    assert_eq!(store.audit_trail(&rec.task.id).await.unwrap().len(), 1);
}
