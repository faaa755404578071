//! The configuration file's shape, exactly as TOML spells it: what serde
//! accepts, with the defaults filled in. Nothing here is checked beyond its
//! type; [`super::settings`] turns it into settings that cannot be wrong.
//!
//! Every struct refuses unknown fields, and every field says what it is
//! for: `hookinbox config example` and docs/configuration.md are tested
//! against these structs. Durations are humantime strings (`"30s"`,
//! `"500ms"`, `"3d"`).
//!
//! An inline secret is parsed straight into a [`SecretString`], so every
//! struct here may derive `Debug`: it prints `[REDACTED]` for the value.
//! They derive `Serialize` for `config check`, which prints the file back
//! (`super::printable`): inline secrets are `skip_serializing`, and
//! `storage.url` is written without a password.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use hookinbox_store::{PostgresOptions, SqliteOptions};
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

/// The whole configuration file.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// The public listener: serves `/hooks/*` and `/healthz`.
    #[serde(default)]
    pub server: ServerFile,
    /// Where events are stored.
    #[serde(default)]
    pub storage: StorageFile,
    /// Delivery workers, for all targets.
    #[serde(default)]
    pub delivery: DeliveryFile,
    /// The admin listener (`/metrics`, `/readyz`); off unless configured.
    pub admin: Option<AdminFile>,
    /// The keys that seal bodies and audit headers at rest.
    #[serde(default)]
    pub encryption: EncryptionFile,
    /// How long bodies, dedup records and dead deliveries are kept.
    #[serde(default)]
    pub retention: RetentionFile,
    /// How often the gauges read from the database are sampled.
    #[serde(default)]
    pub metrics: MetricsFile,
    /// Reconciliation: repairing drift between the inbox and its outbox,
    /// and fetching events whose webhook never arrived.
    #[serde(default)]
    pub reconcile: ReconcileFile,
    /// The webhook endpoints, each served at `/hooks/{id}`.
    #[serde(default)]
    pub endpoint: Vec<EndpointFile>,
}

