//! `stytch` — Stytch webhooks: Standard Webhooks, a named preset of
//! `standard` (see `providers/standard.rs` for the scheme itself).
//!
//! Follows https://stytch.com/docs/workspace-management/webhooks.
//!
//! - Headers: `webhook-id`, `webhook-timestamp`, `webhook-signature`, or the
//!   same three with `svix-`. Stytch's webhooks are powered by Svix and its docs defer to
//!   Svix's verification guide, which names the `svix-` headers and says the libraries
//!   also accept the `webhook-` ones; both families are accepted here, as those
//!   libraries do (never mixed within one request).
//! - Signed bytes: `"{id}.{timestamp}.{raw body}"`, HMAC-SHA256, each
//!   `v1,<base64>` entry of the signature header a candidate.
//! - Secret: the endpoint's `whsec_…` signing secret in the Stytch dashboard.
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
    title: "Stytch",
    docs_url: "https://stytch.com/docs/workspace-management/webhooks",
    scheme: "Standard Webhooks: HMAC-SHA256 (`whsec_` base64 key), base64, `webhook-signature` or `svix-signature`",
    signed_parts: "`{webhook-id}.{webhook-timestamp}.{body}` (or the `svix-` headers)",
    id_source: "header `webhook-id` or `svix-id`",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("svix (PyPI), the library Stytch's docs point to"),
    signing: crate::Signing::Symmetric,
};

/// Stytch's header family and secret format over the Standard Webhooks scheme.
pub const PRESET: Preset = Preset {
    name: "stytch",
    family: HeaderFamily::Either,
    secret: SecretFormat::Base64,
    redelivery_window_seconds: 3 * 24 * 3600,
    facts: &FACTS,
};

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(PRESET))
}
