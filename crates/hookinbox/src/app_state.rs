//! What every request handler shares.

use std::sync::Arc;
use std::time::Duration;

use hookinbox_store::Store;

use crate::endpoint::Endpoints;
use crate::ingress::body::Linger;
use crate::ingress::body_budget::BodyBudget;
use crate::ingress::body_pace::BodyPace;
use crate::ingress::client_address::TrustedProxies;
use crate::ingress::client_refusals::ClientRefusals;
use crate::ingress::refusal_log::RefusalLog;

#[derive(Clone)]
pub struct AppState {
    pub endpoints: Arc<Endpoints>,
    pub store: Arc<dyn Store>,
    /// The global in-flight body budget.
    pub bodies: BodyBudget,
    /// How fast a body must arrive.
    pub body_pace: BodyPace,
    /// How the unread rest of an answered request's body is drained.
    pub linger: Linger,
    /// Per-client limit on refused (unverified) requests.
    pub clients: Arc<ClientRefusals>,
    /// Whose `X-Forwarded-For` names the client.
    pub trusted_proxies: Arc<TrustedProxies>,
    /// Bounds the log lines of refused requests.
    pub refusals: Arc<RefusalLog>,
    /// Longest a request waits for its commit before it is answered 503.
    pub commit_timeout: Duration,
    /// Bounds the log lines of requests refused for storage trouble, apart
    /// from `refusals` so a flood of forged requests cannot hide them.
    pub storage_refusals: Arc<RefusalLog>,
}
