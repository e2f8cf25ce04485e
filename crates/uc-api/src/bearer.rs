//! The bearer token of an `Authorization` header value. The scheme is case-insensitive (RFC 9110
//! §11.1), as kube-apiserver reads it: the Python client sends `bearer <token>`.

/// The token of `Bearer <token>` (any case of the scheme), trimmed; None for other schemes or none.
pub fn token(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim_start().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::token;

    #[test]
    fn the_scheme_is_case_insensitive_and_the_token_trimmed() {
        assert_eq!(token("Bearer abc"), Some("abc"));
        assert_eq!(token("bearer abc "), Some("abc"));
        assert_eq!(token("BEARER  abc"), Some("abc"));
        assert_eq!(token("Basic YWJj"), None);
        assert_eq!(token("Bearer "), None);
        assert_eq!(token("Bearerabc"), None);
    }
}
