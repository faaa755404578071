//! `standard` — Standard Webhooks (and Svix, which sends the same scheme
//! under `svix-` header names).
//!
//! - Headers: `webhook-id`, `webhook-timestamp` (integer unix seconds),
//!   `webhook-signature`; or all three with the `svix-` prefix instead. The
//!   three are taken from one family: the `webhook-` one when its signature
//!   header is present, else the `svix-` one, so a request cannot mix an id
//!   from one family with a signature from the other.
//! - Signed bytes: `"{id}.{timestamp}.{raw body}"`, so the event id and the
//!   timestamp are both covered by the signature.
//! - Signature header: space-separated `<version>,<base64>` entries. `v1` is
//!   HMAC-SHA256, `v1a` is Ed25519; entries of other versions are ignored (the
//!   spec reserves them for future schemes). Several entries appear while the
//!   sender rotates its secret; any one may match.
//! - Keys: `whsec_<base64>` → the HMAC key is the base64-decoded bytes;
//!   `whpk_<base64>` → a 32-byte Ed25519 public key. A bare base64 string is
//!   an HMAC secret, as the official SDKs accept it.
//! - Tolerance: 300 s, both directions (the spec's recommendation and the
//!   SDKs' default).
//! - Event id: the `webhook-id` header. The spec requires it to be the same on
//!   every retry of one message, and it is signed, so it is the dedup key.
//!   Type: body `type` when the body is a JSON object (the recommended
//!   payload shape); a body that is not JSON still verifies and is stored
//!   without a type, because the scheme itself does not require JSON.
//!   Created: body `timestamp` (RFC 3339). Object id / version: none (payload
//!   shapes are per-application).
//! - Redelivery window: 3 days. Svix's automatic schedule (immediately, 5 s,
//!   5 min, 30 min, 2 h, 5 h, 10 h, 10 h) ends about 27.6 hours after the first
//!   attempt; senders can also resend or recover failed messages by hand,
//!   which keeps the message id. Three days covers the automatic schedule with
//!   margin and the usual manual recovery after an outage.

use base64::Engine;

use crate::encoding;
use crate::envelope::JsonFields;
use crate::registry::{AdapterSettings, SettingsError};
use crate::signature::hmac_sha256;
use crate::signature_header;
use crate::{
    Adapter, Algorithm, Candidate, Envelope, Key, KeyError, Outcome, Refusal, Request,
    SignatureClaim, SignatureCoverage, SignedMessage,
};
use crate::{ProviderFacts, VectorSource};

/// The prefix of a symmetric (HMAC) secret.
const SECRET_PREFIX: &str = "whsec_";
/// The prefix of an Ed25519 public key.
const PUBLIC_KEY_PREFIX: &str = "whpk_";
/// Lengths of the two signature kinds, in bytes.
const HMAC_LEN: usize = 32;
const ED25519_LEN: usize = 64;

/// A sender of Standard Webhooks: the generic `standard` provider, or one
/// named provider that sends the scheme under its own header family and
/// shows its secret its own way (`clerk`, `openai`, …). Each named one is a
/// module of its own holding its `Preset` and facts; the scheme is here, once.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    /// The provider name in configuration.
    pub name: &'static str,
    /// The header names the sender uses.
    pub family: HeaderFamily,
    /// How the secret the sender shows becomes the HMAC key.
    pub secret: SecretFormat,
    /// How long the sender may redeliver one message, in seconds.
    pub redelivery_window_seconds: u64,
    /// What the catalogue says about the sender.
    pub facts: &'static ProviderFacts,
}

/// The header names a sender uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderFamily {
    /// `webhook-id`, `webhook-timestamp`, `webhook-signature` only.
    Webhook,
    /// `svix-id`, `svix-timestamp`, `svix-signature` only.
    Svix,
    /// Either family, as the Svix libraries accept: the `webhook-` one when
    /// its signature header is present, else the `svix-` one.
    Either,
}

/// How a sender's secret, as its dashboard shows it, becomes the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretFormat {
    /// `whsec_<base64>` (or bare base64) → the decoded bytes, as the spec and
    /// the `standardwebhooks` and `svix` libraries read it; `whpk_<base64>` →
    /// an Ed25519 public key.
    Base64,
    /// The secret string's own UTF-8 bytes (Polar's `polar_whs_…` secrets).
    Utf8,
}

