//! The task as the domain knows it, below every store and runtime: plain data and the
//! rules on it, with no I/O. Leases (who drives a task, until when) and the clock they are
//! read against; the agent's pending help request, its links to remote tasks, and the
//! deadlines replies are due by.

pub mod deadline;
pub mod help_request;
pub mod lease;
pub mod remote_link;

pub use deadline::Deadline;
pub use help_request::HelpRequest;
pub use remote_link::Link;
