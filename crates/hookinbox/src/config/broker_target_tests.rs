//! The `rabbitmq` and `redis_stream` kinds' settings: what each takes,
//! what it refuses (naming the field), and that a password in a URL is
//! never shown.

use std::path::Path;

use super::*;

fn parse_at(text: &str) -> Result<Settings, ConfigError> {
    parse(text, Path::new("/etc/hookinbox"))
}

/// One endpoint whose one target is made of `fields`.
fn with_target(fields: &str) -> String {
    format!(
        "[[endpoint]]\nid = \"stripe\"\nprovider = \"stripe\"\n\n[[endpoint.secret]]\n\
         version = \"1\"\nvalue = \"whsec_x\"\n\n[[endpoint.target]]\nname = \"b\"\n{fields}\n"
    )
}

fn refusal(text: &str) -> String {
    match parse_at(text) {
        Ok(settings) => panic!("accepted: {settings:?}\n{text}"),
        Err(error) => error.to_string(),
    }
}

const RABBITMQ: &str =
    "kind = \"rabbitmq\"\nurl = \"amqp://hookinbox:pw-in-url@mq.internal:5672/%2f\"\n\
                        exchange = \"webhooks\"\nrouting_key = \"{provider}.{event_type}\"";
const REDIS: &str = "kind = \"redis_stream\"\nurl = \"redis://:pw-in-url@cache.internal:6380/2\"\n\
                     stream = \"webhooks:{endpoint}\"";

#[test]
fn a_rabbitmq_target_takes_its_fields_and_is_shown_without_its_password() {
    let settings = parse_at(&with_target(RABBITMQ)).unwrap();
    let TargetKind::Rabbitmq(rabbitmq) = &settings.endpoints[0].targets[0].kind else {
        panic!("not rabbitmq");
    };
    assert_eq!(rabbitmq.exchange, "webhooks");
    assert_eq!(rabbitmq.routing_key.as_str(), "{provider}.{event_type}");
    assert!(!rabbitmq.is_tls());
    assert_eq!(rabbitmq.url.authority.host, "mq.internal");
    assert_eq!(rabbitmq.url.authority.userinfo.username, "hookinbox");
    assert!(rabbitmq.url.authority.userinfo.password.is_empty());
    assert!(matches!(rabbitmq.password, Some(SecretSource::Inline(_))));
    let shown = serde_json::to_string(&settings.endpoints).unwrap();
    assert!(!shown.contains("pw-in-url"), "{shown}");
    assert!(
        shown.contains("\"url\":\"amqp://hookinbox@mq.internal:5672/%2f\""),
        "{shown}"
    );
    assert!(!format!("{settings:?}").contains("pw-in-url"));

    let tls = parse_at(&with_target(
        "kind = \"rabbitmq\"\nurl = \"amqps://hookinbox@mq.internal/prod\"\n\
         password_env = \"MQ_PASSWORD\"\nexchange = \"\"\nrouting_key = \"q\"\nca_file = \"ca.pem\"",
    ))
    .unwrap();
    let TargetKind::Rabbitmq(rabbitmq) = &tls.endpoints[0].targets[0].kind else {
        panic!("not rabbitmq");
    };
    assert!(rabbitmq.is_tls());
    assert_eq!(rabbitmq.url.authority.userinfo.username, "hookinbox");
    assert_eq!(rabbitmq.exchange, "", "the default exchange");
    assert_eq!(
        rabbitmq.password,
        Some(SecretSource::Env("MQ_PASSWORD".into()))
    );
    assert_eq!(
        rabbitmq.ca_file.as_deref(),
        Some(Path::new("/etc/hookinbox/ca.pem"))
    );
}

