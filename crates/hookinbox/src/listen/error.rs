//! Why `hookinbox listen` stopped. Failures it rides out (the stream
//! dropping, the local app down) are retried in the loop, not errors.

use std::path::PathBuf;

/// A reason `listen` cannot go on; each names what to fix.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error("--admin: {0}")]
    AdminUrl(String),
    #[error("--forward: {0}")]
    ForwardUrl(String),
    #[error("--token-env: the environment variable {0} is not set")]
    TokenMissing(String),
    #[error("--secret-env: the environment variable {0} is not set")]
    SecretMissing(String),
    #[error("--secret-env: {0}")]
    SecretFormat(&'static str),
    #[error("--secret-env is needed to sign what is forwarded (or pass --original-headers)")]
    NoSecret,
    #[error("the admin listener refused the token (401): check --token-env")]
    Unauthorized,
    #[error("the admin listener has no endpoint {0:?} (404)")]
    NoSuchEndpoint(String),
    /// A 4xx the request cannot recover from by being sent again.
    #[error("the admin listener refused the stream ({status}): {body}")]
    Refused { status: u16, body: String },
    #[error("TLS for the admin listener: {0}")]
    Tls(#[from] rustls::Error),
    #[error("the state file {path}: {source}")]
    State {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the state file {path} is not one listen wrote: {detail}")]
    StateFormat { path: PathBuf, detail: String },
    #[error(
        "the state file {path} is for {admin} endpoint {endpoint}; pass another --state for this one"
    )]
    StateMismatch {
        path: PathBuf,
        admin: String,
        endpoint: String,
    },
    #[error("no state directory: set --state, XDG_STATE_HOME or HOME")]
    NoStateDirectory,
    #[error("writing to stdout: {0}")]
    Output(std::io::Error),
}
