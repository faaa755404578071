//! Keys fetched from the provider, through the real binary
//! (docs/architecture.md §3): PayPal and AWS SNS requests verified with the
//! certificate a local HTTPS key server serves under a test CA, Plaid's
//! with the key its key API answers for the JWT's `kid`, all reached
//! through the test override (`HOOKINBOX_TEST_KEY_FETCH_CA`,
//! `HOOKINBOX_TEST_KEY_FETCH_CONNECT`) while the URLs, host names, TLS name
//! checks and the allowlist stay as in production. A request naming a host
//! off the allowlist is refused without a fetch; a key server that hangs
//! gets the request a 503 within the bounded wait; a cached key is used
//! without a second fetch.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;

use crate::support;

use support::*;

const WEBHOOK_ID: &str = "8PT597110X687430LKGECATA";
const PAYPAL_HOST: &str = "api.sandbox.paypal.com";
const SNS_HOST: &str = "sns.us-east-1.amazonaws.com";
const PAYPAL_CERT_PATH: &str = "/v1/notifications/certs/CERT-360caa42-fca2a594-test0001";
const PAYPAL_HANGING_PATH: &str = "/v1/notifications/certs/CERT-hangs";
const PAYPAL_WRONG_NAME_PATH: &str = "/v1/notifications/certs/CERT-sns-name";
const SNS_CERT_PATH: &str = "/SimpleNotificationService-0123456789abcdef.pem";
const PLAID_HOST: &str = "sandbox.plaid.com";
const PLAID_KEY_PATH: &str = "/webhook_verification_key/get";
const PLAID_KID: &str = "6c5516e1-92dc-479e-a8ff-5a51992e0001";
const PLAID_RETIRED_KID: &str = "6c5516e1-92dc-479e-a8ff-5a51992e0002";
const PLAID_CLIENT_ID: &str = "testclient1";
const PLAID_SECRET: &str = "plaid-test-secret-value";

fn fixture(path: &str) -> Vec<u8> {
    let base = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../hookinbox-verify/tests/fixtures/"
    );
    std::fs::read(format!("{base}{path}")).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A key server: the test certificates at their paths, one path that never
/// answers, every request counted by path.
struct KeyServer {
    requests: Arc<Mutex<HashMap<String, usize>>>,
    _tls: TlsProxy,
    /// What the service must trust: the key server's TLS CA and the CA of
    /// the signing certificates.
    ca_file: tempfile::NamedTempFile,
    connect: String,
}

impl KeyServer {
    async fn start() -> KeyServer {
        let requests: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let served: Arc<HashMap<&'static str, Vec<u8>>> = Arc::new(HashMap::from([
            (PAYPAL_CERT_PATH, fixture("key_fetch/pki/paypal.pem")),
            (PAYPAL_WRONG_NAME_PATH, fixture("key_fetch/pki/aws_sns.pem")),
            (SNS_CERT_PATH, fixture("key_fetch/pki/aws_sns.pem")),
        ]));
        let jwk: serde_json::Value =
            serde_json::from_slice(&fixture("key_fetch/pki/plaid_jwk.json")).unwrap();
        let app = axum::Router::new().fallback({
            let requests = Arc::clone(&requests);
            move |request: axum::extract::Request| {
                let requests = Arc::clone(&requests);
                let served = Arc::clone(&served);
                let jwk = jwk.clone();
                async move {
                    let path = request.uri().path().to_owned();
                    *requests.lock().unwrap().entry(path.clone()).or_default() += 1;
                    if path == PAYPAL_HANGING_PATH {
                        std::future::pending::<()>().await;
                    }
                    if path == PLAID_KEY_PATH && request.method() == axum::http::Method::POST {
                        let body = axum::body::to_bytes(request.into_body(), 1 << 16)
                            .await
                            .unwrap();
                        return plaid_key_answer(&body, jwk);
                    }
                    match served.get(path.as_str()) {
                        Some(pem) => (axum::http::StatusCode::OK, pem.clone()),
                        None => (axum::http::StatusCode::NOT_FOUND, Vec::new()),
                    }
                }
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let plain = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let pki = TestPki::new(&[PAYPAL_HOST, SNS_HOST, PLAID_HOST]);
        let tls = TlsProxy::start(&pki, plain.to_string()).await;
        let ca_file = tempfile::NamedTempFile::new().unwrap();
        let mut roots = pki.ca_pem.clone().into_bytes();
        roots.extend_from_slice(&fixture("key_fetch/pki/ca.pem"));
        std::fs::write(ca_file.path(), roots).unwrap();
        KeyServer {
            requests,
            connect: tls.addr.to_string(),
            _tls: tls,
            ca_file,
        }
    }

    fn requests(&self, path: &str) -> usize {
        self.requests
            .lock()
            .unwrap()
            .get(path)
            .copied()
            .unwrap_or(0)
    }

    fn total_requests(&self) -> usize {
        self.requests.lock().unwrap().values().sum()
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "HOOKINBOX_TEST_KEY_FETCH_CA",
                self.ca_file.path().display().to_string(),
            ),
            ("HOOKINBOX_TEST_KEY_FETCH_CONNECT", self.connect.clone()),
            ("PLAID_TEST_SECRET", PLAID_SECRET.to_owned()),
        ]
    }
}

