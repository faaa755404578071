//! Requests signed the way a `lab` sender signs them (DESIGN.md §3):
//! `X-Timestamp` and `X-Signature`, hex HMAC-SHA256 of `"{timestamp}.{body}"`.

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

/// A `payment.succeeded` event with this id, signed now.
pub fn lab_event(id: &str) -> Signed {
    lab_signed(
        format!(r#"{{"id":"{id}","type":"payment.succeeded","amount":1}}"#),
        now(),
    )
}
