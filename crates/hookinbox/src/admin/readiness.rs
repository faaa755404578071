//! `/readyz`: whether this process can do its job, and if not, which check
//! fails — by name only. The cause (a database error, a path, a task's
//! name) stays in the log: a readiness answer is read by load balancers and
//! dashboards that do not need the inside of the process. The log line is
//! bounded, because a probe that fails every few seconds would otherwise
//! repeat it forever: a change of the failing checks is logged at once,
//! the same failure at most once a minute.
//!
//! The checks, each named in `failing` when it fails:
//! - `storage`: a small write commits (the store's `probe_write`: the same
//!   writer and fsync as an event), within [`CHECK_TIMEOUT`]. A read would
//!   pass while commits fail or hang on a full or frozen disk.
//! - `secrets`: the key rings are loaded — the last key reload kept a ring
//!   because a source could not be read, or an endpoint has no secret
//!   version inside its window now (its requests are answered 503).
//! - `workers`: this process's delivery tasks run: none has ended, none has
//!   been silent past its bound (`delivery::liveness`). Only where the
//!   process runs workers.
//! - `disk`: the database's filesystem has at least
//!   `storage.min_free_disk_bytes` free (SQLite; `admin::free_disk`).
//!
//! Degraded, named in `degraded` while the answer stays 200 (the process
//! still accepts events, so a load balancer keeps it):
//! - `storage_reads`: a delivery worker of this process could not read an
//!   event from our own storage in the last minute; such deliveries wait
//!   without spending attempts (`delivery::storage_faults`).

use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use hookinbox_store::Store;
use serde::Serialize;

use super::free_disk::{DiskCheck, DiskFloor};
use crate::clock;
use crate::delivery::liveness::Liveness;
use crate::json_line::JsonLine;
use crate::periodic::{spawn_every, FirstRun};
use crate::secrets::key_reload::KeyReloader;
use crate::telemetry::ReadinessChecked;

/// How long the storage check may take before it counts as failing: a
/// frozen disk must turn the probe red, not hang it.
const CHECK_TIMEOUT: Duration = Duration::from_secs(2);
/// At most one log line about failing checks per this period.
const FAILURE_LOG_PERIOD: Duration = Duration::from_secs(60);

/// The checks behind `/readyz`.
pub struct Readiness {
    store: Arc<dyn Store>,
    /// The key rings: failing (`secrets`) while the last key reload kept a
    /// ring because a source could not be read, or while an endpoint has no
    /// version inside its window.
    keys: Option<Arc<KeyReloader>>,
    /// The delivery tasks of this process, when it runs them.
    workers: Option<Arc<Liveness>>,
    /// The free-space floor of the database's filesystem (SQLite).
    disk: Option<DiskFloor>,
    failure_log: DefaultDirectRateLimiter,
    /// The checks failing at the last probe: a change is logged at once,
    /// the same failure again at most once per [`FAILURE_LOG_PERIOD`].
    last_failing: Mutex<Vec<&'static str>>,
}

/// The answer: 200 when `failing` is empty, else 503.
#[derive(Debug, Serialize)]
pub struct ReadinessReport {
    pub ready: bool,
    /// Names of the failing checks (`"storage"`, `"secrets"`, `"workers"`,
    /// `"disk"`), never their error text.
    pub failing: Vec<&'static str>,
    /// Names of what works only in part (`"storage_reads"`); left out of
    /// the answer when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub degraded: Vec<&'static str>,
}

impl Readiness {
    pub fn new(store: Arc<dyn Store>, keys: Option<Arc<KeyReloader>>) -> Readiness {
        let quota = Quota::with_period(FAILURE_LOG_PERIOD)
            .unwrap_or_else(|| Quota::per_minute(NonZeroU32::MIN));
        Readiness {
            store,
            keys,
            workers: None,
            disk: None,
            failure_log: RateLimiter::direct(quota),
            last_failing: Mutex::new(Vec::new()),
        }
    }

    /// Checks the delivery tasks registered in `liveness` too.
    pub fn workers(mut self, liveness: Arc<Liveness>) -> Readiness {
        self.workers = Some(liveness);
        self
    }

    /// Checks the free space under `floor` too.
    pub fn disk_floor(mut self, floor: DiskFloor) -> Readiness {
        self.disk = Some(floor);
        self
    }

