//! `liveblocks` — Liveblocks webhooks: Standard Webhooks, a named preset of
//! `standard` (see `providers/standard.rs` for the scheme itself).
//!
//! Follows https://liveblocks.io/docs/platform/webhooks.
//!
//! - Headers: `webhook-id`, `webhook-timestamp`, `webhook-signature`.
//!   `WebhookHandler.verifyRequest` of `@liveblocks/node` reads `webhook-id`,
//!   `webhook-timestamp` and `webhook-signature`.
//! - Signed bytes: `"{id}.{timestamp}.{raw body}"`, HMAC-SHA256, each
//!   `v1,<base64>` entry of the signature header a candidate.
//! - Secret: the project's `whsec_…` webhook secret (`WebhookHandler` requires the
//!   prefix and base64-decodes the rest).
//! - Tolerance: 300 s in both directions (the spec's and the SDKs' default).
//! - Event id: the id header, signed and kept on every retry. Type: body
//!   `type`. Created: body `timestamp` when it is RFC 3339.
//! - Redelivery window: Liveblocks documents no window; 3 days, as `standard`.

use crate::providers::standard::{HeaderFamily, Preset, SecretFormat};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{Adapter, ProviderFacts, VectorSource};

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Liveblocks",
    docs_url: "https://liveblocks.io/docs/platform/webhooks",
    scheme:
        "Standard Webhooks: HMAC-SHA256 (`whsec_` base64 key), base64, `webhook-signature: v1,…`",
    signed_parts: "`{webhook-id}.{webhook-timestamp}.{body}`",
    id_source: "header `webhook-id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("standardwebhooks (PyPI)"),
    signing: crate::Signing::Symmetric,
};

/// Liveblocks's header family and secret format over the Standard Webhooks scheme.
pub const PRESET: Preset = Preset {
    name: "liveblocks",
    family: HeaderFamily::Webhook,
    secret: SecretFormat::Base64,
    redelivery_window_seconds: 3 * 24 * 3600,
    facts: &FACTS,
};

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(PRESET))
}
