//! OpenTelemetry traces end to end, against the real binary: a collector
//! (a capturing HTTP server decoding the real OTLP protobuf messages)
//! receives, for one webhook sent with a `traceparent`, the ingress span
//! parented on it and the delivery span in the same trace, and the HTTP
//! target sees a `traceparent` of that trace. With the collector down,
//! every request is still answered and the spans dropped are counted. A
//! NATS message carries the trace on as a `traceparent` header, and a Redis
//! stream entry in its `headers` field. With `protocol = "grpc"` the same
//! trace reaches a gRPC collector (tonic's server with the real
//! `TraceService`), the configured headers as its metadata.

use crate::support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use support::nats::*;
use support::redis_streams::{config_with_redis_stream_target, redis_url, TestRedis};
use support::*;
use tonic::metadata::MetadataMap;

/// The provider's own span, as its `traceparent` names it.
const SENT_TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const SENT_SPAN_ID: &str = "00f067aa0ba902b7";

fn config_text(storage: &Storage, sink: &str, collector: &str) -> String {
    config_with_otlp(storage, sink, &format!("endpoint = \"{collector}\""))
}

/// An http target at `sink`, an admin listener, and `[telemetry.otlp]` with
/// the settings `otlp` (lines of TOML) and a service name.
fn config_with_otlp(storage: &Storage, sink: &str, otlp: &str) -> String {
    storage
        .config()
        .http_target(sink, "")
        .extra(&format!(
            r#"
[admin]
listen = "127.0.0.1:0"

[telemetry.otlp]
{otlp}
service_name = "hookinbox-test"
"#
        ))
        .to_string()
}

/// Every span the collector received, decoded from its OTLP/HTTP requests.
fn spans(collector: &Sink) -> Vec<Span> {
    spans_of(collector.received().iter().map(|request| {
        assert_eq!(request.header("content-type"), "application/x-protobuf");
        ExportTraceServiceRequest::decode(request.body.clone())
            .expect("an OTLP ExportTraceServiceRequest")
    }))
}

fn spans_of(requests: impl Iterator<Item = ExportTraceServiceRequest>) -> Vec<Span> {
    requests
        .flat_map(|request| request.resource_spans)
        .flat_map(|resource| resource.scope_spans)
        .flat_map(|scope| scope.spans)
        .collect()
}

/// An OTLP/gRPC collector on a port of its own: tonic's server with the
/// generated `TraceService`, keeping each export's metadata and request.
#[derive(Clone, Default)]
struct GrpcCollector {
    exports: Arc<Mutex<Vec<(MetadataMap, ExportTraceServiceRequest)>>>,
}

#[tonic::async_trait]
impl TraceService for GrpcCollector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let (metadata, _, request) = request.into_parts();
        self.exports.lock().unwrap().push((metadata, request));
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

impl GrpcCollector {
    /// Listening on 127.0.0.1 (port 0) when this returns; its address.
    async fn start() -> (GrpcCollector, SocketAddr) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let collector = GrpcCollector::default();
        let service = TraceServiceServer::new(collector.clone());
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
        );
        (collector, addr)
    }

    fn spans(&self) -> Vec<Span> {
        spans_of(
            self.exports
                .lock()
                .unwrap()
                .clone()
                .into_iter()
                .map(|(_, r)| r),
        )
    }

    /// The value of `key` in each export's metadata, in order.
    fn metadata(&self, key: &str) -> Vec<String> {
        self.exports
            .lock()
            .unwrap()
            .iter()
            .map(|(metadata, _)| {
                metadata
                    .get(key)
                    .and_then(|value| value.to_str().ok())
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    }
}

fn attribute(span: &Span, key: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.clone())
        .and_then(|value| value.value)
}

fn text(value: &str) -> Option<Value> {
    Some(Value::StringValue(value.to_owned()))
}

