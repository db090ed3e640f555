//! The gRPC binding (feature `grpc`): the messages and the `A2AService` of
//! `proto/a2a.proto` (package `lf.a2a.v1`), generated at build ([`pb`]); how a gRPC
//! request becomes the [`Call`](super::Call) the other bindings decode and an answer
//! becomes its reply ([`mapping`]); and an [`A2aError`](super::A2aError) as a
//! `google.rpc.Status` ([`status`]).

pub mod mapping;
pub mod status;

/// The generated `lf.a2a.v1` package: prost messages with their ProtoJSON serde, the
/// tonic server (`a2a_service_server`) and client (`a2a_service_client`).
#[allow(clippy::all, clippy::pedantic, missing_docs, rustdoc::all)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/lf.a2a.v1.rs"));
    include!(concat!(env!("OUT_DIR"), "/lf.a2a.v1.serde.rs"));
    /// DeleteTaskPushNotificationConfig's reply.
    pub use pbjson_types::Empty;
}

/// The service's path prefix (`/lf.a2a.v1.A2AService`): every rpc is a POST below it.
pub const SERVICE_PATH: &str = "/lf.a2a.v1.A2AService";
