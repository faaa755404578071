//! `polar` — Polar webhooks: Standard Webhooks, a named preset of
//! `standard` (see `providers/standard.rs` for the scheme itself).
//!
//! Follows https://docs.polar.sh/integrate/webhooks/delivery.
//!
//! - Headers: `webhook-id`, `webhook-timestamp`, `webhook-signature`. Polar sends
//!   `webhook-id`, `webhook-timestamp` and `webhook-signature`, `validate_event` of
//!   `polar-sdk` reads them.
//! - Signed bytes: `"{id}.{timestamp}.{raw body}"`, HMAC-SHA256, each
//!   `v1,<base64>` entry of the signature header a candidate.
//! - Secret: the secret as the Polar dashboard shows it (`polar_whs_…`): its UTF-8
//!   bytes are the HMAC key, the first key `polar-sdk` tries (it base64-encodes it for
//!   `standardwebhooks`).
//! - Tolerance: 300 s in both directions (the spec's and the SDKs' default).
//! - Event id: the id header, signed and kept on every retry. Type: body
//!   `type`. Created: body `timestamp` when it is RFC 3339.
//! - Redelivery window: Polar documents retries but no window; 3 days, as `standard`.

use crate::providers::standard::{HeaderFamily, Preset, SecretFormat};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{Adapter, ProviderFacts, VectorSource};

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Polar",
    docs_url: "https://docs.polar.sh/integrate/webhooks/delivery",
    scheme:
        "Standard Webhooks: HMAC-SHA256 (secret's UTF-8 bytes), base64, `webhook-signature: v1,…`",
    signed_parts: "`{webhook-id}.{webhook-timestamp}.{body}`",
    id_source: "header `webhook-id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("polar-sdk (PyPI) verifies; standardwebhooks signs"),
    signing: crate::Signing::Symmetric,
};

/// Polar's header family and secret format over the Standard Webhooks scheme.
pub const PRESET: Preset = Preset {
    name: "polar",
    family: HeaderFamily::Webhook,
    secret: SecretFormat::Utf8,
    redelivery_window_seconds: 3 * 24 * 3600,
    facts: &FACTS,
};

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(PRESET))
}
