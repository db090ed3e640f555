//! Leases: which drive holds a task, and until when. A drive takes the lease with a
//! conditional write, renews it with every commit it makes, and gives it up when the task
//! is terminal, waits for input, or must be handed over; a lease that runs out marks a
//! drive that was cut off, which the sweeper makes runnable again.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::a2a::Timestamp;

/// How long a lease lasts unless configured otherwise: longer than the longest single step
/// (a model call with its retries), since every commit renews it.
pub const DEFAULT_TTL: Duration = Duration::from_secs(300);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// The engine (one per process or invocation environment) that drives the task.
    pub owner: String,
    /// When it runs out, in ms since the epoch.
    pub until_ms: i64,
}

impl Lease {
    pub fn new(owner: &str, ttl: Duration) -> Self {
        Lease {
            owner: owner.to_owned(),
            until_ms: now_ms() + ttl.as_millis() as i64,
        }
    }

    /// Whether it is still in force.
    pub fn held(&self) -> bool {
        self.until_ms > now_ms()
    }
}

/// A deadline given in ms since the epoch (a Lambda invocation's) as an instant.
pub fn instant_at_epoch_ms(deadline_ms: u64) -> std::time::Instant {
    let now = now_ms().max(0) as u64;
    std::time::Instant::now() + Duration::from_millis(deadline_ms.saturating_sub(now))
}

pub fn now_ms() -> i64 {
    Timestamp::now().millis()
}
