//! Keys, certificates and secrets as sprig makes them: `genPrivateKey`, `genCA`,
//! `genSelfSignedCert`, `genSignedCert` (and their `WithKey` forms), `buildCustomCert`,
//! `bcrypt`, `htpasswd`, `derivePassword`, `encryptAES` and `decryptAES`.
//!
//! Keys and serial numbers come from the render's random source, so a seeded render
//! makes the same keys; certificates carry what Go's templates in sprig put in them
//! (the common name, IP and DNS names, validity from now for the given days, key usages
//! for servers and clients, and a CA's basic constraints).

use std::collections::HashMap;
use std::net::IpAddr;
use std::rc::Rc;

use base64::Engine;
use rand_chacha::rand_core::SeedableRng;
use rsa::pkcs1::{DecodeRsaPrivateKey, EncodeRsaPrivateKey};
use rsa::pkcs8::{DecodePrivateKey, EncodePrivateKey, LineEnding};

use super::arity;
use super::str_arg;
use crate::template::value::Object;
use crate::template::{Func, Value, World};

/// sprig's `certificate`: a PEM certificate and its PEM private key.
#[derive(Debug, Clone)]
pub(super) struct Certificate {
    cert: String,
    key: String,
}

impl Object for Certificate {
    fn type_name(&self) -> &'static str {
        "sprig.certificate"
    }

    fn kind(&self) -> &'static str {
        "struct"
    }

    fn call(&self, name: &str, _: &[Value]) -> Result<Value, String> {
        match name {
            "Cert" => Ok(Value::from(self.cert.as_str())),
            "Key" => Ok(Value::from(self.key.as_str())),
            other => Err(format!(
                "can't evaluate field {other} in type sprig.certificate"
            )),
        }
    }

    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({ "Cert": self.cert, "Key": self.key })
    }

    fn go_string(&self) -> String {
        format!("{{{} {}}}", self.cert, self.key)
    }
}

/// The certificate a value holds (a `certificate`, or a dict with `Cert` and `Key`).
fn certificate_arg(value: &Value) -> Result<Certificate, String> {
    let field = |name: &str| -> Result<String, String> {
        match value {
            Value::Object(o) => str_arg(&o.call(name, &[])?),
            Value::Map(_) => str_arg(&value.get(name)),
            other => Err(format!(
                "wrong type for value; expected sprig.certificate; got {}",
                other.type_name()
            )),
        }
    };
    Ok(Certificate {
        cert: field("Cert")?,
        key: field("Key")?,
    })
}

/// A private key of a kind sprig makes.
enum PrivateKey {
    Rsa(Box<rsa::RsaPrivateKey>),
    Ecdsa(p256::SecretKey),
    Ed25519(ed25519_dalek::SigningKey),
    Dsa(Box<dsa::SigningKey>),
}

impl PrivateKey {
    /// Generates a key of sprig's size for the kind.
    fn generate(world: &World, kind: &str, rsa_bits: usize) -> Result<Self, String> {
        world.with_rng(|rng| match kind {
            "rsa" => rsa_key(rng, rsa_bits)
                .map(|k| PrivateKey::Rsa(Box::new(k)))
                .map_err(|e| format!("failed to generate private key: {e}")),
            "ecdsa" => Ok(PrivateKey::Ecdsa(p256::SecretKey::random(rng))),
            "ed25519" => Ok(PrivateKey::Ed25519(ed25519_dalek::SigningKey::generate(
                rng,
            ))),
            "dsa" => {
                let components = dsa::Components::generate(rng, dsa::KeySize::DSA_2048_256);
                Ok(PrivateKey::Dsa(Box::new(dsa::SigningKey::generate(
                    rng, components,
                ))))
            }
            other => Err(format!("Unknown type {other}")),
        })
    }

