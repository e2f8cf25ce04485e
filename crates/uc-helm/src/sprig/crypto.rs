//! Sprig's cryptographic functions: `bcrypt`, `htpasswd`, `derivePassword` (the Master Password
//! algorithm, scrypt and HMAC-SHA256, deterministic as Sprig's), `encryptAES`/`decryptAES` (AES-256-CBC,
//! the IV first, base64), `randBytes`, and keys and certificates — `genPrivateKey`, `genCA`,
//! `genSelfSignedCert`, `genSignedCert` (each with a `…WithKey` form) and `buildCustomCert`. Keys are
//! ECDSA P-256 or Ed25519 (uc does not generate RSA or DSA keys, Sprig's default for certificates:
//! see docs/sdk-operators.md); a certificate is a dict of its PEM `Cert` and `Key`.

use std::collections::BTreeMap;

use aes::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit, block_padding::Pkcs7};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};

use super::convert::{strval, to_i64};
use crate::error::HelmError;
use crate::gotemplate::{Funcs, Function, Ty, Value};

const SEED: &str = "com.lyndir.masterpassword";

fn templates(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "maximum" => &["anoxxxxxxxxxxxxxxxxx", "axxxxxxxxxxxxxxxxxno"],
        "long" => &[
            "CvcvnoCvcvCvcv",
            "CvcvCvcvnoCvcv",
            "CvcvCvcvCvcvno",
            "CvccnoCvcvCvcv",
            "CvccCvcvnoCvcv",
            "CvccCvcvCvcvno",
            "CvcvnoCvccCvcv",
            "CvcvCvccnoCvcv",
            "CvcvCvccCvcvno",
            "CvcvnoCvcvCvcc",
            "CvcvCvcvnoCvcc",
            "CvcvCvcvCvccno",
            "CvccnoCvccCvcv",
            "CvccCvccnoCvcv",
            "CvccCvccCvcvno",
            "CvcvnoCvccCvcc",
            "CvcvCvccnoCvcc",
            "CvcvCvccCvccno",
            "CvccnoCvcvCvcc",
            "CvccCvcvnoCvcc",
            "CvccCvcvCvccno",
        ],
        "medium" => &["CvcnoCvc", "CvcCvcno"],
        "short" => &["Cvcn"],
        "basic" => &["aaanaaan", "aannaaan", "aaannaaa"],
        "pin" => &["nnnn"],
        _ => return None,
    })
}

fn characters(class: u8) -> &'static [u8] {
    match class {
        b'V' => b"AEIOU",
        b'C' => b"BCDFGHJKLMNPQRSTVWXYZ",
        b'v' => b"aeiou",
        b'c' => b"bcdfghjklmnpqrstvwxyz",
        b'A' => b"AEIOUBCDFGHJKLMNPQRSTVWXYZ",
        b'a' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz",
        b'n' => b"0123456789",
        b'o' => b"@&%?,=[]_:-+*$#!'^~;()/.",
        _ => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz0123456789!@#$%^&*()",
    }
}

/// Sprig's `derivePassword(counter, type, password, user, site)`.
pub fn derive_password(counter: u32, kind: &str, password: &str, user: &str, site: &str) -> String {
    let Some(templates) = templates(kind) else { return format!("cannot find password template {kind}") };
    let mut salt = SEED.as_bytes().to_vec();
    salt.extend((user.len() as u32).to_be_bytes());
    salt.extend(user.as_bytes());
    let mut key = [0u8; 64];
    let params = scrypt::Params::new(15, 8, 2, 64).expect("valid scrypt parameters");
    if let Err(e) = scrypt::scrypt(password.as_bytes(), &salt, &params, &mut key) {
        return format!("failed to derive password: {e}");
    }
    let mut message = SEED.as_bytes().to_vec();
    message.extend((site.len() as u32).to_be_bytes());
    message.extend(site.as_bytes());
    message.extend(counter.to_be_bytes());
    let seed = ring::hmac::sign(&ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key), &message);
    let seed = seed.as_ref();
    let template = templates[usize::from(seed[0]) % templates.len()];
    template
        .bytes()
        .enumerate()
        .map(|(i, class)| {
            let set = characters(class);
            set[usize::from(seed[i + 1]) % set.len()] as char
        })
        .collect()
}

