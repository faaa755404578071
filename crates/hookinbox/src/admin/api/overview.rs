//! `GET /admin/stats` (what `hookinbox stats` counts) and
//! `GET /admin/overview` (what the dashboard's first page shows).

use axum::extract::State;
use hookinbox_store::{Overview, OverviewQuery, Stats};
use serde::Serialize;

use super::{ApiError, ErrorBody, Operator};
use crate::admin::ack_latency::{ack_p99, AckP99};
use crate::clock;
use crate::json_line::JsonLine;

/// Inbox rows by endpoint and status, counted over the whole inbox.
#[utoipa::path(
    get,
    path = "/admin/stats",
    tag = "events",
    responses(
        (status = 200, description = "The counts", body = Stats),
        (status = 503, description = "The store is unavailable", body = ErrorBody),
    )
)]
pub async fn stats(State(operator): State<Operator>) -> Result<JsonLine<Stats>, ApiError> {
    Ok(JsonLine(operator.reads.stats().await?))
}

/// The overview: the store's bounded counts and this process's ack p99.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct OverviewAnswer {
    #[serde(flatten)]
    pub store: Overview,
    /// Acknowledgements of accepted and duplicate events by this process,
    /// since it started; `null` before the first one.
    pub ack_p99: Option<AckP99>,
}

/// Arrivals in the last minute, and per configured endpoint and target
/// the last 24 hours: received, failed, backlog. Every count stops at
/// 100,000 (`capped`).
#[utoipa::path(
    get,
    path = "/admin/overview",
    tag = "events",
    responses(
        (status = 200, description = "The overview", body = OverviewAnswer),
        (status = 503, description = "The store is unavailable", body = ErrorBody),
    )
)]
pub async fn overview(
    State(operator): State<Operator>,
) -> Result<JsonLine<OverviewAnswer>, ApiError> {
    Ok(JsonLine(overview_of(&operator).await?))
}

/// The overview now, for this API and the dashboard.
pub async fn overview_of(operator: &Operator) -> Result<OverviewAnswer, ApiError> {
    let mut query = OverviewQuery {
        now_ms: clock::unix_millis(),
        ..OverviewQuery::default()
    };
    if let Some(keys) = &operator.keys {
        let mut endpoints: Vec<_> = keys.endpoints().values().collect();
        endpoints.sort_by(|a, b| a.id.cmp(&b.id));
        for endpoint in endpoints {
            query.endpoints.push(endpoint.id.clone());
            for target in endpoint.target_names() {
                query.targets.push((endpoint.id.clone(), target));
            }
        }
    }
    let store = operator.reads.overview(&query).await?;
    let ack_p99 = operator
        .metrics
        .as_ref()
        .and_then(|metrics| ack_p99(&metrics.render()));
    Ok(OverviewAnswer { store, ack_p99 })
}
