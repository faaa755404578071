//! `brex` — Brex webhooks: Standard Webhooks, a named preset of
//! `standard` (see `providers/standard.rs` for the scheme itself).
//!
//! Follows https://developer.brex.com/docs/webhooks.
//!
//! - Headers: `webhook-id`, `webhook-timestamp`, `webhook-signature`. Brex sends
//!   `Webhook-Id`, `Webhook-Timestamp` and `Webhook-Signature` (header names are
//!   case-insensitive).
//! - Signed bytes: `"{id}.{timestamp}.{raw body}"`, HMAC-SHA256, each
//!   `v1,<base64>` entry of the signature header a candidate.
//! - Secret: a secret from `GET /v1/webhooks/secrets`: base64 without a `whsec_`
//!   prefix, decoded as is (two are listed while Brex rotates; configure both as
//!   versions).
//! - Tolerance: 300 s in both directions (the spec's and the SDKs' default).
//! - Event id: the id header, signed and kept on every retry. Type: body
//!   `type`. Created: body `timestamp` when it is RFC 3339.
//! - Redelivery window: Brex documents retries but no window; 3 days, as `standard`.

use crate::providers::standard::{HeaderFamily, Preset, SecretFormat};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{Adapter, ProviderFacts, VectorSource};

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Brex",
    docs_url: "https://developer.brex.com/docs/webhooks",
    scheme:
        "Standard Webhooks: HMAC-SHA256 (`whsec_` base64 key), base64, `webhook-signature: v1,…`",
    signed_parts: "`{webhook-id}.{webhook-timestamp}.{body}`",
    id_source: "header `webhook-id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("standardwebhooks (PyPI)"),
    signing: crate::Signing::Symmetric,
};

/// Brex's header family and secret format over the Standard Webhooks scheme.
pub const PRESET: Preset = Preset {
    name: "brex",
    family: HeaderFamily::Webhook,
    secret: SecretFormat::Base64,
    redelivery_window_seconds: 3 * 24 * 3600,
    facts: &FACTS,
};

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(PRESET))
}