/// The generic Standard Webhooks (and Svix) provider.
pub const STANDARD: Preset = Preset {
    name: "standard",
    family: HeaderFamily::Either,
    secret: SecretFormat::Base64,
    redelivery_window_seconds: 3 * 24 * 3600,
    facts: &FACTS,
};

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(STANDARD))
}

/// One family of header names.
struct HeaderNames {
    id: &'static str,
    timestamp: &'static str,
    signature: &'static str,
}

const WEBHOOK: HeaderNames = HeaderNames {
    id: "webhook-id",
    timestamp: "webhook-timestamp",
    signature: "webhook-signature",
};
const SVIX: HeaderNames = HeaderNames {
    id: "svix-id",
    timestamp: "svix-timestamp",
    signature: "svix-signature",
};

impl Preset {
    /// The header family the request is read with: the sender's own, or for
    /// [`HeaderFamily::Either`] the one whose signature header is present.
    fn names(&self, request: &Request<'_>) -> &'static HeaderNames {
        match self.family {
            HeaderFamily::Webhook => &WEBHOOK,
            HeaderFamily::Svix => &SVIX,
            HeaderFamily::Either => {
                if request.headers.get_nonempty(WEBHOOK.signature).is_none()
                    && request.headers.get_nonempty(SVIX.signature).is_some()
                {
                    &SVIX
                } else {
                    &WEBHOOK
                }
            }
        }
    }
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Standard Webhooks (and Svix)",
    docs_url: "https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md",
    scheme: "HMAC-SHA256 (`whsec_` base64 key), base64, `webhook-signature: v1,…` (or `svix-signature`); Ed25519 `v1a` with a `whpk_` key",
    signed_parts: "`{webhook-id}.{webhook-timestamp}.{body}`",
    id_source: "header `webhook-id` (or `svix-id`)",
    handshake: None,
    batch: None,
    vectors: VectorSource::OfficialSdk("standardwebhooks and svix (PyPI)"),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Preset {
    fn name(&self) -> &'static str {
        self.name
    }

    fn facts(&self) -> &'static ProviderFacts {
        self.facts
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(300)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        self.redelivery_window_seconds
    }

    /// The signed content is `"{id}.{timestamp}.{body}"`; the type is in the body.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        let secret = secret.trim();
        if self.secret == SecretFormat::Utf8 {
            return Key::hmac_from_utf8(secret);
        }
        if let Some(public) = secret.strip_prefix(PUBLIC_KEY_PREFIX) {
            let bytes = crate::key::decode_base64(public).ok_or(KeyError::Base64)?;
            return Key::ed25519_from_bytes(&bytes);
        }
        Key::hmac_from_base64(secret.strip_prefix(SECRET_PREFIX).unwrap_or(secret))
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        let names = self.names(request);
        let headers = request.headers;
        let signature = headers
            .get_nonempty(names.signature)
            .ok_or_else(|| Refusal::missing_signature(format!("no {} header", names.signature)))?;
        let id = signature_header::required(headers, names.id)?;
        let timestamp = signature_header::unix_timestamp(headers, names.timestamp)?.seconds;

        let mut candidates = Vec::new();
        for entry in signature.split(' ').filter(|e| !e.is_empty()) {
            let (version, value) = entry.split_once(',').ok_or_else(|| {
                Refusal::malformed_signature(format!(
                    "{} entry without `,` between version and signature",
                    names.signature
                ))
            })?;
            let (algorithm, len) = match version {
                "v1" => (Algorithm::HmacSha256, HMAC_LEN),
                "v1a" => (Algorithm::Ed25519, ED25519_LEN),
                _ => continue,
            };
            if let Some(bytes) = encoding::base64_signature(value).filter(|b| b.len() == len) {
                candidates.push(Candidate::new(algorithm, bytes));
            }
        }
        if candidates.is_empty() {
            return Err(Refusal::malformed_signature(format!(
                "{} has no v1 or v1a entry with a well-formed base64 signature",
                names.signature
            )));
        }
        Ok(SignatureClaim {
            timestamp: Some(timestamp),
            // The timestamp is signed as the integer it parses to, as the SDKs do.
            message: SignedMessage::new()
                .owned(format!("{id}.{timestamp}."))
                .borrowed(request.body),
            candidates,
        })
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let names = self.names(request);
        let id = request
            .headers
            .get_nonempty(names.id)
            .ok_or_else(|| Refusal::missing_event_id(format!("no {} header", names.id)))?;
        let mut event = Envelope::with_id(id)?;
        if let Ok(body) = JsonFields::read(request.body, &["/type", "/timestamp"]) {
            event = event
                .event_type(body.string_at("/type"))
                .created_at(body.rfc3339_at("/timestamp"));
        }
        Ok(Outcome::Event(event))
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let names = match self.family {
            HeaderFamily::Svix => &SVIX,
            HeaderFamily::Webhook | HeaderFamily::Either => &WEBHOOK,
        };
        let secret = crate::signer::shared_secret(&key)?;
        Ok(crate::signer::SignedRequest::json(outgoing.body)
            .header(names.id, outgoing.event_id)
            .header(names.timestamp, outgoing.now.to_string())
            .header(
                names.signature,
                sign_v1(secret, outgoing.event_id, outgoing.now, outgoing.body),
            ))
    }
}

