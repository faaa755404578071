//! `dropbox` — Dropbox API app webhooks (`X-Dropbox-Signature`).
//!
//! Follows Dropbox's "Using Webhooks" reference
//! (www.dropbox.com/developers/reference/webhooks).
//!
//! - Verification request: when the URI is entered in the App Console,
//!   Dropbox sends `GET ?challenge=<random>` and expects the value echoed as
//!   the body, `Content-Type: text/plain` and `X-Content-Type-Options:
//!   nosniff` (the service adds the latter to every handshake answer). It is
//!   answered by [`Adapter::probe`] (a plain value only, see
//!   [`crate::probe`]); nothing is stored. Dropbox does not retry it.
//! - Header of notifications: `X-Dropbox-Signature` = hex HMAC-SHA256 of the
//!   raw body, keyed with the app's **App secret** (App Console → Settings)
//!   as UTF-8 bytes.
//! - Tolerance: none. Dropbox signs no timestamp.
//! - What a notification is: `{"list_folder": {"accounts": [...]},
//!   "delta": {"users": [...]}}` — only *which* accounts changed, several at
//!   once when they changed together. It is a hint to call
//!   `files/list_folder/continue` with the app's own cursor, not a record of
//!   a change.
//! - Event id: **Dropbox sends none**, and nothing in the body tells two
//!   notifications apart: the same account changing twice gives two equal
//!   bodies. A natural key of the accounts would make the second one a
//!   duplicate *forever*, and a body-fingerprint window would drop a real
//!   change whose hint matches one already delivered; a hash of the payload
//!   is never an id (docs/architecture.md §3). So each delivery is its own
//!   event: the id is assigned by the receiver, `"{received_at_ms}:{first
//!   account}"` (receipt time in unix milliseconds, then the first account
//!   of `list_folder.accounts`, else of `delta.users`). A retry (Dropbox
//!   retries non-200 answers and time-outs for about ten minutes) is stored
//!   again: one more hint, which the consumer's cursor makes harmless. No
//!   request chooses the id (it is not read from the request), so the
//!   coverage declares it signed and no fingerprint dedup applies. Without a
//!   receipt time (an offline check without `--now`) the request is
//!   `missing_event_id`; so is a notification naming no account.
//! - Type: `list_folder` (the first top-level field, `list_folder` preferred).
//!   Object id: the account, when the notification names exactly one. No
//!   creation time, no object version.
//! - Redelivery window: about ten minutes of retries; one hour is kept.

use crate::envelope::{self, Envelope};
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Key, KeyError, Outcome, Probe, ProviderFacts, Refusal, Reply, Request,
    SignatureClaim, SignatureCoverage, SignatureHeader, VectorSource,
};

/// Hex HMAC-SHA256 of the raw body.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-Dropbox-Signature", Algorithm::HmacSha256).with_length(32);

/// The catalogue entry (`hookinbox providers`, docs/providers.md).
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Dropbox",
    docs_url: "https://www.dropbox.com/developers/reference/webhooks",
    scheme: "HMAC-SHA256 (App secret), hex, `X-Dropbox-Signature`",
    signed_parts: "raw body",
    id_source: "none sent: `{received_at_ms}:{first account}`, one event per delivery",
    handshake: Some("`GET ?challenge=` echoed as text/plain"),
    batch: Some("one notification (several accounts) stored as one event"),
    vectors: VectorSource::IndependentPython(
        "crates/hookinbox-verify/tests/fixtures/generate/handshake_formula_fixtures.py",
    ),
    signing: crate::Signing::Symmetric,
};

#[derive(Debug, Default)]
pub struct Dropbox;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Dropbox))
}

impl Adapter for Dropbox {
    fn name(&self) -> &'static str {
        "dropbox"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        None
    }

    fn redelivery_window_seconds(&self) -> u64 {
        3600
    }

    /// HMAC over the body, which holds the type and the accounts; the id is
    /// the receiver's own (receipt time and a signed account), which no
    /// request can choose.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        SIGNATURE.body_claim(request)
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        let body = envelope::json(request.body)?;
        let accounts = ["/list_folder/accounts", "/delta/users"]
            .iter()
            .find_map(|pointer| {
                body.pointer(pointer)
                    .and_then(serde_json::Value::as_array)
                    .filter(|accounts| !accounts.is_empty())
            })
            .ok_or_else(|| Refusal::missing_event_id("the notification names no account"))?;
        let first = accounts
            .first()
            .and_then(|account| envelope::string_at(account, ""))
            .ok_or_else(|| Refusal::missing_event_id("the first account is not a string"))?;
        let received_at_ms = request.received_at_ms.ok_or_else(|| {
            Refusal::missing_event_id("a Dropbox notification's id is its receipt time")
        })?;
        let event_type = body.as_object().and_then(|fields| {
            if fields.contains_key("list_folder") {
                Some("list_folder".to_owned())
            } else {
                fields.keys().next().cloned()
            }
        });
        let event = Envelope::with_id(format!("{received_at_ms}:{first}"))?
            .event_type(event_type)
            .object_id((accounts.len() == 1).then_some(first));
        Ok(Outcome::Event(event))
    }

    fn probe(&self, probe: &Probe<'_>) -> Option<Reply> {
        probe.echo_get_parameter("challenge")
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        crate::signer::body_hmac(&SIGNATURE, &key, outgoing)
    }
}

