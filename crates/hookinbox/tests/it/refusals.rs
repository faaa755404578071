//! Refusals against the binary, as a browser or a scanner would meet them
//! (issue #18, parts 4 and 5):
//! - the admin listener refuses every change from another site (a foreign
//!   or `null` `Origin`, `Sec-Fetch-Site` other than `same-origin`, a
//!   form's media type on an API route) on every route that changes
//!   something, with or without a token, and changes nothing; the same
//!   requests from curl (no `Origin`) and the dashboard's own forms work;
//! - every refusal of the admin listener (401, 421, 404, 405, 403, 415)
//!   is its JSON error shape;
//! - on the public port a path that names no endpoint (`/hooks/%FF`, a
//!   path outside `/hooks`) is the contract's JSON 404, charged to the
//!   client's refusal limit (so a flood of them ends in 429), and a
//!   client that writes its whole body first still reads the answer.

use crate::support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{json, Value};
use support::*;

const TOKEN: &str = "admin-t0ken-for-refusal-tests";

/// A `serve` with an admin listener (with `token`, or none) and one `lab`
/// endpoint delivering to `sink`.
struct Running {
    _dir: tempfile::TempDir,
    server: Server,
    admin: SocketAddr,
    token: Option<&'static str>,
    client: HttpClient,
}

impl Running {
    async fn start(token: Option<&'static str>, sink: &Sink, extra: &str) -> Running {
        let dir = tempfile::tempdir().unwrap();
        let admin_table = match token {
            Some(token) => support::admin_table(token),
            None => "[admin]\nlisten = \"127.0.0.1:0\"\n".to_owned(),
        };
        let config = TestConfig::new(&dir.path().join("inbox.db"))
            .http_target(&sink.url(), "")
            .extra(&format!("{admin_table}\n{extra}"));
        let server = Server::start(dir.path(), &config.to_string());
        let admin = server.admin_address().await;
        Running {
            _dir: dir,
            server,
            admin,
            token,
            client: client(),
        }
    }

    /// Sends a request to the admin listener with these headers (and the
    /// token, when `with_token` and one is configured).
    async fn admin(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
        with_token: bool,
    ) -> Answer {
        let mut sent: Vec<(String, String)> = headers
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        if let (true, Some(token)) = (with_token, self.token) {
            sent.push(("authorization".into(), format!("Bearer {token}")));
        }
        let url = format!("http://{}{path}", self.admin);
        let signed = Signed {
            headers: sent,
            body: Bytes::from(body.to_owned()),
        };
        send(&self.client, method, &url, &signed)
            .await
            .unwrap_or_else(|error| panic!("{method} {path}: {error}"))
    }

    /// An admin API GET with the token; its JSON.
    async fn api_get(&self, path: &str) -> Value {
        let answer = self.admin("GET", path, &[], "", true).await;
        assert_eq!(answer.status, 200, "{path}: {:?}", answer.body);
        answer.json()
    }

    /// This listener's own origin, as a browser on its pages sends it.
    fn origin(&self) -> String {
        format!("http://{}", self.admin)
    }

    /// Accepts one lab event and waits until its delivery succeeded; its
    /// inbox id.
    async fn delivered_event(&self, event_id: &str) -> String {
        let answer = post(
            &self.client,
            &self.server.url("/hooks/lab"),
            &lab_event(event_id),
        )
        .await;
        assert_eq!(answer.status, 200, "{:?}", answer.body);
        let id = answer.json()["id"].as_str().unwrap().to_owned();
        self.wait_processed(&id).await;
        id
    }

    /// Waits until every delivery of the event succeeded (a replay skips
    /// an event with one still open).
    async fn wait_processed(&self, id: &str) {
        let processed = until(Duration::from_secs(30), || async {
            self.api_get(&format!("/admin/events/{id}")).await["status"] == "PROCESSED"
        })
        .await;
        assert!(processed, "the event was delivered");
    }

    /// How many times the key rings were reloaded, by the log.
    fn reloads(&self) -> usize {
        self.server.logs().matches("Secrets reloaded.").count()
    }

    /// How many deliveries the event has: a replay adds one.
    async fn deliveries(&self, id: &str) -> usize {
        self.api_get(&format!("/admin/events/{id}")).await["deliveries"]
            .as_array()
            .expect("a deliveries list")
            .len()
    }
}

