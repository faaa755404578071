//! MEASUREMENT ONLY: instructions a sealed SQLite store spends per accepted
//! event, by stage, under callgrind (bench/RESULTS.md, section 0f): the
//! preparation before the transaction (`PreparedEvent::new`: compression,
//! sealing, the audit headers) and the writer's inserts. Run the same file
//! on two commits and compare the inclusive counts:
//!
//! ```text
//! cargo build --profile profiling -p hookinbox-store --example accept_path_cost
//! valgrind --tool=callgrind --callgrind-out-file=accept.out \
//!     target/profiling/examples/accept_path_cost 300
//! callgrind_annotate --inclusive=yes accept.out | grep -E 'PreparedEvent::new|group_commit::run'
//! ```
//!
//! Bodies: the load generator's mix (bench/src: ~10 KiB lognormal, 0.2 % of
//! 1 MB), accepted one at a time, as at the profile's 15 req/s. With
//! `contexts` as a second argument it compresses the same bodies at level 1
//! with a new zstd context per body (`zstd_new_context_per_body`) and with
//! one reused context (`zstd_reused_context`), for issue 20's item 4.

#[path = "../../../bench/src/body_sizes.rs"]
#[allow(dead_code)]
mod body_sizes;
#[path = "../../../bench/src/event_body.rs"]
#[allow(dead_code)]
mod event_body;
/// What `event_body` takes from the load generator's command line.
mod cli {
    pub const MAX_BODY_BYTES: u32 = 1024 * 1024;
}

use std::sync::Arc;

use hookinbox_store::{
    EncryptionKeys, Fingerprint, NewEvent, SqliteOptions, SqliteStore, Store, UnsignedMetadata,
};

fn main() -> anyhow::Result<()> {
    let count: u64 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(300);
    let spec = body_sizes::SizeSpec {
        mean: 10_240,
        sigma: 1.0,
        large_share: 0.002,
        large_size: 1_000_000,
    };
    let bodies =
        event_body::EventBodies::new("c1".into(), body_sizes::BodySizes::draw(spec, 1)?, 1);
    if std::env::args().nth(2).as_deref() == Some("contexts") {
        let mut reused = zstd::bulk::Compressor::new(1)?;
        let mut frames = 0;
        for seq in 0..count {
            let body = bodies.body(seq);
            frames += zstd_new_context_per_body(&body)?;
            frames += zstd_reused_context(&mut reused, &body)?;
        }
        println!("{count} bodies compressed twice, {frames} frame bytes");
        return Ok(());
    }
    let dir = tempfile::tempdir()?;
    let mut options = SqliteOptions::new(dir.path().join("inbox.db"));
    let key = secrecy::SecretBox::new(Box::new([7_u8; 32]));
    options.keys = Some(Arc::new(EncryptionKeys::new("k1", key)?));
    let store = SqliteStore::open(options)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let audit_headers = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        ("user-agent".to_owned(), "loadgen".to_owned()),
        (
            "webhook-id".to_owned(),
            "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W".to_owned(),
        ),
        ("webhook-timestamp".to_owned(), "1700000000".to_owned()),
        (
            "webhook-signature".to_owned(),
            "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=".to_owned(),
        ),
    ];
    let mut bytes = 0;
    runtime.block_on(async {
        for seq in 0..count {
            let body = bodies.body(seq);
            bytes += body.len();
            let event = NewEvent {
                endpoint_id: "bench".into(),
                provider: "standard".into(),
                provider_event_id: bodies.event_id(seq),
                event_type: Some("bench".into()),
                object_id: None,
                object_version: None,
                provider_created_at: None,
                received_at_ms: 1_700_000_000_000,
                content_type: Some("application/json".into()),
                fingerprint: Fingerprint::of(&body),
                payload: body,
                audit_headers: audit_headers.clone(),
                matched_secret_version: "1".into(),
                targets: vec![],
                not_routed: Vec::new(),
                delays_ms: Default::default(),
                trace_parent: None,
                unsigned_metadata: UnsignedMetadata::default(),
                fingerprint_window_ms: None,
            };
            store.accept(event).await?;
        }
        anyhow::Ok(())
    })?;
    println!(
        "{count} events accepted, {} body bytes on average",
        bytes / count.max(1) as usize
    );
    Ok(())
}

#[inline(never)]
fn zstd_new_context_per_body(body: &[u8]) -> std::io::Result<usize> {
    Ok(zstd::bulk::compress(body, 1)?.len())
}

#[inline(never)]
fn zstd_reused_context(
    compressor: &mut zstd::bulk::Compressor<'static>,
    body: &[u8],
) -> std::io::Result<usize> {
    Ok(compressor.compress(body)?.len())
}
