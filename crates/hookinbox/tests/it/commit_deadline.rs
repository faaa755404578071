//! A store that stops answering (a frozen disk) is answered 503 +
//! Retry-After within `storage.commit_timeout`, never a late 2xx; once it
//! answers again, the provider's retry is 200 and the event is stored
//! exactly once. The stall is the store's test failpoint
//! (`HOOKINBOX_FAILPOINT=stall_commit:PATH`: every COMMIT waits while the
//! file PATH exists).

use crate::support;

use std::time::{Duration, Instant};

use support::*;

const DEADLINE: Duration = Duration::from_millis(300);

fn rows_for(db: &std::path::Path, event_id: &str) -> usize {
    inbox_rows(db)
        .iter()
        .filter(|(_, _, id)| id == event_id)
        .count()
}

#[tokio::test]
async fn a_stalled_commit_is_answered_503_within_the_deadline_and_stored_once_on_retry() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let stall = dir.path().join("stall");
    let config = config(&db, "").replace("[storage]\n", "[storage]\ncommit_timeout = \"300ms\"\n");
    let server = Server::start_with_failpoint(
        dir.path(),
        &config,
        &format!("stall_commit:{}", stall.display()),
    );
    let client = client();
    let url = server.url("/hooks/lab");
    let answer = post(&client, &url, &lab_event("before-the-stall")).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);

    std::fs::write(&stall, b"").unwrap();
    // The first event's op is taken into a batch that then waits before
    // its COMMIT; the second's waits in the queue behind it.
    let mut refused = Vec::new();
    for event_id in ["in-the-stalled-batch", "queued-behind-it"] {
        let signed = lab_event(event_id);
        let started = Instant::now();
        let answer = post(&client, &url, &signed).await;
        let waited = started.elapsed();
        assert_eq!(answer.status, 503, "{event_id}: {:?}", answer.body);
        assert_eq!(answer.error(), "unavailable");
        assert!(answer.headers.contains_key("retry-after"), "{event_id}");
        assert!(
            waited >= DEADLINE - Duration::from_millis(20),
            "{event_id}: answered after {waited:?}, before the deadline"
        );
        assert!(
            waited < DEADLINE + Duration::from_millis(1_500),
            "{event_id}: answered only after {waited:?}"
        );
        refused.push((event_id, signed));
    }

    std::fs::remove_file(&stall).unwrap();
    for (event_id, signed) in &refused {
        let answer = retry_until_accepted(&client, &url, signed, Duration::from_secs(10)).await;
        assert_eq!(answer.json()["accepted"], true, "{event_id}");
        assert_eq!(
            rows_for(&db, event_id),
            1,
            "{event_id} is stored exactly once"
        );
    }
    assert_eq!(inbox_rows(&db).len(), 3);
    assert!(
        server.logs().contains("storage.commit_timeout"),
        "a timed-out commit is logged"
    );
}