/// `[server]`: the public listener and its limits.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServerFile {
    /// Address of the public listener; `serve --listen` overrides it.
    #[serde(default = "default_listen")]
    pub listen: SocketAddr,
    /// Most header fields one request may carry; more is answered 431.
    #[serde(default = "default_max_headers")]
    pub max_headers: usize,
    /// Most bytes of the request head (request line and headers); more is
    /// answered 431. Values under 8 KiB count as 8 KiB.
    #[serde(default = "default_max_header_bytes")]
    pub max_header_bytes: usize,
    /// Time allowed to receive the request head; also how long an idle
    /// keep-alive connection is kept open.
    #[serde(default = "default_header_read_timeout", with = "humantime_serde")]
    pub header_read_timeout: Duration,
    /// Time allowed to receive the whole body, however fast it comes.
    #[serde(default = "default_body_read_timeout", with = "humantime_serde")]
    pub body_read_timeout: Duration,
    /// Time a body may take before `min_body_bytes_per_second` applies.
    #[serde(default = "default_body_rate_grace", with = "humantime_serde")]
    pub body_rate_grace: Duration,
    /// Average rate a body must keep up after the grace period; slower ones
    /// end in 408 `timeout`.
    #[serde(default = "default_min_body_bytes_per_second")]
    pub min_body_bytes_per_second: u64,
    /// Bytes of request bodies held in memory at once, across all requests
    /// (buffers are claimed as bytes arrive); past it requests get 503.
    #[serde(default = "default_max_inflight_body_bytes")]
    pub max_inflight_body_bytes: u64,
    /// Connections open at once on the public listener. Start-up raises the
    /// open-file limit to its hard limit and lowers this (with a warning) if
    /// the limit cannot hold it.
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// Connections the kernel queues while the listener is at its cap.
    #[serde(default = "default_listen_backlog")]
    pub listen_backlog: u32,
    /// Requests served on one keep-alive connection before it is closed.
    #[serde(default = "default_max_requests_per_connection")]
    pub max_requests_per_connection: u32,
    /// After answering before the body was read (413, 404, 429, …): how
    /// long the rest of the body is read and discarded, so a client that
    /// writes before it reads still gets the answer.
    #[serde(default = "default_linger_timeout", with = "humantime_serde")]
    pub linger_timeout: Duration,
    /// …and at most how many bytes of it.
    #[serde(default = "default_linger_max_bytes")]
    pub linger_max_bytes: u64,
    /// Proxies (addresses or CIDR ranges) whose `X-Forwarded-For` names the
    /// client, for the per-client limit. Empty: the peer is the client.
    #[serde(default)]
    pub trusted_proxies: Vec<String>,
    /// Per-client limit on requests refused before or at verification; once
    /// spent the client gets 429 before its body is read. Verified requests
    /// never spend it.
    #[serde(default = "default_unverified_rate_limit")]
    pub unverified_rate_limit: RateLimitFile,
    /// How long in-flight requests and deliveries may take to finish at
    /// shutdown (SIGTERM, Ctrl-C).
    #[serde(default = "default_shutdown_grace", with = "humantime_serde")]
    pub shutdown_grace: Duration,
    /// TLS on the public listener, for deployments without a terminating proxy.
    pub tls: Option<TlsFile>,
}

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 8080))
}
fn default_max_headers() -> usize {
    64
}
fn default_max_header_bytes() -> usize {
    16 * 1024
}
fn default_header_read_timeout() -> Duration {
    Duration::from_secs(10)
}
fn default_body_read_timeout() -> Duration {
    Duration::from_secs(30)
}
fn default_body_rate_grace() -> Duration {
    Duration::from_secs(2)
}
fn default_min_body_bytes_per_second() -> u64 {
    16 * 1024
}
fn default_max_inflight_body_bytes() -> u64 {
    128 * 1024 * 1024
}
fn default_max_connections() -> usize {
    10_000
}
fn default_listen_backlog() -> u32 {
    4_096
}
fn default_max_requests_per_connection() -> u32 {
    1_000
}
fn default_linger_timeout() -> Duration {
    Duration::from_secs(5)
}
fn default_linger_max_bytes() -> u64 {
    16 * 1024 * 1024
}
fn default_unverified_rate_limit() -> RateLimitFile {
    RateLimitFile {
        per_second: 20,
        burst: Some(200),
    }
}
fn default_shutdown_grace() -> Duration {
    Duration::from_secs(10)
}

impl Default for ServerFile {
    fn default() -> Self {
        ServerFile {
            listen: default_listen(),
            max_headers: default_max_headers(),
            max_header_bytes: default_max_header_bytes(),
            header_read_timeout: default_header_read_timeout(),
            body_read_timeout: default_body_read_timeout(),
            body_rate_grace: default_body_rate_grace(),
            min_body_bytes_per_second: default_min_body_bytes_per_second(),
            max_inflight_body_bytes: default_max_inflight_body_bytes(),
            max_connections: default_max_connections(),
            listen_backlog: default_listen_backlog(),
            max_requests_per_connection: default_max_requests_per_connection(),
            linger_timeout: default_linger_timeout(),
            linger_max_bytes: default_linger_max_bytes(),
            trusted_proxies: Vec::new(),
            unverified_rate_limit: default_unverified_rate_limit(),
            shutdown_grace: default_shutdown_grace(),
            tls: None,
        }
    }
}

/// `[server.tls]`: the certificate the public listener presents. Reloaded
/// on SIGHUP; new handshakes use the new files, open connections keep theirs.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TlsFile {
    /// PEM file of the certificate chain, leaf first (relative to the config file).
    pub cert_file: PathBuf,
    /// PEM file of the private key: PKCS#8, PKCS#1 or SEC1 (relative to the config file).
    pub key_file: PathBuf,
    /// Time allowed for a TLS handshake: a client that opens a connection
    /// and then stalls the handshake is a slow-loris too.
    #[serde(default = "default_handshake_timeout", with = "humantime_serde")]
    pub handshake_timeout: Duration,
}

