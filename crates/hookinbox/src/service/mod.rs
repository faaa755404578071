//! [`Service`]: hookinbox as a program runs it — the public listener, the
//! admin listener, the delivery workers — built from a configuration, for
//! the stock binary (`hookinbox serve`, `hookinbox work`) and for programs
//! that embed it alike.
//!
//! Everything the configuration can be wrong about is found at start-up,
//! before the public port accepts anything: secrets, keys and certificate
//! files ([`Components`]), the database, a handler target without its
//! handler. After that, [`Service::run_until`] only stops when its shutdown
//! future completes.

mod components;
mod public_listener;
mod startup_log;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hookinbox_store::{AnyStore, Store, StoreReads};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::admin::free_disk::DiskFloor;
use crate::admin::Readiness;
use crate::config::{self, Database, Settings};
use crate::delivery::liveness::Liveness;
use crate::delivery::{self, HandlerRegistry};
use crate::endpoint::Endpoints;
use crate::error::Error;
use crate::reconcile::{self, Reconciler};
use crate::reload::{self, Reloadable};
use crate::secrets::key_reload::KeyReloader;
use crate::storage;
use crate::tls::listener::TlsListener;
use crate::{admin, server, telemetry};
use crate::{metrics_sampler, retention, target_state_sampler};
pub(crate) use components::Components;
use public_listener::PublicListener;

/// hookinbox, ready to run: receive webhooks on the public port, store each
/// event once, deliver it to its targets.
///
/// Built from a configuration file ([`Service::from_config_file`]) or from
/// settings already loaded ([`Service::from_settings`]), then adjusted with
/// the builder methods, then run:
///
/// - [`run_until`](Service::run_until) serves until a future completes
///   (ingress, the admin listener if configured, and the delivery workers
///   unless [`workers(false)`](Service::workers)), then drains;
/// - [`work_until`](Service::work_until) runs only the delivery workers (as
///   `hookinbox work` does), for deployments that scale them apart from
///   ingress.
///
/// ```no_run
/// # async fn example() -> Result<(), hookinbox::Error> {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
/// hookinbox::Service::from_config_file("hookinbox.toml")?
///     .listener(listener)
///     .run_until(hookinbox::shutdown_signal())
///     .await
/// # }
/// ```
pub struct Service {
    settings: Settings,
    /// Where key reloads re-read secret versions from.
    config_path: Option<PathBuf>,
    handlers: HandlerRegistry,
    listener: Option<TcpListener>,
    store: Option<Arc<dyn Store>>,
    workers: bool,
    announce_on_stdout: bool,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("settings", &self.settings)
            .field("listener", &self.listener)
            .field("store_given", &self.store.is_some())
            .field("workers", &self.workers)
            .field("announce_on_stdout", &self.announce_on_stdout)
            .finish_non_exhaustive()
    }
}

impl Service {
    /// Reads and checks the configuration file at `path` (see
    /// [`config::load`]). Secrets and certificate files are read when the
    /// service starts.
    pub fn from_config_file(path: impl AsRef<Path>) -> Result<Service, Error> {
        Ok(Service::from_settings(config::load(path.as_ref())?).config_file(path.as_ref()))
    }

    /// A service for settings already loaded (and perhaps adjusted, such as
    /// `server.listen`).
    pub fn from_settings(settings: Settings) -> Service {
        Service {
            settings,
            config_path: None,
            handlers: HandlerRegistry::new(),
            listener: None,
            store: None,
            workers: true,
            announce_on_stdout: false,
        }
    }

    /// The configuration file the settings came from: a key reload (SIGHUP,
    /// `hookinbox keys reload`) re-reads the `[[endpoint.secret]]` versions
    /// there. Without it a key reload re-reads the running versions'
    /// sources only (`value_env`, `value_file`).
    pub fn config_file(mut self, path: impl AsRef<Path>) -> Service {
        self.config_path = Some(path.as_ref().to_owned());
        self
    }

    /// The handlers of the configuration's `kind = "handler"` targets, by
    /// target name. Without one for each such target the service does not
    /// start ([`Error::HandlerMissing`]).
    pub fn handlers(mut self, handlers: HandlerRegistry) -> Service {
        self.handlers = handlers;
        self
    }

