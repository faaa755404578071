//! Which events an operator means: the filters of `hookinbox events list`
//! and `events replay`, of the admin API and of the dashboard's forms — one
//! definition, so the three cannot drift apart. Every field is text as it
//! arrives (a query string, a form, a flag); [`EventSelection::filter`]
//! checks it and names the field it refuses.

use hookinbox_store::{EventFilter, InboxStatus};
use serde::{Deserialize, Deserializer, Serialize};

/// The filters, all optional, combined with AND. An empty value (a form's
/// untouched field) means "not filtered".
#[derive(
    Debug,
    Clone,
    Default,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    clap::Args,
    utoipa::IntoParams,
    utoipa::ToSchema,
)]
#[serde(default)]
#[into_params(parameter_in = Query)]
pub struct EventSelection {
    /// Only events with this status: `accepted`, `processed` or `failed`.
    #[arg(long)]
    #[serde(
        deserialize_with = "empty_as_none",
        skip_serializing_if = "Option::is_none"
    )]
    #[param(value_type = Option<StatusName>)]
    #[schema(value_type = Option<StatusName>)]
    pub status: Option<String>,
    /// Only events received by this endpoint id.
    #[arg(long)]
    #[serde(
        deserialize_with = "empty_as_none",
        skip_serializing_if = "Option::is_none"
    )]
    pub endpoint: Option<String>,
    /// Only events of this type (exactly, as the provider names it).
    #[arg(long = "type")]
    #[serde(
        rename = "type",
        deserialize_with = "empty_as_none",
        skip_serializing_if = "Option::is_none"
    )]
    pub event_type: Option<String>,
    /// Only the event with this id at its provider (on every endpoint,
    /// unless `endpoint` is given too).
    #[arg(long)]
    #[serde(
        deserialize_with = "empty_as_none",
        skip_serializing_if = "Option::is_none"
    )]
    pub event_id: Option<String>,
    /// Only events received at or after this time: unix seconds, or RFC 3339
    /// (`2026-12-01T13:55:00Z`); without an offset (`2026-12-01T13:55`) it
    /// is UTC.
    #[arg(long)]
    #[serde(
        deserialize_with = "empty_as_none",
        skip_serializing_if = "Option::is_none"
    )]
    pub since: Option<String>,
    /// Only events received before this time (same forms as `since`).
    #[arg(long)]
    #[serde(
        deserialize_with = "empty_as_none",
        skip_serializing_if = "Option::is_none"
    )]
    pub before: Option<String>,
}

/// The fields' names, as requests spell them.
const FIELDS: &[&str] = &["status", "endpoint", "type", "event_id", "since", "before"];

/// The statuses a selection may name.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum StatusName {
    Accepted,
    Processed,
    Failed,
}

/// A value of a selection that does not mean anything; names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectionError {
    #[error("status: expected accepted, processed or failed")]
    Status,
    #[error("{field}: expected unix seconds or an RFC 3339 time (2026-12-01T13:55:00Z)")]
    Time { field: &'static str },
}

impl EventSelection {
    /// The store's filter (first page, default size).
    pub fn filter(&self) -> Result<EventFilter, SelectionError> {
        Ok(EventFilter {
            status: self.status()?,
            endpoint_id: self.endpoint.clone(),
            event_type: self.event_type.clone(),
            provider_event_id: self.event_id.clone(),
            received_from_ms: time_ms(self.since.as_deref(), "since")?,
            received_before_ms: time_ms(self.before.as_deref(), "before")?,
            cursor: None,
            limit: 0,
        })
    }

    /// The status asked for, parsed (any case).
    pub fn status(&self) -> Result<Option<InboxStatus>, SelectionError> {
        self.status
            .as_deref()
            .map(|text| {
                InboxStatus::parse(&text.to_ascii_uppercase()).ok_or(SelectionError::Status)
            })
            .transpose()
    }

    /// Deserializes a selection that names only known fields (a JSON
    /// body). Not `deny_unknown_fields` on the struct: a query string holds
    /// the page's fields beside it.
    pub fn deserialize_strict<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<EventSelection, D::Error> {
        use serde::de::Error;
        let fields = serde_json::Map::<String, serde_json::Value>::deserialize(deserializer)?;
        if let Some(unknown) = fields.keys().find(|key| !FIELDS.contains(&key.as_str())) {
            return Err(D::Error::unknown_field(unknown, FIELDS));
        }
        serde_json::from_value(serde_json::Value::Object(fields)).map_err(D::Error::custom)
    }

