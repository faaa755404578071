//! A program that embeds hookinbox through its public API only: a
//! `Service` on a listener it bound itself, stopped by a future of its own,
//! and typed start-up errors it can match on.

use crate::support;

use std::time::Duration;

use hookinbox::config::ConfigError;
use hookinbox::{Error, Service};
use support::*;

#[tokio::test]
async fn a_service_on_a_bound_listener_accepts_a_signed_event_and_stops_on_its_future() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let config_path = dir.path().join("hookinbox.toml");
    std::fs::write(&config_path, config(&db, "")).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let service = tokio::spawn(
        Service::from_config_file(&config_path)
            .unwrap()
            .listener(listener)
            .run_until(async {
                let _ = stopped.await;
            }),
    );

    let answer = post(
        &client(),
        &format!("http://{addr}/hooks/lab"),
        &lab_event("embedded-1"),
    )
    .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(answer.json()["duplicate"], false);
    let id = answer.json()["id"].as_str().unwrap().to_owned();
    let stored: Vec<String> = inbox_rows(&db).into_iter().map(|(id, _, _)| id).collect();
    assert_eq!(stored, [id], "acknowledged means stored");

    stop.send(()).unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(10), service).await;
    assert!(
        matches!(ended, Ok(Ok(Ok(())))),
        "the service did not stop cleanly on its future: {ended:?}"
    );
    // Stopped means the port is closed, not merely idle.
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[test]
fn a_configuration_that_cannot_be_read_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    let error = Service::from_config_file(dir.path().join("nope.toml")).unwrap_err();
    assert!(
        matches!(&error, Error::Config(ConfigError::Read { path, .. }) if path.ends_with("nope.toml")),
        "{error:?}"
    );
}

#[tokio::test]
async fn an_address_in_use_is_a_listen_error_with_its_cause() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let config_path = dir.path().join("hookinbox.toml");
    std::fs::write(&config_path, config(&db, "")).unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut settings = hookinbox::config::load(&config_path).unwrap();
    settings.server.listen = taken.local_addr().unwrap();

    let error = Service::from_settings(settings)
        .run_until(std::future::pending())
        .await
        .unwrap_err();
    match &error {
        Error::Listen { address, source } => {
            assert_eq!(*address, taken.local_addr().unwrap());
            assert_eq!(source.kind(), std::io::ErrorKind::AddrInUse);
        }
        other => panic!("not a listen error: {other:?}"),
    }
    // The message says what failed; the cause is its source, once.
    assert_eq!(
        error.to_string(),
        format!("cannot listen on {}", taken.local_addr().unwrap())
    );
}
