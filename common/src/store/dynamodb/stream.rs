//! The table's stream as the resume and notifier functions read it: which records name a
//! task to wake or to notify. Here, beside the items, because only the store knows their
//! key formats; the functions ask by record and get a task id.

use aws_lambda_events::event::dynamodb::EventRecord;

/// The task a stream record asks to resume: an inserted or modified task item that is
/// a wake-up (`wake`: runnable and unleased, or ended owing its parents theirs). None for
/// anything else.
pub fn task_to_resume(record: &EventRecord) -> Option<String> {
    if !matches!(record.event_name.as_str(), "INSERT" | "MODIFY") {
        return None;
    }
    let image = serde_json::to_value(&record.change.new_image).ok()?;
    let string = |key: &str| image.get(key)?.get("S")?.as_str();
    if string("sk")? != "TASK" {
        return None;
    }
    image.get("wake")?.get("N")?;
    string("pk")?.strip_prefix("TASK#").map(str::to_owned)
}

/// The task a stream record asks to notify about: a new log event of a task with webhooks,
/// or a new webhook (which may have events to catch up on). None for anything else.
pub fn task_to_notify(record: &EventRecord) -> Option<String> {
    if record.event_name != "INSERT" {
        return None;
    }
    let image = serde_json::to_value(&record.change.new_image).ok()?;
    let string = |key: &str| image.get(key)?.get("S")?.as_str();
    let sk = string("sk")?;
    let wanted = sk.starts_with("PUSH#")
        || sk.starts_with("EV#") && image.get("push")?.get("BOOL")?.as_bool()?;
    if !wanted {
        return None;
    }
    string("pk")?.strip_prefix("TASK#").map(str::to_owned)
}
