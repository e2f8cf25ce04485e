//! The part of etcd's v3 API the operator uses, over etcd's JSON gateway (`POST /v3/cluster/member/*`,
//! served on the client port by etcd 3.4 and later): plain HTTP/1.1 with JSON bodies, no gRPC stack.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use uc_engine::names::Resolver;

/// One member as etcd reports it. An added member that has not started yet has no name.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    /// Member ID (a uint64, kept as etcd's JSON gateway writes it).
    pub id: String,
    /// `--name` of the member; empty until it starts.
    pub name: String,
    /// Peer URLs.
    pub peer_urls: Vec<String>,
    /// A learner (non-voting) member.
    pub is_learner: bool,
}

impl Member {
    fn from_json(v: &Value) -> Member {
        let s = |f: &str| match v.get(f) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => String::new(),
        };
        Member {
            id: s("ID"),
            name: s("name"),
            peer_urls: v
                .get("peerURLs")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|u| u.as_str().map(String::from)).collect())
                .unwrap_or_default(),
            is_learner: v.get("isLearner").and_then(Value::as_bool).unwrap_or(false),
        }
    }
}

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
    async fn post(&self, endpoint: &str, path: &str, body: Value) -> Result<Value, EtcdError> {
        let url = format!("{endpoint}{path}");
        let unreachable = |reason: String| EtcdError::Unreachable { url: url.clone(), reason };
        let req = http::Request::post(&url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| unreachable(e.to_string()))?;
        let call = async {
            let resp = self.http.request(req).await.map_err(|e| unreachable(e.to_string()))?;
            let status = resp.status();
            let bytes = resp.into_body().collect().await.map_err(|e| unreachable(e.to_string()))?.to_bytes();
            let v: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            if !status.is_success() {
                let message = v.get("error").or(v.get("message")).and_then(Value::as_str).unwrap_or_default();
                return Err(EtcdError::Refused { url: url.clone(), status: status.as_u16(), message: message.into() });
            }
            Ok(v)
        };
        tokio::time::timeout(Duration::from_secs(5), call)
            .await
            .map_err(|_| EtcdError::TimedOut { url: url.clone() })?
    }

    /// The cluster's members.
    pub async fn members(&self, endpoint: &str) -> Result<Vec<Member>, EtcdError> {
        let v = self.post(endpoint, "/v3/cluster/member/list", json!({})).await?;
        Ok(v.get("members")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(Member::from_json).collect())
            .unwrap_or_default())
    }

    /// Adds a member (as a learner when asked), before its process starts.
    pub async fn add(&self, endpoint: &str, peer_url: &str, learner: bool) -> Result<Member, EtcdError> {
        let v = self
            .post(endpoint, "/v3/cluster/member/add", json!({"peerURLs": [peer_url], "isLearner": learner}))
            .await?;
        Ok(Member::from_json(v.get("member").unwrap_or(&Value::Null)))
    }

    /// Promotes a learner that has caught up with the leader.
    pub async fn promote(&self, endpoint: &str, id: &str) -> Result<(), EtcdError> {
        self.post(endpoint, "/v3/cluster/member/promote", json!({"ID": id})).await.map(|_| ())
    }

    /// Removes a member.
    pub async fn remove(&self, endpoint: &str, id: &str) -> Result<(), EtcdError> {
        self.post(endpoint, "/v3/cluster/member/remove", json!({"ID": id})).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_from_the_gateway_json() {
        let m =
            Member::from_json(&json!({"ID": "1234", "name": "a", "peerURLs": ["http://a:2380"], "isLearner": true}));
        assert_eq!(
            m,
            Member { id: "1234".into(), name: "a".into(), peer_urls: vec!["http://a:2380".into()], is_learner: true }
        );
        let unstarted = Member::from_json(&json!({"ID": 7, "peerURLs": ["http://b:2380"]}));
        assert_eq!((unstarted.id.as_str(), unstarted.name.as_str(), unstarted.is_learner), ("7", "", false));
    }
}
