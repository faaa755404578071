//! The routing layer over the repository's real provider samples
//! (`crates/hookinbox-verify/tests/fixtures`): Stripe, GitHub and Shopify.

use base64::Engine;

use super::body_paths::BodyPaths;
use super::filter_input::FilterInput;
use super::filter_position::FilterPosition;
use super::target_filter::{FilterCompileError, FilterRunError};
use super::*;

const STRIPE: &str = include_str!("../../../hookinbox-verify/tests/fixtures/stripe.jsonl");
const GITHUB: &str = include_str!("../../../hookinbox-verify/tests/fixtures/github.jsonl");
const SHOPIFY: &str =
    include_str!("../../../hookinbox-verify/tests/fixtures/documented/hmac_formula.jsonl");

/// One sample request: its headers (lowercase names) and body.
struct Sample {
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Sample {
    fn named(fixtures: &str, name: &str) -> Sample {
        let line = fixtures
            .lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("fixture is JSON"))
            .find(|fixture| fixture["name"] == name)
            .expect("fixture present");
        let request = &line["request"];
        let body = base64::engine::general_purpose::STANDARD
            .decode(request["body_b64"].as_str().expect("body_b64"))
            .expect("base64 body");
        let headers = request["headers"]
            .as_array()
            .expect("headers")
            .iter()
            .map(|pair| {
                (
                    pair[0].as_str().expect("name").to_ascii_lowercase(),
                    pair[1].as_str().expect("value").to_owned(),
                )
            })
            .collect();
        Sample { headers, body }
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn event<'a>(&'a self, provider: &'a str, event_type: Option<&'a str>) -> RoutedEvent<'a> {
        RoutedEvent {
            provider,
            endpoint: "ep",
            id: "evt_1",
            event_type,
            received_at_ms: 1_767_225_600_000,
            matched_secret_version: "current",
            headers: &self.headers,
            content_type: self.header("content-type"),
            body: &self.body,
        }
    }
}

fn patterns(list: &[&str]) -> EventTypePatterns {
    EventTypePatterns::compile(&list.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>())
        .expect("patterns compile")
}

fn route(event_types: Option<&[&str]>, filter: Option<&str>) -> TargetRoute {
    TargetRoute {
        event_types: event_types.map(patterns),
        filter: filter.map(|f| TargetFilter::compile(f).expect("filter compiles")),
    }
}

fn run(route: &TargetRoute, event: &RoutedEvent<'_>) -> Result<bool, FilterRunError> {
    let context = FilterInput::new(event, &BodyPaths::Whole).context();
    route.matches(event.event_type, || &context)
}

#[test]
fn a_star_stays_within_one_segment() {
    let invoices = patterns(&["invoice.*", "customer.subscription.*"]);
    assert!(invoices.matches(Some("invoice.paid")));
    assert!(invoices.matches(Some("customer.subscription.updated")));
    assert!(!invoices.matches(Some("invoice.payment.failed")));
    assert!(!invoices.matches(Some("invoice")));
    assert!(!invoices.matches(Some("customer.created")));
    assert!(!invoices.matches(Some("Invoice.paid")), "case-sensitive");
    assert!(
        !invoices.matches(None),
        "an untyped event matches no pattern"
    );
}

#[test]
fn a_double_star_spans_segments_and_a_slash_separates_like_a_dot() {
    let deep = patterns(&["invoice.**"]);
    assert!(deep.matches(Some("invoice.payment.failed")));
    assert!(deep.matches(Some("invoice.paid")));
    let shopify = patterns(&["orders/*"]);
    assert!(shopify.matches(Some("orders/create")));
    assert!(!shopify.matches(Some("products/create")));
    assert!(patterns(&["{invoice,charge}.*"]).matches(Some("charge.refunded")));
}

#[test]
fn a_pattern_that_is_not_a_glob_or_an_empty_list_is_refused() {
    let error = EventTypePatterns::compile(&["invoice.[".to_owned()]).expect_err("refused");
    assert!(error.contains("invoice.["), "{error}");
    assert!(EventTypePatterns::compile(&[]).is_err());
}

