//! Property test: random interleavings of concurrent commits on one task against the
//! embedded store never lose an update nor leave a gap in the event log.
//!
//! Each case opens a fresh store, creates one task, and runs 2–8 writers, each making 1–6
//! commits of 1–3 status/artifact events. A writer loads the task, pauses as the strategy
//! says (nothing, some `yield_now`s, or a short sleep), applies its change to what it read
//! and commits at the version it read; on `Conflict` it pauses again, reloads and retries.
//! Every event is tagged with its writer, commit and position, so the log can be checked
//! against what the writers were told succeeded.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use common::a2a::{Artifact, Message, Part, Role, StreamResponse, TaskState};
use common::engine::transition::{add_artifact, created, new_id, new_task, set_status};
use common::ext::task::TaskExtension;
use common::store::{EmbeddedStore, LoggedEvent, Store, StoreError, TaskRecord};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// The artifact every `Append` event extends: its parts must end up as every appended
/// chunk, in log order.
const SHARED: &str = "shared";

/// What one event of a commit does.
#[derive(Debug, Clone, Copy)]
enum Change {
    /// A status update (WORKING or INPUT_REQUIRED), tagged in the event's metadata.
    Status(bool),
    /// A new artifact named by the tag.
    Artifact,
    /// A chunk appended to the shared artifact, its text the tag.
    Append,
}

/// What a writer does between reading the task and committing.
#[derive(Debug, Clone, Copy)]
enum Pause {
    None,
    Yield(u8),
    SleepMicros(u16),
}

impl Pause {
    async fn run(self) {
        match self {
            Pause::None => {}
            Pause::Yield(n) => {
                for _ in 0..n {
                    tokio::task::yield_now().await;
                }
            }
            Pause::SleepMicros(us) => tokio::time::sleep(Duration::from_micros(us.into())).await,
        }
    }
}

#[derive(Debug, Clone)]
struct Commit {
    changes: Vec<Change>,
    /// Before committing (after each load).
    before: Pause,
    /// After a conflict, before reloading.
    retry: Pause,
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        any::<bool>().prop_map(Change::Status),
        Just(Change::Artifact),
        Just(Change::Append),
    ]
}

fn pause() -> impl Strategy<Value = Pause> {
    prop_oneof![
        2 => Just(Pause::None),
        2 => (1u8..8).prop_map(Pause::Yield),
        1 => (0u16..2_000).prop_map(Pause::SleepMicros),
    ]
}

prop_compose! {
    fn commit()(changes in prop::collection::vec(change(), 1..=3), before in pause(), retry in pause()) -> Commit {
        Commit { changes, before, retry }
    }
}

/// 2–8 writers of 1–6 commits each.
fn writers() -> impl Strategy<Value = Vec<Vec<Commit>>> {
    prop::collection::vec(prop::collection::vec(commit(), 1..=6), 2..=8)
}

fn tag(writer: usize, commit: usize, event: usize) -> String {
    format!("w{writer}-c{commit}-e{event}")
}

/// The tag an event carries (None for one no writer made).
fn tag_of(event: &StreamResponse) -> Option<String> {
    if let Some(u) = &event.status_update {
        return u
            .metadata
            .as_ref()
            .and_then(|m| m.get("tag"))
            .and_then(Value::as_str)
            .map(str::to_owned);
    }
    let artifact = event.artifact_update.as_ref()?.artifact.as_ref()?;
    if artifact.artifact_id == SHARED {
        return artifact.parts.first()?.text.clone();
    }
    Some(artifact.artifact_id.clone())
}

/// Applies a commit's changes to `rec`; returns its events.
fn apply(rec: &mut TaskRecord, writer: usize, k: usize, changes: &[Change]) -> Vec<StreamResponse> {
    changes
        .iter()
        .enumerate()
        .map(|(e, change)| {
            let tag = tag(writer, k, e);
            match change {
                Change::Status(working) => {
                    let state = if *working {
                        TaskState::Working
                    } else {
                        TaskState::InputRequired
                    };
                    let mut metadata = Map::new();
                    metadata.insert("tag".into(), json!(tag));
                    set_status(rec, state, None, Some(metadata))
                }
                Change::Artifact => {
                    let artifact = Artifact {
                        artifact_id: tag.clone(),
                        parts: vec![Part::text(tag)],
                        ..Default::default()
                    };
                    add_artifact(rec, artifact, false, true)
                }
                Change::Append => {
                    let append = rec.task.artifacts.iter().any(|a| a.artifact_id == SHARED);
                    let artifact = Artifact {
                        artifact_id: SHARED.into(),
                        parts: vec![Part::text(tag)],
                        ..Default::default()
                    };
                    add_artifact(rec, artifact, append, false)
                }
            }
        })
        .collect()
}

/// What a writer was told of one successful commit.
#[derive(Debug)]
struct Won {
    tags: Vec<String>,
    /// The record as stored (its version and last seq).
    version: u64,
    last_seq: u64,
}

