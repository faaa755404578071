//! Signed requests: the way a `lab` sender signs them (docs/architecture.md §3:
//! `X-Timestamp` and `X-Signature`, hex HMAC-SHA256 of
//! `"{timestamp}.{body}"`); GitHub's, whose event id (the delivery id) is
//! not signed; and Mailgun's, whose signature does not cover the body and so
//! comes with HTTP basic credentials.

use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;

use crate::config::LAB_SECRET;

/// The wall clock in unix seconds, as a sender signing now reads it.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs() as i64)
        .unwrap_or_default()
}

/// A request's headers and body, ready to send.
#[derive(Debug, Clone)]
pub struct Signed {
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
}

impl Signed {
    /// The same request with header `name` (any case) removed.
    pub fn without(mut self, name: &str) -> Signed {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self
    }

    /// The same request with header `name` set to `value` (replacing it).
    pub fn with(self, name: &str, value: &str) -> Signed {
        let mut signed = self.without(name);
        signed.headers.push((name.to_owned(), value.to_owned()));
        signed
    }
}

/// `body` signed with [`LAB_SECRET`] at `timestamp`, as JSON.
pub fn lab_signed(body: impl Into<Vec<u8>>, timestamp: i64) -> Signed {
    let body = body.into();
    let signature = hookinbox_verify::providers::lab::sign(LAB_SECRET, timestamp, &body);
    Signed {
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("x-timestamp".into(), timestamp.to_string()),
            ("x-signature".into(), signature),
        ],
        body: body.into(),
    }
}

/// `body` as Stripe sends it: `Stripe-Signature: t=…,v1=…`, hex
/// HMAC-SHA256 of `"{timestamp}.{body}"` keyed with the whole `whsec_…`
/// secret.
pub fn stripe_signed(secret: &str, body: &str, timestamp: i64) -> Signed {
    let timestamp = timestamp.to_string();
    let v1 = hookinbox_verify::SignatureHeader::hex(
        "Stripe-Signature",
        hookinbox_verify::Algorithm::HmacSha256,
    )
    .sign_hmac(
        secret.as_bytes(),
        &[timestamp.as_bytes(), b".", body.as_bytes()],
    );
    Signed {
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("stripe-signature".into(), format!("t={timestamp},v1={v1}")),
        ],
        body: Bytes::from(body.to_owned()),
    }
}

/// A `payment.succeeded` event with this id, signed now.
pub fn lab_event(id: &str) -> Signed {
    lab_signed(
        format!(r#"{{"id":"{id}","type":"payment.succeeded","amount":1}}"#),
        now(),
    )
}

/// A Mailgun event webhook signed now with `signing_key` under `token`,
/// with an `Authorization` header when given.
pub fn mailgun_signed(signing_key: &str, token: &str, authorization: Option<&str>) -> Signed {
    let timestamp = now().to_string();
    let signature = hookinbox_verify::providers::mailgun::sign(signing_key, &timestamp, token);
    let body = serde_json::json!({
        "signature": {"timestamp": timestamp, "token": token, "signature": signature},
        "event-data": {"event": "delivered", "id": "ev-1", "timestamp": now()},
    });
    let mut headers = vec![("content-type".to_owned(), "application/json".to_owned())];
    if let Some(value) = authorization {
        headers.push(("authorization".into(), value.into()));
    }
    Signed {
        headers,
        body: body.to_string().into(),
    }
}

/// An `Authorization` value for HTTP basic credentials `user:password`.
pub fn basic(credentials: &str) -> String {
    use base64::Engine;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(credentials)
    )
}

/// A GitHub `issues` webhook: `body` signed with `secret`, under the
/// delivery id `delivery`, which GitHub does not sign.
pub fn github_signed(secret: &str, body: &str, delivery: &str) -> Signed {
    Signed {
        headers: vec![
            ("content-type".into(), "application/json".into()),
            (
                "x-hub-signature-256".into(),
                hookinbox_verify::providers::github::sign(secret, body.as_bytes()),
            ),
            ("x-github-delivery".into(), delivery.into()),
            ("x-github-event".into(), "issues".into()),
        ],
        body: body.to_owned().into(),
    }
}
