//! The black-box harness of hookinbox's integration tests: the real
//! `hookinbox` binary started as a process (this package's tests are the
//! only place cargo says where it is), on port 0 with a config in a
//! temporary directory. Everything else a test needs — the config builder,
//! signed requests, the HTTP client, the capturing sink, database readers —
//! is the shared test-support crate, re-exported here.

#![allow(dead_code)]

// The store's tests' TCP proxy, to lose NATS, MQTT or PostgreSQL without stopping
// the machine's server.
#[path = "../../../../hookinbox-store/tests/it/support/cut_proxy.rs"]
pub mod cut_proxy;
pub mod mqtt;
pub mod nats;
pub mod ordered_load;
pub mod postgres;
pub mod rabbitmq;
pub mod redis_streams;
#[macro_use]
pub mod storage;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub use hookinbox_testing::*;
// Not every test file uses every piece.
#[allow(unused_imports)]
pub use storage::{until, Backend, Storage};

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
        Self::start_with_args(dir, config_path, &[])
    }

    /// Starts `serve` with extra arguments (`--no-workers`).
    pub fn start_with_args(dir: &Path, config_path: &Path, args: &[&str]) -> Server {
        Self::start_full(dir, config_path, args, &[])
    }

    /// Starts `serve` with `HOOKINBOX_FAILPOINT` set: it aborts at that point.
    pub fn start_with_failpoint(dir: &Path, config: &str, failpoint: &str) -> Server {
        let config_path = dir.join("hookinbox.toml");
        std::fs::write(&config_path, config).expect("write config");
        Self::start_full(
            dir,
            &config_path,
            &[],
            &[("HOOKINBOX_FAILPOINT", failpoint)],
        )
    }

    /// Starts `serve` with extra arguments and environment variables
    /// (`HOOKINBOX_FAILPOINT`, an API key a config names).
    pub fn start_full(
        dir: &Path,
        config_path: &Path,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> Server {
        Self::start_binary(
            Path::new(env!("CARGO_BIN_EXE_hookinbox")),
            dir,
            config_path,
            args,
            envs,
        )
    }

    /// Starts `serve` from `binary` (see [`release_binary`]).
    pub fn start_binary(
        binary: &Path,
        dir: &Path,
        config_path: &Path,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> Server {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("stderr.log"))
            .expect("open log");
        let mut child = Command::new(binary)
            .args(["serve", "--config"])
            .arg(config_path)
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .envs(envs.iter().copied())
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
            .rsplit("://")
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

    /// The process's resident memory, from /proc.
    pub fn rss_bytes(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("read /proc status");
        let kib: u64 = status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .expect("VmRSS in /proc status");
        kib * 1024
    }

    /// The admin listener's address, as the server announced it on stderr.
    pub async fn admin_address(&self) -> SocketAddr {
        let mut address = None;
        eventually(Duration::from_secs(5), || {
            address = self
                .logs()
                .lines()
                .find(|l| l.contains("Admin listener up."))
                .and_then(|l| l.split("address=").nth(1))
                .and_then(|a| a.split_whitespace().next())
                .and_then(|a| a.parse().ok());
            address.is_some()
        })
        .await;
        address.expect("the admin listener was announced")
    }

    /// SIGKILL: no shutdown code runs.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then waits (at most `within`) for the graceful stop; the
    /// exit status, `None` if it was still running (then it is killed).
    pub async fn terminate(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(sent.is_ok_and(|s| s.success()), "kill -TERM {pid}");
        let deadline = std::time::Instant::now() + within;
        while std::time::Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().expect("wait for hookinbox") {
                return Some(status);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.kill9();
        None
    }

    /// The process id, to send it signals (SIGHUP).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the server wrote on stderr so far (all runs in this dir).
    /// Lines are written by the server's log thread, a moment after they
    /// are logged, so this reads until the file has stopped growing for
    /// 10 ms (at most half a second): a line logged before the answer a
    /// test just read is then in it.
    pub fn logs(&self) -> String {
        let read = || std::fs::read_to_string(self.dir.join("stderr.log")).unwrap_or_default();
        let mut logs = read();
        for _ in 0..50 {
            std::thread::sleep(Duration::from_millis(10));
            let again = read();
            if again.len() == logs.len() {
                break;
            }
            logs = again;
        }
        logs
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// The `hookinbox` binary built with the release profile, for tests that
/// measure what users run (memory, latency under load). It is built on
/// first use with the same cargo and target directory (a no-op when CI has
/// built it already).
pub fn release_binary() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
            let out = Command::new(env!("CARGO"))
                .args([
                    "build",
                    "--release",
                    "--locked",
                    "-p",
                    "hookinbox",
                    "--bin",
                    "hookinbox",
                ])
                .args(["--message-format", "json-render-diagnostics"])
                .current_dir(&workspace)
                .stderr(Stdio::inherit())
                .output()
                .expect("run cargo build --release");
            assert!(out.status.success(), "cargo build --release failed");
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
                .filter(|m| {
                    m["reason"] == "compiler-artifact" && m["target"]["name"] == "hookinbox"
                })
                .find_map(|m| m["executable"].as_str().map(PathBuf::from))
                .expect("cargo reported the release binary")
        })
        .clone()
}

/// Runs `hookinbox serve` on a config that must not start; its exit code
/// and stderr.
pub fn serve_refused(config: &Path, env: &[(&str, &str)]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hookinbox"))
        .envs(env.iter().copied())
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(config)
        .output()
        .expect("run hookinbox");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `/readyz` of the admin listener at `admin` (no token): its status and
/// the names in its `failing` list.
pub async fn readyz(admin: SocketAddr) -> (u16, Vec<String>) {
    let answer = send(
        &client(),
        "GET",
        &format!("http://{admin}/readyz"),
        &Signed {
            headers: Vec::new(),
            body: Default::default(),
        },
    )
    .await
    .expect("/readyz answers");
    let failing = answer.json()["failing"]
        .as_array()
        .expect("a failing list")
        .iter()
        .map(|name| name.as_str().unwrap_or_default().to_owned())
        .collect();
    (answer.status, failing)
}

/// An `[admin]` table: a listener on a port of its own, with `token`.
pub fn admin_table(token: &str) -> String {
    format!("[admin]\nlisten = \"127.0.0.1:0\"\ntoken = \"{token}\"\n")
}

/// Sends SIGHUP to the server process (`kill -HUP`, as `systemctl reload`).
pub fn sighup(server: &Server) {
    let status = std::process::Command::new("kill")
        .args(["-HUP", &server.pid().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success());
}

/// Waits until the server's log holds `count` lines containing `needle`.
pub async fn logged(server: &Server, needle: &str, count: usize) {
    let seen = eventually(Duration::from_secs(10), || {
        server.logs().matches(needle).count() >= count
    })
    .await;
    assert!(seen, "no {needle:?} (x{count}) in:\n{}", server.logs());
}