fn default_handshake_timeout() -> Duration {
    Duration::from_secs(10)
}

/// A token bucket: `{ per_second = 20, burst = 200 }`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitFile {
    /// Sustained requests per second.
    pub per_second: u32,
    /// Requests allowed in a burst above the sustained rate; defaults to `per_second`.
    pub burst: Option<u32>,
}

/// `[storage]`: where events are stored.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StorageFile {
    /// `sqlite://PATH` (created if missing; relative to this file's
    /// directory) or `postgres://USER@HOST:PORT/DB` (`?sslmode=…`).
    // A secret until parsed: a PostgreSQL URL may carry the password.
    #[serde(
        default = "default_storage_url",
        serialize_with = "super::printable::url_without_password"
    )]
    pub url: SecretString,
    /// PostgreSQL: the name of an environment variable holding the
    /// password, when it is not in the URL.
    pub password_env: Option<String>,
    /// PostgreSQL: a file holding the password (trailing newline trimmed;
    /// relative to this file).
    pub password_file: Option<PathBuf>,
    /// PostgreSQL: the schema holding hookinbox's tables (created by the
    /// migration); the server's default when unset.
    pub schema: Option<String>,
    /// PostgreSQL: most connections this process opens.
    #[serde(default = "default_pool_size")]
    pub pool_size: usize,
    /// PostgreSQL: longest wait to connect, or for a free pooled connection.
    #[serde(default = "default_connect_timeout", with = "humantime_serde")]
    pub connect_timeout: Duration,
    /// Longest a request waits for its commit (queue included). Past it the
    /// answer is 503 + `Retry-After`: the outcome is unknown, and the
    /// provider's retry is deduplicated. A frozen or very slow disk then
    /// looks to providers like an outage they retry, not like a timeout of
    /// their own.
    #[serde(default = "default_commit_timeout", with = "humantime_serde")]
    pub commit_timeout: Duration,
    /// How long a commit waits for the database's write lock while another
    /// process holds it before answering 503.
    #[serde(default = "default_busy_timeout", with = "humantime_serde")]
    pub busy_timeout: Duration,
    /// Writes that may wait for the writer at once; beyond it requests get 503.
    #[serde(default = "default_queue_capacity")]
    pub queue_capacity: usize,
    /// Most events committed in one transaction.
    #[serde(default = "default_max_batch_events")]
    pub max_batch_events: usize,
    /// SQLite: `/readyz` fails (`disk`) while the filesystem holding the
    /// database has fewer bytes free than this. Not checked for PostgreSQL,
    /// whose disk is the server's.
    #[serde(default = "default_min_free_disk_bytes")]
    pub min_free_disk_bytes: u64,
    /// SQLite: new bodies are refused (503) while writing them would leave
    /// fewer bytes free, so SQLite keeps room to checkpoint and to purge on
    /// a full disk. 0 keeps none.
    #[serde(default = "default_disk_reserve_bytes")]
    pub disk_reserve_bytes: u64,
}

/// One GiB: room for the WAL to grow between checkpoints and for a burst
/// of bodies, with time left to act before writes fail.
fn default_min_free_disk_bytes() -> u64 {
    1 << 30
}

fn default_storage_url() -> SecretString {
    "sqlite://hookinbox.db".into()
}
fn default_commit_timeout() -> Duration {
    Duration::from_secs(2)
}
// The store's own defaults, so a config without `[storage]` and a store
// opened by a library user behave the same.
fn default_busy_timeout() -> Duration {
    SqliteOptions::DEFAULT_BUSY_TIMEOUT
}
fn default_queue_capacity() -> usize {
    SqliteOptions::DEFAULT_QUEUE_CAPACITY
}
fn default_max_batch_events() -> usize {
    SqliteOptions::DEFAULT_MAX_BATCH_EVENTS
}
fn default_disk_reserve_bytes() -> u64 {
    SqliteOptions::DEFAULT_DISK_RESERVE_BYTES
}
fn default_pool_size() -> usize {
    PostgresOptions::DEFAULT_POOL_SIZE
}
fn default_connect_timeout() -> Duration {
    PostgresOptions::DEFAULT_CONNECT_TIMEOUT
}

