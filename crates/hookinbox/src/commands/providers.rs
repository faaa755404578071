//! `hookinbox providers`: the catalogue of every registered provider, as
//! text, JSON, or the Markdown of docs/providers.md.
//!
//! Everything printed comes from the adapters themselves: the facts each
//! provider module declares (`ProviderFacts`) and what its adapter enforces
//! (tolerance, redelivery window, what the signature covers). So the
//! catalogue, the committed docs/providers.md (a test compares them) and the
//! verification code cannot tell different stories.

use std::fmt::Write as _;
use std::io::Write;

use anyhow::Context;
use hookinbox_verify::providers::generic_hmac::GenericHmacSettings;
use hookinbox_verify::{
    adapter_for, provider_names, AdapterSettings, BodyCoverage, ProviderFacts, Signing,
    VectorSource,
};
use serde::Serialize;

/// How the catalogue is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
    Markdown,
}

/// The command that regenerates docs/providers.md, as the page and the test
/// that compares it say.
pub const REGENERATE: &str = "cargo run -p hookinbox -- providers --markdown > docs/providers.md";

pub(crate) fn run(format: Format, out: &mut impl Write) -> anyhow::Result<()> {
    let entries = catalogue()?;
    let text = match format {
        Format::Text => text(&entries),
        Format::Markdown => markdown(&entries),
        Format::Json => {
            let mut json =
                serde_json::to_string_pretty(&entries).context("printing the catalogue")?;
            json.push('\n');
            json
        }
    };
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// One provider as the catalogue shows it.
#[derive(Debug, Serialize)]
pub struct Entry {
    /// The configuration name (`provider = "…"`).
    pub name: &'static str,
    pub title: &'static str,
    pub docs_url: &'static str,
    pub scheme: &'static str,
    pub signed_parts: &'static str,
    /// What the signature binds of the body: `signed`, `signed_fields`,
    /// `token` (nothing is signed) or `unsigned`.
    pub body: &'static str,
    /// Whether an endpoint must also set `basic_auth`.
    pub requires_basic_auth: bool,
    pub id_source: &'static str,
    /// Whether the signature covers the event id; an unsigned one is
    /// deduplicated by body fingerprint too.
    pub id_signed: bool,
    pub type_signed: bool,
    /// `None` when the scheme signs no timestamp.
    pub tolerance_seconds: Option<u64>,
    pub redelivery_window_seconds: u64,
    pub handshake: Option<&'static str>,
    pub batch: Option<&'static str>,
    pub vectors: Vectors,
    /// `symmetric` (a shared secret: `hookinbox send` signs as the
    /// provider) or `asymmetric` (no signer: the private key is the
    /// provider's).
    pub signing: &'static str,
}

/// Where a provider's test vectors come from.
#[derive(Debug, Serialize)]
pub struct Vectors {
    /// `official_sdk`, `documented_example` or `independent_python`.
    pub kind: &'static str,
    /// The SDK package, the documentation URL or the script path.
    pub source: &'static str,
}

/// Every registered provider, by name. Providers whose adapter
/// needs settings (`generic_hmac`, the URL-signing ones) are described with
/// example settings: their facts do not depend on them, and the tolerance
/// and window shown are the defaults.
pub fn catalogue() -> anyhow::Result<Vec<Entry>> {
    let settings = AdapterSettings {
        public_url: Some("https://hooks.example.com/hooks/example".into()),
        generic_hmac: Some(GenericHmacSettings::example()),
        verify_token: Some("example-verify-token".into()),
        webhook_id: Some("EXAMPLEWEBHOOKID".into()),
    };
    let mut names: Vec<&'static str> = provider_names().collect();
    names.sort_unstable();
    names
        .into_iter()
        .map(|name| {
            let adapter = adapter_for(name, &settings)
                .with_context(|| format!("building the `{name}` adapter"))?;
            let facts: &ProviderFacts = adapter.facts();
            let coverage = adapter.coverage();
            Ok(Entry {
                name,
                title: facts.title,
                docs_url: facts.docs_url,
                scheme: facts.scheme,
                signed_parts: facts.signed_parts,
                body: match coverage.body {
                    BodyCoverage::Signed => "signed",
                    BodyCoverage::SignedFields => "signed_fields",
                    BodyCoverage::Token => "token",
                    BodyCoverage::Unsigned => "unsigned",
                },
                requires_basic_auth: coverage.needs_endpoint_credential(),
                id_source: facts.id_source,
                id_signed: coverage.event_id,
                type_signed: coverage.event_type,
                tolerance_seconds: adapter.default_tolerance_seconds(),
                redelivery_window_seconds: adapter.redelivery_window_seconds(),
                handshake: facts.handshake,
                batch: facts.batch,
                vectors: match facts.vectors {
                    VectorSource::OfficialSdk(source) => Vectors {
                        kind: "official_sdk",
                        source,
                    },
                    VectorSource::DocumentedExample(source) => Vectors {
                        kind: "documented_example",
                        source,
                    },
                    VectorSource::IndependentPython(source) => Vectors {
                        kind: "independent_python",
                        source,
                    },
                },
                signing: match facts.signing {
                    Signing::Symmetric => "symmetric",
                    Signing::Asymmetric => "asymmetric",
                },
            })
        })
        .collect()
}

fn text(entries: &[Entry]) -> String {
    let mut out = String::new();
    for entry in entries {
        let _ = writeln!(out, "{} — {}", entry.name, entry.title);
        for (label, value) in details(entry, |code| code.to_owned()) {
            let _ = writeln!(out, "  {label:<11} {value}");
        }
        out.push('\n');
    }
    let _ = writeln!(out, "{} providers", entries.len());
    out
}

/// The rows every format shows for one provider. `link` renders a path or
/// URL (plain in text, a link in Markdown).
fn details(entry: &Entry, link: impl Fn(&str) -> String) -> Vec<(&'static str, String)> {
    let signed = |yes: bool| if yes { "signed" } else { "unsigned" };
    let mut rows = vec![
        ("scheme", entry.scheme.to_owned()),
        ("signs", entry.signed_parts.to_owned()),
        (
            "body",
            match entry.body {
                "signed" => "covered by the signature".to_owned(),
                "signed_fields" => "named fields covered by the signature".to_owned(),
                "token" => "not signed: a secret token authenticates the request".to_owned(),
                _ => "not covered: the endpoint must set `basic_auth`".to_owned(),
            },
        ),
        (
            "event id",
            format!("{} ({})", entry.id_source, signed(entry.id_signed)),
        ),
        (
            "tolerance",
            entry
                .tolerance_seconds
                .map_or("none: no timestamp is signed".to_owned(), |seconds| {
                    format!("{} (both directions)", duration(seconds))
                }),
        ),
        ("redelivery", duration(entry.redelivery_window_seconds)),
        ("handshake", entry.handshake.unwrap_or("none").to_owned()),
    ];
    if let Some(batch) = entry.batch {
        rows.push(("batch", batch.to_owned()));
    }
    rows.push((
        "signer",
        match entry.signing {
            "symmetric" => "yes: the secret is shared, `hookinbox send` signs as the provider",
            _ => "no signer: asymmetric (the private key is the provider's own)",
        }
        .to_owned(),
    ));
    rows.push(("docs", link(entry.docs_url)));
    let vectors = match entry.vectors.kind {
        "official_sdk" => format!("signed by the official SDK: {}", entry.vectors.source),
        "documented_example" => format!(
            "the provider's documented example: {}",
            link(entry.vectors.source)
        ),
        _ => format!(
            "the documented formula in independent Python: {}",
            link(entry.vectors.source)
        ),
    };
    rows.push(("vectors", vectors));
    rows
}

fn markdown(entries: &[Entry]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Providers\n\n\
         <!-- Generated by `hookinbox providers --markdown`; do not edit. Regenerate with:\n     \
         {REGENERATE} -->\n\n\
         Every provider hookinbox verifies, as `provider = \"…\"` names it in an\n\
         [`[[endpoint]]`](configuration.md#endpoint-one-webhook-endpoint). The same list,\n\
         from the same data, is printed by `hookinbox providers` (`--json` for tools).\n\n\
         An event id marked *unsigned* comes from a value no signature covers: hookinbox\n\
         then also treats the same body on the same endpoint inside the redelivery window\n\
         as the same event. The redelivery window is how long the provider may resend one\n\
         event, and so how long its dedup record is kept at least. A provider whose\n\
         signature does not cover the body is refused at start without `basic_auth`.\n\n\
         {} providers.\n",
        entries.len()
    );
    let _ = writeln!(
        out,
        "| provider | name | event id | tolerance | redelivery | handshake | signer |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for entry in entries {
        let _ = writeln!(
            out,
            "| [{title}](#{name}) | `{name}` | {id} | {tolerance} | {window} | {handshake} | {signer} |",
            title = entry.title,
            name = anchor(entry.name),
            id = if entry.id_signed {
                "signed"
            } else {
                "unsigned"
            },
            tolerance = entry.tolerance_seconds.map_or("none".to_owned(), duration),
            window = duration(entry.redelivery_window_seconds),
            handshake = if entry.handshake.is_some() {
                "yes"
            } else {
                "no"
            },
            signer = if entry.signing == "symmetric" {
                "yes"
            } else {
                "no: asymmetric"
            },
        );
    }
    for entry in entries {
        let _ = writeln!(out, "\n## {}\n", entry.name);
        let _ = writeln!(out, "**{}**\n", entry.title);
        for (label, value) in details(entry, markdown_link) {
            let _ = writeln!(out, "- {label}: {value}");
        }
    }
    out
}

/// The anchor GitHub gives the `## {name}` heading.
fn anchor(name: &str) -> String {
    name.to_ascii_lowercase()
}

/// A URL as a link; a repository path as a link relative to docs/.
fn markdown_link(target: &str) -> String {
    if target.starts_with("https://") || target.starts_with("http://") {
        format!("<{target}>")
    } else {
        let shown = target.rsplit('/').next().unwrap_or(target);
        let relative = target.strip_prefix("docs/").map_or_else(
            || format!("../{target}"),
            |inside_docs| inside_docs.to_owned(),
        );
        format!("[{shown}]({relative})")
    }
}

/// Seconds as a person says them: `300 s`, `8 hours`, `3 days`.
fn duration(seconds: u64) -> String {
    const MINUTE: u64 = 60;
    const HOUR: u64 = 60 * MINUTE;
    const DAY: u64 = 24 * HOUR;
    let plural = |count: u64, unit: &str| {
        if count == 1 {
            format!("1 {unit}")
        } else {
            format!("{count} {unit}s")
        }
    };
    if seconds >= DAY && seconds.is_multiple_of(DAY) {
        plural(seconds / DAY, "day")
    } else if seconds >= HOUR && seconds.is_multiple_of(HOUR) {
        plural(seconds / HOUR, "hour")
    } else if seconds >= MINUTE && seconds.is_multiple_of(MINUTE) && seconds > 10 * MINUTE {
        plural(seconds / MINUTE, "minute")
    } else {
        format!("{seconds} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_spoken() {
        assert_eq!(duration(5), "5 s");
        assert_eq!(duration(300), "300 s");
        assert_eq!(duration(900), "15 minutes");
        assert_eq!(duration(3600), "1 hour");
        assert_eq!(duration(8 * 3600), "8 hours");
        assert_eq!(duration(3 * 24 * 3600), "3 days");
        assert_eq!(duration(30 * 24 * 3600), "30 days");
    }

    #[test]
    fn every_registered_provider_is_in_the_catalogue_with_its_facts() {
        let entries = catalogue().unwrap();
        let names: Vec<&str> = entries.iter().map(|e| e.name).collect();
        let mut registered: Vec<&str> = provider_names().collect();
        registered.sort_unstable();
        assert_eq!(names, registered);
        for entry in &entries {
            for (field, value) in [
                ("title", entry.title),
                ("docs_url", entry.docs_url),
                ("scheme", entry.scheme),
                ("signed_parts", entry.signed_parts),
                ("id_source", entry.id_source),
                ("vectors", entry.vectors.source),
            ] {
                assert!(!value.trim().is_empty(), "{}: empty {field}", entry.name);
            }
        }
    }

    #[test]
    fn links_are_urls_or_paths_relative_to_docs() {
        assert_eq!(
            markdown_link("https://example.com/a"),
            "<https://example.com/a>"
        );
        assert_eq!(
            markdown_link("docs/configuration.md"),
            "[configuration.md](configuration.md)"
        );
        assert_eq!(
            markdown_link("crates/x/gen.py"),
            "[gen.py](../crates/x/gen.py)"
        );
    }
}
