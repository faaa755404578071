//! Routing by `event_types` and `filter` (docs/delivery.md, "Routing"),
//! through the real binary on both backends: a Stripe endpoint with three
//! targets gets, for a mixed batch, exactly one delivery row per matching
//! target and none for the others, records which targets it was routed to
//! and which not, and an event no target takes is PROCESSED at once. A
//! filter that fails on an event (a missing field) does not match, is
//! counted, and fails no request.

use crate::support;

use std::collections::BTreeSet;

use support::*;

on_both_backends!(three_targets_get_exactly_the_events_they_match);

const STRIPE_SECRET: &str = "whsec_routing_test_00000000000000";

/// Each target an http one at a closed port, retried only after an hour:
/// the rows are what is under test, not the sends.
fn target(name: &str, rules: &str) -> String {
    format!(
        r#"
[[endpoint.target]]
name = "{name}"
kind = "http"
url = "http://127.0.0.1:9/"
secret = "{TARGET_SECRET}"
retry_base = "1h"
retry_cap = "1h"
{rules}"#
    )
}

/// The `n`th event of the batch: its type and amount cycle, so every
/// combination of the three rules occurs; every seventh has no amount,
/// so the filters that read it fail on it.
fn event(n: usize) -> (String, &'static str, Option<i64>) {
    const TYPES: [&str; 5] = [
        "invoice.paid",
        "invoice.payment_failed",
        "charge.succeeded",
        "customer.subscription.updated",
        "invoice.payment.action_required",
    ];
    let amount = [500, 1000, 1001, 25_000][n % 4];
    let amount = (n % 7 != 6).then_some(amount);
    (format!("evt_route_{n:04}"), TYPES[n % 5], amount)
}

