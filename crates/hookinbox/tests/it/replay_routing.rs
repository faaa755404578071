//! Replay evaluates routing again against the configuration in force now
//! (docs/delivery.md, "Replay"), through the real binary on both backends:
//! events accepted under one configuration are replayed under another
//! that changes a target's `event_types` and adds a target with a filter.
//! `events replay --target NAME` sends old events to the new target alone
//! (those its filter takes), the admin API's `target` does the same, and a
//! replay without it sends each event to exactly the targets that take it
//! now; the event's routed / not-routed record follows, and each target's
//! sink receives exactly those events.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use http_body_util::Full;
use serde_json::{json, Value};
use support::*;

on_both_backends!(replay_routes_old_events_by_the_current_configuration);

const STRIPE_SECRET: &str = "whsec_replay_routing_0000000000000";
const TOKEN: &str = "replay-routing-admin-token-0123456789";
const EVENTS: usize = 24;
const WITHIN: Duration = Duration::from_secs(60);

/// The `n`th event: its type and amount cycle through every combination.
fn event(n: usize) -> (String, &'static str, i64) {
    const TYPES: [&str; 3] = ["invoice.paid", "charge.succeeded", "customer.created"];
    const AMOUNTS: [i64; 2] = [500, 5000];
    (
        format!("evt_replay_{n:03}"),
        TYPES[n % 3],
        AMOUNTS[(n / 3) % 2],
    )
}

fn target(name: &str, sink: &Sink, rules: &str) -> String {
    format!(
        r#"
[[endpoint.target]]
name = "{name}"
kind = "http"
url = "{}"
secret = "{TARGET_SECRET}"
{rules}"#,
        sink.url()
    )
}

/// Accepted with: billing takes `invoice.*`, fraud amounts over 1,000.
fn first_config(storage: &Storage, sinks: &BTreeMap<&str, Sink>) -> String {
    storage
        .config()
        .extra(&admin_table(TOKEN))
        .endpoint("stripe", "stripe", "", STRIPE_SECRET)
        .extra(&target(
            "billing",
            &sinks["billing"],
            r#"event_types = ["invoice.*"]"#,
        ))
        .extra(&target(
            "fraud",
            &sinks["fraud"],
            r#"filter = "body.data.object.amount > 1000""#,
        ))
        .to_string()
}

/// Now: billing takes charges too, and a new target, ledger, takes
/// invoices of 5,000 or more.
fn second_config(storage: &Storage, sinks: &BTreeMap<&str, Sink>) -> String {
    storage
        .config()
        .extra(&admin_table(TOKEN))
        .endpoint("stripe", "stripe", "", STRIPE_SECRET)
        .extra(&target(
            "billing",
            &sinks["billing"],
            r#"event_types = ["invoice.*", "charge.*"]"#,
        ))
        .extra(&target(
            "fraud",
            &sinks["fraud"],
            r#"filter = "body.data.object.amount > 1000""#,
        ))
        .extra(&target(
            "ledger",
            &sinks["ledger"],
            r#"filter = "event.type.startsWith('invoice.') && body.data.object.amount >= 5000 && headers['content-type'].startsWith('application/json')""#,
        ))
        .to_string()
}

/// The targets that take event `n` under the second configuration.
fn routed_now(n: usize) -> BTreeSet<&'static str> {
    let (_, event_type, amount) = event(n);
    let mut targets = BTreeSet::new();
    if event_type.starts_with("invoice.") || event_type.starts_with("charge.") {
        targets.insert("billing");
    }
    if amount > 1000 {
        targets.insert("fraud");
    }
    if event_type.starts_with("invoice.") && amount >= 5000 {
        targets.insert("ledger");
    }
    targets
}

fn hookinbox(args: &[&str], config: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .args(args)
        .arg("--config")
        .arg(config)
        .output()
        .expect("run hookinbox")
}