    /// Serve the public port on this listener, already bound (port 0 in
    /// tests), instead of binding `server.listen`.
    pub fn listener(mut self, listener: TcpListener) -> Service {
        self.listener = Some(listener);
        self
    }

    /// Store events in `store` instead of opening the configured database
    /// (`[storage]` is then not used). Handler targets commit in the
    /// configured store's transactions, so with workers they refuse to
    /// start ([`Error::HandlerNeedsConfiguredStore`]).
    pub fn store(mut self, store: Arc<dyn Store>) -> Service {
        self.store = Some(store);
        self
    }

    /// Whether [`run_until`](Service::run_until) also runs the delivery
    /// workers (default: yes). Without them events are stored and left for
    /// a `work` process.
    pub fn workers(mut self, workers: bool) -> Service {
        self.workers = workers;
        self
    }

    /// Print `hookinbox listening on http://ADDRESS` (or `https://`) on
    /// stdout once the public port serves, as `hookinbox serve` does for
    /// scripts that start it on port 0.
    pub fn announce_on_stdout(mut self) -> Service {
        self.announce_on_stdout = true;
        self
    }

    /// Serves until `shutdown` completes: then stops accepting, lets
    /// requests in flight and deliveries finish within `server.shutdown_grace`,
    /// and returns. Start-up errors are returned before the public port
    /// accepts a request. The process's SIGHUP handler is installed (it
    /// reloads the endpoints' secrets and the TLS certificate).
    pub async fn run_until(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), Error> {
        let Service {
            settings,
            config_path,
            handlers,
            listener,
            store,
            workers,
            announce_on_stdout,
        } = self;
        let Components {
            endpoints,
            admin: admin_settings,
            tls,
        } = Components::build(&settings)?;
        for endpoint in &settings.endpoints {
            startup_log::endpoint_ready(endpoint);
        }
        let keys = Arc::new(KeyReloader::new(
            config_path,
            settings.clone(),
            endpoints.clone(),
        ));
        // Read before the store opens: an API key that cannot be read stops
        // start-up like any other secret.
        let sources = reconcile::sources::Sources::build(&settings)?;
        let store = ServiceStore::open(store, &settings).await?;
        let metrics = telemetry::install();
        install_traces(&settings)?;
        telemetry::SecretVersionsInUse(&endpoints).emit();
        telemetry::InitialSeries(&endpoints).emit();
        let (stop_background, stopping) = StopOnDrop::channel();
        let liveness = Arc::new(Liveness::default());
        if let Some(admin_settings) = admin_settings {
            let mut readiness = Readiness::new(store.shared(), Some(Arc::clone(&keys)));
            if workers {
                readiness = readiness.workers(Arc::clone(&liveness));
            }
            if let (ServiceStore::Configured(_), Database::Sqlite { path }) =
                (&store, &settings.storage.database)
            {
                readiness = readiness.disk_floor(DiskFloor::for_database(
                    path,
                    settings.storage.min_free_disk_bytes,
                ));
            }
            let readiness = Arc::new(readiness);
            let address = admin::spawn(
                admin_settings,
                metrics,
                store.shared(),
                Arc::clone(&readiness),
                store.operator_reads()?,
                Some(Arc::clone(&keys)),
                stopping.clone(),
            )
            .await?;
            tracing::info!(message = "Admin listener up.", address = %address);
            // Their gauges are only read through the admin listener.
            match store.shared().backlog_counts() {
                Some(counts) => metrics_sampler::spawn(counts, &settings, stopping.clone()),
                None => tracing::info!(
                    message = "The store counts no backlog: the database gauges are not sampled."
                ),
            }
            if let Some(reads) = store.operator_reads()? {
                target_state_sampler::spawn(reads, &settings, stopping.clone());
            }
            readiness.spawn_periodic(settings.metrics.sample_interval, stopping.clone());
        }
        // Retention and reconciliation: only `serve` runs them (see
        // `retention`, `reconcile::task`), and only on the configured store.
        if let ServiceStore::Configured(opened) = &store {
            retention::spawn_purge_task(opened.maintenance(), &settings, stopping.clone());
            if settings.reconcile.enabled {
                let reconciler = Reconciler::new(
                    opened.reconciliation(),
                    &settings,
                    endpoints.clone(),
                    sources,
                );
                reconcile::task::spawn(reconciler, settings.reconcile.interval, stopping.clone());
            }
        }
        // Before the public port: a handler target without a handler stops start-up.
        let delivery = if workers {
            Some(store.spawn_workers(&endpoints, &settings, &handlers, &liveness, stopping)?)
        } else {
            None
        };
        let listener = match listener {
            Some(listener) => listener,
            None => server::bind(settings.server.listen, settings.server.listen_backlog.get())
                .map_err(|source| Error::Listen {
                    address: settings.server.listen,
                    source,
                })?,
        };
        let bound = listener.local_addr().map_err(|source| Error::Listen {
            address: settings.server.listen,
            source,
        })?;
        // Before the announcement: from then on a SIGHUP reloads, never kills.
        install_reload(tls.as_ref(), Some(keys), &endpoints)?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        if announce_on_stdout {
            startup_log::announce(&format!("{scheme}://{bound}"));
        }
        tracing::info!(
            message = "Serving.",
            address = %bound,
            tls = tls.is_some(),
            endpoints = endpoints.len(),
            storage = %store.describe(&settings.storage)
        );

        PublicListener {
            endpoints,
            store: store.shared(),
            settings: &settings.server,
            commit_timeout: settings.storage.commit_timeout,
            tls,
        }
        .serve(listener, shutdown)
        .await;
        tracing::info!(message = "Stopped accepting; finishing deliveries in flight.");
        drop(stop_background);
        if let Some(delivery) = delivery {
            drain(delivery, &settings).await;
        }
        crate::traces::flush().await;
        Ok(())
    }

