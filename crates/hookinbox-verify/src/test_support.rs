//! What the adapters' unit tests share: a verifier around one adapter, the
//! reason a request is refused with, the edges of a timestamp window, and the
//! single-byte-change property every signature scheme must have.
//!
//! Each provider's test module keeps its own facts (secrets, bodies, the
//! headers its scheme reads); only the harness lives here. The black-box
//! suite under `tests/` runs a similar property through the registry and the
//! whole pipeline; this one checks an adapter's claim directly, so it also
//! covers schemes whose signed timestamp is not `now`.

use proptest::prelude::*;
use proptest::sample::Index;

use crate::{Adapter, Headers, Key, Reason, Request, SecretInput, SignatureHeader, Verified};
use crate::{Refusal, Verifier};

/// A verifier for `adapter` trusting one secret, as version `"1"`.
pub(crate) fn verifier(adapter: Box<dyn Adapter>, secret: &str) -> Verifier {
    verifier_with(adapter, &[("1", secret)])
}

/// A verifier trusting several `(version, secret)`s, in order of preference.
pub(crate) fn verifier_with(adapter: Box<dyn Adapter>, secrets: &[(&str, &str)]) -> Verifier {
    let secrets = secrets.iter().map(|(version, value)| SecretInput {
        version: (*version).into(),
        value: (*value).into(),
        not_before: None,
        not_after: None,
    });
    Verifier::new(adapter, secrets).expect("the test secrets decode")
}

/// Runs the pipeline at `now`; a refusal comes back as its reason, which is
/// what the tests assert on.
pub(crate) fn verify(
    verifier: &Verifier,
    headers: &Headers,
    body: &[u8],
    now: i64,
) -> Result<Verified, Reason> {
    verifier
        .verify(&Request::new(headers, body), now)
        .map_err(|failure| failure.refusal.reason)
}

/// Asserts that a request signed at `now ± tolerance` verifies and one
/// signed a second further out, either way, is a `timestamp` refusal.
/// `at(signed_at)` verifies a request signed at `signed_at`.
pub(crate) fn assert_window<T: std::fmt::Debug>(
    now: i64,
    tolerance: i64,
    at: impl Fn(i64) -> Result<T, Reason>,
) {
    assert!(at(now - tolerance).is_ok(), "{tolerance} s in the past");
    assert!(at(now + tolerance).is_ok(), "{tolerance} s in the future");
    assert_eq!(at(now - tolerance - 1).unwrap_err(), Reason::Timestamp);
    assert_eq!(at(now + tolerance + 1).unwrap_err(), Reason::Timestamp);
}

/// Builds a request's headers around a (possibly changed) decoded signature.
pub(crate) type HeadersFor = Box<dyn Fn(&[u8]) -> Headers>;

/// One request signed the way a provider signs it. The signature is kept
/// decoded, so the property can change single bytes of it and put it back.
pub(crate) struct Signed {
    pub adapter: Box<dyn Adapter>,
    /// The key that must verify it (for a public-key scheme, the public half).
    pub key: Key,
    pub signature: Vec<u8>,
    pub headers: HeadersFor,
}

impl Signed {
    /// A request whose signature is the `value` a sender wrote into
    /// `header`, beside the fixed headers `others`; `secret` is configured
    /// as the provider's operators configure it.
    pub(crate) fn in_header(
        adapter: Box<dyn Adapter>,
        secret: &str,
        header: SignatureHeader<'static>,
        value: &str,
        others: &[(&str, &str)],
    ) -> Signed {
        let others: Vec<(String, String)> = others
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect();
        Signed {
            key: adapter.parse_key(secret).expect("the test secret decodes"),
            signature: header.decode(value).expect("the sender's header").bytes,
            headers: Box::new(move |signature| {
                let mut headers: Headers = others.iter().cloned().collect();
                headers.append(header.name, header.encode(signature));
                headers
            }),
            adapter,
        }
    }

    /// Whether the adapter's claim for these headers and body is signed by
    /// the key; a claim the adapter refuses to read comes back as `Err`.
    pub(crate) fn verifies(&self, signature: &[u8], body: &[u8]) -> Result<bool, Refusal> {
        let headers = (self.headers)(signature);
        self.adapter
            .claim(&Request::new(&headers, body))
            .map(|claim| claim.is_signed_by(&self.key))
    }
}

/// The property: the request verifies as signed; changing any single byte
/// of the body (when it has one) or of the decoded signature makes it fail.
/// A changed body may also make the claim unreadable (a timestamp signed
/// inside the body); either way it must not verify.
pub(crate) fn check_single_byte_changes(
    signed: &Signed,
    body: &[u8],
    at: Index,
    flip: u8,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(signed.verifies(&signed.signature, body), Ok(true));

    if !body.is_empty() {
        let mut changed = body.to_vec();
        changed[at.index(body.len())] ^= flip;
        prop_assert_ne!(signed.verifies(&signed.signature, &changed), Ok(true));
    }

    let mut changed = signed.signature.clone();
    let i = at.index(changed.len());
    changed[i] ^= flip;
    prop_assert_eq!(signed.verifies(&changed, body), Ok(false));
    Ok(())
}
