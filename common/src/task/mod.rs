//! The task as the domain knows it, below every store and runtime: plain data and the
//! rules on it, with no I/O. Today: leases (who drives a task, until when) and the clock
//! they are read against.

pub mod lease;
