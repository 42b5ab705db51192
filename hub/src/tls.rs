//! The hub's own certificate authority and serving certificate, made once and kept in
//! the data directory.

use std::fs;
use std::path::Path;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};

/// PEM files the hub serves with and hands to clients.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// The CA certificate clients trust (`certificate-authority-data`).
    pub ca_pem: String,
    /// The serving certificate.
    pub cert_pem: String,
    /// The serving key.
    pub key_pem: String,
}

/// Errors making or reading the certificates.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// Generating a key or certificate failed.
    #[error("generating the hub's certificates: {0}")]
    Generate(#[from] rcgen::Error),
    /// Reading or writing a PEM file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// Loads the certificates from `dir`, or makes a CA and a serving certificate for
/// `hosts` (plus localhost and loopback) and writes them there.
pub fn load_or_create(dir: &Path, hosts: &[String]) -> Result<TlsFiles, TlsError> {
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| TlsError::Io { path, source }
    };
    let ca_path = dir.join("ca.crt");
    let cert_path = dir.join("server.crt");
    let key_path = dir.join("server.key");
    if ca_path.exists() && cert_path.exists() && key_path.exists() {
        // Keys written by older versions were world-readable.
        fleet_objects::secret_file::restrict(&key_path).map_err(io(&key_path))?;
        return Ok(TlsFiles {
            ca_pem: fs::read_to_string(&ca_path).map_err(io(&ca_path))?,
            cert_pem: fs::read_to_string(&cert_path).map_err(io(&cert_path))?,
            key_pem: fs::read_to_string(&key_path).map_err(io(&key_path))?,
        });
    }
    fs::create_dir_all(dir).map_err(io(dir))?;
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "fleet-hub-ca");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let mut names = vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
    ];
    names.extend(hosts.iter().filter(|h| !h.is_empty()).cloned());
    names.dedup();
    let server_key = KeyPair::generate()?;
    let mut server_params = CertificateParams::new(names)?;
    server_params
        .distinguished_name
        .push(DnType::CommonName, "fleet-hub");
    let server_cert = server_params.signed_by(&server_key, &issuer)?;

    let files = TlsFiles {
        ca_pem: ca_cert.pem(),
        cert_pem: server_cert.pem(),
        key_pem: server_key.serialize_pem(),
    };
    fs::write(&ca_path, &files.ca_pem).map_err(io(&ca_path))?;
    fs::write(&cert_path, &files.cert_pem).map_err(io(&cert_path))?;
    fleet_objects::secret_file::write(&key_path, files.key_pem.as_bytes())
        .map_err(io(&key_path))?;
    Ok(files)
}
