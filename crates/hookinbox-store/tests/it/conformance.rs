//! The behaviour every `Store` (and `StoreReads`) must have: each scenario
//! is written once, as an `async fn(&Backend)`, and `conformance!` makes one
//! test of it per backend (`sqlite::…`, `postgres::…`). Scenarios that
//! reopen their store (with other encryption keys) own it instead, as an
//! `async fn(Backend)`, and are listed under `reopening`. Backend-specific
//! behaviour (SQLite's payload log, PostgreSQL across processes) is tested
//! in `sqlite.rs` and `postgres.rs`.

use crate::support;

use std::collections::HashSet;
use std::sync::Arc;

use hookinbox_store::{
    AcceptOutcome, CappedCount, DriftQuery, DriftRepair, EncryptionKeys, EventCursor, EventFilter,
    InboxStatus, KeyCheckMode, KeyMismatch, LeasedEvent, MissingDelivery, OverviewQuery,
    PurgeCounts, Repaired, ReplaySelector, RetentionPolicy, RewrapProgress, SettleRequest,
    Settlement, StoreError, TargetBacklog, TargetRef, UnsignedMetadata,
};
use support::{
    event, event_for_target, inserted, lease_params, unsigned_id_event, Backend, WINDOW_MS,
};

/// One `#[tokio::test]` per scenario per backend, in a module per backend.
macro_rules! conformance {
    (
        backends: [$($backend:ident),+ $(,)?],
        scenarios: $scenarios:tt,
        reopening: $reopening:tt $(,)?
    ) => {
        $( conformance!(@backend $backend, $scenarios, $reopening); )+
    };
    (@backend $backend:ident, [$($scenario:ident),+ $(,)?], [$($owning:ident),+ $(,)?]) => {
        mod $backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    let backend = crate::support::$backend().await;
                    super::$scenario(&backend).await;
                }
            )+
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $owning() {
                    let backend = crate::support::$backend().await;
                    super::$owning(backend).await;
                }
            )+
        }
    };
}

conformance! {
    backends: [sqlite, postgres],
    scenarios: [
        same_event_twice_is_a_duplicate_of_the_same_row,
        ids_are_scoped_per_endpoint,
        concurrent_copies_insert_exactly_once,
        concurrent_copies_with_two_bodies_resolve_to_one_row,
        a_copy_under_a_new_unsigned_id_inside_the_window_is_the_same_event,
        a_copy_under_a_new_unsigned_id_after_the_window_is_a_new_event,
        the_event_id_is_checked_before_the_fingerprint,
        concurrent_copies_under_new_unsigned_ids_insert_exactly_once,
        signed_ids_with_one_body_are_two_events,
        bodies_are_read_back_exactly_and_never_replaced,
        delivered_event_becomes_processed,
        an_event_records_the_targets_it_was_routed_to_and_not,
        an_event_keeps_its_trace_for_every_worker,
        leased_events_come_with_the_event_load_event_reads,
        an_event_is_processed_once_all_its_targets_are_done,
        retries_wait_and_dead_fails_then_replay_delivers,
        expired_leases_are_reclaimed_and_the_old_owner_cannot_settle,
        one_object_goes_out_one_version_at_a_time_in_order,
        versions_not_newer_than_delivered_are_skipped_stale,
        settle_many_records_each_outcome_under_its_own_lease,
        a_deferred_delivery_spends_no_attempt_and_never_dies,
        events_are_listed_newest_first_by_filter_and_page,
        pages_hold_still_while_events_arrive,
        filters_combine_on_every_page,
        the_overview_counts_arrivals_backlog_and_failures,
        a_replay_of_ids_takes_those_without_a_delivery_in_flight,
        an_event_is_shown_with_its_deliveries_attempts_and_payload,
        the_store_answers_a_ping,
        raw_payloads_past_retention_lose_body_and_headers_but_keep_their_row,
        raw_payloads_are_kept_while_a_delivery_is_pending,
        events_past_dedup_retention_are_deleted_never_while_a_delivery_is_pending,
        dead_deliveries_past_retention_are_deleted_with_their_attempts,
        purge_goes_in_batches_and_reports_what_remains,
        an_event_without_targets_is_processed_when_accepted,
        a_target_added_later_does_not_pick_up_old_events,
        the_backlog_follows_open_deliveries_and_the_oldest_unprocessed_event,
        inbox_rows_are_counted_by_status,
        a_write_probe_commits_and_the_queue_is_empty_when_idle,
        drift_leases_past_expiry_are_found_and_taken_back,
        drift_accepted_events_with_nothing_open_are_finished,
        drift_missing_deliveries_are_found_by_the_recorded_targets_and_added,
        fetched_events_are_marked_and_their_webhook_is_a_duplicate,
    ],
    reopening: [
        sealed_records_read_back_and_keep_no_plaintext_at_rest,
        a_record_sealed_under_an_older_key_reads_while_the_ring_has_it,
        a_changed_byte_of_a_sealed_body_is_corrupt,
        a_corrupt_body_fails_only_its_own_leased_event,
        a_sealed_body_moved_to_another_row_is_corrupt,
        a_sealed_body_put_in_place_of_the_audit_headers_is_corrupt,
        rewrap_moves_every_row_to_the_active_key_in_batches,
        duplicates_and_conflicts_are_found_with_encryption_on,
        key_check_values_are_recorded_once_and_open_only_under_their_key,
        a_ring_without_a_key_that_sealed_rows_is_named,
    ],
}

async fn same_event_twice_is_a_duplicate_of_the_same_row(backend: &Backend) {
    let store = &backend.store;
    let first = store.accept(event("a", "e1", b"{}")).await.unwrap();
    let AcceptOutcome::Inserted { id } = first else {
        panic!("{first:?}")
    };
    let second = store.accept(event("a", "e1", b"{}")).await.unwrap();
    assert_eq!(second, AcceptOutcome::Duplicate { id: id.clone() });
    let conflict = store.accept(event("a", "e1", b"{\"x\":1}")).await.unwrap();
    assert_eq!(conflict, AcceptOutcome::Conflict { id });
    let stats = store.stats().await.unwrap();
    assert_eq!(stats.total, 1);
}

async fn ids_are_scoped_per_endpoint(backend: &Backend) {
    let store = &backend.store;
    let with_target = |endpoint, id| {
        let mut e = event(endpoint, id, b"{}");
        e.targets = vec!["t".into()];
        e
    };
    let a = store.accept(with_target("a", "e1")).await.unwrap();
    let b = store.accept(with_target("b", "e1")).await.unwrap();
    assert!(matches!(a, AcceptOutcome::Inserted { .. }));
    assert!(matches!(b, AcceptOutcome::Inserted { .. }));
    let stats = store.stats().await.unwrap();
    assert_eq!(stats.by_endpoint["a"]["ACCEPTED"], 1);
    assert_eq!(stats.by_endpoint["b"]["ACCEPTED"], 1);
    assert_eq!(stats.by_status["ACCEPTED"], 2);
}

