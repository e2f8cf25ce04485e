//! Who is asking: the bearer token of a request (its `Authorization` header, or the cookie the login
//! page set), and a Kubernetes client per token — the console acts with the user's own credentials,
//! so the API server's authentication and RBAC decide what each user sees.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use http::HeaderMap;
use parking_lot::Mutex;

/// The cookie the login page sets.
pub const COOKIE: &str = "uc-console-token";

/// The cookie the console's pages read (it is not HttpOnly) and send back as [`CSRF_HEADER`] with every
/// change: another site can neither read it nor compute it.
pub const CSRF_COOKIE: &str = "uc-console-csrf";

/// The header carrying the CSRF token.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// The CSRF token of a session: a digest of its token (stateless, so it outlives console restarts,
/// and it reveals nothing of the token).
pub fn csrf_of(token: &str) -> String {
    use base64::Engine;
    let digest = ring::digest::digest(&ring::digest::SHA256, format!("uc-console csrf\0{token}").as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref())
}

/// The value of the cookie `name`, if the request carries a non-empty one.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| decode(v))
        .filter(|t| !t.is_empty())
}

/// How long a token the API server accepted is taken as valid without asking again.
const VALID_FOR: Duration = Duration::from_secs(10);

/// Most clients kept (one per token seen recently).
const MAX_CLIENTS: usize = 64;

/// The bearer token of a request: `Authorization: Bearer`, else the console's cookie.
pub fn token(headers: &HeaderMap) -> Option<String> {
    if let Some(t) =
        headers.get(http::header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(uc_api::bearer::token)
    {
        return Some(t.to_string());
    }
    cookie(headers, COOKIE)
}

/// The `Set-Cookie` values that keep `token` for the browser's session (not readable by scripts, sent
/// only to this console; `Secure` when the browser reached it over HTTPS) and its CSRF token.
pub fn set_cookies(token: &str, secure: bool) -> [String; 2] {
    let secure = if secure { "; Secure" } else { "" };
    [format!("{COOKIE}={}; Path=/; HttpOnly; SameSite=Strict{secure}", encode(token)), csrf_cookie(token, secure)]
}

/// The `Set-Cookie` value of the CSRF token of `token`'s session.
pub fn csrf_cookie(token: &str, secure: &str) -> String {
    format!("{CSRF_COOKIE}={}; Path=/; SameSite=Strict{secure}", csrf_of(token))
}

/// The `Set-Cookie` values that forget the session.
pub fn clear_cookies() -> [String; 2] {
    [
        format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
        format!("{CSRF_COOKIE}=; Path=/; SameSite=Strict; Max-Age=0"),
    ]
}

/// Whether the browser reached the console over HTTPS (through a proxy that terminates TLS and says
/// so): then cookies are `Secure`.
pub fn over_https(headers: &HeaderMap) -> bool {
    headers.get("x-forwarded-proto").and_then(|v| v.to_str().ok()).is_some_and(|p| p.eq_ignore_ascii_case("https"))
}

fn encode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn decode(s: &str) -> String {
    form_urlencoded::parse(format!("t={s}").as_bytes()).next().map(|(_, v)| v.into_owned()).unwrap_or_default()
}

/// Clients of the API server, one per token, and which tokens it accepted lately.
pub struct Sessions {
    /// The cluster: its address and CA, with no credentials of its own.
    base: kube::Config,
    clients: Mutex<HashMap<String, (kube::Client, Option<Instant>)>>,
}

impl Sessions {
    /// Sessions of the cluster `config` points at (its credentials are not used).
    pub fn new(mut config: kube::Config) -> Self {
        config.auth_info = Default::default();
        Sessions { base: config, clients: Mutex::new(HashMap::new()) }
    }

    /// The client that acts as `token`.
    pub fn client(&self, token: &str) -> anyhow::Result<kube::Client> {
        if let Some((c, _)) = self.clients.lock().get(token) {
            return Ok(c.clone());
        }
        let mut config = self.base.clone();
        config.auth_info.token = Some(token.to_string().into());
        let client = kube::Client::try_from(config)?;
        let mut clients = self.clients.lock();
        if clients.len() >= MAX_CLIENTS {
            clients.clear();
        }
        clients.insert(token.to_string(), (client.clone(), None));
        Ok(client)
    }

    /// Whether the API server accepts `token` (asked at most every few seconds per token).
    pub async fn valid(&self, token: &str) -> bool {
        if let Some((_, Some(at))) = self.clients.lock().get(token)
            && at.elapsed() < VALID_FOR
        {
            return true;
        }
        let Ok(client) = self.client(token) else { return false };
        let request = http::Request::get("/api").body(Vec::new());
        let Ok(request) = request else { return false };
        let ok = client.request_text(request).await.is_ok();
        if ok && let Some(entry) = self.clients.lock().get_mut(token) {
            entry.1 = Some(Instant::now());
        }
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        h
    }

    #[test]
    fn the_token_comes_from_the_header_or_the_cookie() {
        assert_eq!(token(&headers(&[("authorization", "Bearer abc")])).as_deref(), Some("abc"));
        assert_eq!(token(&headers(&[("cookie", "a=1; uc-console-token=xyz; b=2")])).as_deref(), Some("xyz"));
        assert_eq!(token(&headers(&[("cookie", "a=1"), ("cookie", "uc-console-token=q")])).as_deref(), Some("q"));
        assert_eq!(token(&headers(&[("cookie", "uc-console-token=")])), None);
        assert_eq!(token(&headers(&[("authorization", "Basic x")])), None);
        assert_eq!(token(&HeaderMap::new()), None);
    }

    #[test]
    fn a_cookie_round_trips_any_token() {
        let t = "eyJhbGciOi.J9+/=x";
        let [session, csrf] = set_cookies(t, false);
        assert!(session.contains("HttpOnly") && session.contains("SameSite=Strict") && !session.contains("Secure"));
        let value = session.split(';').next().unwrap();
        assert_eq!(token(&headers(&[("cookie", value)])).as_deref(), Some(t));
        assert!(!csrf.contains("HttpOnly"), "the pages read it");
        assert_eq!(csrf.split(';').next().unwrap(), format!("uc-console-csrf={}", csrf_of(t)));
        assert_ne!(csrf_of(t), csrf_of("another"));
        assert!(!csrf_of(t).contains(t));
        assert!(set_cookies(t, true).iter().all(|c| c.ends_with("; Secure")));
        assert!(clear_cookies().iter().all(|c| c.contains("Max-Age=0")));
        assert!(over_https(&headers(&[("x-forwarded-proto", "https")])) && !over_https(&HeaderMap::new()));
    }
}