    /// The key as sprig writes it: PKCS#1 for RSA, SEC 1 for ECDSA, PKCS#8 for Ed25519,
    /// OpenSSL's sequence for DSA.
    fn to_pem(&self) -> Result<String, String> {
        let text = match self {
            PrivateKey::Rsa(key) => key
                .to_pkcs1_pem(LineEnding::LF)
                .map_err(|e| e.to_string())?
                .to_string(),
            PrivateKey::Ecdsa(key) => key
                .to_sec1_pem(LineEnding::LF)
                .map_err(|e| e.to_string())?
                .to_string(),
            PrivateKey::Ed25519(key) => {
                ed25519_dalek::pkcs8::EncodePrivateKey::to_pkcs8_pem(key, LineEnding::LF)
                    .map_err(|e| e.to_string())?
                    .to_string()
            }
            PrivateKey::Dsa(key) => {
                let components = key.verifying_key().components();
                let integers = [
                    vec![0u8],
                    components.p().to_bytes_be(),
                    components.q().to_bytes_be(),
                    components.g().to_bytes_be(),
                    key.verifying_key().y().to_bytes_be(),
                    key.x().to_bytes_be(),
                ];
                pem_block("DSA PRIVATE KEY", &der_sequence(&integers))
            }
        };
        Ok(text)
    }

    /// Reads a PEM private key as sprig's `parsePrivateKeyPEM` does.
    fn from_pem(text: &str) -> Result<Self, String> {
        let block = pem_decode(text).ok_or("no PEM data in input")?;
        let der = &block.contents;
        match block.label.as_str() {
            "PRIVATE KEY" => {
                if let Ok(key) = rsa::RsaPrivateKey::from_pkcs8_der(der) {
                    return Ok(PrivateKey::Rsa(Box::new(key)));
                }
                if let Ok(key) = p256::SecretKey::from_pkcs8_der(der) {
                    return Ok(PrivateKey::Ecdsa(key));
                }
                ed25519_dalek::pkcs8::DecodePrivateKey::from_pkcs8_der(der)
                    .map(PrivateKey::Ed25519)
                    .map_err(|e| format!("decoding PEM as PKCS#8: {e}"))
            }
            "RSA PRIVATE KEY" => rsa::RsaPrivateKey::from_pkcs1_der(der)
                .map(|k| PrivateKey::Rsa(Box::new(k)))
                .map_err(|e| format!("parsing RSA private key from PEM: {e}")),
            "EC PRIVATE KEY" => p256::SecretKey::from_sec1_der(der)
                .map(PrivateKey::Ecdsa)
                .map_err(|e| format!("parsing EC private key from PEM: {e}")),
            label if label.ends_with(" PRIVATE KEY") => {
                Err(format!("invalid private key type {label}"))
            }
            label => Err(format!("no private key data in PEM block of type {label}")),
        }
    }

    /// The key as rcgen signs with it.
    fn signer(&self) -> Result<rcgen::KeyPair, String> {
        let (der, algorithm) = match self {
            PrivateKey::Rsa(key) => (
                key.to_pkcs8_der().map_err(|e| e.to_string())?,
                &rcgen::PKCS_RSA_SHA256,
            ),
            PrivateKey::Ecdsa(key) => (
                key.to_pkcs8_der().map_err(|e| e.to_string())?,
                &rcgen::PKCS_ECDSA_P256_SHA256,
            ),
            PrivateKey::Ed25519(key) => (
                ed25519_dalek::pkcs8::EncodePrivateKey::to_pkcs8_der(key)
                    .map_err(|e| e.to_string())?,
                &rcgen::PKCS_ED25519,
            ),
            PrivateKey::Dsa(_) => {
                return Err("x509: only RSA, ECDSA and Ed25519 keys supported".into())
            }
        };
        let der = rustls_pki_types::PrivatePkcs8KeyDer::from(der.as_bytes().to_vec());
        rcgen::KeyPair::from_pkcs8_der_and_sign_algo(&der, algorithm).map_err(|e| e.to_string())
    }
}

