//! TLS on the public listener (`[server.tls]`) through the real binary: a
//! CA made at test time, a server certificate for 127.0.0.1, clients that
//! trust only the CA they are given. Covers a signed request over TLS,
//! plain HTTP refused, the handshake deadline, the SIGHUP reload (new
//! certificate for new connections, open connections kept, a broken file
//! keeps the old pair) and start-up refusals naming the field.

use crate::support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use support::*;
use tokio::io::AsyncReadExt;

const TLS_SECTION: &str = "[server.tls]\ncert_file = \"cert.pem\"\nkey_file = \"key.pem\"\n";

/// Writes `pki`'s server certificate and key where `TLS_SECTION` points,
/// each by rename so the server never reads a half-written file.
fn install(dir: &Path, pki: &TestPki) {
    replace(dir, "key.pem", &pki.key_pem);
    replace(dir, "cert.pem", &pki.cert_pem);
}

fn replace(dir: &Path, name: &str, contents: &str) {
    let staged = dir.join(format!("{name}.new"));
    std::fs::write(&staged, contents).unwrap();
    std::fs::rename(&staged, dir.join(name)).unwrap();
}

fn start_tls(dir: &Path, pki: &TestPki, extra: &str) -> Server {
    install(dir, pki);
    Server::start(
        dir,
        &config(&dir.join("inbox.db"), &format!("{TLS_SECTION}{extra}")),
    )
}

/// One TLS connection to the server, trusting only `ca_pem`, offering h2
/// and http/1.1 through ALPN.
struct TlsConnection {
    sender: SendRequest<Full<Bytes>>,
    /// The leaf certificate the server presented.
    presented: CertificateDer<'static>,
    /// The ALPN protocol agreed on.
    alpn: Option<Vec<u8>>,
}

async fn connect(server: &Server, ca_pem: &str) -> Result<TlsConnection, std::io::Error> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut client_config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    client_config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(client_config));
    let tcp = tokio::net::TcpStream::connect(server.addr).await?;
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let tls = tokio::time::timeout(Duration::from_secs(10), connector.connect(name, tcp))
        .await
        .expect("the handshake ended in time")?;
    let (_, session) = tls.get_ref();
    let presented = session.peer_certificates().unwrap()[0].clone().into_owned();
    let alpn = session.alpn_protocol().map(<[u8]>::to_vec);
    let (sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
            .await
            .map_err(std::io::Error::other)?;
    tokio::spawn(connection);
    Ok(TlsConnection {
        sender,
        presented,
        alpn,
    })
}

impl TlsConnection {
    /// POSTs a signed `lab` event on this connection (kept alive); its status.
    async fn post_event(&mut self, event_id: &str) -> u16 {
        let signed = lab_event(event_id);
        let mut request = hyper::Request::post("/hooks/lab").header("host", "127.0.0.1");
        for (name, value) in &signed.headers {
            request = request.header(name, value);
        }
        let response = self
            .sender
            .send_request(request.body(Full::new(signed.body)).unwrap())
            .await
            .expect("an answer on the open connection");
        let status = response.status().as_u16();
        response.into_body().collect().await.unwrap();
        status
    }
}

fn der(pem: &str) -> CertificateDer<'static> {
    CertificateDer::from_pem_slice(pem.as_bytes()).unwrap()
}

#[tokio::test]
async fn a_signed_request_over_tls_is_accepted_and_plain_http_is_not() {
    let pki = TestPki::new(&["127.0.0.1"]);
    let dir = tempfile::tempdir().unwrap();
    let server = start_tls(dir.path(), &pki, "");

    let mut tls = connect(&server, &pki.ca_pem).await.expect("TLS connection");
    assert_eq!(tls.presented, der(&pki.cert_pem));
    assert_eq!(
        tls.alpn.as_deref(),
        Some(&b"http/1.1"[..]),
        "HTTP/1.1 only, even when the client offers h2"
    );
    assert_eq!(tls.post_event("evt_tls_in").await, 200);
    let rows = inbox_rows(&dir.path().join("inbox.db"));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].2, "evt_tls_in");

    let plain = send(
        &client(),
        "POST",
        &server.url("/hooks/lab"),
        &lab_event("evt_plain"),
    )
    .await;
    assert!(plain.is_err(), "plain HTTP got an answer: {plain:?}");
    assert_eq!(inbox_rows(&dir.path().join("inbox.db")).len(), 1);
}

