//! The PostgreSQL store, for many hookinbox processes on many machines
//! sharing one database: stateless ingress processes batching their
//! accepts, worker processes leasing with `FOR UPDATE SKIP LOCKED`, all
//! coordination in the database (unique keys, row locks, advisory locks),
//! LISTEN/NOTIFY as a wake-up hint.
//!
//! One concept per file: `url` (the connection URL, masked), `tls`
//! (`sslmode`), `pool` (options and connections), `schema` (migrations),
//! `accept` and `accept_batcher` (ingress), `outbox` (leases, settlements,
//! replay), `reader` (reads), `listen` (wake-ups), `advisory_lock` (lock
//! keys), `db_error` (errors), `rewrap` (re-sealing rows under the active
//! encryption key), `purge` (retention), `maintenance` (both behind the
//! `Maintenance` trait).

mod accept;
mod accept_batcher;
mod advisory_lock;
mod backlog;
mod db_error;
mod drift;
mod fetched;
mod first_column;
mod handler;
mod key_facts;
mod learned_secrets;
mod listen;
mod maintenance;
mod missing_database;
mod outbox;
mod overview;
mod pool;
mod purge;
mod reader;
mod rewrap;
#[cfg(test)]
mod scan_plans_tests;
mod schema;
mod stream;
mod target_gates;
mod tls;
mod url;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use deadpool_postgres::Pool;
use tokio::sync::{broadcast, mpsc, oneshot};

pub use pool::PostgresOptions;
pub use reader::PostgresReader;
pub use schema::CURRENT_VERSION as SCHEMA_VERSION;
pub use tls::TlsSetupError;
pub use url::{PostgresUrl, PostgresUrlError, SslMode};

use crate::key_check;
use crate::prepared_event::PreparedEvent;
use crate::{
    AcceptOutcome, Backlog, BacklogCounts, DeliveryWakeups, Drift, DriftQuery, DriftRepair,
    HandlerDelivery, InboxStatus, KeyCheck, KeyCheckMode, LeaseParams, LeasedDelivery, LeasedEvent,
    NewEvent, PostgresHandler, PurgeCounts, PurgeProgress, Reconciliation, Repaired,
    ReplaySelector, RetentionPolicy, RewrapProgress, SettleRequest, Settlement, Stats, Store,
    StoreError, StoreReads, StoredEvent, TargetRef,
};
use accept_batcher::{AcceptRequest, Batcher};
use db_error::PgError;
use handler::HandlerTxError;
use listen::{Listener, NOTIFY};
use outbox::CommitDurability;

/// The PostgreSQL implementation of [`Store`].
pub struct PostgresStore {
    pool: Pool,
    reader: PostgresReader,
    accept_queue: mpsc::Sender<AcceptRequest>,
    /// The schema name used in advisory lock keys ("" for the default).
    schema: String,
    notify_channel: String,
    options: PostgresOptions,
    wakeups: broadcast::Sender<()>,
    listener: Mutex<Option<Listener>>,
}

/// Brings the database to this build's schema (`hookinbox migrate`);
/// [`PostgresStore::open`] does it too. Safe to run from many processes at
/// once.
pub async fn migrate(options: &PostgresOptions) -> Result<(), StoreError> {
    let pool = options.pool()?;
    migrate_with(&pool, options).await
}

async fn migrate_with(pool: &Pool, options: &PostgresOptions) -> Result<(), StoreError> {
    let schema = options.checked_schema()?;
    let migrated = async {
        let mut client = pool.get().await?;
        schema::migrate(&mut client, schema).await
    };
    migrated.await.map_err(|error| {
        let config = options.url.driver_config();
        match missing_database::explain(&error, &config) {
            Some(message) => StoreError::open(message),
            None => StoreError::open(format!(
                "{} (schema {}): {error}",
                options.url,
                schema.unwrap_or("default")
            )),
        }
    })
}

impl PostgresStore {
    /// Connects, migrates, and starts the ingress batcher. Must be called
    /// inside a Tokio runtime.
    pub async fn open(options: PostgresOptions) -> Result<PostgresStore, StoreError> {
        let pool = options.pool()?;
        migrate_with(&pool, &options).await?;
        let schema = options.checked_schema()?.unwrap_or_default().to_owned();
        let notify_channel = listen::channel_name(options.checked_schema()?);
        let (accept_queue, requests) = mpsc::channel(options.queue_capacity.max(1));
        let batcher = Batcher {
            pool: options.ingress_pool()?,
            schema: schema.clone(),
            notify_channel: notify_channel.clone(),
            max_events: options.max_batch_events.max(1),
            max_bytes: options.max_batch_bytes,
            concurrency: options.accept_concurrency,
        };
        // Ends by itself when the store (the queue's only sender) is dropped.
        tokio::spawn(batcher.run(requests));
        let (wakeups, _) = broadcast::channel(16);
        Ok(PostgresStore {
            reader: PostgresReader::with_pool(pool.clone(), options.keys.clone()),
            pool,
            accept_queue,
            schema,
            notify_channel,
            options,
            wakeups,
            listener: Mutex::new(None),
        })
    }

