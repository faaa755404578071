//! Black-box test support: start the real `hookinbox` binary on a free port
//! with a config in a temporary directory, send it signed requests over real
//! HTTP, and read its SQLite file directly.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

pub const LAB_SECRET: &str = "lab-test-secret";

/// A config with one `lab` endpoint (`/hooks/lab`) storing in `db`, plus `extra` TOML.
pub fn config(db: &Path, extra: &str) -> String {
    format!(
        r#"
[storage]
url = "sqlite://{db}"

[[endpoint]]
id = "lab"
provider = "lab"

[[endpoint.secret]]
version = "v1"
value = "{LAB_SECRET}"
{extra}
"#,
        db = db.display()
    )
}

/// A running `hookinbox serve`.
pub struct Server {
    pub addr: SocketAddr,
    pub dir: PathBuf,
    pub config_path: PathBuf,
    child: Child,
}

impl Server {
    /// Writes `config` into `dir` and starts the binary on a free port.
    pub fn start(dir: &Path, config: &str) -> Server {
        let config_path = dir.join("hookinbox.toml");
        std::fs::write(&config_path, config).expect("write config");
        Self::start_with(dir, &config_path)
    }

    pub fn start_with(dir: &Path, config_path: &Path) -> Server {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("stderr.log"))
            .expect("open log");
        let mut child = Command::new(env!("CARGO_BIN_EXE_hookinbox"))
            .args(["serve", "--config"])
            .arg(config_path)
            .args(["--listen", "127.0.0.1:0"])
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("spawn hookinbox");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read stdout");
        let addr = line
            .trim()
            .rsplit("http://")
            .next()
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| {
                let logs = std::fs::read_to_string(dir.join("stderr.log")).unwrap_or_default();
                panic!("hookinbox did not start: stdout {line:?}\n{logs}")
            });
        Server {
            addr,
            dir: dir.to_owned(),
            config_path: config_path.to_owned(),
            child,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// SIGKILL: no shutdown code runs.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Everything the server wrote on stderr so far (all runs in this dir).
    pub fn logs(&self) -> String {
        std::fs::read_to_string(self.dir.join("stderr.log")).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
    }
}

pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// A signed `lab` request: headers and body.
#[derive(Clone)]
pub struct Signed {
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
}

pub fn lab_signed(body: impl Into<Vec<u8>>, timestamp: i64) -> Signed {
    let body = body.into();
    let signature = hookinbox_verify::providers::lab::sign(LAB_SECRET, timestamp, &body);
    Signed {
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("x-timestamp".into(), timestamp.to_string()),
            ("x-signature".into(), signature),
        ],
        body: body.into(),
    }
}

/// A signed `lab` event with this id, signed now.
pub fn lab_event(id: &str) -> Signed {
    lab_signed(
        format!(r#"{{"id":"{id}","type":"payment.succeeded","amount":1}}"#),
        now(),
    )
}

/// A plain HTTP/1.1 client.
pub type HttpClient = Client<HttpConnector, Full<Bytes>>;

pub fn client() -> HttpClient {
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(5))
        .build_http()
}

/// The answer to one request.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: Bytes,
}

impl Answer {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }

    pub fn error(&self) -> String {
        self.json()["error"].as_str().unwrap_or_default().to_owned()
    }
}

pub async fn send(
    client: &HttpClient,
    method: &str,
    url: &str,
    signed: &Signed,
) -> Result<Answer, String> {
    let mut request = hyper::Request::builder().method(method).uri(url);
    for (name, value) in &signed.headers {
        request = request.header(name, value);
    }
    let request = request
        .body(Full::new(signed.body.clone()))
        .map_err(|e| e.to_string())?;
    let response = client.request(request).await.map_err(|e| e.to_string())?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok(Answer {
        status,
        headers,
        body,
    })
}

pub async fn post(client: &HttpClient, url: &str, signed: &Signed) -> Answer {
    send(client, "POST", url, signed)
        .await
        .expect("request failed")
}

/// The inbox rows as (inbox id, endpoint, provider event id), read with a
/// connection of the test's own.
pub fn inbox_rows(db: &Path) -> Vec<(String, String, String)> {
    let conn = rusqlite::Connection::open(db).expect("open db");
    let mut statement = conn
        .prepare("SELECT id, endpoint_id, provider_event_id FROM inbox ORDER BY id")
        .expect("prepare");
    statement
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect()
}
