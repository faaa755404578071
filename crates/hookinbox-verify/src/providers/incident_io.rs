//! `incident_io` — incident.io webhooks: Standard Webhooks, a named preset of
//! `standard` (see `providers/standard.rs` for the scheme itself).
//!
//! Follows https://docs.incident.io/api-reference/webhooks.
//!
//! - Headers: `webhook-id`, `webhook-timestamp`, `webhook-signature`. incident.io's
//!   webhooks are powered by Svix and documented with `webhook-id`, `webhook-timestamp`
//!   and `webhook-signature`.
//! - Signed bytes: `"{id}.{timestamp}.{raw body}"`, HMAC-SHA256, each
//!   `v1,<base64>` entry of the signature header a candidate.
//! - Secret: the endpoint's signing secret (`whsec_…`).
//! - Tolerance: 300 s in both directions (the spec's and the SDKs' default).
//! - Event id: the id header, signed and kept on every retry. Type: body
//!   `type`. Created: body `timestamp` when it is RFC 3339.
//! - Redelivery window: incident.io retries with backoff over 24 hours, and failed
//!   messages can be replayed from Svix's portal with the same id; 3 days.

use crate::providers::standard::{HeaderFamily, Preset, SecretFormat};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{Adapter, ProviderFacts, VectorSource};

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "incident.io",
    docs_url: "https://docs.incident.io/api-reference/webhooks",
    scheme:
        "Standard Webhooks: HMAC-SHA256 (`whsec_` base64 key), base64, `webhook-signature: v1,…`",
    signed_parts: "`{webhook-id}.{webhook-timestamp}.{body}`",
    id_source: "header `webhook-id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("svix (PyPI), the library incident.io's docs verify with"),
    signing: crate::Signing::Symmetric,
};

/// incident.io's header family and secret format over the Standard Webhooks scheme.
pub const PRESET: Preset = Preset {
    name: "incident_io",
    family: HeaderFamily::Webhook,
    secret: SecretFormat::Base64,
    redelivery_window_seconds: 3 * 24 * 3600,
    facts: &FACTS,
};

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(PRESET))
}
