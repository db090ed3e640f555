//! `google.protobuf.Timestamp` as ProtoJSON: RFC 3339 in UTC, printed with milliseconds.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A point in time, always UTC; printed as `2025-10-28T10:30:00.000Z`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub DateTime<Utc>);

impl Timestamp {
    /// The current time, truncated to milliseconds so what is stored equals what is printed.
    pub fn now() -> Self {
        let now = Utc::now();
        Timestamp(DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now))
    }

    pub fn parse(s: &str) -> Result<Self, chrono::ParseError> {
        Ok(Timestamp(
            DateTime::parse_from_rfc3339(s)?.with_timezone(&Utc),
        ))
    }

    pub fn millis(&self) -> i64 {
        self.0.timestamp_millis()
    }
}

impl std::fmt::Display for Timestamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.to_rfc3339_opts(SecondsFormat::Millis, true))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Timestamp::parse(&s)
            .map_err(|e| serde::de::Error::custom(format!("invalid timestamp {s:?}: {e}")))
    }
}
