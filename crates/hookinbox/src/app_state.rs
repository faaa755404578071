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
}
