//! `resend` — Resend webhooks: Standard Webhooks, a named preset of
//! `standard` (see `providers/standard.rs` for the scheme itself).
//!
//! Follows https://resend.com/docs/webhooks/verify-webhooks-requests.
//!
//! - Headers: `svix-id`, `svix-timestamp`, `svix-signature`. Resend's guide reads
//!   `svix-id`, `svix-timestamp` and `svix-signature` and verifies with the Resend SDK
//!   or the Svix libraries.
//! - Signed bytes: `"{id}.{timestamp}.{raw body}"`, HMAC-SHA256, each
//!   `v1,<base64>` entry of the signature header a candidate.
//! - Secret: the `whsec_…` signing secret on the webhook's page.
//! - Tolerance: 300 s in both directions (the spec's and the SDKs' default).
//! - Event id: the id header, signed and kept on every retry. Type: body
//!   `type`. Created: body `timestamp` when it is RFC 3339.
//! - Redelivery window: Svix's automatic schedule (immediately, 5 s, 5 min, 30 min, 2
//!   h, 5 h, 10 h, 10 h) ends about 27.6 hours after the first attempt, and messages
//!   can be resent by hand with the same id; 3 days, as `standard`.

use crate::providers::standard::{HeaderFamily, Preset, SecretFormat};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{Adapter, ProviderFacts, VectorSource};

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Resend",
    docs_url: "https://resend.com/docs/webhooks/verify-webhooks-requests",
    scheme: "Standard Webhooks: HMAC-SHA256 (`whsec_` base64 key), base64, `svix-signature: v1,…`",
    signed_parts: "`{svix-id}.{svix-timestamp}.{body}`",
    id_source: "header `svix-id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("svix (PyPI), the library Resend's guide verifies with"),
    signing: crate::Signing::Symmetric,
};

/// Resend's header family and secret format over the Standard Webhooks scheme.
pub const PRESET: Preset = Preset {
    name: "resend",
    family: HeaderFamily::Svix,
    secret: SecretFormat::Base64,
    redelivery_window_seconds: 3 * 24 * 3600,
    facts: &FACTS,
};

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(PRESET))
}
