//! No secret of the configuration can be printed: every one is put in a
//! configuration with a marker of its own, then the file's structs, the
//! checked settings, what `config check` serializes, and every run-time
//! structure built from them (endpoints and their verifiers, targets, the
//! admin token, the encryption key ring, the PostgreSQL options) are
//! formatted with `{:?}` and searched for each marker. Refusals of bad
//! secrets name the field and never the value.

use std::path::Path;

use base64::Engine;

use super::file::ConfigFile;
use super::*;

const ENDPOINT_INLINE: &str = "lab-inline-secret-M4RK3R-01";
const ENDPOINT_ENV: &str = "lab-env-secret-M4RK3R-02";
const ENDPOINT_ENV_VAR: &str = "HOOKINBOX_TEST_REDACTION_ENDPOINT_SECRET";
const ENDPOINT_FILE: &str = "lab-file-secret-M4RK3R-03";
const BASIC_PASSWORD: &str = "basic-password-M4RK3R-04";
/// A target secret's key bytes (the config holds them as `whsec_` base64).
const TARGET_KEY: &[u8] = b"target-key-M4RK3R-05";
const ADMIN_TOKEN: &str = "admin-token-M4RK3R-06";
const URL_PASSWORD: &str = "url-password-M4RK3R-07";
const FILE_PASSWORD: &str = "file-password-M4RK3R-08";
/// An encryption key's 32 bytes (the config holds them in base64).
const ENCRYPTION_KEY: &[u8; 32] = b"encryption-key-M4RK3R-09-32bytes";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn target_secret() -> String {
    format!("whsec_{}", b64(TARGET_KEY))
}

