//! The monitoring files in `deploy/` name only metrics the binary exports:
//! a running `serve` (with a target, its workers, the metrics sampler, the
//! periodic readiness check and a reconciliation pass) is scraped, and
//! every `hookinbox_…` name in `deploy/prometheus/alerts.yml` and
//! `deploy/grafana/hookinbox.json` must be one of its metric families (a
//! histogram's or summary's `_bucket`, `_sum` and `_count` included). The
//! dashboard must also show every family operators are promised
//! (docs/operations.md, "Metrics"). Their syntax and the alerts' behaviour
//! are `.ci/check-deploy` (`promtool check rules`, `promtool test rules`).

use crate::support;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use support::*;

fn repository_file(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every `hookinbox_…` metric name in `text`.
fn metric_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(start) = rest.find("hookinbox_") {
        let tail = &rest[start..];
        let end = tail
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        names.insert(tail[..end].to_owned());
        rest = &tail[end..];
    }
    names
}

/// Names of `used` that are no family of `exported`, nor a histogram's or
/// summary's series of one.
fn unknown(used: &BTreeSet<String>, exported: &BTreeSet<String>) -> Vec<String> {
    used.iter()
        .filter(|name| {
            !exported.contains(*name)
                && !["_bucket", "_sum", "_count"].iter().any(|suffix| {
                    name.strip_suffix(suffix)
                        .is_some_and(|family| exported.contains(family))
                })
        })
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_alerts_and_the_dashboard_use_only_exported_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let sink = Sink::start().await;
    let config = TestConfig::new(&db)
        .http_target(&sink.url(), "")
        .extra(
            "[admin]\nlisten = \"127.0.0.1:0\"\n\n[metrics]\nsample_interval = \"100ms\"\n\
             count_interval = \"100ms\"\n\n[reconcile]\ninterval = \"200ms\"\n",
        )
        .to_string();
    let server = Server::start(dir.path(), &config);
    let admin = server.admin_address().await;
    let answer = post(&client(), &server.url("/hooks/lab"), &lab_event("seen")).await;
    assert_eq!(answer.status, 200);
    assert!(eventually(Duration::from_secs(10), || sink.accepted().len() == 1).await);

    // Until the workers, the sampler and a reconciliation pass have all
    // recorded what they record.
    let needed = [
        "hookinbox_receive_to_delivered_seconds",
        "hookinbox_inbox_rows",
        "hookinbox_readiness_check_failing",
        "hookinbox_reconcile_runs_total",
    ];
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let exported = loop {
        let exported = families(&scrape(admin).await);
        if needed.iter().all(|name| exported.contains(*name)) {
            break exported;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never exported all of {needed:?}: {exported:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };

    let alerts = metric_names(&repository_file("deploy/prometheus/alerts.yml"));
    let dashboard_text = repository_file("deploy/grafana/hookinbox.json");
    let dashboard_json: serde_json::Value =
        serde_json::from_str(&dashboard_text).expect("the dashboard is JSON");
    assert_eq!(dashboard_json["title"], "hookinbox");
    let dashboard = metric_names(&dashboard_text);
    assert!(
        alerts.len() >= 7 && dashboard.len() >= 20,
        "{alerts:?} {dashboard:?}"
    );
    assert_eq!(
        unknown(&alerts, &exported),
        Vec::<String>::new(),
        "alerts.yml"
    );
    assert_eq!(
        unknown(&dashboard, &exported),
        Vec::<String>::new(),
        "hookinbox.json"
    );

    // What the dashboard is for: every one of these is on it.
    let promised = [
        "hookinbox_ingress_requests_total",
        "hookinbox_ack_duration_seconds_bucket",
        "hookinbox_oldest_unprocessed_age_seconds",
        "hookinbox_inbox_rows",
        "hookinbox_delivery_backlog",
        "hookinbox_oldest_due_delivery_age_seconds",
        "hookinbox_receive_to_delivered_seconds_bucket",
        "hookinbox_deliveries_total",
        "hookinbox_commit_queue_depth",
        "hookinbox_commit_queue_full_total",
        "hookinbox_open_connections",
        "hookinbox_inflight_body_bytes",
        "hookinbox_build_info",
        "hookinbox_readiness_check_failing",
        "hookinbox_secret_version_expiry_timestamp_seconds",
        "hookinbox_reconcile_repaired_total",
    ];
    let missing: Vec<_> = promised
        .iter()
        .filter(|name| !dashboard.contains(**name))
        .collect();
    assert!(missing.is_empty(), "not on the dashboard: {missing:?}");
    // Every panel's query names the instance variable, so one dashboard
    // serves one process or a fleet.
    for panel in dashboard_json["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap_or_default();
            assert!(expr.contains("$instance"), "{}: {expr}", panel["title"]);
        }
    }
}

#[test]
fn names_are_read_whole_and_series_map_to_their_family() {
    let names =
        metric_names(r#"rate(hookinbox_ack_duration_seconds_bucket{a="b"}[5m]) hookinbox_x"#);
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        ["hookinbox_ack_duration_seconds_bucket", "hookinbox_x"]
    );
    let exported: BTreeSet<String> = ["hookinbox_ack_duration_seconds".to_owned()].into();
    let used: BTreeSet<String> = [
        "hookinbox_ack_duration_seconds_bucket".to_owned(),
        "hookinbox_nope_total".to_owned(),
    ]
    .into();
    assert_eq!(unknown(&used, &exported), ["hookinbox_nope_total"]);
}