async fn three_targets_get_exactly_the_events_they_match(backend: Backend) {
    let storage = Storage::new(backend);
    let config = storage
        .config()
        .extra("[admin]\nlisten = \"127.0.0.1:0\"\n")
        .endpoint("stripe", "stripe", "", STRIPE_SECRET)
        .extra(&target("billing", r#"event_types = ["invoice.*"]"#))
        .extra(&target(
            "fraud",
            r#"filter = "body.data.object.amount > 1000 && event.provider == 'stripe'""#,
        ))
        .extra(&target(
            "subscriptions",
            r#"event_types = ["customer.subscription.*"]
filter = "body.data.object.amount >= 25000""#,
        ))
        .to_string();
    let server = Server::start(storage.dir.path(), &config);
    let client = client();
    let url = server.url("/hooks/stripe");
    const EVENTS: usize = 300;
    for n in 0..EVENTS {
        let (id, event_type, amount) = event(n);
        let amount = amount
            .map(|a| format!(r#","amount":{a}"#))
            .unwrap_or_default();
        let body = format!(
            r#"{{"id":"{id}","object":"event","type":"{event_type}","created":1700000000,"data":{{"object":{{"id":"obj_{n}"{amount}}}}}}}"#
        );
        let answer = post(&client, &url, &stripe_signed(STRIPE_SECRET, &body, now())).await;
        assert_eq!(answer.status, 200, "{id}: {:?}", answer.body);
    }

    let mut expected: BTreeSet<(String, String)> = BTreeSet::new();
    let mut unrouted: BTreeSet<String> = BTreeSet::new();
    let mut filter_errors = 0;
    for n in 0..EVENTS {
        let (id, event_type, amount) = event(n);
        let billing = event_type.starts_with("invoice.") && event_type.matches('.').count() == 1;
        let subscription_type = event_type.starts_with("customer.subscription.");
        let Some(amount) = amount else {
            // fraud's filter fails; subscriptions' too, where its type let it run.
            filter_errors += 1 + usize::from(subscription_type);
            if billing {
                expected.insert((id, "billing".to_owned()));
            } else {
                unrouted.insert(id);
            }
            continue;
        };
        let fraud = amount > 1000;
        let subscriptions = subscription_type && amount >= 25_000;
        for (name, routed) in [
            ("billing", billing),
            ("fraud", fraud),
            ("subscriptions", subscriptions),
        ] {
            if routed {
                expected.insert((id.clone(), name.to_owned()));
            }
        }
        if !(billing || fraud || subscriptions) {
            unrouted.insert(id);
        }
    }
    assert!(!unrouted.is_empty(), "the batch has events no target takes");
    // A filter that fails does not match, is counted, and failed no request.
    let admin = server.admin_address().await;
    assert_eq!(
        metric_value(admin, "hookinbox_filter_errors_total").await,
        Some(filter_errors as f64)
    );

    let reads = storage.reads().await;
    let events = storage.events().await;
    assert_eq!(events.len(), EVENTS);
    let mut rows: Vec<(String, String)> = Vec::new();
    for summary in &events {
        let (detail, _) = reads
            .show_event(&summary.id, false)
            .await
            .expect("show the event")
            .expect("a listed event exists");
        for delivery in &detail.deliveries {
            rows.push((summary.provider_event_id.clone(), delivery.target.clone()));
        }
        // The event records where it went and where not.
        let routed_to: BTreeSet<String> = detail
            .routed_to
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect();
        let rows_of: BTreeSet<String> =
            detail.deliveries.iter().map(|d| d.target.clone()).collect();
        assert_eq!(routed_to, rows_of, "{}", summary.provider_event_id);
        let mut all: Vec<String> = detail.not_routed.clone();
        all.extend(routed_to);
        all.sort();
        assert_eq!(
            all,
            ["billing", "fraud", "subscriptions"],
            "{}",
            summary.provider_event_id
        );
        if unrouted.contains(&summary.provider_event_id) {
            assert_eq!(
                summary.status, "PROCESSED",
                "{}: no target matched",
                summary.provider_event_id
            );
        }
    }
    let found: BTreeSet<(String, String)> = rows.iter().cloned().collect();
    assert_eq!(rows.len(), found.len(), "one row per event and target");
    assert_eq!(found, expected);
}

/// `hookinbox config check` on a configuration whose `fraud` target has
/// `filter`; its exit code and stderr.
fn config_check(filter: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let config = TestConfig::new(&dir.path().join("inbox.db"))
        .endpoint("stripe", "stripe", "", STRIPE_SECRET)
        .extra(&target("fraud", &format!("filter = '{filter}'")))
        .to_string();
    let path = dir.path().join("hookinbox.toml");
    std::fs::write(&path, config).expect("write the config");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(["config", "check", "--config"])
        .arg(&path)
        .output()
        .expect("run hookinbox");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn config_check_names_the_target_and_where_its_filter_is_wrong() {
    let (code, stderr) = config_check("body.data.object.amount > ");
    assert_ne!(code, Some(0), "{stderr}");
    assert!(stderr.contains("endpoint[1].target[0].filter"), "{stderr}");
    assert!(stderr.contains("target `fraud`"), "{stderr}");
    assert!(stderr.contains("does not parse at 1:27: "), "{stderr}");

    for (filter, said) in [
        ("event.type > 1000", "at 1:12: compares string with int"),
        (
            "evnt.type == \"invoice.paid\"",
            "at 1:1: `evnt` is not a variable",
        ),
        ("event.type", "at 1:1: answers string, not a boolean"),
        (
            "body.data.object.amount > \"1000\"",
            "at 1:25: compares int with string (over the stripe sample event",
        ),
    ] {
        let (code, stderr) = config_check(filter);
        assert_eq!(code, Some(2), "{filter}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "endpoint[1].target[0].filter: target `fraud`: {said}"
            )),
            "{filter}: {stderr}"
        );
    }

    let (code, stderr) = config_check("body.data.object.amount > 1000");
    assert_eq!(code, Some(0), "{stderr}");
}
