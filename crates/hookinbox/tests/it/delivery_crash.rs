//! Crashes around delivery, with the real binary: after each restart every
//! accepted event reaches a terminal state; the sink sees every accepted
//! event's key at least once and no key that is not an accepted event. On
//! SQLite and on PostgreSQL alike.

use crate::support;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use rand::Rng;
use support::*;

fn key_counts(sink: &Sink) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for received in sink.accepted() {
        *counts
            .entry(received.header("idempotency-key"))
            .or_default() += 1;
    }
    counts
}

on_both_backends!(
    crash_after_commit_before_response,
    crash_after_target_accepted_before_delivered_is_recorded,
    crashes_in_the_middle_of_delivery_batches,
);

/// `storage`'s configuration delivering to `sink`, with more target settings.
fn config_for(storage: &Storage, sink: &Sink, target_settings: &str) -> String {
    storage
        .config()
        .http_target(&sink.url(), target_settings)
        .to_string()
}

async fn inbox_ids(storage: &Storage) -> HashSet<String> {
    storage.events().await.into_iter().map(|e| e.id).collect()
}

async fn crash_after_commit_before_response(backend: Backend) {
    let sink = Sink::start().await;
    let storage = Storage::new(backend);
    let dir = storage.dir.path();
    let config = config_for(&storage, &sink, "");
    let event = lab_event("crash-a");
    {
        let _server = Server::start_with_failpoint(dir, &config, "after_commit_before_response");
        let url = _server.url("/hooks/lab");
        let outcome = send(&client(), "POST", &url, &event).await;
        assert!(
            outcome.is_err(),
            "the process died before answering: {outcome:?}"
        );
    }
    // The provider never got a 2xx and retries; the event was committed, so
    // the retry is a duplicate of the same row.
    let server = Server::start(dir, &config);
    let retry = post(&client(), &server.url("/hooks/lab"), &event).await;
    assert_eq!(retry.status, 200);
    assert_eq!(retry.json()["duplicate"], true);
    let id = retry.json()["id"].as_str().unwrap().to_owned();
    assert!(storage.all_terminal(1, Duration::from_secs(10)).await);
    assert!(eventually(Duration::from_secs(10), || !sink.accepted().is_empty()).await);
    assert_eq!(key_counts(&sink), HashMap::from([(id, 1)]));
}

async fn crash_after_target_accepted_before_delivered_is_recorded(backend: Backend) {
    let sink = Sink::start().await;
    let storage = Storage::new(backend);
    let dir = storage.dir.path();
    let config = config_for(&storage, &sink, "");
    let id = {
        let mut server =
            Server::start_with_failpoint(dir, &config, "after_target_accepted_before_settle");
        let answer = post(&client(), &server.url("/hooks/lab"), &lab_event("crash-b")).await;
        assert_eq!(answer.status, 200);
        assert!(eventually(Duration::from_secs(10), || sink.accepted().len() == 1).await);
        server.kill9(); // already aborted at the failpoint; reap it
        answer.json()["id"].as_str().unwrap().to_owned()
    };
    assert_eq!(
        storage.statuses().await["crash-b"],
        "ACCEPTED",
        "DELIVERED was never recorded"
    );
    // After restart the expired lease is reclaimed and the event delivered again:
    // at-least-once, with the same idempotency key for the app to dedup on.
    let _server = Server::start(dir, &config);
    assert!(storage.all_terminal(1, Duration::from_secs(15)).await);
    assert_eq!(key_counts(&sink), HashMap::from([(id, 2)]));
}

async fn crashes_in_the_middle_of_delivery_batches(backend: Backend) {
    let sink = Sink::start().await;
    // 60 events a round through 8 slots at 60 ms each take ~450 ms to drain, so
    // a kill 20–120 ms after the last ack always lands with deliveries pending
    // (at 15 ms a round could drain before the kill on a fast, quiet machine).
    sink.set_delay(Duration::from_millis(60));
    let storage = Storage::new(backend);
    let dir = storage.dir.path();
    let config = config_for(&storage, &sink, "concurrency = 8");
    let mut accepted = HashSet::new();
    let mut kills_with_pending = 0;
    for round in 0..4 {
        let mut server = Server::start(dir, &config);
        let client = client();
        let url = server.url("/hooks/lab");
        let sends: Vec<_> = (0..60)
            .map(|n| {
                let (client, url) = (client.clone(), url.clone());
                tokio::spawn(async move {
                    let id = format!("batch-{round}-{n}");
                    let answer = send(&client, "POST", &url, &lab_event(&id)).await;
                    answer
                        .ok()
                        .filter(|a| a.status == 200)
                        .map(|a| a.json()["id"].as_str().unwrap().to_owned())
                })
            })
            .collect();
        for send in sends {
            if let Some(id) = send.await.unwrap() {
                accepted.insert(id);
            }
        }
        // Kill while deliveries are in flight.
        let delay = rand::rng().random_range(20..120);
        tokio::time::sleep(Duration::from_millis(delay)).await;
        server.kill9();
        let pending = storage
            .statuses()
            .await
            .values()
            .filter(|s| *s == "ACCEPTED")
            .count();
        if pending > 0 {
            kills_with_pending += 1;
        }
    }
    assert!(
        kills_with_pending >= 2,
        "only {kills_with_pending} of 4 kills landed while deliveries were pending"
    );
    assert_eq!(
        accepted.len(),
        240,
        "every send was acknowledged before its kill"
    );

    let _server = Server::start(dir, &config);
    assert!(
        storage.all_terminal(240, Duration::from_secs(30)).await,
        "{:?}",
        storage
            .statuses()
            .await
            .values()
            .filter(|s| *s != "PROCESSED")
            .count()
    );
    assert_eq!(
        inbox_ids(&storage).await,
        accepted,
        "every acknowledged event is in the inbox"
    );
    assert!(storage.statuses().await.values().all(|s| s == "PROCESSED"));
    let counts = key_counts(&sink);
    let seen: HashSet<String> = counts.keys().cloned().collect();
    assert_eq!(
        seen, accepted,
        "every accepted event delivered; no foreign key"
    );
    let redelivered = counts.values().filter(|n| **n > 1).count();
    eprintln!(
        "{redelivered} of {} events were delivered more than once (at-least-once)",
        accepted.len()
    );
}