impl Default for StorageFile {
    fn default() -> Self {
        StorageFile {
            url: default_storage_url(),
            password_env: None,
            password_file: None,
            schema: None,
            pool_size: default_pool_size(),
            connect_timeout: default_connect_timeout(),
            commit_timeout: default_commit_timeout(),
            busy_timeout: default_busy_timeout(),
            queue_capacity: default_queue_capacity(),
            max_batch_events: default_max_batch_events(),
            min_free_disk_bytes: default_min_free_disk_bytes(),
            disk_reserve_bytes: default_disk_reserve_bytes(),
        }
    }
}

/// `[delivery]`: how workers lease and poll, for all targets.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DeliveryFile {
    /// How long a worker holds a leased delivery before another may take
    /// it; at least twice an HTTP or NATS target's `timeout` is used. Workers
    /// heartbeat at a third of it.
    #[serde(default = "default_lease", with = "humantime_serde")]
    pub lease: Duration,
    /// How often idle workers look for due deliveries when nothing wakes
    /// them (events accepted by another process, retries coming due).
    #[serde(default = "default_poll_interval", with = "humantime_serde")]
    pub poll_interval: Duration,
    /// How often expired leases are returned to PENDING.
    #[serde(default = "default_rescue_interval", with = "humantime_serde")]
    pub rescue_interval: Duration,
}

fn default_lease() -> Duration {
    Duration::from_secs(30)
}
fn default_poll_interval() -> Duration {
    Duration::from_millis(250)
}
fn default_rescue_interval() -> Duration {
    Duration::from_secs(5)
}

impl Default for DeliveryFile {
    fn default() -> Self {
        DeliveryFile {
            lease: default_lease(),
            poll_interval: default_poll_interval(),
            rescue_interval: default_rescue_interval(),
        }
    }
}

/// `[encryption]`: the key ring that seals raw bodies and audit headers at
/// rest.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EncryptionFile {
    /// The id of the key new records are sealed with; may be left out when
    /// there is one key.
    pub active: Option<String>,
    /// Start without any key, storing bodies and audit headers in plaintext.
    #[serde(default)]
    pub allow_plaintext: bool,
    /// The keys: the active one and older ones kept to open what they sealed.
    #[serde(default)]
    pub key: Vec<EncryptionKeyFile>,
}

/// `[[encryption.key]]`: one key of the ring, 32 bytes in base64.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EncryptionKeyFile {
    /// The key's id, stored with every record it seals (1–64 visible ASCII characters).
    pub id: String,
    /// The key itself (development only: prefer `value_env` or `value_file`).
    #[serde(
        default,
        deserialize_with = "super::inline_secret::deserialize",
        skip_serializing
    )]
    pub value: Option<SecretString>,
    /// The name of an environment variable holding the key.
    pub value_env: Option<String>,
    /// A file holding the key (trailing newline trimmed; relative to the config file).
    pub value_file: Option<PathBuf>,
    /// With `value_file`: when the file is missing, `serve` creates it (0600)
    /// with a new random key. For development only.
    #[serde(default)]
    pub create_if_missing: bool,
}

