//! `slack` — Slack request signing (Events API, slash commands, interactivity).
//!
//! - Headers: `X-Slack-Signature: v0=<hex>` and `X-Slack-Request-Timestamp`
//!   (integer unix seconds; anything else is a `timestamp` refusal).
//! - Signed bytes: `"v0:{timestamp}:{raw body}"`.
//! - Algorithm and key: HMAC-SHA256 keyed with the signing secret string's
//!   own bytes (Slack shows it as hex, but its SDKs use the string as is).
//! - Tolerance: 300 s, both directions (Slack's SDKs use five minutes).
//! - Event id, by request kind:
//!   - Events API (JSON): body `event_id`, the same on every retry (Slack
//!     marks retries with `X-Slack-Retry-Num` but keeps the id). A
//!     `url_verification` request is a handshake: answered with
//!     `{"challenge":"…"}` as JSON, never stored.
//!   - Slash commands (form-encoded): `trigger_id`. Slack does not retry a
//!     slash command (the user sees an error instead), so the id only has to
//!     be unique per invocation, which a trigger id is.
//!   - Interactivity (form-encoded `payload=<json>`): `trigger_id` when the
//!     payload has one (block actions, shortcuts, view submissions, …);
//!     otherwise `{container.message_ts or message.ts}:{actions[0].action_ts}`
//!     or the legacy top-level `action_ts`, both of which Slack sets once per
//!     user action. None of these → `missing_event_id`. Like slash commands,
//!     interactive requests are not retried by Slack.
//!   - `ssl_check=1` form posts (Slack probing the certificate of a slash
//!     command URL) are a handshake answered with an empty 200.
//! - Type: Events API `event.type`, else the top-level `type`; slash commands
//!   the command itself (`/deploy`); interactivity the payload's `type`
//!   (`block_actions`, `view_submission`, …). Created: Events API
//!   `event_time`. Object id / version: none.
//! - Redelivery window: 1 hour. Slack retries a failed event three times —
//!   at once, after 1 minute and after 5 minutes — and never later; an hour
//!   covers that with room for slow responses.

use crate::envelope;
use crate::registry::{AdapterSettings, SettingsError};
use crate::{
    Adapter, Algorithm, Envelope, Key, KeyError, Outcome, Refusal, Reply, Request, SignatureClaim,
    SignatureCoverage, SignatureHeader,
};
use crate::{ProviderFacts, VectorSource};

/// `v0=` and the hex HMAC-SHA256 of `"v0:{timestamp}:{body}"`: 32 bytes, or malformed.
const SIGNATURE: SignatureHeader<'static> =
    SignatureHeader::hex("X-Slack-Signature", Algorithm::HmacSha256)
        .with_prefix("v0=")
        .with_length(32);
const TIMESTAMP: &str = "X-Slack-Request-Timestamp";

#[derive(Debug, Default)]
pub struct Slack;

