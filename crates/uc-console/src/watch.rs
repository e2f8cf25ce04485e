//! Many list-and-watches in one response (`/console/watch?path=...&path=...`): a browser keeps at most
//! six connections to a host over HTTP/1.1, and a page that watched each collection on its own
//! connection (an instance's tree watches a dozen kinds) would starve. For each path the server lists,
//! then watches from the list's resourceVersion — resuming after a watch ends, listing again after 410
//! Gone — and writes one line per step, tagged with the path's index: `{"i":N,"list":<the list>}` or
//! `{"i":N,"event":<the watch event>}`, as the API server wrote them. The watches stop when the browser
//! goes away.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, StreamBody};
use tokio::sync::mpsc;

use crate::wire::Body;

/// Most paths one request may watch.
pub const MAX_PATHS: usize = 64;

/// Why a watch query is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct WatchQueryError(pub String);

/// The paths of a `/console/watch` query, each a collection of the Kubernetes API (with its own query).
pub fn paths(query: &str) -> Result<Vec<String>, WatchQueryError> {
    let paths: Vec<String> =
        form_urlencoded::parse(query.as_bytes()).filter(|(k, _)| k == "path").map(|(_, v)| v.into_owned()).collect();
    if paths.is_empty() {
        return Err(WatchQueryError("path: at least one collection to watch".into()));
    }
    if paths.len() > MAX_PATHS {
        return Err(WatchQueryError(format!("path: at most {MAX_PATHS} collections")));
    }
    for (i, p) in paths.iter().enumerate() {
        let bare = p.split('?').next().unwrap_or_default();
        if !crate::wire::is_api(bare) || bare.contains("..") {
            return Err(WatchQueryError(format!("path[{i}]: {p:?} is not a collection of the Kubernetes API")));
        }
        if p.contains("watch=") {
            return Err(WatchQueryError(format!("path[{i}]: the console watches; the path says what to list")));
        }
    }
    Ok(paths)
}

/// The watch URL of a collection path from a resourceVersion.
pub fn watch_url(path: &str, resource_version: &str) -> String {
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{path}{sep}watch=1&allowWatchBookmarks=true&timeoutSeconds=240&resourceVersion={resource_version}")
}

/// A line of the stream: `{"i":N,"<key>":<json>}` (the JSON as the API server wrote it, on one line).
fn line(i: usize, key: &str, json: &[u8]) -> Bytes {
    let json = json.trim_ascii();
    let mut out = Vec::with_capacity(json.len() + 24);
    out.extend_from_slice(format!("{{\"i\":{i},\"{key}\":").as_bytes());
    out.extend(json.iter().map(|&b| if b == b'\n' || b == b'\r' { b' ' } else { b }));
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}

/// The resourceVersion of a list, or of a watch event's object.
fn resource_version(json: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(json).ok()?;
    let rv = v.pointer("/metadata/resourceVersion").or_else(|| v.pointer("/object/metadata/resourceVersion"))?;
    rv.as_str().map(str::to_string)
}