/// Every route of the admin listener that changes something, `{id}` filled
/// in: the API's from its OpenAPI document (so a new one is covered here
/// without a change), and those outside it, as `admin::router` and
/// `admin::dashboard::router` declare them. Whether each is an API route.
async fn changing_routes(running: &Running, id: &str) -> Vec<(String, bool)> {
    let document = running.api_get("/admin/openapi.json").await;
    let mut routes = Vec::new();
    for (path, operations) in document["paths"].as_object().expect("paths") {
        for method in ["post", "put", "patch", "delete"] {
            if operations.get(method).is_some() {
                assert_eq!(method, "post", "{path}: the requests below are POSTs");
                let path = path
                    .replace("{id}", id)
                    .replace("{endpoint}", "lab")
                    .replace("{target}", "sink");
                routes.push((path, true));
            }
        }
    }
    assert_eq!(
        routes.len(),
        4,
        "the API's replays and target pause and resume: {routes:?} (a new route: check it is covered)"
    );
    routes.push(("/admin/keys/reload".to_owned(), true));
    for page in [
        "/ui/login",
        "/ui/logout",
        "/ui/replay",
        &format!("/ui/events/{id}/replay"),
        "/ui/targets/pause",
        "/ui/targets/resume",
    ] {
        routes.push((page.to_owned(), false));
    }
    routes
}

/// A request a page on another site can make a browser send.
struct FromAnotherSite<'a> {
    headers: Vec<(&'a str, &'a str)>,
    body: &'static str,
    /// The answer on an API route; on the dashboard's, 403.
    api_status: u16,
}

/// POSTs every changing route as a page on another site could make a
/// browser send it (and with the token, where one is configured: a token
/// does not excuse a cross-site request); each is refused, and nothing
/// was replayed.
async fn cross_site_changes_are_refused(running: &Running) {
    let id = running.delivered_event("evt_cross_site").await;
    let reloads = running.reloads();
    let other_local_port = format!("http://127.0.0.1:{}", running.admin.port().wrapping_add(1));
    let form = ("content-type", "application/x-www-form-urlencoded");
    let json_body = ("content-type", "application/json");
    let sent_by_other_sites = [
        FromAnotherSite {
            headers: vec![("origin", "http://evil.example"), form],
            body: "status=failed&csrf=x",
            api_status: 403,
        },
        FromAnotherSite {
            headers: vec![
                ("origin", "null"),
                ("sec-fetch-site", "cross-site"),
                ("content-type", "text/plain"),
            ],
            body: "{}",
            api_status: 403,
        },
        FromAnotherSite {
            headers: vec![("sec-fetch-site", "same-site"), json_body],
            body: "{}",
            api_status: 403,
        },
        FromAnotherSite {
            headers: vec![("origin", other_local_port.as_str()), json_body],
            body: "{}",
            api_status: 403,
        },
        // A browser that sends neither header still sends a form.
        FromAnotherSite {
            headers: vec![("content-type", "multipart/form-data; boundary=b")],
            body: "--b--\r\n",
            api_status: 415,
        },
    ];
    for (path, api) in changing_routes(running, &id).await {
        for FromAnotherSite {
            headers,
            body,
            api_status,
        } in &sent_by_other_sites
        {
            if !api && *api_status == 415 {
                continue; // the dashboard's forms are form-encoded
            }
            for with_token in [false, true] {
                let answer = running
                    .admin("POST", &path, headers, body, with_token)
                    .await;
                let what = format!("POST {path} {headers:?} token: {with_token}");
                let expected = if api { *api_status } else { 403 };
                assert_eq!(answer.status, expected, "{what}: {:?}", answer.body);
                if api {
                    let code = if expected == 403 {
                        "cross_site"
                    } else {
                        "content_type"
                    };
                    assert_eq!(answer.json()["error"], code, "{what}");
                    assert!(answer.json()["message"].is_string(), "{what}");
                }
            }
        }
    }
    assert_eq!(running.deliveries(&id).await, 1, "nothing was replayed");
    assert_eq!(running.reloads(), reloads, "nothing was reloaded");
    let targets = running.api_get("/admin/targets").await;
    assert_eq!(targets["targets"][0]["target"], "sink", "{targets}");
    assert_eq!(
        targets["targets"][0]["state"], "closed",
        "nothing was paused: {targets}"
    );
}

