//! What keeps another page from acting with a logged-in user's cookie: a state-changing request that
//! the cookie authenticates must come from the console's own pages (its `Origin`, its `Sec-Fetch-Site`)
//! and carry the session's CSRF token in `X-CSRF-Token` — the value of a cookie only the console's
//! pages can read, a digest of the session's token no other site can compute (double submit); and
//! every response forbids framing, sniffing and inline script but the page's own loader. Pure.

use std::sync::LazyLock;

use base64::Engine;
use http::{HeaderMap, Method};

use crate::session::{CSRF_COOKIE, CSRF_HEADER};

/// Headers every response carries, with [`content_security_policy`].
pub const HEADERS: &[(&str, &str)] =
    &[("x-frame-options", "DENY"), ("x-content-type-options", "nosniff"), ("referrer-policy", "same-origin")];

/// The content security policy every response carries: scripts from the console itself only, and of
/// inline scripts only the page's loader ([`crate::assets::loader_script`]), named by its digest.
pub fn content_security_policy() -> &'static str {
    static POLICY: LazyLock<String> = LazyLock::new(|| policy_allowing(crate::assets::loader_script()));
    POLICY.as_str()
}

fn policy_allowing(inline_script: &str) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, inline_script.as_bytes());
    let digest = base64::engine::general_purpose::STANDARD.encode(digest.as_ref());
    format!(
        "default-src 'self'; script-src 'self' 'sha256-{digest}'; style-src 'self' 'unsafe-inline'; \
         img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    )
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Why a request is refused as forged by another site, if it is. Reading is never refused, nor a
/// request with its own bearer token (no browser adds one for another site).
pub fn forged(method: &Method, headers: &HeaderMap, path: &str) -> Option<String> {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
        || headers.contains_key(http::header::AUTHORIZATION)
    {
        return None;
    }
    if let Some(site) = header(headers, "sec-fetch-site").filter(|s| !matches!(*s, "same-origin" | "none")) {
        return Some(format!("a {site} request may not change anything through the console"));
    }
    let host = header(headers, "host").unwrap_or_default();
    if let Some(origin) = header(headers, "origin") {
        let own = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")) == Some(host);
        if !own {
            return Some(format!("a request from {origin} may not change anything through the console"));
        }
    }
    let expected = crate::session::token(headers).map(|t| crate::session::csrf_of(&t));
    if path != "/login" && (expected.is_none() || header(headers, CSRF_HEADER) != expected.as_deref()) {
        return Some(format!(
            "a request that changes something needs the session's {CSRF_HEADER} header (its {CSRF_COOKIE} cookie)"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_allows_the_loader_by_its_digest_and_no_other_inline_script() {
        // The example of the CSP specification (§ "hash-source"): its script and its digest.
        let policy = policy_allowing("alert('Hello, world.');");
        assert!(
            policy.contains("script-src 'self' 'sha256-qznLcsROx4GACP2dm0UCKCzCG+HiZ1guq6ZZDob/Tng='; "),
            "{policy}"
        );
        let scripts = policy.split("; ").find(|d| d.starts_with("script-src")).unwrap();
        assert!(!scripts.contains("unsafe"), "{scripts}");
        assert_ne!(content_security_policy(), policy_allowing(""), "the page's loader is the one allowed");
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn only_the_consoles_own_pages_change_things_with_the_cookie() {
        let csrf = crate::session::csrf_of("t0k");
        let mut page = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://127.0.0.1:8080"),
            ("sec-fetch-site", "same-origin"),
            ("cookie", "uc-console-token=t0k"),
        ]);
        page.insert("x-csrf-token", csrf.parse().unwrap());
        assert_eq!(forged(&Method::POST, &page, "/api/v1/namespaces"), None);
        let other_port =
            [("host", "127.0.0.1:8080"), ("origin", "http://127.0.0.1:9999"), ("sec-fetch-site", "same-site")];
        assert!(forged(&Method::POST, &headers(&other_port), "/api/v1/namespaces").unwrap().contains("same-site"));
        let no_fetch_metadata = [("host", "127.0.0.1:8080"), ("origin", "http://evil.example")];
        assert!(forged(&Method::DELETE, &headers(&no_fetch_metadata), "/api/v1/x").unwrap().contains("evil.example"));
        let no_header =
            [("host", "127.0.0.1:8080"), ("origin", "http://127.0.0.1:8080"), ("cookie", "uc-console-token=t0k")];
        assert!(forged(&Method::PUT, &headers(&no_header), "/api/v1/x").unwrap().contains("x-csrf-token"));
        let mut guessed = headers(&no_header);
        guessed.insert("x-csrf-token", crate::session::csrf_of("another").parse().unwrap());
        assert!(forged(&Method::PUT, &guessed, "/api/v1/x").is_some(), "another session's token");
        assert_eq!(forged(&Method::POST, &headers(&no_header), "/login"), None, "the login form is a plain form");
        assert_eq!(forged(&Method::GET, &headers(&other_port), "/api/v1/pods"), None);
        assert_eq!(forged(&Method::POST, &headers(&[("authorization", "Bearer t")]), "/api/v1/x"), None);
    }
}
