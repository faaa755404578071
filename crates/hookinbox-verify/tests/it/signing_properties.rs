//! Property tests, one per signature scheme: a request signed the way the
//! provider signs it verifies for any body and any secret, and changing any
//! single byte of the body, or of the decoded signature, makes it fail with
//! `signature`. They run the real pipeline ([`Verifier`]) through the
//! registry, so a claim that reads the wrong bytes cannot pass.

use base64::Engine;
use hmac::Mac;
use hookinbox_verify::providers::generic_hmac::{
    GenericHmac, GenericHmacSettings, HmacAlgorithm, SignatureEncoding,
};
use hookinbox_verify::providers::{circleci, github, lab, slack, standard};
use hookinbox_verify::{
    adapter_for, Adapter, AdapterSettings, Headers, Reason, Request, SecretInput, Verifier,
};
use proptest::prelude::*;
use proptest::sample::Index;

const NOW: i64 = 1_700_000_000;
const ID: &str = "msg_prop";

/// Kept modest so the whole suite stays fast.
fn config() -> ProptestConfig {
    ProptestConfig::with_cases(64)
}

/// Ed25519 in an unoptimised test build costs tens of milliseconds per
/// operation, so the v1a property runs fewer cases.
fn ed25519_config() -> ProptestConfig {
    ProptestConfig::with_cases(16)
}

/// Builds the request headers around a (possibly changed) decoded signature.
type HeadersFor = Box<dyn Fn(&[u8]) -> Headers>;

/// One signed request of one scheme, with the signature in decoded form so a
/// test can change it and put it back in the header.
struct Signed {
    verifier: Verifier,
    signature: Vec<u8>,
    headers: HeadersFor,
}

fn verifier(adapter: Box<dyn Adapter>, secret: String) -> Verifier {
    let secret = SecretInput {
        version: "1".into(),
        value: secret.into(),
        not_before: None,
        not_after: None,
    };
    Verifier::new(adapter, [secret]).expect("the secret decodes")
}

