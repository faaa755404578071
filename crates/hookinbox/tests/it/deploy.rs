//! The deployment files: `deploy/hookinbox.toml` starts the real binary and
//! accepts a signed event with its secrets taken from the environment, and the
//! files that name the same path or port (`deploy/`, README) agree. Their syntax is checked by `.ci/check-deploy` (systemd-analyze
//! verify for the unit, hadolint for the Dockerfile).

use crate::support;

use std::path::Path;

use bytes::Bytes;
use support::*;

const STRIPE_SECRET: &str = "whsec_deploy_test_0000000000000000";
const ADMIN_TOKEN: &str = "deploy-test-admin-token-0123456789";
/// 32 bytes, base64: the key `deploy/hookinbox.toml` reads from the environment.
const ENCRYPTION_KEY: &str = hookinbox_testing::ENCRYPTION_KEY;

/// Where the sample keeps its data: the unit's StateDirectory, the image's volume.
const STORAGE_URL_LINE: &str = r#"url = "sqlite:///var/lib/hookinbox/hookinbox.db""#;
const ADMIN_LISTEN_LINE: &str = r#"listen = "127.0.0.1:9090""#;
const CONFIG_PATH: &str = "/etc/hookinbox/hookinbox.toml";

fn repository_file(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `text` with `from` (which must occur exactly once) replaced by `to`.
fn replace_once(text: &str, from: &str, to: &str) -> String {
    assert_eq!(text.matches(from).count(), 1, "expected `{from}` once");
    text.replacen(from, to, 1)
}

/// The values of `key` in the unit's active lines, in order.
fn unit_values(unit: &str, key: &str) -> Vec<String> {
    unit.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split_once('='))
        .filter(|(name, _)| name.trim() == key)
        .map(|(_, value)| value.trim().to_owned())
        .collect()
}

fn get(token: Option<&str>) -> Signed {
    Signed {
        headers: token
            .map(|token| ("authorization".into(), format!("Bearer {token}")))
            .into_iter()
            .collect(),
        body: Bytes::new(),
    }
}

#[tokio::test]
async fn the_sample_config_starts_and_accepts_a_signed_event() {
    let dir = tempfile::tempdir().unwrap();
    // Only where the data lives and the admin port change: a temporary
    // directory, and port 0 so that parallel test runs cannot collide.
    // `Server` passes --listen 127.0.0.1:0 for the public port.
    let db = dir.path().join("hookinbox.db");
    let config = replace_once(
        &repository_file("deploy/hookinbox.toml"),
        STORAGE_URL_LINE,
        &format!("url = \"sqlite://{}\"", db.display()),
    );
    let config = replace_once(&config, ADMIN_LISTEN_LINE, r#"listen = "127.0.0.1:0""#);
    let config_path = dir.path().join("hookinbox.toml");
    std::fs::write(&config_path, config).unwrap();
    let server = Server::start_binary(
        Path::new(env!("CARGO_BIN_EXE_hookinbox")),
        dir.path(),
        &config_path,
        &[],
        &[
            ("STRIPE_WEBHOOK_SECRET", STRIPE_SECRET),
            ("HOOKINBOX_ADMIN_TOKEN", ADMIN_TOKEN),
            ("HOOKINBOX_ENCRYPTION_KEY", ENCRYPTION_KEY),
        ],
    );
    let client = client();

    let body = r#"{"id":"evt_deploy_1","object":"event","type":"invoice.paid","created":1700000000,"data":{"object":{"id":"in_1"}}}"#;
    let answer = post(
        &client,
        &server.url("/hooks/stripe"),
        &stripe_signed(STRIPE_SECRET, body, now()),
    )
    .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(answer.json()["accepted"], true);
    let rows = inbox_rows(&db);
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].1.as_str(), rows[0].2.as_str()),
        ("stripe", "evt_deploy_1")
    );

    let admin = server.admin_address().await;
    let url = |path: &str| format!("http://{admin}{path}");
    let health = send(&client, "GET", &url("/healthz"), &get(None))
        .await
        .unwrap();
    assert_eq!(health.status, 200, "the container's health check");
    let anonymous = send(&client, "GET", &url("/metrics"), &get(None))
        .await
        .unwrap();
    assert_eq!(anonymous.status, 401);
    let metrics = send(&client, "GET", &url("/metrics"), &get(Some(ADMIN_TOKEN)))
        .await
        .unwrap();
    assert_eq!(metrics.status, 200);
}

#[test]
fn the_unit_runs_the_installed_binary_on_the_sample_config() {
    let unit = repository_file("deploy/hookinbox.service");
    // `cargo install --path crates/hookinbox --locked --root /usr/local`.
    assert_eq!(
        unit_values(&unit, "ExecStart"),
        [format!(
            "/usr/local/bin/hookinbox serve --config {CONFIG_PATH}"
        )]
    );
    assert_eq!(unit_values(&unit, "StateDirectory"), ["hookinbox"]);
    assert_eq!(
        unit_values(&unit, "ExecReload"),
        ["/bin/kill -HUP $MAINPID"]
    );
    // The service sizes server.max_connections (10,000 + 1,024 for other
    // files) by the open-file limit this sets.
    let nofile: u64 = unit_values(&unit, "LimitNOFILE")[0].parse().unwrap();
    assert!(nofile >= 10_000 + 1_024 + 16, "LimitNOFILE={nofile}");
    for (key, value) in [
        ("DynamicUser", "yes"),
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("Restart", "on-failure"),
    ] {
        assert_eq!(unit_values(&unit, key), [value], "{key}");
    }
    let readme = repository_file("README.md");
    assert!(readme.contains("cargo install --path crates/hookinbox --locked"));
    assert!(readme.contains("deploy/hookinbox.service"));
}

#[test]
fn the_image_keeps_its_data_in_the_volume_and_checks_the_admin_port() {
    let dockerfile = repository_file("deploy/Dockerfile");
    let config = repository_file("deploy/hookinbox.toml");
    assert!(config.contains(STORAGE_URL_LINE));
    assert!(dockerfile.contains(r#"VOLUME ["/var/lib/hookinbox"]"#));
    assert!(dockerfile.contains(&format!("COPY deploy/hookinbox.toml {CONFIG_PATH}")));
    assert!(dockerfile.contains(&format!(r#"CMD ["serve", "--config", "{CONFIG_PATH}"]"#)));
    // The health check probes the sample's admin listener.
    assert!(config.contains(ADMIN_LISTEN_LINE));
    assert!(dockerfile.contains("/dev/tcp/127.0.0.1/9090"));
    assert!(dockerfile.contains("EXPOSE 8080"));
    assert!(config.contains(r#"listen = "0.0.0.0:8080""#));
}