/// Sprig's `encryptAES`: the key is the password's bytes, zero-padded (or cut) to 32.
fn encrypt_aes(password: &str, plain: &str) -> String {
    if plain.is_empty() {
        return String::new();
    }
    let mut key = [0u8; 32];
    let n = password.len().min(32);
    key[..n].copy_from_slice(&password.as_bytes()[..n]);
    let mut iv = [0u8; 16];
    let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut iv);
    let sealed =
        cbc::Encryptor::<aes::Aes256>::new(&key.into(), &iv.into()).encrypt_padded_vec_mut::<Pkcs7>(plain.as_bytes());
    STANDARD.encode([iv.as_slice(), &sealed].concat())
}

fn decrypt_aes(password: &str, sealed: &str) -> Result<String, HelmError> {
    if sealed.is_empty() {
        return Ok(String::new());
    }
    let data = STANDARD.decode(sealed).map_err(|e| HelmError::from(e.to_string()))?;
    if data.len() < 16 || !data.len().is_multiple_of(16) {
        return Err(HelmError::from("ciphertext is not a multiple of the block size"));
    }
    let mut key = [0u8; 32];
    let n = password.len().min(32);
    key[..n].copy_from_slice(&password.as_bytes()[..n]);
    let (iv, body) = data.split_at(16);
    let iv: [u8; 16] = iv.try_into().map_err(|_| "short IV".to_string())?;
    let plain = cbc::Decryptor::<aes::Aes256>::new(&key.into(), &iv.into())
        .decrypt_padded_vec_mut::<Pkcs7>(body)
        .map_err(|_| "invalid padding".to_string())?;
    Ok(String::from_utf8_lossy(&plain).into_owned())
}

fn bcrypt_hash(input: &str) -> String {
    match bcrypt::hash_with_result(input, 10) {
        Ok(h) => h.format_for_version(bcrypt::Version::TwoA),
        Err(e) => format!("failed to encrypt string with bcrypt: {e}"),
    }
}

/// A new key of `kind` in PEM; Sprig's message for a kind it does not know.
fn private_key(kind: &str) -> Result<KeyPair, HelmError> {
    let alg = match kind {
        "ecdsa" => &rcgen::PKCS_ECDSA_P256_SHA256,
        "ed25519" => &rcgen::PKCS_ED25519,
        "" | "rsa" | "dsa" => {
            return Err(HelmError::from(format!(
                "{kind:?} keys are not generated by uc: use \"ecdsa\" or \"ed25519\""
            )));
        }
        other => return Err(HelmError::from(format!("Unknown type {other}"))),
    };
    KeyPair::generate_for(alg).map_err(|e| HelmError::from(format!("failed to generate private key: {e}")))
}

fn certificate(cert: &str, key: &str) -> Value {
    Value::from(BTreeMap::from([("Cert".to_string(), Value::from(cert)), ("Key".to_string(), Value::from(key))]))
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::List(l) => l.iter().map(strval).collect(),
        Value::Nil | Value::Invalid => Vec::new(),
        other => vec![strval(other)],
    }
}

/// A certificate's parameters as Sprig's: the common name, SANs (IPs and DNS names), `days` of
/// validity from now, server and client authentication.
fn params(cn: &str, ips: &Value, dns: &Value, days: i64, ca: bool) -> Result<CertificateParams, HelmError> {
    let sans: Vec<String> = strings(ips).into_iter().chain(strings(dns)).collect();
    let mut p = CertificateParams::new(sans).map_err(|e| HelmError::from(e.to_string()))?;
    p.distinguished_name.push(DnType::CommonName, cn);
    let now = time::OffsetDateTime::now_utc();
    p.not_before = now;
    p.not_after = now + time::Duration::days(days);
    p.key_usages = vec![KeyUsagePurpose::KeyEncipherment, KeyUsagePurpose::DigitalSignature];
    if ca {
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.key_usages.push(KeyUsagePurpose::KeyCertSign);
    }
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
    Ok(p)
}

