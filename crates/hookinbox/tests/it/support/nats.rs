//! NATS JetStream for the `nats` target's tests: the server at
//! `HOOKINBOX_TEST_NATS_URL` (default `nats://127.0.0.1:4222`, started with
//! JetStream by `.ci/services`). Each test has a stream of its own, with a
//! unique name and subjects, deleted when the test ends (pass or fail), so
//! tests run in parallel. A server that cannot be reached, or one without
//! JetStream, fails the test — it never skips.

use std::path::Path;
use std::time::Duration;

use async_nats::jetstream::{self, consumer, stream};

use super::LAB_SECRET;

/// The server the tests use.
pub fn nats_url() -> String {
    std::env::var("HOOKINBOX_TEST_NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".to_owned())
}

/// A config whose `lab` endpoint delivers to one nats target `bus`
/// publishing to `subject` on `url`; `target_extra` adds target settings.
/// Retries come quickly, as in `config_with_target`.
pub fn config_with_nats_target(db: &Path, url: &str, subject: &str, target_extra: &str) -> String {
    format!(
        r#"
[storage]
url = "sqlite://{db}"

[encryption]
allow_plaintext = true

[delivery]
poll_interval = "50ms"
lease = "1s"
rescue_interval = "200ms"

[[endpoint]]
id = "lab"
provider = "lab"

[[endpoint.secret]]
version = "v1"
value = "{LAB_SECRET}"

[[endpoint.target]]
name = "bus"
kind = "nats"
url = "{url}"
subject = "{subject}"
timeout = "2s"
retry_base = "20ms"
retry_cap = "200ms"
{target_extra}
"#,
        db = db.display()
    )
}

/// One message as a JetStream consumer received it.
#[derive(Debug, Clone)]
pub struct Consumed {
    pub subject: String,
    pub headers: async_nats::HeaderMap,
    pub payload: bytes::Bytes,
}

impl Consumed {
    pub fn header(&self, name: &str) -> String {
        self.headers
            .get(name)
            .map(|value| value.as_str().to_owned())
            .unwrap_or_default()
    }
}

/// A stream of the test's own: `name`, capturing `subjects()`
/// (`<prefix>.>`). Made by [`TestStream::create`], not by `new`, so a test
/// can deliver to it before it exists.
pub struct TestStream {
    pub name: String,
    /// Unique to this test; every subject of the stream starts with it.
    pub prefix: String,
    pub jetstream: jetstream::Context,
}

impl TestStream {
    /// Connects and picks unique names; fails the test at once, saying what
    /// to do, when the server cannot be reached or has no JetStream.
    pub async fn new() -> TestStream {
        let url = nats_url();
        let unreachable = |error: String| -> ! {
            panic!(
                "NATS with JetStream is not reachable at {url} ({error}). The nats target's \
                 tests need it: start it (`.ci/services` does, as `.ci/run` runs it) or point \
                 HOOKINBOX_TEST_NATS_URL at a server started with -js."
            )
        };
        let client = async_nats::ConnectOptions::new()
            .connection_timeout(Duration::from_secs(5))
            .connect(url.as_str())
            .await
            .unwrap_or_else(|e| unreachable(e.to_string()));
        // The account's JetStream information: answered only where JetStream runs.
        match client.request("$JS.API.INFO", bytes::Bytes::new()).await {
            Ok(answer) if !String::from_utf8_lossy(&answer.payload).contains("\"error\"") => {}
            Ok(answer) => unreachable(format!(
                "JetStream: {}",
                String::from_utf8_lossy(&answer.payload)
            )),
            Err(error) => unreachable(format!("JetStream: {error}")),
        }
        let jetstream = jetstream::new(client);
        let unique = uuid::Uuid::now_v7().simple().to_string();
        TestStream {
            name: format!("HOOKINBOX_TEST_{unique}"),
            prefix: format!("hookinbox-test.{unique}"),
            jetstream,
        }
    }

    /// Creates the stream, deduplicating within `duplicate_window`.
    pub async fn create(&self, duplicate_window: Duration) {
        self.jetstream
            .create_stream(stream::Config {
                name: self.name.clone(),
                subjects: vec![format!("{}.>", self.prefix)],
                duplicate_window,
                ..Default::default()
            })
            .await
            .expect("create the test's stream");
    }

    /// Messages stored in the stream, as the server counts them.
    pub async fn stored(&self) -> u64 {
        let stream = self
            .jetstream
            .get_stream(&self.name)
            .await
            .expect("the stream");
        stream.get_info().await.expect("stream info").state.messages
    }

    /// Every message in the stream, read by a new consumer from the start
    /// (at most `max` of them).
    pub async fn consume_all(&self, max: usize) -> Vec<Consumed> {
        use futures::StreamExt;
        let stream = self
            .jetstream
            .get_stream(&self.name)
            .await
            .expect("the stream");
        let consumer = stream
            .create_consumer(consumer::pull::Config {
                deliver_policy: consumer::DeliverPolicy::All,
                ..Default::default()
            })
            .await
            .expect("create a consumer");
        let mut received = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while received.len() < max && tokio::time::Instant::now() < deadline {
            let mut batch = consumer
                .fetch()
                .max_messages(max - received.len())
                .messages()
                .await
                .expect("fetch");
            let before = received.len();
            while let Some(message) = batch.next().await {
                let message = message.expect("a message");
                received.push(Consumed {
                    subject: message.subject.to_string(),
                    headers: message.headers.clone().unwrap_or_default(),
                    payload: message.payload.clone(),
                });
                message.ack().await.expect("ack");
            }
            if received.len() == before {
                break; // nothing more is stored
            }
        }
        received
    }
}

impl Drop for TestStream {
    /// Deletes the stream (if it was made) from a thread of its own: the
    /// test's runtime may be the one that is panicking.
    fn drop(&mut self) {
        let (url, name) = (nats_url(), self.name.clone());
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime.block_on(async {
                if let Ok(client) = async_nats::connect(url.as_str()).await {
                    let _ = jetstream::new(client).delete_stream(&name).await;
                }
            });
        })
        .join();
    }
}