#[test]
fn a_redis_stream_target_takes_its_fields_and_is_shown_without_its_password() {
    let settings = parse_at(&with_target(&format!("{REDIS}\nmaxlen = 1000"))).unwrap();
    let TargetKind::RedisStream(redis) = &settings.endpoints[0].targets[0].kind else {
        panic!("not redis_stream");
    };
    assert_eq!(redis.address, "cache.internal:6380");
    assert_eq!(redis.db, 2);
    assert_eq!(redis.url, "redis://cache.internal:6380/2");
    assert_eq!(redis.maxlen.map(|n| n.get()), Some(1000));
    assert_eq!(redis.stream.as_str(), "webhooks:{endpoint}");
    assert!(matches!(redis.password, Some(SecretSource::Inline(_))));
    let shown = serde_json::to_string(&settings.endpoints).unwrap();
    assert!(!shown.contains("pw-in-url"), "{shown}");
    assert!(!format!("{settings:?}").contains("pw-in-url"));
}

#[test]
fn broker_target_mistakes_are_refused_naming_the_field() {
    let cases = [
        (with_target("kind = \"rabbitmq\"\nexchange = \"x\"\nrouting_key = \"k\""), "url: ", "needs a url"),
        (
            with_target("kind = \"rabbitmq\"\nurl = \"http://pw-leak@h/\"\nexchange = \"x\"\nrouting_key = \"k\""),
            "url: ",
            "amqp://",
        ),
        (with_target("kind = \"rabbitmq\"\nurl = \"amqp://h\"\nrouting_key = \"k\""), "exchange: ", "needs an exchange"),
        (with_target("kind = \"rabbitmq\"\nurl = \"amqp://h\"\nexchange = \"x\""), "routing_key: ", "needs a routing_key"),
        (
            with_target("kind = \"rabbitmq\"\nurl = \"amqp://h\"\nexchange = \"x\"\nrouting_key = \"{type}\""),
            "routing_key: ",
            "not a placeholder",
        ),
        (
            with_target("kind = \"rabbitmq\"\nurl = \"amqp://h\"\nexchange = \"x\"\nrouting_key = \"k\"\nca_file = \"ca.pem\""),
            "ca_file: ",
            "only amqps://",
        ),
        (with_target(&format!("{RABBITMQ}\npassword_env = \"P\"")), "password_env: ", "holds a password already"),
        (with_target(&format!("{RABBITMQ}\nsubject = \"s\"")), "subject: ", "another kind's"),
        (with_target(&format!("{RABBITMQ}\nstream = \"s\"")), "stream: ", "another kind's"),
        (with_target(&format!("{RABBITMQ}\nsecret_env = \"S\"")), "secret_env: ", "another kind's"),
        (with_target("kind = \"redis_stream\"\nstream = \"s\""), "url: ", "needs a url"),
        (with_target("kind = \"redis_stream\"\nurl = \"rediss://:pw-leak@h\"\nstream = \"s\""), "url: ", "redis://"),
        (with_target("kind = \"redis_stream\"\nurl = \"redis://h\""), "stream: ", "needs a stream"),
        (with_target("kind = \"redis_stream\"\nurl = \"redis://h\"\nstream = \"\""), "stream: ", "empty"),
        (with_target(&format!("{REDIS}\nmaxlen = 0")), "maxlen: ", "at least 1"),
        (with_target(&format!("{REDIS}\npassword_file = \"p\"")), "password_file: ", "holds a password already"),
        (with_target(&format!("{REDIS}\nexchange = \"x\"")), "exchange: ", "another kind's"),
        (with_target(&format!("{REDIS}\nca_file = \"ca.pem\"")), "ca_file: ", "another kind's"),
        (with_target(&format!("{REDIS}\ntimeout = \"0s\"")), "timeout: ", "longer than zero"),
        (
            with_target("kind = \"http\"\nurl = \"http://h/x\"\nsecret_env = \"S\"\nrouting_key = \"k\""),
            "routing_key: ",
            "another kind's",
        ),
        (
            with_target("kind = \"nats\"\nurl = \"nats://h:4222\"\nsubject = \"s\"\nmaxlen = 5"),
            "maxlen: ",
            "another kind's",
        ),
        (with_target("kind = \"handler\"\npassword_env = \"P\""), "password_env: ", "handler target"),
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