fn key_of(pem: Option<&Value>) -> Result<KeyPair, HelmError> {
    match pem {
        Some(v) => KeyPair::from_pem(&strval(v)).map_err(|e| HelmError::from(format!("error decoding key: {e}"))),
        None => private_key("ecdsa"),
    }
}

fn field(v: &Value, name: &str) -> String {
    match v {
        Value::Map(m) => m.borrow().get(name).map(strval).unwrap_or_default(),
        _ => String::new(),
    }
}

/// `genCA`/`genSelfSignedCert`/`genSignedCert` and their `WithKey` forms: `a` are the arguments after
/// the name; `signer`: the CA argument's position for a signed certificate.
fn issue(
    cn: &str,
    ips: &Value,
    dns: &Value,
    days: i64,
    ca: bool,
    signer: Option<&Value>,
    key: Option<&Value>,
) -> Result<Value, HelmError> {
    let key = key_of(key)?;
    let p = params(cn, ips, dns, days, ca)?;
    let cert = match signer {
        None => p.self_signed(&key).map_err(|e| HelmError::from(e.to_string()))?,
        Some(ca) => {
            let ca_key = KeyPair::from_pem(&field(ca, "Key"))
                .map_err(|e| HelmError::from(format!("error decoding the CA's key: {e}")))?;
            let issuer = Issuer::from_ca_cert_pem(&field(ca, "Cert"), ca_key)
                .map_err(|e| HelmError::from(format!("error decoding the CA's certificate: {e}")))?;
            p.signed_by(&key, &issuer).map_err(|e| HelmError::from(e.to_string()))?
        }
    };
    Ok(certificate(&cert.pem(), &key.serialize_pem()))
}