/// `[retention]`: how long each kind of data is kept; every rule is off
/// (kept for ever) unless set.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionFile {
    /// Bodies and audit headers of events older than this are dropped; the
    /// rows stay.
    #[serde(default, with = "humantime_serde")]
    pub raw_payload: Option<Duration>,
    /// Events older than this are deleted whole; never less than the
    /// longest redelivery window of the endpoints' providers.
    #[serde(default, with = "humantime_serde")]
    pub dedup: Option<Duration>,
    /// DEAD deliveries older than this are deleted with their attempts.
    #[serde(default, with = "humantime_serde")]
    pub dead_deliveries: Option<Duration>,
    /// How often `serve` purges.
    #[serde(default = "default_purge_interval", with = "humantime_serde")]
    pub purge_interval: Duration,
    /// Items purged per rule in one transaction.
    #[serde(default = "default_purge_batch")]
    pub batch: usize,
}

fn default_purge_interval() -> Duration {
    Duration::from_secs(5 * 60)
}
fn default_purge_batch() -> usize {
    1000
}

impl Default for RetentionFile {
    fn default() -> Self {
        RetentionFile {
            raw_payload: None,
            dedup: None,
            dead_deliveries: None,
            purge_interval: default_purge_interval(),
            batch: default_purge_batch(),
        }
    }
}

/// `[metrics]`: the gauges `serve` reads from the database for `/metrics`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsFile {
    /// How often the backlog is read: the oldest unprocessed event per
    /// endpoint, open deliveries and the oldest due one per target, and the
    /// ACCEPTED and FAILED row counts. Each is an index range scan whose
    /// cost follows the backlog, not the inbox.
    #[serde(default = "default_sample_interval", with = "humantime_serde")]
    pub sample_interval: Duration,
    /// How often the PROCESSED rows are counted: a count over every
    /// processed row (about 0.2 s per million on SQLite), so less often.
    #[serde(default = "default_count_interval", with = "humantime_serde")]
    pub count_interval: Duration,
}

fn default_sample_interval() -> Duration {
    Duration::from_secs(15)
}
fn default_count_interval() -> Duration {
    Duration::from_secs(5 * 60)
}

impl Default for MetricsFile {
    fn default() -> Self {
        MetricsFile {
            sample_interval: default_sample_interval(),
            count_interval: default_count_interval(),
        }
    }
}

/// `[reconcile]`: what `serve` repairs in the background, and how
/// `hookinbox reconcile` looks.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReconcileFile {
    /// Whether `serve` reconciles every `interval` (repairing what is safe).
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// How often `serve` reconciles.
    #[serde(default = "default_reconcile_interval", with = "humantime_serde")]
    pub interval: Duration,
    /// Events accepted this long ago or later are checked for missing
    /// delivery rows (leases and statuses are checked whatever their age).
    #[serde(default = "default_reconcile_lookback", with = "humantime_serde")]
    pub lookback: Duration,
    /// Most items of each kind repaired in one pass.
    #[serde(default = "default_reconcile_batch")]
    pub batch: usize,
}

fn default_true() -> bool {
    true
}
fn default_reconcile_interval() -> Duration {
    Duration::from_secs(15 * 60)
}
fn default_reconcile_lookback() -> Duration {
    Duration::from_secs(24 * 3600)
}
fn default_reconcile_batch() -> usize {
    1000
}

impl Default for ReconcileFile {
    fn default() -> Self {
        ReconcileFile {
            enabled: default_true(),
            interval: default_reconcile_interval(),
            lookback: default_reconcile_lookback(),
            batch: default_reconcile_batch(),
        }
    }
}

/// `[endpoint.reconcile]`: the provider's event list, for a `stripe`
/// endpoint (`GET /v1/events`).
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointReconcileFile {
    /// The API key (a restricted key that may read events), inline
    /// (development only: prefer `api_key_env` or `api_key_file`).
    #[serde(
        default,
        deserialize_with = "super::inline_secret::deserialize",
        skip_serializing
    )]
    pub api_key: Option<SecretString>,
    /// The API key from an environment variable.
    pub api_key_env: Option<String>,
    /// The API key from a file (trailing newline trimmed; relative to the config file).
    pub api_key_file: Option<PathBuf>,
    /// Where the API is: `https://` (or `http://` for a local stand-in).
    #[serde(default = "default_stripe_api")]
    pub base_url: String,
    /// How far back each pass lists events (`created[gte]`); at most 30
    /// days, all Stripe keeps. Whole seconds.
    #[serde(default = "default_provider_lookback", with = "humantime_serde")]
    pub lookback: Duration,
    /// Events asked for per page (`limit`, 1–100).
    #[serde(default = "default_page_size")]
    pub page_size: u32,
    /// How long one API request may take.
    #[serde(default = "default_api_timeout", with = "humantime_serde")]
    pub timeout: Duration,
}

