//! The events that have a plain counter each: `Event`, its metric name and help text.

/// Something that happened once: [`record`](super::record) adds 1 to its counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Event {
    /// `tasks_created`
    TaskCreated,
    /// `tasks_completed`
    TaskCompleted,
    /// `tasks_failed`
    TaskFailed,
    /// `tasks_canceled`
    TaskCanceled,
    /// `tasks_rejected`
    TaskRejected,
    /// `tool_calls`
    ToolCall,
    /// `tool_errors`
    ToolError,
    /// `help_requests_asked`
    HelpAsked,
    /// `help_requests_answered`
    HelpAnswered,
    /// `store_conflicts`
    StoreConflict,
    /// `store_retries`
    StoreRetry,
    /// `personal_posts_held`
    PersonalPostHeld,
    /// `remote_callbacks_forged`
    RemoteCallbackForged,
    /// `model_calls_cancelled`
    ModelCallCancelled,
    /// `replies_reminded`
    ReplyReminded,
    /// `replies_expired`
    ReplyExpired,
}

pub(super) const EVENTS: usize = 16;

impl Event {
    /// Every event, in the order they are exported.
    pub(super) const ALL: [Event; EVENTS] = [
        Event::TaskCreated,
        Event::TaskCompleted,
        Event::TaskFailed,
        Event::TaskCanceled,
        Event::TaskRejected,
        Event::ToolCall,
        Event::ToolError,
        Event::HelpAsked,
        Event::HelpAnswered,
        Event::StoreConflict,
        Event::StoreRetry,
        Event::PersonalPostHeld,
        Event::RemoteCallbackForged,
        Event::ModelCallCancelled,
        Event::ReplyReminded,
        Event::ReplyExpired,
    ];

    pub(super) const fn index(self) -> usize {
        self as usize
    }

    /// The metric's name (EMF; Prometheus adds the prefix and `_total`).
    pub(super) const fn name(self) -> &'static str {
        match self {
            Event::TaskCreated => "tasks_created",
            Event::TaskCompleted => "tasks_completed",
            Event::TaskFailed => "tasks_failed",
            Event::TaskCanceled => "tasks_canceled",
            Event::TaskRejected => "tasks_rejected",
            Event::ToolCall => "tool_calls",
            Event::ToolError => "tool_errors",
            Event::HelpAsked => "help_requests_asked",
            Event::HelpAnswered => "help_requests_answered",
            Event::StoreConflict => "store_conflicts",
            Event::StoreRetry => "store_retries",
            Event::PersonalPostHeld => "personal_posts_held",
            Event::RemoteCallbackForged => "remote_callbacks_forged",
            Event::ModelCallCancelled => "model_calls_cancelled",
            Event::ReplyReminded => "replies_reminded",
            Event::ReplyExpired => "replies_expired",
        }
    }

    pub(super) const fn help(self) -> &'static str {
        match self {
            Event::TaskCreated => "Tasks created.",
            Event::TaskCompleted => "Tasks that reached the completed state.",
            Event::TaskFailed => "Tasks that reached the failed state.",
            Event::TaskCanceled => "Tasks that reached the canceled state.",
            Event::TaskRejected => "Tasks that reached the rejected state.",
            Event::ToolCall => "Tool invocations.",
            Event::ToolError => "Tool invocations that failed.",
            Event::HelpAsked => "Help requests asked of a participant.",
            Event::HelpAnswered => "Help requests a participant answered.",
            Event::StoreConflict => "Optimistic-concurrency conflicts in the task store.",
            Event::StoreRetry => "Task store commits retried after a conflict, with a backoff.",
            Event::PersonalPostHeld => {
                "Posts to personal channels held back by their hourly quotas."
            }
            Event::RemoteCallbackForged => {
                "Remote callbacks refused for a token that does not verify."
            }
            Event::ModelCallCancelled => "Model calls cut short by a cancel of their task.",
            Event::ReplyReminded => {
                "Participants reminded half-way to a reply deadline (questions and tasks for them)."
            }
            Event::ReplyExpired => {
                "Questions and tasks for participants that passed their reply deadline unanswered."
            }
        }
    }
}
