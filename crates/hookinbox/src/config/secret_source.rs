//! Where a secret comes from: the config itself, an environment variable or
//! a file. Every secret-bearing setting (endpoint secret versions, a
//! target's signing secret, the admin token, a `basic_auth` password, the
//! database password, an encryption key) is spelled the same way in the
//! file (`X`, `X_env`, `X_file`: exactly one) and becomes one
//! [`SecretSource`]. The value is read by [`SecretSource::read`] (at
//! start-up, and on a key reload for endpoint secrets); it is never logged,
//! printed or serialized.
//!
//! Every secret value is a [`SecretString`] (the `secrecy` crate's
//! `SecretBox`, the one secret type of hookinbox, used as `SecretSlice<u8>`
//! for decoded key bytes and `SecretBox<[u8; 32]>` for encryption keys):
//! `Debug` prints `[REDACTED]`, it has no `Display` and no `Serialize`, and
//! its memory is zeroed when dropped. So a struct holding one may derive
//! `Debug`, and the only way to the value is `expose_secret()`, at the
//! place that hands it to what needs it.
//!
//! A new secret setting (say, a reconcile API key) takes three fields in
//! its `*File` struct (`api_key: Option<SecretString>`, `api_key_env`,
//! `api_key_file`), [`SecretSource::required`] or
//! [`SecretSource::from_fields`] to check them, and [`SecretSource::read`]
//! where it is used.

use std::path::{Path, PathBuf};

use secrecy::{ExposeSecret, SecretString};
use serde::ser::SerializeMap;
use serde::Serialize;
use zeroize::Zeroizing;

use super::ConfigError;

/// Where one secret is read from.
#[derive(Debug, Clone)]
pub enum SecretSource {
    /// Written in the config file (development only).
    Inline(SecretString),
    /// The named environment variable.
    Env(String),
    /// A file, already resolved against the config file's directory;
    /// a trailing newline is trimmed.
    File(PathBuf),
}

