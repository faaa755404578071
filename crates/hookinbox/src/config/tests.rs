//! Each rule of the configuration, and the field its error names.

use std::path::Path;
use std::time::Duration;

use super::*;

fn parse_at(text: &str) -> Result<Settings, ConfigError> {
    parse(text, Path::new("/etc/hookinbox"))
}

/// One endpoint with one inline secret: everything else takes its default.
const MINIMAL: &str = r#"
[[endpoint]]
id = "stripe"
provider = "stripe"

[[endpoint.secret]]
version = "1"
value = "whsec_x"
"#;

/// `MINIMAL` with `table` (a `[section]` and its fields) in front.
fn with_section(table: &str) -> String {
    format!("{table}\n{MINIMAL}")
}

/// `MINIMAL` whose endpoint has a target made of `fields`.
fn with_target(fields: &str) -> String {
    format!("{MINIMAL}\n[[endpoint.target]]\n{fields}\n")
}

/// The message of a configuration that must be refused.
fn refusal(text: &str) -> String {
    match parse_at(text) {
        Ok(settings) => panic!("accepted: {settings:?}\n{text}"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn a_minimal_config_takes_the_defaults() {
    let settings = parse_at(MINIMAL).unwrap();
    assert_eq!(settings.server.listen.to_string(), "127.0.0.1:8080");
    assert_eq!(settings.server.header_read_timeout, Duration::from_secs(10));
    let Database::Sqlite { path } = &settings.storage.database else {
        panic!("not sqlite: {:?}", settings.storage.database);
    };
    assert_eq!(path, Path::new("/etc/hookinbox/hookinbox.db"));
    assert_eq!(settings.storage.commit_timeout, Duration::from_secs(2));
    // The store's own defaults, not a second copy of them.
    let store = hookinbox_store::SqliteOptions::new("x");
    assert_eq!(settings.storage.busy_timeout, store.busy_timeout);
    assert_eq!(settings.storage.queue_capacity.get(), store.queue_capacity);
    assert_eq!(
        settings.storage.max_batch_events.get(),
        store.max_batch_events
    );
    assert_eq!(settings.storage.commit_interval, store.commit_interval);
    assert_eq!(settings.delivery.lease, Duration::from_secs(30));
    assert_eq!(settings.delivery.poll_interval, Duration::from_millis(250));
    let endpoint = &settings.endpoints[0];
    assert_eq!(endpoint.provider, "stripe");
    assert_eq!(endpoint.max_body_bytes.get(), 1024 * 1024);
    assert_eq!(
        endpoint.content_types,
        ["application/json", "application/x-www-form-urlencoded"]
    );
    assert_eq!(
        endpoint.secrets[0].value,
        SecretSource::Inline("whsec_x".into())
    );
}

#[test]
fn durations_are_humantime_strings() {
    let settings = parse_at(&with_section(
        "[server]\nheader_read_timeout = \"1m 30s\"\nshutdown_grace = \"500ms\"\n\
         [delivery]\nlease = \"2m\"\npoll_interval = \"10ms\"\nrescue_interval = \"1h\"",
    ))
    .unwrap();
    assert_eq!(settings.server.header_read_timeout, Duration::from_secs(90));
    assert_eq!(settings.server.shutdown_grace, Duration::from_millis(500));
    assert_eq!(settings.delivery.lease, Duration::from_secs(120));
    assert_eq!(settings.delivery.rescue_interval, Duration::from_secs(3600));
    let target = parse_at(&with_target(
        "name = \"b\"\nkind = \"http\"\nurl = \"http://127.0.0.1:9/x\"\nsecret_env = \"S\"\n\
         timeout = \"750ms\"\nmax_age = \"3d\"\nretry_base = \"20ms\"\nretry_cap = \"2m\"",
    ))
    .unwrap()
    .endpoints[0]
        .targets[0]
        .clone();
    let TargetKind::Http(http) = &target.kind else {
        panic!("an http target: {target:?}");
    };
    assert_eq!(http.timeout, Duration::from_millis(750));
    assert_eq!(target.max_age, Duration::from_secs(3 * 86_400));
    assert_eq!(target.retry_cap, Duration::from_secs(120));
    // A number where a duration belongs is a parse error on its line.
    let number = refusal(&with_section("[storage]\ncommit_timeout = 2000"));
    assert!(number.contains("line 2"), "{number}");
    let words = refusal(&with_section("[storage]\ncommit_timeout = \"soon\""));
    assert!(words.contains("line 2"), "{words}");
}

#[test]
fn an_old_millisecond_field_says_what_replaced_it() {
    let old = refusal(&with_section("[delivery]\nlease_ms = 30000"));
    assert!(
        old.contains("line 2: `lease_ms` is now `lease`, a duration such as \"30s\""),
        "{old}"
    );
    let old = refusal(&with_target(
        "name = \"b\"\nkind = \"handler\"\ntimeout_ms = 5000",
    ));
    assert!(old.contains("`timeout_ms` is now `timeout`"), "{old}");
    let old = refusal(&MINIMAL.replace(
        "provider = \"stripe\"",
        "provider = \"stripe\"\ntolerance_seconds = 300",
    ));
    assert!(
        old.contains("`tolerance_seconds` is now `tolerance`"),
        "{old}"
    );
}

#[test]
fn unknown_fields_are_refused_with_the_expected_names() {
    let typo = refusal(&MINIMAL.replace(
        "provider = \"stripe\"",
        "provider = \"stripe\"\nprovidr = 1",
    ));
    assert!(typo.contains("providr"), "{typo}");
    assert!(typo.contains("expected one of"), "{typo}");
}

#[test]
fn parse_errors_do_not_echo_the_secret_line() {
    let error = refusal(&MINIMAL.replace("value = \"whsec_x\"", "value = \"whsec_leak"));
    assert!(!error.contains("whsec_leak"), "{error}");
    assert!(error.contains("line 8"), "{error}");
}

/// Every rule with the field it must name: the error starts with it.
#[test]
fn each_rule_names_its_field() {
    let target = |fields: &str| with_target(&format!("name = \"b\"\n{fields}"));
    let http = |fields: &str| {
        target(&format!(
            "kind = \"http\"\nurl = \"http://127.0.0.1:9/x\"\nsecret_env = \"S\"\n{fields}"
        ))
    };
    let endpoint = |fields: &str| {
        MINIMAL.replace(
            "provider = \"stripe\"",
            &format!("provider = \"stripe\"\n{fields}"),
        )
    };
    let generic = |fields: &str| {
        format!(
            "{}\n[endpoint.generic_hmac]\nsignature_header = \"X-Sig\"\nid_pointer = \"/id\"\n{fields}",
            MINIMAL.replace("provider = \"stripe\"", "provider = \"generic_hmac\"")
        )
    };
    let cases: Vec<(String, &str)> = vec![
        ("".into(), "endpoint: "),
        (
            with_section("[server]\nmax_connections = 0"),
            "server.max_connections: ",
        ),
        (
            with_section("[server]\nmax_headers = 0"),
            "server.max_headers: ",
        ),
        (
            with_section("[server]\nmax_inflight_body_bytes = 0"),
            "server.max_inflight_body_bytes: ",
        ),
        (
            with_section("[server]\nmax_inflight_body_bytes = 4294967296"),
            "server.max_inflight_body_bytes: ",
        ),
        (
            with_section("[server]\nmin_body_bytes_per_second = 0"),
            "server.min_body_bytes_per_second: ",
        ),
        (
            with_section("[server]\nlisten_backlog = 0"),
            "server.listen_backlog: ",
        ),
        (
            with_section("[server]\nmax_requests_per_connection = 0"),
            "server.max_requests_per_connection: ",
        ),
        (
            with_section("[server]\nheader_read_timeout = \"0s\""),
            "server.header_read_timeout: ",
        ),
        (
            with_section("[server]\nbody_read_timeout = \"0s\""),
            "server.body_read_timeout: ",
        ),
        (
            with_section("[server]\ntrusted_proxies = [\"10.0.0.0/8\", \"10.0.0.0/33\"]"),
            "server.trusted_proxies[1]: ",
        ),
        (
            with_section("[server]\nunverified_rate_limit = { per_second = 0 }"),
            "server.unverified_rate_limit.per_second: ",
        ),
        (
            with_section("[server]\nunverified_rate_limit = { per_second = 5, burst = 0 }"),
            "server.unverified_rate_limit.burst: ",
        ),
        (
            with_section(
                "[server.tls]\ncert_file = \"c\"\nkey_file = \"k\"\nhandshake_timeout = \"0s\"",
            ),
            "server.tls.handshake_timeout: ",
        ),
        (
            with_section("[storage]\nurl = \"mysql://x\""),
            "storage.url: ",
        ),
        (
            with_section("[storage]\npassword_env = \"PGPASSWORD\""),
            "storage.password_env: ",
        ),
        (
            with_section(
                "[storage]\nurl = \"postgres://u:pw@db/h\"\npassword_env = \"PGPASSWORD\"",
            ),
            "storage.url: ",
        ),
        (
            with_section(
                "[storage]\nurl = \"postgres://db/h\"\npassword_env = \"A\"\npassword_file = \"f\"",
            ),
            "storage.password: ",
        ),
        (
            with_section("[storage]\nurl = \"postgres://db/h\"\nschema = \"Public; DROP\""),
            "storage.schema: ",
        ),
        (
            with_section("[storage]\nurl = \"postgres://db/h\"\npool_size = 0"),
            "storage.pool_size: ",
        ),
        (
            with_section("[storage]\nurl = \"postgres://db/h\"\nconnect_timeout = \"0s\""),
            "storage.connect_timeout: ",
        ),
        (
            with_section("[storage]\ncommit_timeout = \"0s\""),
            "storage.commit_timeout: ",
        ),
        (
            with_section("[storage]\nqueue_capacity = 0"),
            "storage.queue_capacity: ",
        ),
        (
            with_section("[storage]\nmax_batch_events = 0"),
            "storage.max_batch_events: ",
        ),
        (
            with_section("[storage]\ncommit_interval = \"51ms\""),
            "storage.commit_interval: ",
        ),
        (
            with_section("[delivery]\nlease = \"0s\""),
            "delivery.lease: ",
        ),
        (
            with_section("[delivery]\npoll_interval = \"0s\""),
            "delivery.poll_interval: ",
        ),
        (
            with_section("[delivery]\nrescue_interval = \"0s\""),
            "delivery.rescue_interval: ",
        ),
        (
            with_section("[admin]\nlisten = \"0.0.0.0:9090\""),
            "admin.token: ",
        ),
        (
            with_section("[admin]\nlisten = \"127.0.0.1:9090\"\ntoken = \"x\"\ntoken_env = \"X\""),
            "admin.token: ",
        ),
        (
            with_section(
                "[admin]\nlisten = \"127.0.0.1:9090\"\nallowed_hosts = [\"a\", \"http://x/\"]",
            ),
            "admin.allowed_hosts[1]: ",
        ),
        (
            with_section("[admin]\nlisten = \"127.0.0.1:9090\"\nheader_read_timeout = \"0s\""),
            "admin.header_read_timeout: ",
        ),
        (
            with_section("[admin]\nlisten = \"127.0.0.1:9090\"\nmax_connections = 0"),
            "admin.max_connections: ",
        ),
        (
            MINIMAL.replace("id = \"stripe\"", "id = \"a/b\""),
            "endpoint[0].id: ",
        ),
        (format!("{MINIMAL}{MINIMAL}"), "endpoint[1].id: "),
        (
            MINIMAL.replace("provider = \"stripe\"", "provider = \"strype\""),
            "endpoint[0].provider: ",
        ),
        (
            endpoint("tolerance = \"1500ms\""),
            "endpoint[0].tolerance: ",
        ),
        (
            endpoint("max_body_bytes = 0"),
            "endpoint[0].max_body_bytes: ",
        ),
        (
            endpoint("max_body_bytes = 67108865"),
            "endpoint[0].max_body_bytes: ",
        ),
        (
            endpoint("rate_limit = { per_second = 0 }"),
            "endpoint[0].rate_limit.per_second: ",
        ),
        (endpoint("object_id = \"/id\""), "endpoint[0].object_id: "),
        (
            endpoint("basic_auth = { username = \"a:b\", password = \"p\" }"),
            "endpoint[0].basic_auth.username: ",
        ),
        (
            endpoint("basic_auth = { username = \"a\" }"),
            "endpoint[0].basic_auth.password: ",
        ),
        (
            MINIMAL.replace("provider = \"stripe\"", "provider = \"mailgun\""),
            "endpoint[0].basic_auth: ",
        ),
        (
            MINIMAL.replace("provider = \"stripe\"", "provider = \"twilio\""),
            "endpoint[0].public_url: ",
        ),
        (
            MINIMAL.replace("provider = \"stripe\"", "provider = \"generic_hmac\""),
            "endpoint[0].generic_hmac: ",
        ),
        (
            generic("signature_header = \"X Sig\"").replacen(
                "signature_header = \"X-Sig\"\n",
                "",
                1,
            ),
            "endpoint[0].generic_hmac.signature_header: ",
        ),
        (
            generic("tolerance = \"60s\""),
            "endpoint[0].generic_hmac.tolerance: ",
        ),
        (
            generic("redelivery_window = \"1500ms\""),
            "endpoint[0].generic_hmac.redelivery_window: ",
        ),
        (
            "[[endpoint]]\nid = \"a\"\nprovider = \"lab\"\n".into(),
            "endpoint[0].secret: ",
        ),
        (
            MINIMAL.replace("version = \"1\"", "version = \" \""),
            "endpoint[0].secret[0].version: ",
        ),
        (
            MINIMAL.replace("value = \"whsec_x\"", ""),
            "endpoint[0].secret[0].value: ",
        ),
        (
            MINIMAL.replace("value = \"whsec_x\"", "value = \"x\"\nvalue_file = \"s\""),
            "endpoint[0].secret[0].value: ",
        ),
        (
            MINIMAL.replace(
                "value = \"whsec_x\"",
                "value = \"x\"\nnot_before = 20\nnot_after = 10",
            ),
            "endpoint[0].secret[0].not_before: ",
        ),
        (target("kind = \"http\""), "endpoint[0].target[0].url: "),
        (
            target("kind = \"http\"\nurl = \"ftp://h/x\"\nsecret_env = \"S\""),
            "endpoint[0].target[0].url: ",
        ),
        (
            target("kind = \"http\"\nurl = \"http:///x\"\nsecret_env = \"S\""),
            "endpoint[0].target[0].url: ",
        ),
        (
            target("kind = \"http\"\nurl = \"http://h/x\""),
            "endpoint[0].target[0].secret: ",
        ),
        (
            http("ca_file = \"ca.pem\""),
            "endpoint[0].target[0].ca_file: ",
        ),
        (http("timeout = \"0s\""), "endpoint[0].target[0].timeout: "),
        (
            http("max_attempts = 0"),
            "endpoint[0].target[0].max_attempts: ",
        ),
        (http("max_age = \"0s\""), "endpoint[0].target[0].max_age: "),
        (
            http("concurrency = 0"),
            "endpoint[0].target[0].concurrency: ",
        ),
        (
            target("kind = \"handler\"\nsecret = \"whsec_AAAA\""),
            "endpoint[0].target[0].secret: ",
        ),
        (
            target("kind = \"handler\"\nurl = \"http://h/x\""),
            "endpoint[0].target[0].url: ",
        ),
        (
            format!(
                "{}\n[[endpoint.target]]\nname = \"b\"\nkind = \"handler\"\n",
                target("kind = \"handler\"")
            ),
            "endpoint[0].target[1].name: ",
        ),
    ];
    for (text, field) in cases {
        let error = refusal(&text);
        assert!(
            error.starts_with(field),
            "expected {field}…, got: {error}\n{text}"
        );
    }
}

#[test]
fn a_reachable_admin_address_needs_a_token_a_loopback_one_does_not() {
    let exposed = refusal(&with_section("[admin]\nlisten = \"0.0.0.0:9090\""));
    assert!(exposed.contains("0.0.0.0:9090"), "{exposed}");
    let loopback = parse_at(&with_section("[admin]\nlisten = \"[::1]:9090\"")).unwrap();
    assert!(loopback.admin.unwrap().token.is_none());
    let with_token = parse_at(&with_section(
        "[admin]\nlisten = \"0.0.0.0:9090\"\ntoken_file = \"admin-token\"",
    ))
    .unwrap();
    assert_eq!(
        with_token.admin.unwrap().token,
        Some(SecretSource::File("/etc/hookinbox/admin-token".into()))
    );
}

#[test]
fn a_handler_target_and_an_https_target_with_a_ca_are_accepted() {
    let handler = parse_at(&with_target("name = \"ledger\"\nkind = \"handler\"")).unwrap();
    assert!(matches!(
        handler.endpoints[0].targets[0].kind,
        TargetKind::Handler
    ));
    let https = parse_at(&with_target(
        "name = \"b\"\nkind = \"http\"\nurl = \"https://billing.internal/x\"\n\
         secret_file = \"target-secret\"\nca_file = \"ca.pem\"",
    ))
    .unwrap();
    let TargetKind::Http(http) = &https.endpoints[0].targets[0].kind else {
        panic!("an http target");
    };
    assert_eq!(
        http.ca_file.as_deref(),
        Some(Path::new("/etc/hookinbox/ca.pem"))
    );
    assert_eq!(
        http.secret,
        SecretSource::File("/etc/hookinbox/target-secret".into())
    );
}

#[test]
fn a_missing_file_is_one_line_naming_it() {
    let error = load(Path::new("/nonexistent/hookinbox.toml")).unwrap_err();
    let printed = format!("{:#}", anyhow::Error::from(error));
    assert_eq!(
        printed.matches("No such file or directory").count(),
        1,
        "{printed}"
    );
    assert!(
        printed.starts_with("cannot read /nonexistent/hookinbox.toml: "),
        "{printed}"
    );
}

/// `MINIMAL` with a `nats` target `b` made of `fields`.
fn with_nats_target(fields: &str) -> String {
    with_target(&format!("name = \"b\"\nkind = \"nats\"\n{fields}"))
}

#[test]
fn a_nats_target_with_several_servers_and_credentials_is_accepted() {
    let settings = parse_at(&with_nats_target(
        "url = \"nats://10.0.0.1:4222, nats://nats-2.internal:4223,nats://nats-3\"\n\
         subject = \"hooks.{endpoint}.{event_type}\"\n\
         credentials_file = \"hookinbox.creds\"\ntimeout = \"2s\"",
    ))
    .unwrap();
    let TargetKind::Nats(nats) = &settings.endpoints[0].targets[0].kind else {
        panic!("a nats target");
    };
    let servers: Vec<(&str, u16)> = nats.servers.iter().map(|s| (s.host(), s.port())).collect();
    assert_eq!(
        servers,
        [
            ("10.0.0.1", 4222),
            ("nats-2.internal", 4223),
            ("nats-3", 4222)
        ]
    );
    assert_eq!(
        nats.subject.render("stripe", Some("invoice.paid")),
        "hooks.stripe.invoice_paid"
    );
    assert_eq!(
        nats.credentials_file.as_deref(),
        Some(Path::new("/etc/hookinbox/hookinbox.creds"))
    );
    assert_eq!(nats.timeout, Duration::from_secs(2));
    // `config check` prints it as written, the credentials as their file.
    let printed = serde_json::to_value(&settings.endpoints[0].targets[0]).unwrap();
    assert_eq!(printed["kind"], "nats");
    assert_eq!(printed["subject"], "hooks.{endpoint}.{event_type}");
    assert_eq!(
        printed["credentials_file"],
        "/etc/hookinbox/hookinbox.creds"
    );
    assert!(printed["url"]
        .as_str()
        .unwrap()
        .starts_with("nats://10.0.0.1:4222,nats://"));
}

#[test]
fn nats_target_rules_name_their_field() {
    let subject = "subject = \"hooks.{endpoint}\"";
    let url = "url = \"nats://127.0.0.1:4222\"";
    let cases = [
        (with_nats_target(subject), "url: ", "needs a url"),
        (
            with_nats_target(&format!("url = \"http://127.0.0.1:4222\"\n{subject}")),
            "url: ",
            "nats://host:port",
        ),
        (
            with_nats_target(&format!("url = \"tls://127.0.0.1:4222\"\n{subject}")),
            "url: ",
            "nats://host:port",
        ),
        (
            with_nats_target(&format!("url = \"nats://127.0.0.1:4222,\"\n{subject}")),
            "url: ",
            "nats://host:port",
        ),
        (
            with_nats_target(&format!(
                "url = \"nats://127.0.0.1:4222/stream\"\n{subject}"
            )),
            "url: ",
            "nats://host:port",
        ),
        (
            with_nats_target(&format!("url = \"nats://:4222\"\n{subject}")),
            "url: ",
            "nats://host:port",
        ),
        (
            with_nats_target(&format!(
                "url = \"nats://hookinbox:pw-leak@127.0.0.1:4222\"\n{subject}"
            )),
            "url: ",
            "credentials_file",
        ),
        (with_nats_target(url), "subject: ", "needs a subject"),
        (
            with_nats_target(&format!("{url}\nsubject = \"hooks.{{event}}\"")),
            "subject: ",
            "`{event}` is not a placeholder",
        ),
        (
            with_nats_target(&format!("{url}\nsubject = \"hooks.{{endpoint\"")),
            "subject: ",
            "not closed",
        ),
        (
            with_nats_target(&format!("{url}\nsubject = \"hooks..{{endpoint}}\"")),
            "subject: ",
            "empty token",
        ),
        (
            with_nats_target(&format!("{url}\nsubject = \"hooks.>\"")),
            "subject: ",
            "wildcards",
        ),
        (
            with_nats_target(&format!("{url}\nsubject = \"hooks {{endpoint}}\"")),
            "subject: ",
            "whitespace",
        ),
        (
            with_nats_target(&format!("{url}\n{subject}\nsecret = \"whsec_x\"")),
            "secret: ",
            "credentials_file",
        ),
        (
            with_nats_target(&format!("{url}\n{subject}\nca_file = \"ca.pem\"")),
            "ca_file: ",
            "a nats target takes only url, subject and credentials_file",
        ),
        (
            with_nats_target(&format!("{url}\n{subject}\ntimeout = \"0s\"")),
            "timeout: ",
            "longer than zero",
        ),
        (
            with_target(&format!(
                "name = \"b\"\nkind = \"http\"\nurl = \"http://h/x\"\nsecret_env = \"S\"\n{subject}"
            )),
            "subject: ",
            "an http target takes only url, secret",
        ),
        (
            with_target("name = \"b\"\nkind = \"handler\"\ncredentials_file = \"x.creds\""),
            "credentials_file: ",
            "handler target",
        ),
    ];
    for (text, field, reason) in cases {
        let error = refusal(&text);
        assert!(
            error.starts_with(&format!("endpoint[0].target[0].{field}")),
            "expected …{field}, got: {error}\n{text}"
        );
        assert!(
            error.contains(reason),
            "expected {reason:?} in: {error}\n{text}"
        );
        assert!(!error.contains("pw-leak"), "{error}");
    }
}

#[test]
fn a_postgres_url_takes_its_settings_and_is_shown_without_its_password() {
    let settings = parse_at(&with_section(
        "[storage]\nurl = \"postgres://hookinbox:pw-in-url@db.internal:5433/events?sslmode=require\"\n\
         schema = \"hooks\"\npool_size = 8\nconnect_timeout = \"3s\"\n",
    ))
    .unwrap();
    let Database::Postgres(postgres) = &settings.storage.database else {
        panic!("not postgres: {:?}", settings.storage.database);
    };
    assert_eq!(postgres.schema.as_deref(), Some("hooks"));
    assert_eq!(postgres.pool_size.get(), 8);
    assert_eq!(postgres.connect_timeout, Duration::from_secs(3));
    let described = settings.storage.database.describe();
    assert!(described.contains("db.internal:5433/events"), "{described}");
    assert!(!described.contains("pw-in-url"), "{described}");
    let shown = serde_json::to_string(&settings.storage).unwrap();
    assert!(!shown.contains("pw-in-url"), "{shown}");

    let settings = parse_at(&with_section(
        "[storage]\nurl = \"postgres://hookinbox@db/events\"\npassword_file = \"secrets/db\"\n",
    ))
    .unwrap();
    let Database::Postgres(postgres) = &settings.storage.database else {
        panic!("not postgres");
    };
    assert_eq!(
        postgres.password,
        Some(SecretSource::File(
            Path::new("/etc/hookinbox/secrets/db").to_owned()
        ))
    );
}

#[test]
fn each_kind_refuses_every_kind_specific_field_it_does_not_take_naming_it() {
    let fields = [
        ("url", "url = \"http://h/x\""),
        ("ca_file", "ca_file = \"ca.pem\""),
        (
            "secret",
            "secret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"",
        ),
        ("secret_env", "secret_env = \"S\""),
        ("secret_file", "secret_file = \"s\""),
        ("subject", "subject = \"hooks.x\""),
        ("credentials_file", "credentials_file = \"x.creds\""),
        ("topic", "topic = \"hooks/x\""),
        ("protocol", "protocol = 5"),
        ("username", "username = \"u\""),
        ("password", "password = \"p\""),
        ("password_env", "password_env = \"P\""),
        ("password_file", "password_file = \"p\""),
    ];
    // Each kind with what it needs, and the fields it does not take.
    let kinds = [
        ("handler", "", &fields.map(|(name, _)| name)[..]),
        (
            "http",
            "url = \"https://h/x\"\nsecret_env = \"S\"",
            &[
                "subject",
                "credentials_file",
                "topic",
                "protocol",
                "username",
                "password",
                "password_env",
                "password_file",
            ][..],
        ),
        (
            "nats",
            "url = \"nats://h:4222\"\nsubject = \"hooks.x\"",
            &[
                "ca_file",
                "secret",
                "secret_env",
                "secret_file",
                "topic",
                "protocol",
                "username",
                "password",
                "password_env",
                "password_file",
            ][..],
        ),
        (
            "mqtt",
            "url = \"mqtt://h:1883\"\ntopic = \"hooks/x\"",
            &[
                "secret",
                "secret_env",
                "secret_file",
                "subject",
                "credentials_file",
            ][..],
        ),
    ];
    for (kind, needs, refused) in kinds {
        for name in refused {
            let (_, line) = fields.iter().find(|(field, _)| field == name).unwrap();
            let text = with_target(&format!("name = \"b\"\nkind = \"{kind}\"\n{needs}\n{line}"));
            let error = refusal(&text);
            assert!(
                error.starts_with(&format!("endpoint[0].target[0].{name}: ")),
                "{kind} with {name}: {error}"
            );
        }
    }
}

fn with_mqtt_target(fields: &str) -> String {
    with_target(&format!("name = \"b\"\nkind = \"mqtt\"\n{fields}"))
}

#[test]
fn an_mqtt_target_with_tls_and_a_password_is_accepted() {
    let settings = parse_at(&with_mqtt_target(
        "url = \"mqtts://broker.internal\"\n\
         topic = \"webhooks/{provider}/{endpoint}/{event_type}\"\n\
         username = \"hookinbox\"\npassword_env = \"MQTT_PASSWORD\"\n\
         ca_file = \"ca.pem\"\ntimeout = \"2s\"",
    ))
    .unwrap();
    let TargetKind::Mqtt(mqtt) = &settings.endpoints[0].targets[0].kind else {
        panic!("an mqtt target");
    };
    assert_eq!(
        mqtt.broker,
        MqttBroker {
            host: "broker.internal".into(),
            port: 8883,
            tls: true
        }
    );
    assert_eq!(mqtt.protocol, MqttProtocol::V5, "5 unless told otherwise");
    assert_eq!(
        mqtt.topic.render(TemplateValues {
            provider: "stripe",
            endpoint: "billing",
            event_type: Some("invoice.paid"),
        }),
        "webhooks/stripe/billing/invoice_paid"
    );
    assert_eq!(mqtt.username.as_deref(), Some("hookinbox"));
    assert_eq!(
        mqtt.password,
        Some(SecretSource::Env("MQTT_PASSWORD".into()))
    );
    assert_eq!(
        mqtt.ca_file.as_deref(),
        Some(Path::new("/etc/hookinbox/ca.pem"))
    );
    assert_eq!(mqtt.timeout, Duration::from_secs(2));
    // `config check` prints it as written, the password as its source.
    let printed = serde_json::to_value(&settings.endpoints[0].targets[0]).unwrap();
    assert_eq!(printed["kind"], "mqtt");
    assert_eq!(printed["url"], "mqtts://broker.internal:8883");
    assert_eq!(printed["protocol"], "5");
    assert_eq!(printed["password"]["env"], "MQTT_PASSWORD");

    let settings = parse_at(&with_mqtt_target(
        "url = \"mqtt://127.0.0.1:1884\"\ntopic = \"t\"\nprotocol = \"3.1.1\"",
    ))
    .unwrap();
    let TargetKind::Mqtt(mqtt) = &settings.endpoints[0].targets[0].kind else {
        panic!("an mqtt target");
    };
    assert_eq!(mqtt.protocol, MqttProtocol::V311);
    assert_eq!(mqtt.password, None);
}

#[test]
fn mqtt_target_rules_name_their_field() {
    let url = "url = \"mqtt://127.0.0.1:1883\"";
    let topic = "topic = \"hooks/{endpoint}\"";
    let cases = [
        (with_mqtt_target(topic), "url: ", "needs a url"),
        (
            with_mqtt_target(&format!("url = \"nats://h:4222\"\n{topic}")),
            "url: ",
            "mqtt://host:port",
        ),
        (
            with_mqtt_target(&format!("url = \"mqtt://u:pw-leak@h:1883\"\n{topic}")),
            "url: ",
            "password_env",
        ),
        (with_mqtt_target(url), "topic: ", "needs a topic"),
        (
            with_mqtt_target(&format!("{url}\ntopic = \"hooks/#\"")),
            "topic: ",
            "wildcards",
        ),
        (
            with_mqtt_target(&format!("{url}\ntopic = \"hooks/{{type}}\"")),
            "topic: ",
            "`{type}` is not a placeholder",
        ),
        (
            with_mqtt_target(&format!("{url}\n{topic}\nprotocol = 3")),
            "",
            "protocol must be 5 or \"3.1.1\"",
        ),
        (
            with_mqtt_target(&format!("{url}\n{topic}\nca_file = \"ca.pem\"")),
            "ca_file: ",
            "only mqtts://",
        ),
        (
            with_mqtt_target(&format!("{url}\n{topic}\npassword = \"pw-leak\"")),
            "username: ",
            "set username too",
        ),
        (
            with_mqtt_target(&format!(
                "{url}\n{topic}\nusername = \"u\"\npassword = \"pw-leak\"\npassword_env = \"P\""
            )),
            "password: ",
            "not several",
        ),
        (
            with_mqtt_target(&format!("{url}\n{topic}\nsubject = \"hooks.x\"")),
            "subject: ",
            "an mqtt target takes only url, topic",
        ),
        (
            with_mqtt_target(&format!("{url}\n{topic}\ntimeout = \"0s\"")),
            "timeout: ",
            "longer than zero",
        ),
    ];
    for (text, field, reason) in cases {
        let error = refusal(&text);
        if !field.is_empty() {
            assert!(
                error.starts_with(&format!("endpoint[0].target[0].{field}")),
                "expected …{field}, got: {error}\n{text}"
            );
        }
        assert!(
            error.contains(reason),
            "expected {reason:?} in: {error}\n{text}"
        );
        assert!(!error.contains("pw-leak"), "{error}");
    }
}

/// `MINIMAL` (a Stripe endpoint) with a handler target `fraud` whose
/// `filter` is the TOML string `filter`.
fn with_filter(filter: &str) -> String {
    with_target(&format!(
        "name = \"fraud\"\nkind = \"handler\"\nfilter = {filter}"
    ))
}

#[test]
fn a_filter_refused_at_start_names_the_target_and_the_position() {
    let field = "endpoint[0].target[0].filter: target `fraud`: ";
    for (filter, expected) in [
        ("'event.type == '", "does not parse at 1:15: "),
        ("'event.type > 5'", "at 1:12: compares string with int"),
        (
            "'evnt.type == \"invoice.paid\"'",
            "at 1:1: `evnt` is not a variable or function here",
        ),
        ("'event.type'", "at 1:1: answers string, not a boolean"),
        (
            "'body.data.object.amount > \"1000\"'",
            "at 1:25: compares int with string (over the stripe sample event \
             `payment_intent.succeeded`)",
        ),
    ] {
        let message = refusal(&with_filter(filter));
        assert!(
            message.contains(&format!("{field}{expected}")),
            "{filter}: {message}"
        );
        assert_eq!(message.lines().count(), 1, "{message}");
    }
}

#[test]
fn a_filter_over_fields_a_sample_lacks_or_holds_as_null_is_accepted() {
    for filter in [
        // `request.id` is null in the Stripe sample: data, not a type.
        "'body.request.id > 5'",
        "'body.data.object.amount > 1000 && event.type.startsWith(\"payment_intent.\")'",
        "'has(body.data.object.customer) && body.data.object.customer == \"cus_1\"'",
    ] {
        parse_at(&with_filter(filter)).unwrap_or_else(|error| panic!("{filter}: {error}"));
    }
}

#[test]
fn a_provider_that_hands_its_secret_over_needs_a_key_ring() {
    let endpoint = "[[endpoint]]\nid = \"asana\"\nprovider = \"asana\"\nverify_token = \"handshake-token-0123456789\"\n";
    let message = refusal(&format!("[encryption]\nallow_plaintext = true\n{endpoint}"));
    assert!(
        message.contains("endpoint[0].provider")
            && message.contains("`asana` hands its signing secret over")
            && message.contains("it needs an [[encryption.key]]"),
        "{message}"
    );
    let sealed = format!(
        "[[encryption.key]]\nid = \"k1\"\nvalue = \"aG9va2luYm94LXRlc3QtZW5jcnlwdGlvbi1rZXktMDE=\"\n{endpoint}"
    );
    let settings = parse_at(&sealed).unwrap_or_else(|error| panic!("{error}"));
    assert!(
        settings.endpoints[0].secrets.is_empty(),
        "it starts with none"
    );
}
