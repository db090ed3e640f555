//! Checks serde cannot express: required fields present and non-empty, oneofs with
//! exactly one member, numeric ranges. Each failure names the offending field.

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;

use super::error::A2aError;
use super::types::{Message, Part, Role, StreamResponse};

/// Longest name a request carries (characters): its tenant, a task, context, push config
/// or message id, a participant id ([`crate::ext::participant::MAX_ID_LEN`]). Each is part of
/// stored keys, whose size the stores bound.
pub const ID_CHARS: usize = 256;

/// A tenant or id a request names: at most [`ID_CHARS`].
pub fn id_length(value: &str, field: &str) -> Result<(), A2aError> {
    if too_long(value) {
        Err(longer_than_id_chars(field))
    } else {
        Ok(())
    }
}

fn too_long(value: &str) -> bool {
    value.len() > ID_CHARS && value.chars().count() > ID_CHARS
}

fn longer_than_id_chars(field: &str) -> A2aError {
    A2aError::invalid_field(
        field,
        format!("{field} is longer than {ID_CHARS} characters"),
    )
}

/// A message as a client sends it: `messageId` (at most [`ID_CHARS`]), `role` and
/// at least one valid part. `raw` parts are normalised to standard padded base64.
pub fn message(m: &mut Message, path: &str) -> Result<(), A2aError> {
    if m.message_id.is_empty() {
        return Err(A2aError::invalid_field(
            format!("{path}.messageId"),
            format!("{path}.messageId is required"),
        ));
    }
    // Not through id_length: the field's name is built only for a refusal, not every send.
    if too_long(&m.message_id) {
        return Err(longer_than_id_chars(&format!("{path}.messageId")));
    }
    if m.role == Role::Unspecified {
        return Err(A2aError::invalid_field(
            format!("{path}.role"),
            format!("{path}.role is required (ROLE_USER or ROLE_AGENT)"),
        ));
    }
    if m.parts.is_empty() {
        return Err(A2aError::invalid_field(
            format!("{path}.parts"),
            format!("{path}.parts must hold at least one part"),
        ));
    }
    for (i, p) in m.parts.iter_mut().enumerate() {
        part(p, &format!("{path}.parts[{i}]"))?;
    }
    Ok(())
}

/// Exactly one of `text`, `raw`, `url`, `data`.
pub fn part(p: &mut Part, path: &str) -> Result<(), A2aError> {
    match p.content_members() {
        1 => {}
        0 => {
            return Err(A2aError::invalid_field(
                path,
                format!("{path} must have one of text, raw, url or data"),
            ))
        }
        _ => {
            return Err(A2aError::invalid_field(
                path,
                format!("{path} must have only one of text, raw, url or data"),
            ))
        }
    }
    if let Some(raw) = &p.raw {
        let bytes = [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
            .iter()
            .find_map(|engine| engine.decode(raw).ok())
            .ok_or_else(|| {
                A2aError::invalid_field(format!("{path}.raw"), format!("{path}.raw is not base64"))
            })?;
        p.raw = Some(STANDARD.encode(bytes));
    }
    Ok(())
}

/// Exactly one member of the StreamResponse oneof.
pub fn stream_response(r: &StreamResponse) -> Result<(), A2aError> {
    match r.members() {
        1 => Ok(()),
        0 => Err(A2aError::invalid_params(
            "a StreamResponse must have one of task, message, statusUpdate or artifactUpdate",
        )),
        _ => Err(A2aError::invalid_params(
            "a StreamResponse must have only one of task, message, statusUpdate or artifactUpdate",
        )),
    }
}

/// `historyLength`: absent means everything, 0 means none, negative is invalid.
pub fn history_length(n: Option<i32>, field: &str) -> Result<Option<usize>, A2aError> {
    match n {
        None => Ok(None),
        Some(n) if n < 0 => Err(A2aError::invalid_field(
            field,
            format!("{field} must not be negative (got {n})"),
        )),
        Some(n) => Ok(Some(n as usize)),
    }
}

/// `pageSize`: 1..=max, `default` when absent.
pub fn page_size(n: Option<i32>, default: usize, max: usize) -> Result<usize, A2aError> {
    match n {
        None => Ok(default),
        Some(n) if n >= 1 && n as usize <= max => Ok(n as usize),
        Some(n) => Err(A2aError::invalid_field(
            "pageSize",
            format!("pageSize must be between 1 and {max} (got {n})"),
        )),
    }
}

/// A required identifier.
pub fn required_id(value: &str, field: &str) -> Result<(), A2aError> {
    if value.is_empty() {
        Err(A2aError::invalid_field(
            field,
            format!("{field} is required"),
        ))
    } else {
        Ok(())
    }
}