/// A random prime of `bits` bits with its two top bits set (so that the product of two
/// has exactly twice the bits), drawn from a generator seeded by `seed`.
fn rsa_prime<T>(seed: [u8; 32], bits: u32) -> Option<rsa::BigUint>
where
    T: crypto_bigint::Integer
        + crypto_bigint::RandomBits
        + crypto_bigint::RandomMod
        + crypto_bigint::Encoding,
{
    use crypto_primes::hazmat::{SetBits, SmallPrimesSieveFactory};
    let mut rng = rand_chacha::ChaCha20Rng::from_seed(seed);
    let prime: T = crypto_primes::sieve_and_find(
        &mut rng,
        SmallPrimesSieveFactory::<T>::new(bits, SetBits::TwoMsb),
        crypto_primes::is_prime_with_rng,
    )?;
    Some(rsa::BigUint::from_bytes_be(prime.to_be_bytes().as_ref()))
}

/// An RSA key of `bits` bits with exponent 65537, its two primes searched for on two
/// threads (Go's `rsa.GenerateKey` makes the same kind of key, on one).
fn rsa_key(rng: &mut rand_chacha::ChaCha20Rng, bits: usize) -> Result<rsa::RsaPrivateKey, String> {
    use rand_chacha::rand_core::RngCore;
    let prime_bits = u32::try_from(bits / 2).map_err(|e| e.to_string())?;
    let prime = move |seed: [u8; 32]| match prime_bits {
        0..=1024 => rsa_prime::<crypto_bigint::U1024>(seed, prime_bits),
        _ => rsa_prime::<crypto_bigint::U2048>(seed, prime_bits),
    };
    loop {
        let (mut first, mut second) = ([0u8; 32], [0u8; 32]);
        rng.fill_bytes(&mut first);
        rng.fill_bytes(&mut second);
        let (p, q) = std::thread::scope(|scope| {
            let other = scope.spawn(move || prime(first));
            let mine = prime(second);
            (other.join().ok().flatten(), mine)
        });
        let (Some(p), Some(q)) = (p, q) else {
            return Err("no prime found".into());
        };
        if p == q {
            continue;
        }
        return rsa::RsaPrivateKey::from_primes(vec![p, q], rsa::BigUint::from(65_537u32))
            .map_err(|e| e.to_string());
    }
}

/// A decoded PEM block.
struct PemBlock {
    label: String,
    contents: Vec<u8>,
}

/// Go's `pem.Decode`: the first block in the text.
fn pem_decode(text: &str) -> Option<PemBlock> {
    let start = text.find("-----BEGIN ")?;
    let rest = &text[start + 11..];
    let label_end = rest.find("-----")?;
    let label = rest[..label_end].to_string();
    let body_start = label_end + 5;
    let end_marker = format!("-----END {label}-----");
    let body_end = rest.find(&end_marker)?;
    let body: String = rest[body_start..body_end]
        .lines()
        .filter(|line| !line.contains(':'))
        .collect::<String>()
        .split_whitespace()
        .collect();
    let contents = base64::engine::general_purpose::STANDARD
        .decode(body)
        .ok()?;
    Some(PemBlock { label, contents })
}

/// A PEM block with 64-character lines, as Go's `pem.Encode` writes it.
fn pem_block(label: &str, der: &[u8]) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in encoded.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// A DER SEQUENCE of INTEGERs given as unsigned big-endian bytes.
fn der_sequence(integers: &[Vec<u8>]) -> Vec<u8> {
    let mut body = Vec::new();
    for magnitude in integers {
        let trimmed: &[u8] = match magnitude.iter().position(|b| *b != 0) {
            Some(first) => &magnitude[first..],
            None => &[0],
        };
        let mut content = Vec::with_capacity(trimmed.len() + 1);
        if trimmed[0] & 0x80 != 0 {
            content.push(0);
        }
        content.extend_from_slice(trimmed);
        body.push(0x02);
        der_length(&mut body, content.len());
        body.extend(content);
    }
    let mut out = vec![0x30];
    der_length(&mut out, body.len());
    out.extend(body);
    out
}

fn der_length(out: &mut Vec<u8>, len: usize) {
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
}

/// What a new certificate says of itself.
struct Subject {
    common_name: String,
    ips: Vec<IpAddr>,
    dns_names: Vec<String>,
    days: i64,
}