/// The signed content of one message: `"{id}.{timestamp}.{body}"`.
fn signed_content(id: &str, timestamp: i64, body: &[u8]) -> Vec<u8> {
    let mut content = format!("{id}.{timestamp}.").into_bytes();
    content.extend_from_slice(body);
    content
}

/// Signs a message with a symmetric secret the way a Standard Webhooks
/// sender does: one `v1,<base64>` entry of the `webhook-signature` header.
/// `key` is the decoded secret (the bytes after `whsec_`). Used by tests and
/// by delivery targets that re-sign forwarded events.
pub fn sign_v1(key: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    let mac = hmac_sha256(key, &[&signed_content(id, timestamp, body)]);
    format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac)
    )
}

/// Signs a message with an Ed25519 key: one `v1a,<base64>` entry.
pub fn sign_v1a(key: &ed25519_dalek::SigningKey, id: &str, timestamp: i64, body: &[u8]) -> String {
    use ed25519_dalek::Signer;
    let signature = key.sign(&signed_content(id, timestamp, body));
    format!(
        "v1a,{}",
        base64::engine::general_purpose::STANDARD.encode(signature.to_bytes())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified, Verifier};

    const KEY: &[u8] = b"shared-key-0\x00\x01\x02\x03\x04\x05\x06\x07";
    const NOW: i64 = 1_700_000_000;
    const ID: &str = "msg_1";
    const BODY: &[u8] = br#"{"type":"user.created","timestamp":"2023-11-14T22:13:20Z","data":{}}"#;

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    fn signing_key() -> ed25519_dalek::SigningKey {
        ed25519_dalek::SigningKey::from_bytes(&[7; 32])
    }

    fn verifier(secrets: &[(&str, String)]) -> Verifier {
        let secrets: Vec<(&str, &str)> = secrets.iter().map(|(v, s)| (*v, s.as_str())).collect();
        test_support::verifier_with(Box::new(STANDARD), &secrets)
    }

    fn hmac_verifier() -> Verifier {
        verifier(&[("k1", format!("whsec_{}", b64(KEY)))])
    }

    fn headers(prefix: &str, id: Option<&str>, ts: Option<&str>, sig: Option<&str>) -> Headers {
        let mut h = Headers::new();
        for (name, value) in [("id", id), ("timestamp", ts), ("signature", sig)] {
            if let Some(value) = value {
                h.append(&format!("{prefix}-{name}"), value);
            }
        }
        h
    }

    fn signed(ts: i64, body: &[u8]) -> Headers {
        headers(
            "webhook",
            Some(ID),
            Some(&ts.to_string()),
            Some(&sign_v1(KEY, ID, ts, body)),
        )
    }

    fn verify_with(v: &Verifier, h: &Headers, body: &[u8]) -> Result<Verified, Reason> {
        test_support::verify(v, h, body, NOW)
    }

    fn verify(h: &Headers, body: &[u8]) -> Result<Verified, Reason> {
        verify_with(&hmac_verifier(), h, body)
    }

    #[test]
    fn v1_verifies_with_header_id_and_body_type() {
        let verified = verify(&signed(NOW, BODY), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, ID);
        assert_eq!(event.event_type.as_deref(), Some("user.created"));
        assert_eq!(event.created_at, Some(1_700_000_000));
    }

    #[test]
    fn svix_headers_verify_and_families_do_not_mix() {
        let ts = NOW.to_string();
        let sig = sign_v1(KEY, ID, NOW, BODY);
        let h = headers("svix", Some(ID), Some(&ts), Some(&sig));
        assert_eq!(verify(&h, BODY).unwrap().event().unwrap().event_id, ID);
        // A webhook- signature takes its id from webhook-id, not svix-id.
        let mut h = headers("webhook", None, Some(&ts), Some(&sig));
        h.append("svix-id", ID);
        assert_eq!(verify(&h, BODY).unwrap_err(), Reason::MissingSignature);
    }

    #[test]
    fn bare_base64_secret_is_accepted() {
        let v = verifier(&[("k1", b64(KEY))]);
        assert!(verify_with(&v, &signed(NOW, BODY), BODY).is_ok());
    }

    #[test]
    fn v1a_ed25519_verifies() {
        let public = signing_key().verifying_key();
        let v = verifier(&[("ed", format!("whpk_{}", b64(public.as_bytes())))]);
        let ts = NOW.to_string();
        let sig = sign_v1a(&signing_key(), ID, NOW, BODY);
        let h = headers("webhook", Some(ID), Some(&ts), Some(&sig));
        assert!(verify_with(&v, &h, BODY).is_ok());
        // An HMAC entry is never checked against a public key, nor the reverse.
        let h = signed(NOW, BODY);
        assert_eq!(verify_with(&v, &h, BODY).unwrap_err(), Reason::Signature);
        let h = headers("webhook", Some(ID), Some(&ts), Some(&sig));
        assert_eq!(verify(&h, BODY).unwrap_err(), Reason::Signature);
    }

    #[test]
    fn rotation_any_entry_may_match_and_unknown_versions_are_ignored() {
        let ts = NOW.to_string();
        let sig = format!(
            "v2,{} v1,{} {}",
            b64(&[1; 32]),
            b64(&[2; 32]),
            sign_v1(KEY, ID, NOW, BODY)
        );
        let h = headers("webhook", Some(ID), Some(&ts), Some(&sig));
        assert!(verify(&h, BODY).is_ok());
    }

    #[test]
    fn more_signatures_than_the_cap_are_refused_before_any_check() {
        let public = signing_key().verifying_key();
        let v = verifier(&[("ed", format!("whpk_{}", b64(public.as_bytes())))]);
        let ts = NOW.to_string();
        let right = sign_v1a(&signing_key(), ID, NOW, BODY);
        let header_with = |bogus: usize| {
            let mut entries: Vec<String> = (0..bogus)
                .map(|n| format!("v1a,{}", b64(&[n as u8; ED25519_LEN])))
                .collect();
            entries.push(right.clone());
            entries.join(" ")
        };
        let verify_entries = |bogus: usize| {
            let h = headers("webhook", Some(ID), Some(&ts), Some(&header_with(bogus)));
            verify_with(&v, &h, BODY)
        };
        // At the cap, the right entry among well-formed ones still verifies.
        let at_cap = crate::MAX_SIGNATURE_CANDIDATES - 1;
        assert!(verify_entries(at_cap).is_ok());
        // One more, or the ~170 entries that fit in a 16 KiB header, are
        // refused as malformed even though the right one is among them.
        for bogus in [at_cap + 1, 170] {
            assert_eq!(
                verify_entries(bogus).unwrap_err(),
                Reason::MalformedSignature,
                "{bogus}"
            );
        }
        let failure = v
            .verify(
                &crate::Request::new(
                    &headers("webhook", Some(ID), Some(&ts), Some(&header_with(170))),
                    BODY,
                ),
                NOW,
            )
            .unwrap_err();
        assert!(
            failure.diagnosis.tried_versions.is_empty(),
            "no key was tried: {:?}",
            failure.diagnosis
        );
    }

    #[test]
    fn tampered_body_id_or_timestamp_and_wrong_secret_are_refused() {
        let mut body = BODY.to_vec();
        body[2] ^= 1;
        assert_eq!(
            verify(&signed(NOW, BODY), &body).unwrap_err(),
            Reason::Signature
        );
        let sig = sign_v1(KEY, ID, NOW, BODY);
        let ts = NOW.to_string();
        let h = headers("webhook", Some("msg_2"), Some(&ts), Some(&sig));
        assert_eq!(verify(&h, BODY).unwrap_err(), Reason::Signature);
        let h = headers(
            "webhook",
            Some(ID),
            Some(&(NOW - 1).to_string()),
            Some(&sig),
        );
        assert_eq!(verify(&h, BODY).unwrap_err(), Reason::Signature);
        let v = verifier(&[("k1", format!("whsec_{}", b64(b"another key")))]);
        assert_eq!(
            verify_with(&v, &signed(NOW, BODY), BODY).unwrap_err(),
            Reason::Signature
        );
    }

    #[test]
    fn missing_headers() {
        let ts = NOW.to_string();
        let sig = sign_v1(KEY, ID, NOW, BODY);
        for h in [
            headers("webhook", Some(ID), Some(&ts), None),
            headers("webhook", None, Some(&ts), Some(&sig)),
            headers("webhook", Some(ID), None, Some(&sig)),
        ] {
            assert_eq!(verify(&h, BODY).unwrap_err(), Reason::MissingSignature);
        }
    }

    #[test]
    fn malformed_headers() {
        let ts = NOW.to_string();
        for bad in ["v1", "v1,!!!", "v2,AAAA", &format!("v1,{}", b64(&[0; 31]))] {
            let h = headers("webhook", Some(ID), Some(&ts), Some(bad));
            assert_eq!(
                verify(&h, BODY).unwrap_err(),
                Reason::MalformedSignature,
                "{bad}"
            );
        }
        let sig = sign_v1(KEY, ID, NOW, BODY);
        let h = headers("webhook", Some(ID), Some("1700000000.0"), Some(&sig));
        assert_eq!(verify(&h, BODY).unwrap_err(), Reason::Timestamp);
    }

    #[test]
    fn timestamp_window_edges_both_ways() {
        test_support::assert_window(NOW, 300, |ts| verify(&signed(ts, BODY), BODY));
    }

    #[test]
    fn non_json_body_verifies_without_type() {
        let body = b"plain text";
        let verified = verify(&signed(NOW, body), body).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, ID);
        assert_eq!(event.event_type, None);
    }

    #[test]
    fn a_preset_reads_only_its_own_header_family() {
        let secret = format!("whsec_{}", b64(KEY));
        let sig = sign_v1(KEY, ID, NOW, BODY);
        let ts = NOW.to_string();
        let svix_only = test_support::verifier_with(
            Box::new(crate::providers::clerk::PRESET),
            &[("k1", &secret)],
        );
        let webhook_only = test_support::verifier_with(
            Box::new(crate::providers::openai::PRESET),
            &[("k1", &secret)],
        );
        let svix = headers("svix", Some(ID), Some(&ts), Some(&sig));
        let webhook = headers("webhook", Some(ID), Some(&ts), Some(&sig));
        assert!(verify_with(&svix_only, &svix, BODY).is_ok());
        assert!(verify_with(&webhook_only, &webhook, BODY).is_ok());
        assert_eq!(
            verify_with(&svix_only, &webhook, BODY).unwrap_err(),
            Reason::MissingSignature
        );
        assert_eq!(
            verify_with(&webhook_only, &svix, BODY).unwrap_err(),
            Reason::MissingSignature
        );
        // The generic provider and the Svix-powered ones that name no family
        // take either.
        for either in [STANDARD, crate::providers::stytch::PRESET] {
            let v = test_support::verifier_with(Box::new(either), &[("k1", &secret)]);
            assert!(verify_with(&v, &svix, BODY).is_ok());
            assert!(verify_with(&v, &webhook, BODY).is_ok());
        }
    }

    #[test]
    fn a_utf8_secret_preset_keys_with_the_secret_text() {
        let secret = "polar_whs_fixture";
        let v = test_support::verifier_with(
            Box::new(crate::providers::polar::PRESET),
            &[("k1", secret)],
        );
        let ts = NOW.to_string();
        let by_text = sign_v1(secret.as_bytes(), ID, NOW, BODY);
        let h = headers("webhook", Some(ID), Some(&ts), Some(&by_text));
        assert_eq!(
            verify_with(&v, &h, BODY).unwrap().event().unwrap().event_id,
            ID
        );
        // `standard` would read it as base64, which it is not.
        assert_eq!(STANDARD.parse_key(secret).unwrap_err(), KeyError::Base64);
    }

    #[test]
    fn key_shapes() {
        let adapter = STANDARD;
        assert!(matches!(
            adapter.parse_key("whsec_AAEC").unwrap(),
            Key::Hmac(_)
        ));
        assert_eq!(adapter.parse_key("whsec_!!").unwrap_err(), KeyError::Base64);
        assert_eq!(adapter.parse_key("whsec_").unwrap_err(), KeyError::Empty);
        assert!(adapter
            .parse_key(&format!("whpk_{}", b64(&[1; 31])))
            .is_err());
        assert!(matches!(
            adapter
                .parse_key(&format!(
                    "whpk_{}",
                    b64(signing_key().verifying_key().as_bytes())
                ))
                .unwrap(),
            Key::Ed25519(_)
        ));
    }
}