/// Why a list or watch request could not be sent.
#[derive(Debug, thiserror::Error)]
enum GetError {
    #[error("{0}")]
    Request(#[from] http::Error),
    #[error("{0}")]
    Api(#[from] kube::Error),
}

async fn get(client: &kube::Client, url: &str) -> Result<http::Response<kube::client::Body>, GetError> {
    let request =
        http::Request::get(url).header(http::header::ACCEPT, "application/json").body(kube::client::Body::empty())?;
    Ok(client.send(request).await?)
}

/// Lists and watches one path until the receiver is gone.
async fn follow(client: kube::Client, i: usize, path: String, out: mpsc::Sender<Bytes>) {
    let mut rv: Option<String> = None;
    loop {
        if out.is_closed() {
            return;
        }
        let Some(from) = rv.clone() else {
            match get(&client, &path).await {
                Ok(resp) => {
                    let status = resp.status();
                    let body = resp.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                    if status.is_success() {
                        rv = resource_version(&body);
                    }
                    let key = if status.is_success() { "list" } else { "error" };
                    if out.send(line(i, key, &body)).await.is_err() {
                        return;
                    }
                    if !status.is_success() {
                        tokio::time::sleep(Duration::from_secs(2)).await;
                    }
                }
                Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
            }
            continue;
        };
        let Ok(resp) = get(&client, &watch_url(&path, &from)).await else {
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        };
        if !resp.status().is_success() {
            rv = None; // expired or refused: list again
            continue;
        }
        let mut body = resp.into_body().into_data_stream();
        let mut pending: Vec<u8> = Vec::new();
        while let Some(Ok(chunk)) = body.next().await {
            pending.extend_from_slice(&chunk);
            while let Some(nl) = pending.iter().position(|&b| b == b'\n') {
                let event: Vec<u8> = pending.drain(..=nl).collect();
                if event.trim_ascii().is_empty() {
                    continue;
                }
                if event.windows(15).any(|w| w == b"\"type\":\"ERROR\"") {
                    rv = None; // 410 Gone: list again
                    break;
                }
                if let Some(v) = resource_version(&event) {
                    rv = Some(v);
                }
                if out.send(line(i, "event", &event)).await.is_err() {
                    return;
                }
            }
            if rv.is_none() {
                break;
            }
        }
    }
}

/// Stops the watches when the response (and so the browser's request) is gone.
struct Watches(Vec<tokio::task::AbortHandle>);

impl Drop for Watches {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}

/// The multiplexed stream of `paths`, as the user's `client`.
pub fn stream(client: kube::Client, paths: Vec<String>) -> Body {
    let (tx, rx) = mpsc::channel::<Bytes>(256);
    let tasks = paths
        .into_iter()
        .enumerate()
        .map(|(i, p)| tokio::spawn(follow(client.clone(), i, p, tx.clone())).abort_handle())
        .collect();
    drop(tx);
    // Each line as it comes; the watches stop with the stream (the guard goes with its state).
    let body = futures::stream::unfold((rx, Watches(tasks)), |(mut rx, watches)| async move {
        let frame = rx.recv().await?;
        Some((Ok::<_, Box<dyn std::error::Error + Send + Sync>>(hyper::body::Frame::data(frame)), (rx, watches)))
    });
    StreamBody::new(body).boxed_unsync()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_collections_of_the_kubernetes_api() {
        let q =
            "path=%2Fapi%2Fv1%2Fpods&path=%2Fapis%2Fapps%2Fv1%2Fnamespaces%2Fx%2Fdeployments%3FlabelSelector%3Da%253Db";
        assert_eq!(paths(q).unwrap(), ["/api/v1/pods", "/apis/apps/v1/namespaces/x/deployments?labelSelector=a%3Db"]);
        assert!(paths("").unwrap_err().0.contains("at least one"));
        assert!(paths("path=%2Fconsole%2Fhooks").unwrap_err().0.contains("path[0]"));
        assert!(paths("path=%2Fapi%2F..%2Fconsole").is_err());
        assert!(paths("path=%2Fapi%2Fv1%2Fpods%3Fwatch%3D1").unwrap_err().0.contains("watches"));
        let many = vec!["path=%2Fapi%2Fv1%2Fpods"; MAX_PATHS + 1].join("&");
        assert!(paths(&many).is_err());
    }

    #[test]
    fn lines_are_tagged_and_on_one_line() {
        assert_eq!(&line(3, "event", b"{\"type\":\"ADDED\"}\n")[..], b"{\"i\":3,\"event\":{\"type\":\"ADDED\"}}\n");
        assert!(
            !line(0, "list", b"{\n\"items\": []\n}").slice(..).iter().take_while(|&&b| b != b'}').any(|&b| b == b'\n')
        );
        assert_eq!(
            watch_url("/api/v1/pods", "7"),
            "/api/v1/pods?watch=1&allowWatchBookmarks=true&timeoutSeconds=240&resourceVersion=7"
        );
        assert!(watch_url("/api/v1/pods?labelSelector=a", "7").starts_with("/api/v1/pods?labelSelector=a&watch=1"));
        assert_eq!(resource_version(b"{\"metadata\":{\"resourceVersion\":\"9\"}}").as_deref(), Some("9"));
        assert_eq!(
            resource_version(b"{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"resourceVersion\":\"10\"}}}")
                .as_deref(),
            Some("10")
        );
    }
}