    /// Runs only the delivery workers (no public listener) until
    /// `shutdown` completes, then lets deliveries in flight finish within
    /// `server.shutdown_grace`. [`listener`](Service::listener) and
    /// [`workers`](Service::workers) do not apply. With `[admin]` in the
    /// settings it serves the admin listener too — `/metrics` with this
    /// process's delivery counters and `hookinbox_target_state`, `/readyz`
    /// with its workers' liveness, the API — which `hookinbox work` asks for
    /// with `--admin-listen` only, so a worker beside `serve` on one host
    /// does not take its port.
    pub async fn work_until(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), Error> {
        let endpoints = crate::endpoint::build_all(&self.settings)?;
        let admin_settings = self
            .settings
            .admin
            .as_ref()
            .map(admin::AdminSettings::build)
            .transpose()?;
        let store = ServiceStore::open(self.store, &self.settings).await?;
        install_traces(&self.settings)?;
        let (stop, stopping) = StopOnDrop::channel();
        let liveness = Arc::new(Liveness::default());
        if let Some(admin_settings) = admin_settings {
            let metrics = telemetry::install();
            let keys = Arc::new(KeyReloader::new(
                self.config_path.clone(),
                self.settings.clone(),
                endpoints.clone(),
            ));
            let readiness = Arc::new(
                Readiness::new(store.shared(), Some(Arc::clone(&keys)))
                    .workers(Arc::clone(&liveness)),
            );
            let reads = store.operator_reads()?;
            let address = admin::spawn(
                admin_settings,
                metrics,
                store.shared(),
                Arc::clone(&readiness),
                reads.clone(),
                Some(keys),
                stopping.clone(),
            )
            .await?;
            tracing::info!(message = "Admin listener up.", address = %address);
            if let Some(reads) = reads {
                target_state_sampler::spawn(reads, &self.settings, stopping.clone());
            }
            readiness.spawn_periodic(self.settings.metrics.sample_interval, stopping.clone());
        }
        let delivery = store.spawn_workers(
            &endpoints,
            &self.settings,
            &self.handlers,
            &liveness,
            stopping,
        )?;
        // `systemctl reload` must not stop the workers: it re-reads their
        // targets' transforms.
        install_reload(None, None, &endpoints)?;
        tracing::info!(
            message = "Delivering.",
            targets = endpoints.values().map(|e| e.targets.len()).sum::<usize>()
        );
        shutdown.await;
        drop(stop);
        drain(delivery, &self.settings).await;
        crate::traces::flush().await;
        Ok(())
    }
}

/// The store a service runs on.
enum ServiceStore {
    /// The configured database; handler targets commit in its transactions.
    Configured(AnyStore),
    /// Given by the embedder ([`Service::store`]).
    Given(Arc<dyn Store>),
}