impl Subject {
    fn from_args(args: &[Value]) -> Result<Self, String> {
        let [cn, ips, dns, days, ..] = args else {
            return Err("wrong number of args".into());
        };
        let strings = |value: &Value, what: &str| -> Result<Vec<String>, String> {
            match value {
                Value::Nil => Ok(Vec::new()),
                Value::List(items) => items
                    .iter()
                    .map(|item| match item {
                        Value::Str(s) => Ok(s.to_string()),
                        other => Err(format!("{what}: {} is not a string", other.to_go_string())),
                    })
                    .collect(),
                other => Err(format!(
                    "wrong type for value; expected []interface {{}}; got {}",
                    other.type_name()
                )),
            }
        };
        let ips = strings(ips, "error parsing ip")?
            .iter()
            .map(|ip| {
                ip.parse::<IpAddr>()
                    .map_err(|_| format!("error parsing ip: {ip}"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Subject {
            common_name: str_arg(cn)?,
            ips,
            dns_names: strings(dns, "error processing alternate dns name")?,
            days: super::int_arg(days)?,
        })
    }

    /// sprig's `getBaseCertTemplate`, made CA when asked.
    fn params(&self, world: &World, ca: bool) -> Result<rcgen::CertificateParams, String> {
        let mut params = rcgen::CertificateParams::default();
        let mut name = rcgen::DistinguishedName::new();
        if !self.common_name.is_empty() {
            // Go writes a PrintableString where the characters allow, else UTF-8.
            let value = match rcgen::string::PrintableString::try_from(self.common_name.as_str()) {
                Ok(printable) => rcgen::DnValue::PrintableString(printable),
                Err(_) => rcgen::DnValue::Utf8String(self.common_name.clone()),
            };
            name.push(rcgen::DnType::CommonName, value);
        }
        params.distinguished_name = name;
        let mut serial = world.bytes(16);
        serial[0] &= 0x7f;
        params.serial_number = Some(rcgen::SerialNumber::from_slice(&serial));
        let now = world.now().as_second();
        let after = now.saturating_add(self.days.saturating_mul(24 * 3600));
        let at = |seconds: i64| {
            time::OffsetDateTime::from_unix_timestamp(seconds).map_err(|e| e.to_string())
        };
        params.not_before = at(now)?;
        params.not_after = at(after)?;
        params.subject_alt_names = self
            .ips
            .iter()
            .map(|ip| rcgen::SanType::IpAddress(*ip))
            .collect();
        for dns in &self.dns_names {
            let name = dns
                .clone()
                .try_into()
                .map_err(|_| format!("error processing alternate dns name: {dns}"))?;
            params.subject_alt_names.push(rcgen::SanType::DnsName(name));
        }
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyEncipherment,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        params.extended_key_usages = vec![
            rcgen::ExtendedKeyUsagePurpose::ServerAuth,
            rcgen::ExtendedKeyUsagePurpose::ClientAuth,
        ];
        if ca {
            params.key_usages.push(rcgen::KeyUsagePurpose::KeyCertSign);
            params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        } else {
            // Go marks a leaf `CA:FALSE` (critical) and, unlike a CA, gives it no subject
            // key identifier.
            let mut constraints =
                rcgen::CustomExtension::from_oid_content(&[2, 5, 29, 19], vec![0x30, 0x00]);
            constraints.set_criticality(true);
            params.custom_extensions.push(constraints);
        }
        Ok(params)
    }
}

/// A self-signed certificate (a CA's when `ca`) with `key`, made when not given.
fn self_signed(
    world: &World,
    subject: &Subject,
    key: Option<PrivateKey>,
    ca: bool,
) -> Result<Value, String> {
    let key = match key {
        Some(key) => key,
        None => PrivateKey::generate(world, "rsa", 2048)?,
    };
    let signer = key.signer()?;
    let cert = subject
        .params(world, ca)?
        .self_signed(&signer)
        .map_err(|e| e.to_string())?;
    certificate(cert.pem(), key.to_pem()?)
}

/// A certificate signed by the CA `ca`.
fn signed(
    world: &World,
    subject: &Subject,
    ca: &Value,
    key: Option<PrivateKey>,
) -> Result<Value, String> {
    let ca = certificate_arg(ca)?;
    let ca_key = PrivateKey::from_pem(&ca.key).map_err(|e| format!("parsing private key: {e}"))?;
    let ca_signer = ca_key.signer()?;
    let issuer = rcgen::Issuer::from_ca_cert_pem(&ca.cert, ca_signer)
        .map_err(|e| format!("error parsing certificate: {e}"))?;
    let key = match key {
        Some(key) => key,
        None => PrivateKey::generate(world, "rsa", 2048)?,
    };
    let mut params = subject.params(world, false)?;
    params.use_authority_key_identifier_extension = true;
    let cert = params
        .signed_by(&key.signer()?, &issuer)
        .map_err(|e| e.to_string())?;
    certificate(cert.pem(), key.to_pem()?)
}

fn certificate(cert: String, key: String) -> Result<Value, String> {
    Ok(Value::Object(Rc::new(Certificate { cert, key })))
}

fn key_arg(value: &Value) -> Result<PrivateKey, String> {
    PrivateKey::from_pem(&str_arg(value)?).map_err(|e| format!("parsing private key: {e}"))
}

/// The Master Password algorithm's templates, by password type.
fn password_templates(kind: &str) -> Option<&'static [&'static str]> {
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

/// The characters a Master Password template letter stands for.
fn template_characters(class: u8) -> &'static [u8] {
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

/// The Master Password algorithm (what sprig's `derivePassword` implements): a key from
/// scrypt over the master password and user, a seed from HMAC-SHA256 over the site and
/// counter, and the password from the seed through the type's templates.
fn derive_password(counter: u32, kind: &str, password: &str, user: &str, site: &str) -> String {
    use hmac::Mac;
    let Some(templates) = password_templates(kind) else {
        return format!("cannot find password template {kind}");
    };
    const SCOPE: &[u8] = b"com.lyndir.masterpassword";
    let length = |s: &str| u32::try_from(s.len()).unwrap_or(u32::MAX).to_be_bytes();
    let mut salt = SCOPE.to_vec();
    salt.extend(length(user));
    salt.extend(user.as_bytes());
    let mut key = [0u8; 64];
    let derived = scrypt::Params::new(15, 8, 2, 64)
        .map_err(|e| e.to_string())
        .and_then(|params| {
            scrypt::scrypt(password.as_bytes(), &salt, &params, &mut key).map_err(|e| e.to_string())
        });
    if let Err(e) = derived {
        return format!("failed to derive password: {e}");
    }
    let mut message = SCOPE.to_vec();
    message.extend(length(site));
    message.extend(site.as_bytes());
    message.extend(counter.to_be_bytes());
    let Ok(mut mac) = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key) else {
        return "failed to derive password".into();
    };
    mac.update(&message);
    let seed = mac.finalize().into_bytes();
    let template = templates[usize::from(seed[0]) % templates.len()];
    template
        .bytes()
        .enumerate()
        .map(|(i, class)| {
            let characters = template_characters(class);
            char::from(characters[usize::from(seed[i + 1]) % characters.len()])
        })
        .collect()
}

/// bcrypt with cost 10, written `$2a$` as Go's x/crypto writes it.
fn bcrypt_hash(world: &World, password: &str) -> String {
    if password.len() > 72 {
        return "failed to encrypt string with bcrypt: bcrypt: password length exceeds 72 bytes"
            .into();
    }
    let mut salt = [0u8; 16];
    salt.copy_from_slice(&world.bytes(16));
    match bcrypt::hash_with_salt(password, 10, salt) {
        Ok(parts) => parts.format_for_version(bcrypt::Version::TwoA),
        Err(e) => format!("failed to encrypt string with bcrypt: {e}"),
    }
}

/// sprig's AES key: the password's bytes in a 32-byte buffer (AES-256).
fn aes_key(password: &str) -> [u8; 32] {
    let mut key = [0u8; 32];
    let bytes = password.as_bytes();
    let n = bytes.len().min(32);
    key[..n].copy_from_slice(&bytes[..n]);
    key
}

/// AES-256-CBC with PKCS#7 padding and a random IV before the ciphertext, in base64.
fn encrypt_aes(world: &World, password: &str, plaintext: &str) -> String {
    use aes::cipher::{BlockEncryptMut, KeyIvInit};
    if plaintext.is_empty() {
        return String::new();
    }
    let iv = world.bytes(16);
    let mut iv_block = [0u8; 16];
    iv_block.copy_from_slice(&iv);
    let encryptor = cbc::Encryptor::<aes::Aes256>::new(&aes_key(password).into(), &iv_block.into());
    let ciphertext =
        encryptor.encrypt_padded_vec_mut::<aes::cipher::block_padding::Pkcs7>(plaintext.as_bytes());
    let mut out = iv;
    out.extend(ciphertext);
    base64::engine::general_purpose::STANDARD.encode(out)
}

/// The reverse of [`encrypt_aes`].
fn decrypt_aes(password: &str, encoded: &str) -> Result<String, String> {
    use aes::cipher::{BlockDecryptMut, KeyIvInit};
    if encoded.is_empty() {
        return Ok(String::new());
    }
    let data = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| e.to_string())?;
    if data.len() < 32 || data.len() % 16 != 0 {
        return Err("crypto/cipher: input not full blocks".into());
    }
    let (iv, ciphertext) = data.split_at(16);
    let mut iv_block = [0u8; 16];
    iv_block.copy_from_slice(iv);
    let decryptor = cbc::Decryptor::<aes::Aes256>::new(&aes_key(password).into(), &iv_block.into());
    let plain = decryptor
        .decrypt_padded_vec_mut::<aes::cipher::block_padding::NoPadding>(ciphertext)
        .map_err(|e| e.to_string())?;
    // sprig drops as many bytes as the last byte says, without checking the padding.
    let pad = usize::from(plain.last().copied().unwrap_or(0));
    let keep = plain
        .len()
        .checked_sub(pad)
        .ok_or("runtime error: slice bounds out of range")?;
    Ok(String::from_utf8_lossy(&plain[..keep]).into_owned())
}

fn build_custom_cert(cert_b64: &str, key_b64: &str) -> Result<Value, String> {
    let decode = |text: &str| base64::engine::general_purpose::STANDARD.decode(text);
    let cert = decode(cert_b64).map_err(|_| "unable to decode base64 certificate")?;
    let key = decode(key_b64).map_err(|_| "unable to decode base64 private key")?;
    let cert = String::from_utf8_lossy(&cert).into_owned();
    let key = String::from_utf8_lossy(&key).into_owned();
    let block = pem_decode(&cert).ok_or("unable to decode certificate")?;
    x509_parser::parse_x509_certificate(&block.contents).map_err(|e| {
        format!("error parsing certificate: decoded pem is not a valid certificate: {e}")
    })?;
    PrivateKey::from_pem(&key).map_err(|e| format!("error parsing private key: {e}"))?;
    certificate(cert, key)
}

pub(super) fn register(funcs: &mut HashMap<&'static str, Func>) {
    funcs.insert("genPrivateKey", |exec, a| {
        arity("genPrivateKey", &a, 1)?;
        let kind = str_arg(&a[0])?;
        Ok(Value::from(
            match PrivateKey::generate(&exec.world, &kind, 4096) {
                Ok(key) => key.to_pem()?,
                Err(message) => message,
            },
        ))
    });
    funcs.insert("genCA", |exec, a| {
        arity("genCA", &a, 2)?;
        let subject = ca_subject(&a)?;
        self_signed(&exec.world, &subject, None, true)
    });
    funcs.insert("genCAWithKey", |exec, a| {
        arity("genCAWithKey", &a, 3)?;
        let subject = ca_subject(&a)?;
        self_signed(&exec.world, &subject, Some(key_arg(&a[2])?), true)
    });
    funcs.insert("genSelfSignedCert", |exec, a| {
        arity("genSelfSignedCert", &a, 4)?;
        self_signed(&exec.world, &Subject::from_args(&a)?, None, false)
    });
    funcs.insert("genSelfSignedCertWithKey", |exec, a| {
        arity("genSelfSignedCertWithKey", &a, 5)?;
        let key = key_arg(&a[4])?;
        self_signed(&exec.world, &Subject::from_args(&a)?, Some(key), false)
    });
    funcs.insert("genSignedCert", |exec, a| {
        arity("genSignedCert", &a, 5)?;
        signed(&exec.world, &Subject::from_args(&a)?, &a[4], None)
    });
    funcs.insert("genSignedCertWithKey", |exec, a| {
        arity("genSignedCertWithKey", &a, 6)?;
        let key = key_arg(&a[5])?;
        signed(&exec.world, &Subject::from_args(&a)?, &a[4], Some(key))
    });
    funcs.insert("buildCustomCert", |_, a| {
        arity("buildCustomCert", &a, 2)?;
        build_custom_cert(&str_arg(&a[0])?, &str_arg(&a[1])?)
    });
    funcs.insert("bcrypt", |exec, a| {
        arity("bcrypt", &a, 1)?;
        Ok(Value::from(bcrypt_hash(&exec.world, &str_arg(&a[0])?)))
    });
    funcs.insert("htpasswd", |exec, a| {
        arity("htpasswd", &a, 2)?;
        let (user, password) = (str_arg(&a[0])?, str_arg(&a[1])?);
        if user.contains(':') {
            return Ok(Value::from(format!("invalid username: {user}")));
        }
        Ok(Value::from(format!(
            "{user}:{}",
            bcrypt_hash(&exec.world, &password)
        )))
    });
    funcs.insert("derivePassword", |_, a| {
        arity("derivePassword", &a, 5)?;
        let counter = a[0]
            .as_int()
            .and_then(|c| u32::try_from(c).ok())
            .ok_or_else(|| {
                format!(
                    "wrong type for value; expected uint32; got {}",
                    a[0].type_name()
                )
            })?;
        let [kind, password, user, site] = [&a[1], &a[2], &a[3], &a[4]].map(str_arg);
        Ok(Value::from(derive_password(
            counter, &kind?, &password?, &user?, &site?,
        )))
    });
    funcs.insert("encryptAES", |exec, a| {
        arity("encryptAES", &a, 2)?;
        let (password, plaintext) = (str_arg(&a[0])?, str_arg(&a[1])?);
        Ok(Value::from(encrypt_aes(&exec.world, &password, &plaintext)))
    });
    funcs.insert("decryptAES", |_, a| {
        arity("decryptAES", &a, 2)?;
        decrypt_aes(&str_arg(&a[0])?, &str_arg(&a[1])?).map(Value::from)
    });
}

/// `genCA`'s common name and days, as a subject without alternative names.
fn ca_subject(a: &[Value]) -> Result<Subject, String> {
    Ok(Subject {
        common_name: str_arg(&a[0])?,
        ips: Vec::new(),
        dns_names: Vec::new(),
        days: super::int_arg(&a[1])?,
    })
}

/// Generates random text and other random things for templates: used by `Exec` callers
/// that need a certificate without a template (tests).
#[cfg(test)]
mod tests {
    use super::*;