    /// The checks this readiness runs, by name.
    fn checked(&self) -> Vec<&'static str> {
        let mut checked = vec!["storage"];
        if self.keys.is_some() {
            checked.push("secrets");
        }
        if self.workers.is_some() {
            checked.push("workers");
        }
        if self.disk.is_some() {
            checked.push("disk");
        }
        checked
    }

    /// Runs every check every `interval` until `stopping`, so the
    /// readiness gauge is fresh without a probe. The first run is one
    /// interval after start-up: a probe asks at once if it wants to.
    pub fn spawn_periodic(
        self: Arc<Self>,
        interval: Duration,
        stopping: tokio::sync::watch::Receiver<bool>,
    ) {
        spawn_every(interval, FirstRun::AfterOneInterval, stopping, move || {
            let readiness = Arc::clone(&self);
            async move {
                readiness.check().await;
            }
        });
    }

    /// Runs every check, and records each one's result in the readiness
    /// gauge.
    pub async fn check(&self) -> ReadinessReport {
        let now_ms = clock::unix_millis();
        let mut failing = Vec::new();
        let mut degraded = Vec::new();
        let mut details = Vec::new();
        let probe = tokio::time::timeout(CHECK_TIMEOUT, self.store.probe_write(now_ms)).await;
        match probe {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                failing.push("storage");
                details.push(format!("storage: {error}"));
            }
            Err(_) => {
                failing.push("storage");
                details.push(format!("storage: no commit within {CHECK_TIMEOUT:?}"));
            }
        }
        // A failed reload was logged already, naming the field.
        if let Some(keys) = &self.keys {
            let now = now_ms / 1000;
            let inactive: Vec<&str> = keys
                .endpoints()
                .values()
                .filter(|endpoint| {
                    let verifier = endpoint.verifier();
                    // A provider that serves its own keys has no secret versions.
                    !verifier.adapter().fetches_keys()
                        && verifier.keys().active(now).next().is_none()
                })
                .map(|endpoint| endpoint.id.as_str())
                .collect();
            if keys.failing() || !inactive.is_empty() {
                failing.push("secrets");
                if !inactive.is_empty() {
                    details.push(format!(
                        "secrets: no secret version in its window for {}",
                        inactive.join(", ")
                    ));
                }
            }
        }
        if let Some(workers) = &self.workers {
            let stuck = workers.failing(now_ms);
            if !stuck.is_empty() {
                failing.push("workers");
                details.push(format!("workers: ended or stuck: {}", stuck.join(", ")));
            }
            if workers.storage_faults().recent(now_ms) {
                degraded.push("storage_reads");
                details.push(
                    "storage_reads: an event could not be read from storage in the last minute; \
                     its deliveries wait (hookinbox_storage_read_faults_total, WARN log)"
                        .to_owned(),
                );
            }
        }
        if let Some(disk) = &self.disk {
            match disk.check() {
                DiskCheck::Enough => {}
                DiskCheck::Low { free_bytes } => {
                    failing.push("disk");
                    details.push(format!(
                        "disk: {free_bytes} bytes free in {}, under storage.min_free_disk_bytes ({})",
                        disk.directory.display(),
                        disk.min_free_bytes
                    ));
                }
                DiskCheck::Unknown(error) => {
                    failing.push("disk");
                    details.push(format!("disk: {error}"));
                }
            }
        }
        let changed = {
            let named: Vec<&'static str> = failing.iter().chain(&degraded).copied().collect();
            let mut last = self
                .last_failing
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let changed = *last != named;
            *last = named;
            changed
        };
        // The limiter is asked only when nothing changed: a new failure is
        // always logged, without spending the minute's line.
        if !details.is_empty() && (changed || self.failure_log.check().is_ok()) {
            tracing::warn!(
                message = "Readiness check failed.",
                checks = %failing.iter().chain(&degraded).copied().collect::<Vec<_>>().join(","),
                detail = %details.join("; ")
            );
        }
        ReadinessChecked {
            checked: &self.checked(),
            failing: &failing,
        }
        .emit();
        ReadinessReport {
            ready: failing.is_empty(),
            failing,
            degraded,
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
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;
    use hookinbox_store::{
        AcceptOutcome, LeaseParams, LeasedDelivery, NewEvent, ReplaySelector, Settlement, Stats,
        StoreError, StoredEvent,
    };

    /// A store whose writes fail, while `broken`, with text that must not
    /// reach the client; reads always work.
    #[derive(Default)]
    struct FlakyStore {
        broken: AtomicBool,
    }

    fn unused<T>() -> Result<T, StoreError> {
        Err(StoreError::Unavailable("not used by readiness".into()))
    }

    #[async_trait::async_trait]
    impl Store for FlakyStore {
        async fn accept(&self, _: NewEvent) -> Result<AcceptOutcome, StoreError> {
            unused()
        }
        async fn lease(&self, _: LeaseParams) -> Result<Vec<LeasedDelivery>, StoreError> {
            unused()
        }
        async fn heartbeat(&self, _: &LeasedDelivery, _: i64) -> Result<bool, StoreError> {
            unused()
        }
        async fn settle(
            &self,
            _: &LeasedDelivery,
            _: Settlement,
            _: i64,
        ) -> Result<bool, StoreError> {
            unused()
        }
        async fn reclaim_expired(&self, _: i64) -> Result<u64, StoreError> {
            unused()
        }
        async fn replay(&self, _: ReplaySelector, _: i64) -> Result<Vec<String>, StoreError> {
            unused()
        }
        async fn load_event(&self, _: &str) -> Result<Option<StoredEvent>, StoreError> {
            Ok(None)
        }
        async fn stats(&self) -> Result<Stats, StoreError> {
            unused()
        }
        async fn probe_write(&self, _: i64) -> Result<(), StoreError> {
            if self.broken.load(Ordering::Relaxed) {
                Err(StoreError::Unavailable(
                    "disk I/O error at /var/lib/hookinbox/inbox.db".into(),
                ))
            } else {
                Ok(())
            }
        }
    }

    async fn body(report: ReadinessReport) -> (StatusCode, String) {
        let response = report.into_response();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn a_failing_write_is_named_without_its_error_text_and_clears() {
        let store = Arc::new(FlakyStore::default());
        let readiness = Readiness::new(store.clone(), None);
        store.broken.store(true, Ordering::Relaxed);
        let (status, text) = body(readiness.check().await).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(text, "{\"ready\":false,\"failing\":[\"storage\"]}\n");
        store.broken.store(false, Ordering::Relaxed);
        let (status, text) = body(readiness.check().await).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(text, "{\"ready\":true,\"failing\":[]}\n");
    }

    #[tokio::test]
    async fn a_stuck_worker_fails_the_check_until_it_beats_again() {
        let liveness = Arc::new(Liveness::default());
        let readiness =
            Readiness::new(Arc::new(FlakyStore::default()), None).workers(Arc::clone(&liveness));
        // A loop bound of zero: silent for the minimum bound (10 s) is stuck.
        let heartbeat = liveness.register("worker lab/sink", Duration::ZERO);
        assert!(readiness.check().await.ready);
        let in_11s = clock::unix_millis() + 11_000;
        assert_eq!(liveness.failing(in_11s), vec!["worker lab/sink"]);
        drop(heartbeat);
        let report = readiness.check().await;
        assert_eq!(report.failing, vec!["workers"], "ended: failing at once");
        let _next = liveness.register("worker lab/other", Duration::ZERO);
        assert_eq!(readiness.check().await.failing, vec!["workers"]);
    }

    #[tokio::test]
    async fn a_recent_storage_read_fault_is_named_as_degraded_and_the_answer_stays_ready() {
        let liveness = Arc::new(Liveness::default());
        let readiness =
            Readiness::new(Arc::new(FlakyStore::default()), None).workers(Arc::clone(&liveness));
        let (_, text) = body(readiness.check().await).await;
        assert_eq!(text, "{\"ready\":true,\"failing\":[]}\n");
        liveness.storage_faults().record(clock::unix_millis());
        let (status, text) = body(readiness.check().await).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            text,
            "{\"ready\":true,\"failing\":[],\"degraded\":[\"storage_reads\"]}\n"
        );
    }

    #[tokio::test]
    async fn free_space_under_the_floor_fails_the_disk_check_and_clears_above_it() {
        let dir = tempfile::tempdir().unwrap();
        let floor = |min_free_bytes| DiskFloor {
            directory: dir.path().to_owned(),
            min_free_bytes,
        };
        let store: Arc<dyn Store> = Arc::new(FlakyStore::default());
        let low = Readiness::new(Arc::clone(&store), None).disk_floor(floor(u64::MAX));
        let (status, text) = body(low.check().await).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(text, "{\"ready\":false,\"failing\":[\"disk\"]}\n");
        let enough = Readiness::new(store, None).disk_floor(floor(1));
        assert!(enough.check().await.ready);
    }
}