    /// Reads over this store's pool (what the CLI and admin API list).
    pub fn reader(&self) -> &PostgresReader {
        &self.reader
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, PgError> {
        Ok(self.pool.get().await?)
    }

    /// One lease transaction (see `outbox::lease`).
    async fn lease_with_event_rows(
        &self,
        params: &LeaseParams,
    ) -> Result<Vec<outbox::Leased>, PgError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let leased = outbox::lease(&tx, &self.schema, params).await?;
        tx.commit().await?;
        Ok(leased)
    }

    /// Starts the LISTEN connection the first time a worker subscribes.
    fn ensure_listening(&self) {
        let Ok(mut listener) = self.listener.lock() else {
            return;
        };
        if listener.is_some() || tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let (Ok(config), Ok(tls)) = (
            self.options.driver_config(),
            tls::connector(&self.options.url),
        ) else {
            return;
        };
        *listener = Some(Listener::start(
            config,
            tls,
            self.notify_channel.clone(),
            self.wakeups.clone(),
        ));
    }
}

impl PostgresStore {
    /// Checks this store's key ring against the database (see
    /// `key_check`); in [`KeyCheckMode::Record`], when everything matches,
    /// records the check values of key ids that have none and checks
    /// again. Mismatches are in the answer, not an error:
    /// [`KeyCheck::matched`] turns them into one.
    pub async fn check_keys(&self, mode: KeyCheckMode) -> Result<KeyCheck, StoreError> {
        let before = self.reader.check_keys().await?;
        if !key_check::should_record(mode, &before) {
            return Ok(before);
        }
        let keys = self
            .options
            .keys
            .clone()
            .ok_or(StoreError::NoEncryptionKeys)?;
        let values = key_check::check_values(&keys, &before.unrecorded)?;
        let client = self.client().await?;
        key_facts::record(&client, &values).await?;
        let facts = key_facts::read(&client).await?;
        Ok(key_check::after_recording(Some(&keys), &facts, before))
    }
}

impl PostgresStore {
    /// Accepts an event and, if it is new, applies `handler` to it in the
    /// same transaction, marking it PROCESSED: both commit or neither does.
    /// Duplicates and conflicts do not run the handler. A handler error is
    /// `StoreError::Handler` and nothing of the event is stored.
    pub async fn accept_and_handle(
        &self,
        event: NewEvent,
        handler: &dyn PostgresHandler,
    ) -> Result<AcceptOutcome, StoreError> {
        let prepared = PreparedEvent::prepare(event, self.options.keys.as_ref()).await?;
        let mut client = self.client().await?;
        let accepted = async {
            let tx = client.transaction().await?;
            // The accept NOTIFYs the delivery channel itself when it
            // inserted deliveries.
            let outcome = handler::accept_and_handle(
                &tx,
                &self.schema,
                &self.notify_channel,
                &prepared,
                handler,
            )
            .await?;
            tx.commit().await?;
            Ok::<_, HandlerTxError>(outcome)
        };
        accepted.await.map_err(HandlerTxError::into_store_error)
    }

    /// Delivers a leased delivery to a library handler: in one transaction
    /// the delivery is settled DELIVERED (guarded on the lease, as every
    /// settlement is), the handler applies its change, and the event
    /// becomes PROCESSED once all its deliveries are done. All of it
    /// commits or none does. A handler error rolls everything back and is
    /// returned (`StoreError::Handler`); the caller settles it as a failed
    /// attempt.
    pub async fn deliver_to_handler(
        &self,
        lease: LeasedDelivery,
        event: StoredEvent,
        handler: &dyn PostgresHandler,
        now_ms: i64,
    ) -> Result<HandlerDelivery, StoreError> {
        let mut client = self.client().await?;
        let delivered = async {
            let tx = client.transaction().await?;
            let delivered = handler::deliver(&tx, lease, &event, handler, now_ms).await?;
            if delivered == HandlerDelivery::Applied {
                tx.commit().await?;
            }
            Ok::<_, HandlerTxError>(delivered)
        };
        delivered.await.map_err(HandlerTxError::into_store_error)
    }
}