#[tokio::test]
async fn one_webhook_is_one_trace_from_the_provider_to_the_target() {
    let collector = Sink::start().await;
    let sink = Sink::start().await;
    let storage = Storage::new(Backend::Sqlite);
    // The collector's base URL: spans go to /v1/traces under it.
    let collector_base = format!("http://{}", collector.addr);
    let server = Server::start(
        storage.dir.path(),
        &config_text(&storage, &sink.url(), &collector_base),
    );
    let body = r#"{"id":"evt_t1","type":"payment.succeeded"}"#;
    let traceparent = format!("00-{SENT_TRACE_ID}-{SENT_SPAN_ID}-01");
    let answer = post(
        &client(),
        &server.url("/hooks/lab"),
        &lab_signed(body, now()).with("traceparent", &traceparent),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.error());
    let inbox_id = answer.json()["id"].as_str().unwrap().to_owned();

    assert!(eventually(Duration::from_secs(10), || sink.accepted().len() == 1).await);
    let delivered_parent = sink.accepted()[0].header("traceparent");
    let parts: Vec<&str> = delivered_parent.split('-').collect();
    assert_eq!(parts.len(), 4, "a W3C traceparent: {delivered_parent:?}");
    assert_eq!(
        parts[1], SENT_TRACE_ID,
        "the target joins the provider's trace"
    );

    // Batches leave at least every second.
    let both = eventually(Duration::from_secs(15), || {
        let spans = spans(&collector);
        spans.iter().any(|s| s.name == "POST /hooks/{endpoint_id}")
            && spans.iter().any(|s| s.name == "deliver sink")
    })
    .await;
    let spans = spans(&collector);
    assert!(both, "{spans:#?}");
    let ingress = spans
        .iter()
        .find(|s| s.name == "POST /hooks/{endpoint_id}")
        .unwrap();
    assert_eq!(hex::encode(&ingress.trace_id), SENT_TRACE_ID);
    assert_eq!(
        hex::encode(&ingress.parent_span_id),
        SENT_SPAN_ID,
        "parented on the provider's span"
    );
    assert_eq!(attribute(ingress, "hookinbox.endpoint"), text("lab"));
    assert_eq!(attribute(ingress, "hookinbox.provider"), text("lab"));
    assert_eq!(attribute(ingress, "hookinbox.outcome"), text("accepted"));
    assert_eq!(attribute(ingress, "hookinbox.inbox_id"), text(&inbox_id));
    assert_eq!(attribute(ingress, "hookinbox.secret_version"), text("v1"));
    assert_eq!(
        attribute(ingress, "hookinbox.body_bytes"),
        Some(Value::IntValue(body.len() as i64))
    );
    assert_eq!(
        attribute(ingress, "http.response.status_code"),
        Some(Value::IntValue(200))
    );
    let events: Vec<&str> = ingress.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(events, ["verified", "committed", "answered"]);

    let delivery = spans.iter().find(|s| s.name == "deliver sink").unwrap();
    assert_eq!(hex::encode(&delivery.trace_id), SENT_TRACE_ID);
    assert_eq!(
        delivery.parent_span_id, ingress.span_id,
        "a child of the ingress span"
    );
    assert_eq!(attribute(delivery, "hookinbox.target"), text("sink"));
    assert_eq!(
        attribute(delivery, "hookinbox.attempt"),
        Some(Value::IntValue(1))
    );
    assert_eq!(attribute(delivery, "hookinbox.outcome"), text("delivered"));
    assert_eq!(
        attribute(delivery, "http.response.status_code"),
        Some(Value::IntValue(200))
    );
    assert_eq!(
        parts[2],
        hex::encode(&delivery.span_id),
        "the target's parent is the attempt"
    );

    // Names and numbers only: no attribute carries the payload or a secret.
    for span in &spans {
        for kv in &span.attributes {
            let shown = format!("{:?}", kv.value);
            assert!(!shown.contains("payment.succeeded"), "{}: {shown}", kv.key);
            assert!(!shown.contains(LAB_SECRET), "{}: {shown}", kv.key);
        }
    }
}

