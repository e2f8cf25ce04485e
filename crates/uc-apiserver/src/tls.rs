//! Credentials kept in the data directory: a CA and a serving certificate (generated on first start),
//! the bearer token, and the kubeconfig that clients use.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};

/// Errors while preparing credentials.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Certificate generation failed.
    #[error("certificate generation failed: {0}")]
    Generate(#[from] rcgen::Error),
    /// A client certificate could not be signed.
    #[error("signing a client certificate: {0}")]
    Sign(#[from] crate::certificates::SignError),
    /// A stored certificate or key is unusable.
    #[error("invalid certificate or key in {path}: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// The server's credentials.
pub struct Credentials {
    /// PEM of the CA that signed the serving certificate (goes into the kubeconfig).
    pub ca_pem: String,
    /// rustls configuration for the listener.
    pub server_config: Arc<rustls::ServerConfig>,
    /// The bearer token clients must send.
    pub token: String,
}

fn read(path: &Path) -> Result<String, TlsError> {
    std::fs::read_to_string(path).map_err(|source| TlsError::Io { path: path.into(), source })
}

fn write(path: &Path, contents: &str, private: bool) -> Result<(), TlsError> {
    let io = |source| TlsError::Io { path: path.into(), source };
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, contents).map_err(io)?;
    if private {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
    }
    std::fs::rename(&tmp, path).map_err(io)
}

/// The names the serving certificate is for: loopback, the `kubernetes` Service's DNS names (pods
/// reach the API server through it), and `extra` (the Service's cluster IP).
pub fn server_names(extra: &[String]) -> Vec<String> {
    let mut names: Vec<String> = ["localhost", "127.0.0.1", "::1", "kubernetes", "kubernetes.default"]
        .into_iter()
        .chain(["kubernetes.default.svc", "kubernetes.default.svc.cluster.local"])
        .map(str::to_string)
        .collect();
    names.extend(extra.iter().filter(|n| !names.contains(n)).cloned().collect::<Vec<_>>());
    names
}

/// Loads the credentials from `dir`, generating what is missing, and a serving certificate again
/// (from the same CA) when the one there is not for every name in `names`.
pub fn ensure_credentials(dir: &Path, names: &[String]) -> Result<Credentials, TlsError> {
    let (ca_path, cert_path, key_path, token_path) =
        (dir.join("ca.crt"), dir.join("server.crt"), dir.join("server.key"), dir.join("token"));
    if !(ca_path.exists() && cert_path.exists() && key_path.exists() && dir.join("ca.key").exists()) {
        generate(dir, names)?;
    } else if !covers(&read(&cert_path)?, names) {
        reissue(dir, names)?;
    }
    if !token_path.exists() {
        let bytes: [u8; 24] = rand::random();
        let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        write(&token_path, &token, true)?;
    }
    let ca_pem = read(&ca_path)?;
    let token = read(&token_path)?.trim().to_string();
    let certs = rustls_pemfile::certs(&mut read(&cert_path)?.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Invalid { path: cert_path.clone(), reason: e.to_string() })?;
    let key = rustls_pemfile::private_key(&mut read(&key_path)?.as_bytes())
        .map_err(|e| TlsError::Invalid { path: key_path.clone(), reason: e.to_string() })?
        .ok_or_else(|| TlsError::Invalid { path: key_path.clone(), reason: "no private key".into() })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Invalid { path: cert_path.clone(), reason: e.to_string() })?
        .with_client_cert_verifier(client_verifier(&ca_pem, &ca_path)?)
        .with_single_cert(certs, key)
        .map_err(|e| TlsError::Invalid { path: cert_path.clone(), reason: e.to_string() })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Credentials { ca_pem, server_config: Arc::new(config), token })
}

/// Client certificates are optional; one the cluster CA signed authenticates its subject.
fn client_verifier(
    ca_pem: &str,
    ca_path: &Path,
) -> Result<Arc<dyn rustls::server::danger::ClientCertVerifier>, TlsError> {
    let invalid = |reason: String| TlsError::Invalid { path: ca_path.into(), reason };
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut ca_pem.as_bytes()) {
        roots.add(cert.map_err(|e| invalid(e.to_string()))?).map_err(|e| invalid(e.to_string()))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .allow_unauthenticated()
        .build()
        .map_err(|e| invalid(e.to_string()))
}

