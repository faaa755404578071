//! Dashboard speed (issue 10): with an inbox of `--events` events (default
//! 1,000,000), how long the admin listener of a release `hookinbox serve`
//! takes to answer the pages an operator opens — the event list (first
//! page, filtered pages, a deep page), an event page, the overview — and
//! the admin API's list and event reads.
//!
//! 1. Preload (skipped with `--reuse` when the database exists): events are
//!    accepted through the store crate directly (`Store::accept`, many in
//!    flight, group commit), over three endpoints and ten types, received
//!    evenly over the 30 days before now. `--failed` of them get a target
//!    and are settled DEAD (FAILED: the selective status filter); the rest
//!    have none.
//!    On PostgreSQL the tables are then `VACUUM ANALYZE`d, as autovacuum
//!    would after such a load.
//! 2. `hookinbox serve` (the binary given, release) opens the database with
//!    its admin listener; the bench signs in through the login form and
//!    GETs each page `--rounds` times one after the other (after a warm-up
//!    of 3), timing each from the request to the last byte of the body.
//!
//! Prints a Markdown table (p50, p95, max in ms) and checks each answer is
//! a 200 with the rows it should have. Everything runs on 127.0.0.1.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use bytes::Bytes;
use clap::Parser;
use hookinbox::store::{
    AcceptOutcome, Fingerprint, LeaseParams, NewEvent, PostgresOptions, PostgresStore, PostgresUrl,
    SettleRequest, Settlement, SqliteOptions, SqliteStore, Store, UnsignedMetadata,
};
use hookinbox::tokio_postgres;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

const TOKEN: &str = "dashboard-bench-admin-token";
const ENDPOINTS: [&str; 3] = ["stripe", "github", "shopify"];
const DAY_MS: i64 = 86_400_000;

#[derive(Debug, Parser)]
struct Args {
    /// Events in the inbox.
    #[arg(long, default_value_t = 1_000_000)]
    events: usize,
    /// Of which FAILED (with a dead delivery); the others have no target.
    #[arg(long, default_value_t = 2_000)]
    failed: usize,
    /// The SQLite file (created; its payload log beside it).
    #[arg(long, default_value = "bench/out/dashboard/inbox.db")]
    db: PathBuf,
    /// Use the database as it is when it exists.
    #[arg(long)]
    reuse: bool,
    /// The `hookinbox` binary to serve with (a release build).
    #[arg(long, default_value = "target/release/hookinbox")]
    hookinbox: PathBuf,
    /// Timed requests per page.
    #[arg(long, default_value_t = 30)]
    rounds: usize,
    /// Store in PostgreSQL at this URL instead of the SQLite file, in
    /// `--schema` (created; dropped first unless `--reuse`).
    #[arg(long)]
    postgres: Option<String>,
    /// The PostgreSQL schema.
    #[arg(long, default_value = "hookinbox_dashboard_bench")]
    schema: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let exists = match &args.postgres {
        Some(_) => args.reuse,
        None => args.db.exists(),
    };
    if !(args.reuse && exists) {
        preload(&args).await?;
    }
    measure(&args).await
}

fn new_event(n: usize, total: usize, now_ms: i64, target: Option<&str>) -> NewEvent {
    let endpoint = ENDPOINTS[n % ENDPOINTS.len()];
    let event_type = format!("type.{}", n % 10);
    let body = Bytes::from(format!(
        "{{\"id\":\"evt_{n:08}\",\"type\":\"{event_type}\",\"data\":{{\"object\":{{\"id\":\"obj_{n}\",\"amount\":{}}}}}}}",
        n * 7
    ));
    // Evenly over the 30 days before now, oldest first (as they arrived).
    let received_at_ms = now_ms - 30 * DAY_MS + (30 * DAY_MS) * n as i64 / total as i64;
    NewEvent {
        endpoint_id: endpoint.into(),
        provider: "lab".into(),
        provider_event_id: format!("evt_{n:08}"),
        event_type: Some(event_type),
        object_id: None,
        object_version: None,
        provider_created_at: None,
        received_at_ms,
        content_type: Some("application/json".into()),
        fingerprint: Fingerprint::of(&body),
        payload: body,
        audit_headers: vec![("x-timestamp".into(), (received_at_ms / 1000).to_string())],
        matched_secret_version: "v1".into(),
        targets: target.map(|t| vec![t.to_owned()]).unwrap_or_default(),
        not_routed: Vec::new(),
        delays_ms: Default::default(),
        unsigned_metadata: UnsignedMetadata::default(),
        fingerprint_window_ms: None,
        trace_parent: None,
    }
}

