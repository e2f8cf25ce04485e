//! `certificates.k8s.io/v1` CertificateSigningRequests: the requester recorded at creation,
//! validation, the `approval` subresource's rules, and the signer the cluster runs itself —
//! `kubernetes.io/kube-apiserver-client` (and `-kubelet`), signing approved requests with the
//! cluster CA so that the certificate authenticates to this API server.

use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use tokio::sync::watch;
use uc_api::{GroupResource, Pointer};

use crate::app::App;
use crate::auth::User;
use crate::error::{FieldError, FieldErrorKind};
use crate::storage::{Op, StoreError};

/// Why a certificate request could not be signed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SignError(pub String);

impl From<String> for SignError {
    fn from(message: String) -> Self {
        SignError(message)
    }
}

impl From<&str> for SignError {
    fn from(message: &str) -> Self {
        SignError(message.to_string())
    }
}

impl From<SignError> for String {
    fn from(e: SignError) -> String {
        e.0
    }
}

/// The signers this API server signs for.
pub const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";
const KUBELET_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";

fn gr() -> GroupResource {
    GroupResource::new("certificates.k8s.io", "certificatesigningrequests")
}

/// Records who asked (`spec.username`, `uid`, `groups`, `extra`), whatever the client wrote there.
pub fn stamp_requester(obj: &mut Value, user: &User) {
    if !obj["spec"].is_object() {
        obj["spec"] = json!({});
    }
    let spec = &mut obj["spec"];
    spec["username"] = json!(user.name);
    spec["groups"] = json!(user.groups);
    let Some(spec) = spec.as_object_mut() else { return };
    spec.remove("uid");
    spec.remove("extra");
    if !user.uid.is_empty() {
        spec.insert("uid".into(), json!(user.uid));
    }
    if !user.extra.is_empty() {
        spec.insert("extra".into(), json!(user.extra));
    }
}

/// The PEM of `spec.request` (base64 of a PEM `CERTIFICATE REQUEST`), if it decodes.
fn request_pem(obj: &Value) -> Option<String> {
    let b64 = obj.at("/spec/request").and_then(Value::as_str)?;
    String::from_utf8(STANDARD.decode(b64).ok()?).ok()
}

fn usages(obj: &Value) -> Vec<String> {
    obj.at("/spec/usages")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// The organizations (groups) the request's subject asks for.
pub fn requested_groups(obj: &Value) -> Vec<String> {
    let Some(pem) = request_pem(obj) else { return Vec::new() };
    let Ok((_, pem)) = x509_parser::pem::parse_x509_pem(pem.as_bytes()) else { return Vec::new() };
    use x509_parser::prelude::FromDer;
    let Ok((_, csr)) = x509_parser::certification_request::X509CertificationRequest::from_der(&pem.contents) else {
        return Vec::new();
    };
    let subject = &csr.certification_request_info.subject;
    subject.iter_organization().filter_map(|o| o.as_str().ok().map(str::to_string)).collect()
}

/// kube-apiserver's CertificateSubjectRestriction admission: no request for `system:masters` through
/// the signer whose certificates authenticate to the API server (that group bypasses authorization).
pub fn subject_restriction(obj: &Value) -> Option<&'static str> {
    let signer = obj.at("/spec/signerName").and_then(Value::as_str);
    (signer == Some("kubernetes.io/kube-apiserver-client")
        && requested_groups(obj).iter().any(|g| g == "system:masters"))
    .then_some("use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed")
}

/// Errors in a CertificateSigningRequest.
pub fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match request_pem(obj) {
        None => errs.push(FieldError::required("spec.request", "a base64-encoded PEM certificate request")),
        Some(pem) if rcgen::CertificateSigningRequestParams::from_pem(&pem).is_err() => errs.push(FieldError::new(
            FieldErrorKind::Invalid,
            "spec.request",
            None,
            "PEM block type must be CERTIFICATE REQUEST (and the request must be signed by its key)",
        )),
        Some(_) => {}
    }
    match obj.at("/spec/signerName").and_then(Value::as_str) {
        None | Some("") => errs.push(FieldError::required("spec.signerName", "")),
        Some(s) if !s.contains('/') => errs.push(FieldError::invalid(
            "spec.signerName",
            &json!(s),
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        )),
        Some(_) => {}
    }
    if let Some(s) = obj.at("/spec/expirationSeconds").filter(|s| !s.is_null())
        && s.as_i64().is_none_or(|s| s < 600)
    {
        errs.push(FieldError::invalid(
            "spec.expirationSeconds",
            s,
            "may not specify a duration less than 600 seconds (10 minutes)",
        ));
    }
    if usages(obj).is_empty() {
        errs.push(FieldError::required("spec.usages", ""));
    }
    let conditions = obj.at("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let has = |t: &str| conditions.iter().any(|c| c.get("type").and_then(Value::as_str) == Some(t));
    if has("Approved") && has("Denied") {
        errs.push(FieldError::invalid(
            "status.conditions",
            &json!(conditions),
            "Approved and Denied conditions are mutually exclusive",
        ));
    }
    errs
}