impl ServiceStore {
    async fn open(given: Option<Arc<dyn Store>>, settings: &Settings) -> Result<Self, Error> {
        match given {
            Some(store) => Ok(ServiceStore::Given(store)),
            None => Ok(ServiceStore::Configured(
                storage::open(&settings.storage, &settings.encryption).await?,
            )),
        }
    }

    fn shared(&self) -> Arc<dyn Store> {
        match self {
            ServiceStore::Configured(opened) => opened.shared(),
            ServiceStore::Given(store) => Arc::clone(store),
        }
    }

    /// Reads for the admin API and dashboard: none for a store given by
    /// the embedder (`Store` has no operator reads).
    fn operator_reads(&self) -> Result<Option<Arc<dyn StoreReads>>, Error> {
        match self {
            ServiceStore::Configured(opened) => {
                let reads = opened.operator_reads().map_err(|source| Error::Storage {
                    database: opened.backend().to_owned(),
                    source,
                })?;
                Ok(Some(reads))
            }
            ServiceStore::Given(_) => Ok(None),
        }
    }

    fn spawn_workers(
        &self,
        endpoints: &Endpoints,
        settings: &Settings,
        handlers: &HandlerRegistry,
        liveness: &Liveness,
        stopping: watch::Receiver<bool>,
    ) -> Result<JoinSet<()>, Error> {
        let handler_store = match self {
            ServiceStore::Configured(opened) => Some(opened),
            ServiceStore::Given(_) => None,
        };
        delivery::spawn(
            self.shared(),
            handler_store,
            endpoints,
            &settings.delivery,
            handlers,
            liveness,
            stopping,
        )
    }

    /// For the start-up log line.
    fn describe(&self, settings: &config::Storage) -> String {
        match self {
            ServiceStore::Configured(_) => settings.database.describe(),
            ServiceStore::Given(_) => "given by the embedding program".to_owned(),
        }
    }
}

/// Tells the tasks started in the background (the admin listener, the
/// workers) to stop when dropped: at the end of a run, and on a start-up
/// error after they were started, so none outlives a `run_until` that
/// returned.
struct StopOnDrop(watch::Sender<bool>);

impl StopOnDrop {
    fn channel() -> (StopOnDrop, watch::Receiver<bool>) {
        let (sender, receiver) = watch::channel(false);
        (StopOnDrop(sender), receiver)
    }
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.send_replace(true);
    }
}

/// The SIGHUP handler, with what it reloads: the TLS certificate, the
/// endpoints' keys and the targets' transforms.
fn install_reload(
    tls: Option<&TlsListener>,
    keys: Option<Arc<KeyReloader>>,
    endpoints: &Endpoints,
) -> Result<(), Error> {
    let mut reloadables: Vec<Arc<dyn Reloadable>> =
        tls.map(TlsListener::certificate).into_iter().collect();
    if let Some(keys) = keys {
        reloadables.push(keys);
    }
    for endpoint in endpoints.values() {
        for target in &endpoint.targets {
            if let Some(script) = &target.reshape.transform {
                reloadables.push(Arc::clone(script) as Arc<dyn Reloadable>);
            }
        }
    }
    reload::reload_on_sighup(reloadables).map_err(Error::Signal)
}

/// Waits for the workers to finish what they hold, at most the grace period.
/// Sets up OTLP trace export when `[telemetry.otlp]` is configured. A
/// second service in the same process shares the first one's exporter.
fn install_traces(settings: &Settings) -> Result<(), Error> {
    let Some(otlp) = &settings.telemetry.otlp else {
        return Ok(());
    };
    match crate::traces::install(otlp) {
        Ok(()) => {
            tracing::info!(message = "Exporting traces over OTLP.");
            Ok(())
        }
        Err(crate::traces::TracesError::AlreadyInstalled) => Ok(()),
        Err(error) => Err(config::ConfigError::invalid("telemetry.otlp", error.to_string()).into()),
    }
}

async fn drain(mut delivery: JoinSet<()>, settings: &Settings) {
    let _ = tokio::time::timeout(settings.server.shutdown_grace, async {
        while delivery.join_next().await.is_some() {}
    })
    .await;
}