/// Loads, pauses, commits at the version read; on conflict pauses, reloads and retries.
async fn write(
    store: Arc<dyn Store>,
    task_id: String,
    writer: usize,
    commits: Vec<Commit>,
) -> Result<(Vec<Won>, usize), String> {
    let mut won = Vec::new();
    let mut conflicts = 0;
    for (k, commit) in commits.iter().enumerate() {
        loop {
            if conflicts > 10_000 {
                return Err(format!("writer {writer} never wins commit {k}"));
            }
            let current = store
                .load_task(&task_id)
                .await
                .map_err(|e| e.to_string())?
                .ok_or("the task is gone")?;
            commit.before.run().await;
            let mut next = current.clone();
            let events = apply(&mut next, writer, k, &commit.changes);
            match store.commit(&next, current.version, &events, None).await {
                Ok(stored) => {
                    if stored.version != current.version + 1
                        || stored.last_seq != current.last_seq + events.len() as u64
                    {
                        return Err(format!(
                            "commit at version {} (last seq {}) of {} events stored as version {} (last seq {})",
                            current.version, current.last_seq, events.len(), stored.version, stored.last_seq
                        ));
                    }
                    won.push(Won {
                        tags: (0..events.len()).map(|e| tag(writer, k, e)).collect(),
                        version: stored.version,
                        last_seq: stored.last_seq,
                    });
                    break;
                }
                Err(StoreError::Conflict { .. }) => {
                    conflicts += 1;
                    commit.retry.run().await;
                }
                Err(e) => return Err(format!("writer {writer} commit {k}: {e}")),
            }
        }
    }
    Ok((won, conflicts))
}

/// Runs the writers against a fresh store and checks the log and the record.
async fn run(plan: Vec<Vec<Commit>>) -> Result<(), TestCaseError> {
    let dir = tempfile::Builder::new()
        .prefix("harness-proptest-commits-")
        .tempdir()
        .expect("a temporary directory");
    let store: Arc<dyn Store> = Arc::new(EmbeddedStore::open(dir.path()).expect("open store"));
    let mut m = Message {
        message_id: new_id(),
        role: Role::User,
        parts: vec![Part::text("go")],
        ..Default::default()
    };
    let rec = new_task("", &mut m, &TaskExtension::from_text("go"));
    let rec = store
        .create_task(&rec, &[created(&rec)], None)
        .await
        .expect("create");
    let id = rec.task.id.clone();

    let handles: Vec<_> = plan
        .iter()
        .cloned()
        .enumerate()
        .map(|(w, commits)| tokio::spawn(write(store.clone(), id.clone(), w, commits)))
        .collect();
    let mut won = Vec::new();
    for h in handles {
        let (mine, _conflicts) = h
            .await
            .map_err(|e| TestCaseError::fail(format!("writer panicked: {e}")))?
            .map_err(TestCaseError::fail)?;
        won.extend(mine);
    }
    let planned: usize = plan.iter().map(Vec::len).sum();
    prop_assert_eq!(won.len(), planned, "every writer wins every commit");

    let last = store.load_task(&id).await.expect("load").expect("exists");
    let events: Vec<LoggedEvent> = store.read_events(&id, None, 100_000).await.expect("events");

    // Gap-free, in order, and the record's last_seq is the last event's.
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    prop_assert_eq!(&seqs, &(0..=last.last_seq).collect::<Vec<_>>());
    prop_assert_eq!(events.last().map(|e| e.seq), Some(last.last_seq));
    prop_assert_eq!(last.version, 1 + won.len() as u64);

    // Every successful commit's events, exactly once, together, where the store said.
    let by_seq: BTreeMap<u64, Option<String>> =
        events.iter().map(|e| (e.seq, tag_of(&e.event))).collect();
    prop_assert_eq!(by_seq.get(&0), Some(&None), "seq 0 is the creation event");
    let mut versions = BTreeSet::new();
    let mut expected_tags = BTreeSet::new();
    for w in &won {
        prop_assert!(
            versions.insert(w.version),
            "version {} won twice",
            w.version
        );
        let first = w.last_seq + 1 - w.tags.len() as u64;
        for (i, t) in w.tags.iter().enumerate() {
            prop_assert_eq!(by_seq.get(&(first + i as u64)), Some(&Some(t.clone())));
            expected_tags.insert(t.clone());
        }
    }
    let logged: Vec<String> = by_seq.values().flatten().cloned().collect();
    let logged_set: BTreeSet<String> = logged.iter().cloned().collect();
    prop_assert_eq!(logged.len(), logged_set.len(), "no event logged twice");
    prop_assert_eq!(logged_set, expected_tags, "nothing logged that no one won");

    // No lost update in the record: every artifact, every appended chunk in log order,
    // and the status of the last status event.
    let appended: Vec<String> = events
        .iter()
        .filter_map(|e| e.event.artifact_update.as_ref())
        .filter_map(|u| u.artifact.as_ref())
        .filter(|a| a.artifact_id == SHARED)
        .filter_map(|a| a.parts[0].text.clone())
        .collect();
    let shared: Vec<String> = last
        .task
        .artifacts
        .iter()
        .find(|a| a.artifact_id == SHARED)
        .map(|a| a.parts.iter().filter_map(|p| p.text.clone()).collect())
        .unwrap_or_default();
    prop_assert_eq!(shared, appended);
    let artifacts: BTreeSet<String> = last
        .task
        .artifacts
        .iter()
        .map(|a| a.artifact_id.clone())
        .filter(|a| a != SHARED)
        .collect();
    let logged_artifacts: BTreeSet<String> = events
        .iter()
        .filter_map(|e| e.event.artifact_update.as_ref())
        .filter_map(|u| u.artifact.as_ref())
        .map(|a| a.artifact_id.clone())
        .filter(|a| a != SHARED)
        .collect();
    prop_assert_eq!(artifacts, logged_artifacts);
    let last_status = events
        .iter()
        .rev()
        .find_map(|e| e.event.status_update.as_ref())
        .and_then(|u| u.status.clone());
    if let Some(status) = last_status {
        prop_assert_eq!(Some(status), last.task.status.clone());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn concurrent_commits_on_one_task_lose_nothing_and_leave_no_gap(plan in writers()) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(run(plan))?;
    }
}