pub fn build(_: &AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError> {
    Ok(Box::new(Slack))
}

/// What `hookinbox providers` and docs/providers.md say about this provider.
pub(crate) const FACTS: ProviderFacts = ProviderFacts {
    title: "Slack",
    docs_url: "https://api.slack.com/authentication/verifying-requests-from-slack",
    scheme: "HMAC-SHA256, hex, `X-Slack-Signature: v0=…`",
    signed_parts: "`v0:{X-Slack-Request-Timestamp}:{body}`",
    id_source: "body `event_id` (Events API), else `trigger_id` or the action's timestamps",
    handshake: Some(
        "`url_verification` answered with its `challenge`; `ssl_check` answered with an empty 200",
    ),
    batch: None,
    vectors: VectorSource::OfficialSdk("slack_sdk (PyPI)"),
    signing: crate::Signing::Symmetric,
};

impl Adapter for Slack {
    fn name(&self) -> &'static str {
        "slack"
    }

    fn facts(&self) -> &'static ProviderFacts {
        &FACTS
    }

    fn default_tolerance_seconds(&self) -> Option<u64> {
        Some(300)
    }

    fn redelivery_window_seconds(&self) -> u64 {
        3600
    }

    /// HMAC over the timestamp and the body, which holds the id and the type.
    fn coverage(&self) -> SignatureCoverage {
        SignatureCoverage::COMPLETE
    }

    fn parse_key(&self, secret: &str) -> Result<Key, KeyError> {
        Key::hmac_from_utf8(secret.trim())
    }

    fn claim<'r>(&self, request: &Request<'r>) -> Result<SignatureClaim<'r>, Refusal> {
        SIGNATURE.timestamped_claim(request, TIMESTAMP, |t| format!("v0:{}:", t.seconds))
    }

    fn envelope(&self, request: &Request<'_>, _key: &Key) -> Result<Outcome, Refusal> {
        if request.media_type().as_deref() == Some("application/x-www-form-urlencoded") {
            form_envelope(request.body)
        } else {
            events_api_envelope(request.body)
        }
    }

    #[cfg(feature = "sign")]
    fn sign(
        &self,
        outgoing: &crate::signer::Outgoing<'_>,
    ) -> Result<crate::signer::SignedRequest, crate::signer::SignError> {
        let key = self.parse_key(outgoing.secret)?;
        let secret = crate::signer::shared_secret(&key)?;
        let timestamp = outgoing.now.to_string();
        let signature = SIGNATURE.sign_hmac(
            secret,
            &[format!("v0:{timestamp}:").as_bytes(), outgoing.body],
        );
        Ok(crate::signer::json_or_form(outgoing.body)
            .header(TIMESTAMP, timestamp)
            .header(SIGNATURE.name, signature))
    }
}

/// An Events API request: an event callback, or the URL verification handshake.
fn events_api_envelope(body: &[u8]) -> Result<Outcome, Refusal> {
    let body = envelope::json(body)?;
    if body.get("type").and_then(|t| t.as_str()) == Some("url_verification") {
        let challenge = envelope::string_at(&body, "/challenge").ok_or_else(|| {
            Refusal::malformed_body("url_verification request without a `challenge`")
        })?;
        return Ok(Outcome::Handshake(Reply::json(
            &serde_json::json!({ "challenge": challenge }),
        )));
    }
    let event = envelope::required_id_at(&body, "/event_id")?
        .event_type(
            envelope::string_at(&body, "/event/type")
                .or_else(|| envelope::string_at(&body, "/type")),
        )
        .created_at(envelope::integer_at(&body, "/event_time"));
    Ok(Outcome::Event(event))
}

/// A form-encoded request: a slash command, an interactive payload or an SSL check.
fn form_envelope(body: &[u8]) -> Result<Outcome, Refusal> {
    let mut command = None;
    let mut trigger_id = None;
    let mut payload = None;
    let mut ssl_check = false;
    for (name, value) in form_urlencoded::parse(body) {
        match name.as_ref() {
            "command" => command = Some(value.into_owned()),
            "trigger_id" => trigger_id = Some(value.into_owned()),
            "payload" => payload = Some(value.into_owned()),
            "ssl_check" => ssl_check = value == "1",
            _ => {}
        }
    }
    if let Some(payload) = payload {
        return interactive_envelope(payload.as_bytes());
    }
    if let Some(command) = command {
        let trigger_id = trigger_id
            .ok_or_else(|| Refusal::missing_event_id("slash command without a `trigger_id`"))?;
        return Ok(Outcome::Event(
            Envelope::with_id(trigger_id)?.event_type(Some(command)),
        ));
    }
    if ssl_check {
        return Ok(Outcome::Handshake(Reply::text(Vec::new())));
    }
    Err(Refusal::malformed_body(
        "form body is neither a slash command (`command`) nor an interactive `payload`",
    ))
}

/// An interactive payload (`payload=<json>`).
fn interactive_envelope(payload: &[u8]) -> Result<Outcome, Refusal> {
    let payload = envelope::json(payload)
        .map_err(|_| Refusal::malformed_body("the interactive `payload` is not valid JSON"))?;
    let id = envelope::string_at(&payload, "/trigger_id")
        .or_else(|| {
            let message_ts = envelope::string_at(&payload, "/container/message_ts")
                .or_else(|| envelope::string_at(&payload, "/message/ts"))?;
            let action_ts = envelope::string_at(&payload, "/actions/0/action_ts")?;
            Some(format!("{message_ts}:{action_ts}"))
        })
        .or_else(|| envelope::string_at(&payload, "/action_ts"))
        .ok_or_else(|| {
            Refusal::missing_event_id(
                "interactive payload without `trigger_id`, message and action timestamps",
            )
        })?;
    Ok(Outcome::Event(
        Envelope::with_id(id)?.event_type(envelope::string_at(&payload, "/type")),
    ))
}

