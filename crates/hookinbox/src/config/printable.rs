//! What `hookinbox config check` prints: the file as it resolves, written
//! back in the file's own shape, so the output can be fed back in
//! (`config check --config` accepts it and prints it again unchanged).
//!
//! It is the parsed [`ConfigFile`] — defaults filled in by serde — with
//! two changes before it is serialised:
//! - **paths** (secret, key, certificate, CA, credential files and the
//!   SQLite database) are made absolute against the file's directory, so
//!   the output works from wherever it is saved;
//! - **inline secrets are never printed.** Each becomes a `*_env` source
//!   naming a placeholder variable, `HOOKINBOX_REDACTED_<FIELD>`
//!   (`endpoint[0].secret[1].value` → `HOOKINBOX_REDACTED_ENDPOINT_0_SECRET_1_VALUE`),
//!   listed in the header: set those variables, or put the values back, to
//!   use the output. A password in a PostgreSQL URL is taken out of the URL
//!   the same way (`storage.password_env`). The inline fields themselves are
//!   `skip_serializing`, so a secret missed here is left out, not printed.
//!
//! Secrets given as `*_env` or `*_file` are printed as those sources.

use std::path::{Path, PathBuf};

use secrecy::{ExposeSecret, SecretString};

use super::file::ConfigFile;
use super::ConfigError;

/// The TOML `config check` prints for `text` (a file in `base_dir`), and
/// the placeholder variables that stand for its inline secrets.
pub fn printable(text: &str, base_dir: &Path) -> Result<(String, Vec<String>), ConfigError> {
    let mut file: ConfigFile = toml::from_str(text).map_err(|error| ConfigError::Parse {
        path: PathBuf::from("<config>"),
        message: error.message().trim_end().to_owned(),
    })?;
    let mut placeholders = Vec::new();
    resolve(&mut file, base_dir, &mut placeholders);
    let text = toml::to_string(&file).map_err(|error| ConfigError::Parse {
        path: PathBuf::from("<config>"),
        message: format!("cannot print the settings: {error}"),
    })?;
    Ok((text, placeholders))
}

fn resolve(file: &mut ConfigFile, base: &Path, placeholders: &mut Vec<String>) {
    let mut redact = |inline: &mut Option<SecretString>, env: &mut Option<String>, field: &str| {
        if inline.take().is_some() {
            let name = placeholder(field);
            placeholders.push(name.clone());
            *env = Some(name);
        }
    };
    if let Some(tls) = &mut file.server.tls {
        absolute(&mut tls.cert_file, base);
        absolute(&mut tls.key_file, base);
    }
    let storage = &mut file.storage;
    let url = storage.url.expose_secret().to_owned();
    if let Some(path) = url.strip_prefix("sqlite://") {
        let path = if path == ":memory:" {
            PathBuf::from(path)
        } else {
            base.join(path)
        };
        storage.url = SecretString::from(format!("sqlite://{}", path.display()));
    } else if let Some(bare) = without_password(&url) {
        let mut password = Some(SecretString::from(String::new()));
        redact(&mut password, &mut storage.password_env, "storage.password");
        storage.url = SecretString::from(bare);
    }
    optional_absolute(&mut storage.password_file, base);
    if let Some(admin) = &mut file.admin {
        redact(&mut admin.token, &mut admin.token_env, "admin.token");
        optional_absolute(&mut admin.token_file, base);
    }
    for (index, key) in file.encryption.key.iter_mut().enumerate() {
        redact(
            &mut key.value,
            &mut key.value_env,
            &format!("encryption.key[{index}].value"),
        );
        optional_absolute(&mut key.value_file, base);
    }
    for (e, endpoint) in file.endpoint.iter_mut().enumerate() {
        if let Some(auth) = &mut endpoint.basic_auth {
            let field = format!("endpoint[{e}].basic_auth.password");
            redact(&mut auth.password, &mut auth.password_env, &field);
            optional_absolute(&mut auth.password_file, base);
        }
        for (s, secret) in endpoint.secret.iter_mut().enumerate() {
            let field = format!("endpoint[{e}].secret[{s}].value");
            redact(&mut secret.value, &mut secret.value_env, &field);
            optional_absolute(&mut secret.value_file, base);
        }
        for (t, target) in endpoint.target.iter_mut().enumerate() {
            let field = format!("endpoint[{e}].target[{t}].secret");
            redact(&mut target.secret, &mut target.secret_env, &field);
            optional_absolute(&mut target.secret_file, base);
            optional_absolute(&mut target.ca_file, base);
            optional_absolute(&mut target.credentials_file, base);
            optional_absolute(&mut target.transform, base);
        }
        if let Some(reconcile) = &mut endpoint.reconcile {
            let field = format!("endpoint[{e}].reconcile.api_key");
            redact(&mut reconcile.api_key, &mut reconcile.api_key_env, &field);
            optional_absolute(&mut reconcile.api_key_file, base);
        }
    }
}

