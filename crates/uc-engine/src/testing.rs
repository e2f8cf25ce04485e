//! Tests against a real API server that count what a client asked of it.

use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// An in-memory API server in a temporary directory, with two clients: `reader`, and `counted`,
/// whose requests the server counts under the user agent [`Cluster::AGENT`].
pub struct Cluster {
    /// The cluster's client configuration (its kubeconfig).
    pub config: kube::Config,
    pub reader: Client,
    pub counted: Client,
    _server: uc_apiserver::RunningServer,
    _dir: tempfile::TempDir,
}

impl Cluster {
    /// The user agent of [`Cluster::counted`].
    pub const AGENT: &str = "counted-test-client";

    pub async fn start() -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let mut config = uc_apiserver::Config::new(dir.path());
        (config.port, config.durable) = (0, false);
        let server = uc_apiserver::start(config).await.expect("API server starts");
        let kc = Kubeconfig::read_from(&server.kubeconfig).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await.unwrap();
        let reader = Client::try_from(config.clone()).unwrap();
        let mut tagged = config.clone();
        tagged.headers.push((http::header::USER_AGENT, http::HeaderValue::from_static(Cluster::AGENT)));
        let counted = Client::try_from(tagged).unwrap();
        Cluster { config, reader, counted, _server: server, _dir: dir }
    }

    /// Requests the API server counted for [`Cluster::counted`] so far, read from its `/metrics`.
    pub async fn requests(&self) -> u64 {
        let get = http::Request::get("/metrics").body(Vec::new()).unwrap();
        let text = self.reader.request_text(get).await.unwrap();
        let line = format!("apiserver_client_requests_total{{client=\"{}\"}} ", Cluster::AGENT);
        text.lines().find_map(|l| l.strip_prefix(&line)).map_or(0, |n| n.parse().unwrap())
    }
}
