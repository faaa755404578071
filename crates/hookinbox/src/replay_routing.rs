//! Replay re-evaluates routing (docs/delivery.md, "Replay"): the targets
//! an event is replayed to are those of its endpoint whose `event_types`
//! and `filter` take it under the configuration in force now, not those of
//! its last delivery. With a named target (`--target`), only that target is
//! considered, so an operator can send old events to a target added after
//! they were accepted. The same code serves `hookinbox events replay`, the
//! admin API and the dashboard.

use hookinbox_store::{ReplayRoute, StoreError, StoreReads};

use crate::endpoint::Endpoints;
use crate::routing::RoutedEvent;

/// The current configuration's routing, as a replay applies it.
#[derive(Debug, Clone, Copy)]
pub struct ReplayRouting<'a> {
    endpoints: &'a Endpoints,
    only_target: Option<&'a str>,
}

/// Why a replay cannot start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayRoutingError {
    /// `--target` names a target no configured endpoint has.
    #[error("no endpoint has a target named `{0}`")]
    UnknownTarget(String),
}

impl<'a> ReplayRouting<'a> {
    /// Routing over `endpoints`, to every target that matches or, with
    /// `only_target`, to that one alone (which some endpoint must have).
    pub fn new(
        endpoints: &'a Endpoints,
        only_target: Option<&'a str>,
    ) -> Result<ReplayRouting<'a>, ReplayRoutingError> {
        if let Some(name) = only_target {
            let known = endpoints
                .values()
                .any(|endpoint| endpoint.targets.iter().any(|t| t.name == name));
            if !known {
                return Err(ReplayRoutingError::UnknownTarget(name.to_owned()));
            }
        }
        Ok(ReplayRouting {
            endpoints,
            only_target,
        })
    }

    /// What replaying `inbox_id` does now: the targets to deliver to and
    /// the routed / not-routed sets to record. `None` when the event does
    /// not exist, its endpoint is no longer configured, or no target (or
    /// not the named one) takes it: such an event is left as it is.
    pub async fn plan(
        &self,
        reads: &dyn StoreReads,
        inbox_id: &str,
    ) -> Result<Option<ReplayRoute>, StoreError> {
        let Some((event, body)) = reads.show_event(inbox_id, true).await? else {
            return Ok(None);
        };
        let Some(endpoint) = self.endpoints.get(&event.summary.endpoint_id) else {
            return Ok(None);
        };
        let headers = reads.audit_headers(inbox_id).await?.unwrap_or_default();
        let routed_event = RoutedEvent {
            provider: &event.summary.provider,
            endpoint: &event.summary.endpoint_id,
            id: &event.summary.provider_event_id,
            event_type: event.summary.event_type.as_deref(),
            received_at_ms: event.summary.received_at_ms,
            matched_secret_version: &event.matched_secret_version,
            headers: &headers,
            content_type: event.content_type.as_deref(),
            // A body purged by retention is absent: a filter on it does not match.
            body: body.as_deref().unwrap_or_default(),
        };
        let route = match self.only_target {
            None => {
                let decision = endpoint.route(&routed_event);
                ReplayRoute {
                    inbox_id: inbox_id.to_owned(),
                    deliver_to: decision.routed.clone(),
                    routed_to: decision.routed,
                    not_routed: decision.not_routed,
                }
            }
            Some(name) => {
                let Some(target) = endpoint.targets.iter().find(|t| t.name == name) else {
                    return Ok(None);
                };
                let decision = crate::routing::RoutingDecision::route(
                    [(target.name.as_str(), &target.route)],
                    &routed_event,
                );
                if decision.routed.is_empty() {
                    return Ok(None);
                }
                // The named target joins the record; the others stay as they were.
                let mut routed_to = event.routed_to.unwrap_or_else(|| {
                    let mut earlier: Vec<String> =
                        event.deliveries.iter().map(|d| d.target.clone()).collect();
                    earlier.sort_unstable();
                    earlier.dedup();
                    earlier
                });
                if !routed_to.iter().any(|t| t == name) {
                    routed_to.push(name.to_owned());
                }
                let mut not_routed = event.not_routed;
                not_routed.retain(|t| t != name);
                ReplayRoute {
                    inbox_id: inbox_id.to_owned(),
                    deliver_to: vec![name.to_owned()],
                    routed_to,
                    not_routed,
                }
            }
        };
        Ok((!route.deliver_to.is_empty()).then_some(route))
    }
}
