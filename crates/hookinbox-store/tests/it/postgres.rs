//! PostgreSQL-only behaviour: many processes on one database (each
//! `PostgresStore` here has its own pool and batcher, as a process would),
//! migrations racing, a lost database, LISTEN/NOTIFY, TLS. What every
//! backend must do is in `conformance.rs`.

use crate::support;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hookinbox_store::postgres::{self, PostgresUrl};
use hookinbox_store::{
    AcceptOutcome, HandledEvent, HandlerDelivery, HandlerError, PostgresHandler, PostgresOptions,
    PostgresReader, PostgresStore, ReplaySelector, RetentionPolicy, Settlement, Store, StoreError,
    StoreReads,
};
use support::cut_proxy::CutProxy;
use support::{event, event_for_target, inserted, lease_params, postgres_url, TestSchema};

/// Bounds every test: a hang fails instead of stalling the suite.
const DEADLINE: Duration = Duration::from_secs(30);

async fn open(schema: &TestSchema) -> Arc<dyn Store> {
    Arc::new(PostgresStore::open(schema.options()).await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_processes_migrating_at_once_apply_each_migration_once() {
    let schema = TestSchema::new();
    let opening: Vec<_> = (0..10)
        .map(|_| {
            let mut options = schema.options();
            options.pool_size = 1;
            tokio::spawn(async move { PostgresStore::open(options).await })
        })
        .collect();
    let mut stores = Vec::new();
    for task in opening {
        stores.push(task.await.unwrap().expect("every process opens"));
    }
    let versions = schema
        .query("SELECT version FROM schema_migrations ORDER BY version")
        .await;
    let versions: Vec<i32> = versions.iter().map(|row| row.get(0)).collect();
    let expected: Vec<i32> = (1..=postgres::SCHEMA_VERSION as i32).collect();
    assert_eq!(versions, expected);
    // Bodies are stored out of line without compression (migration 3).
    let storage = schema
        .query(
            "SELECT a.attstorage::text FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid \
             WHERE c.relname = 'inbox_payload' AND c.relnamespace = current_schema()::regnamespace \
             AND a.attname = 'payload'",
        )
        .await;
    assert_eq!(storage[0].get::<_, String>(0), "e");
    // And the schema they agreed on works.
    let store: &dyn Store = &stores[7];
    assert!(matches!(
        store.accept(event("a", "e1", b"{}")).await.unwrap(),
        AcceptOutcome::Inserted { .. }
    ));
}

/// Migration 8 gives the bodies stored before it their event's age (the
/// raw payload rule finds bodies by it), so they are purged like new ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_stored_before_migration_8_are_found_by_the_raw_payload_rule() {
    let schema = TestSchema::new();
    let store = open(&schema).await;
    let old = inserted(&store, event("a", "before-8", b"{\"old\":1}")).await;
    drop(store);
    // Back to schema 7, as a database written by an earlier release
    // (migration 9 undone too: it dropped `delivery_inbox`; and 10, 11, 12).
    schema
        .execute(
            "ALTER TABLE inbox DROP COLUMN not_routed, DROP COLUMN trace_parent, \
             DROP COLUMN stream_xact; \
             DROP TABLE target_gate, learned_secret; \
             ALTER TABLE inbox_payload DROP COLUMN payload_format, DROP COLUMN payload_raw_len; \
             DROP TABLE encryption_key_check; \
             DROP INDEX inbox_payload_received, inbox_key_id, delivery_dead; \
             ALTER TABLE inbox_payload DROP COLUMN received_at_ms; \
             CREATE INDEX delivery_inbox ON delivery (inbox_id); \
             DELETE FROM schema_migrations WHERE version >= 8",
        )
        .await;
    let store = Arc::new(PostgresStore::open(schema.options()).await.unwrap());
    let received: Vec<i64> = schema
        .query("SELECT received_at_ms FROM inbox_payload")
        .await
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(received, [event("a", "x", b"{}").received_at_ms]);
    let policy = RetentionPolicy {
        raw_payload: Some(Duration::from_secs(1)),
        dedup: None,
        dead_deliveries: None,
    };
    let progress = store
        .purge_batch(&policy, 1_800_000_000_000, 10)
        .await
        .unwrap();
    assert_eq!(progress.purged.raw_payloads, 1);
    let stored = store.load_event(&old).await.unwrap().unwrap();
    assert_eq!(stored.payload, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_newer_than_the_build_is_refused() {
    let schema = TestSchema::new();
    drop(PostgresStore::open(schema.options()).await.unwrap());
    schema
        .query("INSERT INTO schema_migrations (version) VALUES (999)")
        .await;
    let error = PostgresStore::open(schema.options()).await.unwrap_err();
    assert!(matches!(error, StoreError::Open(_)), "{error:?}");
    assert!(error.to_string().contains("schema version 999"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_copies_over_two_processes_make_one_row() {
    let schema = TestSchema::new();
    let processes = [open(&schema).await, open(&schema).await];
    let copies: Vec<_> = (0..1_000)
        .map(|n| {
            let store = Arc::clone(&processes[n % 2]);
            tokio::spawn(async move { store.accept(event("a", "evt_1", b"{\"n\":1}")).await })
        })
        .collect();
    let mut inserted = 0;
    let mut ids = HashSet::new();
    for copy in copies {
        match tokio::time::timeout(DEADLINE, copy).await.unwrap().unwrap() {
            Ok(AcceptOutcome::Inserted { id }) => {
                inserted += 1;
                ids.insert(id);
            }
            Ok(AcceptOutcome::Duplicate { id }) => {
                ids.insert(id);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(inserted, 1);
    assert_eq!(ids.len(), 1, "every copy names the one row");
    let rows = schema.query("SELECT count(*) FROM inbox").await;
    assert_eq!(rows[0].get::<_, i64>(0), 1);
    let payloads = schema.query("SELECT count(*) FROM inbox_payload").await;
    assert_eq!(payloads[0].get::<_, i64>(0), 1, "the body written once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_under_new_unsigned_ids_over_two_processes_make_one_row() {
    let schema = TestSchema::new();
    let processes = [open(&schema).await, open(&schema).await];
    let t0 = 1_700_000_000_000;
    let copies: Vec<_> = (0..200)
        .map(|n| {
            let store = Arc::clone(&processes[n % 2]);
            let copy =
                support::unsigned_id_event(&format!("d-{n}"), b"{\"push\":1}", t0 + n as i64);
            tokio::spawn(async move { store.accept(copy).await })
        })
        .collect();
    let mut ids = HashSet::new();
    for copy in copies {
        match tokio::time::timeout(DEADLINE, copy).await.unwrap().unwrap() {
            Ok(AcceptOutcome::Inserted { id } | AcceptOutcome::Duplicate { id }) => {
                ids.insert(id);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(ids.len(), 1, "one row for every copy: {ids:?}");
    let rows = schema.query("SELECT count(*) FROM inbox").await;
    assert_eq!(rows[0].get::<_, i64>(0), 1);
}

/// Two worker processes lease and deliver while a third inserts versions
/// of a few objects out of order: no object ever has two versions in
/// flight, and each object's delivered versions only go up (the versions
/// overtaken are skipped as stale).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_leasing_keep_each_object_in_order() {
    const OBJECTS: usize = 4;
    const VERSIONS: i64 = 25;
    let schema = TestSchema::new();
    let ingress = open(&schema).await;
    // Each lease holds its rows a while before committing, so another
    // worker's lease — and new, lower versions arriving — fall inside the
    // window where a snapshot-only decision would go wrong.
    schema
        .execute(
            "CREATE FUNCTION slow_lease() RETURNS trigger LANGUAGE plpgsql AS
                 $$ BEGIN PERFORM pg_sleep(0.01); RETURN NEW; END $$;
             CREATE TRIGGER slow_lease BEFORE UPDATE OF status ON delivery
                 FOR EACH ROW WHEN (NEW.status = 'LEASED') EXECUTE FUNCTION slow_lease()",
        )
        .await;
    let in_flight: Arc<Mutex<HashSet<String>>> = Arc::default();
    let delivered: Arc<Mutex<HashMap<String, Vec<i64>>>> = Arc::default();
    let ingest_finished = Arc::new(AtomicBool::new(false));

    let ingest = {
        let ingress = Arc::clone(&ingress);
        let ingest_finished = Arc::clone(&ingest_finished);
        async move {
            // Each object's versions arrive in a scrambled order.
            for step in 0..VERSIONS {
                for object in 0..OBJECTS {
                    let version = (step * 7 + object as i64 * 3) % VERSIONS + 1;
                    let id = format!("o{object}-v{version}");
                    let e = event_for_target(&id, Some((&format!("obj{object}"), version)));
                    ingress.accept(e).await.unwrap();
                }
            }
            ingest_finished.store(true, Ordering::SeqCst);
        }
    };
    let work = |worker: Arc<dyn Store>, name: &'static str| {
        let in_flight = Arc::clone(&in_flight);
        let delivered = Arc::clone(&delivered);
        let ingest_finished = Arc::clone(&ingest_finished);
        async move {
            let mut now = 1_000;
            loop {
                let leased = worker.lease(lease_params(name, now)).await.unwrap();
                if leased.is_empty() {
                    let finished = ingest_finished.load(Ordering::SeqCst);
                    let stats = worker.stats().await.unwrap();
                    if finished && !stats.by_status.contains_key("ACCEPTED") {
                        return;
                    }
                    // Pacing only: the other worker or the ingest moves on.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    continue;
                }
                let mut objects = Vec::new();
                for lease in &leased {
                    let stored = worker.load_event(&lease.inbox_id).await.unwrap().unwrap();
                    let object = stored.object_id.unwrap();
                    assert!(
                        in_flight.lock().unwrap().insert(object.clone()),
                        "{object} leased while another version of it is in flight"
                    );
                    objects.push((object, stored.object_version.unwrap()));
                }
                for (lease, (object, version)) in leased.iter().zip(objects) {
                    delivered
                        .lock()
                        .unwrap()
                        .entry(object.clone())
                        .or_default()
                        .push(version);
                    in_flight.lock().unwrap().remove(&object);
                    assert!(worker
                        .settle(lease, Settlement::Delivered, now)
                        .await
                        .unwrap());
                }
                now += 1;
            }
        }
    };
    let (w0, w1) = (open(&schema).await, open(&schema).await);
    tokio::time::timeout(DEADLINE, async {
        tokio::join!(ingest, work(w0, "w0"), work(w1, "w1"));
    })
    .await
    .expect("every event finished in time");

    let delivered = delivered.lock().unwrap().clone();
    assert_eq!(delivered.len(), OBJECTS);
    for (object, versions) in delivered.iter() {
        assert!(
            versions.windows(2).all(|pair| pair[0] < pair[1]),
            "{object} delivered out of order: {versions:?}"
        );
        assert_eq!(versions.last(), Some(&VERSIONS), "{object}");
    }
    let stats = ingress.stats().await.unwrap();
    assert_eq!(
        stats.by_status.get("PROCESSED").copied(),
        Some(OBJECTS as u64 * VERSIONS as u64),
        "every version delivered or skipped as stale"
    );
}

/// Two workers in two processes settle the two deliveries of one event at
/// the same moment; each transaction alone sees the other delivery still
/// in flight. The event must still end PROCESSED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_targets_settled_at_once_by_two_processes_finish_the_event() {
    let schema = TestSchema::new();
    let ingress = open(&schema).await;
    // Each settlement holds its row a while before committing, so the two
    // transactions overlap.
    schema
        .execute(
            "CREATE FUNCTION slow_settle() RETURNS trigger LANGUAGE plpgsql AS
                 $$ BEGIN PERFORM pg_sleep(0.05); RETURN NEW; END $$;
             CREATE TRIGGER slow_settle BEFORE UPDATE OF status ON delivery
                 FOR EACH ROW WHEN (NEW.status = 'DELIVERED') EXECUTE FUNCTION slow_settle()",
        )
        .await;
    let (w0, w1) = (open(&schema).await, open(&schema).await);
    for n in 0..5 {
        let mut e = event_for_target(&format!("two-{n}"), None);
        e.targets = vec!["t".into(), "u".into()];
        ingress.accept(e).await.unwrap();
    }
    let on_t = w0.lease(lease_params("w0", 1_000)).await.unwrap();
    let mut on_u_params = lease_params("w1", 1_000);
    on_u_params.target = "u".into();
    let on_u = w1.lease(on_u_params).await.unwrap();
    assert_eq!((on_t.len(), on_u.len()), (5, 5));
    let settle = |worker: Arc<dyn Store>, leases: Vec<hookinbox_store::LeasedDelivery>| async move {
        for lease in leases {
            assert!(worker
                .settle(&lease, Settlement::Delivered, 1_001)
                .await
                .unwrap());
        }
    };
    tokio::time::timeout(DEADLINE, async {
        tokio::join!(settle(w0, on_t), settle(w1, on_u));
    })
    .await
    .expect("bounded");
    let stats = ingress.stats().await.unwrap();
    assert_eq!(stats.by_status.get("PROCESSED"), Some(&5), "{stats:?}");
}

/// Options for a store that reaches the test server through `proxy`.
fn options_via(schema: &TestSchema, proxy: &CutProxy) -> PostgresOptions {
    let config: tokio_postgres::Config = postgres_url().parse().unwrap();
    let user = config.get_user().unwrap_or("postgres");
    let dbname = config.get_dbname().unwrap_or(user);
    let url = format!("postgres://{user}@{}/{dbname}?sslmode=disable", proxy.addr);
    let mut options = schema.options();
    options.url = PostgresUrl::parse(&url).unwrap();
    options.password = config
        .get_password()
        .map(|p| String::from_utf8_lossy(p).into_owned().into());
    options.connect_timeout = Duration::from_millis(500);
    options
}

fn upstream() -> String {
    let config: tokio_postgres::Config = postgres_url().parse().unwrap();
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
        _ => "127.0.0.1".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!("{host}:{port}")
}

/// One accept of [`load`]: when the call started and ended, and its answer.
struct Answer {
    started: tokio::time::Instant,
    ended: tokio::time::Instant,
    id: String,
    outcome: Result<AcceptOutcome, StoreError>,
}

/// Accepts distinct events from a few tasks until `stop`; every answer.
async fn load(
    store: Arc<dyn Store>,
    prefix: &'static str,
    stop: Arc<tokio::sync::Notify>,
) -> Vec<Answer> {
    let tasks: Vec<_> = (0..8)
        .map(|task| {
            let store = Arc::clone(&store);
            let stop = Arc::clone(&stop);
            tokio::spawn(async move {
                let mut answers = Vec::new();
                let stopped = stop.notified();
                tokio::pin!(stopped);
                for n in 0.. {
                    let id = format!("{prefix}-{task}-{n}");
                    let started = tokio::time::Instant::now();
                    tokio::select! {
                        _ = &mut stopped => break,
                        outcome = store.accept(event("a", &id, b"{}")) => {
                            let ended = tokio::time::Instant::now();
                            answers.push(Answer { started, ended, id, outcome });
                        }
                    }
                    tokio::task::yield_now().await;
                }
                answers
            })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        answers.extend(task.await.unwrap());
    }
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_database_only_fails_while_it_is_gone_and_the_store_recovers() {
    let schema = TestSchema::new();
    let proxy = CutProxy::start(upstream()).await;
    let store: Arc<dyn Store> = Arc::new(
        PostgresStore::open(options_via(&schema, &proxy))
            .await
            .unwrap(),
    );
    tokio::time::timeout(DEADLINE, async {
        let stop = Arc::new(tokio::sync::Notify::new());
        let running = tokio::spawn(load(Arc::clone(&store), "x", Arc::clone(&stop)));
        tokio::time::sleep(Duration::from_millis(200)).await;
        proxy.cut().await;
        let cut_at = tokio::time::Instant::now();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mended_at = tokio::time::Instant::now();
        proxy.mend();
        // Load goes on until an accept started after mending succeeded.
        loop {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let probe = store.accept(event("a", "probe", b"{}")).await;
            if probe.is_ok() {
                break;
            }
        }
        stop.notify_waiters();
        let answers = running.await.unwrap();

        let mut acknowledged = Vec::new();
        let mut failed_while_cut = 0;
        for Answer {
            started,
            ended,
            id,
            outcome,
        } in &answers
        {
            // The whole call ran while the database was out of reach.
            let cut = *started >= cut_at && *ended < mended_at;
            match outcome {
                Ok(AcceptOutcome::Inserted { .. }) => {
                    assert!(!cut, "{id} acknowledged while the line was cut");
                    acknowledged.push(id.clone());
                }
                Ok(other) => panic!("{id}: {other:?}"),
                Err(StoreError::Unavailable(_)) => failed_while_cut += usize::from(cut),
                Err(other) => panic!("{id}: {other:?}"),
            }
        }
        assert!(failed_while_cut > 0, "the cut was noticed");
        assert!(acknowledged.len() > 10, "load ran: {}", acknowledged.len());
        let stored: HashSet<String> = schema
            .query("SELECT provider_event_id FROM inbox")
            .await
            .iter()
            .map(|row| row.get(0))
            .collect();
        for id in &acknowledged {
            assert!(
                stored.contains(id),
                "{id} was acknowledged but is not stored"
            );
        }
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_killed_mid_load_lose_no_acknowledged_event() {
    let schema = TestSchema::new();
    let options = schema.options();
    let store: Arc<dyn Store> = Arc::new(PostgresStore::open(options.clone()).await.unwrap());
    tokio::time::timeout(DEADLINE, async {
        let stop = Arc::new(tokio::sync::Notify::new());
        let running = tokio::spawn(load(Arc::clone(&store), "k", Arc::clone(&stop)));
        let mut killed = 0;
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let rows = schema
                .query(&format!(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                     WHERE application_name = '{}'",
                    options.application_name
                ))
                .await;
            killed += rows[0].get::<_, i64>(0);
        }
        // Recovery without reopening: the same store accepts again.
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            if store.accept(event("a", "after", b"{}")).await.is_ok() {
                break;
            }
        }
        stop.notify_waiters();
        let answers = running.await.unwrap();
        assert!(killed > 0, "sessions were killed");
        let stored: HashSet<String> = schema
            .query("SELECT provider_event_id FROM inbox")
            .await
            .iter()
            .map(|row| row.get(0))
            .collect();
        let mut acknowledged = 0;
        for Answer { id, outcome, .. } in &answers {
            match outcome {
                Ok(AcceptOutcome::Inserted { .. }) => {
                    acknowledged += 1;
                    assert!(stored.contains(id), "{id} acknowledged but not stored");
                }
                Ok(other) => panic!("{id}: {other:?}"),
                Err(StoreError::Unavailable(_)) => {}
                Err(other) => panic!("{id}: {other:?}"),
            }
        }
        assert!(acknowledged > 10, "load ran: {acknowledged}");
    })
    .await
    .expect("bounded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_elsewhere_are_woken_by_new_and_replayed_deliveries() {
    let schema = TestSchema::new();
    let worker = PostgresStore::open(schema.options()).await.unwrap();
    let ingress = open(&schema).await;
    let mut wakeups = worker.delivery_wakeups();
    // The first wake-up says "listening now" (anything before it is due).
    tokio::time::timeout(DEADLINE, wakeups.next())
        .await
        .expect("listening");

    let id = support::inserted(&ingress, event_for_target("n1", None)).await;
    tokio::time::timeout(DEADLINE, wakeups.next())
        .await
        .expect("a new delivery wakes the worker");

    let leased = worker.lease(lease_params("w", 1_000)).await.unwrap();
    let dead = Settlement::Dead {
        error: "gone".into(),
    };
    assert!(worker.settle(&leased[0], dead, 1_001).await.unwrap());
    let replayed = ingress
        .replay(ReplaySelector::One { inbox_id: id }, 2_000)
        .await
        .unwrap();
    assert_eq!(replayed.len(), 1);
    tokio::time::timeout(DEADLINE, wakeups.next())
        .await
        .expect("a replay wakes the worker");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_password_stays_out_of_errors() {
    let schema = TestSchema::new();
    let mut options = schema.options();
    // Nothing listens on port 1.
    options.url = PostgresUrl::parse("postgres://app:hunter2secret@127.0.0.1:1/inbox").unwrap();
    options.connect_timeout = Duration::from_millis(500);
    let error = PostgresStore::open(options.clone()).await.unwrap_err();
    let text = format!("{error} {error:?} {options:?}");
    assert!(!text.contains("hunter2secret"), "{text}");
    assert!(text.contains("app:***@127.0.0.1:1"), "{text}");
}

/// The server's certificate (Debian's snake-oil one: self-signed, for
/// `localhost`), as PostgreSQL reports it.
async fn server_certificate(schema: &TestSchema) -> String {
    let rows = schema.query("SHOW ssl").await;
    let on: String = rows[0].get(0);
    assert_eq!(
        on, "on",
        "the TLS tests need ssl = on in the test server (Debian's default)"
    );
    schema.query("SHOW ssl_cert_file").await[0].get(0)
}

fn url_with(host: &str, params: &str) -> PostgresUrl {
    let config: tokio_postgres::Config = postgres_url().parse().unwrap();
    let user = config.get_user().unwrap_or("postgres");
    let dbname = config.get_dbname().unwrap_or(user);
    let port = config.get_ports().first().copied().unwrap_or(5432);
    PostgresUrl::parse(&format!(
        "postgres://{user}@{host}:{port}/{dbname}?{params}"
    ))
    .unwrap()
}

/// Connects with `url`; the error's whole chain of causes when it fails.
async fn connects(schema: &TestSchema, url: PostgresUrl) -> Result<(), String> {
    let mut options = schema.options();
    options.url = url;
    let connected = async { PostgresReader::connect(&options).await?.ping().await };
    connected.await.map_err(|error: StoreError| {
        let mut chain = error.to_string();
        let mut cause = std::error::Error::source(&error);
        while let Some(error) = cause {
            chain.push_str(&format!(" / {error}"));
            cause = error.source();
        }
        chain
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sslmode_is_honoured() {
    let schema = TestSchema::new();
    let certificate = server_certificate(&schema).await;
    // require: encrypted, the self-signed certificate taken as libpq does.
    connects(&schema, url_with("127.0.0.1", "sslmode=require"))
        .await
        .unwrap();
    // verify-full against the public roots: a self-signed certificate fails.
    let error = connects(&schema, url_with("127.0.0.1", "sslmode=verify-full"))
        .await
        .unwrap_err();
    assert!(error.contains("UnknownIssuer"), "{error}");
    let root = format!("sslrootcert={certificate}");
    // verify-full with the right CA, under the certificate's name: accepted.
    connects(
        &schema,
        url_with("localhost", &format!("sslmode=verify-full&{root}")),
    )
    .await
    .unwrap();
    // verify-full under a name the certificate does not carry: refused…
    let error = connects(
        &schema,
        url_with("127.0.0.1", &format!("sslmode=verify-full&{root}")),
    )
    .await
    .unwrap_err();
    assert!(error.contains("not valid for name"), "{error}");
    // …which verify-ca does not check.
    connects(
        &schema,
        url_with("127.0.0.1", &format!("sslmode=verify-ca&{root}")),
    )
    .await
    .unwrap();
}

/// A handler that books each event into a `booked` table (in the test's
/// schema), or fails — after its own write — while `fail` is set.
struct Booking {
    fail: AtomicBool,
}

#[async_trait::async_trait]
impl PostgresHandler for Booking {
    async fn handle(
        &self,
        tx: &hookinbox_store::tokio_postgres::Transaction<'_>,
        event: &HandledEvent<'_>,
    ) -> Result<(), HandlerError> {
        tx.execute(
            "INSERT INTO booked (inbox_id) VALUES ($1)",
            &[&event.inbox_id],
        )
        .await
        .map_err(|e| HandlerError(e.to_string()))?;
        if self.fail.load(Ordering::SeqCst) {
            return Err(HandlerError("ledger closed".into()));
        }
        Ok(())
    }
}

async fn booked(schema: &TestSchema) -> Vec<String> {
    schema
        .query("SELECT inbox_id FROM booked ORDER BY inbox_id")
        .await
        .iter()
        .map(|row| row.get(0))
        .collect()
}

async fn delivery_status(schema: &TestSchema) -> (String, i64) {
    let rows = schema.query("SELECT status, attempts FROM delivery").await;
    (rows[0].get(0), rows[0].get(1))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_commits_with_delivered_or_not_at_all() {
    let schema = TestSchema::new();
    let store = PostgresStore::open(schema.options()).await.unwrap();
    schema
        .execute("CREATE TABLE booked (inbox_id text PRIMARY KEY)")
        .await;
    let handler = Booking {
        fail: AtomicBool::new(true),
    };
    let id = store.accept(event_for_target("h1", None)).await.unwrap();
    let AcceptOutcome::Inserted { id } = id else {
        panic!("{id:?}")
    };
    let lease = store.lease(lease_params("w1", 1_000)).await.unwrap();
    let event = store.load_event(&id).await.unwrap().unwrap();

    // The handler fails after writing: its write and the DELIVERED marker
    // are both rolled back, and the lease is still held for settling.
    let failed = store
        .deliver_to_handler(lease[0].clone(), event.clone(), &handler, 1_001)
        .await;
    assert!(matches!(failed, Err(StoreError::Handler(_))), "{failed:?}");
    assert!(booked(&schema).await.is_empty());
    assert_eq!(delivery_status(&schema).await, ("LEASED".to_owned(), 0));

    handler.fail.store(false, Ordering::SeqCst);
    let applied = store
        .deliver_to_handler(lease[0].clone(), event.clone(), &handler, 1_002)
        .await
        .unwrap();
    assert_eq!(applied, HandlerDelivery::Applied);
    assert_eq!(booked(&schema).await, vec![id.clone()]);
    assert_eq!(delivery_status(&schema).await, ("DELIVERED".to_owned(), 1));
    assert_eq!(
        store.stats().await.unwrap().by_status.get("PROCESSED"),
        Some(&1)
    );

    // The same lease again (a late duplicate attempt): the handler does not run.
    let again = store
        .deliver_to_handler(lease[0].clone(), event, &handler, 1_003)
        .await
        .unwrap();
    assert_eq!(again, HandlerDelivery::LeaseLost);
    assert_eq!(booked(&schema).await, vec![id]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_does_not_run_under_a_lease_that_was_reclaimed() {
    let schema = TestSchema::new();
    let store = PostgresStore::open(schema.options()).await.unwrap();
    schema
        .execute("CREATE TABLE booked (inbox_id text PRIMARY KEY)")
        .await;
    let handler = Booking {
        fail: AtomicBool::new(false),
    };
    store.accept(event_for_target("h2", None)).await.unwrap();
    let stale = store.lease(lease_params("w1", 1_000)).await.unwrap();
    let event = store.load_event(&stale[0].inbox_id).await.unwrap().unwrap();
    // w1 stalls past its lease; the rescuer reclaims it and w2 takes it.
    assert_eq!(store.reclaim_expired(31_001).await.unwrap(), 1);
    let current = store.lease(lease_params("w2", 32_000)).await.unwrap();
    assert_eq!(current.len(), 1);

    let late = store
        .deliver_to_handler(stale[0].clone(), event.clone(), &handler, 32_001)
        .await
        .unwrap();
    assert_eq!(late, HandlerDelivery::LeaseLost);
    assert!(
        booked(&schema).await.is_empty(),
        "the stale worker applied nothing"
    );
    let applied = store
        .deliver_to_handler(current[0].clone(), event.clone(), &handler, 32_002)
        .await
        .unwrap();
    assert_eq!(applied, HandlerDelivery::Applied);
    assert_eq!(booked(&schema).await, vec![event.id]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accepted_event_and_its_handler_commit_together() {
    let schema = TestSchema::new();
    let store = PostgresStore::open(schema.options()).await.unwrap();
    schema
        .execute("CREATE TABLE booked (inbox_id text PRIMARY KEY)")
        .await;
    let handler = Booking {
        fail: AtomicBool::new(true),
    };
    let failed = store
        .accept_and_handle(event("a", "e1", b"{}"), &handler)
        .await;
    assert!(matches!(failed, Err(StoreError::Handler(_))), "{failed:?}");
    assert_eq!(
        store.stats().await.unwrap().total,
        0,
        "no record without the change"
    );
    assert!(booked(&schema).await.is_empty());

    handler.fail.store(false, Ordering::SeqCst);
    let AcceptOutcome::Inserted { id } = store
        .accept_and_handle(event("a", "e1", b"{}"), &handler)
        .await
        .unwrap()
    else {
        panic!("inserted")
    };
    assert_eq!(booked(&schema).await, vec![id.clone()]);
    assert_eq!(
        store.stats().await.unwrap().by_status.get("PROCESSED"),
        Some(&1)
    );
    // A duplicate does not run the handler again.
    assert_eq!(
        store
            .accept_and_handle(event("a", "e1", b"{}"), &handler)
            .await
            .unwrap(),
        AcceptOutcome::Duplicate { id: id.clone() }
    );
    assert_eq!(booked(&schema).await, vec![id]);
}