fn start_service(dir: &std::path::Path, keys: &KeyServer) -> Server {
    let db = dir.join("inbox.db");
    let extra = format!(
        r#"
[[endpoint]]
id = "paypal"
provider = "paypal"
webhook_id = "{WEBHOOK_ID}"

[[endpoint]]
id = "sns"
provider = "aws_sns"

[[endpoint]]
id = "plaid"
provider = "plaid"
[endpoint.plaid]
environment = "sandbox"
client_id = "{PLAID_CLIENT_ID}"
secret_env = "PLAID_TEST_SECRET"
"#
    );
    let config_path = dir.join("hookinbox.toml");
    std::fs::write(&config_path, config(&db, &extra)).unwrap();
    let env = keys.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Server::start_full(dir, &config_path, &[], &env)
}

/// RSA PKCS#1 v1.5 with the test-only key the test certificates carry.
fn rsa_sign(algorithm: &'static dyn ring::signature::RsaEncoding, message: &[u8]) -> String {
    let pair = ring::signature::RsaKeyPair::from_pkcs8(&fixture("keys/rsa2048_test_only.pk8"))
        .expect("the test key");
    let mut signature = vec![0; pair.public().modulus_len()];
    pair.sign(
        algorithm,
        &ring::rand::SystemRandom::new(),
        message,
        &mut signature,
    )
    .unwrap();
    base64::engine::general_purpose::STANDARD.encode(signature)
}

fn paypal(event_id: &str, cert_url: &str) -> Signed {
    let body = format!(
        r#"{{"id":"{event_id}","create_time":"2026-01-01T00:00:00.000Z","event_type":"PAYMENT.CAPTURE.COMPLETED","resource":{{"id":"42311647XV020574X"}}}}"#
    );
    let transmission_id = format!("tx-{event_id}");
    let time = "2026-01-01T00:00:01Z";
    let crc = crc32(body.as_bytes());
    let signature = rsa_sign(
        &ring::signature::RSA_PKCS1_SHA256,
        format!("{transmission_id}|{time}|{WEBHOOK_ID}|{crc}").as_bytes(),
    );
    Signed {
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("paypal-transmission-id".into(), transmission_id),
            ("paypal-transmission-time".into(), time.into()),
            ("paypal-transmission-sig".into(), signature),
            ("paypal-cert-url".into(), cert_url.into()),
            ("paypal-auth-algo".into(), "SHA256withRSA".into()),
        ],
        body: body.into(),
    }
}

