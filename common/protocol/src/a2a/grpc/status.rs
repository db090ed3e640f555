//! An A2A error as gRPC says it (spec §1.4): the `google.rpc.Code` of its row, its message,
//! and a `google.rpc.Status` detail (`grpc-status-details-bin`) holding the same
//! `ErrorInfo` (reason, domain `a2a-protocol.org`, metadata) as the JSON bindings'
//! `details`, with a `BadRequest` naming the field when one is known.

use std::collections::HashMap;

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use crate::a2a::error::ERROR_DOMAIN;
use crate::a2a::A2aError;

/// `e` as a gRPC status.
pub fn of(e: &A2aError) -> Status {
    let metadata: HashMap<String, String> = (e.info_metadata().into_iter())
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let mut details = ErrorDetails::with_error_info(e.reason(), ERROR_DOMAIN, metadata);
    if let A2aError::InvalidParams {
        message,
        field: Some(field),
    } = e
    {
        details.add_bad_request_violation(field.clone(), message.clone());
    }
    Status::with_error_details(code(e), e.to_string(), details)
}

/// The code of `e`'s `google.rpc.Code` name.
pub fn code(e: &A2aError) -> Code {
    match e.grpc_status() {
        "NOT_FOUND" => Code::NotFound,
        "INVALID_ARGUMENT" => Code::InvalidArgument,
        "INTERNAL" => Code::Internal,
        "UNAUTHENTICATED" => Code::Unauthenticated,
        "UNAVAILABLE" => Code::Unavailable,
        "FAILED_PRECONDITION" => Code::FailedPrecondition,
        _ => Code::Unknown,
    }
}
