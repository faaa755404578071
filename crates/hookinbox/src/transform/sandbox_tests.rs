use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::transform::webhook::TransformedRequest;

fn input(payload: serde_json::Value) -> WebhookInput {
    WebhookInput {
        url: "http://127.0.0.1:9/orders".into(),
        payload,
        content_type: Some("application/json".into()),
        event_type: Some("invoice.paid".into()),
        event_id: "evt_1".into(),
        inbox_id: "01JINBOX".into(),
        provider: "stripe".into(),
        endpoint: "stripe".into(),
        received_at_ms: 1_700_000_000_123,
    }
}

fn limits(time_ms: u64) -> Limits {
    Limits {
        memory_bytes: 32 * 1024 * 1024,
        time: Duration::from_millis(time_ms),
    }
}

fn sent(outcome: TransformOutcome) -> TransformedRequest {
    match outcome {
        TransformOutcome::Send(request) => request,
        TransformOutcome::Cancel => panic!("cancelled"),
    }
}

#[test]
fn a_svix_style_script_renames_fields_and_sets_a_header() {
    let sandbox = Sandbox::compile(
        r#"
        function handler(webhook) {
          webhook.payload = { kind: webhook.eventType, total: webhook.payload.data.amount };
          webhook.headers["X-Team"] = "billing";
          webhook.method = "PUT";
          return webhook;
        }"#,
        "rename.js",
        limits(1_000),
    )
    .unwrap();
    let request = sent(
        sandbox
            .run(&input(json!({"data": {"amount": 1200}})))
            .unwrap(),
    );
    assert_eq!(request.method, hyper::Method::PUT);
    assert_eq!(request.url, None);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&request.body).unwrap(),
        json!({"kind": "invoice.paid", "total": 1200})
    );
    assert_eq!(request.content_type.as_deref(), Some("application/json"));
    assert_eq!(request.headers.len(), 1);
    assert_eq!(request.headers[0].0.as_str(), "x-team");
    assert_eq!(request.headers[0].1, "billing");
}

#[test]
fn cancel_true_sends_nothing() {
    let sandbox = Sandbox::compile(
        "function handler(webhook) { webhook.cancel = webhook.payload.skip; return webhook; }",
        "cancel.js",
        limits(1_000),
    )
    .unwrap();
    assert_eq!(
        sandbox.run(&input(json!({"skip": true}))).unwrap(),
        TransformOutcome::Cancel
    );
    assert!(matches!(
        sandbox.run(&input(json!({"skip": false}))).unwrap(),
        TransformOutcome::Send(_)
    ));
}

#[test]
fn a_script_that_loops_forever_is_stopped_at_its_time_limit_and_the_next_call_runs() {
    let sandbox = Sandbox::compile(
        "function handler(webhook) { if (webhook.payload.spin) { while (true) {} } return webhook; }",
        "spin.js",
        limits(200),
    )
    .unwrap();
    let started = Instant::now();
    let error = sandbox.run(&input(json!({"spin": true}))).unwrap_err();
    let took = started.elapsed();
    assert_eq!(error, TransformError::TimeLimit { limit_ms: 200 });
    assert!(took >= Duration::from_millis(200), "{took:?}");
    assert!(took < Duration::from_secs(2), "stopped only after {took:?}");
    assert!(sandbox.run(&input(json!({"spin": false}))).is_ok());
}

#[test]
fn a_script_that_allocates_a_gibibyte_is_stopped_at_its_memory_limit() {
    for (name, body) in [
        (
            "chunks.js",
            "const kept = []; for (let i = 0; i < 1024; i++) { kept.push(new Array(1024 * 128).fill(i)); } return kept.length;",
        ),
        ("buffer.js", "return new ArrayBuffer(1024 * 1024 * 1024).byteLength;"),
        ("string.js", "let s = 'x'; while (true) { s = s + s; }"),
    ] {
        let sandbox = Sandbox::compile(
            &format!("function handler(webhook) {{ {body} }}"),
            name,
            limits(5_000),
        )
        .unwrap();
        let error = sandbox.run(&input(json!({}))).unwrap_err();
        assert!(
            matches!(error, TransformError::MemoryLimit { limit_mib: 32 })
                // The engine's own length limits (a string past 2^30
                // characters, an array past 2^32 elements) stop some first.
                || matches!(&error, TransformError::Thrown { name, .. } if name == "RangeError" || name == "InternalError"),
            "{name}: {error:?}"
        );
        assert!(sandbox.memory_used() < 32 * 1024 * 1024, "{name}");
    }
}