/// The store to preload: a fresh SQLite file, or a fresh PostgreSQL schema.
async fn fresh_store(args: &Args) -> anyhow::Result<Arc<dyn Store>> {
    if let Some(url) = &args.postgres {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
        tokio::spawn(connection);
        client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", args.schema))
            .await?;
        let mut options = PostgresOptions::new(PostgresUrl::parse(url)?);
        options.schema = Some(args.schema.clone());
        options.queue_capacity = 8192;
        return Ok(Arc::new(PostgresStore::open(options).await?));
    }
    if let Some(dir) = args.db.parent() {
        std::fs::create_dir_all(dir)?;
        // A fresh database: the file, its WAL and its payload log.
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if path.file_name().is_some_and(|n| {
                n.to_string_lossy()
                    .starts_with(&*args.db.file_name().unwrap_or_default().to_string_lossy())
            }) {
                if path.is_dir() {
                    std::fs::remove_dir_all(&path)?;
                } else {
                    std::fs::remove_file(&path)?;
                }
            }
        }
    }
    let mut options = SqliteOptions::new(&args.db);
    options.queue_capacity = 8192;
    Ok(Arc::new(SqliteStore::open(options)?))
}

async fn preload(args: &Args) -> anyhow::Result<()> {
    let store = fresh_store(args).await?;
    let now_ms = now_ms();
    let started = Instant::now();
    // Every (events / failed)-th event fails: failures spread over the month.
    let every = (args.events / args.failed.max(1)).max(1);
    const IN_FLIGHT: usize = 4096;
    let mut next = 0;
    while next < args.events {
        let end = (next + IN_FLIGHT).min(args.events);
        let tasks: Vec<_> = (next..end)
            .map(|n| {
                let target = (n % every == every - 1 && n / every < args.failed).then_some("sink");
                let event = new_event(n, args.events, now_ms, target);
                let store = Arc::clone(&store);
                tokio::spawn(async move { store.accept(event).await })
            })
            .collect();
        for task in tasks {
            match task.await?? {
                AcceptOutcome::Inserted { .. } => {}
                other => bail!("preload: {other:?}"),
            }
        }
        next = end;
        if next % 100_000 < IN_FLIGHT {
            eprintln!("preloaded {next} events in {:.0?}", started.elapsed());
        }
    }
    // The failures: lease every delivery and settle it DEAD.
    let mut failed = 0;
    loop {
        let mut any = false;
        for endpoint in ENDPOINTS {
            let leased = store
                .lease(LeaseParams {
                    endpoint_id: endpoint.into(),
                    target: "sink".into(),
                    owner: "bench".into(),
                    max: 500,
                    now_ms,
                    lease_ms: 60_000,
                    gate: Default::default(),
                })
                .await?;
            any |= !leased.is_empty();
            failed += leased.len();
            let requests = leased
                .into_iter()
                .map(|lease| SettleRequest {
                    lease,
                    settlement: Settlement::Dead {
                        error: "http 500 (gave up after 1 attempt)".into(),
                    },
                    now_ms,
                })
                .collect();
            store.settle_many(requests).await?;
        }
        if !any {
            break;
        }
    }
    eprintln!(
        "preloaded {} events ({failed} failed) in {:.1?}",
        args.events,
        started.elapsed()
    );
    if let Some(url) = &args.postgres {
        // What autovacuum does after a bulk load (statistics, visibility
        // map), done now so the numbers do not depend on when it runs.
        // Before it, PostgreSQL plans without statistics: see RESULTS §10.
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
        tokio::spawn(connection);
        for table in ["inbox", "delivery", "delivery_attempt"] {
            client
                .batch_execute(&format!("VACUUM ANALYZE {}.{table}", args.schema))
                .await?;
        }
    }
    Ok(())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// `hookinbox serve` on the database, until dropped.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(args: &Args, admin_port: u16) -> anyhow::Result<Serve> {
    let dir = args.db.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let config = dir.join("dashboard-bench.toml");
    let storage = match &args.postgres {
        Some(url) => format!("url = \"{url}\"\nschema = \"{}\"", args.schema),
        None => format!(
            "url = \"sqlite://{}\"",
            std::fs::canonicalize(&args.db)?.display()
        ),
    };
    let mut text = format!(
        "[storage]\n{storage}\n\n[encryption]\nallow_plaintext = true\n\n\
         [admin]\nlisten = \"127.0.0.1:{admin_port}\"\ntoken = \"{TOKEN}\"\n"
    );
    for endpoint in ENDPOINTS {
        text.push_str(&format!(
            "\n[[endpoint]]\nid = \"{endpoint}\"\nprovider = \"lab\"\n\n[[endpoint.secret]]\n\
             version = \"v1\"\nvalue = \"dashboard-bench-secret-01\"\n\n[[endpoint.target]]\n\
             name = \"sink\"\nkind = \"http\"\nurl = \"http://127.0.0.1:9/\"\n\
             secret = \"whsec_dGFyZ2V0LXNlY3JldC1mb3ItdGVzdHMtMDAwMDAwMDA=\"\n"
        ));
    }
    std::fs::write(&config, text)?;
    let child = Command::new(&args.hookinbox)
        .args([
            "serve",
            "--no-workers",
            "--listen",
            "127.0.0.1:0",
            "--config",
        ])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("start {}", args.hookinbox.display()))?;
    Ok(Serve(child))
}

type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