#[tokio::test]
async fn a_stalled_handshake_is_closed_at_its_deadline() {
    let pki = TestPki::new(&["127.0.0.1"]);
    let dir = tempfile::tempdir().unwrap();
    // HTTP's header timeout starts only after the handshake: nothing but
    // the handshake deadline can close this connection.
    let server = start_tls(dir.path(), &pki, "handshake_timeout = \"300ms\"\n");
    let mut silent = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let mut received = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), silent.read_to_end(&mut received))
        .await
        .expect("the server closed the connection that never said hello")
        .expect("read");
    assert!(received.is_empty(), "{received:?}");
}

#[tokio::test]
async fn sighup_gives_new_connections_the_new_certificate_and_keeps_open_ones() {
    let first = TestPki::new(&["127.0.0.1"]);
    let second = TestPki::new(&["127.0.0.1"]);
    let dir = tempfile::tempdir().unwrap();
    let server = start_tls(dir.path(), &first, "");
    let mut open = connect(&server, &first.ca_pem)
        .await
        .expect("TLS connection");
    assert_eq!(open.post_event("evt_before").await, 200);

    install(dir.path(), &second);
    sighup(&server);
    logged(&server, "TLS certificate reloaded.", 1).await;

    let mut fresh = connect(&server, &second.ca_pem)
        .await
        .expect("a new connection under the new CA");
    assert_eq!(fresh.presented, der(&second.cert_pem));
    assert_eq!(fresh.post_event("evt_after").await, 200);
    let refused = connect(&server, &first.ca_pem).await;
    assert!(
        refused.is_err(),
        "a new connection still got the old certificate"
    );
    // The connection opened before the reload keeps working.
    assert_eq!(open.post_event("evt_on_old_connection").await, 200);
    assert_eq!(inbox_rows(&dir.path().join("inbox.db")).len(), 3);
}

#[tokio::test]
async fn a_broken_file_on_reload_keeps_the_current_certificate() {
    let current = TestPki::new(&["127.0.0.1"]);
    let other = TestPki::new(&["127.0.0.1"]);
    let dir = tempfile::tempdir().unwrap();
    let server = start_tls(dir.path(), &current, "");

    // Not PEM at all.
    replace(dir.path(), "cert.pem", "renewal in progress\n");
    sighup(&server);
    logged(&server, "TLS certificate reload failed", 1).await;
    assert!(server.logs().contains("server.tls.cert_file"));
    let mut after_garbage = connect(&server, &current.ca_pem)
        .await
        .expect("the current certificate is still presented");
    assert_eq!(after_garbage.presented, der(&current.cert_pem));
    assert_eq!(after_garbage.post_event("evt_1").await, 200);

    // A certificate whose key is not the key file's: half of a renewal.
    replace(dir.path(), "cert.pem", &other.cert_pem);
    sighup(&server);
    logged(&server, "TLS certificate reload failed", 2).await;
    assert!(server.logs().contains("server.tls.key_file"));
    let mut after_mismatch = connect(&server, &current.ca_pem)
        .await
        .expect("the current certificate is still presented");
    assert_eq!(after_mismatch.presented, der(&current.cert_pem));
    assert_eq!(after_mismatch.post_event("evt_2").await, 200);
    assert!(!server.logs().contains("PRIVATE KEY"));
}

#[test]
fn unusable_certificate_files_stop_start_up_naming_the_field() {
    let pki = TestPki::new(&["127.0.0.1"]);
    let other = TestPki::new(&["127.0.0.1"]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    std::fs::write(dir.path().join("cert.pem"), &pki.cert_pem).unwrap();
    std::fs::write(dir.path().join("key.pem"), &pki.key_pem).unwrap();
    std::fs::write(dir.path().join("other-key.pem"), &other.key_pem).unwrap();
    std::fs::write(dir.path().join("garbage.pem"), "not a certificate\n").unwrap();
    let section = |cert: &str, key: &str| {
        format!("[server.tls]\ncert_file = \"{cert}\"\nkey_file = \"{key}\"\n")
    };
    let cases = [
        (section("missing.pem", "key.pem"), "server.tls.cert_file"),
        (section("cert.pem", "missing.pem"), "server.tls.key_file"),
        (section("garbage.pem", "key.pem"), "server.tls.cert_file"),
        (section("cert.pem", "garbage.pem"), "server.tls.key_file"),
        (section("cert.pem", "other-key.pem"), "server.tls.key_file"),
    ];
    for (tls, field) in cases {
        let path = dir.path().join("refused.toml");
        std::fs::write(&path, config(&db, &tls)).unwrap();
        let (code, stderr) = serve_refused(&path, &[]);
        assert_eq!(code, Some(2), "{tls}: {stderr}");
        assert!(
            stderr.contains(&format!("{field}: ")),
            "expected {field} for {tls}: {stderr}"
        );
        assert!(!stderr.contains("PRIVATE KEY"), "{stderr}");
    }
    assert!(
        !db.exists(),
        "refused before the database was created or opened"
    );
}