/// The common name and organizations of a (verified) client certificate.
pub fn subject_of(cert: &rustls::pki_types::CertificateDer<'_>) -> Option<(String, Vec<String>)> {
    let (_, cert) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    let subject = cert.subject();
    let cn = subject.iter_common_name().next()?.as_str().ok()?.to_string();
    let orgs = subject.iter_organization().filter_map(|o| o.as_str().ok().map(str::to_string)).collect();
    Some((cn, orgs))
}

/// Whether a PEM certificate names every one of `names` (DNS names and IP addresses).
fn covers(pem: &str, names: &[String]) -> bool {
    let Ok((_, pem)) = x509_parser::pem::parse_x509_pem(pem.as_bytes()) else { return false };
    let Ok(cert) = pem.parse_x509() else { return false };
    let Ok(Some(san)) = cert.subject_alternative_name() else { return false };
    let have: Vec<String> = san
        .value
        .general_names
        .iter()
        .filter_map(|n| match n {
            x509_parser::extensions::GeneralName::DNSName(d) => Some(d.to_string()),
            x509_parser::extensions::GeneralName::IPAddress(b) => match b.len() {
                4 => Some(std::net::IpAddr::from(<[u8; 4]>::try_from(*b).ok()?).to_string()),
                16 => Some(std::net::IpAddr::from(<[u8; 16]>::try_from(*b).ok()?).to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    names.iter().all(|n| have.contains(n))
}

/// A serving certificate for `names` signed by the CA in `dir`.
fn reissue(dir: &Path, names: &[String]) -> Result<(), TlsError> {
    let ca_key_path = dir.join("ca.key");
    let ca_key = KeyPair::from_pem(&read(&ca_key_path)?)
        .map_err(|e| TlsError::Invalid { path: ca_key_path.clone(), reason: e.to_string() })?;
    let issuer = Issuer::from_ca_cert_pem(&read(&dir.join("ca.crt"))?, &ca_key)
        .map_err(|e| TlsError::Invalid { path: dir.join("ca.crt"), reason: e.to_string() })?;
    let key = KeyPair::generate()?;
    let cert = server_params(names)?.signed_by(&key, &issuer)?;
    write(&dir.join("server.key"), &key.serialize_pem(), true)?;
    write(&dir.join("server.crt"), &cert.pem(), false)
}

fn server_params(names: &[String]) -> Result<CertificateParams, TlsError> {
    let mut params = CertificateParams::new(names.to_vec())?;
    params.distinguished_name.push(DnType::CommonName, "uc-apiserver");
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2100, 1, 1);
    Ok(params)
}

fn generate(dir: &Path, names: &[String]) -> Result<(), TlsError> {
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, "uc-ca");
    ca_params.key_usages =
        vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    ca_params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    ca_params.not_after = rcgen::date_time_ymd(2100, 1, 1);
    let ca_cert = ca_params.self_signed(&ca_key)?;

    let key = KeyPair::generate()?;
    let issuer = Issuer::new(ca_params, &ca_key);
    let cert = server_params(names)?.signed_by(&key, &issuer)?;

    write(&dir.join("ca.key"), &ca_key.serialize_pem(), true)?;
    write(&dir.join("ca.crt"), &ca_cert.pem(), false)?;
    write(&dir.join("server.key"), &key.serialize_pem(), true)?;
    write(&dir.join("server.crt"), &cert.pem(), false)?;
    Ok(())
}

/// Writes a kubeconfig for `https://addr` with the CA, the token and, as kubeadm's `admin.conf` has,
/// a client certificate of `uc-admin` in `system:masters` (a client that builds its own transport
/// without the kubeconfig's token — kube-rs's OpenSSL connector does — still authenticates); returns
/// its path.
pub fn write_kubeconfig(dir: &Path, server: &str, creds: &Credentials) -> Result<PathBuf, TlsError> {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
    let ca = b64(&creds.ca_pem);
    let (cert, key) = issue_client(dir, crate::auth::ADMIN, &["system:masters"])
        .map_err(|reason| TlsError::Invalid { path: dir.join("ca.key"), reason: reason.to_string() })?;
    let config = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: uc\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: uc-admin\n  user:\n    token: {token}\n    client-certificate-data: {cert}\n    client-key-data: {key}\ncontexts:\n- name: uc\n  context:\n    cluster: uc\n    user: uc-admin\n    namespace: default\ncurrent-context: uc\n",
        token = creds.token,
        cert = b64(&cert),
        key = b64(&key),
    );
    let path = dir.join("kubeconfig");
    write(&path, &config, true)?;
    Ok(path)
}

/// A client certificate from the cluster CA in `dir` for `user` in `groups` (its CN and O), valid a
/// year: (certificate, key), PEM.
pub fn issue_client(dir: &Path, user: &str, groups: &[&str]) -> Result<(String, String), TlsError> {
    let key = rcgen::KeyPair::generate()?;
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name.push(rcgen::DnType::CommonName, user);
    for g in groups {
        params.distinguished_name.push(rcgen::DnType::OrganizationName, *g);
    }
    let request = params.serialize_request(&key)?.pem()?;
    let ca = read(&dir.join("ca.crt"))?;
    let ca_key = read(&dir.join("ca.key"))?;
    let cert = crate::certificates::sign(&ca, &ca_key, &request, 365 * 24 * 3600)?;
    Ok((cert, key.serialize_pem()))
}

/// Writes `<dir>/<file>`, a kubeconfig for `server` that authenticates with a client certificate;
/// returns its path.
pub fn write_certificate_kubeconfig(
    dir: &Path,
    file: &str,
    server: &str,
    (cert, key): (&str, &str),
) -> Result<PathBuf, TlsError> {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
    let ca = b64(&read(&dir.join("ca.crt"))?);
    let config = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: uc\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: uc-client\n  user:\n    client-certificate-data: {cert}\n    client-key-data: {key}\ncontexts:\n- name: uc\n  context:\n    cluster: uc\n    user: uc-client\ncurrent-context: uc\n",
        cert = b64(cert),
        key = b64(key)
    );
    let path = dir.join(file);
    write(&path, &config, true)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_serving_certificate_missing_a_name_is_issued_again_by_the_same_ca() {
        let dir = tempfile::tempdir().unwrap();
        let first = server_names(&[]);
        let creds = ensure_credentials(dir.path(), &first).unwrap();
        let cert = read(&dir.path().join("server.crt")).unwrap();
        assert!(covers(&cert, &first) && first.contains(&"kubernetes.default.svc".to_string()));
        let more = server_names(&["10.7.240.1".to_string()]);
        assert!(!covers(&cert, &more), "the Service's address is not in it yet");
        let again = ensure_credentials(dir.path(), &more).unwrap();
        let reissued = read(&dir.path().join("server.crt")).unwrap();
        assert!(covers(&reissued, &more));
        assert_eq!(again.ca_pem, creds.ca_pem, "clients' kubeconfigs keep working");
        assert_eq!(again.token, creds.token);
        ensure_credentials(dir.path(), &more).unwrap();
        assert_eq!(read(&dir.path().join("server.crt")).unwrap(), reissued, "nothing to do when it covers them");
    }

    #[test]
    fn a_client_certificate_names_its_user_and_groups() {
        let dir = tempfile::tempdir().unwrap();
        ensure_credentials(dir.path(), &server_names(&[])).unwrap();
        let (cert, key) = issue_client(dir.path(), "system:node:n", &["system:nodes"]).unwrap();
        let der = rustls_pemfile::certs(&mut cert.as_bytes()).next().unwrap().unwrap();
        assert_eq!(subject_of(&der), Some(("system:node:n".to_string(), vec!["system:nodes".to_string()])));
        let path =
            write_certificate_kubeconfig(dir.path(), "node.kubeconfig", "https://127.0.0.1:1", (&cert, &key)).unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        assert!(text.contains("client-key-data:") && !text.contains("token:"), "{text}");
    }
}
