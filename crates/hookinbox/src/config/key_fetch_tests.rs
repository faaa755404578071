//! The settings of the providers that serve their own keys (`paypal`,
//! `aws_sns`, `plaid`, docs/architecture.md §3): no secret, and what each
//! needs instead, refused with the field named.

use std::path::Path;

use super::*;

fn parse_at(text: &str) -> Result<Settings, ConfigError> {
    parse(text, Path::new("/etc/hookinbox"))
}

fn refusal(text: &str) -> String {
    match parse_at(text) {
        Ok(settings) => panic!("accepted: {settings:?}\n{text}"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn paypal_takes_a_webhook_id_and_no_secret() {
    let settings = parse_at(
        r#"
[[endpoint]]
id = "paypal"
provider = "paypal"
webhook_id = "8PT597110X687430LKGECATA"
"#,
    )
    .unwrap();
    assert_eq!(settings.endpoints[0].secrets.len(), 0);
    assert_eq!(
        settings.endpoints[0].webhook_id.as_deref(),
        Some("8PT597110X687430LKGECATA")
    );
    let missing = refusal("[[endpoint]]\nid = \"paypal\"\nprovider = \"paypal\"\n");
    assert!(missing.contains("webhook_id"), "{missing}");
    let with_secret = refusal(
        r#"
[[endpoint]]
id = "paypal"
provider = "paypal"
webhook_id = "8PT597110X687430LKGECATA"
[[endpoint.secret]]
version = "1"
value = "whatever-it-would-be"
"#,
    );
    assert!(
        with_secret.contains("endpoint[0].secret") && with_secret.contains("takes no"),
        "{with_secret}"
    );
    // Other providers still need a secret.
    let stripe = refusal("[[endpoint]]\nid = \"s\"\nprovider = \"stripe\"\n");
    assert!(stripe.contains("at least one"), "{stripe}");
}

#[test]
fn aws_sns_takes_text_plain_by_default() {
    let settings = parse_at("[[endpoint]]\nid = \"sns\"\nprovider = \"aws_sns\"\n").unwrap();
    assert_eq!(
        settings.endpoints[0].content_types,
        [
            "application/json",
            "application/x-www-form-urlencoded",
            "text/plain"
        ]
    );
    let narrowed = parse_at(
        "[[endpoint]]\nid = \"sns\"\nprovider = \"aws_sns\"\ncontent_types = [\"text/plain\"]\n",
    )
    .unwrap();
    assert_eq!(narrowed.endpoints[0].content_types, ["text/plain"]);
}

#[test]
fn plaid_needs_its_api_credentials_and_only_plaid_takes_them() {
    let settings = parse_at(
        r#"
[[endpoint]]
id = "plaid"
provider = "plaid"
[endpoint.plaid]
environment = "sandbox"
client_id = "5f8a0c0e1234567890abcdef"
secret_env = "PLAID_SECRET"
"#,
    )
    .unwrap();
    let plaid = settings.endpoints[0].plaid.as_ref().unwrap();
    assert_eq!(plaid.environment.host(), "sandbox.plaid.com");
    let missing = refusal("[[endpoint]]\nid = \"plaid\"\nprovider = \"plaid\"\n");
    assert!(missing.contains("endpoint[0].plaid"), "{missing}");
    let no_secret = refusal(
        "[[endpoint]]\nid = \"plaid\"\nprovider = \"plaid\"\n[endpoint.plaid]\nenvironment = \"production\"\nclient_id = \"abc\"\n",
    );
    assert!(
        no_secret.contains("endpoint[0].plaid.secret"),
        "{no_secret}"
    );
    let elsewhere = refusal(
        r#"
[[endpoint]]
id = "stripe"
provider = "stripe"
[endpoint.plaid]
environment = "sandbox"
client_id = "abc"
secret_env = "PLAID_SECRET"
[[endpoint.secret]]
version = "1"
value = "whsec_x"
"#,
    );
    assert!(
        elsewhere.contains("for provider `plaid` only"),
        "{elsewhere}"
    );
    let unknown_environment = refusal(
        "[[endpoint]]\nid = \"plaid\"\nprovider = \"plaid\"\n[endpoint.plaid]\nenvironment = \"staging\"\nclient_id = \"abc\"\nsecret_env = \"X\"\n",
    );
    assert!(
        unknown_environment.contains("staging"),
        "{unknown_environment}"
    );
}
