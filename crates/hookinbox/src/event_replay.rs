//! Replay of every event a filter selects, for `hookinbox events replay`
//! with filters, the admin API and the dashboard: one way to do it.
//!
//! The events are listed a page at a time with the same store read as
//! `events list` (so "replay what this list shows" is exact), and each
//! page is replayed in one store write ([`ReplaySelector::Ids`]). A replay
//! reopens an event (FAILED → ACCEPTED), which would move it out of a
//! `status=failed` list; the list's cursor is by receipt time and id, not
//! status, so the next page still starts where the last one ended. A dry
//! run lists the same pages and changes nothing.

use hookinbox_store::{EventFilter, ReplaySelector, Store, StoreError, StoreReads};

/// Events per page and per replay write.
pub const REPLAY_PAGE: usize = 500;

/// What a replay of a selection did (or, dry, would do).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplayCount {
    /// Events the filter selected.
    pub matched: u64,
    /// Events given new deliveries: the matched ones less those with a
    /// delivery still in flight (`PENDING` or `LEASED`), which a replay
    /// leaves alone. Always 0 for a dry run.
    pub replayed: u64,
}

/// Replays (unless `dry_run`) every event `filter` selects, at `now_ms`.
/// `on_page` is told after each page how far it got, and which ids that
/// page replayed.
pub async fn replay_selected(
    store: &dyn Store,
    reads: &dyn StoreReads,
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
            let inbox_ids = page.events.iter().map(|event| event.id.clone()).collect();
            store
                .replay(ReplaySelector::Ids { inbox_ids }, now_ms)
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
