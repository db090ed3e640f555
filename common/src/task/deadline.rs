//! Reply deadlines: how long a question or a task for a participant may wait for its
//! answer (`reply_within`: `90s`, `45m`, `2h`, `3d`, from [`MIN_WITHIN`] to
//! [`MAX_WITHIN`]), when its addressee is reminded (once, half-way) and when it expires.
//! A deadline is plain data kept with what waits on it; the task waits under a timer
//! (`lease::Lease::poll`) set to its next step, which the sweep finds in the index it
//! keeps of leases, so nothing runs or sleeps per wait.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::a2a::Timestamp;

/// The shortest `reply_within`.
pub const MIN_WITHIN: Duration = Duration::from_secs(1);
/// The longest `reply_within`, and the maximum unless the deployment sets a shorter one.
pub const MAX_WITHIN: Duration = Duration::from_secs(30 * 24 * 3600);

/// When the answer is due, and when its addressee is reminded (None once they were).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deadline {
    /// ms since the epoch.
    pub due_ms: i64,
    /// ms since the epoch; None once the reminder went out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remind_ms: Option<i64>,
}

/// What a deadline asks for now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Nothing yet: wait this long for the next step.
    Wait(Duration),
    /// Half-way: remind the addressee (once).
    Remind,
    /// Passed unanswered.
    Expired,
}

impl Deadline {
    /// A deadline `within` from now, with its reminder half-way.
    pub fn within(within: Duration) -> Self {
        let now = super::lease::now_ms();
        let ms = within.as_millis().min(i64::MAX as u128) as i64;
        Deadline {
            due_ms: now.saturating_add(ms),
            remind_ms: Some(now.saturating_add(ms / 2)),
        }
    }

    pub fn step_at(&self, now_ms: i64) -> Step {
        if now_ms >= self.due_ms {
            return Step::Expired;
        }
        match self.remind_ms {
            Some(at) if now_ms >= at => Step::Remind,
            Some(at) => Step::Wait(Duration::from_millis((at - now_ms) as u64)),
            None => Step::Wait(Duration::from_millis((self.due_ms - now_ms) as u64)),
        }
    }

    pub fn step(&self) -> Step {
        self.step_at(super::lease::now_ms())
    }

    /// Whether it has a step to take now (a reminder or its expiry).
    pub fn due_now(&self) -> bool {
        !matches!(self.step(), Step::Wait(_))
    }

    /// The timer a task waits under until its next step: written with the commit that
    /// leaves it waiting (which gives up the drive's lease), so the sweep finds it then.
    pub fn timer(&self) -> super::lease::Lease {
        super::lease::Lease {
            owner: super::lease::POLL_OWNER.to_owned(),
            until_ms: self.remind_ms.unwrap_or(self.due_ms),
        }
    }

    /// The due time as people and clients read it: RFC 3339, UTC, to the second.
    pub fn due_text(&self) -> String {
        let at = chrono::DateTime::from_timestamp_millis(self.due_ms).unwrap_or_default();
        Timestamp(at)
            .0
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    }
}

/// A `reply_within` as written (`90s`, `45m`, `2h`, `3d`): a whole number and one unit,
/// from [`MIN_WITHIN`] to `max`. The error says what is accepted.
pub fn parse_within(text: &str, max: Duration) -> Result<Duration, String> {
    let bad = || {
        format!(
            "reply_within {text:?} is not a duration from 1s to {}: a whole number and a unit, s, m, h or d (90s, 45m, 2h, 3d)",
            write_within(max)
        )
    };
    let unit_at = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (digits, unit) = text.split_at(unit_at);
    let n: u64 = (!digits.is_empty() && digits.len() <= 10)
        .then(|| digits.parse().ok())
        .flatten()
        .ok_or_else(bad)?;
    let secs = match unit {
        "s" => n,
        "m" => n.saturating_mul(60),
        "h" => n.saturating_mul(3600),
        "d" => n.saturating_mul(86_400),
        _ => return Err(bad()),
    };
    let within = Duration::from_secs(secs);
    if within < MIN_WITHIN || within > max {
        return Err(bad());
    }
    Ok(within)
}

/// A duration as `reply_within` writes it, in its largest whole unit.
pub fn write_within(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        s if s > 0 && s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s > 0 && s % 3600 == 0 => format!("{}h", s / 3600),
        s if s > 0 && s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

/// The deployment's rule for `reply_within`: the default when the model gives none
/// (None: no deadline), and the longest it may give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyWithin {
    pub default: Option<Duration>,
    pub max: Duration,
}

impl Default for ReplyWithin {
    fn default() -> Self {
        ReplyWithin {
            default: None,
            max: MAX_WITHIN,
        }
    }
}