/// The same routes from clients that are not browsers (no `Origin`, no
/// `Sec-Fetch-Site`, as curl and `hookinbox keys` send them) and from
/// the listener's own pages still work.
async fn curl_and_the_listeners_own_pages_still_work(running: &Running) {
    let id = running.delivered_event("evt_from_curl").await;
    let reload = running
        .admin("POST", "/admin/keys/reload", &[], "", true)
        .await;
    assert_eq!(reload.status, 200, "{:?}", reload.body);
    assert_eq!(reload.json()["reloaded"], json!(["lab"]));
    assert_eq!(running.reloads(), 1);

    let replay = format!("/admin/events/{id}/replay");
    let one = running.admin("POST", &replay, &[], "", true).await;
    assert_eq!(one.status, 200, "{:?}", one.body);
    assert_eq!(one.json()["replayed"], 1);
    assert_eq!(running.deliveries(&id).await, 2);
    running.wait_processed(&id).await;

    // A same-origin `fetch` with JSON, as a script on the listener's own
    // pages would send it.
    let origin = running.origin();
    let own = [
        ("origin", origin.as_str()),
        ("sec-fetch-site", "same-origin"),
        ("content-type", "application/json"),
    ];
    let filter = json!({"filter": {"event_id": "evt_from_curl"}, "dry_run": true}).to_string();
    let dry = running
        .admin("POST", "/admin/replay", &own, &filter, true)
        .await;
    assert_eq!(dry.status, 200, "{:?}", dry.body);
    assert_eq!(dry.json()["matched"], 1);

    // The dashboard, as Chromium sends its forms: sign in, replay, sign out.
    let browser_form = [
        ("origin", origin.as_str()),
        ("sec-fetch-site", "same-origin"),
        ("content-type", "application/x-www-form-urlencoded"),
    ];
    let sign_in = running
        .admin(
            "POST",
            "/ui/login",
            &browser_form,
            &format!("token={}", running.token.unwrap_or("")),
            false,
        )
        .await;
    assert_eq!(sign_in.status, 303, "{:?}", sign_in.body);
    let cookie = sign_in.headers["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let confirm = running
        .admin(
            "GET",
            &format!("/ui/events/{id}/replay"),
            &[("cookie", &cookie), ("sec-fetch-site", "same-origin")],
            "",
            false,
        )
        .await;
    assert_eq!(confirm.status, 200);
    let page = String::from_utf8_lossy(&confirm.body);
    let csrf = page
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("a CSRF field in {page}"))
        .to_owned();
    let signed_in: Vec<(&str, &str)> = browser_form
        .iter()
        .copied()
        .chain([("cookie", cookie.as_str())])
        .collect();
    let replayed = running
        .admin(
            "POST",
            &format!("/ui/events/{id}/replay"),
            &signed_in,
            &format!("csrf={csrf}"),
            false,
        )
        .await;
    assert_eq!(replayed.status, 303, "{:?}", replayed.body);
    assert_eq!(running.deliveries(&id).await, 3);
    let out = running
        .admin(
            "POST",
            "/ui/logout",
            &signed_in,
            &format!("csrf={csrf}"),
            false,
        )
        .await;
    assert_eq!(out.status, 303, "{:?}", out.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_token_cross_site_changes_are_refused_and_curl_still_works() {
    let sink = Sink::start().await;
    let running = Running::start(None, &sink, "").await;
    cross_site_changes_are_refused(&running).await;
    curl_and_the_listeners_own_pages_still_work(&running).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_token_cross_site_changes_are_refused_and_curl_still_works() {
    let sink = Sink::start().await;
    let running = Running::start(Some(TOKEN), &sink, "").await;
    cross_site_changes_are_refused(&running).await;
    curl_and_the_listeners_own_pages_still_work(&running).await;
}

/// A request the admin listener refuses, and its answer.
struct Refused<'a> {
    method: &'static str,
    path: &'static str,
    headers: Vec<(&'static str, &'a str)>,
    with_token: bool,
    status: u16,
    error: &'static str,
}

impl<'a> Refused<'a> {
    fn new(method: &'static str, path: &'static str, status: u16, error: &'static str) -> Self {
        Refused {
            method,
            path,
            headers: Vec::new(),
            with_token: true,
            status,
            error,
        }
    }

    fn without_token(self) -> Self {
        Refused {
            with_token: false,
            ..self
        }
    }

    fn host(mut self, host: &'a str) -> Self {
        self.headers.push(("host", host));
        self
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refusal_of_the_admin_listener_is_its_json_error() {
    let sink = Sink::start().await;
    let running = Running::start(Some(TOKEN), &sink, "").await;
    let port = running.admin.port();
    let misdirected = format!("evil.example:{port}");
    let cases = [
        Refused::new("GET", "/admin/events", 401, "unauthorized").without_token(),
        Refused::new("GET", "/metrics", 401, "unauthorized").without_token(),
        Refused::new("GET", "/admin/events", 421, "misdirected").host(&misdirected),
        Refused::new("GET", "/admin/nowhere", 404, "not_found"),
        Refused::new("PUT", "/admin/events", 405, "method"),
        Refused::new("POST", "/metrics", 405, "method"),
    ];
    for Refused {
        method,
        path,
        headers,
        with_token,
        status,
        error,
    } in cases
    {
        let answer = running.admin(method, path, &headers, "", with_token).await;
        let what = format!("{method} {path} {headers:?}");
        assert_eq!(answer.status, status, "{what}: {:?}", answer.body);
        assert_eq!(answer.headers["content-type"], "application/json", "{what}");
        let body = answer.json();
        assert_eq!(body["error"], error, "{what}: {body}");
        assert!(body["message"].is_string(), "{what}: {body}");
        if status == 401 {
            assert_eq!(answer.headers["www-authenticate"], "Bearer", "{what}");
        }
    }
}

/// Sends `head` and then all of `body` before reading, as Python's
/// `http.client` and many SDKs do; the status, the head and the body of
/// the answer (an error when the connection was reset instead).
fn write_all_then_read(
    addr: SocketAddr,
    head: &str,
    body: &[u8],
) -> std::io::Result<(u16, String, String)> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(20)))?;
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    let mut seen = Vec::new();
    stream.read_to_end(&mut seen)?;
    let text = String::from_utf8_lossy(&seen).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    Ok((status, head.to_owned(), body.to_owned()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_that_names_no_endpoint_is_answered_after_the_body_is_drained() {
    let sink = Sink::start().await;
    let running = Running::start(None, &sink, "").await;
    let addr = running.server.addr;
    let body = vec![b'x'; 4 * 1024 * 1024];
    for (path, status, error) in [
        ("/hooks/%FF", 404, "not_found"),
        ("/hooks/%C3%28", 404, "not_found"),
        ("/elsewhere", 404, "not_found"),
        ("/healthz", 405, "method"),
    ] {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: hookinbox\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n",
            body.len()
        );
        let body = body.clone();
        let answer = tokio::task::spawn_blocking(move || write_all_then_read(addr, &head, &body))
            .await
            .unwrap();
        let (got, head, text) =
            answer.unwrap_or_else(|e| panic!("{path}: the answer, not a reset: {e}"));
        assert_eq!(got, status, "{path}: {head}");
        assert_eq!(
            text,
            format!("{{\"accepted\":false,\"error\":\"{error}\"}}\n"),
            "{path}"
        );
        assert!(
            head.to_ascii_lowercase().contains("connection: close"),
            "{path}: {head}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_non_utf8_endpoint_ids_is_charged_to_the_client_until_429() {
    const BURST: usize = 200;
    let sink = Sink::start().await;
    // One refusal a second refills, so however slowly this machine sends
    // the 300, the burst is spent long before they are.
    let limit =
        format!("[server]\nunverified_rate_limit = {{ per_second = 1, burst = {BURST} }}\n");
    let running = Running::start(None, &sink, &limit).await;
    let url = running.server.url("/hooks/%FF");
    let started = Instant::now();
    let mut answers = Vec::new();
    for _ in 0..300 {
        let answer = post(&running.client, &url, &lab_event("evt_junk")).await;
        answers.push((answer.status, answer.error(), answer.headers));
    }
    let refilled = started.elapsed().as_secs() as usize + 1;
    let not_found = answers.iter().filter(|(s, _, _)| *s == 404).count();
    for (n, (status, error, headers)) in answers.iter().enumerate() {
        match status {
            404 => assert_eq!(error, "not_found", "answer {n}"),
            429 => {
                assert_eq!(error, "rate_limited", "answer {n}");
                assert!(headers.contains_key("retry-after"), "answer {n}");
            }
            other => panic!("answer {n}: {other} {error}"),
        }
    }
    assert!(
        answers[..BURST].iter().all(|(s, _, _)| *s == 404),
        "the burst is spent on 404s first"
    );
    // A request is admitted before it is charged, so the one whose charge
    // finds the bucket empty is still answered 404; after that, each
    // refilled refusal admits one more 404, and the next one finds the
    // bucket empty again: at most two 404s per refill.
    assert!(
        not_found <= BURST + 1 + 2 * refilled,
        "{not_found} answered 404 in {refilled} s: the rest were 429"
    );
}
