//! The store's and the sealing key's errors as A2A errors: what a caller may be told.

use crate::a2a::A2aError;
use crate::store::StoreError;

impl From<StoreError> for A2aError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Conflict { task_id, .. } => A2aError::Internal(format!(
                "task {task_id} is being changed by another request; try again"
            )),
            StoreError::NoTask(task_id) => A2aError::task_not_found(&task_id),
            StoreError::TooLarge(_) => A2aError::invalid_params(
                "the task would be larger than the store takes: a task's own data (its \
                 metadata and task envelope) is at most 48 KB, one commit at most 4 MB; send less",
            ),
            StoreError::TaskFull { bound, .. } => A2aError::invalid_params(format!(
                "the task is full: it holds at most {bound} ({}; a task's bytes are its \
                 messages', artifacts' and agent conversation's stored JSON), and this would \
                 pass that; nothing was stored. Start a new task to go on",
                bound.setting()
            )),
            StoreError::KeyTooLong(what) => A2aError::invalid_params(format!(
                "{what}: too long for the task store's keys (at most 2048 bytes in a partition \
                 key and 1024 in a sort key, DynamoDB's bounds, which every store keeps; a \
                 character counts its UTF-8 bytes, and a '#' or '%' in a tenant, participant id \
                 or messageId three); use shorter names"
            )),
            StoreError::PushConfigTaken { task_id, id } => A2aError::invalid_params(format!(
                "push notification config {id} of task {task_id} exists: {}",
                crate::ext::permissions::REPLACE_WEBHOOK_RULE
            )),
            StoreError::TooManyPushConfigs(task_id) => A2aError::invalid_params(format!(
                "task {task_id} already has {} push notification configs (the limit)",
                crate::store::MAX_CONFIGS_PER_TASK
            )),
            // The store's own words (its endpoint, the table, the SDK's request ids) are the
            // operator's: logged in the request's span, and the caller told only what failed.
            StoreError::Unavailable(why) => {
                tracing::error!(error = %why, "store unavailable");
                A2aError::Unavailable(STORE_FAILED.into())
            }
            other @ (StoreError::Corrupt(_) | StoreError::ReadOnly) => {
                tracing::error!(error = %other, "store error");
                A2aError::Internal(STORE_FAILED.into())
            }
            other => A2aError::Internal(other.to_string()),
        }
    }
}

/// What a caller is told of a store that failed their request.
const STORE_FAILED: &str = "the task store could not serve this request; try again later";

impl From<crate::sealing::SealError> for A2aError {
    fn from(e: crate::sealing::SealError) -> Self {
        A2aError::Internal(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store's failure reaches the caller as what failed, never in the store's words.
    #[test]
    fn a_store_failure_tells_the_caller_nothing_of_the_store() {
        let inner = "dispatch failure: io error: connection refused (http://10.1.2.3:8000), \
                     table harness-prod, request id 7f3c";
        for (e, code) in [
            (StoreError::Unavailable(inner.into()), 503),
            (StoreError::Corrupt(inner.into()), 500),
        ] {
            let answer = A2aError::from(e);
            assert_eq!(answer.http_status(), code);
            let text = answer.to_json_rpc().to_string();
            for word in ["10.1.2.3", "harness-prod", "7f3c", "dispatch"] {
                assert!(!text.contains(word), "{text}");
            }
            assert!(text.contains(STORE_FAILED), "{text}");
        }
    }
}
