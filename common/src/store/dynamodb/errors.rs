//! How the SDK's errors become the store's: unavailable, corrupt, a failed condition or a
//! write too large, so the callers see one [`StoreError`] whatever the store.

use aws_sdk_dynamodb::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::error::TransactionCanceledException;

use crate::store::StoreError;

pub(super) fn unavailable<E: std::error::Error + 'static, R: std::fmt::Debug>(
    e: SdkError<E, R>,
) -> StoreError {
    StoreError::Unavailable(DisplayErrorContext(&e).to_string())
}

/// Whether the `i`-th item of a cancelled transaction failed its condition.
pub(super) fn condition_failed(cancel: &TransactionCanceledException, i: usize) -> bool {
    cancel.cancellation_reasons().get(i).and_then(|r| r.code()) == Some("ConditionalCheckFailed")
}

/// Whether DynamoDB refused a write for its size: an item over 400 KB, or a transaction
/// over 4 MB (DynamoDB Local: "Transaction payload size cannot exceed 4MB"). Commits are
/// checked against both before they are sent (`commit_items`); this
/// catches what that estimate misses.
pub(super) fn too_large<E: ProvideErrorMetadata, R>(e: &SdkError<E, R>) -> bool {
    let size = |m: &str| {
        let m = m.to_ascii_lowercase();
        m.contains("size") && (m.contains("exceed") || m.contains("larger than"))
    };
    e.code() == Some("ValidationException") && e.message().is_some_and(size)
}

pub(super) fn corrupt(e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(e.to_string())
}
