//! Where a secret comes from: the config itself, an environment variable or
//! a file. Every secret-bearing setting (endpoint secret versions, a
//! target's signing secret, the admin token, a `basic_auth` password) is
//! spelled the same way in the file (`X`, `X_env`, `X_file`: exactly one)
//! and becomes one [`SecretSource`]. The value is read once, at start-up,
//! by [`SecretSource::read`]; it is never logged, printed or serialized.

use std::path::{Path, PathBuf};

use serde::ser::SerializeMap;
use serde::Serialize;

use super::ConfigError;

/// Where one secret is read from.
#[derive(Clone, PartialEq, Eq)]
pub enum SecretSource {
    /// Written in the config file (development only).
    Inline(String),
    /// The named environment variable.
    Env(String),
    /// A file, already resolved against the config file's directory;
    /// a trailing newline is trimmed.
    File(PathBuf),
}

/// A secret read from its source. Printing it shows `[redacted]`.
#[derive(Clone)]
pub struct SecretValue(String);

impl SecretValue {
    /// The secret itself: hand it to whatever needs it, never to a log.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

impl std::fmt::Debug for SecretSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SecretSource::Inline(_) => f.write_str("Inline([redacted])"),
            SecretSource::Env(name) => f.debug_tuple("Env").field(name).finish(),
            SecretSource::File(path) => f.debug_tuple("File").field(path).finish(),
        }
    }
}

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
    pub inline: Option<&'a str>,
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
            (Some(value), None, None) => SecretSource::Inline(value.to_owned()),
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
    pub fn read(&self, field: &str) -> Result<SecretValue, ConfigError> {
        let value = match self {
            SecretSource::Inline(value) => value.clone(),
            SecretSource::Env(name) => std::env::var(name).map_err(|_| {
                ConfigError::invalid(
                    format!("{field}_env"),
                    format!("environment variable `{name}` is not set or not UTF-8"),
                )
            })?,
            SecretSource::File(path) => std::fs::read_to_string(path)
                .map_err(|e| {
                    ConfigError::invalid(
                        format!("{field}_file"),
                        format!("cannot read {}: {e}", path.display()),
                    )
                })?
                .trim_end_matches(['\n', '\r'])
                .to_owned(),
        };
        if value.trim().is_empty() {
            return Err(ConfigError::invalid(
                self.field_name(field),
                format!("{} is empty", self.describe()),
            ));
        }
        Ok(SecretValue(value))
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
        inline: Option<&'a str>,
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
        let two = SecretSource::required(fields(Some("x"), Some("X"), None), parent, base)
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
        assert_eq!(value.expose(), "hunter2-secret");
        assert_eq!(format!("{value:?}"), "[redacted]");
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
        assert_eq!(read.expose(), "s3cret");
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