/// CRC-32 (IEEE), as PayPal signs it: the test's own, bit by bit, so the
/// service's crate is not what checks itself.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for byte in bytes {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn sns(message_type: &str, message_id: &str, cert_url: &str) -> Signed {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let timestamp = time::OffsetDateTime::from_unix_timestamp(now)
        .unwrap()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let topic = "arn:aws:sns:us-east-1:123456789012:MyTopic";
    let mut fields = serde_json::json!({
        "Type": message_type,
        "MessageId": message_id,
        "TopicArn": topic,
        "Message": "Hello from SNS",
        "Timestamp": timestamp,
        // ring signs no SHA-1; version 1 is in the verify crate's vectors.
        "SignatureVersion": "2",
        "SigningCertURL": cert_url,
    });
    let signed_names: &[&str] = if message_type == "Notification" {
        &["Message", "MessageId", "Timestamp", "TopicArn", "Type"]
    } else {
        fields["Token"] = "2336412f37fb687f5d51".into();
        fields["SubscribeURL"] = format!(
            "https://{SNS_HOST}/?Action=ConfirmSubscription&TopicArn={topic}&Token=2336412f37fb687f5d51"
        )
        .into();
        &[
            "Message",
            "MessageId",
            "SubscribeURL",
            "Timestamp",
            "Token",
            "TopicArn",
            "Type",
        ]
    };
    let mut to_sign = String::new();
    for name in signed_names {
        to_sign.push_str(&format!("{name}\n{}\n", fields[*name].as_str().unwrap()));
    }
    fields["Signature"] = rsa_sign(&ring::signature::RSA_PKCS1_SHA256, to_sign.as_bytes()).into();
    Signed {
        headers: vec![
            ("content-type".into(), "text/plain; charset=UTF-8".into()),
            ("x-amz-sns-message-type".into(), message_type.into()),
        ],
        body: serde_json::to_vec_pretty(&fields).unwrap().into(),
    }
}

/// What Plaid's key API answers: the key for the known `kid` when the
/// credentials are the endpoint's, retired for the other known one, 400
/// otherwise.
fn plaid_key_answer(body: &[u8], mut jwk: serde_json::Value) -> (axum::http::StatusCode, Vec<u8>) {
    let asked: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    if asked["client_id"] != PLAID_CLIENT_ID || asked["secret"] != PLAID_SECRET {
        return (axum::http::StatusCode::BAD_REQUEST, b"{}".to_vec());
    }
    if asked["key_id"] == PLAID_RETIRED_KID {
        jwk["key"]["kid"] = PLAID_RETIRED_KID.into();
        jwk["key"]["expired_at"] = 1_700_000_000.into();
    } else if asked["key_id"] != PLAID_KID {
        return (axum::http::StatusCode::BAD_REQUEST, b"{}".to_vec());
    }
    (axum::http::StatusCode::OK, jwk.to_string().into_bytes())
}

