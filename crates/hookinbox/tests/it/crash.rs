//! What a 2xx promises survives `kill -9`: requests stream in from many
//! concurrent senders while the server is killed at random moments (so some
//! kills land in the middle of a group commit, or of a PostgreSQL batch);
//! after each kill the server restarts on the same database and every
//! acknowledged event must be there, with its body byte for byte (on
//! SQLite: the row and the payload log agree).

use crate::support;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::Rng;
use support::*;

const KILLS: usize = 6;
const SENDERS: usize = 32;

on_both_backends!(acknowledged_events_survive_kill_9);

async fn acknowledged_events_survive_kill_9(backend: Backend) {
    let storage = Storage::new(backend);
    let dir = &storage.dir;
    let config_text = storage.config().to_string();
    // Acknowledged event id → the body sent.
    let acked: Arc<Mutex<HashMap<String, String>>> = Arc::default();
    let mut total_acked_before_kills = Vec::new();

    for round in 0..KILLS {
        let mut server = Server::start(dir.path(), &config_text);
        let url = server.url("/hooks/lab");
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let senders: Vec<_> = (0..SENDERS)
            .map(|sender| {
                let (url, acked, stop) = (url.clone(), Arc::clone(&acked), Arc::clone(&stop));
                tokio::spawn(async move {
                    let client = client();
                    let mut n = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let id = format!("r{round}-s{sender}-n{n}");
                        n += 1;
                        // Bodies of varied size so commits take varied time.
                        let pad = "x".repeat((n as usize * 997) % 20_000);
                        let body = format!(r#"{{"id":"{id}","pad":"{pad}"}}"#);
                        let event = lab_signed(body.clone(), now());
                        match send(&client, "POST", &url, &event).await {
                            Ok(answer) if answer.status == 200 => {
                                acked.lock().unwrap().insert(id, body);
                            }
                            Ok(answer) => {
                                panic!("unexpected status {} before the kill", answer.status)
                            }
                            Err(_) => break, // the server died under us
                        }
                    }
                })
            })
            .collect();
        let delay = rand::rng().random_range(150..600);
        tokio::time::sleep(Duration::from_millis(delay)).await;
        server.kill9();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for sender in senders {
            sender.await.unwrap();
        }
        total_acked_before_kills.push(acked.lock().unwrap().len());

        let rows = storage.events().await;
        let stored: HashSet<String> = rows.iter().map(|r| r.provider_event_id.clone()).collect();
        let acked_now = acked.lock().unwrap().clone();
        let lost: Vec<_> = acked_now
            .keys()
            .filter(|id| !stored.contains(*id))
            .collect();
        assert!(
            lost.is_empty(),
            "round {round}: {} acknowledged events lost, e.g. {:?}",
            lost.len(),
            lost.iter().take(5).collect::<Vec<_>>()
        );
        // Every acknowledged row's body reads back exactly as sent (the
        // reader also checks it against the stored SHA-256).
        let reads = storage.reads().await;
        for row in &rows {
            let Some(sent) = acked_now.get(&row.provider_event_id) else {
                continue;
            };
            let (_, body) = reads.show_event(&row.id, true).await.unwrap().unwrap();
            assert_eq!(
                body.as_deref(),
                Some(sent.as_bytes()),
                "round {round}: the body of {}",
                row.provider_event_id
            );
        }
    }
    let acked = acked.lock().unwrap().len();
    assert!(
        acked > KILLS * SENDERS,
        "too little traffic to mean anything: {acked} acks ({total_acked_before_kills:?})"
    );

    // The file is healthy after all those kills: a final start accepts and dedups.
    let server = Server::start(dir.path(), &config_text);
    let client = client();
    let answer = post(
        &client,
        &server.url("/hooks/lab"),
        &lab_event("after-kills"),
    )
    .await;
    assert_eq!(answer.status, 200);
    assert_eq!(answer.json()["duplicate"], false);
    if let Some(db) = storage.sqlite_file() {
        let conn = rusqlite::Connection::open(db).unwrap();
        let check: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok");
    }
}
