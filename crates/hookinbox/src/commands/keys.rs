//! `hookinbox keys status|reload`: ask a running `serve` about its key
//! rings through its admin listener (`GET /admin/keys`, `POST
//! /admin/keys/reload`), with the admin token of the configuration.
//! `keys rewrap` works on the database itself (`keys_rewrap.rs`), and so
//! does `keys check` (`keys_check.rs`).

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{header, Method, Request};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::admin::token::AdminToken;
use crate::cli::KeysCommand;
use crate::config;
use crate::secrets::key_reload::ReloadReport;
use crate::secrets::key_status::KeysStatus;

/// How long the admin listener may take to answer.
const ADMIN_TIMEOUT: Duration = Duration::from_secs(30);

/// Prints to `out`; returns `false` when a reload left a key ring in place
/// because a source could not be read, or the encryption key ring does not
/// fit the database.
pub async fn run(command: KeysCommand, out: &mut impl Write) -> anyhow::Result<bool> {
    match command {
        KeysCommand::Check { config, json } => super::keys_check::check(&config, json, out).await,
        KeysCommand::Rewrap { config, batch } => {
            super::keys_rewrap::rewrap(&config, batch as usize).await?;
            Ok(true)
        }
        KeysCommand::Status {
            config,
            admin,
            json,
        } => {
            let body = call(&config, admin, Method::GET, "/admin/keys").await?;
            let status: KeysStatus =
                serde_json::from_slice(&body).context("the admin listener's answer")?;
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&status)?)?;
            } else {
                status.write_table(out)?;
                writeln!(
                    out,
                    "\nmatches: requests verified by this process since it started, up to 24 h"
                )?;
            }
            out.flush()?;
            Ok(true)
        }
        KeysCommand::Reload {
            config,
            admin,
            json,
        } => {
            let body = call(&config, admin, Method::POST, "/admin/keys/reload").await?;
            let report: ReloadReport =
                serde_json::from_slice(&body).context("the admin listener's answer")?;
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
            } else {
                writeln!(out, "reloaded: {}", report.reloaded.join(", "))?;
                for failed in &report.failed {
                    writeln!(out, "not reloaded (the key ring in use stays): {failed}")?;
                }
                if report.restart_needed {
                    writeln!(
                        out,
                        "the file changes more than secret versions: those changes need a restart"
                    )?;
                }
            }
            out.flush()?;
            Ok(report.failed.is_empty())
        }
    }
}

/// Sends one request to the admin listener of the configuration at
/// `config_path` (or at `admin`); the body of a 200.
async fn call(
    config_path: &Path,
    admin: Option<SocketAddr>,
    method: Method,
    path: &str,
) -> anyhow::Result<Bytes> {
    let settings = config::load(config_path)?;
    let Some(admin_settings) = &settings.admin else {
        bail!(
            "{}: no [admin] section; `keys` talks to the admin listener",
            config_path.display()
        );
    };
    let address = admin.unwrap_or_else(|| reachable(admin_settings.listen));
    if address.port() == 0 {
        bail!("admin.listen has port 0: give the listener's address with --admin");
    }
    let token = admin_settings
        .token
        .as_ref()
        .map(AdminToken::read)
        .transpose()?;
    let mut request = Request::builder()
        .method(method)
        .uri(format!("http://{address}{path}"));
    if let Some(token) = &token {
        request = request.header(header::AUTHORIZATION, token.authorization()?);
    }
    let request = request.body(Full::new(Bytes::new()))?;
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let response = tokio::time::timeout(ADMIN_TIMEOUT, client.request(request))
        .await
        .with_context(|| format!("no answer from the admin listener at {address}"))?
        .with_context(|| format!("cannot reach the admin listener at {address}"))?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    if !status.is_success() {
        bail!(
            "the admin listener at {address} answered {status}: {}",
            String::from_utf8_lossy(&body).trim()
        );
    }
    Ok(body)
}

/// The address to reach a listener bound to `listen`: loopback for an
/// unspecified address (`0.0.0.0`, `::`).
fn reachable(listen: SocketAddr) -> SocketAddr {
    let ip = match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, listen.port())
}
