//! Replay of every event a filter selects, for `hookinbox events replay`
//! with filters, the admin API and the dashboard: one way to do it.
//!
//! The events are listed a page at a time with the same store read as
//! `events list` (so "replay what this list shows" is exact), each event
//! routed again against the current configuration ([`ReplayRouting`]), and
//! each page is replayed in one store write ([`ReplaySelector::Routed`]). A replay
//! reopens an event (FAILED → ACCEPTED), which would move it out of a
//! `status=failed` list; the list's cursor is by receipt time and id, not
//! status, so the next page still starts where the last one ended. A dry
//! run lists the same pages and changes nothing.

use hookinbox_store::{EventFilter, ReplaySelector, Store, StoreError, StoreReads};

use crate::replay_routing::ReplayRouting;

/// Events per page and per replay write.
pub const REPLAY_PAGE: usize = 500;

/// What a replay of a selection did (or, dry, would do).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplayCount {
    /// Events the filter selected.
    pub matched: u64,
    /// Events given new deliveries: the matched ones less those with a
    /// delivery still in flight (`PENDING` or `LEASED`) and those no
    /// target takes now, which a replay leaves alone. Always 0 for a dry
    /// run.
    pub replayed: u64,
}

/// Replays `inbox_id` to the targets `routing` gives it now, at `now_ms`;
/// the ids replayed (none when it has a delivery in flight, no target
/// takes it, or it does not exist).
pub async fn replay_one(
    store: &dyn Store,
    reads: &dyn StoreReads,
    routing: &ReplayRouting<'_>,
    inbox_id: &str,
    now_ms: i64,
) -> Result<Vec<String>, StoreError> {
    let routes = routing.plan(reads, inbox_id).await?.into_iter().collect();
    store
        .replay(ReplaySelector::Routed { routes }, now_ms)
        .await
}

/// Replays (unless `dry_run`) every event `filter` selects, at `now_ms`,
/// each to the targets `routing` gives it now. `on_page` is told after
/// each page how far it got, and which ids that page replayed.
pub async fn replay_selected(
    store: &dyn Store,
    reads: &dyn StoreReads,
    routing: &ReplayRouting<'_>,
    filter: &EventFilter,
    dry_run: bool,
    now_ms: i64,
    mut on_page: impl FnMut(ReplayCount, &[String]),
) -> Result<ReplayCount, StoreError> {
    let mut filter = EventFilter {
        cursor: None,
        limit: REPLAY_PAGE,
        ..filter.clone()
    };
    let mut count = ReplayCount::default();
    loop {
        let page = reads.list_events(&filter).await?;
        count.matched += page.events.len() as u64;
        let replayed = if dry_run || page.events.is_empty() {
            Vec::new()
        } else {
            let mut routes = Vec::with_capacity(page.events.len());
            for event in &page.events {
                routes.extend(routing.plan(reads, &event.id).await?);
            }
            store
                .replay(ReplaySelector::Routed { routes }, now_ms)
                .await?
        };
        count.replayed += replayed.len() as u64;
        on_page(count, &replayed);
        match page.next_page() {
            Some(cursor) => filter.cursor = Some(cursor),
            None => return Ok(count),
        }
    }
}
