//! The embedded store's cache of decoded task views (what GetTask reads): a view read once
//! is answered again from memory until its task changes, with no SQLite read transaction
//! and no JSON decoding. It owns the rules that keep it coherent with every process that
//! writes the same state directory (one per function under `cargo lambda watch`):
//!
//! - A process's own commits drop the views of the task they wrote once their outcome is
//!   known, on the thread that committed them ([`Changed`]): before the commit is
//!   acknowledged or signalled, and even when its caller has gone. (A new task has no views
//!   to drop.)
//! - Every such commit, by any process, then adds one to a counter in a file beside the
//!   database (`harness.changes`, mapped into each process as SQLite maps its WAL index).
//!   A process that finds the counter moved by more than its own commits drops every view:
//!   another process wrote something.
//! - A view read from the database is kept only if nothing was committed between the start
//!   of its read and its keeping (an epoch that every change moves), so an older snapshot
//!   never replaces a newer one.
//!
//! Its size is bounded ([`MAX_BYTES`] of the views' stored JSON, none over
//! [`MAX_VIEW_BYTES`], [`VIEWS_PER_TASK`] a task); when full it starts over.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use memmap2::{MmapMut, MmapOptions};

use super::layout::Want;
use super::{StoreError, TaskRecord};

/// The counter's file in the state directory.
pub const CHANGES_FILE: &str = "harness.changes";
/// Most bytes of stored JSON the cache keeps, over all its views.
pub const MAX_BYTES: usize = 1 << 20;
/// A view larger than this (its stored JSON) is read each time, not kept.
pub const MAX_VIEW_BYTES: usize = 64 << 10;
/// Most views of one task (each `historyLength` asked for is a view of its own); a new one
/// replaces the oldest.
pub const VIEWS_PER_TASK: usize = 4;

/// The commit counter every process on the directory shares.
struct Changes {
    /// The file's first 8 bytes: the counter.
    map: MmapMut,
}

impl Changes {
    fn open(dir: &Path) -> Result<Changes, StoreError> {
        let unavailable = |e: std::io::Error| {
            StoreError::Unavailable(format!(
                "cannot open {}: {e}",
                dir.join(CHANGES_FILE).display()
            ))
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(dir.join(CHANGES_FILE))
            .map_err(unavailable)?;
        // Only ever grown, from empty: another process may be counting in it already.
        if file.metadata().map_err(unavailable)?.len() < 8 {
            file.set_len(8).map_err(unavailable)?;
        }
        // SAFETY: the mapping is shared with the other processes of this state directory,
        // which only read and add to the counter atomically (`counter`) and never shrink
        // the file; a file cut short by hand would fault on access, as SQLite's WAL index
        // would.
        let map = unsafe { MmapOptions::new().len(8).map_mut(&file) }.map_err(unavailable)?;
        Ok(Changes { map })
    }

    fn counter(&self) -> &AtomicU64 {
        // SAFETY: the mapping is at least 8 bytes, page-aligned, lives as long as `self`,
        // and is only ever accessed as this one atomic, in this process and the others.
        unsafe { &*self.map.as_ptr().cast::<AtomicU64>() }
    }
}

/// A change of a task by this process, told to the cache when dropped: once the commit's
/// outcome is known, whoever holds it then.
pub struct Changed {
    cache: Arc<ViewCache>,
    id: String,
}

impl Changed {
    pub fn new(cache: &Arc<ViewCache>, id: &str) -> Changed {
        Changed {
            cache: cache.clone(),
            id: id.to_owned(),
        }
    }
}

impl Drop for Changed {
    fn drop(&mut self) {
        self.cache.changed(&self.id);
    }
}

/// What a view's read was started under: kept only if still current.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket(u64);

pub enum Lookup {
    Hit(Arc<TaskRecord>),
    Miss(Ticket),
}

struct View {
    want: Want,
    rec: Arc<TaskRecord>,
    bytes: usize,
}

#[derive(Default)]
struct Views {
    /// The shared counter as this process last accounted for it.
    seen: u64,
    /// Moved by every change this cache learns of: a read started in an earlier epoch may
    /// have read what the change replaced.
    epoch: u64,
    bytes: usize,
    tasks: HashMap<String, Vec<View>>,
}

impl Views {
    fn clear(&mut self) {
        self.tasks.clear();
        self.bytes = 0;
    }

