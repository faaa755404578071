//! `hookinbox send`: sign a request exactly as a named provider would and
//! POST it to any receiver, hookinbox or not, then print the receiver's
//! status and body. The signing is the verify crate's own
//! (`hookinbox_verify::Adapter::sign`, its `sign` feature), the same code the
//! verify tests check against every provider's adapter and SDK vectors, so
//! what `send` writes is what `serve` reads.
//!
//! The exit status is that of a negative answer (1) for any non-2xx, and of
//! an error (2) when nothing was answered (see `cli::run`).

pub mod samples;

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use bytes::Bytes;
use hookinbox_verify::{adapter_for, AdapterSettings, Outgoing, SignedRequest};
use http_body_util::{BodyExt, Full, Limited};
use serde::Serialize;

use super::output::note;
use crate::clock;
use crate::http_client::HttpClient;
use crate::tls::client::TrustRoots;

/// What `--sample` says to list the bundled samples instead of sending.
pub const LIST: &str = "list";

/// How long the receiver has to connect and answer.
const TIMEOUT: Duration = Duration::from_secs(30);

/// At most this much of the receiver's answer is read and printed.
const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// The command line of one `send`, as parsed.
#[derive(Debug, Clone)]
pub struct SendArgs {
    pub provider: Option<String>,
    pub secret_env: Option<String>,
    pub secret_file: Option<PathBuf>,
    pub body_file: Option<PathBuf>,
    pub sample: Option<String>,
    /// `Name: value` lines, sent after the provider's own headers.
    pub headers: Vec<String>,
    pub event_id: Option<String>,
    pub now: Option<i64>,
    pub json: bool,
    pub url: Option<String>,
}

/// What the receiver answered, as `--json` prints it.
#[derive(Debug, Serialize)]
struct Answer {
    provider: String,
    url: String,
    event_id: String,
    signed_at: i64,
    status: u16,
    /// The answer's body as text (lossy UTF-8), at most 1 MiB.
    body: String,
    latency_ms: u128,
}

/// Runs `send`: `Ok(true)` when the receiver answered 2xx (or the samples
/// were listed), `Ok(false)` for any other status.
pub async fn run(args: SendArgs, out: &mut impl Write) -> anyhow::Result<bool> {
    if args.sample.as_deref() == Some(LIST) {
        list_samples(args.provider.as_deref(), args.json, out)?;
        return Ok(true);
    }
    let provider = args.provider.as_deref().context("--provider is required")?;
    let url = args
        .url
        .as_deref()
        .context("the receiver's URL is required")?;
    let secret = read_secret(&args)?;
    let (body, sample_headers) = body_and_headers(provider, &args)?;
    let settings = AdapterSettings {
        // Schemes that sign the URL sign the one the request goes to.
        public_url: Some(url.to_owned()),
        generic_hmac: None,
        // Only a URL-verification GET reads it; `send` POSTs events.
        verify_token: Some("hookinbox-send".to_owned()),
        // Only PayPal signs it, and PayPal signs with its own key.
        webhook_id: None,
    };
    let adapter = adapter_for(provider, &settings).map_err(|error| match provider {
        "generic_hmac" => anyhow::anyhow!(
            "`generic_hmac` takes its scheme from an endpoint's configuration, which `send` does not read"
        ),
        _ => anyhow::Error::new(error),
    })?;
    let event_id = args.event_id.clone().unwrap_or_else(new_event_id);
    let now = args.now.unwrap_or_else(clock::unix_seconds);
    let signed = adapter
        .sign(&Outgoing {
            body: &body,
            secret: &secret,
            now,
            event_id: &event_id,
        })
        .with_context(|| format!("signing as `{provider}`"))?;
    let headers = merged_headers(&signed, sample_headers, &args.headers)?;
    let target = with_query(url, signed.query.as_deref());
    note!("POST {target} as {provider} (event id {event_id}, signed at {now})");

    let started = Instant::now();
    let (status, answer) = post(&target, &headers, signed.body).await?;
    let answer = Answer {
        provider: provider.to_owned(),
        url: target,
        event_id,
        signed_at: now,
        status,
        body: String::from_utf8_lossy(&answer).into_owned(),
        latency_ms: started.elapsed().as_millis(),
    };
    if args.json {
        serde_json::to_writer(&mut *out, &answer).context("printing the answer")?;
        writeln!(out)?;
    } else {
        writeln!(out, "{}", answer.status)?;
        if !answer.body.is_empty() {
            writeln!(out, "{}", answer.body.trim_end())?;
        }
    }
    out.flush()?;
    Ok((200..300).contains(&status))
}