/// Signs a body the way Dropbox does: hex HMAC-SHA256 of the raw body with
/// the App secret. Used by tests and load generators.
pub fn sign(app_secret: &str, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(app_secret.as_bytes(), &[body])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, Signed};
    use crate::{Headers, Reason, Verified};
    use proptest::prelude::*;

    const SECRET: &str = "dropbox-app-secret";
    const RECEIVED_AT_MS: i64 = 1_767_225_600_123;
    const BODY: &[u8] = br#"{"list_folder": {"accounts": ["dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc"]}, "delta": {"users": [12345678]}}"#;

    fn verify_at(
        header: &str,
        body: &[u8],
        received_at_ms: Option<i64>,
    ) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Dropbox), SECRET);
        let headers: Headers = [("X-Dropbox-Signature", header)].into_iter().collect();
        verifier
            .verify(
                &Request::new(&headers, body).with_received_at_ms(received_at_ms),
                0,
            )
            .map_err(|failure| failure.refusal.reason)
    }

    fn verify(header: &str, body: &[u8]) -> Result<Verified, Reason> {
        verify_at(header, body, Some(RECEIVED_AT_MS))
    }

    #[test]
    fn each_delivery_is_its_own_event() {
        let verified = verify(&sign(SECRET, BODY), BODY).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(
            event.event_id,
            "1767225600123:dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc"
        );
        assert_eq!(event.event_type.as_deref(), Some("list_folder"));
        assert_eq!(
            event.object_id.as_deref(),
            Some("dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc")
        );
        assert!(verified.unsigned_metadata().is_empty());
        let retry = verify_at(&sign(SECRET, BODY), BODY, Some(RECEIVED_AT_MS + 1)).unwrap();
        assert_ne!(retry.event().unwrap().event_id, event.event_id);
    }

    #[test]
    fn several_accounts_name_no_object_and_users_are_a_fallback() {
        let body = br#"{"list_folder":{"accounts":["dbid:a","dbid:b"]},"delta":{"users":[1,2]}}"#;
        let verified = verify(&sign(SECRET, body), body).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "1767225600123:dbid:a");
        assert_eq!(event.object_id, None);
        let legacy = br#"{"delta":{"users":[12345678]}}"#;
        let verified = verify(&sign(SECRET, legacy), legacy).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "1767225600123:12345678");
        assert_eq!(event.event_type.as_deref(), Some("delta"));
    }

    #[test]
    fn refusals() {
        let good = sign(SECRET, BODY);
        let mut tampered = BODY.to_vec();
        tampered[40] ^= 1;
        assert_eq!(verify(&good, &tampered).unwrap_err(), Reason::Signature);
        assert_eq!(
            verify(&sign("other-secret", BODY), BODY).unwrap_err(),
            Reason::Signature
        );
        assert_eq!(verify("xyz", BODY).unwrap_err(), Reason::MalformedSignature);
        assert_eq!(verify("", BODY).unwrap_err(), Reason::MissingSignature);
        assert_eq!(
            verify_at(&good, BODY, None).unwrap_err(),
            Reason::MissingEventId
        );
        let empty = br#"{"list_folder":{"accounts":[]}}"#;
        assert_eq!(
            verify(&sign(SECRET, empty), empty).unwrap_err(),
            Reason::MissingEventId
        );
        assert_eq!(
            verify(&sign(SECRET, b"[1]"), b"[1]").unwrap_err(),
            Reason::MissingEventId
        );
        assert_eq!(
            verify(&sign(SECRET, b"{"), b"{").unwrap_err(),
            Reason::MalformedBody
        );
    }

    #[test]
    fn the_challenge_get_is_echoed() {
        let headers = Headers::new();
        let probe = |method, query| {
            Dropbox.probe(&Probe {
                method,
                query: Some(query),
                headers: &headers,
            })
        };
        let reply = probe("GET", "challenge=fYd3wEm9XcQm0d5sZrOlqY").unwrap();
        assert_eq!(reply.status, 200);
        assert_eq!(reply.body, b"fYd3wEm9XcQm0d5sZrOlqY");
        assert!(reply.content_type.starts_with("text/plain"));
        assert!(probe("HEAD", "challenge=x").is_none());
        assert!(probe("GET", "other=x").is_none());
        assert!(probe("GET", "challenge=%3Cscript%3E").is_none());
    }

    #[test]
    fn a_previous_app_secret_still_verifies() {
        let verifier = test_support::verifier_with(
            Box::new(Dropbox),
            &[("current", "new-app-secret"), ("previous", SECRET)],
        );
        let headers: Headers = [("X-Dropbox-Signature", sign(SECRET, BODY))]
            .into_iter()
            .collect();
        let verified = verifier
            .verify(
                &Request::new(&headers, BODY).with_received_at_ms(Some(RECEIVED_AT_MS)),
                0,
            )
            .unwrap();
        assert_eq!(verified.matched_secret_version(), "previous");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn signed_bodies_verify_and_single_byte_changes_do_not(
            body in prop::collection::vec(any::<u8>(), 1..256),
            secret in "[A-Za-z0-9]{1,40}",
            at in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let signed = Signed::in_header(Box::new(Dropbox), &secret, SIGNATURE, &sign(&secret, &body), &[]);
            test_support::check_single_byte_changes(&signed, &body, at, flip)?;
        }
    }
}