/// `endpoint[0].secret[1].value` → `HOOKINBOX_REDACTED_ENDPOINT_0_SECRET_1_VALUE`.
fn placeholder(field: &str) -> String {
    let mut name = String::from("HOOKINBOX_REDACTED");
    for part in field.split(|c: char| !c.is_ascii_alphanumeric()) {
        if !part.is_empty() {
            name.push('_');
            name.push_str(&part.to_ascii_uppercase());
        }
    }
    name
}

fn absolute(path: &mut PathBuf, base: &Path) {
    *path = base.join(&*path);
}

fn optional_absolute(path: &mut Option<PathBuf>, base: &Path) {
    if let Some(path) = path {
        absolute(path, base);
    }
}

/// `storage.url` as printed: never with a password, even if [`resolve`]
/// was skipped.
pub(super) fn url_without_password<S: serde::Serializer>(
    url: &SecretString,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let url = url.expose_secret();
    serializer.serialize_str(&without_password(url).unwrap_or_else(|| url.to_owned()))
}

/// A `postgres://` URL without the password it carries (in its user info
/// or as `password=` in its query), or `None` when it carries none.
fn without_password(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path_and_query) = rest.split_at(authority_end);
    let mut had_password = false;
    let authority = match authority.rsplit_once('@') {
        Some((user_info, hosts)) => match user_info.split_once(':') {
            Some((user, _)) => {
                had_password = true;
                format!("{user}@{hosts}")
            }
            None => authority.to_owned(),
        },
        None => authority.to_owned(),
    };
    let path_and_query = match path_and_query.split_once('?') {
        Some((path, query)) => {
            let kept: Vec<&str> = query
                .split('&')
                .filter(|pair| {
                    let password = pair.starts_with("password=");
                    had_password |= password;
                    !password
                })
                .collect();
            if kept.is_empty() {
                path.to_owned()
            } else {
                format!("{path}?{}", kept.join("&"))
            }
        }
        None => path_and_query.to_owned(),
    };
    had_password.then(|| format!("{scheme}://{authority}{path_and_query}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "/etc/hookinbox";

    /// What check prints is a file check accepts, and prints again unchanged.
    #[test]
    fn the_output_is_a_fixpoint() {
        let text = r#"
            [storage]
            url = "postgres://app:hunter2-secret@db.internal/inbox?sslmode=require"

            [admin]
            listen = "127.0.0.1:9090"
            token = "admin-token-inline-0001"

            [[encryption.key]]
            id = "k1"
            value_file = "keys/k1"

            [[endpoint]]
            id = "lab"
            provider = "lab"

            [[endpoint.secret]]
            version = "1"
            value = "lab-inline-secret-0002"

            [[endpoint.target]]
            name = "billing"
            kind = "http"
            url = "https://billing.internal/x"
            secret = "whsec_aW5saW5lLXRhcmdldC1zZWNyZXQ="
            ca_file = "ca.pem"
        "#;
        let base = Path::new(BASE);
        let (printed, placeholders) = printable(text, base).unwrap();
        for secret in [
            "hunter2-secret",
            "admin-token-inline-0001",
            "lab-inline-secret-0002",
            "aW5saW5lLXRhcmdldC1zZWNyZXQ",
        ] {
            assert!(!printed.contains(secret), "{secret} in\n{printed}");
        }
        assert_eq!(
            placeholders,
            [
                "HOOKINBOX_REDACTED_STORAGE_PASSWORD",
                "HOOKINBOX_REDACTED_ADMIN_TOKEN",
                "HOOKINBOX_REDACTED_ENDPOINT_0_SECRET_0_VALUE",
                "HOOKINBOX_REDACTED_ENDPOINT_0_TARGET_0_SECRET",
            ]
        );
        assert!(
            printed.contains("url = \"postgres://app@db.internal/inbox?sslmode=require\""),
            "{printed}"
        );
        assert!(
            printed.contains("value_file = \"/etc/hookinbox/keys/k1\""),
            "{printed}"
        );
        assert!(
            printed.contains("ca_file = \"/etc/hookinbox/ca.pem\""),
            "{printed}"
        );
        super::super::parse(&printed, Path::new("/elsewhere"))
            .expect("the output parses and checks");
        let (again, _) = printable(&printed, Path::new("/elsewhere")).unwrap();
        assert_eq!(again, printed);
    }

    #[test]
    fn a_sqlite_path_is_made_absolute() {
        let (printed, placeholders) = printable(
            "[storage]\nurl = \"sqlite://data/inbox.db\"\n",
            Path::new(BASE),
        )
        .unwrap();
        assert!(
            printed.contains("url = \"sqlite:///etc/hookinbox/data/inbox.db\""),
            "{printed}"
        );
        assert!(placeholders.is_empty());
    }

    #[test]
    fn a_password_in_the_query_is_taken_out_too() {
        assert_eq!(
            without_password("postgres://app@db/inbox?password=x&sslmode=require").as_deref(),
            Some("postgres://app@db/inbox?sslmode=require")
        );
        assert_eq!(without_password("postgres://app@db/inbox"), None);
    }
}
