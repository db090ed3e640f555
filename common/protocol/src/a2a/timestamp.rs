//! `google.protobuf.Timestamp` as ProtoJSON: RFC 3339 in UTC, printed with milliseconds.

use chrono::{DateTime, Datelike, SecondsFormat, Utc};
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
        let t = Timestamp::parse(&s)
            .map_err(|e| serde::de::Error::custom(format!("invalid timestamp {s:?}: {e}")))?;
        // google.protobuf.Timestamp's range: years 1 to 9999 in UTC. An offset can take
        // an RFC 3339 time outside it (`9999-12-31T23:59:59-01:00`), and that prints as
        // `+10000-...`, which is not RFC 3339 and could not be read back (found by fuzzing).
        if !(1..=9999).contains(&t.0.year()) {
            return Err(serde::de::Error::custom(format!(
                "invalid timestamp {s:?}: outside 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z"
            )));
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_outside_the_proto_range_in_utc_are_refused() {
        let read = |s: &str| serde_json::from_value::<Timestamp>(serde_json::json!(s));
        assert!(read("9999-12-31T23:59:59-01:00").is_err());
        assert!(read("0001-01-01T00:00:00+01:00").is_err());
        assert!(read("0000-06-01T00:00:00Z").is_err());
        let edge = read("9999-12-31T23:59:59.999+00:00").unwrap();
        assert_eq!(edge.to_string(), "9999-12-31T23:59:59.999Z");
        assert_eq!(read(&edge.to_string()).ok(), Some(edge));
        assert!(read("0001-01-01T00:00:00Z").is_ok());
    }
}
