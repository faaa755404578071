//! Which of an endpoint's targets an accepted event goes to
//! (docs/architecture.md §5): each target's `event_types` patterns and its
//! CEL `filter`, compiled when the configuration is read and evaluated once
//! per event before the accept commit, so a target that does not match
//! gets no delivery row and the event records where it went and where not.

mod body_paths;
mod event_type_patterns;
mod filter_input;
mod filter_position;
mod routing_decision;
mod target_filter;
mod target_route;

pub use event_type_patterns::EventTypePatterns;
pub use filter_input::RoutedEvent;
pub use routing_decision::RoutingDecision;
pub use target_filter::TargetFilter;
pub use target_route::TargetRoute;

#[cfg(test)]
mod tests;
