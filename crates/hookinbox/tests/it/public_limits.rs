//! The public listener's limits one by one, against the binary over raw TCP
//! where a well-behaved client library would hide what is on the wire:
//! answers that reach clients which write before they read, the pace a
//! body must keep, the in-flight body budget, the connection cap, the
//! per-connection request cap, and the per-client limit that forged
//! requests spend instead of the endpoint's.

use crate::support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use support::*;

fn start(extra: &str) -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let server = Server::start(dir.path(), &config(&db, extra));
    (dir, server)
}

/// A request head for `/hooks/lab` with these extra header lines.
fn head(content_length: usize, extra_headers: &str) -> String {
    format!(
        "POST /hooks/lab HTTP/1.1\r\nHost: hookinbox\r\nContent-Type: application/json\r\n\
         Content-Length: {content_length}\r\n{extra_headers}\r\n"
    )
}

/// Reads one HTTP/1.1 response (head and a Content-Length body) from `stream`.
fn read_response(stream: &mut TcpStream) -> std::io::Result<(u16, String, String)> {
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut buffer)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        seen.extend_from_slice(&buffer[..n]);
        if let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
    };
    let head = String::from_utf8_lossy(&seen[..head_end]).into_owned();
    let status = head[9..12].parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap())
        })
        .unwrap_or(0);
    while seen.len() < head_end + length {
        let n = stream.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buffer[..n]);
    }
    let body = String::from_utf8_lossy(&seen[head_end..]).into_owned();
    Ok((status, head, body))
}

fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_writes_the_whole_body_before_reading_gets_its_413() {
    let (_dir, server) = start("");
    let addr = server.addr;
    let answers = tokio::task::spawn_blocking(move || {
        let body = vec![b'x'; 5 * 1024 * 1024];
        (0..20)
            .map(|_| {
                // As Python's http.client and many SDKs do: all of it, then read.
                let mut stream = connect(addr);
                stream.write_all(head(body.len(), "").as_bytes())?;
                stream.write_all(&body)?;
                read_response(&mut stream)
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    for answer in answers {
        let (status, head, body) = answer.expect("the answer arrives, not a reset");
        assert_eq!(status, 413);
        assert_eq!(body, "{\"accepted\":false,\"error\":\"too_large\"}\n");
        assert!(
            head.to_ascii_lowercase().contains("connection: close"),
            "{head}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_stalls_is_answered_408_at_its_pace_deadline() {
    let (dir, server) =
        start("[server]\nbody_rate_grace = \"300ms\"\nmin_body_bytes_per_second = 1000\n");
    let addr = server.addr;
    let (answer, waited) = tokio::task::spawn_blocking(move || {
        let mut stream = connect(addr);
        stream.write_all(head(1_000, "").as_bytes()).unwrap();
        // Ten bytes of a thousand, then nothing.
        stream.write_all(b"{\"id\":\"sl").unwrap();
        let started = Instant::now();
        (read_response(&mut stream), started.elapsed())
    })
    .await
    .unwrap();
    let (status, _, body) = answer.unwrap();
    assert_eq!(
        (status, body.as_str()),
        (408, "{\"accepted\":false,\"error\":\"timeout\"}\n")
    );
    // The grace period plus what ten bytes earn at 1,000 B/s (310 ms).
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    assert!(inbox_rows(&dir.path().join("inbox.db")).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_body_budget_answers_503_until_it_is_given_back() {
    // Room for one 16 KiB buffer and a little more; slow bodies may wait
    // a minute, so the holder below holds until it is closed.
    let (_dir, server) = start(
        "[server]\nmax_inflight_body_bytes = 20480\nbody_rate_grace = \"60s\"\nbody_read_timeout = \"60s\"\n\n[admin]\nlisten = \"127.0.0.1:0\"\n",
    );
    let admin = server.admin_address().await;
    // A body that declares 16 KiB, sends one byte and waits: it holds 16 KiB,
    // as the in-flight gauge shows.
    let mut holder = connect(server.addr);
    holder.write_all(head(16 * 1024, "").as_bytes()).unwrap();
    holder.write_all(b"{").unwrap();
    let mut held = None;
    for _ in 0..250 {
        held = metric_value(admin, "hookinbox_inflight_body_bytes").await;
        if held == Some(16_384.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(held, Some(16_384.0), "the holder's buffer is not in flight");
    let client = client();
    let url = server.url("/hooks/lab");
    let big = lab_signed(
        format!(r#"{{"id":"evt_budget","pad":"{}"}}"#, "x".repeat(8 * 1024)),
        now(),
    );
    let refused = post(&client, &url, &big).await;
    assert_eq!(refused.status, 503, "{refused:?}");
    assert_eq!(refused.error(), "unavailable");
    assert_eq!(refused.headers["retry-after"], "1");
    // Closing the holder gives its 16 KiB back.
    drop(holder);
    let accepted = post_until(&client, &url, &big, |answer| answer.status == 200).await;
    assert_eq!(
        accepted.status, 200,
        "the budget was not given back: {accepted:?}"
    );
}

/// Posts `signed` every 20 ms, for at most 5 s, until `done` holds; the last answer.
async fn post_until(
    client: &HttpClient,
    url: &str,
    signed: &Signed,
    done: impl Fn(&Answer) -> bool,
) -> Answer {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let answer = post(client, url, signed).await;
        if done(&answer) || Instant::now() > deadline {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_at_its_cap_closes_idle_connections_to_serve_a_provider() {
    let (_dir, server) = start("[server]\nmax_connections = 20\n");
    let idle: Vec<TcpStream> = (0..20).map(|_| connect(server.addr)).collect();
    let started = Instant::now();
    let answer = post(&client(), &server.url("/hooks/lab"), &lab_event("evt_cap")).await;
    assert_eq!(answer.status, 200);
    // Well before the idle connections' own 10 s header timeout.
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let closed = idle
        .into_iter()
        .filter(|stream| {
            let mut stream = stream;
            stream
                .set_read_timeout(Some(Duration::from_millis(500)))
                .unwrap();
            matches!(stream.read(&mut [0u8; 1]), Ok(0))
        })
        .count();
    assert!(closed >= 1, "no idle connection was asked to close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keep_alive_connection_closes_after_its_last_allowed_request() {
    let (_dir, server) = start("[server]\nmax_requests_per_connection = 3\n");
    let addr = server.addr;
    let heads = tokio::task::spawn_blocking(move || {
        let mut stream = connect(addr);
        let mut heads = Vec::new();
        for n in 0..3 {
            let event = lab_event(&format!("evt_ka_{n}"));
            let mut request = head(event.body.len(), "");
            for (name, value) in &event.headers {
                if name != "content-type" {
                    request.insert_str(request.len() - 2, &format!("{name}: {value}\r\n"));
                }
            }
            stream.write_all(request.as_bytes()).unwrap();
            stream.write_all(&event.body).unwrap();
            let (status, head, _) = read_response(&mut stream).unwrap();
            heads.push((status, head.to_ascii_lowercase()));
        }
        // The server closed after the third answer.
        let after = stream.read(&mut [0u8; 1]);
        (heads, after.ok())
    })
    .await
    .unwrap();
    let (heads, after) = heads;
    assert!(heads.iter().all(|(status, _)| *status == 200), "{heads:?}");
    assert!(!heads[1].1.contains("connection: close"));
    assert!(heads[2].1.contains("connection: close"), "{}", heads[2].1);
    assert_eq!(after, Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_requests_spend_their_clients_limit_not_the_endpoints() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("inbox.db");
    let text = format!(
        r#"
[server]
trusted_proxies = ["127.0.0.1"]
unverified_rate_limit = {{ per_second = 1, burst = 100 }}

[storage]
url = "sqlite://{db}"

[encryption]
allow_plaintext = true

[[endpoint]]
id = "lab"
provider = "lab"
rate_limit = {{ per_second = 1, burst = 2 }}

[[endpoint.secret]]
version = "v1"
value = "{LAB_SECRET}"
"#,
        db = db.display()
    );
    let server = Server::start(dir.path(), &text);
    let client = client();
    let url = server.url("/hooks/lab");
    let from = |signed: &Signed, address: &str| {
        let mut signed = signed.clone();
        signed
            .headers
            .push(("x-forwarded-for".into(), address.into()));
        signed
    };
    let mut forged = lab_event("evt_forged");
    forged.headers.retain(|(n, _)| n != "x-signature");
    forged.headers.push(("x-signature".into(), "00".repeat(32)));
    let forged = from(&forged, "203.0.113.7");

    let mut answers = std::collections::BTreeMap::<(u16, String), usize>::new();
    let started = Instant::now();
    for _ in 0..1_000 {
        let answer = post(&client, &url, &forged).await;
        if answer.status == 429 {
            assert!(answer.headers.contains_key("retry-after"));
        }
        *answers.entry((answer.status, answer.error())).or_default() += 1;
    }
    // The attacker's own burst went to 401s; the rest were turned away
    // unread. The refill of one a second lets a few more through: up to ten
    // on a quick run (as before), and one more per second the flood took,
    // since a loaded machine stretches it past ten seconds.
    let refilled = 10 + started.elapsed().as_secs() as usize;
    let unauthorized = answers
        .get(&(401, "signature".into()))
        .copied()
        .unwrap_or(0);
    let limited = answers
        .get(&(429, "rate_limited".into()))
        .copied()
        .unwrap_or(0);
    assert!(
        (100..=100 + refilled).contains(&unauthorized),
        "{answers:?} in {:?}",
        started.elapsed()
    );
    assert_eq!(unauthorized + limited, 1_000, "{answers:?}");

    // A provider at another address still has the endpoint's whole burst…
    for n in 0..2 {
        let signed = from(&lab_event(&format!("evt_real_{n}")), "198.51.100.1");
        assert_eq!(post(&client, &url, &signed).await.status, 200);
    }
    // …and meets the endpoint's own limit (one a second) right after it.
    let mut accepted = 2;
    let mut limited = 0;
    for n in 2..6 {
        let signed = from(&lab_event(&format!("evt_real_{n}")), "198.51.100.1");
        let answer = post(&client, &url, &signed).await;
        match (answer.status, answer.error().as_str()) {
            (200, _) => accepted += 1,
            (429, "rate_limited") => limited += 1,
            other => panic!("{other:?}"),
        }
    }
    assert!(limited >= 1, "the endpoint's limit never applied");
    assert_eq!(inbox_rows(&db).len(), accepted);
}