#[tokio::test]
async fn with_the_collector_down_ingress_answers_and_drops_are_counted() {
    // Bound, nothing listening: every export is refused.
    let down = ReservedPort::new();
    let sink = Sink::start().await;
    let storage = Storage::new(Backend::Sqlite);
    let collector_base = format!("http://{}", down.addr());
    let server = Server::start(
        storage.dir.path(),
        &config_text(&storage, &sink.url(), &collector_base),
    );
    // The same service without traces, for the same requests in the same run.
    let plain_storage = Storage::new(Backend::Sqlite);
    let plain = Server::start(
        plain_storage.dir.path(),
        &plain_storage
            .config()
            .http_target(&sink.url(), "")
            .to_string(),
    );
    let admin = server.admin_address().await;
    let client = client();
    let (mut traced, mut untraced) = (Vec::new(), Vec::new());
    const REQUESTS: usize = 200;
    for n in 0..REQUESTS {
        // Alternating, so both see the same machine at the same moments.
        for (server, times) in [(&server, &mut traced), (&plain, &mut untraced)] {
            let started = std::time::Instant::now();
            let answer = post(
                &client,
                &server.url("/hooks/lab"),
                &lab_event(&format!("down-{n}")),
            )
            .await;
            times.push(started.elapsed());
            assert_eq!(
                answer.status, 200,
                "ingress does not wait for the collector"
            );
        }
    }
    let p99 = |times: &mut Vec<Duration>| {
        times.sort();
        times[times.len() * 99 / 100]
    };
    // A measurement, not an assertion: a debug build on a shared machine.
    eprintln!(
        "ack p99 over {REQUESTS} requests each: collector down {:?}, traces off {:?}",
        p99(&mut traced),
        p99(&mut untraced)
    );
    let counted = until(Duration::from_secs(15), || async {
        metric_value(admin, "hookinbox_otlp_spans_dropped_total")
            .await
            .is_some_and(|dropped| dropped >= REQUESTS as f64)
    })
    .await;
    let dropped = metric_value(admin, "hookinbox_otlp_spans_dropped_total").await;
    assert!(counted, "hookinbox_otlp_spans_dropped_total = {dropped:?}");
}

#[tokio::test]
async fn a_nats_message_carries_the_traceparent_of_the_event_trace() {
    let collector = Sink::start().await;
    let stream = TestStream::new().await;
    stream.create(Duration::from_secs(120)).await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let subject = format!("{}.{{endpoint}}", stream.prefix);
    let config = format!(
        "{}\n[telemetry.otlp]\nendpoint = \"http://{}\"\n",
        config_with_nats_target(&db, &nats_url(), &subject, ""),
        collector.addr
    );
    let server = Server::start(dir.path(), &config);
    let traceparent = format!("00-{SENT_TRACE_ID}-{SENT_SPAN_ID}-01");
    let answer = post(
        &client(),
        &server.url("/hooks/lab"),
        &lab_event("evt_nats_trace").with("traceparent", &traceparent),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.error());
    let delivered = || {
        deliveries(&db)
            .iter()
            .filter(|(status, _)| status == "DELIVERED")
            .count()
            == 1
    };
    assert!(
        eventually(Duration::from_secs(20), delivered).await,
        "{:?}",
        deliveries(&db)
    );
    let consumed = stream.consume_all(2).await;
    assert_eq!(consumed.len(), 1);
    let sent_on = consumed[0].header("traceparent");
    let parts: Vec<&str> = sent_on.split('-').collect();
    assert_eq!(parts.len(), 4, "a W3C traceparent header: {sent_on:?}");
    assert_eq!(
        parts[1], SENT_TRACE_ID,
        "the consumer joins the provider's trace"
    );
    assert_ne!(
        parts[2], SENT_SPAN_ID,
        "its parent is the attempt, not the provider"
    );
}

#[tokio::test]
async fn a_redis_stream_entry_carries_the_traceparent_of_the_event_trace() {
    let collector = Sink::start().await;
    let redis = TestRedis::new().await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let template = format!("{}:{{endpoint}}", redis.prefix);
    let config = format!(
        "{}\n[telemetry.otlp]\nendpoint = \"http://{}\"\n",
        config_with_redis_stream_target(&db, &redis_url(), &template, ""),
        collector.addr
    );
    let server = Server::start(dir.path(), &config);
    let traceparent = format!("00-{SENT_TRACE_ID}-{SENT_SPAN_ID}-01");
    let answer = post(
        &client(),
        &server.url("/hooks/lab"),
        &lab_event("evt_redis_trace").with("traceparent", &traceparent),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.error());
    let delivered = || {
        deliveries(&db)
            .iter()
            .filter(|(status, _)| status == "DELIVERED")
            .count()
            == 1
    };
    assert!(
        eventually(Duration::from_secs(20), delivered).await,
        "{:?}",
        deliveries(&db)
    );
    let entries = redis.entries(&format!("{}:lab", redis.prefix)).await;
    assert_eq!(entries.len(), 1);
    let headers = entries[0].headers();
    let sent_on = headers["traceparent"].as_str().unwrap_or_default();
    let parts: Vec<&str> = sent_on.split('-').collect();
    assert_eq!(parts.len(), 4, "a W3C traceparent in the entry: {headers}");
    assert_eq!(
        parts[1], SENT_TRACE_ID,
        "the consumer joins the provider's trace"
    );
    assert_ne!(
        parts[2], SENT_SPAN_ID,
        "its parent is the attempt, not the provider"
    );
}

