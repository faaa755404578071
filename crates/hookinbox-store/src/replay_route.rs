//! One event's replay as routing decided it against the configuration in
//! force now (docs/architecture.md §5): the targets to deliver to, and the
//! routed / not-routed sets to record with the event instead of those it
//! was accepted with.

/// What a routed replay ([`crate::ReplaySelector::Routed`]) does to one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayRoute {
    pub inbox_id: String,
    /// One new PENDING delivery each, in a new generation. Empty: the
    /// event is left as it is.
    pub deliver_to: Vec<String>,
    /// Recorded as the targets the event was routed to (`inbox.targets`).
    pub routed_to: Vec<String>,
    /// Recorded as the targets it was not routed to (`inbox.not_routed`).
    pub not_routed: Vec<String>,
}

impl ReplayRoute {
    /// The `targets` column: a JSON array.
    pub(crate) fn routed_to_column(&self) -> String {
        serde_json::to_string(&self.routed_to).unwrap_or_else(|_| "[]".to_owned())
    }

    /// The `not_routed` column: a JSON array, NULL when empty (as at accept).
    pub(crate) fn not_routed_column(&self) -> Option<String> {
        (!self.not_routed.is_empty())
            .then(|| serde_json::to_string(&self.not_routed).unwrap_or_else(|_| "[]".to_owned()))
    }
}
