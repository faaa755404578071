//! What every request handler shares.

use std::sync::Arc;
use std::time::Duration;

use hookinbox_store::Store;

use crate::config;
use crate::endpoint::Endpoints;
use crate::ingress::body::Linger;
use crate::ingress::body_budget::BodyBudget;
use crate::ingress::body_pace::BodyPace;
use crate::ingress::client_address::TrustedProxies;
use crate::ingress::client_refusals::ClientRefusals;
use crate::ingress::refusal_log::RefusalLog;
use crate::key_fetch::KeyCache;

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
    /// The keys providers serve from their own hosts (PayPal, AWS SNS),
    /// fetched and cached for every endpoint (docs/architecture.md §3).
    pub provider_keys: KeyCache,
}

impl AppState {
    /// The public listener's state: `endpoints` over `store`, with the
    /// limits of `settings`; a commit that takes longer than
    /// `commit_timeout` is answered 503. `serve` and the router tests build
    /// it the same way.
    pub fn new(
        endpoints: Endpoints,
        store: Arc<dyn Store>,
        settings: &config::Server,
        commit_timeout: Duration,
    ) -> AppState {
        AppState {
            endpoints: Arc::new(endpoints),
            store,
            bodies: BodyBudget::new(settings.max_inflight_body_bytes.get() as usize),
            body_pace: BodyPace {
                grace: settings.body_rate_grace,
                min_bytes_per_second: settings.min_body_bytes_per_second.get(),
                max_duration: settings.body_read_timeout,
            },
            linger: Linger {
                timeout: settings.linger_timeout,
                max_bytes: settings.linger_max_bytes,
            },
            clients: Arc::new(ClientRefusals::new(
                settings.unverified_rate_limit.per_second,
                settings.unverified_rate_limit.burst,
            )),
            trusted_proxies: Arc::new(TrustedProxies::new(settings.trusted_proxies.clone())),
            refusals: Arc::default(),
            commit_timeout,
            storage_refusals: Arc::default(),
            provider_keys: KeyCache::from_environment(),
        }
    }
}