fn default_stripe_api() -> String {
    "https://api.stripe.com".into()
}
/// Three days: Stripe's own retries cover that long, so a pass sees every
/// event a retry could still bring.
fn default_provider_lookback() -> Duration {
    Duration::from_secs(3 * 24 * 3600)
}
fn default_page_size() -> u32 {
    100
}
fn default_api_timeout() -> Duration {
    Duration::from_secs(10)
}

/// `[admin]`: metrics and readiness, kept off the public port.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AdminFile {
    /// Address of the admin listener; keep it on loopback or a private network.
    pub listen: SocketAddr,
    /// The bearer token every admin request needs, inline (prefer `token_env`
    /// or `token_file`). Required when `listen` is not a loopback address.
    #[serde(
        default,
        deserialize_with = "super::inline_secret::deserialize",
        skip_serializing
    )]
    pub token: Option<SecretString>,
    /// The bearer token from an environment variable.
    pub token_env: Option<String>,
    /// The bearer token from a file (trailing newline trimmed; relative to the config file).
    pub token_file: Option<PathBuf>,
    /// `Host` header values admitted besides an IP address or `localhost`
    /// with the listen port (the DNS rebinding guard), exactly as clients
    /// send them: `"admin.internal:9090"`, or a bare name behind a proxy on
    /// the default port.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Time for a request head to arrive; an idle keep-alive connection is
    /// closed after it too.
    #[serde(
        default = "default_admin_header_read_timeout",
        with = "humantime_serde"
    )]
    pub header_read_timeout: Duration,
    /// Admin connections open at once; further ones wait until one closes.
    #[serde(default = "default_admin_max_connections")]
    pub max_connections: usize,
}

fn default_admin_header_read_timeout() -> Duration {
    Duration::from_secs(5)
}
fn default_admin_max_connections() -> usize {
    16
}

/// `[[endpoint]]`: one webhook endpoint, a provider scheme and its key ring.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointFile {
    /// The path segment: the endpoint is served at `/hooks/{id}`.
    pub id: String,
    /// The provider scheme (`stripe`, `github`, `lab`, `generic_hmac`, …).
    pub provider: String,
    /// How far a signed timestamp may be from now, either way; the
    /// provider's own default when absent. Whole seconds.
    #[serde(default, with = "humantime_serde")]
    pub tolerance: Option<Duration>,
    /// Largest accepted body in bytes (at most 64 MiB).
    #[serde(default = "default_max_body_bytes")]
    pub max_body_bytes: usize,
    /// The public URL the provider was given, for schemes that sign the URL
    /// (Twilio, Square).
    pub public_url: Option<String>,
    /// Accepted media types; `"*"` accepts any. `application/json` also
    /// takes `application/*+json`.
    #[serde(default = "default_content_types")]
    pub content_types: Vec<String>,
    /// Event types to store; others are acknowledged and ignored. A trailing
    /// `*` matches a prefix. Absent: every type is stored.
    pub event_types: Option<Vec<String>>,
    /// Per-endpoint request rate limit, charged by verified requests only.
    pub rate_limit: Option<RateLimitFile>,
    /// JSON pointer to the object id in the body, for per-object ordering
    /// (overrides what the provider adapter reads).
    pub object_id: Option<String>,
    /// JSON pointer to a version of that object that only grows (an integer,
    /// or a string of digits); required with `object_id` for ordering.
    pub object_version: Option<String>,
    /// HTTP basic auth required on every request, besides the signature;
    /// required for providers whose signature does not cover the body (Mailgun).
    pub basic_auth: Option<BasicAuthFile>,
    /// The scheme of a `provider = "generic_hmac"` endpoint.
    pub generic_hmac: Option<GenericHmacFile>,
    /// The key ring: every version trusted now (current and previous during a rotation).
    #[serde(default)]
    pub secret: Vec<SecretFile>,
    /// Where accepted events are delivered; one delivery row per target per event.
    #[serde(default)]
    pub target: Vec<TargetFile>,
    /// `stripe` endpoints: list the provider's recent events through its
    /// API and store those whose webhook never arrived.
    pub reconcile: Option<EndpointReconcileFile>,
}