async fn request(
    client: &HttpClient,
    method: &str,
    url: &str,
    cookie: Option<&str>,
    body: Option<&str>,
) -> anyhow::Result<(u16, hyper::HeaderMap, Bytes)> {
    let mut builder = hyper::Request::builder().method(method).uri(url);
    if let Some(cookie) = cookie {
        builder = builder.header("cookie", cookie);
    } else {
        builder = builder.header("authorization", format!("Bearer {TOKEN}"));
    }
    if body.is_some() {
        builder = builder.header("content-type", "application/x-www-form-urlencoded");
    }
    let request = builder.body(Full::new(Bytes::from(body.unwrap_or("").to_owned())))?;
    let response = client.request(request).await?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await?.to_bytes();
    Ok((status, headers, body))
}

async fn measure(args: &Args) -> anyhow::Result<()> {
    let admin_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.local_addr()?.port()
    };
    let _serve = serve(args, admin_port)?;
    let base = format!("http://127.0.0.1:{admin_port}");
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok((200, _, _)) =
            request(&client, "GET", &format!("{base}/healthz"), None, None).await
        {
            break;
        }
        if Instant::now() > deadline {
            bail!("hookinbox serve did not answer on the admin port");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, headers, _) = request(
        &client,
        "POST",
        &format!("{base}/ui/login"),
        Some(""),
        Some(&format!("token={TOKEN}")),
    )
    .await?;
    let cookie = headers
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .filter(|_| status == 303)
        .context("sign in")?
        .to_owned();

    // An event and a deep cursor, found through the API.
    let (_, _, page) = request(
        &client,
        "GET",
        &format!("{base}/admin/events?limit=1000&status=failed"),
        None,
        None,
    )
    .await?;
    let failed: serde_json::Value = serde_json::from_slice(&page)?;
    let failed_count = failed["events"].as_array().map_or(0, Vec::len);
    let event_id = failed["events"][failed_count / 2]["id"]
        .as_str()
        .context("a failed event")?
        .to_owned();
    let mut cursor = String::new();
    for _ in 0..20 {
        let url = format!("{base}/admin/events?limit=1000&cursor={cursor}");
        let (_, _, page) = request(&client, "GET", &url, None, None).await?;
        let page: serde_json::Value = serde_json::from_slice(&page)?;
        cursor = page["next_cursor"]
            .as_str()
            .context("a next page")?
            .to_owned();
    }

    let pages: Vec<(&str, String, Option<&str>)> = vec![
        (
            "dashboard: event list, first page (50)",
            "/ui/events".into(),
            Some(&cookie),
        ),
        (
            "dashboard: failed events (0.2 %), first page",
            "/ui/events?status=failed".into(),
            Some(&cookie),
        ),
        (
            "dashboard: endpoint + type, first page",
            "/ui/events?endpoint=github&type=type.4".into(),
            Some(&cookie),
        ),
        (
            "dashboard: one day, first page",
            format!(
                "/ui/events?since={}&before={}",
                (now_ms() - 10 * DAY_MS) / 1000,
                (now_ms() - 9 * DAY_MS) / 1000
            ),
            Some(&cookie),
        ),
        (
            "dashboard: provider event id, no endpoint",
            "/ui/events?event_id=evt_00500000".into(),
            Some(&cookie),
        ),
        (
            "dashboard: page after 20,000 events",
            format!("/ui/events?cursor={cursor}"),
            Some(&cookie),
        ),
        (
            "dashboard: event page",
            format!("/ui/events/{event_id}"),
            Some(&cookie),
        ),
        ("dashboard: overview", "/ui".into(), Some(&cookie)),
        (
            "API: GET /admin/events?status=failed&limit=100",
            "/admin/events?status=failed&limit=100".into(),
            None,
        ),
        (
            "API: GET /admin/events/{id}",
            format!("/admin/events/{event_id}"),
            None,
        ),
    ];
    println!("| page | rows | p50 ms | p95 ms | max ms |");
    println!("|---|---:|---:|---:|---:|");
    for (name, path, cookie) in &pages {
        let url = format!("{base}{path}");
        let mut times = Vec::with_capacity(args.rounds);
        let mut rows = 0;
        for round in 0..args.rounds + 3 {
            let started = Instant::now();
            let (status, _, body) = request(&client, "GET", &url, *cookie, None).await?;
            let elapsed = started.elapsed();
            if status != 200 {
                bail!("{name}: {status} {}", String::from_utf8_lossy(&body));
            }
            if body.len() < 500 {
                bail!("{name}: a short answer: {}", String::from_utf8_lossy(&body));
            }
            if round >= 3 {
                times.push(elapsed);
            }
            // Table rows of a page (less its header rows), events of an API list.
            rows = match cookie {
                Some(_) => {
                    let page = String::from_utf8_lossy(&body);
                    page.matches("<tr>").count() - page.matches("<thead>").count()
                }
                None => serde_json::from_slice::<serde_json::Value>(&body)?["events"]
                    .as_array()
                    .map_or(1, Vec::len),
            };
        }
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let p95 = times[(times.len() * 95 / 100).min(times.len() - 1)];
        println!(
            "| {name} | {rows} | {:.1} | {:.1} | {:.1} |",
            ms(times[times.len() / 2]),
            ms(p95),
            ms(*times.last().unwrap_or(&Duration::ZERO))
        );
    }
    Ok(())
}
