//! The protocol floors of the harness, as a crate of their own so that Cargo, not review,
//! keeps them free of the application: the A2A 1.0 wire types, their validation, errors,
//! `Call`/`Operation` and the bindings' decoding (`a2a`), the harness's task, channel and
//! commands extensions (`ext`), and the fuzz entry points over both. It depends on no
//! other crate of the workspace; `common` re-exports it as `common::{a2a, ext}`.

pub mod a2a;
pub mod ext;
#[doc(hidden)]
pub mod fuzz;
