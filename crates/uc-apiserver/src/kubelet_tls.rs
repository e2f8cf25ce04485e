//! How the API server and the node agent know each other, as kube-apiserver and a kubelet do with
//! `--kubelet-client-certificate` and `--kubelet-certificate-authority`: mutual TLS under a CA of their
//! own, made in memory at each start of `uc up` and never written anywhere. The node serves only a
//! client holding the API server's certificate, and the API server talks only to a node whose serving
//! certificate that CA signed — a Node object pointed at another listener gets a failed handshake, and
//! no credential it could replay. No other certificate comes from this CA (the cluster CA, which signs
//! CertificateSigningRequests, is another), so no user can present one.

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};

/// Why the node's or the API server's kubelet credentials are unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct KubeletTlsError(pub String);

impl From<String> for KubeletTlsError {
    fn from(message: String) -> Self {
        KubeletTlsError(message)
    }
}

impl From<&str> for KubeletTlsError {
    fn from(message: &str) -> Self {
        KubeletTlsError(message.to_string())
    }
}

impl From<KubeletTlsError> for String {
    fn from(e: KubeletTlsError) -> String {
        e.0
    }
}

/// A certificate and its key, PEM, with the CA that signed it.
#[derive(Clone)]
pub struct Identity {
    /// The CA every peer's certificate must chain to.
    pub ca_pem: String,
    /// The certificate.
    pub cert_pem: String,
    /// Its private key.
    pub key_pem: String,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Identity { .. }")
    }
}

/// The node's serving identity (for `127.0.0.1`) and the API server's client identity.
pub fn generate() -> Result<(Identity, Identity), rcgen::Error> {
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.distinguished_name.push(DnType::CommonName, "uc-kubelet-ca");
    ca.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::DigitalSignature];
    let ca_pem = ca.clone().self_signed(&ca_key)?.pem();
    let issuer = Issuer::new(ca, &ca_key);
    let issue = |cn: &str, names: Vec<String>, usage: ExtendedKeyUsagePurpose| -> Result<Identity, rcgen::Error> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(names)?;
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![usage];
        let cert = params.signed_by(&key, &issuer)?;
        Ok(Identity { ca_pem: ca_pem.clone(), cert_pem: cert.pem(), key_pem: key.serialize_pem() })
    };
    let node = issue("uc-node", vec!["127.0.0.1".into(), "localhost".into()], ExtendedKeyUsagePurpose::ServerAuth)?;
    let client = issue("uc-apiserver-kubelet-client", Vec::new(), ExtendedKeyUsagePurpose::ClientAuth)?;
    Ok((node, client))
}

/// The API server's side: a TLS client that presents its certificate and trusts only the CA.
pub fn client_config(id: &Identity) -> Result<Arc<rustls::ClientConfig>, KubeletTlsError> {
    let roots = roots(&id.ca_pem)?;
    let (certs, key) = cert_and_key(id)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_client_auth_cert(certs, key)
        .map_err(|e| e.to_string())?;
    Ok(Arc::new(config))
}

/// The node's side: a TLS server that requires a client certificate of the CA.
pub fn server_config(id: &Identity) -> Result<Arc<rustls::ServerConfig>, KubeletTlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier =
        rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots(&id.ca_pem)?), provider.clone())
            .build()
            .map_err(|e| e.to_string())?;
    let (certs, key) = cert_and_key(id)?;
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs, key)
        .map_err(|e| e.to_string())?;
    Ok(Arc::new(config))
}

fn roots(ca_pem: &str) -> Result<rustls::RootCertStore, KubeletTlsError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut ca_pem.as_bytes()) {
        roots.add(cert.map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    }
    Ok(roots)
}

type CertAndKey = (Vec<rustls::pki_types::CertificateDer<'static>>, rustls::pki_types::PrivateKeyDer<'static>);

fn cert_and_key(id: &Identity) -> Result<CertAndKey, KubeletTlsError> {
    let certs =
        rustls_pemfile::certs(&mut id.cert_pem.as_bytes()).collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())?;
    let key = rustls_pemfile::private_key(&mut id.key_pem.as_bytes())
        .map_err(|e| e.to_string())?
        .ok_or_else(|| "no private key".to_string())?;
    Ok((certs, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_node_serves_only_the_api_server_and_the_api_server_trusts_only_the_node() {
        let (node, client) = generate().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(server_config(&node).unwrap());
        tokio::spawn(async move {
            loop {
                let (tcp, _) = listener.accept().await.unwrap();
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    use tokio::io::AsyncWriteExt;
                    if let Ok(mut s) = acceptor.accept(tcp).await {
                        let _ = s.write_all(b"hello").await;
                        let _ = s.shutdown().await;
                    }
                });
            }
        });
        let name = rustls::pki_types::ServerName::from(std::net::IpAddr::from([127, 0, 0, 1]));
        let connect = |config: Arc<rustls::ClientConfig>| {
            let name = name.clone();
            async move {
                use tokio::io::AsyncReadExt;
                let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
                let mut s =
                    tokio_rustls::TlsConnector::from(config).connect(name, tcp).await.map_err(|e| e.to_string())?;
                let mut got = String::new();
                s.read_to_string(&mut got).await.map_err(|e| e.to_string())?;
                Ok::<_, String>(got)
            }
        };
        assert_eq!(connect(client_config(&client).unwrap()).await.unwrap(), "hello");
        // Another pair's client (what anyone else could make) is refused, and its node not trusted.
        let (_, stranger) = generate().unwrap();
        assert!(connect(client_config(&stranger).unwrap()).await.is_err(), "a stranger's client certificate");
    }
}
