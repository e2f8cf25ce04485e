//! What the console's responses are made of, and which paths are the Kubernetes API's (passed on to
//! the API server, or watched through `/console/watch`).

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;

/// A response body: a whole one, or one streamed from the API server.
pub type Body = UnsyncBoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;

/// Whether a path is the Kubernetes API's (its OpenAPI v3 documents included: the YAML editor checks an
/// object against its kind's schema).
pub fn is_api(path: &str) -> bool {
    path == "/api"
        || path.starts_with("/api/")
        || path == "/apis"
        || path.starts_with("/apis/")
        || path == "/version"
        || path == "/openapi/v3"
        || path.starts_with("/openapi/v3/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kubernetes_api_is_passed_through_and_nothing_else() {
        for p in
            ["/api", "/api/v1/pods", "/apis", "/apis/apps/v1", "/version", "/openapi/v3", "/openapi/v3/apis/apps/v1"]
        {
            assert!(is_api(p), "{p}");
        }
        for p in ["/", "/apiary", "/console/hooks", "/static/app.js", "/login", "/openapi/v3x", "/openapi/v2"] {
            assert!(!is_api(p), "{p}");
        }
    }
}