fn default_max_body_bytes() -> usize {
    1024 * 1024
}
fn default_content_types() -> Vec<String> {
    vec![
        "application/json".into(),
        "application/x-www-form-urlencoded".into(),
    ]
}

/// `[[endpoint.secret]]`: one version of an endpoint's key ring.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SecretFile {
    /// The operator's name for this version; recorded with every event it verifies.
    pub version: String,
    /// The secret itself (development only: prefer `value_env` or `value_file`).
    #[serde(
        default,
        deserialize_with = "super::inline_secret::deserialize",
        skip_serializing
    )]
    pub value: Option<SecretString>,
    /// The name of an environment variable holding the secret.
    pub value_env: Option<String>,
    /// A file holding the secret (trailing newline trimmed; relative to the config file).
    pub value_file: Option<PathBuf>,
    /// Trusted from this unix second on.
    pub not_before: Option<i64>,
    /// Retired after this unix second.
    pub not_after: Option<i64>,
}

/// `basic_auth = { username = "…", password_env = "…" }` on an endpoint.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BasicAuthFile {
    /// The user name the provider sends (no `:`).
    pub username: String,
    /// The password itself (development only: prefer `password_env` or `password_file`).
    #[serde(
        default,
        deserialize_with = "super::inline_secret::deserialize",
        skip_serializing
    )]
    pub password: Option<SecretString>,
    /// The name of an environment variable holding the password.
    pub password_env: Option<String>,
    /// A file holding the password (trailing newline trimmed; relative to the config file).
    pub password_file: Option<PathBuf>,
}

/// `[endpoint.generic_hmac]`: how a sender without a dedicated adapter
/// signs (`hookinbox_verify::providers::generic_hmac`). The verify crate
/// checks the combination; this is only its TOML spelling, with durations
/// as humantime strings like every other duration of the file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GenericHmacFile {
    /// The header that carries the signature (`X-Signature`).
    pub signature_header: String,
    /// Text before the encoded signature in its header (`sha256=`).
    pub signature_prefix: Option<String>,
    /// The exact signed bytes, as a template over `{body}` (required),
    /// `{timestamp}` and `{id}` (the headers' values as sent).
    #[serde(default = "default_signed_content")]
    pub signed_content: String,
    /// `sha256` or `sha1`.
    #[serde(default = "default_algorithm")]
    pub algorithm: HmacAlgorithmName,
    /// `hex` or `base64`: how the signature is written in its header.
    #[serde(default = "default_encoding")]
    pub encoding: SignatureEncodingName,
    /// The header that carries the signed timestamp, in integer unix seconds.
    pub timestamp_header: Option<String>,
    /// How far that timestamp may be from now, either way; only with
    /// `timestamp_header` (default 5 minutes then). Whole seconds.
    #[serde(default, with = "humantime_serde")]
    pub tolerance: Option<Duration>,
    /// The header that carries the event id (or `id_pointer`, not both).
    pub id_header: Option<String>,
    /// A JSON pointer (`/id`) to the event id in the body.
    pub id_pointer: Option<String>,
    /// The header that carries the event type, if any.
    pub type_header: Option<String>,
    /// A JSON pointer to the event type in the body, if any.
    pub type_pointer: Option<String>,
    /// How long the sender may redeliver one event: the minimum dedup
    /// retention. Whole seconds.
    #[serde(default = "default_redelivery_window", with = "humantime_serde")]
    pub redelivery_window: Duration,
}

