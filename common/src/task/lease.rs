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

    /// A timer, not a holder: the task waits (on a remote agent it polls, or until a
    /// delegation's deadline), and the sweep, which finds it by the index it keeps of
    /// leases, hands it to a drive when it runs out (see `crate::remote`). Any drive may
    /// take it before that (a message for the task, a wake-up).
    pub fn poll(after: Duration) -> Self {
        Lease {
            owner: POLL_OWNER.to_owned(),
            until_ms: now_ms() + after.as_millis() as i64,
        }
    }

    /// Whether it is still in force: a drive holds it and it has not run out (a poll
    /// timer is held by no drive).
    pub fn held(&self) -> bool {
        !self.is_timer() && self.until_ms > now_ms()
    }

    /// Whether it is a timer ([`Lease::poll`]), held by no drive.
    pub fn is_timer(&self) -> bool {
        self.owner == POLL_OWNER
    }
}

/// The owner of a poll timer ([`Lease::poll`]); no engine has it.
pub const POLL_OWNER: &str = "(poll)";

/// A deadline given in ms since the epoch (a Lambda invocation's) as an instant; None
/// when it is not in the future, which no real invocation starts with (`cargo lambda
/// watch` sends a fixed `600000`, i.e. 1970): an unknown deadline, not a spent one.
pub fn instant_at_epoch_ms(deadline_ms: u64) -> Option<std::time::Instant> {
    let now = now_ms().max(0) as u64;
    (deadline_ms > now)
        .then(|| std::time::Instant::now() + Duration::from_millis(deadline_ms - now))
}

pub fn now_ms() -> i64 {
    Timestamp::now().millis()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_in_the_past_is_unknown_not_spent() {
        assert_eq!(instant_at_epoch_ms(600_000), None);
        let soon = instant_at_epoch_ms(now_ms() as u64 + 60_000).expect("in the future");
        let left = soon.saturating_duration_since(std::time::Instant::now());
        assert!(left > Duration::from_secs(50) && left <= Duration::from_secs(60));
    }
}
