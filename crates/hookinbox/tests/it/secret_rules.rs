//! Start-up rules for endpoint secrets, against the real binary: a
//! free-form HMAC secret under 16 bytes stops `serve` naming the field, and
//! a secret file others may read is a WARN.

use crate::support;

use support::*;

const GENERIC_HMAC: &str = r#"[endpoint.generic_hmac]
signature_header = "X-Sig"
signature_prefix = "sha256="
signed_content = "{timestamp}.{body}"
timestamp_header = "X-Ts"
id_pointer = "/id""#;

#[test]
fn a_short_hmac_secret_stops_start_up_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("hookinbox.toml");
    let config = TestConfig::new(&dir.path().join("inbox.db")).endpoint(
        "acme",
        "generic_hmac",
        GENERIC_HMAC,
        "fifteen-bytes!!",
    );
    std::fs::write(&config_path, config.to_string()).unwrap();
    let (code, stderr) = serve_refused(&config_path, &[]);
    assert_ne!(code, Some(0), "{stderr}");
    assert!(stderr.contains("endpoint[1].secret[0].value"), "{stderr}");
    assert!(stderr.contains("has 15 bytes"), "{stderr}");
    assert!(!stderr.contains("fifteen-bytes!!"), "{stderr}");
}

#[tokio::test]
async fn a_secret_file_others_may_read_is_a_warning() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let secret_file = dir.path().join("lab.secret");
    std::fs::write(&secret_file, LAB_SECRET).unwrap();
    std::fs::set_permissions(&secret_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let private_file = dir.path().join("private.secret");
    std::fs::write(&private_file, LAB_SECRET).unwrap();
    std::fs::set_permissions(&private_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let config = TestConfig::new(&dir.path().join("inbox.db")).extra(&format!(
        "[[endpoint]]\nid = \"shared\"\nprovider = \"lab\"\n[[endpoint.secret]]\nversion = \"v1\"\nvalue_file = \"{}\"\n\n[[endpoint]]\nid = \"private\"\nprovider = \"lab\"\n[[endpoint.secret]]\nversion = \"v1\"\nvalue_file = \"{}\"\n",
        secret_file.display(),
        private_file.display()
    ));
    let server = Server::start(dir.path(), &config.to_string());
    logged(&server, "readable by group or others", 1).await;
    let logs = server.logs();
    let warnings: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("readable by group or others"))
        .collect();
    assert_eq!(warnings.len(), 1, "{logs}");
    assert!(
        warnings[0].contains("endpoint[1].secret[0].value_file"),
        "{logs}"
    );
    assert!(!logs.contains(LAB_SECRET), "the secret is never logged");
}
