//! Per-key async locks inside one process: work for one key runs one at a time, in the
//! order it asked, and a key's entry goes away when nobody holds or waits for it.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

#[derive(Default)]
pub struct KeyedLocks {
    map: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl KeyedLocks {
    /// Runs `work` while holding the lock of `key`.
    pub async fn run<F: Future>(&self, key: &str, work: F) -> F::Output {
        let lock = {
            let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
            map.entry(key.to_owned()).or_default().clone()
        };
        let out = {
            let _held = lock.lock().await;
            work.await
        };
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        // Two references left: the map's and ours; nobody else waits.
        if map.get(key).is_some_and(|l| Arc::strong_count(l) <= 2) {
            map.remove(key);
        }
        out
    }
}
