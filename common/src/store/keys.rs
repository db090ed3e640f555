//! The two DynamoDB keys that join names a client chose (a message's dedupe key from its
//! tenant, sender and messageId; a push config's from its id), with DynamoDB's bounds on
//! them, and the escaping of a key's parts. Every store enforces those bounds, so a
//! request the embedded store takes locally is one the deployed store takes too.

use super::StoreError;

/// One part of a composite key with its separator escaped (`#` as `%23`, and `%` as
/// `%25` so the escape is reversible): `a` + `b#c` and `a#b` + `c` stay two keys.
pub(crate) fn key_part(part: &str) -> std::borrow::Cow<'_, str> {
    if part.contains(['#', '%']) {
        part.replace('%', "%25").replace('#', "%23").into()
    } else {
        part.into()
    }
}

/// DynamoDB's bounds on a key's values, in bytes: below them, as DynamoDB Local words it.
const MAX_PARTITION_KEY_BYTES: usize = 2047;
const MAX_SORT_KEY_BYTES: usize = 1023;

/// `key` if DynamoDB takes it (at most `max` bytes), else why not. Only the two keys that
/// join names a client chose can be longer than that; each name is at most 256 characters,
/// but a character is up to four bytes and `key_part` writes a `#` or `%` as three.
fn bounded(key: String, max: usize, what: &'static str) -> Result<String, StoreError> {
    if key.len() <= max {
        Ok(key)
    } else {
        Err(StoreError::KeyTooLong(what))
    }
}

/// The partition key of a message's dedupe item, if DynamoDB takes it.
pub(crate) fn message_pk(
    tenant: &str,
    sender: &str,
    message_id: &str,
) -> Result<String, StoreError> {
    let key = format!(
        "IN#{}#{}#{}",
        key_part(tenant),
        key_part(sender),
        key_part(message_id)
    );
    bounded(
        key,
        MAX_PARTITION_KEY_BYTES,
        "the tenant, the sender's participant id and the messageId together",
    )
}

/// The sort key of a push config's item, if DynamoDB takes it.
pub(crate) fn push_sk(config_id: &str) -> Result<String, StoreError> {
    // One byte short of the bound, for list_push_configs' `PUSH#<id>$` after a page.
    bounded(
        format!("PUSH#{config_id}"),
        MAX_SORT_KEY_BYTES - 1,
        "the push notification config id",
    )
}