#[test]
fn an_error_names_its_type_and_line_but_never_the_payload() {
    let sandbox = Sandbox::compile(
        "function handler(webhook) {\n  const secret = webhook.payload.card;\n  throw new TypeError('bad card ' + secret);\n}",
        "throws.js",
        limits(1_000),
    )
    .unwrap();
    let error = sandbox
        .run(&input(json!({"card": "4242-SECRET"})))
        .unwrap_err();
    assert_eq!(error.to_string(), "the handler threw TypeError at line 3");
    assert!(error.detail().contains("4242-SECRET"), "{}", error.detail());
    let named = Sandbox::compile(
        "function handler(webhook) { const e = new Error('x'); e.name = webhook.payload.card; throw e; }",
        "named.js",
        limits(1_000),
    )
    .unwrap();
    let error = named
        .run(&input(json!({"card": "4242-SECRET"})))
        .unwrap_err();
    assert!(!error.to_string().contains("4242"), "{error}");
    let thrown_text = Sandbox::compile(
        "function handler(webhook) { throw webhook.payload.card; }",
        "text.js",
        limits(1_000),
    )
    .unwrap();
    let error = thrown_text
        .run(&input(json!({"card": "4242-SECRET"})))
        .unwrap_err();
    assert!(!error.to_string().contains("4242"), "{error}");
}

#[test]
fn the_clock_is_the_events_received_time_and_random_repeats() {
    let sandbox = Sandbox::compile(
        "function handler(w) { w.payload = { now: Date.now(), date: new Date().getTime(), r: Math.random(), iso: new Date(0).toISOString() }; return w; }",
        "clock.js",
        limits(1_000),
    )
    .unwrap();
    let first = sent(sandbox.run(&input(json!({}))).unwrap());
    let again = sent(sandbox.run(&input(json!({}))).unwrap());
    let body: serde_json::Value = serde_json::from_slice(&first.body).unwrap();
    assert_eq!(body["now"], 1_700_000_000_123_i64);
    assert_eq!(body["date"], 1_700_000_000_123_i64);
    assert_eq!(body["iso"], "1970-01-01T00:00:00.000Z");
    assert_eq!(
        first.body, again.body,
        "the same event computes the same request"
    );
}

#[test]
fn the_sandbox_has_no_io() {
    let sandbox = Sandbox::compile(
        "function handler(w) { w.payload = [typeof fetch, typeof require, typeof std, typeof os, typeof XMLHttpRequest, typeof process]; return w; }",
        "io.js",
        limits(1_000),
    )
    .unwrap();
    let request = sent(sandbox.run(&input(json!({}))).unwrap());
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&request.body).unwrap(),
        json!([
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined"
        ])
    );
    let import = Sandbox::compile(
        "async function handler(w) { await import('std'); return w; }",
        "import.js",
        limits(1_000),
    )
    .unwrap();
    assert!(import.run(&input(json!({}))).is_err());
}

#[test]
fn scripts_that_cannot_serve_are_refused_when_loaded() {
    let error = Sandbox::compile(
        "function handler(w) {\n  return w.;\n}",
        "syntax.js",
        limits(1_000),
    )
    .unwrap_err();
    assert!(
        matches!(&error, TransformError::Compile(text) if text.contains("SyntaxError") && text.contains("line 2")),
        "{error:?}"
    );
    assert_eq!(
        Sandbox::compile(
            "function transform(w) { return w; }",
            "none.js",
            limits(1_000)
        )
        .unwrap_err(),
        TransformError::NoHandler
    );
    assert_eq!(
        Sandbox::compile(
            "while (true) {}\nfunction handler(w) { return w; }",
            "top.js",
            limits(100)
        )
        .unwrap_err(),
        TransformError::TimeLimit { limit_ms: 100 }
    );
}

#[test]
fn results_hookinbox_cannot_send_are_errors() {
    for (script, expected) in [
        (
            "function handler(w) { w.headers['Webhook-Signature'] = 'v1,forged'; return w; }",
            "sets a header hookinbox sets itself",
        ),
        (
            "function handler(w) { w.headers['Idempotency-Key'] = 'other'; return w; }",
            "sets a header hookinbox sets itself",
        ),
        (
            "function handler(w) { w.method = 'DELETE'; return w; }",
            "method other than POST or PUT",
        ),
        (
            "function handler(w) { delete w.payload; return w; }",
            "has no payload",
        ),
        ("function handler(w) { }", "is not an object"),
    ] {
        let sandbox = Sandbox::compile(script, "bad.js", limits(1_000)).unwrap();
        let error = sandbox.run(&input(json!({"a": 1}))).unwrap_err();
        assert!(error.to_string().contains(expected), "{script}: {error}");
    }
}

#[test]
fn a_string_payload_is_sent_as_is_with_the_stored_content_type() {
    let sandbox = Sandbox::compile(
        "function handler(w) { w.payload = 'a=1&b=2'; return w; }",
        "text.js",
        limits(1_000),
    )
    .unwrap();
    let mut form = input(json!({}));
    form.content_type = Some("application/x-www-form-urlencoded".into());
    let request = sent(sandbox.run(&form).unwrap());
    assert_eq!(&request.body[..], b"a=1&b=2");
    assert_eq!(
        request.content_type.as_deref(),
        Some("application/x-www-form-urlencoded")
    );
}

#[test]
fn a_form_body_is_the_scripts_decoded_fields() {
    let payload = WebhookInput::payload_of(
        Some("application/x-www-form-urlencoded"),
        b"payload=%7B%22ref%22%3A%22refs%2Fheads%2Fmain%22%7D",
    );
    assert_eq!(payload, json!({"payload": {"ref": "refs/heads/main"}}));
    assert_eq!(
        WebhookInput::payload_of(Some("text/plain"), b"hello"),
        json!("hello")
    );
}
