//! The answers the HTTP front door builds itself: a body, JSON, a JSON-RPC error with an HTTP
//! status, and the busy answer (503 with Retry-After).

use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use serde_json::{Value, json};

/// What every answer carries.
pub(super) type Body = BoxBody<Bytes, Infallible>;

pub(super) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

pub(super) fn json_response(status: StatusCode, v: &Value) -> Response<Body> {
    let mut r = Response::new(full(v.to_string()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// A JSON-RPC error body (id null: the request may not have been read) with an HTTP status.
pub(super) fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response<Body> {
    json_response(
        status,
        &json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}}),
    )
}

/// The busy answer: 503, Retry-After, and a JSON-RPC error saying what is full.
pub(super) fn busy(message: &str) -> Response<Body> {
    let mut r = rpc_error(
        StatusCode::SERVICE_UNAVAILABLE,
        -32000,
        &format!("busy: {message}"),
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}