impl ReplyWithin {
    /// The rule as configured: the default and the maximum as written (`90s`, `2h`...),
    /// each unset for none and 30 days; the default no longer than the maximum. The error
    /// names the setting (`default_name`, `max_name`).
    pub fn parse(
        (default_name, default): (&str, Option<&str>),
        (max_name, max): (&str, Option<&str>),
    ) -> Result<Self, String> {
        let max = match max {
            Some(text) => {
                parse_within(text.trim(), MAX_WITHIN).map_err(|e| format!("{max_name}: {e}"))?
            }
            None => MAX_WITHIN,
        };
        let default = default
            .map(|text| parse_within(text.trim(), max).map_err(|e| format!("{default_name}: {e}")))
            .transpose()?;
        Ok(ReplyWithin { default, max })
    }

    /// The deadline a wait starting now gets: the model's `asked` (checked against the
    /// maximum), else the default; None when neither gives one.
    pub fn deadline(&self, asked: Option<&str>) -> Result<Option<Deadline>, String> {
        let within = match asked {
            Some(text) => Some(parse_within(text, self.max)?),
            None => self.default,
        };
        Ok(within.map(Deadline::within))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_a_number_and_a_unit_within_bounds() {
        let max = MAX_WITHIN;
        assert_eq!(parse_within("90s", max), Ok(Duration::from_secs(90)));
        assert_eq!(parse_within("45m", max), Ok(Duration::from_secs(2700)));
        assert_eq!(parse_within("2h", max), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_within("3d", max), Ok(Duration::from_secs(259_200)));
        assert_eq!(parse_within("30d", max), Ok(MAX_WITHIN));
        for bad in [
            "",
            "0s",
            "31d",
            "90",
            "s",
            "1.5h",
            "-1s",
            "1 h",
            "1H",
            "2w",
            "1hm",
            " 1s",
            "99999999999d",
        ] {
            let e = parse_within(bad, max).unwrap_err();
            assert!(e.contains("1s to 30d"), "{bad:?}: {e}");
        }
        let e = parse_within("2d", Duration::from_secs(86_400)).unwrap_err();
        assert!(e.contains("1s to 1d"), "{e}");
    }

    #[test]
    fn a_deadline_reminds_half_way_then_expires() {
        let d = Deadline {
            due_ms: 10_000,
            remind_ms: Some(5_000),
        };
        assert_eq!(d.step_at(1_000), Step::Wait(Duration::from_secs(4)));
        assert_eq!(d.step_at(5_000), Step::Remind);
        let reminded = Deadline {
            remind_ms: None,
            ..d
        };
        assert_eq!(reminded.step_at(6_000), Step::Wait(Duration::from_secs(4)));
        assert_eq!(reminded.step_at(10_000), Step::Expired);
        assert_eq!(
            d.step_at(12_000),
            Step::Expired,
            "expiry outranks a reminder"
        );
        assert_eq!(
            Deadline {
                due_ms: 1_764_979_200_000,
                remind_ms: None
            }
            .due_text(),
            "2025-12-06T00:00:00Z"
        );
    }

    #[test]
    fn the_model_s_value_outranks_the_default_and_is_held_to_the_maximum() {
        let rule = ReplyWithin {
            default: Some(Duration::from_secs(60)),
            max: Duration::from_secs(3600),
        };
        let now = super::super::lease::now_ms();
        let d = rule.deadline(None).unwrap().unwrap();
        assert!((d.due_ms - now - 60_000).abs() < 1_000);
        let d = rule.deadline(Some("2m")).unwrap().unwrap();
        assert!((d.due_ms - now - 120_000).abs() < 1_000);
        assert!(rule.deadline(Some("2h")).is_err());
        assert_eq!(ReplyWithin::default().deadline(None), Ok(None));
    }

    #[test]
    fn the_settings_are_read_with_their_names_in_errors() {
        let rule = ReplyWithin::parse(("D", Some("2h")), ("M", Some("1d"))).unwrap();
        assert_eq!(rule.default, Some(Duration::from_secs(7200)));
        assert_eq!(rule.max, Duration::from_secs(86_400));
        assert_eq!(
            ReplyWithin::parse(("D", None), ("M", None)),
            Ok(ReplyWithin::default())
        );
        let e = ReplyWithin::parse(("D", Some("2d")), ("M", Some("1d"))).unwrap_err();
        assert!(e.starts_with("D: "), "{e}");
        let e = ReplyWithin::parse(("D", None), ("M", Some("40d"))).unwrap_err();
        assert!(e.starts_with("M: "), "{e}");
    }
}