/// A Plaid webhook: its body and `Plaid-Verification`, an ES256 JWT over
/// the body's SHA-256 signed now with the test-only key.
fn plaid(body: &str, kid: &str) -> Signed {
    use ring::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
    let pem = String::from_utf8(fixture("key_fetch/pki/plaid_test_only.pem")).unwrap();
    let der: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(der)
        .unwrap();
    let rng = ring::rand::SystemRandom::new();
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng).unwrap();
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let digest = ring::digest::digest(&ring::digest::SHA256, body.as_bytes());
    let header = b64(format!(r#"{{"alg":"ES256","kid":"{kid}","typ":"JWT"}}"#).as_bytes());
    let payload = b64(format!(
        r#"{{"iat":{now},"request_body_sha256":"{}"}}"#,
        hex::encode(digest.as_ref())
    )
    .as_bytes());
    let signed = format!("{header}.{payload}");
    let signature = pair.sign(&rng, signed.as_bytes()).unwrap();
    Signed {
        headers: vec![
            ("content-type".into(), "application/json".into()),
            (
                "plaid-verification".into(),
                format!("{signed}.{}", b64(signature.as_ref())),
            ),
        ],
        body: body.to_owned().into(),
    }
}

fn stored_ids(db: &std::path::Path) -> Vec<String> {
    inbox_rows(db).into_iter().map(|(_, _, id)| id).collect()
}

#[tokio::test]
async fn paypal_and_sns_verify_with_fetched_certificates_fetched_once() {
    let keys = KeyServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let server = start_service(dir.path(), &keys);
    let db = dir.path().join("inbox.db");
    let client = client();
    let paypal_url = server.url("/hooks/paypal");
    let cert = format!("https://{PAYPAL_HOST}{PAYPAL_CERT_PATH}");

    let first = post(&client, &paypal_url, &paypal("WH-0001", &cert)).await;
    assert_eq!(first.status, 200, "{:?}", first.body);
    assert_eq!(first.json()["duplicate"], false);
    let second = post(&client, &paypal_url, &paypal("WH-0002", &cert)).await;
    assert_eq!(second.status, 200, "{:?}", second.body);
    let retry = post(&client, &paypal_url, &paypal("WH-0001", &cert)).await;
    assert_eq!(retry.json()["duplicate"], true);
    assert_eq!(
        keys.requests(PAYPAL_CERT_PATH),
        1,
        "three requests, one fetch: the key is cached"
    );

    // A tampered body: the same key, refused as a bad signature.
    let mut tampered = paypal("WH-0003", &cert);
    let mut body = tampered.body.to_vec();
    let at = body.iter().position(|b| *b == b'P').unwrap();
    body[at] = b'Q';
    tampered.body = body.into();
    let refused = post(&client, &paypal_url, &tampered).await;
    assert_eq!((refused.status, refused.error()), (401, "signature".into()));

    // SNS: a notification and a subscription confirmation, both stored;
    // the confirmation's SubscribeURL is not fetched by the service.
    let sns_url = server.url("/hooks/sns");
    let sns_cert = format!("https://{SNS_HOST}{SNS_CERT_PATH}");
    let note = post(
        &client,
        &sns_url,
        &sns("Notification", "msg-0001", &sns_cert),
    )
    .await;
    assert_eq!(note.status, 200, "{:?}", note.body);
    let confirm = post(
        &client,
        &sns_url,
        &sns("SubscriptionConfirmation", "msg-0002", &sns_cert),
    )
    .await;
    assert_eq!(confirm.status, 200, "{:?}", confirm.body);
    assert_eq!(keys.requests(SNS_CERT_PATH), 1);
    assert_eq!(keys.requests("/"), 0, "the SubscribeURL is never visited");
    let mut ids = stored_ids(&db);
    ids.sort();
    assert_eq!(ids, ["WH-0001", "WH-0002", "msg-0001", "msg-0002"]);
    assert_eq!(keys.total_requests(), 2);
}

#[tokio::test]
async fn a_certificate_off_the_allowlist_is_refused_without_a_fetch() {
    let keys = KeyServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let server = start_service(dir.path(), &keys);
    let client = client();
    for cert in [
        // The test key server would serve it (every name connects there):
        // only the allowlist stops these.
        format!("https://evil.example{PAYPAL_CERT_PATH}"),
        format!("https://{PAYPAL_HOST}.evil.example{PAYPAL_CERT_PATH}"),
        format!("http://{PAYPAL_HOST}{PAYPAL_CERT_PATH}"),
        format!("https://{PAYPAL_HOST}/elsewhere.pem"),
        format!("https://{SNS_HOST}{SNS_CERT_PATH}"),
    ] {
        let answer = post(
            &client,
            &server.url("/hooks/paypal"),
            &paypal("WH-1", &cert),
        )
        .await;
        assert_eq!(
            (answer.status, answer.error()),
            (401, "signature".into()),
            "{cert}"
        );
    }
    for cert in [
        format!("https://{SNS_HOST}.evil.example{SNS_CERT_PATH}"),
        format!("https://sns.amazonaws.com{SNS_CERT_PATH}"),
        format!("https://{PAYPAL_HOST}{PAYPAL_CERT_PATH}"),
    ] {
        let answer = post(
            &client,
            &server.url("/hooks/sns"),
            &sns("Notification", "m-1", &cert),
        )
        .await;
        assert_eq!(
            (answer.status, answer.error()),
            (401, "signature".into()),
            "{cert}"
        );
    }
    assert_eq!(keys.total_requests(), 0, "nothing was fetched");
    assert!(inbox_rows(&dir.path().join("inbox.db")).is_empty());
}

#[tokio::test]
async fn a_key_that_cannot_be_had_is_a_503_within_the_bound() {
    let keys = KeyServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let server = start_service(dir.path(), &keys);
    let client = client();
    let url = server.url("/hooks/paypal");

    // The key server takes the request and never answers.
    let hanging = format!("https://{PAYPAL_HOST}{PAYPAL_HANGING_PATH}");
    let started = Instant::now();
    let answer = post(&client, &url, &paypal("WH-2", &hanging)).await;
    let took = started.elapsed();
    assert_eq!((answer.status, answer.error()), (503, "unavailable".into()));
    assert!(answer.headers.contains_key("retry-after"));
    // The bound is 2 s (`key_cache::REQUEST_WAIT`); the margin is for a loaded machine.
    assert!(took < Duration::from_secs(6), "answered after {took:?}");
    // A second request joins the fetch still under way: no second request
    // reaches the key server.
    let again = post(&client, &url, &paypal("WH-2", &hanging)).await;
    assert_eq!(again.status, 503);
    assert_eq!(keys.requests(PAYPAL_HANGING_PATH), 1);

    // A certificate PayPal's host serves but not for PayPal's name (SNS's):
    // not used, the request is answered 503 and nothing is stored.
    let wrong = format!("https://{PAYPAL_HOST}{PAYPAL_WRONG_NAME_PATH}");
    let answer = post(&client, &url, &paypal("WH-3", &wrong)).await;
    assert_eq!((answer.status, answer.error()), (503, "unavailable".into()));
    assert!(inbox_rows(&dir.path().join("inbox.db")).is_empty());
    // The failure is remembered for a while: a retry at once fetches nothing.
    let answer = post(&client, &url, &paypal("WH-3", &wrong)).await;
    assert_eq!(answer.status, 503);
    assert_eq!(keys.requests(PAYPAL_WRONG_NAME_PATH), 1);
}

#[tokio::test]
async fn plaid_keys_are_asked_of_plaid_with_the_endpoints_credentials_once() {
    let keys = KeyServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let server = start_service(dir.path(), &keys);
    let client = client();
    let url = server.url("/hooks/plaid");
    let body = r#"{"environment":"sandbox","item_id":"wz666MBjYWTp2PDzzggYhM6oWWmBb","new_transactions":3,"webhook_code":"DEFAULT_UPDATE","webhook_type":"TRANSACTIONS"}"#;
    let first = post(&client, &url, &plaid(body, PLAID_KID)).await;
    assert_eq!(first.status, 200, "{:?}", first.body);
    let other = body.replace("DEFAULT_UPDATE", "INITIAL_UPDATE");
    let second = post(&client, &url, &plaid(&other, PLAID_KID)).await;
    assert_eq!(second.status, 200, "{:?}", second.body);
    assert_eq!(keys.requests(PLAID_KEY_PATH), 1, "the key is cached");
    assert_eq!(inbox_rows(&dir.path().join("inbox.db")).len(), 2);

    // The JWT of one body on another.
    let mut swapped = plaid(body, PLAID_KID);
    swapped.body = other.clone().into();
    let refused = post(&client, &url, &swapped).await;
    assert_eq!((refused.status, refused.error()), (401, "signature".into()));
    // A key Plaid has retired verifies nothing.
    let retired = post(&client, &url, &plaid(body, PLAID_RETIRED_KID)).await;
    assert_eq!((retired.status, retired.error()), (401, "signature".into()));
    // A key id that is not a plain identifier is never asked for.
    let odd = post(&client, &url, &plaid(body, "../../admin")).await;
    assert_eq!((odd.status, odd.error()), (401, "signature".into()));
    assert_eq!(keys.requests(PLAID_KEY_PATH), 2);
    assert_eq!(inbox_rows(&dir.path().join("inbox.db")).len(), 2);
}
