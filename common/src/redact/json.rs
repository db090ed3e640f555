//! Redaction of JSON: every string value and object key, and AWS secret keys that JSON
//! splits into a member's name and its value.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::builtin::aws_secret_name;
use super::{marker, Redactor};

/// The name of a JSON member whose value is an AWS secret access key.
static AWS_SECRET_MEMBER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(aws_secret_name!()).expect("built-in redaction pattern compiles"));

impl Redactor {
    /// Redacts every string value inside the JSON value in place (object values, array
    /// items, nested), and object keys too (a key that is a credential is renamed to its
    /// redacted form). Returns true when anything changed.
    ///
    /// A member named like an AWS secret key (`"SecretAccessKey"`, `"aws_secret_access_key"`)
    /// whose value is 40 key characters has it replaced: in JSON the name and the value are
    /// separate strings, so the text pattern cannot see them together. A renamed key that
    /// would collide with another key gets a ` (2)`, ` (3)`, … suffix, so no value is lost.
    pub fn redact_json(&self, value: &mut Value) -> bool {
        match value {
            Value::String(text) => self.redact_string(text),
            Value::Array(items) => items
                .iter_mut()
                .fold(false, |changed, item| self.redact_json(item) | changed),
            Value::Object(members) => self.redact_object(members),
            Value::Null | Value::Bool(_) | Value::Number(_) => false,
        }
    }

    /// Redacts a client's message where it enters: every text part, data part, file
    /// name and URL, part metadata and message metadata. Returns true when anything
    /// changed.
    pub fn message(&self, message: &mut protocol::a2a::Message) -> bool {
        let mut changed = self.metadata(&mut message.metadata);
        for part in &mut message.parts {
            for text in [part.text.as_mut(), part.url.as_mut()]
                .into_iter()
                .flatten()
            {
                changed |= self.redact_string(text);
            }
            changed |= self.redact_string(&mut part.filename);
            if let Some(data) = &mut part.data {
                changed |= self.redact_json(data);
            }
            changed |= self.metadata(&mut part.metadata);
        }
        changed
    }

    /// Redacts a request's metadata (a message's, a part's, a cancel's).
    pub fn metadata(&self, metadata: &mut Option<Map<String, Value>>) -> bool {
        metadata
            .as_mut()
            .is_some_and(|members| self.redact_object(members))
    }

    fn redact_object(&self, members: &mut Map<String, Value>) -> bool {
        let mut changed = false;
        let mut rename = false;
        for (key, value) in members.iter_mut() {
            match value {
                Value::String(text) if is_aws_secret_member(key, text) => {
                    *text = marker("aws-secret-key");
                    changed = true;
                }
                _ => changed |= self.redact_json(value),
            }
            rename |= self.is_match(key);
        }
        if rename {
            self.rename_keys(members);
        }
        changed | rename
    }

    /// Rebuilds `members` with redacted keys, in their order (a map with preserved order
    /// would move a key removed and inserted again to the end).
    fn rename_keys(&self, members: &mut Map<String, Value>) {
        let old = std::mem::take(members);
        let renamed: Vec<Option<String>> = old
            .keys()
            .map(|key| match self.redact_str(key) {
                Cow::Borrowed(_) => None,
                Cow::Owned(redacted) => Some(redacted),
            })
            .collect();
        // Keys that stay keep their name; a renamed key gives way to them.
        let kept: HashSet<String> = old
            .keys()
            .zip(&renamed)
            .filter(|(_, new)| new.is_none())
            .map(|(key, _)| key.clone())
            .collect();
        // The next suffix to try for each redacted base: many keys redacted to the same
        // marker cost one probe each, not one per key before them.
        let mut next: std::collections::HashMap<String, usize> = Default::default();
        for ((key, value), new) in old.into_iter().zip(renamed) {
            let key = match new {
                None => key,
                Some(base) => {
                    let n = next.entry(base.clone()).or_insert(1);
                    let mut key = if *n == 1 {
                        base.clone()
                    } else {
                        format!("{base} ({n})")
                    };
                    while kept.contains(&key) || members.contains_key(&key) {
                        *n += 1;
                        key = format!("{base} ({n})");
                    }
                    *n += 1;
                    key
                }
            };
            members.insert(key, value);
        }
    }
}

/// A member named like an AWS secret key whose whole value is one.
fn is_aws_secret_member(key: &str, value: &str) -> bool {
    value.len() == 40
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'+' | b'='))
        && AWS_SECRET_MEMBER.is_match(key)
}
