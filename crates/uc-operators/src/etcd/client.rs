//! The part of etcd's v3 API the operator uses, over etcd's JSON gateway (`POST /v3/cluster/member/*`,
//! served on the client port by etcd 3.4 and later): plain HTTP/1.1 with JSON bodies, no gRPC stack.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use uc_engine::names::Resolver;

/// One member as etcd reports it. An added member that has not started yet has no name.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Member {
    /// Member ID (a uint64, kept as etcd's JSON gateway writes it: a string, or a number).
    #[serde(rename = "ID", deserialize_with = "id")]
    pub id: String,
    /// `--name` of the member; empty until it starts.
    pub name: String,
    /// Peer URLs.
    #[serde(rename = "peerURLs")]
    pub peer_urls: Vec<String>,
    /// A learner (non-voting) member.
    #[serde(rename = "isLearner")]
    pub is_learner: bool,
}

/// A 64-bit number as the gateway writes it (as a string, or as a number), as text.
pub(crate) fn id<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Id {
        Text(String),
        Number(u64),
    }
    Ok(match Id::deserialize(d)? {
        Id::Text(s) => s,
        Id::Number(n) => n.to_string(),
    })
}

/// `member/list`'s answer.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Members {
    members: Vec<Member>,
}

/// `member/add`'s answer.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Added {
    member: Member,
}

/// `member/add`'s request.
#[derive(Serialize)]
struct Add<'a> {
    #[serde(rename = "peerURLs")]
    peer_urls: [&'a str; 1],
    #[serde(rename = "isLearner")]
    is_learner: bool,
}

/// The request naming one member (`promote`, `remove`).
#[derive(Serialize)]
struct ById<'a> {
    #[serde(rename = "ID")]
    id: &'a str,
}

/// An error the gateway answers with.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Refusal {
    error: Option<String>,
    message: Option<String>,
}

/// An empty request, and what an answer read for nothing reads as.
#[derive(Debug, Default, Deserialize, Serialize)]
struct Nothing {}

/// Why a call to etcd's JSON gateway failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EtcdError {
    /// No connection, or the connection broke.
    #[error("{url}: {reason}")]
    Unreachable {
        /// The URL called.
        url: String,
        /// What failed.
        reason: String,
    },
    /// etcd answered with an error (a learner not caught up, an unhealthy cluster, ...).
    #[error("{url}: {status} {message}")]
    Refused {
        /// The URL called.
        url: String,
        /// HTTP status.
        status: u16,
        /// etcd's message.
        message: String,
    },
    /// No answer within the call's deadline.
    #[error("{url}: timed out")]
    TimedOut {
        /// The URL called.
        url: String,
    },
}

/// A client of one etcd endpoint (`http://host:2379`).
#[derive(Clone)]
pub struct Etcd {
    http: Client<HttpConnector<Resolver>, Full<Bytes>>,
}

impl Default for Etcd {
    fn default() -> Self {
        Etcd::with_resolver(Resolver::system())
    }
}

impl Etcd {
    /// A client whose host names go through `resolver` (in-cluster names of Services and pods).
    pub fn with_resolver(resolver: Resolver) -> Etcd {
        let mut connector = HttpConnector::new_with_resolver(resolver);
        connector.set_connect_timeout(Some(Duration::from_secs(2)));
        Etcd { http: Client::builder(TokioExecutor::new()).build(connector) }
    }
}

impl Etcd {
    /// Posts `body` to `path`; the answer read as `T` (what does not read, as its default: etcd's
    /// answers leave out empty fields).
    async fn post<T: DeserializeOwned + Default>(
        &self,
        endpoint: &str,
        path: &str,
        body: &impl Serialize,
    ) -> Result<T, EtcdError> {
        let url = format!("{endpoint}{path}");
        let unreachable = |reason: String| EtcdError::Unreachable { url: url.clone(), reason };
        let body = serde_json::to_vec(body).map_err(|e| unreachable(e.to_string()))?;
        let req = http::Request::post(&url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| unreachable(e.to_string()))?;
        let call = async {
            let resp = self.http.request(req).await.map_err(|e| unreachable(e.to_string()))?;
            let status = resp.status();
            let bytes = resp.into_body().collect().await.map_err(|e| unreachable(e.to_string()))?.to_bytes();
            if !status.is_success() {
                let refusal: Refusal = serde_json::from_slice(&bytes).unwrap_or_default();
                let message = refusal.error.or(refusal.message).unwrap_or_default();
                return Err(EtcdError::Refused { url: url.clone(), status: status.as_u16(), message });
            }
            Ok(serde_json::from_slice(&bytes).unwrap_or_default())
        };
        tokio::time::timeout(Duration::from_secs(5), call)
            .await
            .map_err(|_| EtcdError::TimedOut { url: url.clone() })?
    }

    /// The cluster's members.
    pub async fn members(&self, endpoint: &str) -> Result<Vec<Member>, EtcdError> {
        let list: Members = self.post(endpoint, "/v3/cluster/member/list", &Nothing::default()).await?;
        Ok(list.members)
    }

    /// Adds a member (as a learner when asked), before its process starts.
    pub async fn add(&self, endpoint: &str, peer_url: &str, learner: bool) -> Result<Member, EtcdError> {
        let add = Add { peer_urls: [peer_url], is_learner: learner };
        let added: Added = self.post(endpoint, "/v3/cluster/member/add", &add).await?;
        Ok(added.member)
    }

    /// Promotes a learner that has caught up with the leader.
    pub async fn promote(&self, endpoint: &str, id: &str) -> Result<(), EtcdError> {
        self.post::<Nothing>(endpoint, "/v3/cluster/member/promote", &ById { id }).await.map(|_| ())
    }

    /// Removes a member.
    pub async fn remove(&self, endpoint: &str, id: &str) -> Result<(), EtcdError> {
        self.post::<Nothing>(endpoint, "/v3/cluster/member/remove", &ById { id }).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::json;

    #[test]
    fn members_from_the_gateway_json() {
        let read = |v: serde_json::Value| serde_json::from_value::<Member>(v).unwrap();
        let m = read(json!({"ID": "1234", "name": "a", "peerURLs": ["http://a:2380"], "isLearner": true}));
        assert_eq!(
            m,
            Member { id: "1234".into(), name: "a".into(), peer_urls: vec!["http://a:2380".into()], is_learner: true }
        );
        let unstarted = read(json!({"ID": 7, "peerURLs": ["http://b:2380"]}));
        assert_eq!((unstarted.id.as_str(), unstarted.name.as_str(), unstarted.is_learner), ("7", "", false));
        let big = read(json!({"ID": "12345678901234567890"}));
        assert_eq!(big.id, "12345678901234567890", "a uint64 beyond f64's precision, as written");
        let list: Members =
            serde_json::from_value(json!({"header": {"revision": "3"}, "members": [{"ID": "1"}]})).unwrap();
        assert_eq!(list.members.len(), 1);
        let empty: Members = serde_json::from_value(json!({"header": {}})).unwrap();
        assert!(empty.members.is_empty(), "etcd leaves out an empty list");
        assert_eq!(
            serde_json::to_value(Add { peer_urls: ["http://c:2380"], is_learner: true }).unwrap(),
            json!({"peerURLs": ["http://c:2380"], "isLearner": true})
        );
        assert_eq!(serde_json::to_value(ById { id: "9" }).unwrap(), json!({"ID": "9"}));
    }
}
