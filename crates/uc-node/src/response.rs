//! Responses of the kubelet endpoint: bodies, and errors as a `metav1.Status`.

use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use uc_api::status::Status;

/// Response bodies.
pub type Body = BoxBody<Bytes, std::io::Error>;

/// An empty body.
pub fn empty() -> Body {
    Full::new(Bytes::new()).map_err(|never: Infallible| match never {}).boxed()
}

pub fn full(b: impl Into<Bytes>) -> Body {
    Full::new(b.into()).map_err(|never: Infallible| match never {}).boxed()
}

/// An error as a `metav1.Status`, which kubectl shows as the reason an upgrade failed.
pub fn error(code: StatusCode, message: &str) -> Response<Body> {
    let reason = match code {
        StatusCode::NOT_FOUND => "NotFound",
        StatusCode::UNAUTHORIZED => "Unauthorized",
        _ => "BadRequest",
    };
    let body = serde_json::to_string(&status_error(code.as_u16(), reason, message)).unwrap_or_default();
    let mut r = Response::new(full(body));
    *r.status_mut() = code;
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// The body of an exec/attach error that comes before any upgrade: a `metav1.Status`.
pub fn status_error(code: u16, reason: &str, message: &str) -> Status {
    Status::failure(code, reason, message)
}