/// `events replay --endpoint stripe --json` with `extra` arguments: the
/// provider event ids it replayed.
fn replay_cli(config: &Path, extra: &[&str], ids: &BTreeMap<String, String>) -> BTreeSet<String> {
    let mut args = vec!["events", "replay", "--endpoint", "stripe", "--json"];
    args.extend_from_slice(extra);
    let out = hookinbox(&args, config);
    assert!(
        out.status.success(),
        "events replay: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: Value = serde_json::from_slice(&out.stdout).expect("replay prints JSON");
    answer["replayed"]
        .as_array()
        .expect("replayed ids")
        .iter()
        .map(|id| ids[id.as_str().expect("an inbox id")].clone())
        .collect()
}

/// Provider event ids each sink received with a 2xx.
fn received(sinks: &BTreeMap<&str, Sink>) -> BTreeMap<String, Vec<String>> {
    sinks
        .iter()
        .map(|(name, sink)| {
            let mut ids: Vec<String> = sink
                .accepted()
                .iter()
                .map(|request| {
                    let body: Value = serde_json::from_slice(&request.body).expect("JSON body");
                    body["id"].as_str().expect("an event id").to_owned()
                })
                .collect();
            ids.sort();
            ((*name).to_owned(), ids)
        })
        .collect()
}

async fn admin_replay(admin: std::net::SocketAddr, body: Value) -> (u16, Value) {
    let request = hyper::Request::builder()
        .method("POST")
        .uri(format!("http://{admin}/admin/replay"))
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("content-type", "application/json")
        .body(Full::new(body.to_string().into()))
        .expect("a request");
    let response = client()
        .request(request)
        .await
        .expect("the admin API answers");
    let status = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .expect("a body")
        .to_bytes();
    (status, serde_json::from_slice(&bytes).expect("JSON"))
}

/// Waits until every event is terminal and no delivery is left pending.
async fn settled(storage: &Storage) {
    assert!(
        until(WITHIN, || async {
            storage.all_terminal(EVENTS, Duration::ZERO).await
                && storage
                    .deliveries()
                    .await
                    .iter()
                    .all(|d| d.status == "DELIVERED")
        })
        .await,
        "every delivery delivered: {:?}",
        storage.statuses().await
    );
}

async fn replay_routes_old_events_by_the_current_configuration(backend: Backend) {
    let storage = Storage::new(backend);
    let mut sinks = BTreeMap::new();
    for name in ["billing", "fraud", "ledger"] {
        sinks.insert(name, Sink::start().await);
    }

    // Accepted and delivered under the first configuration.
    let mut server = Server::start(storage.dir.path(), &first_config(&storage, &sinks));
    let client = client();
    for n in 0..EVENTS {
        let (id, event_type, amount) = event(n);
        let body = format!(
            r#"{{"id":"{id}","object":"event","type":"{event_type}","created":1700000000,"data":{{"object":{{"id":"obj_{n}","amount":{amount}}}}}}}"#
        );
        let answer = post(
            &client,
            &server.url("/hooks/stripe"),
            &stripe_signed(STRIPE_SECRET, &body, now()),
        )
        .await;
        assert_eq!(answer.status, 200, "{id}: {:?}", answer.body);
    }
    settled(&storage).await;
    server.terminate(WITHIN).await.expect("the server stops");
    let before = received(&sinks);
    assert!(before["ledger"].is_empty());
    let ids: BTreeMap<String, String> = storage
        .events()
        .await
        .into_iter()
        .map(|e| (e.id, e.provider_event_id))
        .collect();
    let number = |provider_id: &str| -> usize {
        provider_id
            .trim_start_matches("evt_replay_")
            .parse()
            .expect("a numbered event")
    };

    // The configuration changes; the operator sends the old events to the
    // new target alone.
    let config_path = storage.dir.path().join("now.toml");
    std::fs::write(&config_path, second_config(&storage, &sinks)).expect("write the config");
    let unknown = hookinbox(
        &[
            "events",
            "replay",
            "--endpoint",
            "stripe",
            "--target",
            "nosuch",
        ],
        &config_path,
    );
    assert!(!unknown.status.success());
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("nosuch"),
        "{}",
        String::from_utf8_lossy(&unknown.stderr)
    );
    let to_ledger: BTreeSet<String> = (0..EVENTS)
        .filter(|n| routed_now(*n).contains("ledger"))
        .map(|n| event(n).0)
        .collect();
    assert!(!to_ledger.is_empty() && to_ledger.len() < EVENTS);
    assert_eq!(
        replay_cli(&config_path, &["--target", "ledger"], &ids),
        to_ledger
    );
    let reads = storage.reads().await;
    for (inbox_id, provider_id) in &ids {
        let (detail, _) = reads
            .show_event(inbox_id, false)
            .await
            .expect("show the event")
            .expect("the event exists");
        let latest = detail.deliveries.iter().map(|d| d.generation).max();
        let latest_targets: BTreeSet<&str> = detail
            .deliveries
            .iter()
            .filter(|d| Some(d.generation) == latest)
            .map(|d| d.target.as_str())
            .collect();
        let routed: BTreeSet<String> = detail
            .routed_to
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect();
        if to_ledger.contains(provider_id) {
            assert_eq!(latest_targets, BTreeSet::from(["ledger"]), "{provider_id}");
            assert_eq!(detail.summary.status, "ACCEPTED", "{provider_id}");
            assert!(routed.contains("ledger"), "{provider_id}: {routed:?}");
            assert!(!detail.not_routed.contains(&"ledger".to_owned()));
        } else {
            // Not replayed: no generation above acceptance's (none at all
            // for an event the first configuration routed nowhere).
            assert!(latest.unwrap_or(0) == 0, "{provider_id}: not replayed");
            assert!(!routed.contains("ledger"), "{provider_id}");
        }
    }

    // The server comes back with the new configuration and delivers them.
    // In a folder of its own, so its log (and admin address) is its own.
    let second = storage.dir.path().join("second");
    std::fs::create_dir(&second).expect("a folder for the second server");
    let mut server = Server::start_with(&second, &config_path);
    settled(&storage).await;
    let after_target = received(&sinks);
    assert_eq!(
        after_target["billing"], before["billing"],
        "--target: billing untouched"
    );
    assert_eq!(
        after_target["fraud"], before["fraud"],
        "--target: fraud untouched"
    );
    assert_eq!(
        after_target["ledger"]
            .iter()
            .cloned()
            .collect::<BTreeSet<_>>(),
        to_ledger
    );
    assert_eq!(after_target["ledger"].len(), to_ledger.len(), "once each");

    // The admin API's `target` does the same.
    let admin = server.admin_address().await;
    let (status, answer) = admin_replay(
        admin,
        json!({"filter": {"endpoint": "stripe"}, "target": "ledger"}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer,
        json!({"dry_run": false, "matched": EVENTS, "replayed": to_ledger.len()})
    );
    let (status, answer) = admin_replay(
        admin,
        json!({"filter": {"endpoint": "stripe"}, "target": "nosuch"}),
    )
    .await;
    assert_eq!(status, 400, "{answer}");
    settled(&storage).await;
    assert_eq!(received(&sinks)["ledger"].len(), 2 * to_ledger.len());

    // A replay without --target sends each event to exactly the targets
    // that take it now.
    let routed_somewhere: BTreeSet<String> = (0..EVENTS)
        .filter(|n| !routed_now(*n).is_empty())
        .map(|n| event(n).0)
        .collect();
    assert!(
        routed_somewhere.len() < EVENTS,
        "some events no target takes"
    );
    let before_all = received(&sinks);
    assert_eq!(replay_cli(&config_path, &[], &ids), routed_somewhere);
    settled(&storage).await;
    let after_all = received(&sinks);
    for (name, got) in &after_all {
        let mut new: Vec<String> = got.clone();
        for old in &before_all[name] {
            let at = new.iter().position(|id| id == old).expect("still received");
            new.remove(at);
        }
        new.sort();
        let expected: Vec<String> = (0..EVENTS)
            .filter(|n| routed_now(*n).contains(name.as_str()))
            .map(|n| event(n).0)
            .collect();
        assert_eq!(
            new, expected,
            "{name} received exactly what routes to it now"
        );
    }
    for (inbox_id, provider_id) in &ids {
        let (detail, _) = reads
            .show_event(inbox_id, false)
            .await
            .expect("show the event")
            .expect("the event exists");
        let expected = routed_now(number(provider_id));
        if expected.is_empty() {
            continue;
        }
        let routed: BTreeSet<String> = detail
            .routed_to
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect();
        let expected_routed: BTreeSet<String> = expected.iter().map(|t| (*t).to_owned()).collect();
        assert_eq!(routed, expected_routed, "{provider_id}: routed record");
        let not_routed: BTreeSet<String> = detail.not_routed.iter().cloned().collect();
        let expected_not: BTreeSet<String> = ["billing", "fraud", "ledger"]
            .into_iter()
            .filter(|t| !expected.contains(t))
            .map(str::to_owned)
            .collect();
        assert_eq!(not_routed, expected_not, "{provider_id}: not-routed record");
    }
    server.terminate(WITHIN).await.expect("the server stops");
}
