//! Where one event goes: the targets it was routed to and those it was not.

use std::borrow::Cow;
use std::cell::OnceCell;

use super::body_paths::BodyPaths;
use super::filter_input::{FilterInput, RoutedEvent};
use super::target_route::TargetRoute;

/// The outcome of routing one event over an endpoint's targets, in their
/// configured order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoutingDecision {
    /// Targets that get a delivery row.
    pub routed: Vec<String>,
    /// Targets whose `event_types` or `filter` did not match (a filter
    /// that failed at run time included).
    pub not_routed: Vec<String>,
}

impl RoutingDecision {
    /// Routes `event` over `targets` (name, rules). The filter input (the
    /// body parsed) is built once, and only if some filter runs; each
    /// the body is converted only as far as some filter reads it. A filter
    /// that fails is a non-match, counted in
    /// `hookinbox_filter_errors_total{endpoint,target}`; it never fails
    /// the request.
    pub fn route<'t>(
        targets: impl IntoIterator<Item = (&'t str, &'t TargetRoute)>,
        event: &RoutedEvent<'_>,
    ) -> RoutingDecision {
        let targets: Vec<(&str, &TargetRoute)> = targets.into_iter().collect();
        let input: OnceCell<cel::Context<'static, 'static>> = OnceCell::new();
        let mut decision = RoutingDecision::default();
        for &(name, route) in &targets {
            let matched = route.matches(event.event_type, || {
                input.get_or_init(|| FilterInput::new(event, &read_by_all(&targets)).context())
            });
            let matched = match matched {
                Ok(matched) => matched,
                Err(error) => {
                    metrics::counter!(
                        "hookinbox_filter_errors_total",
                        "endpoint" => event.endpoint.to_owned(),
                        "target" => name.to_owned()
                    )
                    .increment(1);
                    tracing::debug!(
                        message = "A target's filter failed; the event is not routed to it.",
                        endpoint = %event.endpoint,
                        target = %name,
                        %error
                    );
                    false
                }
            };
            if matched {
                decision.routed.push(name.to_owned());
            } else {
                decision.not_routed.push(name.to_owned());
            }
        }
        decision
    }
}

/// What the targets' filters read of the body, together.
fn read_by_all<'t>(targets: &[(&str, &'t TargetRoute)]) -> Cow<'t, BodyPaths> {
    let mut filters = targets
        .iter()
        .filter_map(|(_, route)| route.filter.as_ref());
    let Some(first) = filters.next() else {
        return Cow::Owned(BodyPaths::Fields(Default::default()));
    };
    let mut reads = Cow::Borrowed(first.body_paths());
    for filter in filters {
        reads.to_mut().merge(filter.body_paths());
    }
    reads
}