/// A spec may not change after creation.
pub fn spec_unchanged(old: &Value, new: &Value) -> Option<FieldError> {
    (old.get("spec") != new.get("spec"))
        .then(|| FieldError::forbidden("spec", "updates to certificatesigningrequest spec are forbidden"))
}

/// Whether this API server should sign `obj` now: approved, not denied or failed, not yet signed,
/// for one of its signers.
pub fn wants_signing(obj: &Value) -> bool {
    let conditions = obj.at("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let is = |t: &str| {
        conditions.iter().any(|c| {
            c.get("type").and_then(Value::as_str) == Some(t) && c.get("status").and_then(Value::as_str) != Some("False")
        })
    };
    let signer = obj.at("/spec/signerName").and_then(Value::as_str).unwrap_or_default();
    is("Approved")
        && !is("Denied")
        && !is("Failed")
        && obj.at("/status/certificate").is_none()
        && matches!(signer, CLIENT_SIGNER | KUBELET_SIGNER)
}

/// Why the signer refuses a request's usages (kube-apiserver-client: client auth, digital
/// signature and key encipherment only, client auth required).
pub fn usage_problem(obj: &Value) -> Option<String> {
    let usages = usages(obj);
    let allowed = ["client auth", "digital signature", "key encipherment"];
    if let Some(u) = usages.iter().find(|u| !allowed.contains(&u.as_str())) {
        return Some(format!("invalid usage for client certificate: {u}"));
    }
    (!usages.iter().any(|u| u == "client auth"))
        .then(|| "missing required usage for client certificate: client auth".into())
}

/// Signs a PEM certificate request with the CA for `seconds` (backdated five minutes, as kube's
/// signer does); returns the certificate, PEM.
pub fn sign(ca_pem: &str, ca_key_pem: &str, request_pem: &str, seconds: i64) -> Result<String, SignError> {
    let key = rcgen::KeyPair::from_pem(ca_key_pem).map_err(|e| format!("the CA key: {e}"))?;
    let issuer = rcgen::Issuer::from_ca_cert_pem(ca_pem, key).map_err(|e| format!("the CA certificate: {e}"))?;
    let mut csr = rcgen::CertificateSigningRequestParams::from_pem(request_pem).map_err(|e| e.to_string())?;
    let now = time::OffsetDateTime::now_utc();
    csr.params.not_before = now - time::Duration::minutes(5);
    csr.params.not_after = now + time::Duration::seconds(seconds);
    csr.params.is_ca = rcgen::IsCa::ExplicitNoCa;
    csr.params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature, rcgen::KeyUsagePurpose::KeyEncipherment];
    csr.params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    csr.params.serial_number = Some(rcgen::SerialNumber::from_slice(&rand::random::<[u8; 16]>()));
    Ok(csr.signed_by(&issuer).map(|c| c.pem()).map_err(|e| e.to_string())?)
}

fn condition(kind: &str, reason: &str, message: &str) -> Value {
    let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    json!({"type": kind, "status": "True", "reason": reason, "message": message,
           "lastUpdateTime": now, "lastTransitionTime": now})
}