    fn world() -> World {
        World::seeded(1, Some("2025-01-02T03:04:05Z".parse().expect("a time")))
    }

    // Passwords printed by Helm 4.3.1 for the same inputs.
    #[test]
    fn derives_master_passwords() {
        let cases = [
            (
                1,
                "long",
                "password",
                "user",
                "example.com",
                "ZedaFaxcZaso9*",
            ),
            (
                1,
                "maximum",
                "password",
                "user",
                "example.com",
                "pf4zS1LjCg&LjhsZ7T2~",
            ),
            (2, "medium", "pw", "u", "s", "Fiy1=Nef"),
            (1, "basic", "pw", "u", "s", "oUe71PLN"),
            (1, "short", "pw", "u", "s", "Jiv7"),
            (3, "pin", "pw", "u", "s", "7979"),
            (
                1,
                "nope",
                "pw",
                "u",
                "s",
                "cannot find password template nope",
            ),
        ];
        for (counter, kind, password, user, site, expected) in cases {
            assert_eq!(
                derive_password(counter, kind, password, user, site),
                expected
            );
        }
    }

    #[test]
    fn aes_round_trips_and_bcrypt_has_gos_form() {
        let world = world();
        let sealed = encrypt_aes(&world, "secretkey", "plaintext");
        assert_eq!(
            decrypt_aes("secretkey", &sealed).as_deref(),
            Ok("plaintext")
        );
        assert_eq!(encrypt_aes(&world, "k", "0123456789abcdef").len(), 64);
        assert_eq!(encrypt_aes(&world, "k", ""), "");
        let hash = bcrypt_hash(&world, "x");
        assert_eq!((hash.len(), &hash[..7]), (60, "$2a$10$"));
        assert!(bcrypt::verify("x", &hash).expect("a bcrypt hash"));
        assert_eq!(
            bcrypt_hash(&world, &"a".repeat(73)),
            "failed to encrypt string with bcrypt: bcrypt: password length exceeds 72 bytes"
        );
    }

