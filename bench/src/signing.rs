//! The signing scheme a run's requests carry (`--scheme`): the repository's
//! minimal `lab` scheme, or the two real providers the issue-20 benchmark
//! measures, Standard Webhooks and Stripe. Each signs at send time, so the
//! timestamp is fresh in runs of any length.

use anyhow::{bail, Context, Result};
use base64::Engine;
use clap::ValueEnum;
use hookinbox_verify::providers::{lab, standard};

/// Which provider's signature the requests carry; the endpoint must be
/// configured with the same provider and secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scheme {
    /// `X-Timestamp` + `X-Signature` = hex HMAC-SHA256 of `"{t}.{body}"`.
    Lab,
    /// `webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>` of
    /// `"{id}.{t}.{body}"`; the secret is `whsec_<base64 key>`.
    Standard,
    /// `Stripe-Signature: t=<t>,v1=<hex>` of `"{t}.{body}"`, keyed with the
    /// whole secret string.
    Stripe,
}

/// A scheme with its key, ready to sign.
pub enum Signer {
    Lab(String),
    Standard(Vec<u8>),
    Stripe(String),
}

impl Signer {
    /// Reads `secret` as `scheme` expects it (Standard Webhooks: `whsec_`
    /// then base64), naming what is wrong without printing it.
    pub fn new(scheme: Scheme, secret: &str) -> Result<Signer> {
        Ok(match scheme {
            Scheme::Lab => Signer::Lab(secret.to_owned()),
            Scheme::Stripe => Signer::Stripe(secret.to_owned()),
            Scheme::Standard => {
                let Some(encoded) = secret.strip_prefix("whsec_") else {
                    bail!("--scheme standard needs a secret of the form whsec_<base64>");
                };
                let key = base64::engine::general_purpose::STANDARD
                    .decode(encoded)
                    .context("--scheme standard: the secret after whsec_ is not base64")?;
                Signer::Standard(key)
            }
        })
    }

    /// The signature headers of `body`, event `event_id`, signed at `timestamp`.
    pub fn headers(
        &self,
        event_id: &str,
        timestamp: i64,
        body: &[u8],
    ) -> Vec<(&'static str, String)> {
        match self {
            Signer::Lab(secret) => vec![
                ("x-timestamp", timestamp.to_string()),
                ("x-signature", lab::sign(secret, timestamp, body)),
            ],
            Signer::Standard(key) => vec![
                ("webhook-id", event_id.to_owned()),
                ("webhook-timestamp", timestamp.to_string()),
                (
                    "webhook-signature",
                    standard::sign_v1(key, event_id, timestamp, body),
                ),
            ],
            // Stripe's v1 is lab's construction keyed with the whole secret.
            Signer::Stripe(secret) => vec![(
                "stripe-signature",
                format!("t={timestamp},v1={}", lab::sign(secret, timestamp, body)),
            )],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookinbox_verify::{adapter_for, AdapterSettings, Headers, Request, SecretInput, Verifier};

    const BODY: &[u8] = br#"{"id":"bench-r-1","type":"bench","pad":"x"}"#;

    /// Each scheme's headers verify with the provider's own adapter.
    fn verifies(provider: &str, secret: &str, scheme: Scheme) {
        let signer = Signer::new(scheme, secret).unwrap();
        let now = 1_700_000_000;
        let mut headers = Headers::new();
        for (name, value) in signer.headers("bench-r-1", now, BODY) {
            headers.append(name, value);
        }
        let adapter = adapter_for(provider, &AdapterSettings::default()).unwrap();
        let secret = SecretInput {
            version: "v1".into(),
            value: secret.into(),
            not_before: None,
            not_after: None,
        };
        let verifier = Verifier::new(adapter, [secret]).unwrap();
        let verified = verifier.verify(&Request::new(&headers, BODY), now);
        assert!(verified.is_ok(), "{provider}: {verified:?}");
    }

    #[test]
    fn every_scheme_signs_what_its_provider_verifies() {
        verifies("lab", "lab-secret", Scheme::Lab);
        verifies("stripe", "whsec_stripe-secret", Scheme::Stripe);
        verifies("standard", "whsec_c2hhcmVkLWtleS0w", Scheme::Standard);
    }
}
