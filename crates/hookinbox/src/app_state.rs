//! What every request handler shares.

use std::sync::Arc;
use std::time::Duration;

use hookinbox_store::Store;

use crate::endpoint::Endpoints;
use crate::ingress::refusal_log::RefusalLog;

#[derive(Clone)]
pub struct AppState {
    pub endpoints: Arc<Endpoints>,
    pub store: Arc<dyn Store>,
    /// Time allowed to receive a whole body.
    pub body_read_timeout: Duration,
    /// Bounds the log lines of refused requests.
    pub refusals: Arc<RefusalLog>,
    /// Longest a request waits for its commit before it is answered 503.
    pub commit_timeout: Duration,
    /// Bounds the log lines of requests refused for storage trouble, apart
    /// from `refusals` so a flood of forged requests cannot hide them.
    pub storage_refusals: Arc<RefusalLog>,
}