/// Signs a body the way Slack does: the `X-Slack-Signature` value
/// `v0=<hex HMAC-SHA256 of "v0:{timestamp}:{body}">`. For tests and examples.
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    SIGNATURE.sign_hmac(
        secret.as_bytes(),
        &[format!("v0:{timestamp}:").as_bytes(), body],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support;
    use crate::{Headers, Reason, Verified};

    const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
    const NOW: i64 = 1_700_000_000;
    const EVENT: &[u8] =
        br#"{"type":"event_callback","event_id":"Ev1","event_time":1699999998,"event":{"type":"message"}}"#;
    const JSON: &str = "application/json";
    const FORM: &str = "application/x-www-form-urlencoded";

    fn headers(signature: Option<&str>, timestamp: Option<&str>, content_type: &str) -> Headers {
        let mut h = Headers::new();
        if let Some(signature) = signature {
            h.append("X-Slack-Signature", signature);
        }
        if let Some(timestamp) = timestamp {
            h.append("X-Slack-Request-Timestamp", timestamp);
        }
        h.append("Content-Type", content_type);
        h
    }

    fn signed(ts: i64, body: &[u8], content_type: &str) -> Headers {
        headers(
            Some(&sign(SECRET, ts, body)),
            Some(&ts.to_string()),
            content_type,
        )
    }

    fn verify(h: &Headers, body: &[u8]) -> Result<Verified, Reason> {
        let verifier = test_support::verifier(Box::new(Slack), SECRET);
        test_support::verify(&verifier, h, body, NOW)
    }

    #[test]
    fn event_callback_verifies_with_event_id_and_inner_type() {
        let verified = verify(&signed(NOW - 5, EVENT, JSON), EVENT).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "Ev1");
        assert_eq!(event.event_type.as_deref(), Some("message"));
        assert_eq!(event.created_at, Some(1_699_999_998));
    }

    #[test]
    fn tampered_byte_and_wrong_secret_are_refused() {
        let mut body = EVENT.to_vec();
        body[5] ^= 1;
        let h = signed(NOW, EVENT, JSON);
        assert_eq!(verify(&h, &body).unwrap_err(), Reason::Signature);
        let h = headers(
            Some(&sign("other", NOW, EVENT)),
            Some(&NOW.to_string()),
            JSON,
        );
        assert_eq!(verify(&h, EVENT).unwrap_err(), Reason::Signature);
    }

    #[test]
    fn the_timestamp_is_signed() {
        let mut h = headers(
            Some(&sign(SECRET, NOW, EVENT)),
            Some(&(NOW - 1).to_string()),
            JSON,
        );
        assert_eq!(verify(&h, EVENT).unwrap_err(), Reason::Signature);
        h = signed(NOW, EVENT, JSON);
        assert!(verify(&h, EVENT).is_ok());
    }

    #[test]
    fn missing_headers() {
        let ts = NOW.to_string();
        let h = headers(None, Some(&ts), JSON);
        assert_eq!(verify(&h, EVENT).unwrap_err(), Reason::MissingSignature);
        let h = headers(Some(&sign(SECRET, NOW, EVENT)), None, JSON);
        assert_eq!(verify(&h, EVENT).unwrap_err(), Reason::MissingSignature);
    }

    #[test]
    fn malformed_headers() {
        let ts = NOW.to_string();
        let good = sign(SECRET, NOW, EVENT);
        for bad in [&good[3..], "v1=00", "v0=zz", &good[..good.len() - 2]] {
            let h = headers(Some(bad), Some(&ts), JSON);
            assert_eq!(
                verify(&h, EVENT).unwrap_err(),
                Reason::MalformedSignature,
                "{bad}"
            );
        }
        for bad_ts in ["1700000000.5", "soon", "-1"] {
            let h = headers(Some(&good), Some(bad_ts), JSON);
            assert_eq!(
                verify(&h, EVENT).unwrap_err(),
                Reason::Timestamp,
                "{bad_ts}"
            );
        }
    }

    #[test]
    fn timestamp_window_edges_both_ways() {
        test_support::assert_window(NOW, 300, |ts| verify(&signed(ts, EVENT, JSON), EVENT));
    }

    #[test]
    fn url_verification_is_answered_not_stored() {
        let body = br#"{"token":"x","challenge":"3eZbrw1a","type":"url_verification"}"#;
        let verified = verify(&signed(NOW, body, JSON), body).unwrap();
        assert!(verified.event().is_none());
        let Outcome::Handshake(reply) = verified.outcome() else {
            panic!("expected a handshake, got {:?}", verified.outcome());
        };
        assert_eq!(reply.status, 200);
        assert_eq!(reply.content_type, "application/json");
        assert_eq!(reply.body, br#"{"challenge":"3eZbrw1a"}"#);
        // Verification comes first: an unsigned challenge is not answered.
        let h = headers(
            Some(&sign("other", NOW, body)),
            Some(&NOW.to_string()),
            JSON,
        );
        assert_eq!(verify(&h, body).unwrap_err(), Reason::Signature);
    }

    #[test]
    fn events_without_id_or_json_are_refused_after_verification() {
        let body = br#"{"type":"app_rate_limited"}"#;
        assert_eq!(
            verify(&signed(NOW, body, JSON), body).unwrap_err(),
            Reason::MissingEventId
        );
        let body = b"not json";
        assert_eq!(
            verify(&signed(NOW, body, JSON), body).unwrap_err(),
            Reason::MalformedBody
        );
    }

    #[test]
    fn slash_command_uses_trigger_id() {
        let body = b"command=%2Fdeploy&text=now&trigger_id=123.456.abc&user_id=U1";
        let verified = verify(&signed(NOW, body, FORM), body).unwrap();
        let event = verified.event().unwrap();
        assert_eq!(event.event_id, "123.456.abc");
        assert_eq!(event.event_type.as_deref(), Some("/deploy"));
        let body = b"command=%2Fdeploy&text=now";
        assert_eq!(
            verify(&signed(NOW, body, FORM), body).unwrap_err(),
            Reason::MissingEventId
        );
    }

    fn form_payload(json: &str) -> Vec<u8> {
        form_urlencoded::Serializer::new(String::new())
            .append_pair("payload", json)
            .finish()
            .into_bytes()
    }

    #[test]
    fn interactive_payload_ids() {
        let cases = [
            (r#"{"type":"block_actions","trigger_id":"9.8.7"}"#, "9.8.7"),
            (
                r#"{"type":"block_actions","container":{"message_ts":"1.2"},"actions":[{"action_ts":"3.4"}]}"#,
                "1.2:3.4",
            ),
            (r#"{"type":"interactive_message","action_ts":"5.6"}"#, "5.6"),
        ];
        for (json, id) in cases {
            let body = form_payload(json);
            let verified = verify(&signed(NOW, &body, FORM), &body).unwrap();
            assert_eq!(verified.event().unwrap().event_id, id, "{json}");
        }
        let body = form_payload(r#"{"type":"view_closed"}"#);
        assert_eq!(
            verify(&signed(NOW, &body, FORM), &body).unwrap_err(),
            Reason::MissingEventId
        );
        let body = form_payload("{not json");
        assert_eq!(
            verify(&signed(NOW, &body, FORM), &body).unwrap_err(),
            Reason::MalformedBody
        );
    }

    #[test]
    fn ssl_check_is_answered_not_stored() {
        let body = b"ssl_check=1&token=x";
        let verified = verify(&signed(NOW, body, FORM), body).unwrap();
        assert!(matches!(verified.outcome(), Outcome::Handshake(_)));
        let body = b"text=hello";
        assert_eq!(
            verify(&signed(NOW, body, FORM), body).unwrap_err(),
            Reason::MalformedBody
        );
    }
}
