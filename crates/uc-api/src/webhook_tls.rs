//! A webhook server's certificate verified as kube-apiserver verifies it — Go's `crypto/x509`, not
//! stricter. webpki (rustls) refuses a certificate that is a CA as the server's own
//! (`CaUsedAsEndEntity`); Go accepts it when it is itself one of the roots, and that is how kopf,
//! and many a hand-made webhook, serve: one self-signed certificate, marked as a CA, given as the
//! `caBundle`. Such a certificate is accepted here when it is byte for byte one of the `caBundle`'s,
//! valid now and for the name dialled; every other certificate goes through webpki unchanged. Used
//! for admission webhooks (the API server) and hook webhooks (the engine) alike.

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, RootCertStore, SignatureScheme};

/// Verifies servers against the certificates of a `caBundle`, as Go does.
#[derive(Debug)]
pub struct CaBundleVerifier {
    webpki: Arc<WebPkiServerVerifier>,
    bundle: Vec<CertificateDer<'static>>,
}

/// Why a webhook's caBundle is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CaBundleError(pub String);

impl CaBundleVerifier {
    /// A verifier for a PEM `caBundle`; an error names what in it does not read.
    pub fn new(provider: Arc<CryptoProvider>, ca_pem: &[u8]) -> Result<Arc<CaBundleVerifier>, CaBundleError> {
        let mut roots = RootCertStore::empty();
        let mut bundle = Vec::new();
        for cert in rustls_pemfile::certs(&mut &*ca_pem) {
            let cert = cert.map_err(|e| CaBundleError(format!("caBundle: {e}")))?;
            roots.add(cert.clone()).map_err(|e| CaBundleError(format!("caBundle: {e}")))?;
            bundle.push(cert);
        }
        if bundle.is_empty() {
            return Err(CaBundleError("caBundle: no PEM certificate in it".into()));
        }
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| CaBundleError(format!("caBundle: {e}")))?;
        Ok(Arc::new(CaBundleVerifier { webpki, bundle }))
    }
}

impl ServerCertVerifier for CaBundleVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        match self.webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(Error::InvalidCertificate(why)) if self.bundle.iter().any(|c| c.as_ref() == end_entity.as_ref()) => {
                root_as_server(end_entity, server_name, now).map_err(|mine| reason(why, mine))?;
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// When webpki refused a certificate that is one of the roots: our own reason if we refuse it too
/// (expired, another name), else webpki's.
fn reason(webpki: CertificateError, mine: CertificateError) -> Error {
    match mine {
        CertificateError::BadEncoding => Error::InvalidCertificate(webpki),
        mine => Error::InvalidCertificate(mine),
    }
}

/// What Go checks of a leaf that is itself a root: it reads, it is valid at `now`, it names the
/// server, and, when it lists extended key usages, server authentication is one.
fn root_as_server(
    cert: &CertificateDer<'_>,
    server_name: &ServerName<'_>,
    now: UnixTime,
) -> Result<(), CertificateError> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref()).map_err(|_| CertificateError::BadEncoding)?;
    let at =
        x509_parser::time::ASN1Time::from_timestamp(now.as_secs() as i64).map_err(|_| CertificateError::BadEncoding)?;
    let validity = parsed.validity();
    if at < validity.not_before {
        return Err(CertificateError::NotValidYet);
    }
    if at > validity.not_after {
        return Err(CertificateError::Expired);
    }
    if let Ok(Some(eku)) = parsed.extended_key_usage()
        && !(eku.value.any || eku.value.server_auth)
    {
        return Err(CertificateError::InvalidPurpose);
    }
    let leaf = webpki::EndEntityCert::try_from(cert).map_err(|_| CertificateError::BadEncoding)?;
    leaf.verify_is_valid_for_subject_name(server_name).map_err(|_| CertificateError::NotValidForName)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};

    use super::*;

    fn self_signed(ca: bool, names: &[&str]) -> String {
        let mut params = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
        if ca {
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        }
        params.self_signed(&KeyPair::generate().unwrap()).unwrap().pem()
    }

    fn der(pem: &str) -> CertificateDer<'static> {
        rustls_pemfile::certs(&mut pem.as_bytes()).next().unwrap().unwrap()
    }

    fn check(bundle: &str, served: &str, name: &str) -> Result<ServerCertVerified, Error> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let v = CaBundleVerifier::new(provider, bundle.as_bytes()).unwrap();
        let name = ServerName::try_from(name.to_string()).unwrap();
        v.verify_server_cert(&der(served), &[], &name, &[], UnixTime::now())
    }

    #[test]
    fn a_self_signed_ca_serving_for_itself_is_accepted_as_go_accepts_it() {
        // kopf's webhook server: one certificate, a CA, given as its own caBundle.
        let kopf = self_signed(true, &["localhost", "127.0.0.1"]);
        let webpki = {
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut roots = RootCertStore::empty();
            roots.add(der(&kopf)).unwrap();
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider).build().unwrap()
        };
        let name = ServerName::try_from("localhost").unwrap();
        assert!(
            webpki.verify_server_cert(&der(&kopf), &[], &name, &[], UnixTime::now()).is_err(),
            "webpki alone refuses it"
        );
        assert!(check(&kopf, &kopf, "localhost").is_ok());
        assert!(check(&kopf, &kopf, "127.0.0.1").is_ok());
        let wrong_name = check(&kopf, &kopf, "elsewhere.example").unwrap_err();
        assert_eq!(wrong_name, Error::InvalidCertificate(CertificateError::NotValidForName));
    }

    #[test]
    fn nothing_else_is_loosened() {
        let kopf = self_signed(true, &["localhost"]);
        let other = self_signed(true, &["localhost"]);
        assert!(check(&kopf, &other, "localhost").is_err(), "a CA not in the bundle");
        let plain = self_signed(false, &["localhost"]);
        assert!(check(&plain, &plain, "localhost").is_ok(), "a self-signed leaf in the bundle, as before");
        let bundle = format!("{kopf}{plain}");
        assert!(check(&bundle, &kopf, "localhost").is_ok(), "found anywhere in the bundle");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        assert_eq!(CaBundleVerifier::new(provider, b"nothing").unwrap_err().0, "caBundle: no PEM certificate in it");
    }

    #[test]
    fn an_expired_root_is_refused_for_being_expired() {
        let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2001, 1, 1);
        let old = params.self_signed(&KeyPair::generate().unwrap()).unwrap().pem();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let v = CaBundleVerifier::new(provider, old.as_bytes()).unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        let now = UnixTime::since_unix_epoch(Duration::from_secs(1_800_000_000));
        let why = v.verify_server_cert(&der(&old), &[], &name, &[], now).unwrap_err();
        assert!(
            matches!(
                why,
                Error::InvalidCertificate(CertificateError::Expired | CertificateError::ExpiredContext { .. })
            ),
            "{why:?}"
        );
    }
}