/// Whether the process `pid` has exited (a zombie until its parent waits).
fn exited(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

#[tokio::test]
async fn a_clean_stop_exports_the_spans_still_queued() {
    let collector = Sink::start().await;
    let sink = Sink::start().await;
    let storage = Storage::new(Backend::Sqlite);
    let collector_base = format!("http://{}", collector.addr);
    let server = Server::start(
        storage.dir.path(),
        &config_text(&storage, &sink.url(), &collector_base),
    );
    let answer = post(&client(), &server.url("/hooks/lab"), &lab_event("evt_stop")).await;
    assert_eq!(answer.status, 200, "{}", answer.error());
    assert!(eventually(Duration::from_secs(10), || sink.accepted().len() == 1).await);
    let status = std::process::Command::new("kill")
        .args(["-TERM", &server.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(
        eventually(Duration::from_secs(15), || exited(server.pid())).await,
        "serve did not stop on SIGTERM"
    );
    // Exited: whatever reached the collector was sent before the exit.
    let names: Vec<String> = spans(&collector).into_iter().map(|s| s.name).collect();
    assert!(
        names.iter().any(|n| n == "POST /hooks/{endpoint_id}")
            && names.iter().any(|n| n == "deliver sink"),
        "{names:?}"
    );
}

/// `hookinbox <args>`; its stdout, after checking it succeeded.
fn cli_output(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(args)
        .output()
        .expect("run hookinbox");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The trace is stored with the event, not kept in the accepting process:
/// `serve --no-workers` accepts, stops, and a separate `hookinbox work`
/// delivers in the same trace — its attempt span a child of the other
/// process's ingress span, the target's `traceparent` naming that attempt
/// — and `events show` (text and JSON) and the admin API name the trace.
#[tokio::test]
async fn a_separate_worker_continues_the_trace_the_event_was_accepted_in() {
    const TOKEN: &str = "admin-t0ken-for-trace-tests";
    let collector = Sink::start().await;
    let sink = Sink::start().await;
    let storage = Storage::new(Backend::Sqlite);
    let dir = storage.dir.path();
    let config_path = dir.join("hookinbox.toml");
    let config = storage
        .config()
        .http_target(&sink.url(), "")
        .extra(&admin_table(TOKEN))
        .extra(&format!(
            "[telemetry.otlp]\nendpoint = \"http://{}\"\n",
            collector.addr
        ))
        .to_string();
    std::fs::write(&config_path, config).unwrap();
    let mut ingress = Server::start_with_args(dir, &config_path, &["--no-workers"]);
    let traceparent = format!("00-{SENT_TRACE_ID}-{SENT_SPAN_ID}-01");
    let answer = post(
        &client(),
        &ingress.url("/hooks/lab"),
        &lab_event("evt_across").with("traceparent", &traceparent),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.error());
    let inbox_id = answer.json()["id"].as_str().unwrap().to_owned();
    let admin = ingress.admin_address().await;
    let api = send(
        &client(),
        "GET",
        &format!("http://{admin}/admin/events/{inbox_id}"),
        &Signed {
            headers: vec![("authorization".into(), format!("Bearer {TOKEN}"))],
            body: Default::default(),
        },
    )
    .await
    .expect("the admin API answers");
    assert_eq!(api.status, 200, "{}", api.error());
    assert_eq!(api.json()["trace_id"], SENT_TRACE_ID);
    // The ingress span is exported before the accepting process is gone.
    assert!(
        eventually(Duration::from_secs(15), || spans(&collector)
            .iter()
            .any(|s| s.name == "POST /hooks/{endpoint_id}"))
        .await
    );
    ingress.kill9();
    assert!(
        sink.accepted().is_empty(),
        "no worker in the accepting process"
    );

    let mut worker = std::process::Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(["work", "--config"])
        .arg(&config_path)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let delivered = eventually(Duration::from_secs(15), || sink.accepted().len() == 1).await;
    let exported = eventually(Duration::from_secs(15), || {
        spans(&collector).iter().any(|s| s.name == "deliver sink")
    })
    .await;
    let _ = worker.kill();
    let _ = worker.wait();
    assert!(delivered, "the worker delivered the event");
    assert!(exported, "{:#?}", spans(&collector));

    let sent_on = sink.accepted()[0].header("traceparent");
    let parts: Vec<&str> = sent_on.split('-').collect();
    assert_eq!(parts.len(), 4, "a W3C traceparent: {sent_on:?}");
    assert_eq!(
        parts[1], SENT_TRACE_ID,
        "the target joins the provider's trace"
    );
    let spans = spans(&collector);
    let ingress_span = spans
        .iter()
        .find(|s| s.name == "POST /hooks/{endpoint_id}")
        .unwrap();
    let delivery = spans.iter().find(|s| s.name == "deliver sink").unwrap();
    assert_eq!(hex::encode(&delivery.trace_id), SENT_TRACE_ID);
    assert_eq!(
        delivery.parent_span_id, ingress_span.span_id,
        "the attempt is a child of the other process's ingress span"
    );
    assert_eq!(parts[2], hex::encode(&delivery.span_id));

    let config = config_path.to_str().unwrap();
    let shown: serde_json::Value = serde_json::from_str(&cli_output(&[
        "events", "show", "--json", &inbox_id, "--config", config,
    ]))
    .unwrap();
    assert_eq!(shown["trace_id"], SENT_TRACE_ID);
    let text = cli_output(&["events", "show", &inbox_id, "--config", config]);
    assert!(
        text.contains(&format!("\ntrace      {SENT_TRACE_ID}\n")),
        "{text}"
    );
}

/// With traces off, the trace a provider sent is still stored and passed
/// on unchanged, so the target's spans join the provider's.
#[tokio::test]
async fn with_traces_off_the_provider_traceparent_is_passed_on_unchanged() {
    let sink = Sink::start().await;
    let storage = Storage::new(Backend::Sqlite);
    let server = Server::start(
        storage.dir.path(),
        &storage.config().http_target(&sink.url(), "").to_string(),
    );
    let traceparent = format!("00-{SENT_TRACE_ID}-{SENT_SPAN_ID}-01");
    let client = client();
    let answer = post(
        &client,
        &server.url("/hooks/lab"),
        &lab_event("evt_off").with("traceparent", &traceparent),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.error());
    let untraced = post(&client, &server.url("/hooks/lab"), &lab_event("evt_none")).await;
    assert_eq!(untraced.status, 200, "{}", untraced.error());
    assert!(eventually(Duration::from_secs(10), || sink.accepted().len() == 2).await);
    let header_of = |event_id: &str| {
        sink.accepted()
            .into_iter()
            .find(|r| String::from_utf8_lossy(&r.body).contains(event_id))
            .map(|r| r.header("traceparent"))
            .unwrap()
    };
    assert_eq!(header_of("evt_off"), traceparent);
    assert_eq!(header_of("evt_none"), "", "no trace, no traceparent");
}

/// Sends one webhook with the provider's `traceparent` and waits for its
/// delivery; the inbox id and the `traceparent` the target received.
async fn one_traced_webhook(server: &Server, sink: &Sink, event_id: &str) -> (String, String) {
    let traceparent = format!("00-{SENT_TRACE_ID}-{SENT_SPAN_ID}-01");
    let answer = post(
        &client(),
        &server.url("/hooks/lab"),
        &lab_event(event_id).with("traceparent", &traceparent),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.error());
    let inbox_id = answer.json()["id"].as_str().unwrap().to_owned();
    assert!(eventually(Duration::from_secs(10), || sink.accepted().len() == 1).await);
    (inbox_id, sink.accepted()[0].header("traceparent"))
}

/// Asserts `spans` hold the webhook's trace: the ingress span parented on
/// the provider's, the delivery span its child, named by the target's
/// `traceparent`.
fn assert_one_trace(spans: &[Span], inbox_id: &str, delivered_parent: &str) {
    let ingress = spans
        .iter()
        .find(|s| s.name == "POST /hooks/{endpoint_id}")
        .unwrap_or_else(|| panic!("no ingress span: {spans:#?}"));
    assert_eq!(hex::encode(&ingress.trace_id), SENT_TRACE_ID);
    assert_eq!(hex::encode(&ingress.parent_span_id), SENT_SPAN_ID);
    assert_eq!(attribute(ingress, "hookinbox.inbox_id"), text(inbox_id));
    let delivery = spans
        .iter()
        .find(|s| s.name == "deliver sink")
        .unwrap_or_else(|| panic!("no delivery span: {spans:#?}"));
    assert_eq!(hex::encode(&delivery.trace_id), SENT_TRACE_ID);
    assert_eq!(delivery.parent_span_id, ingress.span_id);
    let parts: Vec<&str> = delivered_parent.split('-').collect();
    assert_eq!(parts.len(), 4, "a W3C traceparent: {delivered_parent:?}");
    assert_eq!(parts[1], SENT_TRACE_ID);
    assert_eq!(
        parts[2],
        hex::encode(&delivery.span_id),
        "the target's parent is the attempt"
    );
}

fn has_both_spans(spans: &[Span]) -> bool {
    spans.iter().any(|s| s.name == "POST /hooks/{endpoint_id}")
        && spans.iter().any(|s| s.name == "deliver sink")
}

/// Waits until the gRPC collector holds the ingress and the delivery span
/// (batches leave at least every second), then checks they are one trace.
async fn assert_collected_as_one_trace(
    collector: &GrpcCollector,
    inbox_id: &str,
    delivered_parent: &str,
) {
    let both = eventually(Duration::from_secs(15), || {
        has_both_spans(&collector.spans())
    })
    .await;
    assert!(both, "{:#?}", collector.spans());
    assert_one_trace(&collector.spans(), inbox_id, delivered_parent);
}

#[tokio::test]
async fn over_grpc_one_webhook_is_one_trace_at_the_collector() {
    let (collector, addr) = GrpcCollector::start().await;
    let sink = Sink::start().await;
    let storage = Storage::new(Backend::Sqlite);
    // The endpoint as given: gRPC appends no /v1/traces.
    let server = Server::start(
        storage.dir.path(),
        &config_with_otlp(
            &storage,
            &sink.url(),
            &format!("endpoint = \"http://{addr}\"\nprotocol = \"grpc\""),
        ),
    );
    let (inbox_id, delivered_parent) = one_traced_webhook(&server, &sink, "evt_grpc").await;
    assert_collected_as_one_trace(&collector, &inbox_id, &delivered_parent).await;
}

#[tokio::test]
async fn over_grpc_the_configured_headers_arrive_as_metadata_and_are_never_logged() {
    const KEY: &str = "otlp-key-M4RK3R";
    let (collector, addr) = GrpcCollector::start().await;
    let sink = Sink::start().await;
    let storage = Storage::new(Backend::Sqlite);
    let server = Server::start(
        storage.dir.path(),
        &config_with_otlp(
            &storage,
            &sink.url(),
            &format!(
                "endpoint = \"http://{addr}\"\nprotocol = \"grpc\"\n\
                 headers = {{ \"X-API-Key\" = \"{KEY}\" }}"
            ),
        ),
    );
    one_traced_webhook(&server, &sink, "evt_grpc_key").await;
    let exported = eventually(Duration::from_secs(15), || {
        !collector.metadata("x-api-key").is_empty()
    })
    .await;
    assert!(exported, "nothing exported");
    let keys = collector.metadata("x-api-key");
    assert!(keys.iter().all(|key| key == KEY), "{keys:?}");
    assert!(!server.logs().contains(KEY), "{}", server.logs());
}

/// With no `protocol` in the config, `OTEL_EXPORTER_OTLP_PROTOCOL` decides.
#[tokio::test]
async fn the_protocol_variable_picks_grpc_when_the_config_names_none() {
    let (collector, addr) = GrpcCollector::start().await;
    let sink = Sink::start().await;
    let storage = Storage::new(Backend::Sqlite);
    let config_path = storage.dir.path().join("hookinbox.toml");
    std::fs::write(
        &config_path,
        config_text(&storage, &sink.url(), &format!("http://{addr}")),
    )
    .unwrap();
    let server = Server::start_full(
        storage.dir.path(),
        &config_path,
        &[],
        &[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")],
    );
    let (inbox_id, delivered_parent) = one_traced_webhook(&server, &sink, "evt_grpc_env").await;
    assert_collected_as_one_trace(&collector, &inbox_id, &delivered_parent).await;
}
