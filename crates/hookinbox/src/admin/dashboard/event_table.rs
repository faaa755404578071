//! The table of events the overview, the event list and an endpoint's page
//! share: receipt time, endpoint (unless the page is one endpoint's), type,
//! the provider's event id as the link to the event, and the status.

use hookinbox_store::EventSummary;
use maud::{html, Markup};

use super::layout::{status, utc};

/// `events` as a table with `caption`; `endpoint_column` unless every
/// event is of one endpoint.
pub fn event_table(caption: &str, events: &[EventSummary], endpoint_column: bool) -> Markup {
    html! {
        table {
            caption { (caption) }
            thead { tr {
                th scope="col" { "Received" }
                @if endpoint_column { th scope="col" { "Endpoint" } }
                th scope="col" { "Type" } th scope="col" { "Provider event id" }
                th scope="col" { "Status" }
            } }
            tbody {
                @for event in events {
                    tr {
                        td { (utc(event.received_at_ms)) }
                        @if endpoint_column { td { (event.endpoint_id) } }
                        td { (event.event_type.as_deref().unwrap_or("")) }
                        td { a href={ "/ui/events/" (event.id) } { (event.provider_event_id) } }
                        td { (status(&event.status)) }
                    }
                }
            }
        }
    }
}