#[test]
fn stripe_invoice_over_an_amount_matches_and_under_it_does_not() {
    let sample = Sample::named(STRIPE, "stripe/valid");
    let event = sample.event("stripe", Some("invoice.paid"));
    let over = route(
        Some(&["invoice.*"]),
        Some(
            r#"event.provider == "stripe" && body.data.object.amount_paid > 1000 && body.data.object.currency == "eur""#,
        ),
    );
    assert_eq!(run(&over, &event), Ok(true));
    let under = route(None, Some("body.data.object.amount_paid > 5000"));
    assert_eq!(run(&under, &event), Ok(false));
    let other_type = route(Some(&["charge.*"]), None);
    assert_eq!(run(&other_type, &event), Ok(false));
}

#[test]
fn github_pull_request_is_routed_by_header_and_body() {
    let sample = Sample::named(GITHUB, "github/valid");
    let event = sample.event("github", Some("pull_request"));
    let filter = route(
        None,
        Some(
            r#"headers["x-github-event"] == "pull_request" && body.action == "opened" && body.repository.full_name.startsWith("octo-org/")"#,
        ),
    );
    assert_eq!(run(&filter, &event), Ok(true));
    let pushes_to_main = route(
        None,
        Some(r#"headers["x-github-event"] == "push" && body.ref == "refs/heads/main""#),
    );
    assert_eq!(run(&pushes_to_main, &event), Ok(false));
}

#[test]
fn a_body_without_a_json_content_type_is_absent_and_a_filter_on_it_does_not_match() {
    let sample = Sample::named(SHOPIFY, "shopify/valid");
    assert_eq!(sample.header("content-type"), None);
    let event = sample.event("shopify", sample.header("x-shopify-topic"));
    let on_topic = route(
        Some(&["orders/*"]),
        Some(r#"headers["x-shopify-topic"] == "orders/create""#),
    );
    assert_eq!(run(&on_topic, &event), Ok(true));
    let on_body = route(None, Some(r#"body.total_price == "19.99""#));
    assert_eq!(run(&on_body, &event), Err(FilterRunError::AbsentVariable));
    let json = RoutedEvent {
        content_type: Some("application/json; charset=utf-8"),
        ..event
    };
    assert_eq!(run(&on_body, &json), Ok(true));
}

#[test]
fn a_form_body_exposes_its_fields_and_parses_a_json_payload_field() {
    let body = b"payload=%7B%22ref%22%3A%22refs%2Fheads%2Fmain%22%7D&kind=push";
    let headers = Vec::new();
    let event = RoutedEvent {
        provider: "github",
        endpoint: "ep",
        id: "d1",
        event_type: Some("push"),
        received_at_ms: 0,
        matched_secret_version: "current",
        headers: &headers,
        content_type: Some("application/x-www-form-urlencoded"),
        body,
    };
    let filter = route(
        None,
        Some(r#"body.payload.ref == "refs/heads/main" && body.kind == "push""#),
    );
    assert_eq!(run(&filter, &event), Ok(true));
}

#[test]
fn run_time_failures_do_not_match_and_are_named() {
    let sample = Sample::named(STRIPE, "stripe/valid");
    let event = sample.event("stripe", Some("invoice.paid"));
    let missing = route(None, Some("body.data.object.amount > 1000"));
    assert_eq!(run(&missing, &event), Err(FilterRunError::MissingField));
    let wrong_type = route(None, Some("body.data.object.currency > 1000"));
    assert_eq!(run(&wrong_type, &event), Err(FilterRunError::Failed));
    let decision = RoutingDecision::route(
        [("fraud", &missing), ("all", &TargetRoute::default())],
        &event,
    );
    assert_eq!(decision.routed, ["all"]);
    assert_eq!(decision.not_routed, ["fraud"]);
}

/// The message and position of a filter refused at configuration time.
fn refused(source: &str) -> (FilterCompileError, String) {
    let error = TargetFilter::compile(source).expect_err(source);
    let text = error.to_string();
    (error, text)
}

#[test]
fn a_filter_that_does_not_parse_names_the_line_and_column() {
    let (error, text) = refused("event.type == ");
    assert!(
        matches!(
            error,
            FilterCompileError::Syntax {
                at: FilterPosition {
                    line: 1,
                    column: 15
                },
                ..
            }
        ),
        "{error:?}"
    );
    assert!(text.starts_with("does not parse at 1:15: "), "{text}");
    assert_eq!(text.lines().count(), 1, "one line for config check: {text}");
    let (error, text) = refused("event.type == \"a\" &&\n  body.amount >");
    assert!(
        matches!(
            error,
            FilterCompileError::Syntax {
                at: FilterPosition { line: 2, .. },
                ..
            }
        ),
        "{error:?}"
    );
    assert!(text.starts_with("does not parse at 2:"), "{text}");
}

#[test]
fn type_errors_over_the_event_fields_name_the_position() {
    for (source, at, why) in [
        ("event.type > 5", "1:12", "compares string with int"),
        (
            "event.received_at_ms + \"x\" == 1",
            "1:22",
            "`+` does not apply to int and string",
        ),
        (
            "evnt.type == \"invoice.paid\"",
            "1:1",
            "`evnt` is not a variable or function here",
        ),
        (
            "event.type == \"invoice.paid\" &&\n  event.received_at_ms > \"x\"",
            "2:24",
            "compares int with string",
        ),
    ] {
        let (error, text) = refused(source);
        assert!(
            matches!(error, FilterCompileError::Type { over: None, .. }),
            "{source}: {error:?}"
        );
        assert!(
            text.starts_with(&format!("at {at}: {why}")),
            "{source}: {text}"
        );
    }
    let (error, text) = refused("event.type");
    assert!(
        matches!(error, FilterCompileError::Type { at: Some(_), .. }),
        "{error:?}"
    );
    assert!(text.contains("answers string, not a boolean"), "{text}");
    TargetFilter::compile("body.data.object.amount > 1000").expect("body fields are data");
    TargetFilter::compile(r#"headers["x-github-event"] == "push""#).expect("headers are data");
}

/// What `config check` adds to the probe: the filter over the provider's
/// real payloads.
fn check_over(
    source: &str,
    sample: &Sample,
    provider: &str,
    event_type: &str,
) -> Result<(), FilterCompileError> {
    // As `config check` runs it: the bundled samples are JSON.
    let event = RoutedEvent {
        content_type: Some("application/json"),
        ..sample.event(provider, Some(event_type))
    };
    TargetFilter::compile(source)
        .expect("compiles over the empty probe")
        .check_over(&event, "the sample")
}

#[test]
fn type_errors_over_real_payloads_are_found_at_config_time() {
    let stripe = Sample::named(STRIPE, "stripe/valid");
    let shopify = Sample::named(SHOPIFY, "shopify/valid");
    let github = Sample::named(GITHUB, "github/valid");
    // A quoted number against Stripe's integer amount.
    let error = check_over(
        r#"body.data.object.amount_paid > "1000""#,
        &stripe,
        "stripe",
        "invoice.paid",
    )
    .expect_err("int against string");
    let text = error.to_string();
    assert!(
        text.starts_with("at 1:30: compares int with string (over the sample)"),
        "{text}"
    );
    // Shopify sends prices as strings: a number is a type error, a cast is not.
    let error = check_over(
        "body.total_price > 100",
        &shopify,
        "shopify",
        "orders/create",
    )
    .expect_err("string against int");
    assert!(
        error
            .to_string()
            .starts_with("at 1:18: compares string with int"),
        "{error}"
    );
    check_over(
        "double(body.total_price) > 100.0",
        &shopify,
        "shopify",
        "orders/create",
    )
    .expect("cast first");
    // GitHub's `number` is an int; `size` of it has no overload.
    let error = check_over("size(body.number) > 1", &github, "github", "pull_request")
        .expect_err("size of an int");
    assert!(error.to_string().starts_with("at 1:5: "), "{error}");
    // What the sample lacks is data, not a type error; so is a null.
    check_over(
        r#"body.data.object.amount > "1""#,
        &stripe,
        "stripe",
        "invoice.paid",
    )
    .expect("a field this sample lacks");
    check_over(
        r#"body.ref == "refs/heads/main""#,
        &github,
        "github",
        "pull_request",
    )
    .expect("a push field on a pull request");
    check_over(
        "body.data.object.amount_paid > 1000 && body.livemode == false",
        &stripe,
        "stripe",
        "invoice.paid",
    )
    .expect("well typed");
}

/// The README's routing recipes, as one endpoint's targets.
fn readme_recipes() -> Vec<(&'static str, TargetRoute)> {
    vec![
        ("billing", route(Some(&["invoice.*"]), None)),
        (
            "fraud",
            route(
                None,
                Some("has(body.data.object.amount) && body.data.object.amount > 1000"),
            ),
        ),
        (
            "ci",
            route(
                None,
                Some("event.type == 'push' && body.ref == 'refs/heads/main'"),
            ),
        ),
        ("erp", TargetRoute::default()),
    ]
}

fn decide(targets: &[(&'static str, TargetRoute)], event: &RoutedEvent<'_>) -> RoutingDecision {
    RoutingDecision::route(targets.iter().map(|(name, route)| (*name, route)), event)
}

#[test]
fn the_readme_recipes_route_the_real_samples_by_their_own_type() {
    let targets = readme_recipes();
    // Stripe's type is in its body, as the adapter reads it.
    let stripe = Sample::named(STRIPE, "stripe/valid");
    let body: serde_json::Value = serde_json::from_slice(&stripe.body).expect("JSON sample");
    let stripe_type = body["type"].as_str().expect("a type");
    assert_eq!(stripe_type, "invoice.paid");
    let decision = decide(&targets, &stripe.event("stripe", Some(stripe_type)));
    assert_eq!(decision.routed, ["billing", "erp"]);
    // An invoice has `amount_paid`, not `amount`: the has() guard makes
    // that a plain non-match, not a run-time error.
    assert_eq!(decision.not_routed, ["fraud", "ci"]);
    assert_eq!(
        run(&targets[1].1, &stripe.event("stripe", Some(stripe_type))),
        Ok(false)
    );
    // GitHub's type is its X-GitHub-Event header: a pull request is not a push.
    let github = Sample::named(GITHUB, "github/valid");
    let github_type = github.header("x-github-event").expect("an event header");
    let decision = decide(&targets, &github.event("github", Some(github_type)));
    assert_eq!(decision.routed, ["erp"]);
    assert_eq!(decision.not_routed, ["billing", "fraud", "ci"]);
    // Shopify's is X-Shopify-Topic; its sample has no content type, so no body.
    let shopify = Sample::named(SHOPIFY, "shopify/valid");
    let topic = shopify.header("x-shopify-topic").expect("a topic");
    let decision = decide(&targets, &shopify.event("shopify", Some(topic)));
    assert_eq!(decision.routed, ["erp"]);
}

#[test]
fn the_github_sample_sent_form_encoded_is_read_from_its_payload_field() {
    let github = Sample::named(GITHUB, "github/valid");
    let form: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("payload", std::str::from_utf8(&github.body).expect("UTF-8"))
        .finish();
    let event = RoutedEvent {
        content_type: Some("application/x-www-form-urlencoded"),
        body: form.as_bytes(),
        ..github.event("github", Some("pull_request"))
    };
    let opened = route(
        Some(&["pull_request"]),
        Some(
            r#"body.payload.action == "opened" && body.payload.repository.full_name == "octo-org/fixtures" && body.payload.number == 42"#,
        ),
    );
    assert_eq!(run(&opened, &event), Ok(true));
    // Read as JSON at the top level, the form has no `action`: missing, no match.
    let top_level = route(None, Some(r#"body.action == "opened""#));
    assert_eq!(run(&top_level, &event), Err(FilterRunError::MissingField));
}

#[test]
fn run_time_type_errors_over_real_headers_and_bodies_do_not_match() {
    let github = Sample::named(GITHUB, "github/valid");
    let event = github.event("github", Some("pull_request"));
    for (filter, expected) in [
        // Headers are strings: compared with a number, the filter fails.
        (r#"headers["x-github-event"] > 5"#, FilterRunError::Failed),
        // A header the sample does not carry.
        (
            r#"headers["x-hub-signature"] == "x""#,
            FilterRunError::MissingField,
        ),
        // An object used as a number.
        ("body.repository + 1 > 0", FilterRunError::Failed),
        // A number where a boolean is needed.
        ("body.number", FilterRunError::NotBoolean),
    ] {
        let target = route(None, Some(filter));
        assert_eq!(run(&target, &event), Err(expected), "{filter}");
        let decision = RoutingDecision::route([("t", &target)], &event);
        assert_eq!(decision.not_routed, ["t"], "{filter}: does not match");
    }
}

/// `BodyPaths` written as nested `(key, paths)` lists.
fn fields(entries: &[(&str, BodyPaths)]) -> BodyPaths {
    BodyPaths::Fields(
        entries
            .iter()
            .map(|(name, paths)| ((*name).to_owned(), paths.clone()))
            .collect(),
    )
}

fn paths_of(source: &str) -> BodyPaths {
    TargetFilter::compile(source)
        .expect("compiles")
        .body_paths()
        .clone()
}

#[test]
fn a_filter_reads_only_the_body_fields_it_selects() {
    use BodyPaths::Whole;
    assert_eq!(paths_of("event.type == 'invoice.paid'"), fields(&[]));
    assert_eq!(
        paths_of(
            "has(body.data.object.amount) && body.data.object.amount > 1000 \
             && body.livemode == false"
        ),
        fields(&[
            ("data", fields(&[("object", fields(&[("amount", Whole)]))])),
            ("livemode", Whole),
        ])
    );
    // A map used as a value, not only selected from, is read whole.
    assert_eq!(
        paths_of("body.data.object.amount > 1 && size(body.data) > 0"),
        fields(&[("data", Whole)])
    );
    assert_eq!(
        paths_of("body.items.exists(item, item.price > 5)"),
        fields(&[("items", Whole)])
    );
    // Any other use of `body` reads all of it.
    assert_eq!(paths_of("size(body) > 2"), Whole);
    assert_eq!(paths_of(r#"body["data"]["object"] != null"#), Whole);
    assert_eq!(paths_of("[body].size() == 1"), Whole);
}

#[test]
fn the_pruned_body_answers_every_filter_as_the_whole_body_does() {
    let stripe = Sample::named(STRIPE, "stripe/valid");
    let github = Sample::named(GITHUB, "github/valid");
    let filters = [
        "body.data.object.amount_paid > 1000",
        "body.data.object.amount_paid > 1000 && body.livemode == false",
        "has(body.data.object.amount) && body.data.object.amount > 1000",
        "body.data.object.amount > 1000",
        r#"body.data.object.amount_paid > "1000""#,
        "body.type.startsWith('invoice.')",
        "body.type.nested == 1",
        "body.data.object.lines.data.exists(line, line.amount > 0)",
        "size(body.data.object) > 3",
        r#"body.ref == "refs/heads/main""#,
        "body.pull_request.user.login == 'octocat' || body.sender.login == 'octocat'",
        "body.repository.owner.id > 0 && body.repository.private == false",
        "body.action in ['opened', 'closed']",
        "has(body.pull_request.merged_at)",
        "size(body) > 2",
    ];
    for (sample, provider, content_types) in [
        (&stripe, "stripe", vec![Some("application/json")]),
        (
            &github,
            "github",
            vec![Some("application/json"), Some("text/plain"), None],
        ),
    ] {
        for content_type in content_types {
            let event = RoutedEvent {
                content_type,
                ..sample.event(provider, None)
            };
            let whole = FilterInput::new(&event, &BodyPaths::Whole).context();
            for source in filters {
                let filter = TargetFilter::compile(source).expect("compiles");
                let pruned = FilterInput::new(&event, filter.body_paths()).context();
                assert_eq!(
                    filter.matches(&pruned),
                    filter.matches(&whole),
                    "{provider} {content_type:?}: {source}"
                );
            }
        }
    }
}