    /// No filter at all: every event.
    pub fn is_empty(&self) -> bool {
        *self == EventSelection::default()
    }

    /// The selection as a query string (`status=failed&endpoint=stripe`),
    /// for links that keep it.
    pub fn query_string(&self) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        for (name, value) in self.fields() {
            query.append_pair(name, value);
        }
        query.finish()
    }

    /// The filters given, by name, in [`FIELDS`] order.
    pub fn fields(&self) -> Vec<(&'static str, &str)> {
        let values = [
            &self.status,
            &self.endpoint,
            &self.event_type,
            &self.event_id,
            &self.since,
            &self.before,
        ];
        FIELDS
            .iter()
            .zip(values)
            .filter_map(|(name, value)| value.as_deref().map(|value| (*name, value)))
            .collect()
    }
}

/// A time parameter in unix milliseconds.
pub(crate) fn time_ms(
    text: Option<&str>,
    field: &'static str,
) -> Result<Option<i64>, SelectionError> {
    let Some(text) = text.map(str::trim) else {
        return Ok(None);
    };
    let refused = SelectionError::Time { field };
    if let Ok(seconds) = text.parse::<i64>() {
        return seconds.checked_mul(1000).map(Some).ok_or(refused);
    }
    // A form's `datetime-local` has no offset (and maybe no seconds): UTC.
    let with_offset = match text.len() {
        16 if text.as_bytes().get(10) == Some(&b'T') => format!("{text}:00Z"),
        19 if text.as_bytes().get(10) == Some(&b'T') => format!("{text}Z"),
        _ => text.to_owned(),
    };
    let parsed =
        time::OffsetDateTime::parse(&with_offset, &time::format_description::well_known::Rfc3339)
            .map_err(|_| refused.clone())?;
    i64::try_from(parsed.unix_timestamp_nanos() / 1_000_000)
        .map(Some)
        .map_err(|_| refused)
}

/// `Some("")` (an untouched form field) is no filter.
fn empty_as_none<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    let value = Option::<String>::deserialize(deserializer)?;
    Ok(value.filter(|text| !text.trim().is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selection(query: &str) -> EventSelection {
        serde_urlencoded::from_str(query).unwrap()
    }

    #[test]
    fn a_query_string_becomes_a_filter() {
        let filter = selection(
            "status=FAILED&endpoint=stripe&type=invoice.paid&event_id=evt_1\
             &since=1764559329&before=2026-12-01T13:55",
        )
        .filter()
        .unwrap();
        assert_eq!(filter.status, Some(InboxStatus::Failed));
        assert_eq!(filter.endpoint_id.as_deref(), Some("stripe"));
        assert_eq!(filter.event_type.as_deref(), Some("invoice.paid"));
        assert_eq!(filter.provider_event_id.as_deref(), Some("evt_1"));
        assert_eq!(filter.received_from_ms, Some(1_764_559_329_000));
        assert_eq!(filter.received_before_ms, Some(1_796_133_300_000));
    }

    #[test]
    fn empty_fields_filter_nothing_and_rfc3339_offsets_count() {
        let untouched = selection("status=&endpoint=&type=&event_id=&since=&before=");
        assert!(untouched.is_empty());
        let filter = selection("since=2026-12-01T14:55:00%2B01:00")
            .filter()
            .unwrap();
        assert_eq!(filter.received_from_ms, Some(1_796_133_300_000));
    }

    #[test]
    fn a_value_that_means_nothing_names_its_field() {
        assert_eq!(
            selection("status=lost").filter().unwrap_err(),
            SelectionError::Status
        );
        assert_eq!(
            selection("before=yesterday")
                .filter()
                .unwrap_err()
                .to_string(),
            "before: expected unix seconds or an RFC 3339 time (2026-12-01T13:55:00Z)"
        );
        assert_eq!(
            selection("since=99999999999999999").filter().unwrap_err(),
            SelectionError::Time { field: "since" }
        );
    }

    #[test]
    fn the_query_string_round_trips() {
        let original = selection("status=failed&type=a%20b&since=5");
        assert_eq!(original.query_string(), "status=failed&type=a+b&since=5");
        assert_eq!(selection(&original.query_string()), original);
    }
}
