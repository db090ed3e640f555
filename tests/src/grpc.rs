//! A tonic client of a started server's gRPC binding (`lf.a2a.v1.A2AService` on the same
//! listener as the HTTP bindings), with the 1.0 metadata, and its answers and errors read
//! as the JSON bindings' values, so tests can compare the three.

use serde_json::Value;
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;

pub use common::a2a::grpc::pb;
pub use tonic::{Code, Request, Status};

pub type Client = pb::a2a_service_client::A2aServiceClient<Channel>;

impl crate::Server {
    /// A client on one HTTP/2 connection to the server (h2c, prior knowledge).
    pub async fn grpc(&self) -> Client {
        let channel = Channel::from_shared(self.url.clone())
            .expect("the server's URL")
            .connect()
            .await
            .expect("an HTTP/2 connection to the server");
        // The server's own limit refuses what is too large: the client sends anything.
        Client::new(channel)
            .max_decoding_message_size(usize::MAX)
            .max_encoding_message_size(usize::MAX)
    }
}

/// `message` with `A2A-Version: 1.0` and, unless empty, `x-participant-id: participant`.
pub fn request<T>(message: T, participant: &str) -> Request<T> {
    let mut req = Request::new(message);
    req.metadata_mut()
        .insert("a2a-version", MetadataValue::from_static("1.0"));
    if !participant.is_empty() {
        let id = participant.parse().expect("an ASCII participant id");
        req.metadata_mut().insert("x-participant-id", id);
    }
    req
}

/// `message` with the 1.0 version and `authorization: Bearer token` (jwt mode).
pub fn request_with_token<T>(message: T, token: &str) -> Request<T> {
    let mut req = request(message, "");
    let bearer = format!("Bearer {token}").parse().expect("an ASCII token");
    req.metadata_mut().insert("authorization", bearer);
    req
}

/// A proto message as its ProtoJSON: the value the JSON bindings carry (the mapping's
/// own printing, which prints a Struct's integral numbers as the JSON bindings do).
pub fn json_of<T: serde::Serialize>(message: &T) -> Value {
    common::a2a::grpc::mapping::proto_json(message).expect("every message has a ProtoJSON form")
}

/// A JSON binding's value (a task, a params object) as the proto message `T`.
pub fn message_of<T: serde::de::DeserializeOwned>(value: &Value) -> T {
    serde_json::from_value(value.clone()).expect("a ProtoJSON value of the message")
}

/// The `ErrorInfo` of a refusal: its reason and domain, and its metadata.
pub fn error_info(status: &Status) -> tonic_types::ErrorInfo {
    use tonic_types::StatusExt;
    status
        .get_details_error_info()
        .unwrap_or_else(|| panic!("no ErrorInfo in {status:?}"))
}

/// Asserts `status` is `code` with an A2A `ErrorInfo` of `reason`.
pub fn assert_status(status: &Status, code: Code, reason: &str) {
    assert_eq!(status.code(), code, "{status:?}");
    let info = error_info(status);
    assert_eq!(info.reason, reason, "{status:?}");
    assert_eq!(info.domain, "a2a-protocol.org", "{status:?}");
}