fn registered(name: &str, secret: String) -> Verifier {
    verifier(
        adapter_for(name, &AdapterSettings::default()).expect("registered"),
        secret,
    )
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn unb64(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect("base64")
}

fn headers<const N: usize>(pairs: [(&str, String); N]) -> Headers {
    pairs.into_iter().collect()
}

/// The pipeline's verdict: `Ok` when the signature matched. A body that is
/// not the provider's envelope (random bytes rarely are) is refused only
/// after the signature matched, so those reasons count as verified.
fn signature_matched(v: &Verifier, h: &Headers, body: &[u8]) -> Result<(), Reason> {
    match v.verify(&Request::new(h, body), NOW) {
        Ok(_) => Ok(()),
        Err(f)
            if matches!(
                f.refusal.reason,
                Reason::MalformedBody | Reason::MissingEventId
            ) =>
        {
            Ok(())
        }
        Err(f) => Err(f.refusal.reason),
    }
}

/// The property itself, shared by every scheme.
fn check(signed: Signed, body: &[u8], at: Index, flip: u8) -> Result<(), TestCaseError> {
    let good = (signed.headers)(&signed.signature);
    prop_assert_eq!(signature_matched(&signed.verifier, &good, body), Ok(()));

    if !body.is_empty() {
        let mut changed = body.to_vec();
        changed[at.index(body.len())] ^= flip;
        prop_assert_eq!(
            signature_matched(&signed.verifier, &good, &changed),
            Err(Reason::Signature)
        );
    }

    let mut signature = signed.signature.clone();
    let i = at.index(signature.len());
    signature[i] ^= flip;
    let changed = (signed.headers)(&signature);
    prop_assert_eq!(
        signature_matched(&signed.verifier, &changed, body),
        Err(Reason::Signature)
    );
    Ok(())
}

fn github_signed(secret: String, body: &[u8]) -> Signed {
    let header = github::sign(&secret, body);
    Signed {
        signature: hex::decode(&header["sha256=".len()..]).unwrap(),
        verifier: registered("github", secret),
        headers: Box::new(|sig| {
            headers([
                (
                    "X-Hub-Signature-256",
                    format!("sha256={}", hex::encode(sig)),
                ),
                ("X-GitHub-Delivery", "guid".into()),
            ])
        }),
    }
}

fn slack_signed(secret: String, body: &[u8]) -> Signed {
    let header = slack::sign(&secret, NOW, body);
    Signed {
        signature: hex::decode(&header["v0=".len()..]).unwrap(),
        verifier: registered("slack", secret),
        headers: Box::new(|sig| {
            headers([
                ("X-Slack-Signature", format!("v0={}", hex::encode(sig))),
                ("X-Slack-Request-Timestamp", NOW.to_string()),
                ("Content-Type", "application/json".into()),
            ])
        }),
    }
}

fn standard_headers(entry: &'static str) -> HeadersFor {
    Box::new(move |sig| {
        headers([
            ("webhook-id", ID.into()),
            ("webhook-timestamp", NOW.to_string()),
            ("webhook-signature", format!("{entry},{}", b64(sig))),
        ])
    })
}

fn standard_v1_signed(key: Vec<u8>, body: &[u8]) -> Signed {
    let header = standard::sign_v1(&key, ID, NOW, body);
    Signed {
        signature: unb64(&header["v1,".len()..]),
        verifier: registered("standard", format!("whsec_{}", b64(&key))),
        headers: standard_headers("v1"),
    }
}

/// A named Standard Webhooks preset in its own header family, keyed the way
/// its dashboard shows the secret: `clerk` (`svix-*`, `whsec_` base64) or
/// `polar` (`webhook-*`, the secret text itself).
fn preset_signed(
    name: &str,
    prefix: &'static str,
    key: Vec<u8>,
    secret: String,
    body: &[u8],
) -> Signed {
    let header = standard::sign_v1(&key, ID, NOW, body);
    Signed {
        signature: unb64(&header["v1,".len()..]),
        verifier: registered(name, secret),
        headers: Box::new(move |sig| {
            headers([
                (&*format!("{prefix}-id"), ID.into()),
                (&*format!("{prefix}-timestamp"), NOW.to_string()),
                (&*format!("{prefix}-signature"), format!("v1,{}", b64(sig))),
            ])
        }),
    }
}

/// CircleCI's comma-separated versioned list, with an entry of another
/// version before the `v1=` one.
fn circleci_signed(secret: String, body: &[u8]) -> Signed {
    let header = circleci::sign(&secret, body);
    Signed {
        signature: hex::decode(&header["v1=".len()..]).unwrap(),
        verifier: registered("circleci", secret),
        headers: Box::new(|sig| {
            headers([(
                "circleci-signature",
                format!("v2=00ff,v1={}", hex::encode(sig)),
            )])
        }),
    }
}

fn standard_v1a_signed(seed: [u8; 32], body: &[u8]) -> Signed {
    let key = ed25519_dalek::SigningKey::from_bytes(&seed);
    let header = standard::sign_v1a(&key, ID, NOW, body);
    Signed {
        signature: unb64(&header["v1a,".len()..]),
        verifier: registered(
            "standard",
            format!("whpk_{}", b64(key.verifying_key().as_bytes())),
        ),
        headers: standard_headers("v1a"),
    }
}

fn lab_signed(secret: String, body: &[u8]) -> Signed {
    Signed {
        signature: hex::decode(lab::sign(&secret, NOW, body)).unwrap(),
        verifier: registered("lab", secret),
        headers: Box::new(|sig| {
            headers([
                ("X-Signature", hex::encode(sig)),
                ("X-Timestamp", NOW.to_string()),
            ])
        }),
    }
}

fn stripe_signed(secret: String, body: &[u8]) -> Signed {
    // Stripe keys the HMAC with the whole `whsec_…` string.
    let secret = format!("whsec_{secret}");
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{NOW}.").as_bytes());
    mac.update(body);
    Signed {
        signature: mac.finalize().into_bytes().to_vec(),
        verifier: registered("stripe", secret),
        headers: Box::new(|sig| {
            headers([(
                "Stripe-Signature",
                format!("t={NOW},v1={}", hex::encode(sig)),
            )])
        }),
    }
}

/// `sha256=<hex>` over `"{timestamp}.{body}"`, id in the body.
fn generic_hex_signed(secret: String, body: &[u8]) -> Signed {
    let adapter = GenericHmac::new(GenericHmacSettings::example()).unwrap();
    let header = adapter.sign(&secret, &NOW.to_string(), "", body);
    Signed {
        signature: hex::decode(&header["sha256=".len()..]).unwrap(),
        verifier: verifier(Box::new(adapter), secret),
        headers: Box::new(|sig| {
            headers([
                ("X-Signature", format!("sha256={}", hex::encode(sig))),
                ("X-Timestamp", NOW.to_string()),
            ])
        }),
    }
}

/// Bare base64 HMAC-SHA1 over `"{id}:{body}"`, id in a header.
fn generic_base64_signed(secret: String, body: &[u8]) -> Signed {
    let settings = GenericHmacSettings {
        signature_prefix: None,
        signed_content: "{id}:{body}".into(),
        algorithm: HmacAlgorithm::Sha1,
        encoding: SignatureEncoding::Base64,
        timestamp_header: None,
        id_header: Some("X-Id".into()),
        id_pointer: None,
        type_pointer: None,
        ..GenericHmacSettings::example()
    };
    let adapter = GenericHmac::new(settings).unwrap();
    let header = adapter.sign(&secret, "", ID, body);
    Signed {
        signature: unb64(&header),
        verifier: verifier(Box::new(adapter), secret),
        headers: Box::new(|sig| headers([("X-Signature", b64(sig)), ("X-Id", ID.into())])),
    }
}

/// A secret string as an operator would configure it: printable, no spaces.
fn secret() -> impl Strategy<Value = String> {
    "[!-~]{1,48}"
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..512)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn github(secret in secret(), body in body(), at: Index, flip in 1u8..) {
        check(github_signed(secret, &body), &body, at, flip)?;
    }

    #[test]
    fn slack(secret in secret(), body in body(), at: Index, flip in 1u8..) {
        check(slack_signed(secret, &body), &body, at, flip)?;
    }

    #[test]
    fn standard_v1(
        key in proptest::collection::vec(any::<u8>(), 1..64),
        body in body(),
        at: Index,
        flip in 1u8..,
    ) {
        check(standard_v1_signed(key, &body), &body, at, flip)?;
    }

    #[test]
    fn generic_hmac_hex(secret in secret(), body in body(), at: Index, flip in 1u8..) {
        check(generic_hex_signed(secret, &body), &body, at, flip)?;
    }

    #[test]
    fn generic_hmac_base64(secret in secret(), body in body(), at: Index, flip in 1u8..) {
        check(generic_base64_signed(secret, &body), &body, at, flip)?;
    }

    #[test]
    fn lab(secret in secret(), body in body(), at: Index, flip in 1u8..) {
        check(lab_signed(secret, &body), &body, at, flip)?;
    }

    #[test]
    fn stripe(secret in secret(), body in body(), at: Index, flip in 1u8..) {
        check(stripe_signed(secret, &body), &body, at, flip)?;
    }

    #[test]
    fn clerk_svix_family(
        key in proptest::collection::vec(any::<u8>(), 1..64),
        body in body(),
        at: Index,
        flip in 1u8..,
    ) {
        let secret = format!("whsec_{}", b64(&key));
        check(preset_signed("clerk", "svix", key, secret, &body), &body, at, flip)?;
    }

    #[test]
    fn polar_text_secret(secret in secret(), body in body(), at: Index, flip in 1u8..) {
        let key = secret.as_bytes().to_vec();
        check(preset_signed("polar", "webhook", key, secret, &body), &body, at, flip)?;
    }

    #[test]
    fn circleci_versioned_list(secret in secret(), body in body(), at: Index, flip in 1u8..) {
        check(circleci_signed(secret, &body), &body, at, flip)?;
    }
}

proptest! {
    #![proptest_config(ed25519_config())]

    #[test]
    fn standard_v1a(seed: [u8; 32], body in body(), at: Index, flip in 1u8..) {
        check(standard_v1a_signed(seed, &body), &body, at, flip)?;
    }
}