/// Two sources are the same when they name the same place, or hold the
/// same inline value (configurations are compared, never secrets from a
/// request: no constant time needed).
impl PartialEq for SecretSource {
    fn eq(&self, other: &SecretSource) -> bool {
        match (self, other) {
            (SecretSource::Inline(a), SecretSource::Inline(b)) => {
                a.expose_secret() == b.expose_secret()
            }
            (SecretSource::Env(a), SecretSource::Env(b)) => a == b,
            (SecretSource::File(a), SecretSource::File(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for SecretSource {}

/// As `{ env = "NAME" }`, `{ file = "/path" }` or `{ inline = "[redacted]" }`:
/// the source, never the value (`config check`).
impl Serialize for SecretSource {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        match self {
            SecretSource::Inline(_) => map.serialize_entry("inline", "[redacted]")?,
            SecretSource::Env(name) => map.serialize_entry("env", name)?,
            SecretSource::File(path) => map.serialize_entry("file", path)?,
        }
        map.end()
    }
}

/// The three spellings of one secret in the file, as parsed: `name` is the
/// inline field's name (`value`, `secret`, `token`, `password`); the others
/// are `{name}_env` and `{name}_file`.
pub struct SecretFields<'a> {
    pub name: &'static str,
    pub inline: Option<&'a SecretString>,
    pub env: Option<&'a str>,
    pub file: Option<&'a Path>,
}

impl SecretSource {
    /// The one source set among `fields`; `parent` names the table they sit
    /// in (`endpoint[0].secret[1]`), `base_dir` resolves a relative file.
    /// `Ok(None)` when none is set, for the caller to decide.
    pub fn from_fields(
        fields: SecretFields<'_>,
        parent: &str,
        base_dir: &Path,
    ) -> Result<Option<SecretSource>, ConfigError> {
        let name = fields.name;
        let source = match (fields.inline, fields.env, fields.file) {
            (None, None, None) => return Ok(None),
            (Some(value), None, None) => SecretSource::Inline(value.clone()),
            (None, Some(variable), None) => {
                if variable.is_empty() || variable.contains('=') || variable.contains('\0') {
                    return Err(ConfigError::invalid(
                        join(parent, &format!("{name}_env")),
                        "is not an environment variable name",
                    ));
                }
                SecretSource::Env(variable.to_owned())
            }
            (None, None, Some(file)) => SecretSource::File(base_dir.join(file)),
            _ => {
                return Err(ConfigError::invalid(
                    join(parent, name),
                    format!("set one of `{name}`, `{name}_env` or `{name}_file`, not several"),
                ))
            }
        };
        Ok(Some(source))
    }

    /// Like [`Self::from_fields`], for a secret that must be set.
    pub fn required(
        fields: SecretFields<'_>,
        parent: &str,
        base_dir: &Path,
    ) -> Result<SecretSource, ConfigError> {
        let name = fields.name;
        SecretSource::from_fields(fields, parent, base_dir)?.ok_or_else(|| {
            ConfigError::invalid(
                join(parent, name),
                format!("exactly one of `{name}`, `{name}_env` or `{name}_file` is required"),
            )
        })
    }

    /// Reads the secret. `field` names the setting in errors
    /// (`endpoint[0].secret[1].value_env`), which never hold the value.
    /// An empty secret is refused: it would be a key anyone can guess.
    pub fn read(&self, field: &str) -> Result<SecretString, ConfigError> {
        // Held zeroizing until copied out at its final length (the text
        // as read has the trailing newline, and a `String` that had to
        // shrink would leave its first buffer behind).
        let text: Zeroizing<String> = match self {
            SecretSource::Inline(value) => Zeroizing::new(value.expose_secret().to_owned()),
            SecretSource::Env(name) => Zeroizing::new(std::env::var(name).map_err(|_| {
                ConfigError::invalid(
                    format!("{field}_env"),
                    format!("environment variable `{name}` is not set or not UTF-8"),
                )
            })?),
            SecretSource::File(path) => {
                Zeroizing::new(std::fs::read_to_string(path).map_err(|e| {
                    ConfigError::invalid(
                        format!("{field}_file"),
                        format!("cannot read {}: {e}", path.display()),
                    )
                })?)
            }
        };
        let value = match self {
            SecretSource::File(_) => text.trim_end_matches(['\n', '\r']),
            _ => text.as_str(),
        };
        if value.trim().is_empty() {
            return Err(ConfigError::invalid(
                self.field_name(field),
                format!("{} is empty", self.describe()),
            ));
        }
        Ok(SecretString::from(value))
    }

    /// The field this source was written in, given the inline field's path.
    pub fn field_name(&self, field: &str) -> String {
        match self {
            SecretSource::Inline(_) => field.to_owned(),
            SecretSource::Env(_) => format!("{field}_env"),
            SecretSource::File(_) => format!("{field}_file"),
        }
    }

    /// Where the secret comes from, for messages: never the value.
    pub fn describe(&self) -> String {
        match self {
            SecretSource::Inline(_) => "the inline value".to_owned(),
            SecretSource::Env(name) => format!("environment variable `{name}`"),
            SecretSource::File(path) => format!("file {}", path.display()),
        }
    }
}

fn join(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_owned()
    } else {
        format!("{parent}.{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields<'a>(
        inline: Option<&'a SecretString>,
        env: Option<&'a str>,
        file: Option<&'a Path>,
    ) -> SecretFields<'a> {
        SecretFields {
            name: "value",
            inline,
            env,
            file,
        }
    }

    #[test]
    fn exactly_one_source_naming_the_field() {
        let base = Path::new("/etc/hookinbox");
        let parent = "endpoint[0].secret[1]";
        let none = SecretSource::required(fields(None, None, None), parent, base).unwrap_err();
        assert!(
            none.to_string()
                .starts_with("endpoint[0].secret[1].value: "),
            "{none}"
        );
        let x = SecretString::from("x");
        let two = SecretSource::required(fields(Some(&x), Some("X"), None), parent, base)
            .unwrap_err()
            .to_string();
        assert!(two.contains("not several"), "{two}");
        assert!(!two.contains("\"x\""), "{two}");
        let file = SecretSource::required(fields(None, None, Some(Path::new("s"))), parent, base);
        assert_eq!(
            file.unwrap(),
            SecretSource::File(PathBuf::from("/etc/hookinbox/s"))
        );
    }

    #[test]
    fn values_are_never_printed_or_serialized() {
        let inline = SecretSource::Inline("hunter2-secret".into());
        assert!(!format!("{inline:?}").contains("hunter2"));
        let json = serde_json::to_string(&inline).unwrap();
        assert_eq!(json, r#"{"inline":"[redacted]"}"#);
        let value = inline.read("admin.token").unwrap();
        assert_eq!(value.expose_secret(), "hunter2-secret");
        assert!(!format!("{value:?}").contains("hunter2"));
        let env = serde_json::to_string(&SecretSource::Env("TOKEN".into())).unwrap();
        assert_eq!(env, r#"{"env":"TOKEN"}"#);
    }

    #[test]
    fn reading_names_the_field_of_the_source() {
        let unset = SecretSource::Env("HOOKINBOX_TEST_SECRET_SOURCE_UNSET".into())
            .read("endpoint[0].secret[0].value")
            .unwrap_err()
            .to_string();
        assert!(
            unset.starts_with("endpoint[0].secret[0].value_env: "),
            "{unset}"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        std::fs::write(&path, "s3cret\n").unwrap();
        let read = SecretSource::File(path.clone()).read("x.value").unwrap();
        assert_eq!(read.expose_secret(), "s3cret");
        std::fs::write(&path, "\n").unwrap();
        let empty = SecretSource::File(path).read("x.value").unwrap_err();
        assert!(empty.to_string().starts_with("x.value_file: "), "{empty}");
        let missing = SecretSource::File(dir.path().join("missing"))
            .read("x.value")
            .unwrap_err();
        assert!(
            missing.to_string().starts_with("x.value_file: "),
            "{missing}"
        );
    }
}