    #[test]
    fn certificates_chain_and_repeat_with_a_seed() {
        let make = || {
            let world = world();
            let subject = |cn: &str| Subject {
                common_name: cn.into(),
                ips: vec!["10.0.0.1".parse().expect("an ip")],
                dns_names: vec!["svc.example".into()],
                days: 365,
            };
            let ca = self_signed(&world, &subject("ca"), None, true).expect("a CA");
            let leaf = signed(&world, &subject("leaf"), &ca, None).expect("a leaf");
            (
                certificate_arg(&ca).expect("ca"),
                certificate_arg(&leaf).expect("leaf"),
            )
        };
        let (ca, leaf) = make();
        assert!(ca.cert.starts_with("-----BEGIN CERTIFICATE-----\nMII"));
        assert!(ca.key.starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
        let block = pem_decode(&leaf.cert).expect("pem");
        let (_, parsed) = x509_parser::parse_x509_certificate(&block.contents).expect("x509");
        assert_eq!(parsed.issuer().to_string(), "CN=ca");
        assert_eq!(parsed.subject().to_string(), "CN=leaf");
        assert_eq!(parsed.validity().not_before.timestamp(), 1_735_787_045);
        assert_eq!(
            parsed.validity().not_after.timestamp() - parsed.validity().not_before.timestamp(),
            365 * 24 * 3600
        );
        let names = parsed
            .subject_alternative_name()
            .expect("parses")
            .expect("present");
        assert_eq!(names.value.general_names.len(), 2);
        let (again_ca, again_leaf) = make();
        assert_eq!((again_ca.cert, again_leaf.key), (ca.cert, leaf.key));
    }

    #[test]
    fn private_keys_have_sprigs_pem_types() {
        let world = world();
        for (kind, label) in [("ecdsa", "EC PRIVATE KEY"), ("ed25519", "PRIVATE KEY")] {
            let pem = PrivateKey::generate(&world, kind, 2048)
                .and_then(|k| k.to_pem())
                .expect("a key");
            assert!(
                pem.starts_with(&format!("-----BEGIN {label}-----\n")),
                "{pem}"
            );
            assert!(PrivateKey::from_pem(&pem).is_ok(), "{kind} reads back");
        }
        assert_eq!(
            PrivateKey::generate(&world, "x", 2048).err().as_deref(),
            Some("Unknown type x")
        );
        assert_eq!(
            PrivateKey::from_pem("junk").err().as_deref(),
            Some("no PEM data in input")
        );
        assert_eq!(
            der_sequence(&[vec![0], vec![0x80], vec![0, 1]]),
            [0x30, 0x0a, 0x02, 0x01, 0x00, 0x02, 0x02, 0x00, 0x80, 0x02, 0x01, 0x01]
        );
    }
}
