//! `hookinbox listen` (docs/architecture.md §7): reads one endpoint's
//! accepted events from a running instance's admin API (an SSE stream,
//! `admin/api/stream.rs`) and POSTs each, one at a time and in stream
//! order, to a local URL.
//!
//! Nothing is lost and nothing is sent twice unless the local app failed:
//! the inbox is the buffer, and the cursor of the last event the local app
//! acknowledged is saved (`state_file.rs`) before the next is sent. After a
//! dropped stream, a sleeping laptop or a restart, the stream is opened
//! again after that cursor. An event the app fails (no connection, 5xx,
//! 408, 429, no answer) is sent again, with backoff, before any later one.

mod admin_stream;
mod backoff;
mod error;
mod event_line;
mod forwarder;
mod sse_parser;
mod state_file;

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use hookinbox_verify::{Adapter, Key};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::Uri;
use secrecy::{ExposeSecret, SecretString};

pub use error::ListenError;

use crate::admin::api::{StreamReady, StreamedWebhook};
use crate::commands::output::note_line;
use crate::http_client::HttpClient;
use crate::tls::client::TrustRoots;
use admin_stream::{AdminStream, OpenError, Start};
use event_line::EventLine;
use forwarder::{Answer, Forwarder, Signing};
use sse_parser::SseParser;
use state_file::StateFile;

/// The stream sends a heartbeat every 15 s; this long without a byte
/// means the connection is gone (a laptop that slept, a proxy that dropped it).
const STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(45);
/// Connecting to either side.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The command line's options.
#[derive(Debug, Clone)]
pub struct ListenOptions {
    /// The admin listener's base URL.
    pub admin: String,
    /// The environment variable holding the admin token.
    pub token_env: Option<String>,
    pub endpoint: String,
    /// The local URL events are POSTed to.
    pub forward: String,
    /// The environment variable holding the local `whsec_` secret.
    pub secret_env: Option<String>,
    pub original_headers: bool,
    /// Where to start when there is no saved cursor.
    pub since: Option<String>,
    pub state: Option<PathBuf>,
    pub json: bool,
}

/// Runs until SIGINT or SIGTERM (`Ok`), or an error that retrying cannot
/// fix (a wrong token, no such endpoint, a state file it cannot write).
pub async fn run(options: ListenOptions, out: &mut impl Write) -> Result<(), ListenError> {
    let listener = Listener::build(&options)?;
    tokio::select! {
        result = listener.run(out) => result,
        () = stop_signal() => Ok(()),
    }
}

async fn stop_signal() {
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signal) => signal,
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

struct Listener {
    stream: AdminStream,
    forwarder: Forwarder,
    state: StateFile,
    since: Option<String>,
    json: bool,
}

impl Listener {
    fn build(options: &ListenOptions) -> Result<Listener, ListenError> {
        let admin_uri: Uri = options
            .admin
            .parse()
            .map_err(|_| ListenError::AdminUrl("not a URL".into()))?;
        let forward: Uri = options
            .forward
            .parse()
            .map_err(|_| ListenError::ForwardUrl("not a URL".into()))?;
        let token = match &options.token_env {
            Some(name) => Some(SecretString::from(
                std::env::var(name).map_err(|_| ListenError::TokenMissing(name.clone()))?,
            )),
            None => None,
        };
        let signing = match (&options.secret_env, options.original_headers) {
            (_, true) => {
                note_line(format_args!(
                    "note: --original-headers passes the provider's signature headers as received; \
                     their signed timestamps age, so an app that checks them refuses events older \
                     than its tolerance"
                ));
                Signing::OriginalHeaders
            }
            (Some(name), false) => {
                let secret = SecretString::from(
                    std::env::var(name).map_err(|_| ListenError::SecretMissing(name.clone()))?,
                );
                match hookinbox_verify::providers::standard::STANDARD
                    .parse_key(secret.expose_secret())
                {
                    Ok(Key::Hmac(key)) => Signing::StandardWebhooks(key),
                    Ok(_) => {
                        return Err(ListenError::SecretFormat("expected a whsec_ (HMAC) secret"))
                    }
                    Err(_) => {
                        return Err(ListenError::SecretFormat(
                            "expected a whsec_ secret (base64 after whsec_)",
                        ))
                    }
                }
            }
            (None, false) => return Err(ListenError::NoSecret),
        };
        let state_path = match &options.state {
            Some(path) => path.clone(),
            None => state_file::default_path(&options.endpoint)?,
        };
        Ok(Listener {
            stream: AdminStream::new(
                client_for(&admin_uri, ListenError::AdminUrl)?,
                &options.admin,
                &options.endpoint,
                token,
            ),
            forwarder: Forwarder::new(
                forward.clone(),
                client_for(&forward, ListenError::ForwardUrl)?,
                signing,
            ),
            state: StateFile::new(state_path, &options.admin, &options.endpoint),
            since: options.since.clone(),
            json: options.json,
        })
    }