#[expect(clippy::too_many_lines, reason = "data table: one entry per sprig function")]
pub(super) fn register(f: &mut Funcs) {
    use Ty::*;
    let mut add = |name: &str, func: Function| {
        f.insert(name.to_string(), func);
    };
    add("bcrypt", Function::new(&[Str], move |a| Ok(Value::from(bcrypt_hash(&strval(&a[0]))))));
    // Sprig 3.3 (Helm 3.17's): bcrypt only, two arguments.
    add(
        "htpasswd",
        Function::new(&[Str, Str], move |a| {
            let (user, password) = (strval(&a[0]), strval(&a[1]));
            if user.contains(':') {
                return Ok(Value::from(format!("invalid username: {user}")));
            }
            Ok(Value::from(format!("{user}:{}", bcrypt_hash(&password))))
        }),
    );
    add(
        "derivePassword",
        Function::new(&[Int, Str, Str, Str, Str], move |a| {
            Ok(Value::from(derive_password(
                to_i64(&a[0]) as u32,
                &strval(&a[1]),
                &strval(&a[2]),
                &strval(&a[3]),
                &strval(&a[4]),
            )))
        }),
    );
    add(
        "encryptAES",
        Function::new(&[Str, Str], move |a| Ok(Value::from(encrypt_aes(&strval(&a[0]), &strval(&a[1]))))),
    );
    add(
        "decryptAES",
        Function::new(&[Str, Str], move |a| decrypt_aes(&strval(&a[0]), &strval(&a[1])).map(Value::from)),
    );
    add(
        "randBytes",
        Function::new(&[Int], |a| {
            let mut buf = vec![0u8; to_i64(&a[0]).clamp(0, 1 << 20) as usize];
            let _ = ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut buf);
            Ok(Value::from(STANDARD.encode(buf)))
        }),
    );
    add(
        "genPrivateKey",
        Function::new(&[Str], move |a| match private_key(&strval(&a[0])) {
            Ok(k) => Ok(Value::from(k.serialize_pem())),
            // Sprig prints its failures; a kind uc does not make fails the render instead.
            Err(e) if e.0.starts_with("Unknown type") => Ok(Value::from(e.0)),
            Err(e) => Err(e),
        }),
    );
    let none = Value::Nil;
    let (n1, n2) = (none.clone(), none.clone());
    add("genCA", Function::new(&[Str, Int], move |a| issue(&strval(&a[0]), &n1, &n1, to_i64(&a[1]), true, None, None)));
    add(
        "genCAWithKey",
        Function::new(&[Str, Int, Str], move |a| {
            issue(&strval(&a[0]), &n2, &n2, to_i64(&a[1]), true, None, Some(&a[2]))
        }),
    );
    add(
        "genSelfSignedCert",
        Function::new(&[Str, Any, Any, Int], |a| issue(&strval(&a[0]), &a[1], &a[2], to_i64(&a[3]), false, None, None)),
    );
    add(
        "genSelfSignedCertWithKey",
        Function::new(&[Str, Any, Any, Int, Str], |a| {
            issue(&strval(&a[0]), &a[1], &a[2], to_i64(&a[3]), false, None, Some(&a[4]))
        }),
    );
    add(
        "genSignedCert",
        Function::new(&[Str, Any, Any, Int, Any], |a| {
            issue(&strval(&a[0]), &a[1], &a[2], to_i64(&a[3]), false, Some(&a[4]), None)
        }),
    );
    add(
        "genSignedCertWithKey",
        Function::new(&[Str, Any, Any, Int, Any, Str], |a| {
            issue(&strval(&a[0]), &a[1], &a[2], to_i64(&a[3]), false, Some(&a[4]), Some(&a[5]))
        }),
    );
    add(
        "buildCustomCert",
        Function::new(&[Str, Str], move |a| {
            let decode = |v: &Value, what: &str| {
                STANDARD
                    .decode(strval(v))
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok())
                    .ok_or_else(|| HelmError::from(format!("unable to decode base64 {what}")))
            };
            let (cert, key) = (decode(&a[0], "certificate")?, decode(&a[1], "private key")?);
            KeyPair::from_pem(&key).map_err(|e| HelmError::from(format!("error parsing private key: {e}")))?;
            if !cert.contains("-----BEGIN CERTIFICATE-----") {
                return Err(HelmError::from("error parsing certificate: decoded certificate is not PEM"));
            }
            Ok(certificate(&cert, &key))
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aes_round_trips_and_bcrypt_is_gos() {
        let sealed = encrypt_aes("secretkey", "plaintext");
        assert_ne!(sealed, encrypt_aes("secretkey", "plaintext"), "a random IV");
        assert_eq!(decrypt_aes("secretkey", &sealed).unwrap(), "plaintext");
        assert!(decrypt_aes("other", &sealed).is_err() || decrypt_aes("other", &sealed).unwrap() != "plaintext");
        assert_eq!(encrypt_aes("k", ""), "");
        let hash = bcrypt_hash("password");
        assert!(hash.starts_with("$2a$10$") && bcrypt::verify("password", &hash).unwrap(), "{hash}");
    }

    #[test]
    fn certificates_chain_to_their_ca() {
        let ca = issue("ca", &Value::Nil, &Value::Nil, 365, true, None, None).unwrap();
        let ips = Value::from(vec![Value::from("10.0.0.1")]);
        let dns = Value::from(vec![Value::from("svc.ns.svc")]);
        let leaf = issue("svc", &ips, &dns, 30, false, Some(&ca), None).unwrap();
        assert!(field(&leaf, "Cert").starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(field(&leaf, "Key").contains("PRIVATE KEY"));
        let with_key =
            issue("ca2", &Value::Nil, &Value::Nil, 1, true, None, Some(&Value::from(field(&ca, "Key")))).unwrap();
        assert_eq!(field(&with_key, "Key"), field(&ca, "Key"));
        assert!(private_key("rsa").unwrap_err().0.contains("not generated by uc"));
        assert_eq!(private_key("x").unwrap_err().0, "Unknown type x");
        assert!(private_key("ed25519").is_ok());
    }
}
