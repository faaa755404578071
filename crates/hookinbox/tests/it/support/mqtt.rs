//! MQTT for the `mqtt` target's tests: the broker at
//! `HOOKINBOX_TEST_MQTT_URL` (default `mqtt://127.0.0.1:1883`, Mosquitto,
//! started by `.ci/services`), a subscriber that records what reaches it,
//! and a test-local Mosquitto with a configuration of the test's own (an
//! ACL). Each test publishes under a topic prefix of its own, so tests run
//! in parallel. A broker that cannot be reached fails the test: it never
//! skips.

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rumqttc::v5::mqttbytes::v5::Packet;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{AsyncClient, Event, MqttOptions};

use super::LAB_SECRET;

/// The broker the tests use.
pub fn mqtt_url() -> String {
    std::env::var("HOOKINBOX_TEST_MQTT_URL").unwrap_or_else(|_| "mqtt://127.0.0.1:1883".to_owned())
}

/// `host:port` of [`mqtt_url`].
pub fn mqtt_addr() -> String {
    let url = mqtt_url();
    url.strip_prefix("mqtt://")
        .unwrap_or_else(|| panic!("HOOKINBOX_TEST_MQTT_URL must be mqtt://host:port, not {url}"))
        .trim_end_matches('/')
        .to_owned()
}

/// A topic prefix unique to one test.
pub fn unique_prefix() -> String {
    format!("hookinbox-test/{}", uuid::Uuid::now_v7().simple())
}

/// A config whose `lab` endpoint delivers to one mqtt target `devices`
/// publishing to `topic` on `url`; `target_extra` adds target settings,
/// `endpoint_extra` endpoint settings (ordering). Retries come quickly, as
/// in `config_with_nats_target`.
pub fn config_with_mqtt_target(
    db: &Path,
    url: &str,
    topic: &str,
    target_extra: &str,
    endpoint_extra: &str,
) -> String {
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
{endpoint_extra}

[[endpoint.secret]]
version = "v1"
value = "{LAB_SECRET}"

[[endpoint.target]]
name = "devices"
kind = "mqtt"
url = "{url}"
topic = "{topic}"
timeout = "2s"
retry_base = "20ms"
retry_cap = "200ms"
{target_extra}
"#,
        db = db.display()
    )
}

/// One message as the subscriber received it.
#[derive(Debug, Clone)]
pub struct Received {
    pub topic: String,
    pub payload: bytes::Bytes,
    pub user_properties: Vec<(String, String)>,
    pub content_type: Option<String>,
}

impl Received {
    /// The value of one user property, empty when absent.
    pub fn property(&self, name: &str) -> String {
        self.user_properties
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
            .unwrap_or_default()
    }
}

/// An MQTT 5 client subscribed at QoS 1 to a filter on the broker at
/// `addr`, recording every message in arrival order. It subscribes before
/// returning, so every publish after that reaches it.
pub struct Subscriber {
    received: Arc<Mutex<Vec<Received>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Subscriber {
    /// Connects and subscribes; fails the test, saying what to do, when the
    /// broker cannot be reached.
    pub async fn start(addr: &str, filter: &str) -> Subscriber {
        let (host, port) = addr.rsplit_once(':').expect("host:port");
        let port: u16 = port.parse().expect("a port");
        let id = format!("hi-test-{:012x}", rand::random::<u64>() >> 16);
        let mut options = MqttOptions::new(id, host, port);
        options.set_keep_alive(Duration::from_secs(30));
        // As many in flight towards it as MQTT allows: the broker then never
        // holds back (nor, past its queue limit, drops) a burst for it.
        options.set_receive_maximum(Some(u16::MAX));
        // Room for a whole test's messages between two polls.
        let (client, mut event_loop) = AsyncClient::new(options, 64);
        let unreachable = |error: String| -> ! {
            panic!(
                "The MQTT broker is not reachable at {addr} ({error}). The mqtt target's tests \
                 need it: start it (`.ci/services` does, as `.ci/run` runs it) or point \
                 HOOKINBOX_TEST_MQTT_URL at a broker."
            )
        };
        client
            .subscribe(filter, QoS::AtLeastOnce)
            .await
            .expect("queue the subscription");
        let subscribed = async {
            loop {
                match event_loop.poll().await {
                    Ok(Event::Incoming(Packet::SubAck(_))) => return Ok(()),
                    Ok(_) => {}
                    Err(error) => return Err(error.to_string()),
                }
            }
        };
        match tokio::time::timeout(Duration::from_secs(5), subscribed).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => unreachable(error),
            Err(_) => unreachable("no SUBACK within 5 s".into()),
        }
        let received = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&received);
        let task = tokio::spawn(async move {
            let _client = client; // the event loop lives as long as its client
            loop {
                match event_loop.poll().await {
                    Ok(Event::Incoming(Packet::Publish(publish))) => {
                        let properties = publish.properties.unwrap_or_default();
                        sink.lock().unwrap().push(Received {
                            topic: String::from_utf8_lossy(&publish.topic).into_owned(),
                            payload: publish.payload,
                            user_properties: properties.user_properties,
                            content_type: properties.content_type,
                        });
                    }
                    Ok(_) => {}
                    // The test's own broker connection is never cut.
                    Err(error) => panic!("the test's subscriber lost the broker: {error}"),
                }
            }
        });
        Subscriber { received, task }
    }

    /// Everything received so far, in arrival order.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.received.lock().unwrap().len()
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A Mosquitto process of the test's own on a free port of 127.0.0.1,
/// with `extra` appended to its configuration (an `acl_file` line, …).
/// Killed when dropped.
pub struct TestBroker {
    pub addr: SocketAddr,
    child: Child,
    _dir: tempfile::TempDir,
}

impl TestBroker {
    pub async fn start(extra: &str) -> TestBroker {
        let dir = tempfile::tempdir().expect("a directory");
        // A port nobody listens on now; Mosquitto binds it below (another
        // process taking it in between fails the wait, loudly).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let config = dir.path().join("mosquitto.conf");
        std::fs::write(
            &config,
            format!(
                "listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n\
                 log_dest stderr\n{extra}\n"
            ),
        )
        .expect("write mosquitto.conf");
        let child = Command::new("mosquitto")
            .arg("-c")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot run mosquitto ({e}): the mqtt target's tests need it installed")
            });
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("an address");
        let listening = super::eventually(Duration::from_secs(10), || {
            std::net::TcpStream::connect(addr).is_ok()
        })
        .await;
        assert!(listening, "the test's mosquitto did not listen on {addr}");
        TestBroker {
            addr,
            child,
            _dir: dir,
        }
    }

    pub fn url(&self) -> String {
        format!("mqtt://{}", self.addr)
    }
}

impl Drop for TestBroker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