async fn concurrent_copies_insert_exactly_once(backend: &Backend) {
    let store = &backend.store;
    let tasks: Vec<_> = (0..200)
        .map(|_| {
            let store = Arc::clone(store);
            tokio::spawn(async move { store.accept(event("a", "same", b"{\"v\":1}")).await })
        })
        .collect();
    let mut inserted = 0;
    let mut ids = std::collections::HashSet::new();
    for task in tasks {
        match task.await.unwrap().unwrap() {
            AcceptOutcome::Inserted { id } => {
                inserted += 1;
                ids.insert(id);
            }
            AcceptOutcome::Duplicate { id } => {
                ids.insert(id);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(inserted, 1);
    assert_eq!(ids.len(), 1, "every copy must name the same inbox row");
    assert_eq!(store.stats().await.unwrap().total, 1);
}

async fn a_copy_under_a_new_unsigned_id_inside_the_window_is_the_same_event(backend: &Backend) {
    let store = &backend.store;
    let t0 = 1_700_000_000_000;
    let original = inserted(store, unsigned_id_event("d-1", b"{\"push\":1}", t0)).await;
    // The same body under a new delivery id, at the last millisecond of the window.
    let copy = unsigned_id_event("d-2", b"{\"push\":1}", t0 + WINDOW_MS);
    assert_eq!(
        store.accept(copy).await.unwrap(),
        AcceptOutcome::Duplicate {
            id: original.clone()
        }
    );
    assert_eq!(store.stats().await.unwrap().total, 1, "no second row");
    let leased = store
        .lease(lease_params("w", t0 + WINDOW_MS))
        .await
        .unwrap();
    assert_eq!(leased.len(), 1, "no second delivery: {leased:?}");
    assert_eq!(leased[0].inbox_id, original);
    // The row says which metadata was unsigned.
    let stored = store.load_event(&original).await.unwrap().unwrap();
    assert_eq!(
        stored.unsigned_metadata,
        UnsignedMetadata {
            event_id: true,
            event_type: true
        }
    );
}

async fn a_copy_under_a_new_unsigned_id_after_the_window_is_a_new_event(backend: &Backend) {
    let store = &backend.store;
    let t0 = 1_700_000_000_000;
    let original = inserted(store, unsigned_id_event("d-1", b"{\"push\":1}", t0)).await;
    let later = inserted(
        store,
        unsigned_id_event("d-2", b"{\"push\":1}", t0 + WINDOW_MS + 1),
    )
    .await;
    assert_ne!(original, later);
    assert_eq!(store.stats().await.unwrap().total, 2);
}

async fn the_event_id_is_checked_before_the_fingerprint(backend: &Backend) {
    let store = &backend.store;
    let t0 = 1_700_000_000_000;
    inserted(store, unsigned_id_event("d-1", b"{\"a\":1}", t0)).await;
    let second = inserted(store, unsigned_id_event("d-2", b"{\"b\":1}", t0)).await;
    // d-2 again, with d-1's body: the id is taken by another body, whatever
    // the fingerprint also matches.
    assert_eq!(
        store
            .accept(unsigned_id_event("d-2", b"{\"a\":1}", t0 + 1))
            .await
            .unwrap(),
        AcceptOutcome::Conflict { id: second.clone() }
    );
    // And d-2 with its own body is an ordinary duplicate.
    assert_eq!(
        store
            .accept(unsigned_id_event("d-2", b"{\"b\":1}", t0 + 1))
            .await
            .unwrap(),
        AcceptOutcome::Duplicate { id: second }
    );
}

async fn concurrent_copies_under_new_unsigned_ids_insert_exactly_once(backend: &Backend) {
    let store = &backend.store;
    let t0 = 1_700_000_000_000;
    let tasks: Vec<_> = (0..100)
        .map(|n| {
            let store = Arc::clone(store);
            let copy = unsigned_id_event(&format!("d-{n}"), b"{\"push\":1}", t0 + n);
            tokio::spawn(async move { store.accept(copy).await })
        })
        .collect();
    let mut inserted = 0;
    let mut ids = std::collections::HashSet::new();
    for task in tasks {
        match task.await.unwrap().unwrap() {
            AcceptOutcome::Inserted { id } => {
                inserted += 1;
                ids.insert(id);
            }
            AcceptOutcome::Duplicate { id } => {
                ids.insert(id);
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(inserted, 1);
    assert_eq!(ids.len(), 1, "every copy must name the same inbox row");
    assert_eq!(store.stats().await.unwrap().total, 1);
}

async fn signed_ids_with_one_body_are_two_events(backend: &Backend) {
    let store = &backend.store;
    let first = inserted(store, event("a", "evt_1", b"{\"same\":1}")).await;
    let second = inserted(store, event("a", "evt_2", b"{\"same\":1}")).await;
    assert_ne!(first, second);
    assert_eq!(store.stats().await.unwrap().total, 2);
    let stored = store.load_event(&first).await.unwrap().unwrap();
    assert!(stored.unsigned_metadata.is_empty());
}

/// Routing's record (`targets`, `not_routed`): one delivery row per routed
/// target, none for the others, both lists read back; routed to none, the
/// event is PROCESSED as it is inserted.
async fn an_event_records_the_targets_it_was_routed_to_and_not(backend: &Backend) {
    let store = &backend.store;
    let mut some = event("a", "routed", b"{}");
    some.targets = vec!["billing".into()];
    some.not_routed = vec!["fraud".into(), "ci".into()];
    let some = inserted(store, some).await;
    let (detail, _) = backend
        .reads
        .show_event(&some, false)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(detail.routed_to, Some(vec!["billing".to_owned()]));
    assert_eq!(detail.not_routed, ["fraud", "ci"]);
    assert_eq!(detail.summary.status, "ACCEPTED");
    let targets: Vec<&str> = detail
        .deliveries
        .iter()
        .map(|d| d.target.as_str())
        .collect();
    assert_eq!(targets, ["billing"]);

    let mut none = event("a", "unrouted", b"{}");
    none.not_routed = vec!["billing".into()];
    let none = inserted(store, none).await;
    let (detail, _) = backend
        .reads
        .show_event(&none, false)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(detail.summary.status, "PROCESSED", "no target matched");
    assert_eq!(detail.routed_to, Some(Vec::new()));
    assert_eq!(detail.not_routed, ["billing"]);
    assert!(detail.deliveries.is_empty());

    let all = inserted(store, event_for_target("all", None)).await;
    let (detail, _) = backend
        .reads
        .show_event(&all, false)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(detail.routed_to, Some(vec!["t".to_owned()]));
    assert!(detail.not_routed.is_empty());
}

/// The trace an event was accepted in (`inbox.trace_parent`): written in
/// the accepting commit, handed to whichever worker leases it, and its
/// trace id shown; an event with none has none.
async fn an_event_keeps_its_trace_for_every_worker(backend: &Backend) {
    let store = &backend.store;
    let traced_parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let mut traced = event_for_target("traced", None);
    traced.trace_parent = Some(traced_parent.to_owned());
    let traced = inserted(store, traced).await;
    let untraced = inserted(store, event_for_target("untraced", None)).await;

    let leased = store.lease_events(lease_params("w", 1_000)).await.unwrap();
    let trace_of = |id: &str| {
        let leased = leased.iter().find(|l| l.lease.inbox_id == id).unwrap();
        let event = leased.event.as_ref().unwrap().as_ref().unwrap();
        event.trace_parent.clone()
    };
    assert_eq!(trace_of(&traced).as_deref(), Some(traced_parent));
    assert_eq!(trace_of(&untraced), None);
    let loaded = store.load_event(&traced).await.unwrap().unwrap();
    assert_eq!(loaded.trace_parent.as_deref(), Some(traced_parent));

    let shown = |id: String| async move {
        let (detail, _) = backend.reads.show_event(&id, false).await.unwrap().unwrap();
        detail.trace_id
    };
    assert_eq!(
        shown(traced).await.as_deref(),
        Some("4bf92f3577b34da6a3ce929d0e0e4736")
    );
    assert_eq!(shown(untraced).await, None);
}

async fn delivered_event_becomes_processed(backend: &Backend) {
    let store = &backend.store;
    let id = inserted(store, event_for_target("d1", None)).await;
    let leased = store.lease(lease_params("w1", 1_000)).await.unwrap();
    assert_eq!(leased.len(), 1);
    assert_eq!(leased[0].inbox_id, id);
    assert!(
        store
            .lease(lease_params("w2", 1_000))
            .await
            .unwrap()
            .is_empty(),
        "leased rows are not leased twice"
    );
    assert!(store
        .settle(&leased[0], Settlement::Delivered, 1_001)
        .await
        .unwrap());
    let stats = store.stats().await.unwrap();
    assert_eq!(stats.by_status.get("PROCESSED"), Some(&1));
}

async fn leased_events_come_with_the_event_load_event_reads(backend: &Backend) {
    let store = &backend.store;
    let first = inserted(store, event_for_target("le1", None)).await;
    let second = inserted(store, event_for_target("le2", Some(("obj", 1)))).await;
    // The object's next version waits for the first.
    inserted(store, event_for_target("le3", Some(("obj", 2)))).await;
    let leased = store.lease_events(lease_params("w", 1_000)).await.unwrap();
    let ids: Vec<&str> = leased.iter().map(|l| l.lease.inbox_id.as_str()).collect();
    assert_eq!(ids, [first.as_str(), second.as_str()]);
    for LeasedEvent { lease, event } in &leased {
        let event = event.as_ref().unwrap().as_ref().unwrap();
        assert_eq!(
            Some(event),
            store.load_event(&lease.inbox_id).await.unwrap().as_ref()
        );
        assert_eq!(event.payload.as_deref(), Some(&b"{}"[..]));
    }
    assert!(leased[1].lease.ordered && !leased[0].lease.ordered);
    assert!(
        store
            .lease_events(lease_params("w2", 1_000))
            .await
            .unwrap()
            .is_empty(),
        "leased rows are not leased twice, and the object's next version waits"
    );
    let settled = store
        .settle_many(
            leased
                .into_iter()
                .map(|leased| SettleRequest {
                    lease: leased.lease,
                    settlement: Settlement::Delivered,
                    now_ms: 1_001,
                })
                .collect(),
        )
        .await
        .unwrap();
    assert_eq!(settled, [true, true]);
    let next = store.lease_events(lease_params("w", 1_002)).await.unwrap();
    assert_eq!(
        next.len(),
        1,
        "the object's version 2 goes once 1 is delivered"
    );
    let stats = store.stats().await.unwrap();
    assert_eq!(stats.by_status.get("PROCESSED"), Some(&2));
}

async fn retries_wait_and_dead_fails_then_replay_delivers(backend: &Backend) {
    let store = &backend.store;
    let id = inserted(store, event_for_target("r1", None)).await;
    let leased = store.lease(lease_params("w", 1_000)).await.unwrap();
    let retry = Settlement::Retry {
        next_attempt_at_ms: 5_000,
        error: "http 500".into(),
    };
    assert!(store.settle(&leased[0], retry, 1_001).await.unwrap());
    assert!(
        store
            .lease(lease_params("w", 4_999))
            .await
            .unwrap()
            .is_empty(),
        "not due yet"
    );
    let leased = store.lease(lease_params("w", 5_000)).await.unwrap();
    assert_eq!(leased[0].attempts, 1);
    assert!(store
        .settle(
            &leased[0],
            Settlement::Dead {
                error: "http 500".into()
            },
            5_001
        )
        .await
        .unwrap());
    assert_eq!(
        store.stats().await.unwrap().by_status.get("FAILED"),
        Some(&1)
    );

    let replayed = store
        .replay(ReplaySelector::Failed { since_ms: None }, 6_000)
        .await
        .unwrap();
    assert_eq!(replayed, vec![id.clone()]);
    assert_eq!(
        store.stats().await.unwrap().by_status.get("ACCEPTED"),
        Some(&1)
    );
    let leased = store.lease(lease_params("w", 6_000)).await.unwrap();
    assert_eq!(leased.len(), 1);
    assert_eq!(
        leased[0].inbox_id, id,
        "same inbox id: same idempotency key"
    );
    assert_eq!(leased[0].attempts, 0, "a replay has a fresh budget");
    assert!(store
        .settle(&leased[0], Settlement::Delivered, 6_001)
        .await
        .unwrap());
    assert_eq!(
        store.stats().await.unwrap().by_status.get("PROCESSED"),
        Some(&1)
    );
}

async fn expired_leases_are_reclaimed_and_the_old_owner_cannot_settle(backend: &Backend) {
    let store = &backend.store;
    inserted(store, event_for_target("l1", None)).await;
    let mut params = lease_params("crashed", 1_000);
    params.lease_ms = 100;
    let old = store.lease(params).await.unwrap();
    assert_eq!(
        store.reclaim_expired(1_050).await.unwrap(),
        0,
        "not expired yet"
    );
    assert_eq!(store.reclaim_expired(1_101).await.unwrap(), 1);
    let new = store.lease(lease_params("alive", 1_102)).await.unwrap();
    assert_eq!(new.len(), 1);
    assert!(
        !store
            .settle(&old[0], Settlement::Delivered, 1_103)
            .await
            .unwrap(),
        "a lost lease settles nothing"
    );
    assert!(!store.heartbeat(&old[0], 9_999).await.unwrap());
    assert!(store.heartbeat(&new[0], 9_999).await.unwrap());
    assert!(store
        .settle(&new[0], Settlement::Delivered, 1_104)
        .await
        .unwrap());
}

async fn one_object_goes_out_one_version_at_a_time_in_order(backend: &Backend) {
    let store = &backend.store;
    for (n, version) in [(1, 2), (2, 3), (3, 1)] {
        inserted(
            store,
            event_for_target(&format!("o{n}"), Some(("obj", version))),
        )
        .await;
    }
    inserted(store, event_for_target("free", None)).await;
    let mut delivered_versions = Vec::new();
    let mut now = 1_000;
    loop {
        let leased = store.lease(lease_params("w", now)).await.unwrap();
        if leased.is_empty() {
            break;
        }
        let ordered: Vec<_> = leased.iter().filter(|l| l.inbox_id != "free").collect();
        assert!(
            ordered.len() <= 2,
            "at most one ordered delivery plus the free one: {leased:?}"
        );
        for lease in &leased {
            let event = store.load_event(&lease.inbox_id).await.unwrap().unwrap();
            if let Some(version) = event.object_version {
                delivered_versions.push(version);
            }
            assert!(store
                .settle(lease, Settlement::Delivered, now)
                .await
                .unwrap());
        }
        now += 1;
    }
    assert_eq!(delivered_versions, vec![1, 2, 3]);
}

async fn versions_not_newer_than_delivered_are_skipped_stale(backend: &Backend) {
    let store = &backend.store;
    inserted(store, event_for_target("v3", Some(("obj", 3)))).await;
    let leased = store.lease(lease_params("w", 1_000)).await.unwrap();
    assert!(store
        .settle(&leased[0], Settlement::Delivered, 1_000)
        .await
        .unwrap());
    inserted(store, event_for_target("v1", Some(("obj", 1)))).await;
    inserted(store, event_for_target("v2", Some(("obj", 2)))).await;
    inserted(store, event_for_target("v3b", Some(("obj", 3)))).await;
    assert!(
        store
            .lease(lease_params("w", 1_001))
            .await
            .unwrap()
            .is_empty(),
        "1, 2 and another 3 are all stale"
    );
    let stats = store.stats().await.unwrap();
    assert_eq!(
        stats.by_status.get("PROCESSED"),
        Some(&4),
        "stale events are processed no-ops"
    );
    inserted(store, event_for_target("v4", Some(("obj", 4)))).await;
    assert_eq!(
        store.lease(lease_params("w", 1_002)).await.unwrap().len(),
        1
    );
}

async fn settle_many_records_each_outcome_under_its_own_lease(backend: &Backend) {
    let store = &backend.store;
    for id in ["m1", "m2", "m3"] {
        inserted(store, event_for_target(id, None)).await;
    }
    inserted(store, event_for_target("m4", Some(("obj", 1)))).await;
    let leased = store.lease(lease_params("w", 1_000)).await.unwrap();
    assert_eq!(leased.len(), 4);
    assert_eq!(
        leased.iter().filter(|l| l.ordered).count(),
        1,
        "the lease says which deliveries belong to an ordered object"
    );
    let mut lost = leased[2].clone();
    lost.owner = "someone-else".into();
    let request = |lease, settlement| SettleRequest {
        lease,
        settlement,
        now_ms: 1_001,
    };
    let settled = store
        .settle_many(vec![
            request(leased[0].clone(), Settlement::Delivered),
            request(
                leased[1].clone(),
                Settlement::Retry {
                    next_attempt_at_ms: 5_000,
                    error: "http 503".into(),
                },
            ),
            request(lost, Settlement::Delivered),
            request(leased[3].clone(), Settlement::Delivered),
        ])
        .await
        .unwrap();
    assert_eq!(
        settled,
        vec![true, true, false, true],
        "a lost lease settles nothing"
    );
    let stats = store.stats().await.unwrap();
    assert_eq!(stats.by_status.get("PROCESSED"), Some(&2));
    assert_eq!(stats.by_status.get("ACCEPTED"), Some(&2));
    assert!(
        store
            .lease(lease_params("w", 1_002))
            .await
            .unwrap()
            .is_empty(),
        "the unsettled lease is still held; the retry is not due"
    );
    let retried = store.lease(lease_params("w", 5_000)).await.unwrap();
    assert_eq!(retried.len(), 1);
    assert_eq!(retried[0].attempts, 1);
}

async fn concurrent_copies_with_two_bodies_resolve_to_one_row(backend: &Backend) {
    let store = &backend.store;
    // One id, two bodies, sent at once (many land in one batch): one body
    // wins the row; every copy of it is a duplicate, every copy of the
    // other body a conflict, and all of them name that one row.
    let tasks: Vec<_> = (0..100)
        .map(|n| {
            let store = Arc::clone(store);
            let body: &'static [u8] = if n % 2 == 0 {
                b"{\"v\":1}"
            } else {
                b"{\"v\":2}"
            };
            tokio::spawn(async move { (body, store.accept(event("a", "same", body)).await) })
        })
        .collect();
    let mut answers = Vec::new();
    for task in tasks {
        let (body, outcome) = task.await.unwrap();
        answers.push((body, outcome.unwrap()));
    }
    let winner = answers
        .iter()
        .find_map(|(body, outcome)| match outcome {
            AcceptOutcome::Inserted { .. } => Some(*body),
            _ => None,
        })
        .expect("one copy inserted the row");
    let mut ids = HashSet::new();
    let mut inserted = 0;
    for (body, outcome) in &answers {
        match outcome {
            AcceptOutcome::Inserted { id } => {
                inserted += 1;
                ids.insert(id.clone());
            }
            AcceptOutcome::Duplicate { id } => {
                assert_eq!(*body, winner, "only the winning body is a duplicate");
                ids.insert(id.clone());
            }
            AcceptOutcome::Conflict { id } => {
                assert_ne!(*body, winner, "only the other body conflicts");
                ids.insert(id.clone());
            }
        }
    }
    assert_eq!(inserted, 1);
    assert_eq!(ids.len(), 1, "{answers:?}");
    let id = ids.into_iter().next().unwrap();
    let stored = store.load_event(&id).await.unwrap().unwrap();
    assert_eq!(stored.payload.as_deref(), Some(winner));
}

async fn bodies_are_read_back_exactly_and_never_replaced(backend: &Backend) {
    let store = &backend.store;
    let body: &'static [u8] = b"{\"id\":\"e1\",  \"raw\":true}\n";
    let id = inserted(store, event("a", "e1", body)).await;
    // A duplicate and a conflict leave the stored body as it was.
    store.accept(event("a", "e1", body)).await.unwrap();
    store.accept(event("a", "e1", b"{}")).await.unwrap();
    let loaded = store.load_event(&id).await.unwrap().unwrap();
    assert_eq!(loaded.payload.as_deref(), Some(body));
    assert_eq!(loaded.provider_event_id, "e1");
    assert_eq!(loaded.content_type.as_deref(), Some("application/json"));
    assert_eq!(store.load_event("no-such-id").await.unwrap(), None);
}

async fn an_event_is_processed_once_all_its_targets_are_done(backend: &Backend) {
    let store = &backend.store;
    let mut two_targets = event_for_target("two", None);
    two_targets.targets = vec!["t".into(), "u".into()];
    inserted(store, two_targets).await;
    let on_t = store.lease(lease_params("w1", 1_000)).await.unwrap();
    let mut params = lease_params("w2", 1_000);
    params.target = "u".into();
    let on_u = store.lease(params).await.unwrap();
    assert_eq!((on_t.len(), on_u.len()), (1, 1));
    // Both settled at once (two workers): whichever commits second must see
    // the other's settlement and finish the event.
    let (t, u) = tokio::join!(
        store.settle(&on_t[0], Settlement::Delivered, 1_001),
        store.settle(&on_u[0], Settlement::Delivered, 1_001)
    );
    assert!(t.unwrap() && u.unwrap());
    assert_eq!(
        store.stats().await.unwrap().by_status.get("PROCESSED"),
        Some(&1)
    );
}

async fn events_are_listed_newest_first_by_filter_and_page(backend: &Backend) {
    let store = &backend.store;
    let mut ids = Vec::new();
    for n in 0..5 {
        let mut e = event(if n < 3 { "a" } else { "b" }, &format!("e{n}"), b"{}");
        e.event_type = Some(if n % 2 == 0 { "even" } else { "odd" }.into());
        // With a target, so they stay ACCEPTED until delivered.
        e.targets = vec!["t".into()];
        e.received_at_ms = 1_000 * (n + 1);
        ids.push(inserted(store, e).await);
    }
    let reads = &backend.reads;
    let all = reads.list_events(&EventFilter::default()).await.unwrap();
    let listed: Vec<&str> = all.events.iter().map(|e| e.id.as_str()).collect();
    let newest_first: Vec<&str> = ids.iter().rev().map(String::as_str).collect();
    assert_eq!(listed, newest_first);
    assert_eq!(all.next_cursor, None, "one page holds them all");

    let page = |filter: EventFilter| async move {
        let page = reads.list_events(&filter).await.unwrap();
        let ids: Vec<String> = page.events.iter().map(|e| e.id.clone()).collect();
        (ids, page.next_cursor)
    };
    let (first, cursor) = page(EventFilter {
        limit: 2,
        ..EventFilter::default()
    })
    .await;
    assert_eq!(first, vec![ids[4].clone(), ids[3].clone()]);
    assert_eq!(cursor, Some(format!("4000.{}", ids[3])));
    let (second, cursor) = page(EventFilter {
        limit: 2,
        cursor: cursor.as_deref().and_then(EventCursor::parse),
        ..EventFilter::default()
    })
    .await;
    assert_eq!(second, vec![ids[2].clone(), ids[1].clone()]);
    let (last, cursor) = page(EventFilter {
        limit: 2,
        cursor: cursor.as_deref().and_then(EventCursor::parse),
        ..EventFilter::default()
    })
    .await;
    assert_eq!((last, cursor), (vec![ids[0].clone()], None));

    let by = |filter: EventFilter| async move { page(filter).await.0 };
    assert_eq!(
        by(EventFilter {
            endpoint_id: Some("b".into()),
            ..EventFilter::default()
        })
        .await,
        vec![ids[4].clone(), ids[3].clone()]
    );
    assert_eq!(
        by(EventFilter {
            event_type: Some("odd".into()),
            ..EventFilter::default()
        })
        .await,
        vec![ids[3].clone(), ids[1].clone()]
    );
    assert_eq!(
        by(EventFilter {
            provider_event_id: Some("e2".into()),
            ..EventFilter::default()
        })
        .await,
        vec![ids[2].clone()]
    );
    assert_eq!(
        by(EventFilter {
            received_from_ms: Some(2_000),
            received_before_ms: Some(4_000),
            ..EventFilter::default()
        })
        .await,
        vec![ids[2].clone(), ids[1].clone()],
        "from is inclusive, before exclusive"
    );
    // Nothing was delivered: every event is still ACCEPTED.
    assert_eq!(
        by(EventFilter {
            status: Some(InboxStatus::Processed),
            ..EventFilter::default()
        })
        .await,
        Vec::<String>::new()
    );
    assert_eq!(
        by(EventFilter {
            status: Some(InboxStatus::Accepted),
            endpoint_id: Some("a".into()),
            ..EventFilter::default()
        })
        .await,
        vec![ids[2].clone(), ids[1].clone(), ids[0].clone()]
    );
}

/// Every id in `filter`'s list, page by page (`limit` each), with `between`
/// run after each page.
async fn all_pages(
    backend: &Backend,
    filter: EventFilter,
    mut between: impl FnMut(usize) -> Option<hookinbox_store::NewEvent>,
) -> Vec<String> {
    let mut listed = Vec::new();
    let mut filter = filter;
    for n in 0.. {
        let page = backend.reads.list_events(&filter).await.unwrap();
        assert!(page.events.len() <= filter.page_size());
        listed.extend(page.events.iter().map(|e| e.id.clone()));
        if let Some(new) = between(n) {
            inserted(&backend.store, new).await;
        }
        match page.next_cursor {
            Some(cursor) => filter.cursor = Some(EventCursor::parse(&cursor).unwrap()),
            None => break,
        }
    }
    listed
}

async fn pages_hold_still_while_events_arrive(backend: &Backend) {
    let store = &backend.store;
    // Seven events in one millisecond (the tie is broken by inbox id) and
    // three earlier ones.
    let mut ids = Vec::new();
    for n in 0..10 {
        let mut e = event("a", &format!("p{n}"), b"{}");
        e.received_at_ms = if n < 3 { 1_000 + n } else { 5_000 };
        ids.push(inserted(store, e).await);
    }
    ids.reverse();
    // After each page another event arrives: in the same millisecond as the
    // cursor, or later. None of them may shift what the next pages hold.
    let listed = all_pages(
        backend,
        EventFilter {
            limit: 3,
            ..EventFilter::default()
        },
        |n| {
            let mut e = event("a", &format!("late{n}"), b"{}");
            e.received_at_ms = if n % 2 == 0 { 5_000 } else { 9_000 };
            Some(e)
        },
    )
    .await;
    assert_eq!(
        listed, ids,
        "each event once, newest first, none of the late ones"
    );
}

async fn filters_combine_on_every_page(backend: &Backend) {
    let store = &backend.store;
    let mut wanted = Vec::new();
    for n in 0..12i64 {
        let endpoint = if n % 2 == 0 { "a" } else { "b" };
        let mut e = event(endpoint, &format!("f{n}"), b"{}");
        // With a target, so that they stay ACCEPTED.
        e.targets = vec!["t".into()];
        e.event_type = Some(if n % 3 == 0 { "x" } else { "y" }.into());
        e.received_at_ms = 10_000 + n * 10;
        let id = inserted(store, e).await;
        if endpoint == "a" && n % 3 != 0 && (10_020..10_100).contains(&(10_000 + n * 10)) {
            wanted.push(id);
        }
    }
    wanted.reverse();
    let filter = EventFilter {
        endpoint_id: Some("a".into()),
        event_type: Some("y".into()),
        status: Some(InboxStatus::Accepted),
        received_from_ms: Some(10_020),
        received_before_ms: Some(10_100),
        limit: 1,
        ..EventFilter::default()
    };
    assert_eq!(all_pages(backend, filter, |_| None).await, wanted);
    // A provider's event id without an endpoint: found on every endpoint.
    let by_event_id = |id: &str| EventFilter {
        provider_event_id: Some(id.into()),
        ..EventFilter::default()
    };
    let mut same_id = event("b", "f4", b"{}");
    same_id.received_at_ms = 20_000;
    let on_b = inserted(store, same_id).await;
    let found = all_pages(backend, by_event_id("f4"), |_| None).await;
    assert_eq!(found.len(), 2, "f4 on a and on b");
    assert_eq!(found[0], on_b, "newest first");
    assert!(all_pages(backend, by_event_id("nope"), |_| None)
        .await
        .is_empty());
}

async fn the_overview_counts_arrivals_backlog_and_failures(backend: &Backend) {
    let store = &backend.store;
    let now = 100 * 86_400_000;
    let day = 86_400_000;
    // On endpoint `a` with target `t`: one event two days old, three in the
    // last day (one of them 10 s ago); on `quiet`, nothing.
    let mut ids = Vec::new();
    for (n, age) in [2 * day, day - 1_000, 3_600_000, 10_000]
        .into_iter()
        .enumerate()
    {
        let mut e = event_for_target(&format!("o{n}"), None);
        e.received_at_ms = now - age;
        ids.push(inserted(store, e).await);
    }
    // The oldest and the newest fail, the second stays leased, the third
    // waits for a retry.
    let leased = store.lease(lease_params("w", now)).await.unwrap();
    assert_eq!(leased.len(), 4);
    for lease in &leased {
        let settlement = match ids.iter().position(|id| *id == lease.inbox_id) {
            Some(0 | 3) => Settlement::Dead {
                error: "http 500".into(),
            },
            Some(1) => continue,
            _ => Settlement::Retry {
                next_attempt_at_ms: now + 60_000,
                error: "http 503".into(),
            },
        };
        assert!(store.settle(lease, settlement, now).await.unwrap());
    }
    let overview = backend
        .reads
        .overview(&OverviewQuery {
            now_ms: now,
            endpoints: vec!["a".into(), "quiet".into()],
            targets: vec![("a".into(), "t".into())],
        })
        .await
        .unwrap();
    let n = |count| CappedCount {
        count,
        capped: false,
    };
    assert_eq!(overview.received_last_minute, n(1));
    let a = &overview.endpoints[0];
    assert_eq!(
        (a.endpoint_id.as_str(), a.received_24h, a.failed_24h),
        ("a", n(3), n(1)),
        "the two-day-old failure is outside the window"
    );
    assert_eq!(a.last_received_at_ms, Some(now - 10_000));
    let quiet = &overview.endpoints[1];
    assert_eq!(
        (
            quiet.received_24h,
            quiet.failed_24h,
            quiet.last_received_at_ms
        ),
        (n(0), n(0), None)
    );
    let t = &overview.targets[0];
    assert_eq!((t.pending, t.leased, t.failed_24h), (n(1), n(1), n(1)));
    assert_eq!(t.oldest_due_at_ms, Some(now + 60_000));
}

async fn a_replay_of_ids_takes_those_without_a_delivery_in_flight(backend: &Backend) {
    let store = &backend.store;
    let failed = inserted(store, event_for_target("dead", None)).await;
    let leased = store.lease(lease_params("w", 1_000)).await.unwrap();
    let dead = Settlement::Dead {
        error: "http 500".into(),
    };
    assert!(store.settle(&leased[0], dead, 1_001).await.unwrap());
    let waiting = inserted(store, event_for_target("waiting", None)).await;
    let replayed = store
        .replay(
            ReplaySelector::Ids {
                inbox_ids: vec![waiting.clone(), failed.clone(), "no-such-event".into()],
            },
            2_000,
        )
        .await
        .unwrap();
    assert_eq!(
        replayed,
        vec![failed.clone()],
        "the waiting one is in flight"
    );
    let (detail, _) = backend
        .reads
        .show_event(&failed, false)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(detail.summary.status, "ACCEPTED");
    assert_eq!(
        detail
            .deliveries
            .iter()
            .map(|d| (d.generation, d.status.as_str()))
            .collect::<Vec<_>>(),
        vec![(0, "DEAD"), (1, "PENDING")]
    );
}

async fn an_event_is_shown_with_its_deliveries_attempts_and_payload(backend: &Backend) {
    let store = &backend.store;
    let mut shown = event_for_target("shown", Some(("obj", 7)));
    shown.payload = bytes::Bytes::from_static(b"{\"shown\":true}");
    shown.fingerprint = hookinbox_store::Fingerprint::of(b"{\"shown\":true}");
    let id = inserted(store, shown).await;
    let leased = store.lease(lease_params("w", 1_000)).await.unwrap();
    let retry = Settlement::Retry {
        next_attempt_at_ms: 2_000,
        error: "http 502".into(),
    };
    assert!(store.settle(&leased[0], retry, 1_001).await.unwrap());
    let leased = store.lease(lease_params("w", 2_000)).await.unwrap();
    assert!(store
        .settle(&leased[0], Settlement::Delivered, 2_001)
        .await
        .unwrap());

    let (detail, payload) = backend
        .reads
        .show_event(&id, false)
        .await
        .unwrap()
        .expect("the event exists");
    assert_eq!(payload, None, "the body only on request");
    assert_eq!(detail.summary.id, id);
    assert_eq!(detail.summary.status, "PROCESSED");
    assert_eq!(detail.object_id.as_deref(), Some("obj"));
    assert_eq!(detail.object_version, Some(7));
    assert_eq!(detail.payload_bytes, Some(14));
    assert_eq!(
        detail.payload_sha256,
        hookinbox_store::Fingerprint::of(b"{\"shown\":true}")
            .as_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    );
    assert_eq!(detail.deliveries.len(), 1);
    let delivery = &detail.deliveries[0];
    assert_eq!(
        (
            delivery.target.as_str(),
            delivery.status.as_str(),
            delivery.attempts
        ),
        ("t", "DELIVERED", 2)
    );
    assert_eq!(delivery.delivered_at_ms, Some(2_001));
    assert_eq!(delivery.last_error.as_deref(), Some("http 502"));
    let log: Vec<(i64, &str, Option<&str>)> = delivery
        .attempt_log
        .iter()
        .map(|a| (a.attempt, a.outcome.as_str(), a.error.as_deref()))
        .collect();
    assert_eq!(
        log,
        vec![(1, "RETRY", Some("http 502")), (2, "DELIVERED", None)]
    );

    let (_, payload) = backend.reads.show_event(&id, true).await.unwrap().unwrap();
    assert_eq!(payload.as_deref(), Some(&b"{\"shown\":true}"[..]));
    assert!(backend
        .reads
        .show_event("no-such-id", true)
        .await
        .unwrap()
        .is_none());
    let stats = backend.reads.stats().await.unwrap();
    assert_eq!(stats.by_endpoint["a"]["PROCESSED"], 1);
}

/// A storage fault (a body that could not be read) is not the target's:
/// deferring never counts an attempt, records none, and never ends the
/// delivery, however often it happens.
async fn a_deferred_delivery_spends_no_attempt_and_never_dies(backend: &Backend) {
    let store = &backend.store;
    let id = inserted(store, event_for_target("deferred", None)).await;
    let mut now = 1_000;
    for round in 0..12 {
        let leased = store.lease(lease_params("w", now)).await.unwrap();
        assert_eq!(leased.len(), 1, "round {round}: due again, still leasable");
        assert_eq!(leased[0].attempts, 0, "round {round}: no attempt spent");
        let deferred = Settlement::Deferred {
            next_attempt_at_ms: now + 500,
            error: "storage fault: payload unreadable".into(),
        };
        // Through both ways of settling.
        let settled = if round % 2 == 0 {
            store.settle(&leased[0], deferred, now + 1).await.unwrap()
        } else {
            let request = SettleRequest {
                lease: leased[0].clone(),
                settlement: deferred,
                now_ms: now + 1,
            };
            store.settle_many(vec![request]).await.unwrap()[0]
        };
        assert!(settled);
        assert!(
            store
                .lease(lease_params("w", now + 499))
                .await
                .unwrap()
                .is_empty(),
            "round {round}: waits until it is due"
        );
        now += 500;
    }
    let (detail, _) = backend.reads.show_event(&id, false).await.unwrap().unwrap();
    assert_eq!(detail.summary.status, "ACCEPTED");
    let delivery = &detail.deliveries[0];
    assert_eq!(
        (delivery.status.as_str(), delivery.attempts),
        ("PENDING", 0)
    );
    assert!(delivery.attempt_log.is_empty(), "no attempt charged");
    assert_eq!(
        delivery.last_error.as_deref(),
        Some("storage fault: payload unreadable"),
        "operators see why it waits"
    );

    let leased = store.lease(lease_params("w", now)).await.unwrap();
    assert!(store
        .settle(&leased[0], Settlement::Delivered, now + 1)
        .await
        .unwrap());
    let (detail, _) = backend.reads.show_event(&id, false).await.unwrap().unwrap();
    assert_eq!(detail.summary.status, "PROCESSED");
    assert_eq!(detail.deliveries[0].attempts, 1, "only the real attempt");
}

async fn the_store_answers_a_ping(backend: &Backend) {
    backend.store.ping().await.unwrap();
    backend.reads.ping().await.unwrap();
}

// Encryption at rest. The markers below are in the plaintext only: finding
// one among the stored bytes means something was stored unsealed.

const BODY_MARKER: &[u8] = b"BODY-MARKER-4111";
const HEADER_MARKER: &str = "HEADER-MARKER-0042";

fn ring(active: (&str, u8), older: &[(&str, u8)]) -> Option<Arc<EncryptionKeys>> {
    let mut keys =
        EncryptionKeys::new(active.0, secrecy::SecretBox::new(Box::new([active.1; 32]))).unwrap();
    for (id, byte) in older {
        keys = keys
            .with_key(*id, secrecy::SecretBox::new(Box::new([*byte; 32])))
            .unwrap();
    }
    Some(Arc::new(keys))
}

/// k1 alone, active.
fn k1() -> Option<Arc<EncryptionKeys>> {
    ring(("k1", 1), &[])
}

/// k2 active, k1 kept for what it sealed.
fn k2_and_k1() -> Option<Arc<EncryptionKeys>> {
    ring(("k2", 2), &[("k1", 1)])
}

/// k2 alone: k1 has been removed from the ring.
fn k2() -> Option<Arc<EncryptionKeys>> {
    ring(("k2", 2), &[])
}

/// An event whose body and audit headers carry the markers.
fn marked_event(id: &str, body: &'static [u8]) -> hookinbox_store::NewEvent {
    let mut marked = event("a", id, body);
    marked.audit_headers = vec![("x-marker".into(), HEADER_MARKER.into())];
    marked
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// `Corrupt`, with a message naming the row and the key (and so coming
/// from the sealing, not from the fingerprint check, which names no key).
fn assert_corrupt_naming<T: std::fmt::Debug>(
    result: Result<T, StoreError>,
    inbox_id: &str,
    key_id: &str,
) {
    match result {
        Err(StoreError::Corrupt(message)) => assert!(
            message.contains(inbox_id) && message.contains(&format!("key {key_id}")),
            "{message}"
        ),
        other => panic!("expected Corrupt naming {inbox_id} and {key_id}: {other:?}"),
    }
}

/// Every read path gives back `body` and the marked audit headers.
async fn assert_reads_back(backend: &Backend, inbox_id: &str, body: &[u8]) {
    let loaded = backend.store.load_event(inbox_id).await.unwrap().unwrap();
    assert_eq!(loaded.payload.as_deref(), Some(body), "load_event");
    let (detail, shown) = backend
        .reads
        .show_event(inbox_id, true)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(shown.as_deref(), Some(body), "show_event");
    assert_eq!(
        detail.payload_bytes,
        Some(body.len()),
        "the plaintext length"
    );
    assert_eq!(
        backend.reads.audit_headers(inbox_id).await.unwrap(),
        Some(vec![("x-marker".to_owned(), HEADER_MARKER.to_owned())]),
        "audit headers"
    );
}

async fn sealed_records_read_back_and_keep_no_plaintext_at_rest(backend: Backend) {
    let backend = backend.reopen(k1()).await;
    let body: &'static [u8] = b"{\"card\":\"BODY-MARKER-4111\",\"amount\":100}";
    let id = inserted(&backend.store, marked_event("e1", body)).await;
    assert_reads_back(&backend, &id, body).await;
    assert_eq!(backend.stored_key_id(&id).await.as_deref(), Some("k1"));
    let stored = backend.stored_payload(&id).await;
    assert_eq!(stored.len(), body.len() + 40, "nonce ‖ ciphertext ‖ tag");
    assert!(!contains(&stored, BODY_MARKER));
    assert!(!backend
        .stored_audit_headers(&id)
        .await
        .contains(HEADER_MARKER));
    let everything = backend.everything_stored().await;
    assert!(
        !contains(&everything, BODY_MARKER),
        "the body is stored plain somewhere"
    );
    assert!(
        !contains(&everything, HEADER_MARKER.as_bytes()),
        "the audit headers are stored plain somewhere"
    );
    assert_eq!(
        backend.reads.audit_headers("no-such-id").await.unwrap(),
        None
    );
}

async fn a_record_sealed_under_an_older_key_reads_while_the_ring_has_it(backend: Backend) {
    let backend = backend.reopen(k1()).await;
    let old = inserted(&backend.store, marked_event("old", b"{\"under\":\"k1\"}")).await;

    let backend = backend.reopen(k2_and_k1()).await;
    assert_reads_back(&backend, &old, b"{\"under\":\"k1\"}").await;
    let new = inserted(&backend.store, marked_event("new", b"{\"under\":\"k2\"}")).await;
    assert_eq!(backend.stored_key_id(&new).await.as_deref(), Some("k2"));
    assert_reads_back(&backend, &new, b"{\"under\":\"k2\"}").await;

    // k1 dropped from the ring before a rewrap: its records no longer open.
    let backend = backend.reopen(k2()).await;
    assert_corrupt_naming(backend.store.load_event(&old).await, &old, "k1");
    assert_corrupt_naming(backend.reads.show_event(&old, true).await, &old, "k1");
    assert_corrupt_naming(backend.reads.audit_headers(&old).await, &old, "k1");
    let (detail, _) = backend
        .reads
        .show_event(&old, false)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(detail.summary.id, old, "metadata is never sealed");
    assert_reads_back(&backend, &new, b"{\"under\":\"k2\"}").await;

    // And without any ring, a sealed record is corrupt, not garbage.
    let backend = backend.reopen(None).await;
    assert_corrupt_naming(backend.store.load_event(&new).await, &new, "k2");
}

async fn a_changed_byte_of_a_sealed_body_is_corrupt(backend: Backend) {
    let backend = backend.reopen(k1()).await;
    let id = inserted(&backend.store, marked_event("e1", b"{\"amount\":100}")).await;
    let untouched = inserted(&backend.store, marked_event("e2", b"{\"amount\":200}")).await;
    // A byte of the ciphertext, past the 24-byte nonce.
    backend.flip_stored_payload_byte(&id, 30).await;
    assert_corrupt_naming(backend.store.load_event(&id).await, &id, "k1");
    assert_corrupt_naming(backend.reads.show_event(&id, true).await, &id, "k1");
    assert!(backend
        .reads
        .show_event(&id, false)
        .await
        .unwrap()
        .is_some());
    assert_reads_back(&backend, &untouched, b"{\"amount\":200}").await;
}

async fn a_corrupt_body_fails_only_its_own_leased_event(backend: Backend) {
    let backend = backend.reopen(k1()).await;
    let mut corrupt = marked_event("lc1", b"{\"amount\":100}");
    corrupt.targets = vec!["t".into()];
    let mut sound = marked_event("lc2", b"{\"amount\":200}");
    sound.targets = vec!["t".into()];
    let id = inserted(&backend.store, corrupt).await;
    let untouched = inserted(&backend.store, sound).await;
    backend.flip_stored_payload_byte(&id, 30).await;
    let mut leased = backend
        .store
        .lease_events(lease_params("w", 1_700_000_000_000))
        .await
        .unwrap();
    assert_eq!(leased.len(), 2, "both are leased");
    let second = leased.pop().unwrap();
    let first = leased.pop().unwrap();
    assert_eq!(first.lease.inbox_id, id);
    assert_corrupt_naming(first.event, &id, "k1");
    assert_eq!(second.lease.inbox_id, untouched);
    let event = second.event.unwrap().unwrap();
    assert_eq!(event.payload.as_deref(), Some(&b"{\"amount\":200}"[..]));
}

async fn a_sealed_body_moved_to_another_row_is_corrupt(backend: Backend) {
    let backend = backend.reopen(k1()).await;
    // One body under two signed ids: two rows with the same fingerprint,
    // so only the sealing can tell the copy is not row b's own.
    let a = inserted(&backend.store, marked_event("evt_a", b"{\"same\":1}")).await;
    let b = inserted(&backend.store, marked_event("evt_b", b"{\"same\":1}")).await;
    backend.copy_stored_payload(&a, &b).await;
    assert_corrupt_naming(backend.store.load_event(&b).await, &b, "k1");
    assert_corrupt_naming(backend.reads.show_event(&b, true).await, &b, "k1");
    assert_reads_back(&backend, &a, b"{\"same\":1}").await;
}

async fn a_sealed_body_put_in_place_of_the_audit_headers_is_corrupt(backend: Backend) {
    use base64::Engine;
    let backend = backend.reopen(k1()).await;
    // A body that is itself a valid audit headers list: only the record's
    // kind, in the sealing, tells the two apart.
    let body: &'static [u8] = br#"[["x-marker","HEADER-MARKER-0042"]]"#;
    let id = inserted(&backend.store, marked_event("e1", body)).await;
    let sealed_body = backend.stored_payload(&id).await;
    backend
        .set_stored_audit_headers(
            &id,
            &base64::engine::general_purpose::STANDARD.encode(sealed_body),
        )
        .await;
    assert_corrupt_naming(backend.reads.audit_headers(&id).await, &id, "k1");
    let loaded = backend.store.load_event(&id).await.unwrap().unwrap();
    assert_eq!(
        loaded.payload.as_deref(),
        Some(body),
        "the body itself is intact"
    );
}

async fn rewrap_moves_every_row_to_the_active_key_in_batches(backend: Backend) {
    assert!(matches!(
        backend.rewrap_batch(10).await,
        Err(StoreError::NoEncryptionKeys)
    ));
    // Three rows from before encryption, two under k1, one under k2.
    let bodies: [&'static [u8]; 6] = [
        b"{\"n\":0,\"m\":\"BODY-MARKER-4111\"}",
        b"{\"n\":1,\"m\":\"BODY-MARKER-4111\"}",
        b"{\"n\":2,\"m\":\"BODY-MARKER-4111\"}",
        b"{\"n\":3}",
        b"{\"n\":4}",
        b"{\"n\":5}",
    ];
    let mut ids = Vec::new();
    for (n, body) in bodies[..3].iter().enumerate() {
        ids.push(inserted(&backend.store, marked_event(&format!("e{n}"), body)).await);
    }
    assert!(contains(&backend.everything_stored().await, BODY_MARKER));
    let backend = backend.reopen(k1()).await;
    // Plain rows read as they are with keys configured.
    assert_reads_back(&backend, &ids[0], bodies[0]).await;
    for (n, body) in bodies.iter().enumerate().take(5).skip(3) {
        ids.push(inserted(&backend.store, marked_event(&format!("e{n}"), body)).await);
    }
    let backend = backend.reopen(k2_and_k1()).await;
    ids.push(inserted(&backend.store, marked_event("e5", bodies[5])).await);

    let progress = |rewrapped, remaining| RewrapProgress {
        rewrapped,
        remaining,
    };
    assert_eq!(backend.rewrap_batch(2).await.unwrap(), progress(2, 3));
    assert_eq!(backend.rewrap_batch(2).await.unwrap(), progress(2, 1));
    assert_eq!(backend.rewrap_batch(2).await.unwrap(), progress(1, 0));
    assert_eq!(backend.rewrap_batch(2).await.unwrap(), progress(0, 0));
    assert!(backend.rewrap_batch(2).await.unwrap().is_done());
    for id in &ids {
        assert_eq!(backend.stored_key_id(id).await.as_deref(), Some("k2"));
    }

    // k1 can go now: everything reads under k2 alone.
    let backend = backend.reopen(k2()).await;
    for (id, body) in ids.iter().zip(bodies) {
        assert_reads_back(&backend, id, body).await;
        assert!(!contains(&backend.stored_payload(id).await, BODY_MARKER));
        assert!(!backend
            .stored_audit_headers(id)
            .await
            .contains(HEADER_MARKER));
    }
    // Still a duplicate after its body was re-sealed.
    assert_eq!(
        backend
            .store
            .accept(marked_event("e0", bodies[0]))
            .await
            .unwrap(),
        AcceptOutcome::Duplicate { id: ids[0].clone() }
    );
}

async fn duplicates_and_conflicts_are_found_with_encryption_on(backend: Backend) {
    let backend = backend.reopen(k1()).await;
    let store = &backend.store;
    let id = inserted(store, event("a", "e1", b"{\"v\":1}")).await;
    // Each seal has its own nonce, so the stored bytes differ every time:
    // the fingerprint over the plaintext is what finds the duplicate.
    assert_eq!(
        store.accept(event("a", "e1", b"{\"v\":1}")).await.unwrap(),
        AcceptOutcome::Duplicate { id: id.clone() }
    );
    assert_eq!(
        store.accept(event("a", "e1", b"{\"v\":2}")).await.unwrap(),
        AcceptOutcome::Conflict { id: id.clone() }
    );
    let t0 = 1_700_000_000_000;
    let unsigned = inserted(store, unsigned_id_event("d-1", b"{\"push\":1}", t0)).await;
    assert_eq!(
        store
            .accept(unsigned_id_event("d-2", b"{\"push\":1}", t0 + 1))
            .await
            .unwrap(),
        AcceptOutcome::Duplicate {
            id: unsigned.clone()
        }
    );

    // Under another active key too.
    let backend = backend.reopen(k2_and_k1()).await;
    let store = &backend.store;
    assert_eq!(
        store.accept(event("a", "e1", b"{\"v\":1}")).await.unwrap(),
        AcceptOutcome::Duplicate { id: id.clone() }
    );
    assert_eq!(
        store.accept(event("a", "e1", b"{\"v\":2}")).await.unwrap(),
        AcceptOutcome::Conflict { id: id.clone() }
    );
    assert_eq!(
        store
            .accept(unsigned_id_event("d-3", b"{\"push\":1}", t0 + 2))
            .await
            .unwrap(),
        AcceptOutcome::Duplicate { id: unsigned }
    );
    assert_eq!(store.stats().await.unwrap().total, 2);
    let loaded = store.load_event(&id).await.unwrap().unwrap();
    assert_eq!(loaded.payload.as_deref(), Some(&b"{\"v\":1}"[..]));
}

// Retention.

// Keys are checked before serving (a check value per key id, and every
// key id that sealed a row must be in the ring).

/// k1 under other bytes: a wrong key under the id k1 was first used with.
fn wrong_k1() -> Option<Arc<EncryptionKeys>> {
    ring(("k1", 9), &[])
}

async fn key_check_values_are_recorded_once_and_open_only_under_their_key(backend: Backend) {
    let backend = backend.reopen(k1()).await;
    let empty = backend.reader_check_keys().await;
    assert!(!empty.holds_data, "a new database holds nothing: {empty:?}");
    assert_eq!(empty.unrecorded, ["k1"]);
    // Verify writes nothing; Record writes the missing value.
    assert_eq!(backend.check_keys(KeyCheckMode::Verify).await, empty);
    let recorded = backend.check_keys(KeyCheckMode::Record).await;
    assert_eq!(recorded.recorded, ["k1"]);
    assert_eq!(recorded.verified, ["k1"]);
    assert!(recorded.unrecorded.is_empty() && recorded.mismatches.is_empty());
    assert!(recorded.holds_data, "a check value is data: {recorded:?}");
    let id = inserted(&backend.store, marked_event("e1", b"{\"under\":\"k1\"}")).await;

    // The same id under other bytes: named, in both modes, and nothing
    // is recorded over the stored value.
    let backend = backend.reopen(wrong_k1()).await;
    let wrong = KeyMismatch::WrongKey {
        key_id: "k1".into(),
    };
    assert_eq!(
        backend.reader_check_keys().await.mismatches,
        std::slice::from_ref(&wrong)
    );
    let refused = backend.check_keys(KeyCheckMode::Record).await;
    assert_eq!(refused.mismatches, [wrong]);
    assert!(refused.recorded.is_empty());
    let message = refused.matched().unwrap_err().to_string();
    assert!(message.contains("`k1`"), "{message}");

    // The right key still verifies, and its rows read back.
    let backend = backend.reopen(k1()).await;
    let again = backend.check_keys(KeyCheckMode::Record).await;
    assert_eq!(again.verified, ["k1"]);
    assert!(again.recorded.is_empty() && again.mismatches.is_empty());
    assert_eq!(again.used, ["k1"]);
    assert_reads_back(&backend, &id, b"{\"under\":\"k1\"}").await;
}

async fn a_ring_without_a_key_that_sealed_rows_is_named(backend: Backend) {
    // Rows from before check values: the first check records them (trust
    // on first use) and knows which keys sealed rows.
    let backend = backend.reopen(k1()).await;
    inserted(&backend.store, marked_event("e1", b"{\"under\":\"k1\"}")).await;
    let backend = backend.reopen(k2_and_k1()).await;
    inserted(&backend.store, marked_event("e2", b"{\"under\":\"k2\"}")).await;
    let first = backend.check_keys(KeyCheckMode::Record).await;
    assert_eq!(first.used, ["k1", "k2"]);
    assert_eq!(first.recorded, ["k1", "k2"]);

    let backend = backend.reopen(k2()).await;
    let missing = KeyMismatch::MissingKey {
        key_id: "k1".into(),
    };
    assert_eq!(
        backend.reader_check_keys().await.mismatches,
        std::slice::from_ref(&missing)
    );
    assert_eq!(
        backend.check_keys(KeyCheckMode::Record).await.mismatches,
        [missing]
    );
    // No ring at all (plaintext) with sealed rows: both ids are missing.
    let backend = backend.reopen(None).await;
    assert_eq!(backend.reader_check_keys().await.mismatches.len(), 2);

    // After a rewrap no row is under k1, and the ring may drop it.
    let backend = backend.reopen(k2_and_k1()).await;
    while !backend.rewrap_batch(10).await.unwrap().is_done() {}
    let backend = backend.reopen(k2()).await;
    let after = backend.check_keys(KeyCheckMode::Record).await;
    assert!(after.mismatches.is_empty(), "{after:?}");
    assert_eq!(after.used, ["k2"]);
    assert_eq!(after.verified, ["k2"]);
}

fn seconds(n: u64) -> Option<std::time::Duration> {
    Some(std::time::Duration::from_secs(n))
}

/// An event without targets received at `received_at_ms`.
fn received_at(id: &str, body: &'static [u8], received_at_ms: i64) -> hookinbox_store::NewEvent {
    let mut event = marked_event(id, body);
    event.received_at_ms = received_at_ms;
    event
}

fn counts(raw_payloads: u64, events: u64, dead_deliveries: u64) -> PurgeCounts {
    PurgeCounts {
        raw_payloads,
        events,
        dead_deliveries,
    }
}

async fn raw_payloads_past_retention_lose_body_and_headers_but_keep_their_row(backend: &Backend) {
    let store = &backend.store;
    let old = inserted(store, received_at("old", b"{\"old\":1}", 1_000)).await;
    let young = inserted(store, received_at("young", b"{\"young\":1}", 10_000)).await;
    let policy = RetentionPolicy {
        raw_payload: seconds(5),
        ..RetentionPolicy::default()
    };
    let now = 10_500; // cutoff 5_500: old is past it, young is not
    assert_eq!(backend.purge_preview(&policy, now).await, counts(1, 0, 0));
    let progress = backend.purge_batch(&policy, now, 10).await;
    assert_eq!(progress.purged, counts(1, 0, 0));
    assert!(progress.is_done(), "{progress:?}");

    let loaded = store.load_event(&old).await.unwrap().unwrap();
    assert_eq!(loaded.payload, None, "the body is gone");
    assert_eq!(loaded.provider_event_id, "old", "the row is kept");
    assert_eq!(
        backend.reads.audit_headers(&old).await.unwrap(),
        Some(vec![])
    );
    let (detail, shown) = backend.reads.show_event(&old, true).await.unwrap().unwrap();
    assert_eq!((detail.payload_bytes, shown), (None, None));
    // The row still deduplicates by its fingerprint.
    assert_eq!(
        store
            .accept(received_at("old", b"{\"old\":1}", 11_000))
            .await
            .unwrap(),
        AcceptOutcome::Duplicate { id: old.clone() }
    );
    assert_eq!(
        store
            .accept(received_at("old", b"{\"other\":1}", 11_000))
            .await
            .unwrap(),
        AcceptOutcome::Conflict { id: old }
    );
    assert_reads_back(backend, &young, b"{\"young\":1}").await;
    assert_eq!(backend.purge_preview(&policy, now).await, counts(0, 0, 0));
}

async fn raw_payloads_are_kept_while_a_delivery_is_pending(backend: &Backend) {
    let store = &backend.store;
    let id = inserted(store, event_for_target("pending", None)).await; // received at 500
    let policy = RetentionPolicy {
        raw_payload: seconds(1),
        ..RetentionPolicy::default()
    };
    let now = 100_000;
    assert_eq!(backend.purge_preview(&policy, now).await, counts(0, 0, 0));
    assert_eq!(
        backend.purge_batch(&policy, now, 10).await.purged,
        counts(0, 0, 0)
    );
    let leased = store.lease(lease_params("w", 1_000)).await.unwrap();
    assert_eq!(
        backend.purge_batch(&policy, now, 10).await.purged,
        counts(0, 0, 0)
    );
    let loaded = store.load_event(&id).await.unwrap().unwrap();
    assert_eq!(
        loaded.payload.as_deref(),
        Some(&b"{}"[..]),
        "in flight: kept"
    );
    assert!(store
        .settle(&leased[0], Settlement::Delivered, 1_001)
        .await
        .unwrap());
    assert_eq!(backend.purge_preview(&policy, now).await, counts(1, 0, 0));
    assert_eq!(
        backend.purge_batch(&policy, now, 10).await.purged,
        counts(1, 0, 0)
    );
    assert_eq!(store.load_event(&id).await.unwrap().unwrap().payload, None);
}

async fn events_past_dedup_retention_are_deleted_never_while_a_delivery_is_pending(
    backend: &Backend,
) {
    let store = &backend.store;
    let done = inserted(store, received_at("done", b"{\"done\":1}", 1_000)).await;
    let pending = inserted(store, event_for_target("pending", None)).await; // received at 500
    let policy = RetentionPolicy {
        dedup: seconds(1),
        ..RetentionPolicy::default()
    };
    let now = 100_000;
    assert_eq!(backend.purge_preview(&policy, now).await, counts(0, 1, 0));
    let progress = backend.purge_batch(&policy, now, 10).await;
    assert_eq!(progress.purged, counts(0, 1, 0));
    assert!(progress.is_done());
    assert_eq!(store.load_event(&done).await.unwrap(), None);
    assert!(backend
        .reads
        .show_event(&done, false)
        .await
        .unwrap()
        .is_none());
    // The dedup record is gone: the same event is new again.
    let again = inserted(store, received_at("done", b"{\"done\":1}", now)).await;
    assert_ne!(again, done);
    assert!(
        store.load_event(&pending).await.unwrap().is_some(),
        "pending: kept"
    );

    // Once its delivery is done (with an attempt logged), it goes whole.
    let leased = store.lease(lease_params("w", 1_000)).await.unwrap();
    assert!(store
        .settle(&leased[0], Settlement::Delivered, 1_001)
        .await
        .unwrap());
    assert_eq!(backend.purge_preview(&policy, now).await, counts(0, 1, 0));
    assert_eq!(
        backend.purge_batch(&policy, now, 10).await.purged,
        counts(0, 1, 0)
    );
    assert!(backend
        .reads
        .show_event(&pending, false)
        .await
        .unwrap()
        .is_none());
    assert!(
        store.load_event(&again).await.unwrap().is_some(),
        "young: kept"
    );
    assert_eq!(store.stats().await.unwrap().total, 1);
}

async fn dead_deliveries_past_retention_are_deleted_with_their_attempts(backend: &Backend) {
    let store = &backend.store;
    let early = inserted(store, event_for_target("early", None)).await;
    let late = inserted(store, event_for_target("late", None)).await;
    let leased = store.lease(lease_params("w", 1_000)).await.unwrap();
    assert_eq!(leased.len(), 2);
    let dead = |error: &str| Settlement::Dead {
        error: error.into(),
    };
    let early_lease = leased.iter().find(|l| l.inbox_id == early).unwrap();
    let late_lease = leased.iter().find(|l| l.inbox_id == late).unwrap();
    assert!(store
        .settle(early_lease, dead("http 410"), 1_001)
        .await
        .unwrap());
    assert!(store
        .settle(late_lease, dead("http 410"), 50_000)
        .await
        .unwrap());
    let policy = RetentionPolicy {
        dead_deliveries: seconds(10),
        ..RetentionPolicy::default()
    };
    let now = 60_000; // cutoff 50_000: the one dead at 1_001 is past it
    assert_eq!(backend.purge_preview(&policy, now).await, counts(0, 0, 1));
    let progress = backend.purge_batch(&policy, now, 10).await;
    assert_eq!(progress.purged, counts(0, 0, 1));
    assert!(progress.is_done());
    let (detail, _) = backend
        .reads
        .show_event(&early, false)
        .await
        .unwrap()
        .unwrap();
    assert!(detail.deliveries.is_empty(), "{detail:?}");
    assert_eq!(detail.summary.status, "FAILED", "the event stays failed");
    let (detail, _) = backend
        .reads
        .show_event(&late, false)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(detail.deliveries.len(), 1);
    assert_eq!(detail.deliveries[0].attempt_log.len(), 1);
}

async fn purge_goes_in_batches_and_reports_what_remains(backend: &Backend) {
    for n in 0..5 {
        inserted(
            &backend.store,
            received_at(&format!("e{n}"), b"{}", 1_000 + n),
        )
        .await;
    }
    let policy = RetentionPolicy {
        raw_payload: seconds(1),
        dedup: seconds(1),
        dead_deliveries: seconds(1),
    };
    let now = 100_000;
    assert_eq!(backend.purge_preview(&policy, now).await, counts(5, 5, 0));
    // Whole events first; their bodies go with them. What remains is
    // counted up to the batch's limit (3 events remain: 2 are reported).
    let first = backend.purge_batch(&policy, now, 2).await;
    assert_eq!(
        (first.purged, first.remaining),
        (counts(2, 2, 0), counts(1, 2, 0))
    );
    assert_eq!(backend.purge_preview(&policy, now).await, counts(1, 3, 0));
    // A batch takes due rows in no promised order: the last event may go
    // whole in this batch (its body with it) or have its body dropped now
    // and go in the next.
    let second = backend.purge_batch(&policy, now, 2).await;
    assert_eq!(second.purged.events, 2);
    assert_eq!(second.remaining.events, 1);
    let third = backend.purge_batch(&policy, now, 2).await;
    assert_eq!((third.purged.events, third.remaining), (1, counts(0, 0, 0)));
    assert!(
        second.purged.raw_payloads + third.purged.raw_payloads <= first.remaining.raw_payloads,
        "no body is dropped twice: {second:?} {third:?}"
    );
    assert!(third.is_done());
    assert_eq!(backend.store.stats().await.unwrap().total, 0);
}

async fn an_event_without_targets_is_processed_when_accepted(backend: &Backend) {
    let store = &backend.store;
    let no_targets = event("a", "lonely", b"{}");
    assert!(no_targets.targets.is_empty());
    let id = inserted(store, no_targets.clone()).await;
    let stats = store.stats().await.unwrap();
    assert_eq!(stats.by_status.get("PROCESSED"), Some(&1), "{stats:?}");
    assert_eq!(stats.by_status.get("ACCEPTED"), None, "{stats:?}");
    let (detail, _) = shown(backend, &id).await;
    assert_eq!(detail.summary.status, "PROCESSED");
    assert!(detail.deliveries.is_empty(), "{detail:?}");
    // Still deduplicated as any event is.
    assert_eq!(
        store.accept(no_targets).await.unwrap(),
        AcceptOutcome::Duplicate { id: id.clone() }
    );
    let processed = backend
        .reads
        .list_events(&EventFilter {
            status: Some(InboxStatus::Processed),
            ..EventFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(processed.events.len(), 1);
    assert_eq!(processed.events[0].id, id);
}

async fn a_target_added_later_does_not_pick_up_old_events(backend: &Backend) {
    let store = &backend.store;
    // Accepted while the endpoint had no target…
    let mut before = event("a", "before", b"{}");
    before.received_at_ms = 500;
    let old = inserted(store, before).await;
    // …then the target `t` was configured, and a new event came.
    let new = inserted(store, event_for_target("after", None)).await;
    let leased = store.lease(lease_params("w", 1_000)).await.unwrap();
    let leased: Vec<&str> = leased.iter().map(|l| l.inbox_id.as_str()).collect();
    assert_eq!(leased, vec![new.as_str()], "only the new event goes to `t`");
    let (detail, _) = shown(backend, &old).await;
    assert_eq!(detail.summary.status, "PROCESSED");
    assert!(detail.deliveries.is_empty());
}

fn target(endpoint: &str, target: &str) -> TargetRef {
    TargetRef {
        endpoint_id: endpoint.into(),
        target: target.into(),
    }
}

async fn the_backlog_follows_open_deliveries_and_the_oldest_unprocessed_event(backend: &Backend) {
    let store = &backend.store;
    let endpoints = vec!["a".to_owned(), "quiet".to_owned()];
    let targets = vec![target("a", "t"), target("quiet", "t")];
    let empty = backend
        .backlog_counts()
        .backlog(&endpoints, &targets)
        .await
        .unwrap();
    assert!(empty.oldest_unprocessed_ms.is_empty());
    assert_eq!(
        empty.targets,
        vec![
            TargetBacklog {
                endpoint_id: "a".into(),
                target: "t".into(),
                open: 0,
                earliest_due_ms: None
            },
            TargetBacklog {
                endpoint_id: "quiet".into(),
                target: "t".into(),
                open: 0,
                earliest_due_ms: None
            },
        ]
    );
    for (id, received) in [("b1", 700), ("b2", 600), ("b3", 800)] {
        let mut e = event_for_target(id, None);
        e.received_at_ms = received;
        inserted(store, e).await;
    }
    // Without targets: processed at once, never a backlog.
    let mut lonely = event("a", "no-target", b"{}");
    lonely.received_at_ms = 100;
    inserted(store, lonely).await;
    let leased = store.lease(lease_params("w", 1_000)).await.unwrap();
    assert_eq!(leased.len(), 3);
    // b2 (received first, due first) is retried at 5 000; b1 stays leased;
    // b3 is delivered.
    let mut retried = None;
    for lease in &leased {
        let stored = store.load_event(&lease.inbox_id).await.unwrap().unwrap();
        match stored.provider_event_id.as_str() {
            "b2" => {
                retried = Some(lease.inbox_id.clone());
                let retry = Settlement::Retry {
                    next_attempt_at_ms: 5_000,
                    error: "http 503".into(),
                };
                assert!(store.settle(lease, retry, 1_001).await.unwrap());
            }
            "b3" => assert!(store
                .settle(lease, Settlement::Delivered, 1_001)
                .await
                .unwrap()),
            _ => {}
        }
    }
    assert!(retried.is_some());
    let backlog = backend
        .backlog_counts()
        .backlog(&endpoints, &targets)
        .await
        .unwrap();
    assert_eq!(
        backlog
            .oldest_unprocessed_ms
            .into_iter()
            .collect::<Vec<_>>(),
        vec![("a".to_owned(), 600)],
        "b2, the oldest still ACCEPTED"
    );
    assert_eq!(
        backlog.targets[0],
        TargetBacklog {
            endpoint_id: "a".into(),
            target: "t".into(),
            open: 2,
            earliest_due_ms: Some(5_000)
        },
        "b1 leased, b2 pending until 5 000"
    );
    assert_eq!(backlog.targets[1].open, 0);
}

async fn inbox_rows_are_counted_by_status(backend: &Backend) {
    let store = &backend.store;
    for n in 0..3 {
        inserted(store, event_for_target(&format!("c{n}"), None)).await;
    }
    inserted(store, event("a", "lonely", b"{}")).await;
    let leased = store.lease(lease_params("w", 1_000)).await.unwrap();
    let dead = Settlement::Dead {
        error: "http 410".into(),
    };
    assert!(store.settle(&leased[0], dead, 1_001).await.unwrap());
    let count = |status| async move {
        backend
            .backlog_counts()
            .count_by_status(status)
            .await
            .unwrap()
    };
    assert_eq!(count(InboxStatus::Accepted).await, 2);
    assert_eq!(count(InboxStatus::Failed).await, 1);
    assert_eq!(count(InboxStatus::Processed).await, 1);
}

async fn a_write_probe_commits_and_the_queue_is_empty_when_idle(backend: &Backend) {
    let store = &backend.store;
    store.probe_write(1_000).await.unwrap();
    store.probe_write(2_000).await.unwrap();
    assert_eq!(store.commit_queue_depth(), Some(0));
}

/// Leases `event`'s one delivery to target `t` for 100 ms at t = 1 000.
async fn leased_briefly(store: &Arc<dyn hookinbox_store::Store>, id: &str) -> i64 {
    inserted(store, event_for_target(id, None)).await;
    let mut params = lease_params("crashed", 1_000);
    params.lease_ms = 100;
    let leased = store.lease(params).await.unwrap();
    assert_eq!(leased.len(), 1);
    leased[0].delivery_id
}

fn drift_query(expired_before_ms: i64) -> DriftQuery {
    DriftQuery {
        expired_before_ms,
        accepted_since_ms: 0,
        limit: 100,
    }
}

async fn drift_leases_past_expiry_are_found_and_taken_back(backend: &Backend) {
    let store = &backend.store;
    let delivery = leased_briefly(store, "stuck").await;
    assert!(
        backend
            .reconciliation()
            .find_drift(drift_query(1_100))
            .await
            .unwrap()
            .is_empty(),
        "not expired yet at 1 100"
    );
    let drift = backend
        .reconciliation()
        .find_drift(drift_query(5_000))
        .await
        .unwrap();
    assert_eq!(drift.expired_leases, vec![delivery]);
    assert!(drift.stale_statuses.is_empty() && drift.missing_deliveries.is_empty());
    let repair = DriftRepair {
        expired_before_ms: 5_000,
        expired_leases: drift.expired_leases,
        now_ms: 5_000,
        ..DriftRepair::default()
    };
    assert_eq!(
        backend
            .reconciliation()
            .repair_drift(repair.clone())
            .await
            .unwrap(),
        Repaired {
            expired_leases: 1,
            ..Repaired::default()
        }
    );
    assert_eq!(
        backend.reconciliation().repair_drift(repair).await.unwrap(),
        Repaired::default(),
        "repaired once; the second time it is PENDING already"
    );
    let again = store.lease(lease_params("alive", 5_001)).await.unwrap();
    assert_eq!(again.len(), 1, "back to PENDING, leased by a live worker");
    assert!(backend
        .reconciliation()
        .find_drift(drift_query(5_000))
        .await
        .unwrap()
        .is_empty());
}

async fn drift_accepted_events_with_nothing_open_are_finished(backend: &Backend) {
    let store = &backend.store;
    let delivered = inserted(store, event_for_target("delivered", None)).await;
    let died = inserted(store, event_for_target("died", None)).await;
    let open = inserted(store, event_for_target("open", None)).await;
    let legacy = inserted(store, event("a", "legacy", b"{}")).await;
    for lease in store.lease(lease_params("w", 1_000)).await.unwrap() {
        let settlement = if lease.inbox_id == delivered {
            Settlement::Delivered
        } else if lease.inbox_id == died {
            Settlement::Dead {
                error: "http 410".into(),
            }
        } else {
            continue;
        };
        assert!(store.settle(&lease, settlement, 1_001).await.unwrap());
    }
    // The drift: statuses put back by hand, and a row from before targets
    // were recorded (no targets, no deliveries, still ACCEPTED).
    backend
        .execute(&format!(
            "UPDATE inbox SET status = 'ACCEPTED' WHERE id IN ('{delivered}', '{died}');
             UPDATE inbox SET status = 'ACCEPTED', targets = NULL WHERE id = '{legacy}'"
        ))
        .await;
    let drift = backend
        .reconciliation()
        .find_drift(drift_query(0))
        .await
        .unwrap();
    let mut stale = drift.stale_statuses.clone();
    stale.sort();
    let mut expected = vec![delivered.clone(), died.clone(), legacy.clone()];
    expected.sort();
    assert_eq!(stale, expected, "`open` has a delivery leased: not stale");
    assert!(drift.expired_leases.is_empty() && drift.missing_deliveries.is_empty());
    let repaired = backend
        .reconciliation()
        .repair_drift(DriftRepair {
            stale_statuses: drift.stale_statuses,
            now_ms: 2_000,
            ..DriftRepair::default()
        })
        .await
        .unwrap();
    assert_eq!(repaired.stale_statuses, 3);
    let status = |id: String| async move { shown(backend, &id).await.0.summary.status };
    assert_eq!(status(delivered).await, "PROCESSED");
    assert_eq!(status(died).await, "FAILED");
    assert_eq!(status(legacy).await, "PROCESSED");
    assert_eq!(status(open).await, "ACCEPTED");
    assert!(backend
        .reconciliation()
        .find_drift(drift_query(0))
        .await
        .unwrap()
        .is_empty());
}

async fn drift_missing_deliveries_are_found_by_the_recorded_targets_and_added(backend: &Backend) {
    let store = &backend.store;
    let mut two = event_for_target("two", None);
    two.targets = vec!["t".into(), "u".into()];
    let two = inserted(store, two).await;
    // Accepted while the endpoint had no targets: `t` came later, and is
    // not missing for it.
    let before = inserted(store, event("a", "before-t", b"{}")).await;
    // A row from before targets were recorded: never looked at.
    let legacy = inserted(store, event_for_target("legacy", None)).await;
    backend
        .execute(&format!(
            "DELETE FROM delivery WHERE inbox_id = '{two}' AND target = 'u';
             UPDATE inbox SET targets = NULL WHERE id = '{legacy}';
             DELETE FROM delivery WHERE inbox_id = '{legacy}'"
        ))
        .await;
    let drift = backend
        .reconciliation()
        .find_drift(drift_query(0))
        .await
        .unwrap();
    assert_eq!(
        drift.missing_deliveries,
        vec![MissingDelivery {
            inbox_id: two.clone(),
            endpoint_id: "a".into(),
            target: "u".into(),
        }]
    );
    // `legacy` now looks like an event accepted without targets: stale,
    // not missing anything.
    assert_eq!(drift.stale_statuses, vec![legacy.clone()]);
    assert!(drift
        .missing_deliveries
        .iter()
        .all(|m| m.inbox_id != before));
    // Accepted since later than every event: nothing is looked at.
    let future = DriftQuery {
        accepted_since_ms: i64::from(i32::MAX) * 1_000,
        ..drift_query(0)
    };
    assert!(backend
        .reconciliation()
        .find_drift(future)
        .await
        .unwrap()
        .missing_deliveries
        .is_empty());

    // `t` is delivered and the event PROCESSED before the repair finds it.
    let on_t = store.lease(lease_params("w", 1_000)).await.unwrap();
    assert_eq!(on_t.len(), 1);
    assert_eq!(on_t[0].inbox_id, two);
    assert!(store
        .settle(&on_t[0], Settlement::Delivered, 1_001)
        .await
        .unwrap());
    let repair = DriftRepair {
        missing_deliveries: drift.missing_deliveries,
        now_ms: 2_000,
        ..DriftRepair::default()
    };
    assert_eq!(
        backend
            .reconciliation()
            .repair_drift(repair.clone())
            .await
            .unwrap()
            .missing_deliveries,
        1
    );
    assert_eq!(
        backend
            .reconciliation()
            .repair_drift(repair)
            .await
            .unwrap()
            .missing_deliveries,
        0,
        "added once"
    );
    let (detail, _) = shown(backend, &two).await;
    assert_eq!(
        detail.summary.status, "ACCEPTED",
        "open again until `u` has it"
    );
    let mut params = lease_params("w", 2_000);
    params.target = "u".into();
    let on_u = store.lease(params).await.unwrap();
    assert_eq!(on_u.len(), 1);
    assert_eq!(on_u[0].inbox_id, two, "same inbox id: same idempotency key");
    assert!(store
        .settle(&on_u[0], Settlement::Delivered, 2_001)
        .await
        .unwrap());
    let (detail, _) = shown(backend, &two).await;
    assert_eq!(detail.summary.status, "PROCESSED");
    assert!(backend
        .reconciliation()
        .find_drift(drift_query(0))
        .await
        .unwrap()
        .missing_deliveries
        .is_empty());
}

async fn fetched_events_are_marked_and_their_webhook_is_a_duplicate(backend: &Backend) {
    let store = &backend.store;
    let mut fetched = event(
        "a",
        "evt_missed",
        b"{\"id\":\"evt_missed\",\"from\":\"api\"}",
    );
    fetched.targets = vec!["t".into()];
    let id = match backend
        .reconciliation()
        .accept_fetched(fetched.clone(), 42_000)
        .await
        .unwrap()
    {
        AcceptOutcome::Inserted { id } => id,
        other => panic!("{other:?}"),
    };
    let (detail, _) = shown(backend, &id).await;
    assert_eq!(detail.fetched_at_ms, Some(42_000));
    assert_eq!(detail.deliveries.len(), 1, "delivered as any event");
    // Fetched again: the same row, nothing new.
    assert_eq!(
        backend
            .reconciliation()
            .accept_fetched(fetched, 43_000)
            .await
            .unwrap(),
        AcceptOutcome::Duplicate { id: id.clone() }
    );
    // Its webhook arrives after all, with the webhook's own bytes.
    assert_eq!(
        store
            .accept(event("a", "evt_missed", b"{\"id\":\"evt_missed\"}"))
            .await
            .unwrap(),
        AcceptOutcome::Duplicate { id: id.clone() }
    );
    // An event that did arrive, fetched later with the API's bytes.
    let arrived = inserted(store, event("a", "evt_arrived", b"{\"id\":1}")).await;
    assert_eq!(
        backend
            .reconciliation()
            .accept_fetched(event("a", "evt_arrived", b"{\"id\":2}"), 44_000)
            .await
            .unwrap(),
        AcceptOutcome::Duplicate {
            id: arrived.clone()
        }
    );
    let (detail, _) = shown(backend, &arrived).await;
    assert_eq!(detail.fetched_at_ms, None, "it arrived as a webhook");
    // A different body under a webhook's id is still a conflict.
    assert_eq!(
        store
            .accept(event("a", "evt_arrived", b"{\"id\":3}"))
            .await
            .unwrap(),
        AcceptOutcome::Conflict { id: arrived }
    );
    let ids = ["evt_missed", "evt_arrived", "evt_never"].map(String::from);
    let known = backend
        .reconciliation()
        .known_event_ids("a", &ids)
        .await
        .unwrap();
    let mut known: Vec<String> = known.into_iter().collect();
    known.sort();
    assert_eq!(
        known,
        vec!["evt_arrived".to_owned(), "evt_missed".to_owned()]
    );
    assert!(backend
        .reconciliation()
        .known_event_ids("b", &ids)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(store.stats().await.unwrap().total, 2);
}

/// An event that exists, with its deliveries (no payload).
async fn shown(
    backend: &Backend,
    inbox_id: &str,
) -> (hookinbox_store::EventDetail, Option<bytes::Bytes>) {
    backend
        .reads
        .show_event(inbox_id, false)
        .await
        .unwrap()
        .expect("the event exists")
}
