//! The one configuration builder of the tests: storage in a given file, one
//! `lab` endpoint (`/hooks/lab`), and what a test adds — a target, more
//! endpoints, server or admin settings.

use std::fmt;
use std::path::{Path, PathBuf};

/// The secret of the `lab` endpoint every test configuration has.
pub const LAB_SECRET: &str = "lab-test-secret-0001";

/// An encryption key (32 bytes, base64) for tests that seal bodies and
/// audit headers: [`TestConfig::encrypted`] uses it under the id
/// [`ENCRYPTION_KEY_ID`].
pub const ENCRYPTION_KEY: &str = "aG9va2luYm94LXRlc3QtZW5jcnlwdGlvbi1rZXktMDE=";

/// The id of [`ENCRYPTION_KEY`].
pub const ENCRYPTION_KEY_ID: &str = "test-1";

/// The Standard Webhooks secret test targets sign with.
pub const TARGET_SECRET: &str = "whsec_dGFyZ2V0LXNlY3JldC1mb3ItdGVzdHMtMDAwMDAwMDA=";

/// A configuration file's text, built up by a test. Its `Display` is the
/// TOML `hookinbox serve --config` reads.
#[derive(Debug, Clone)]
pub struct TestConfig {
    /// The SQLite file of `[storage]`.
    db: PathBuf,
    /// `storage.url` instead of the SQLite file (`postgres://…`).
    url: Option<String>,
    /// More lines of the `[storage]` table.
    storage: String,
    /// The `[[endpoint.target]]` table of the `lab` endpoint, if it has one.
    target: Option<String>,
    /// Tables after the `lab` endpoint's.
    extra: String,
    /// The `[encryption]` table and its keys.
    encryption: String,
}

/// Workers that find, lease and rescue deliveries within a test's patience.
const FAST_DELIVERY: &str = r#"
[delivery]
poll_interval = "50ms"
lease = "1s"
rescue_interval = "200ms"
"#;

impl TestConfig {
    /// Storage in `db` and one `lab` endpoint signed with [`LAB_SECRET`].
    pub fn new(db: &Path) -> TestConfig {
        TestConfig {
            db: db.to_owned(),
            url: None,
            storage: String::new(),
            target: None,
            extra: String::new(),
            // Most tests assert the bytes of bodies on disk and read them
            // back without keys; the encryption tests opt in.
            encryption: "[encryption]\nallow_plaintext = true\n".to_owned(),
        }
    }

    /// Seals bodies and audit headers with one inline key, [`ENCRYPTION_KEY`].
    pub fn encrypted(self) -> TestConfig {
        self.encryption(&format!(
            "[[encryption.key]]\nid = \"{ENCRYPTION_KEY_ID}\"\nvalue = \"{ENCRYPTION_KEY}\"\n"
        ))
    }

    /// `toml` instead of the default `[encryption]` (plaintext allowed):
    /// `[encryption]` and `[[encryption.key]]` tables, or nothing at all.
    pub fn encryption(mut self, toml: &str) -> TestConfig {
        self.encryption = toml.to_owned();
        self
    }

    /// Stores at `url` (`postgres://…`) instead of the SQLite file.
    pub fn storage_url(mut self, url: &str) -> TestConfig {
        self.url = Some(url.to_owned());
        self
    }

    /// More lines of the `[storage]` table (`commit_timeout = "10ms"`).
    pub fn storage(mut self, settings: &str) -> TestConfig {
        self.storage.push_str(settings);
        self.storage.push('\n');
        self
    }

    /// The `lab` endpoint delivers to an http target named `sink` at `url`,
    /// re-signed with [`TARGET_SECRET`], retried within milliseconds;
    /// `settings` are more lines of the target's table (`max_attempts = 3`).
    pub fn http_target(self, url: &str, settings: &str) -> TestConfig {
        self.target(format!(
            r#"name = "sink"
kind = "http"
url = "{url}"
secret = "{TARGET_SECRET}"
timeout = "2s"
retry_base = "20ms"
retry_cap = "200ms"
{settings}"#
        ))
    }

    /// The `lab` endpoint delivers to the embedder's handler registered as
    /// `name`, retried within milliseconds, four at a time.
    pub fn handler_target(self, name: &str) -> TestConfig {
        self.target(format!(
            r#"name = "{name}"
kind = "handler"
max_attempts = 5
retry_base = "20ms"
retry_cap = "100ms"
concurrency = 4"#
        ))
    }

    fn target(self, table: String) -> TestConfig {
        TestConfig {
            target: Some(table),
            ..self
        }
    }

    /// Another endpoint, `/hooks/{id}`, of `provider`, with one secret
    /// version `v1` = `secret`; `settings` are more lines of its table
    /// (`event_types = ["invoice.*"]`).
    pub fn endpoint(self, id: &str, provider: &str, settings: &str, secret: &str) -> TestConfig {
        self.extra(&format!(
            r#"
[[endpoint]]
id = "{id}"
provider = "{provider}"
{settings}
[[endpoint.secret]]
version = "v1"
value = "{secret}""#
        ))
    }

    /// More TOML after the `lab` endpoint: `[server]`, `[admin]`, other
    /// `[[endpoint]]`s.
    pub fn extra(mut self, toml: &str) -> TestConfig {
        self.extra.push_str(toml);
        self.extra.push('\n');
        self
    }
}

impl fmt::Display for TestConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.url {
            Some(url) => writeln!(f, "[storage]\nurl = \"{url}\"")?,
            None => writeln!(f, "[storage]\nurl = \"sqlite://{}\"", self.db.display())?,
        }
        write!(f, "{}", self.storage)?;
        // `/readyz`'s disk check measures the machine's own filesystem, which
        // tests share with everything else on it: off unless a test sets the
        // floor itself (`disk_full.rs`).
        if !self.storage.contains("min_free_disk_bytes") {
            writeln!(f, "min_free_disk_bytes = 0")?;
        }
        writeln!(f, "\n{}", self.encryption)?;
        if self.target.is_some() {
            writeln!(f, "{FAST_DELIVERY}")?;
        }
        writeln!(
            f,
            r#"
[[endpoint]]
id = "lab"
provider = "lab"

[[endpoint.secret]]
version = "v1"
value = "{LAB_SECRET}""#
        )?;
        if let Some(target) = &self.target {
            writeln!(f, "\n[[endpoint.target]]\n{target}")?;
        }
        write!(f, "{}", self.extra)
    }
}

/// The configuration most tests need: [`TestConfig::new`] plus `extra`.
pub fn config(db: &Path, extra: &str) -> String {
    TestConfig::new(db).extra(extra).to_string()
}

/// [`TestConfig::http_target`] at `url` with `target_settings`, plus `extra`.
pub fn config_with_target(db: &Path, url: &str, target_settings: &str, extra: &str) -> String {
    TestConfig::new(db)
        .http_target(url, target_settings)
        .extra(extra)
        .to_string()
}
