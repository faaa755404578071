//! `GET /admin/events` and `GET /admin/events/{id}`.

use axum::extract::State;
use base64::Engine;
use hookinbox_store::{EventCursor, EventDetail, EventPage};
use serde::{Deserialize, Serialize};

use super::{ApiError, ApiPath, ApiQuery, ErrorBody, Operator};
use crate::event_selection::EventSelection;
use crate::json_line::JsonLine;

/// Most events one page may hold.
pub const MAX_PAGE: u32 = 1000;

/// Which page of a list.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[serde(default)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// `next_cursor` of the page before; absent for the first page.
    pub cursor: Option<String>,
    /// Events in the page (default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
}

impl PageParams {
    /// Checks the cursor and the size; the filter's page fields are set.
    pub fn apply(&self, filter: &mut hookinbox_store::EventFilter) -> Result<(), ApiError> {
        filter.cursor = match self.cursor.as_deref().filter(|c| !c.is_empty()) {
            Some(text) => Some(EventCursor::parse(text).ok_or_else(|| {
                ApiError::bad_request("cursor: not a cursor this API wrote (next_cursor)")
            })?),
            None => None,
        };
        filter.limit = match self.limit {
            None => 100,
            Some(limit @ 1..=MAX_PAGE) => limit as usize,
            Some(_) => {
                return Err(ApiError::bad_request(format!(
                    "limit: between 1 and {MAX_PAGE}"
                )))
            }
        };
        Ok(())
    }
}

/// Events, newest first (by receipt time), a page at a time. A page
/// continues strictly after the one before, so events arriving meanwhile do
/// not shift it.
#[utoipa::path(
    get,
    path = "/admin/events",
    tag = "events",
    params(EventSelection, PageParams),
    responses(
        (status = 200, description = "One page", body = EventPage),
        (status = 400, description = "A parameter does not mean anything", body = ErrorBody),
        (status = 503, description = "The store is unavailable", body = ErrorBody),
    )
)]
pub async fn list(
    State(operator): State<Operator>,
    ApiQuery(selection): ApiQuery<EventSelection>,
    ApiQuery(page): ApiQuery<PageParams>,
) -> Result<JsonLine<EventPage>, ApiError> {
    let mut filter = selection.filter()?;
    page.apply(&mut filter)?;
    Ok(JsonLine(operator.reads.list_events(&filter).await?))
}

/// Whether to include the raw request.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[serde(default)]
#[into_params(parameter_in = Query)]
pub struct ShowParams {
    /// Include the raw body (`payload_base64`) and the request headers kept
    /// for audit (`headers`). Without it neither is read.
    pub payload: bool,
}

/// One event with its deliveries and attempts.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct EventAnswer {
    #[serde(flatten)]
    pub event: EventDetail,
    /// The request headers kept for audit; only with `payload=true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub headers: Option<Vec<Header>>,
    /// The raw body as received, base64; only with `payload=true`, and
    /// `null` once retention removed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub payload_base64: Option<Option<String>>,
}

#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Header {
    pub name: String,
    pub value: String,
}

/// One event: metadata, every delivery (one per target and replay
/// generation) with its attempts and masked errors. The payload only on
/// request.
#[utoipa::path(
    get,
    path = "/admin/events/{id}",
    tag = "events",
    params(("id" = String, Path, description = "The inbox id"), ShowParams),
    responses(
        (status = 200, description = "The event", body = EventAnswer),
        (status = 400, description = "A parameter does not mean anything", body = ErrorBody),
        (status = 404, description = "No such event", body = ErrorBody),
        (status = 503, description = "The store is unavailable", body = ErrorBody),
    )
)]
pub async fn show(
    State(operator): State<Operator>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(params): ApiQuery<ShowParams>,
) -> Result<JsonLine<EventAnswer>, ApiError> {
    let Some((event, raw)) = operator.reads.show_event(&id, params.payload).await? else {
        return Err(ApiError::NoSuchEvent(id));
    };
    let (headers, payload_base64) = if params.payload {
        let headers = operator.reads.audit_headers(&id).await?.unwrap_or_default();
        let headers = headers
            .into_iter()
            .map(|(name, value)| Header { name, value })
            .collect();
        let payload = raw.map(|bytes| base64::engine::general_purpose::STANDARD.encode(bytes));
        (Some(headers), Some(payload))
    } else {
        (None, None)
    };
    Ok(JsonLine(EventAnswer {
        event,
        headers,
        payload_base64,
    }))
}