/// Every form a secret could take in printed text: the configured string,
/// and for decoded keys the raw bytes (as text and as a `Debug` byte list).
fn forms() -> Vec<(String, &'static str)> {
    let byte_list = |bytes: &[u8]| {
        bytes[..8]
            .iter()
            .map(u8::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    vec![
        (ENDPOINT_INLINE.to_owned(), "endpoint inline secret"),
        (ENDPOINT_ENV.to_owned(), "endpoint secret from env"),
        (ENDPOINT_FILE.to_owned(), "endpoint secret from a file"),
        (BASIC_PASSWORD.to_owned(), "basic_auth password"),
        (target_secret(), "target secret"),
        (b64(TARGET_KEY), "target secret's base64"),
        (
            String::from_utf8_lossy(TARGET_KEY).into_owned(),
            "target key bytes",
        ),
        (byte_list(TARGET_KEY), "target key byte list"),
        (ADMIN_TOKEN.to_owned(), "admin token"),
        (URL_PASSWORD.to_owned(), "password in storage.url"),
        (FILE_PASSWORD.to_owned(), "storage.password_file"),
        (b64(ENCRYPTION_KEY), "encryption key's base64"),
        (
            String::from_utf8_lossy(ENCRYPTION_KEY).into_owned(),
            "encryption key bytes",
        ),
        (byte_list(ENCRYPTION_KEY), "encryption key byte list"),
        ("M4RK3R".to_owned(), "any marker"),
    ]
}

fn assert_no_secret(what: &str, printed: &str) {
    for (form, name) in forms() {
        assert!(
            !printed.contains(&form),
            "{what} shows the {name}:\n{printed}"
        );
    }
}

/// A configuration that holds every kind of secret, from every kind of
/// source; `storage` is its `[storage]` table.
fn config_text(dir: &Path, storage: &str) -> String {
    format!(
        r#"
[storage]
{storage}

[admin]
listen = "127.0.0.1:0"
token = "{ADMIN_TOKEN}"

[encryption]
active = "k1"
[[encryption.key]]
id = "k1"
value = "{encryption_key}"

[[endpoint]]
id = "lab"
provider = "lab"
basic_auth = {{ username = "lab", password = "{BASIC_PASSWORD}" }}
[[endpoint.secret]]
version = "inline"
value = "{ENDPOINT_INLINE}"
[[endpoint.secret]]
version = "env"
value_env = "{ENDPOINT_ENV_VAR}"
[[endpoint.secret]]
version = "file"
value_file = "{secret_file}"
[[endpoint.target]]
name = "app"
kind = "http"
url = "http://127.0.0.1:9/events"
secret = "{target_secret}"
"#,
        encryption_key = b64(ENCRYPTION_KEY),
        secret_file = dir.join("endpoint.secret").display(),
        target_secret = target_secret(),
    )
}

fn secret_files(dir: &Path) {
    std::env::set_var(ENDPOINT_ENV_VAR, ENDPOINT_ENV);
    std::fs::write(dir.join("endpoint.secret"), format!("{ENDPOINT_FILE}\n")).unwrap();
    std::fs::write(dir.join("db.password"), format!("{FILE_PASSWORD}\n")).unwrap();
}

#[test]
fn no_structure_built_from_a_configuration_prints_a_secret() {
    let dir = tempfile::tempdir().unwrap();
    secret_files(dir.path());
    let storages = [
        format!(
            "url = \"sqlite://{}\"",
            dir.path().join("inbox.db").display()
        ),
        format!("url = \"postgres://app:{URL_PASSWORD}@127.0.0.1:5432/inbox\""),
        format!(
            "url = \"postgres://app@127.0.0.1:5432/inbox\"\npassword_file = \"{}\"",
            dir.path().join("db.password").display()
        ),
    ];
    for storage in &storages {
        let text = config_text(dir.path(), storage);
        let file: ConfigFile = toml::from_str(&text).unwrap();
        assert_no_secret("the parsed file", &format!("{file:?}"));

        let settings = parse(&text, dir.path()).unwrap();
        assert_no_secret("Settings", &format!("{settings:?}"));
        assert_no_secret("Settings, pretty", &format!("{settings:#?}"));
        assert_no_secret(
            "config check's JSON",
            &serde_json::to_string(&settings).unwrap(),
        );

        let endpoints = crate::endpoint::build_all(&settings).unwrap();
        let endpoint = &endpoints["lab"];
        assert_eq!(endpoint.verifier().keys().versions().len(), 3);
        assert_no_secret("the endpoint", &format!("{endpoint:?}"));
        assert_no_secret("its verifier", &format!("{:?}", endpoint.verifier()));
        assert_no_secret("its targets", &format!("{:?}", endpoint.targets));

        let token = settings.admin.as_ref().unwrap().token.as_ref().unwrap();
        let token = crate::admin::token::AdminToken::read(token).unwrap();
        assert_no_secret("the admin token", &format!("{token:?}"));
        let header = token.authorization().unwrap();
        assert_no_secret("its Authorization header", &format!("{header:?}"));

        let keys = crate::secrets::encryption::load(
            &settings.encryption,
            crate::secrets::encryption::MissingKeyFile::Refuse,
        )
        .unwrap()
        .unwrap();
        assert_no_secret("the encryption key ring", &format!("{keys:?}"));

        if let Database::Postgres(_) = &settings.storage.database {
            let (url, options) = crate::storage::store_options(&settings.storage, None).unwrap();
            assert_no_secret("the storage URL", &format!("{url:?}"));
            assert_no_secret("the store options", &format!("{options:?}"));
            let postgres = match &url {
                hookinbox_store::StorageUrl::Postgres(url) => options.postgres(url),
                other => panic!("{other:?}"),
            };
            assert_no_secret("the PostgreSQL options", &format!("{postgres:?}"));
            assert!(
                format!("{postgres:?}").contains("127.0.0.1:5432"),
                "the options print the rest: {postgres:?}"
            );
        }
    }
}

/// A configuration holding one bad secret must be refused, naming the
/// field (`field:` at the start of the message) and showing no marker.
fn assert_refused_by_field(error: ConfigError, field: &str) {
    let message = error.to_string();
    assert!(
        message.starts_with(&format!("{field}: ")),
        "{field} is not named first: {message}"
    );
    assert!(!message.contains("M4RK3R"), "the value leaked: {message}");
    assert!(!format!("{error:?}").contains("M4RK3R"), "{error:?}");
}

/// `[[endpoint]]` lab with one secret version given as `secret`, and `extra`.
fn lab_endpoint(secret: &str, extra: &str) -> String {
    format!(
        "{extra}\n[encryption]\nallow_plaintext = true\n[[endpoint]]\nid = \"lab\"\nprovider = \"lab\"\n[[endpoint.secret]]\nversion = \"1\"\n{secret}\n"
    )
}

fn lab_with_target(target: &str) -> String {
    format!(
        "{}\n[[endpoint.target]]\nname = \"app\"\n{target}\n",
        lab_endpoint("value = \"a-long-enough-lab-secret\"", "")
    )
}

fn built(text: &str) -> ConfigError {
    let settings = parse(text, Path::new("/nonexistent")).unwrap();
    crate::endpoint::build_all(&settings).unwrap_err()
}

#[test]
fn a_bad_secret_is_refused_naming_its_field_and_never_its_value() {
    let base = Path::new("/nonexistent");
    let refused = |text: &str| parse(text, base).unwrap_err();

    // Too short for an HMAC key: refused when the ring is built.
    assert_refused_by_field(
        built(&lab_endpoint("value = \"short-M4RK3R\"", "")),
        "endpoint[0].secret[0].value",
    );
    // Two sources at once.
    assert_refused_by_field(
        refused(&lab_endpoint(
            "value = \"two-sources-M4RK3R-secret\"\nvalue_env = \"X\"",
            "",
        )),
        "endpoint[0].secret[0].value",
    );
    // An encryption key that is not base64, and one of the wrong length.
    for key in ["not base64 M4RK3R!".to_owned(), b64(b"M4RK3R-16-bytes!")] {
        let text = format!(
            "[[encryption.key]]\nid = \"k1\"\nvalue = \"{key}\"\n[[endpoint]]\nid = \"lab\"\nprovider = \"lab\"\n[[endpoint.secret]]\nversion = \"1\"\nvalue = \"a-long-enough-lab-secret\"\n"
        );
        let settings = parse(&text, base).unwrap();
        let error = crate::secrets::encryption::load(
            &settings.encryption,
            crate::secrets::encryption::MissingKeyFile::Refuse,
        )
        .unwrap_err();
        assert_refused_by_field(error, "encryption.key[0].value");
    }
    // An admin token with a space, and a short one.
    for token in ["admin token M4RK3R long enough", "M4RK3R-short"] {
        let text = lab_endpoint(
            "value = \"a-long-enough-lab-secret\"",
            &format!("[admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"{token}\""),
        );
        let settings = parse(&text, base).unwrap();
        let source = settings.admin.as_ref().unwrap().token.as_ref().unwrap();
        let error = crate::admin::token::AdminToken::read(source).unwrap_err();
        assert_refused_by_field(error, "admin.token");
    }
    // A target secret that is not a whsec_ secret.
    assert_refused_by_field(
        built(&lab_with_target(
            "kind = \"http\"\nurl = \"http://127.0.0.1:9/\"\nsecret = \"no-prefix-M4RK3R-target\"",
        )),
        "endpoint[0].target[0].secret",
    );
    // A NATS credentials file that is not one.
    let dir = tempfile::tempdir().unwrap();
    let creds = dir.path().join("bad.creds");
    std::fs::write(&creds, "-----BEGIN NATS USER JWT-----\nM4RK3R\n").unwrap();
    assert_refused_by_field(
        built(&lab_with_target(&format!(
            "kind = \"nats\"\nurl = \"nats://127.0.0.1:4222\"\nsubject = \"hooks\"\ncredentials_file = \"{}\"",
            creds.display()
        ))),
        "endpoint[0].target[0].credentials_file",
    );
    // A PostgreSQL URL with a password that cannot be parsed.
    assert_refused_by_field(
        refused(&lab_endpoint(
            "value = \"a-long-enough-lab-secret\"",
            "[storage]\nurl = \"postgres://app:M4RK3R@db/inbox?sslmode=sometimes\"",
        )),
        "storage.url",
    );
}

/// serde's own message for a value of the wrong type quotes the value: a
/// token written without quotes must not be echoed.
#[test]
fn a_secret_of_the_wrong_type_is_refused_without_its_value() {
    let numbers = "987654321987654321";
    for (secret, what) in [
        (format!("value = {numbers}"), "an integer"),
        ("value = 9876.54321".to_owned(), "a number"),
        (format!("value = [{numbers}]"), "an array"),
    ] {
        let message = parse(&lab_endpoint(&secret, ""), Path::new("/"))
            .unwrap_err()
            .to_string();
        assert!(message.contains(what), "{message}");
        assert!(message.contains("line "), "{message}");
        assert!(
            !message.contains("987654321") && !message.contains("9876.54321"),
            "the value leaked: {message}"
        );
    }
}
