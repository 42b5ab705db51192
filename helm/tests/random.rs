//! Random and time functions in a whole render: with a seed and a stopped clock the same
//! chart renders the same bytes every time, and what they make has the shape Helm's makes
//! (PEM blocks that parse as a CA and a certificate it signed, lengths, alphabets).

use fleet_helm::{Chart, Options};

const TEMPLATE: &str = r#"{{- $ca := genCA "demo-ca" 365 -}}
{{- $cert := genSignedCert "web" (list "10.0.0.1") (list "web.example") 30 $ca -}}
apiVersion: v1
kind: Secret
metadata:
  name: random
  annotations:
    made: {{ now | date "2006-01-02T15:04:05Z07:00" | quote }}
data:
  ca.crt: {{ $ca.Cert | b64enc }}
  tls.crt: {{ $cert.Cert | b64enc }}
  tls.key: {{ $cert.Key | b64enc }}
  ec.key: {{ genPrivateKey "ecdsa" | b64enc }}
stringData:
  password: {{ randAlphaNum 24 | quote }}
  ascii: {{ randAscii 16 | toJson }}
  numeric: {{ randNumeric 6 | quote }}
  uuid: {{ uuidv4 | quote }}
  bytes: {{ randBytes 12 | quote }}
  htpasswd: {{ htpasswd "admin" "secret" | quote }}
  sealed: {{ encryptAES "key" "hello" | quote }}
  shuffled: {{ shuffle "abcdefgh" | quote }}
  derived: {{ derivePassword 1 "long" "password" "user" "example.com" | quote }}
"#;

fn chart_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join("templates")).expect("templates dir");
    std::fs::write(
        dir.path().join("Chart.yaml"),
        "apiVersion: v2\nname: random\nversion: 1.0.0\n",
    )
    .expect("Chart.yaml");
    std::fs::write(dir.path().join("templates/secret.yaml"), TEMPLATE).expect("template");
    dir
}

fn render(dir: &std::path::Path, seed: Option<u64>) -> serde_json::Value {
    let loaded = Chart::load(dir).expect("chart loads");
    let options = Options {
        seed,
        now: Some("2025-06-07T08:09:10Z".parse().expect("a time")),
        ..Options::default()
    };
    let text = fleet_helm::render(&loaded, &serde_json::json!({}), &options)
        .expect("renders")
        .to_template_output(false);
    let documents = fleet_helm::yaml::parse_documents(&text).expect("valid YAML");
    documents.into_iter().next().expect("one document")
}

fn decoded(secret: &serde_json::Value, key: &str) -> String {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(secret["data"][key].as_str().expect("data key"))
        .expect("base64");
    String::from_utf8(bytes).expect("utf-8 PEM")
}

fn certificate(pem: &str) -> x509_parser::certificate::X509Certificate<'static> {
    let (_, block) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).expect("a PEM block");
    let der: &'static [u8] = Box::leak(block.contents.into_boxed_slice());
    let (_, cert) = x509_parser::parse_x509_certificate(der).expect("a certificate");
    cert
}

#[test]
fn a_seeded_render_repeats_itself_and_a_new_seed_does_not() {
    let dir = chart_dir();
    let first = render(dir.path(), Some(42));
    assert_eq!(first, render(dir.path(), Some(42)), "same seed, same bytes");
    let other = render(dir.path(), Some(43));
    for key in ["password", "uuid", "bytes", "htpasswd", "sealed"] {
        assert_ne!(first["stringData"][key], other["stringData"][key], "{key}");
    }
    assert_ne!(first["data"]["tls.key"], other["data"]["tls.key"]);
    // Not random: the same whatever the seed (Helm 4.3.1 printed this password).
    assert_eq!(first["stringData"]["derived"], "ZedaFaxcZaso9*");
    assert_eq!(
        first["metadata"]["annotations"]["made"],
        "2025-06-07T08:09:10Z"
    );
    assert_ne!(render(dir.path(), None), render(dir.path(), None));
}

#[test]
fn random_values_have_helms_shapes() {
    let dir = chart_dir();
    let secret = render(dir.path(), Some(7));
    let text = |key: &str| {
        secret["stringData"][key]
            .as_str()
            .expect("a string")
            .to_string()
    };
    let password = text("password");
    assert_eq!(password.len(), 24);
    assert!(password.bytes().all(|b| b.is_ascii_alphanumeric()));
    assert!(text("ascii").bytes().all(|b| (b' '..=b'~').contains(&b)));
    assert_eq!(text("ascii").len(), 16);
    assert!(text("numeric").bytes().all(|b| b.is_ascii_digit()));
    let uuid = text("uuid");
    assert_eq!((uuid.len(), &uuid[14..15]), (36, "4"));
    assert_eq!(text("bytes").len(), 16, "12 bytes in base64");
    let htpasswd = text("htpasswd");
    let hash = htpasswd
        .strip_prefix("admin:$2a$10$")
        .expect("bcrypt, cost 10");
    assert_eq!(hash.len(), 53);
    assert_eq!(text("sealed").len(), 44, "IV and one block in base64");
    let mut shuffled: Vec<u8> = text("shuffled").into_bytes();
    shuffled.sort();
    assert_eq!(shuffled, b"abcdefgh");

    let ca_pem = decoded(&secret, "ca.crt");
    let ca = certificate(&ca_pem);
    assert!(ca.is_ca());
    assert_eq!(ca.subject().to_string(), "CN=demo-ca");
    let leaf = certificate(&decoded(&secret, "tls.crt"));
    assert_eq!(leaf.issuer().to_string(), "CN=demo-ca");
    assert_eq!(leaf.subject().to_string(), "CN=web");
    assert!(
        leaf.verify_signature(Some(ca.public_key())).is_ok(),
        "the CA signed it"
    );
    let made = 1_749_283_750;
    assert_eq!(leaf.validity().not_before.timestamp(), made);
    assert_eq!(leaf.validity().not_after.timestamp(), made + 30 * 24 * 3600);
    assert!(decoded(&secret, "tls.key").starts_with("-----BEGIN RSA PRIVATE KEY-----\n"));
    assert!(decoded(&secret, "ec.key").starts_with("-----BEGIN EC PRIVATE KEY-----\n"));
}