impl PostgresStore {
    /// Re-seals up to `limit` rows that are not under the active key
    /// (plain rows included) under it, in one short transaction, and says
    /// how many are left: loop until [`RewrapProgress::is_done`]. Rows
    /// another transaction holds locked are skipped this time (see
    /// `rewrap`). Without keys: `NoEncryptionKeys`.
    pub async fn rewrap_batch(&self, limit: usize) -> Result<RewrapProgress, StoreError> {
        let keys = self
            .options
            .keys
            .clone()
            .ok_or(StoreError::NoEncryptionKeys)?;
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(PgError::from)?;
        let progress = rewrap::rewrap(&tx, &keys, limit).await?;
        tx.commit().await.map_err(PgError::from)?;
        Ok(progress)
    }
}

impl PostgresStore {
    /// Purges under `policy` at `now_ms`, up to `limit` items per rule, in
    /// one short transaction (see `purge`). Loop until
    /// [`PurgeProgress::is_done`].
    pub async fn purge_batch(
        &self,
        policy: &RetentionPolicy,
        now_ms: i64,
        limit: usize,
    ) -> Result<PurgeProgress, StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(PgError::from)?;
        let purged = purge::purge(&tx, policy, now_ms, limit).await?;
        tx.commit().await.map_err(PgError::from)?;
        let remaining = purge::preview(&client, policy, now_ms, Some(limit.max(1))).await?;
        Ok(PurgeProgress {
            purged,
            remaining,
            segments_deleted: 0,
        })
    }

    /// What [`PostgresStore::purge_batch`] would purge now, rule by rule.
    pub async fn purge_preview(
        &self,
        policy: &RetentionPolicy,
        now_ms: i64,
    ) -> Result<PurgeCounts, StoreError> {
        let client = self.client().await?;
        Ok(purge::preview(&client, policy, now_ms, None).await?)
    }
}

#[async_trait]
impl Store for PostgresStore {
    async fn accept(&self, event: NewEvent) -> Result<AcceptOutcome, StoreError> {
        let (reply, answer) = oneshot::channel();
        let request = AcceptRequest {
            event: PreparedEvent::prepare(event, self.options.keys.as_ref()).await?,
            reply,
        };
        match self.accept_queue.try_send(request) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(_)) => return Err(StoreError::Overloaded),
            Err(mpsc::error::TrySendError::Closed(_)) => return Err(StoreError::Stopped),
        }
        answer.await.map_err(|_| StoreError::Stopped)?
    }

    async fn lease(&self, params: LeaseParams) -> Result<Vec<LeasedDelivery>, StoreError> {
        let leased = self.lease_with_event_rows(&params).await?;
        Ok(leased.into_iter().map(|leased| leased.lease).collect())
    }

    /// Leases and reads the events in the same statement: one round trip
    /// for the batch instead of one per delivery.
    async fn lease_events(&self, params: LeaseParams) -> Result<Vec<LeasedEvent>, StoreError> {
        let leased = self.lease_with_event_rows(&params).await?;
        Ok(leased
            .into_iter()
            .map(|leased| LeasedEvent {
                event: self.reader.event_from_joined_row(&leased.event_row),
                lease: leased.lease,
            })
            .collect())
    }

    async fn heartbeat(&self, lease: &LeasedDelivery, until_ms: i64) -> Result<bool, StoreError> {
        let client = self.client().await?;
        Ok(outbox::heartbeat(&client, lease, until_ms).await?)
    }

    async fn settle(
        &self,
        lease: &LeasedDelivery,
        settlement: Settlement,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let request = SettleRequest {
            lease: lease.clone(),
            settlement,
            now_ms,
        };
        let settled = self.settle_many(vec![request]).await?;
        Ok(settled.first().copied().unwrap_or(false))
    }

    /// One transaction of three statements, however many requests.
    async fn settle_many(&self, requests: Vec<SettleRequest>) -> Result<Vec<bool>, StoreError> {
        if requests.is_empty() {
            return Ok(Vec::new());
        }
        let mut client = self.client().await?;
        // Unflushed unless an ordered delivery is among them (see
        // `outbox`'s module doc), set in the same round trip.
        let unflushed = requests.iter().all(|request| !request.lease.ordered);
        let settled = async {
            let tx = client.transaction().await?;
            let settled = if unflushed {
                let ((), settled) = tokio::try_join!(
                    outbox::set_commit_durability(&tx, CommitDurability::Unflushed),
                    outbox::settle_many(&tx, &requests),
                )?;
                settled
            } else {
                outbox::settle_many(&tx, &requests).await?
            };
            tx.commit().await?;
            Ok::<_, PgError>(settled)
        };
        Ok(settled.await?)
    }

    async fn reclaim_expired(&self, now_ms: i64) -> Result<u64, StoreError> {
        let client = self.client().await?;
        Ok(outbox::reclaim_expired(&client, &self.notify_channel, now_ms).await?)
    }

    async fn replay(
        &self,
        selector: ReplaySelector,
        now_ms: i64,
    ) -> Result<Vec<String>, StoreError> {
        let mut client = self.client().await?;
        let replayed = async {
            let tx = client.transaction().await?;
            let replayed = outbox::replay(&tx, &self.notify_channel, &selector, now_ms).await?;
            tx.commit().await?;
            Ok::<_, PgError>(replayed)
        };
        Ok(replayed.await?)
    }

    async fn load_event(&self, inbox_id: &str) -> Result<Option<StoredEvent>, StoreError> {
        self.reader.load_event(inbox_id).await
    }

    async fn stats(&self) -> Result<Stats, StoreError> {
        StoreReads::stats(&self.reader).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        StoreReads::ping(&self.reader).await
    }

    /// Fires on every NOTIFY of the delivery channel (from any process),
    /// and once whenever the LISTEN connection (re)connects.
    fn delivery_wakeups(&self) -> DeliveryWakeups {
        self.ensure_listening();
        DeliveryWakeups::from_receiver(self.wakeups.subscribe())
    }

    /// One autocommitted upsert of the probe row: a write that must reach
    /// the server's WAL, as every accepted event does.
    async fn probe_write(&self, now_ms: i64) -> Result<(), StoreError> {
        let client = self.client().await?;
        let probed = async {
            let statement = client
                .prepare_cached(
                    "INSERT INTO readiness_probe (id, probed_at_ms) VALUES (1, $1)
                     ON CONFLICT (id) DO UPDATE SET probed_at_ms = excluded.probed_at_ms",
                )
                .await?;
            client.execute(&statement, &[&now_ms]).await?;
            Ok::<_, PgError>(())
        };
        Ok(probed.await?)
    }

    /// Accepts waiting for the ingress batcher.
    fn commit_queue_depth(&self) -> Option<usize> {
        Some(
            self.accept_queue
                .max_capacity()
                .saturating_sub(self.accept_queue.capacity()),
        )
    }

    fn backlog_counts(self: Arc<Self>) -> Option<Arc<dyn BacklogCounts>> {
        Some(self)
    }

    fn reconciliation(self: Arc<Self>) -> Option<Arc<dyn Reconciliation>> {
        Some(self)
    }

    fn target_gates(self: Arc<Self>) -> Option<Arc<dyn crate::TargetGates>> {
        Some(self)
    }

    fn learned_secrets(self: Arc<Self>) -> Option<Arc<dyn crate::LearnedSecrets>> {
        Some(self)
    }
}