fn list_samples(provider: Option<&str>, json: bool, out: &mut impl Write) -> anyhow::Result<()> {
    #[derive(Serialize)]
    struct Listed {
        provider: &'static str,
        name: &'static str,
    }
    for sample in samples::of(provider) {
        if json {
            serde_json::to_writer(
                &mut *out,
                &Listed {
                    provider: sample.provider,
                    name: sample.name,
                },
            )?;
            writeln!(out)?;
        } else {
            writeln!(out, "{:<10} {}", sample.provider, sample.name)?;
        }
    }
    out.flush()?;
    Ok(())
}

/// The secret, from the environment variable or the file named (a file's
/// final line break is not part of it). Never printed.
fn read_secret(args: &SendArgs) -> anyhow::Result<String> {
    match (&args.secret_env, &args.secret_file) {
        (Some(name), None) => std::env::var(name)
            .with_context(|| format!("--secret-env: the environment variable {name} is not set")),
        (None, Some(path)) => std::fs::read_to_string(path)
            .map(|text| text.trim_end_matches(['\r', '\n']).to_owned())
            .with_context(|| format!("--secret-file: cannot read {}", path.display())),
        _ => bail!("give the secret with one of --secret-env or --secret-file"),
    }
}

/// The body to sign, and the unsigned headers of a sample.
fn body_and_headers(
    provider: &str,
    args: &SendArgs,
) -> anyhow::Result<(Vec<u8>, samples::UnsignedHeaders)> {
    match (&args.body_file, &args.sample) {
        (Some(path), None) => Ok((
            std::fs::read(path)
                .with_context(|| format!("--body-file: cannot read {}", path.display()))?,
            &[],
        )),
        (None, Some(name)) => {
            let sample = samples::find(provider, name).with_context(|| {
                let known: Vec<&str> = samples::of(Some(provider)).map(|s| s.name).collect();
                if known.is_empty() {
                    format!("no bundled sample for `{provider}`; give --body-file")
                } else {
                    format!(
                        "no sample `{name}` for `{provider}` (its samples: {})",
                        known.join(", ")
                    )
                }
            })?;
            Ok((sample.body.to_vec(), sample.headers))
        }
        _ => {
            bail!("give the body with one of --body-file or --sample (`--sample list` lists them)")
        }
    }
}

/// The signer's headers, then the sample's, then the user's: a later one
/// of the same name replaces an earlier one, so `--header` can override
/// anything, even to test how a receiver refuses it.
fn merged_headers(
    signed: &SignedRequest,
    sample: &[(&str, &str)],
    lines: &[String],
) -> anyhow::Result<Vec<(String, String)>> {
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut set = |name: &str, value: &str| {
        headers.retain(|(known, _)| !known.eq_ignore_ascii_case(name));
        headers.push((name.to_owned(), value.to_owned()));
    };
    for (name, value) in &signed.headers {
        set(name, value);
    }
    for (name, value) in sample {
        set(name, value);
    }
    for line in lines {
        let (name, value) = line
            .split_once(':')
            .with_context(|| format!("--header `{line}` is not `Name: value`"))?;
        set(name.trim(), value.trim());
    }
    Ok(headers)
}

/// `url` with the signer's query string appended.
fn with_query(url: &str, query: Option<&str>) -> String {
    match query {
        Some(query) if url.contains('?') => format!("{url}&{query}"),
        Some(query) => format!("{url}?{query}"),
        None => url.to_owned(),
    }
}

/// A fresh id for the providers that send one in a header.
fn new_event_id() -> String {
    format!("evt_{:032x}", rand::random::<u128>())
}

/// POSTs the request and reads the status and (at most 1 MiB of) the body.
async fn post(
    url: &str,
    headers: &[(String, String)],
    body: Vec<u8>,
) -> anyhow::Result<(u16, Vec<u8>)> {
    let uri: hyper::Uri = url
        .parse()
        .with_context(|| format!("`{url}` is not a URL"))?;
    let client = match uri.scheme_str() {
        Some("http") => HttpClient::plain(TIMEOUT),
        Some("https") => HttpClient::tls(TIMEOUT, TrustRoots::Mozilla)
            .context("setting up TLS for an https URL")?,
        _ => bail!("`{url}` is neither an http:// nor an https:// URL"),
    };
    let mut request = hyper::Request::post(uri);
    for (name, value) in headers {
        request = request.header(name, value);
    }
    let request = request
        .body(Full::new(Bytes::from(body)))
        .context("building the request (a header name or value is not valid)")?;
    let exchange = async {
        let response = client
            .request(request)
            .await
            .context("sending the request")?;
        let status = response.status().as_u16();
        let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map_err(|error| anyhow::anyhow!("reading the answer: {error}"))?
            .to_bytes();
        anyhow::Ok((status, body.to_vec()))
    };
    tokio::time::timeout(TIMEOUT, exchange)
        .await
        .with_context(|| format!("no answer within {} s", TIMEOUT.as_secs()))?
}
