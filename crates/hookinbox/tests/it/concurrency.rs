//! Many concurrent copies of one event: exactly one row, every copy a 2xx
//! naming that row — on SQLite (one group commit resolves them) and on
//! PostgreSQL (one batch, ON CONFLICT) alike. Copies spread over two
//! processes on one PostgreSQL are in `postgres_processes.rs`.

use crate::support;

use std::collections::HashSet;

use support::*;

on_both_backends!(five_hundred_concurrent_copies_make_one_row);

async fn five_hundred_concurrent_copies_make_one_row(backend: Backend) {
    let storage = Storage::new(backend);
    let server = Server::start(storage.dir.path(), &storage.config().to_string());
    let client = client();
    let url = server.url("/hooks/lab");
    let event = lab_event("evt_once");

    let copies = (0..500).map(|_| {
        let (client, url, event) = (client.clone(), url.clone(), event.clone());
        tokio::spawn(async move { post(&client, &url, &event).await })
    });
    let answers = futures::future::join_all(copies).await;

    let mut ids = HashSet::new();
    let mut fresh = 0;
    for answer in answers {
        let answer = answer.unwrap();
        assert_eq!(answer.status, 200, "{:?}", answer.body);
        let json = answer.json();
        assert_eq!(json["accepted"], true);
        if json["duplicate"] == false {
            fresh += 1;
        }
        ids.insert(json["id"].as_str().unwrap().to_owned());
    }
    assert_eq!(fresh, 1, "exactly one copy created the row");
    assert_eq!(ids.len(), 1, "every copy names the same inbox row");
    let rows = storage.events().await;
    assert_eq!(rows.len(), 1);
    assert_eq!(Some(&rows[0].id), ids.iter().next());
    let (_, body) = storage.event(&rows[0].id).await;
    assert_eq!(body, event.body, "the body of the one row");
    if let Some(db) = storage.sqlite_file() {
        assert_eq!(
            payload_log_bytes(db),
            event.body.len() as u64,
            "one copy of the body on disk, not one per request"
        );
    }
}