async fn sign_one(app: &App, dir: &Path, key: &str, obj: &Value) -> Result<(), StoreError> {
    let mut new = obj.clone();
    let seconds = obj.at("/spec/expirationSeconds").and_then(Value::as_i64).unwrap_or(365 * 24 * 3600);
    let ca_key = std::fs::read_to_string(dir.join("ca.key")).unwrap_or_default();
    let signed = match usage_problem(obj) {
        Some(p) => Err(p),
        None => sign(&app.ca_pem, &ca_key, &request_pem(obj).unwrap_or_default(), seconds).map_err(String::from),
    };
    match signed {
        Ok(cert) => new["status"]["certificate"] = json!(STANDARD.encode(cert)),
        Err(why) => {
            let mut conditions = obj.at("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
            conditions.push(condition("Failed", "SignerValidationFailure", &why));
            new["status"]["conditions"] = json!(conditions);
        }
    }
    let expect_rv = crate::storage::rv_of(obj);
    match app.store.write(Op::Update { gr: gr(), key: key.to_string(), object: new, expect_rv }).await {
        Ok(_) | Err(StoreError::Conflict { .. }) | Err(StoreError::NotFound) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The cluster's signer: signs approved requests for its signers until `stop` changes.
pub async fn run_signer(app: Arc<App>, mut stop: watch::Receiver<bool>) {
    let mut revisions = app.store.subscribe();
    let mut cursor = 0u64;
    loop {
        let mut pending = Vec::new();
        let seen = app.store.events_after(cursor, |ev| {
            if ev.gr == gr() && wants_signing(&ev.object.tree()) {
                pending.push(ev.key.clone());
            }
        });
        cursor = match seen {
            Ok(rv) => rv,
            Err(_) => {
                // History was compacted: look at every request.
                let (all, rv) = app.store.list(&gr(), None, None).unwrap_or_default();
                pending.extend(all.into_iter().filter(|(_, o)| wants_signing(o)).map(|(k, _)| k));
                rv
            }
        };
        pending.dedup();
        for key in pending {
            if let Some(obj) = app.store.get(&gr(), &key).filter(|o| wants_signing(o)) {
                let signing = sign_one(&app, &app.config.data_dir, &key, &obj);
                crate::background::step(format!("signing the certificate request {key}"), signing).await;
            }
        }
        tokio::select! {
            r = revisions.changed() => if r.is_err() { return },
            _ = stop.changed() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca() -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.distinguished_name.push(rcgen::DnType::CommonName, "test-ca");
        params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::DigitalSignature];
        (params.self_signed(&key).unwrap().pem(), key.serialize_pem())
    }

    fn request(cn: &str, org: &str) -> String {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(rcgen::DnType::CommonName, cn);
        params.distinguished_name.push(rcgen::DnType::OrganizationName, org);
        params.serialize_request(&key).unwrap().pem().unwrap()
    }

    fn csr(usages: &[&str], conditions: Value) -> Value {
        json!({"spec": {"request": STANDARD.encode(request("jane", "dev")), "signerName": CLIENT_SIGNER,
                        "usages": usages}, "status": {"conditions": conditions}})
    }

    #[test]
    fn a_signed_request_keeps_its_subject_and_is_a_client_certificate() {
        let (ca_pem, ca_key) = ca();
        let cert = sign(&ca_pem, &ca_key, &request("jane", "dev"), 3600).unwrap();
        let der = rustls_pemfile::certs(&mut cert.as_bytes()).next().unwrap().unwrap();
        assert_eq!(crate::tls::subject_of(&der), Some(("jane".to_string(), vec!["dev".to_string()])));
        let (_, parsed) = x509_parser::parse_x509_certificate(der.as_ref()).unwrap();
        assert_eq!(parsed.issuer().iter_common_name().next().unwrap().as_str().unwrap(), "test-ca");
        let lifetime = parsed.validity().not_after.timestamp() - parsed.validity().not_before.timestamp();
        assert_eq!(lifetime, 3600 + 300, "backdated five minutes");
    }

    #[test]
    fn requests_are_checked_and_signed_only_once_approved() {
        let approved = json!([{"type": "Approved", "status": "True"}]);
        assert!(validate(&csr(&["client auth"], json!([]))).is_empty());
        assert!(!wants_signing(&csr(&["client auth"], json!([]))), "not approved");
        assert!(wants_signing(&csr(&["client auth"], approved.clone())));
        let both = json!([{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]);
        let fields: Vec<String> = validate(&csr(&["client auth"], both)).into_iter().map(|e| e.field).collect();
        assert_eq!(fields, ["status.conditions"]);
        let mut signed = csr(&["client auth"], approved);
        signed["status"]["certificate"] = json!("x");
        assert!(!wants_signing(&signed));
        assert_eq!(
            usage_problem(&csr(&["server auth"], json!([]))).unwrap(),
            "invalid usage for client certificate: server auth"
        );
        let bad = json!({"spec": {"request": "bm9wZQ==", "signerName": "nope"}});
        let fields: Vec<String> = validate(&bad).into_iter().map(|e| e.field).collect();
        assert_eq!(fields, ["spec.request", "spec.signerName", "spec.usages"]);
    }

    #[test]
    fn the_requester_is_recorded_whatever_the_client_wrote() {
        let mut obj = json!({"spec": {"username": "root", "groups": ["system:masters"]}});
        stamp_requester(&mut obj, &User::service_account("a", "sa", "u1"));
        assert_eq!(obj["spec"]["username"], "system:serviceaccount:a:sa");
        assert_eq!(obj["spec"]["uid"], "u1");
        assert!(!obj["spec"]["groups"].as_array().unwrap().contains(&json!("system:masters")));
    }

    #[test]
    fn no_system_masters_through_the_api_server_client_signer() {
        let ask = |org: &str, signer: &str| json!({"spec": {"request": STANDARD.encode(request("eve", org)), "signerName": signer}});
        assert_eq!(requested_groups(&ask("system:masters", CLIENT_SIGNER)), vec!["system:masters"]);
        assert!(subject_restriction(&ask("system:masters", CLIENT_SIGNER)).is_some());
        assert!(subject_restriction(&ask("ops", CLIENT_SIGNER)).is_none());
        assert!(
            subject_restriction(&ask("system:masters", "example.com/other")).is_none(),
            "another signer's business"
        );
        assert!(requested_groups(&json!({"spec": {"request": "not base64"}})).is_empty());
    }
}
