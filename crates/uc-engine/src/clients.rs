//! Clients of an API server built on hyper directly, where kube's default client (HTTP/1.1, a
//! connection per request in flight) does not fit: one multiplexed HTTP/2 connection, and the layers
//! every client here shares with kube's own (the fenced writing client in `fenced.rs` among them).

use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kube::client::ConfigExt;

/// A client that sends every request over one HTTP/2 connection, as client-go (and so the kubelet)
/// talks to kube-apiserver: however many requests are in flight, one connection and one TLS session.
/// The server must speak HTTP/2 (uc's does; kube-apiserver does).
pub fn multiplexed_client(config: &kube::Config) -> Result<kube::Client, kube::Error> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    // Without it the small frames of many streams wait on delayed acknowledgements (Nagle).
    http.set_nodelay(true);
    let mut tls =
        hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(config.rustls_client_config()?).https_or_http();
    if let Some(name) = &config.tls_server_name {
        let name = rustls::pki_types::ServerName::try_from(name.clone())
            .map_err(|e| kube::Error::RustlsTls(kube::client::RustlsTlsError::InvalidServerName(e)))?;
        tls = tls.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name));
    }
    let https = tls.enable_http2().wrap_connector(http);
    let hyper = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .http2_only(true)
        .build::<_, kube::client::Body>(https);
    kube_client(config, hyper)
}

/// `hyper` with the layers kube's own client puts around it: the cluster's address, its credentials
/// and the configured headers (the User-Agent among them).
pub(crate) fn kube_client<C>(
    config: &kube::Config,
    hyper: hyper_util::client::legacy::Client<C, kube::client::Body>,
) -> Result<kube::Client, kube::Error>
where
    C: hyper_util::client::legacy::connect::Connect + Clone + Send + Sync + 'static,
{
    let service = tower::ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(|e: hyper_util::client::legacy::Error| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
        .service(hyper);
    Ok(kube::client::ClientBuilder::new(service, config.default_namespace.clone()).build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_multiplexed_client_sends_requests_in_flight_together_over_http2() {
        let cluster = crate::testing::Cluster::start().await;
        let client = multiplexed_client(&cluster.config).unwrap();
        let lists = (0..32).map(|_| {
            let client = client.clone();
            async move {
                let list = http::Request::get("/api/v1/namespaces").body(kube::client::Body::empty()).unwrap();
                client.send(list).await.unwrap()
            }
        });
        for answer in futures::future::join_all(lists).await {
            assert_eq!(answer.status(), http::StatusCode::OK);
            assert_eq!(answer.version(), http::Version::HTTP_2);
        }
    }
}
