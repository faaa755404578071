//! The admin API (docs/architecture.md §7): JSON over the admin listener, behind its
//! `Host` check and bearer token — events listed and filtered, one event
//! with its deliveries and attempts, replays, counts, the targets' states
//! with pause and resume. The OpenAPI 3.1
//! document at `/admin/openapi.json` is generated from these handlers and
//! their types (utoipa): it is the reference, and cannot drift from them.
//!
//! The handlers read through [`StoreReads`] — the same reads as `hookinbox
//! events list|show` — and replay through [`Store::replay`], as `events
//! replay` does ([`crate::event_replay`]).

mod error;
mod events;
mod overview;
mod replay;
mod stream;
mod targets;

use std::sync::Arc;

use axum::Router;
use hookinbox_store::{Store, StoreReads};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use error::{ApiError, ApiJson, ApiPath, ApiQuery, ErrorBody};
pub use events::PageParams;
pub use overview::overview_of;
pub use replay::run as replay_run;
pub use stream::{StreamReady, StreamedWebhook};
pub use targets::{change as target_change, configured_targets};

use crate::endpoint::Endpoints;
use crate::json_line::JsonLine;
use crate::secrets::key_reload::KeyReloader;
use crate::telemetry::MetricsHandle;

/// What the API's handlers (and the dashboard's) work with.
#[derive(Clone)]
pub struct Operator {
    pub store: Arc<dyn Store>,
    pub reads: Arc<dyn StoreReads>,
    /// The configured endpoints and targets (none in a process without them).
    pub keys: Option<Arc<KeyReloader>>,
    pub metrics: Option<MetricsHandle>,
}

impl Operator {
    /// The running configuration's endpoints, which a replay routes over
    /// (none in a process given no configuration).
    pub fn endpoints(&self) -> &Endpoints {
        static NONE: std::sync::LazyLock<Endpoints> = std::sync::LazyLock::new(Endpoints::new);
        self.keys.as_deref().map_or(&*NONE, KeyReloader::endpoints)
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "hookinbox admin API",
        description = "Events, deliveries and replays of a hookinbox inbox. Every request needs \
                       `Authorization: Bearer <admin token>` when a token is configured, and a \
                       `Host` the admin listener admits. A request that changes something is \
                       refused when it comes from another site (`Origin`, `Sec-Fetch-Site`: \
                       403) or carries a form's media type (415): send JSON or no body. \
                       Errors are `{\"error\", \"message\"}`.",
    ),
    modifiers(&BearerToken),
    security(("admin_token" = [])),
    tags(
        (name = "events", description = "The inbox: list, show, replay, stream."),
        (name = "targets", description = "The targets' states; pause and resume."),
    ),
)]
struct ApiDoc;

/// The admin token as the document's security scheme.
struct BearerToken;

impl utoipa::Modify for BearerToken {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "admin_token",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The API's handlers, each with its part of the document.
fn routes() -> OpenApiRouter<Operator> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(events::list))
        .routes(routes!(events::show))
        .routes(routes!(replay::replay_one))
        .routes(routes!(replay::replay_selected))
        .routes(routes!(overview::stats))
        .routes(routes!(overview::overview))
        .routes(routes!(stream::stream))
        .routes(routes!(targets::list))
        .routes(routes!(targets::pause))
        .routes(routes!(targets::resume))
}

/// The API's routes and `/admin/openapi.json`.
pub fn router(operator: Operator) -> Router {
    let (router, mut document) = routes().with_state(operator).split_for_parts();
    document.info.version = env!("CARGO_PKG_VERSION").to_owned();
    let document = Arc::new(document);
    router.route(
        "/admin/openapi.json",
        axum::routing::get(move || {
            let document = Arc::clone(&document);
            async move { JsonLine(document.as_ref().clone()) }
        }),
    )
}