    async fn run(&self, out: &mut impl Write) -> Result<(), ListenError> {
        let mut cursor = self.state.load()?;
        let mut failed_opens = 0u32;
        loop {
            let start = match (&cursor, &self.since) {
                (Some(cursor), _) => Start::After(cursor.clone()),
                (None, Some(since)) => Start::Since(since.clone()),
                (None, None) => Start::Now,
            };
            let ended = match self.stream.open(&start).await {
                Ok(body) => {
                    failed_opens = 0;
                    note_line(format_args!(
                        "listening (state {})",
                        self.state.path().display()
                    ));
                    self.read(body, &mut cursor, out).await?
                }
                Err(OpenError::Fatal(error)) => return Err(error),
                Err(OpenError::Retry(why)) => why,
            };
            let wait = backoff::delay(
                failed_opens,
                Duration::from_millis(250),
                Duration::from_secs(10),
            );
            failed_opens = failed_opens.saturating_add(1);
            note_line(format_args!(
                "stream: {ended}; again in {} ms",
                wait.as_millis()
            ));
            tokio::time::sleep(wait).await;
        }
    }

    /// Reads one opened stream until it ends; answers why it ended.
    async fn read(
        &self,
        mut body: Incoming,
        cursor: &mut Option<String>,
        out: &mut impl Write,
    ) -> Result<String, ListenError> {
        let mut parser = SseParser::default();
        loop {
            let frame = match tokio::time::timeout(STREAM_IDLE_TIMEOUT, body.frame()).await {
                Err(_) => return Ok(format!("nothing for {} s", STREAM_IDLE_TIMEOUT.as_secs())),
                Ok(None) => return Ok("closed by the admin listener".into()),
                Ok(Some(Err(error))) => return Ok(format!("broken: {error}")),
                Ok(Some(Ok(frame))) => frame,
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            let Ok(events) = parser.push(&data) else {
                return Ok("an event too large".into());
            };
            for event in events {
                match event.name.as_str() {
                    "ready" if cursor.is_none() => {
                        // Saved at once: a restart before the first event
                        // resumes here instead of at a later "now".
                        let Ok(ready) = serde_json::from_str::<StreamReady>(&event.data) else {
                            return Ok("a ready event listen cannot read".into());
                        };
                        self.state.save(&ready.cursor)?;
                        *cursor = Some(ready.cursor);
                    }
                    "webhook" => {
                        let Ok(webhook) = serde_json::from_str::<StreamedWebhook>(&event.data)
                        else {
                            return Ok("an event listen cannot read".into());
                        };
                        self.deliver(&webhook, out).await?;
                        self.state.save(&webhook.cursor)?;
                        *cursor = Some(webhook.cursor);
                    }
                    _ => {}
                }
            }
        }
    }

    /// Sends one event until the local app answers for good.
    async fn deliver(
        &self,
        webhook: &StreamedWebhook,
        out: &mut impl Write,
    ) -> Result<(), ListenError> {
        let mut attempt = 0u32;
        loop {
            let (answer, latency) = self
                .forwarder
                .send(webhook, crate::clock::unix_seconds())
                .await;
            let retry_in = matches!(answer, Answer::Failed { .. }).then(|| {
                backoff::delay(attempt, Duration::from_millis(100), Duration::from_secs(2))
            });
            attempt += 1;
            EventLine::new(webhook, &answer, latency, attempt, retry_in)
                .write(self.json, out)
                .map_err(ListenError::Output)?;
            match retry_in {
                Some(wait) => tokio::time::sleep(wait).await,
                None => return Ok(()),
            }
        }
    }
}

/// A client for the URL's scheme: plain, or TLS with Mozilla's roots.
fn client_for(uri: &Uri, error: fn(String) -> ListenError) -> Result<HttpClient, ListenError> {
    match uri.scheme_str() {
        Some("http") => Ok(HttpClient::plain(CONNECT_TIMEOUT)),
        Some("https") => Ok(HttpClient::tls(CONNECT_TIMEOUT, TrustRoots::Mozilla)?),
        _ => Err(error("expected an http:// or https:// URL".into())),
    }
}