    /// Drops everything if the shared counter moved past this process's own commits.
    fn catch_up(&mut self, counter: u64) {
        if counter != self.seen {
            self.seen = counter;
            self.epoch += 1;
            self.clear();
        }
    }
}

pub struct ViewCache {
    changes: Changes,
    views: Mutex<Views>,
}

impl ViewCache {
    pub fn open(dir: &Path) -> Result<ViewCache, StoreError> {
        let changes = Changes::open(dir)?;
        let seen = changes.counter().load(Ordering::Acquire);
        Ok(ViewCache {
            changes,
            views: Mutex::new(Views {
                seen,
                ..Views::default()
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Views> {
        // A panic while the lock was held can leave only a view too many or too few.
        self.views
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The views, once every other process's commits are accounted for.
    fn views(&self) -> MutexGuard<'_, Views> {
        let mut views = self.lock();
        views.catch_up(self.changes.counter().load(Ordering::Acquire));
        views
    }

    /// Task `id`'s view as `want` asks, or the ticket to keep it under once read.
    pub fn get(&self, id: &str, want: Want) -> Lookup {
        let views = self.views();
        let hit = views
            .tasks
            .get(id)
            .and_then(|v| v.iter().find(|v| v.want == want));
        match hit {
            Some(v) => Lookup::Hit(v.rec.clone()),
            None => Lookup::Miss(Ticket(views.epoch)),
        }
    }

    /// Keeps `rec`, read as `want` asks under `ticket`, of `bytes` stored JSON, unless a
    /// change came in between or it is too large.
    pub fn keep(&self, ticket: Ticket, want: Want, rec: &TaskRecord, bytes: usize) {
        if bytes > MAX_VIEW_BYTES {
            return;
        }
        let mut views = self.views();
        if views.epoch != ticket.0 {
            return;
        }
        if views.bytes + bytes > MAX_BYTES {
            views.clear();
        }
        views.bytes += bytes;
        let task = views.tasks.entry(rec.task.id.clone()).or_default();
        // One view a `Want`, and few of them: `historyLength` is the client's to vary.
        let old = task
            .iter()
            .position(|v| v.want == want)
            .or((task.len() >= VIEWS_PER_TASK).then_some(0))
            .map(|i| task.remove(i).bytes);
        task.push(View {
            want,
            rec: Arc::new(rec.clone()),
            bytes,
        });
        views.bytes -= old.unwrap_or(0);
    }

    /// Task `id` was committed (or a commit of it was attempted) by this process: its views
    /// go, and the other processes learn of it from the counter.
    fn changed(&self, id: &str) {
        let mut views = self.lock();
        // Under the lock, so this process's steps are accounted in their order: any other
        // step since the last one seen is another process's.
        let before = self.changes.counter().fetch_add(1, Ordering::AcqRel);
        views.catch_up(before);
        views.seen = before + 1;
        views.epoch += 1;
        if let Some(task) = views.tasks.remove(id) {
            views.bytes -= task.iter().map(|v| v.bytes).sum::<usize>();
        }
    }

    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.views().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, version: u64) -> TaskRecord {
        let mut rec = TaskRecord::default();
        rec.task.id = id.into();
        rec.version = version;
        rec
    }

    fn hit(cache: &ViewCache, id: &str) -> Option<u64> {
        match cache.get(id, Want::WHOLE) {
            Lookup::Hit(rec) => Some(rec.version),
            Lookup::Miss(_) => None,
        }
    }

    fn ticket(cache: &ViewCache, id: &str) -> Ticket {
        match cache.get(id, Want::WHOLE) {
            Lookup::Miss(t) => t,
            Lookup::Hit(_) => panic!("{id} is cached"),
        }
    }

    #[test]
    fn a_view_stays_until_its_task_changes() {
        let d = tempfile::tempdir().unwrap();
        let cache = ViewCache::open(d.path()).unwrap();
        let t = ticket(&cache, "a");
        cache.keep(t, Want::WHOLE, &record("a", 1), 100);
        let t = ticket(&cache, "b");
        cache.keep(t, Want::WHOLE, &record("b", 1), 100);
        assert_eq!(hit(&cache, "a"), Some(1));
        cache.changed("a");
        assert_eq!(hit(&cache, "a"), None);
        // Another task's view stays: the change was this process's own.
        assert_eq!(hit(&cache, "b"), Some(1));
        assert_eq!(cache.bytes(), 100);
    }

    /// A read that started before a change may hold what the change replaced.
    #[test]
    fn a_view_read_before_a_change_is_not_kept() {
        let d = tempfile::tempdir().unwrap();
        let cache = ViewCache::open(d.path()).unwrap();
        let t = ticket(&cache, "a");
        cache.changed("a");
        cache.keep(t, Want::WHOLE, &record("a", 1), 100);
        assert_eq!(hit(&cache, "a"), None);
    }

    /// Another process's commit (another cache on the directory) drops every view.
    #[test]
    fn another_processes_change_drops_every_view() {
        let d = tempfile::tempdir().unwrap();
        let (here, there) = (
            ViewCache::open(d.path()).unwrap(),
            ViewCache::open(d.path()).unwrap(),
        );
        let t = ticket(&here, "a");
        here.keep(t, Want::WHOLE, &record("a", 1), 100);
        here.changed("b");
        assert_eq!(hit(&here, "a"), Some(1));
        there.changed("c");
        assert_eq!(hit(&here, "a"), None);
        // Counted between this process's own commits, too.
        let t = ticket(&here, "a");
        here.keep(t, Want::WHOLE, &record("a", 1), 100);
        there.changed("c");
        here.changed("b");
        assert_eq!(hit(&here, "a"), None);
    }

    /// `historyLength` is the client's: each length is a view, and a task keeps a few.
    #[test]
    fn a_task_keeps_a_few_views() {
        let d = tempfile::tempdir().unwrap();
        let cache = ViewCache::open(d.path()).unwrap();
        for n in 0..VIEWS_PER_TASK + 3 {
            let want = Want::view(Some(n), false);
            let Lookup::Miss(t) = cache.get("a", want) else {
                panic!("view {n} is cached");
            };
            cache.keep(t, want, &record("a", 1), 100);
        }
        assert_eq!(cache.bytes(), VIEWS_PER_TASK * 100);
        let newest = Want::view(Some(VIEWS_PER_TASK + 2), false);
        assert!(matches!(cache.get("a", newest), Lookup::Hit(_)));
        assert!(matches!(
            cache.get("a", Want::view(Some(0), false)),
            Lookup::Miss(_)
        ));
    }

    #[test]
    fn its_size_is_bounded() {
        let d = tempfile::tempdir().unwrap();
        let cache = ViewCache::open(d.path()).unwrap();
        let t = ticket(&cache, "big");
        cache.keep(t, Want::WHOLE, &record("big", 1), MAX_VIEW_BYTES + 1);
        assert_eq!(hit(&cache, "big"), None);
        for i in 0..(MAX_BYTES / MAX_VIEW_BYTES + 3) {
            let id = i.to_string();
            let t = ticket(&cache, &id);
            cache.keep(t, Want::WHOLE, &record(&id, 1), MAX_VIEW_BYTES);
            assert!(cache.bytes() <= MAX_BYTES);
        }
    }
}