fn default_signed_content() -> String {
    "{body}".to_owned()
}
fn default_algorithm() -> HmacAlgorithmName {
    HmacAlgorithmName::Sha256
}
fn default_encoding() -> SignatureEncodingName {
    SignatureEncodingName::Hex
}
/// Three days: long enough for the retry schedules of most senders, since a
/// generic sender's own window is unknown.
fn default_redelivery_window() -> Duration {
    Duration::from_secs(3 * 24 * 3600)
}

/// `generic_hmac.algorithm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HmacAlgorithmName {
    Sha256,
    Sha1,
}

/// `generic_hmac.encoding`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SignatureEncodingName {
    Hex,
    Base64,
}

/// `[[endpoint.target]]`: where an endpoint's accepted events are delivered.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TargetFile {
    /// Unique within the endpoint; recorded on every delivery row.
    pub name: String,
    /// `http`; `nats` (a JetStream publish); or `handler` for a program
    /// that embeds hookinbox and registers a handler under this target's
    /// name (`delivery::HandlerRegistry`).
    pub kind: TargetKindName,
    /// `http`: the internal URL the raw body is POSTed to: `http://`, or
    /// `https://` (TLS, certificate and host name always verified).
    /// `nats`: the server, `nats://host:port`; several (one cluster)
    /// separated by commas.
    pub url: Option<String>,
    /// `http`: the Standard Webhooks secret (`whsec_…`) the internal app
    /// verifies with, inline (prefer `secret_env` or `secret_file`).
    #[serde(
        default,
        deserialize_with = "super::inline_secret::deserialize",
        skip_serializing
    )]
    pub secret: Option<SecretString>,
    /// `http`: the secret from an environment variable.
    pub secret_env: Option<String>,
    /// `http`: the secret from a file (trailing newline trimmed; relative to the config file).
    pub secret_file: Option<PathBuf>,
    /// `https` URLs: a PEM file of one or more CA certificates (relative to
    /// the config file) that are then the only roots trusted for this
    /// target. Absent: Mozilla's roots.
    pub ca_file: Option<PathBuf>,
    /// `nats`: the subject events are published to; `{endpoint}` and
    /// `{event_type}` in it are each filled in as one subject token.
    pub subject: Option<String>,
    /// `nats`: a NATS credentials file (`.creds`: user JWT and nkey seed;
    /// relative to the config file). Absent: no authentication.
    pub credentials_file: Option<PathBuf>,
    /// `http`: how long one attempt may take. `nats`: how long one attempt
    /// waits for the connection and the stream's PubAck.
    #[serde(default = "default_target_timeout", with = "humantime_serde")]
    pub timeout: Duration,
    /// Most attempts before the delivery is dead.
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    /// Oldest a delivery may get before it is dead.
    #[serde(default = "default_max_age", with = "humantime_serde")]
    pub max_age: Duration,
    /// Deliveries to this target in flight at once.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// The first retry waits up to this long; each later one up to twice
    /// the previous bound (full jitter).
    #[serde(default = "default_retry_base", with = "humantime_serde")]
    pub retry_base: Duration,
    /// Longest wait between two attempts.
    #[serde(default = "default_retry_cap", with = "humantime_serde")]
    pub retry_cap: Duration,
}

/// `target.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKindName {
    Http,
    Handler,
    Nats,
}

fn default_target_timeout() -> Duration {
    Duration::from_secs(5)
}
fn default_max_attempts() -> u32 {
    12
}
fn default_max_age() -> Duration {
    Duration::from_secs(3 * 24 * 3600)
}
fn default_concurrency() -> usize {
    8
}
fn default_retry_base() -> Duration {
    Duration::from_secs(1)
}
fn default_retry_cap() -> Duration {
    Duration::from_secs(3600)
}
