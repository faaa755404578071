//! `/readyz`: whether this process can do its job, and if not, which check
//! fails — by name only. The cause (a database error, a path) stays in the
//! log: a readiness answer is read by load balancers and dashboards that do
//! not need the inside of the process. The log line is bounded, because a
//! probe that fails every few seconds would otherwise repeat it forever.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use hookinbox_store::Store;
use serde::Serialize;

use crate::json_line::JsonLine;
use crate::key_reload::KeyReloader;

/// How long the storage check may take before it counts as failing: a
/// frozen disk must turn the probe red, not hang it.
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);
/// At most one log line about failing checks per this period.
const FAILURE_LOG_PERIOD: Duration = Duration::from_secs(60);

/// The checks behind `/readyz`.
pub struct Readiness {
    store: Arc<dyn Store>,
    /// The key rings: failing (`secrets`) while the last key reload kept a
    /// ring because a source could not be read.
    keys: Option<Arc<KeyReloader>>,
    failure_log: DefaultDirectRateLimiter,
}

/// The answer: 200 when `failing` is empty, else 503.
#[derive(Debug, Serialize)]
pub struct ReadinessReport {
    pub ready: bool,
    /// Names of the failing checks (`"storage"`, `"secrets"`), never their
    /// error text.
    pub failing: Vec<&'static str>,
}

impl Readiness {
    pub fn new(store: Arc<dyn Store>, keys: Option<Arc<KeyReloader>>) -> Readiness {
        let quota = Quota::with_period(FAILURE_LOG_PERIOD)
            .unwrap_or_else(|| Quota::per_minute(NonZeroU32::MIN));
        Readiness {
            store,
            keys,
            failure_log: RateLimiter::direct(quota),
        }
    }

    /// Runs every check. The storage check is the store's `ping`: one cheap
    /// round trip to the database. The secrets check is the outcome of the
    /// last key reload.
    pub async fn check(&self) -> ReadinessReport {
        let storage = match tokio::time::timeout(CHECK_TIMEOUT, self.store.ping()).await {
            Ok(Ok(_)) => None,
            Ok(Err(error)) => Some(error.to_string()),
            Err(_) => Some(format!("no answer within {CHECK_TIMEOUT:?}")),
        };
        let mut failing = Vec::new();
        if let Some(detail) = storage {
            if self.failure_log.check().is_ok() {
                tracing::warn!(
                    message = "Readiness check failed.",
                    check = "storage",
                    %detail
                );
            }
            failing.push("storage");
        }
        // Already logged, naming the field, by the reload that failed.
        if self.keys.as_ref().is_some_and(|keys| keys.failing()) {
            failing.push("secrets");
        }
        ReadinessReport {
            ready: failing.is_empty(),
            failing,
        }
    }
}

impl IntoResponse for ReadinessReport {
    fn into_response(self) -> Response {
        let status = if self.ready {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        (status, JsonLine(self)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookinbox_store::{
        AcceptOutcome, LeaseParams, LeasedDelivery, NewEvent, ReplaySelector, Settlement, Stats,
        StoreError, StoredEvent,
    };

    /// A store whose every call fails with text that must not reach the client.
    struct FailingStore;

    fn broken<T>() -> Result<T, StoreError> {
        Err(StoreError::Unavailable(
            "disk I/O error at /var/lib/hookinbox/inbox.db".into(),
        ))
    }

    #[async_trait::async_trait]
    impl Store for FailingStore {
        async fn accept(&self, _: NewEvent) -> Result<AcceptOutcome, StoreError> {
            broken()
        }
        async fn lease(&self, _: LeaseParams) -> Result<Vec<LeasedDelivery>, StoreError> {
            broken()
        }
        async fn heartbeat(&self, _: &LeasedDelivery, _: i64) -> Result<bool, StoreError> {
            broken()
        }
        async fn settle(
            &self,
            _: &LeasedDelivery,
            _: Settlement,
            _: i64,
        ) -> Result<bool, StoreError> {
            broken()
        }
        async fn reclaim_expired(&self, _: i64) -> Result<u64, StoreError> {
            broken()
        }
        async fn replay(&self, _: ReplaySelector, _: i64) -> Result<Vec<String>, StoreError> {
            broken()
        }
        async fn load_event(&self, _: &str) -> Result<Option<StoredEvent>, StoreError> {
            broken()
        }
        async fn stats(&self) -> Result<Stats, StoreError> {
            broken()
        }
    }

    #[tokio::test]
    async fn a_failing_store_is_named_without_its_error_text() {
        let readiness = Readiness::new(Arc::new(FailingStore), None);
        let response = readiness.check().await.into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        assert_eq!(&body[..], b"{\"ready\":false,\"failing\":[\"storage\"]}\n");
    }
}