#[async_trait]
impl BacklogCounts for PostgresStore {
    async fn backlog(
        &self,
        endpoints: &[String],
        targets: &[TargetRef],
    ) -> Result<Backlog, StoreError> {
        let client = self.client().await?;
        Ok(backlog::backlog(&client, endpoints, targets).await?)
    }

    async fn count_by_status(&self, status: InboxStatus) -> Result<u64, StoreError> {
        let client = self.client().await?;
        Ok(backlog::count_by_status(&client, status).await?)
    }
}

#[async_trait]
impl Reconciliation for PostgresStore {
    async fn find_drift(&self, query: DriftQuery) -> Result<Drift, StoreError> {
        let client = self.client().await?;
        Ok(drift::find(&client, &query).await?)
    }

    /// One transaction; a NOTIFY with it when deliveries were added.
    async fn repair_drift(&self, repair: DriftRepair) -> Result<Repaired, StoreError> {
        let mut client = self.client().await?;
        let repaired = async {
            let tx = client.transaction().await?;
            let repaired = drift::repair(&tx, &repair).await?;
            if repaired.missing_deliveries > 0 || repaired.expired_leases > 0 {
                let notify = tx.prepare_cached(NOTIFY).await?;
                tx.execute(&notify, &[&self.notify_channel]).await?;
            }
            tx.commit().await?;
            Ok::<_, PgError>(repaired)
        };
        Ok(repaired.await?)
    }

    async fn known_event_ids(
        &self,
        endpoint_id: &str,
        provider_event_ids: &[String],
    ) -> Result<HashSet<String>, StoreError> {
        let client = self.client().await?;
        Ok(fetched::known_event_ids(&client, endpoint_id, provider_event_ids).await?)
    }

    async fn accept_fetched(
        &self,
        event: NewEvent,
        fetched_at_ms: i64,
    ) -> Result<AcceptOutcome, StoreError> {
        let prepared = PreparedEvent::prepare(event, self.options.keys.as_ref()).await?;
        let mut client = self.client().await?;
        let accepted = async {
            let tx = client.transaction().await?;
            // The accept NOTIFYs the delivery channel itself when it
            // inserted deliveries.
            let outcome = fetched::accept_fetched(
                &tx,
                &self.schema,
                &self.notify_channel,
                &prepared,
                fetched_at_ms,
            )
            .await?;
            tx.commit().await?;
            Ok::<_, PgError>(outcome)
        };
        Ok(accepted.await?)
    }
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}
