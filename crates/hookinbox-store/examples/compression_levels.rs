//! MEASUREMENT ONLY: what zstd costs and saves on webhook bodies at each
//! level, to choose the level `stored_body::compression` uses
//! (bench/RESULTS.md, "Compression"). Run in release mode:
//!
//! ```text
//! cargo run --release -p hookinbox-store --example compression_levels
//! ```
//!
//! Corpora: the benchmark's own body mix (bench/src: ~10 KiB lognormal,
//! 0.2 % of 1 MB, JSON padded with random alphanumerics, so it compresses
//! far less than real events), events shaped like GitHub's `pull_request`,
//! Stripe's `invoice.paid` and Shopify's `orders/create` (each with its own
//! ids and times), and the small real bodies of the provider fixtures in
//! crates/hookinbox-verify/tests/fixtures. Each body is compressed alone,
//! with one reused context, as the store does; a body whose frame is not
//! smaller counts at its own size. Times are the best of five rounds.

#![recursion_limit = "512"]

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
use std::time::Instant;

use base64::Engine;
use bytes::Bytes;
use hookinbox_store::{
    EncryptionKeys, Fingerprint, NewEvent, SqliteOptions, SqliteStore, Store, UnsignedMetadata,
};
use serde_json::json;

const LEVELS: &[i32] = &[-7, -3, -1, 1, 2, 3, 4, 5, 6];
const ROUNDS: usize = 5;

fn main() -> anyhow::Result<()> {
    let corpora = [
        ("bench mix (10 KiB lognormal)", bench_mix()?),
        ("GitHub pull_request", events(400, github_pull_request)),
        ("Stripe invoice.paid", events(2000, stripe_invoice_paid)),
        ("Shopify orders/create", events(1000, shopify_order)),
        ("provider fixtures (small)", fixture_bodies()?),
    ];
    println!("| corpus | bodies | mean bytes | level | stored / raw | compress ns/byte | decompress ns/byte |");
    println!("|---|---|---|---|---|---|---|");
    for (name, bodies) in &corpora {
        let raw: usize = bodies.iter().map(Vec::len).sum();
        for &level in LEVELS {
            let (stored, compress_ns) = compress_all(bodies, level)?;
            let decompress_ns = decompress_all(bodies, level)?;
            println!(
                "| {name} | {} | {} | {level} | {:.3} | {:.2} | {:.2} |",
                bodies.len(),
                raw / bodies.len(),
                stored as f64 / raw as f64,
                compress_ns / raw as f64,
                decompress_ns / raw as f64,
            );
        }
    }
    println!();
    println!("Through a sealed SQLite store (payload log bytes per event; before: the body + 40)");
    println!("| corpus | events | body bytes / event | before: stored / event | after: stored / event | after / before |");
    println!("|---|---|---|---|---|---|");
    for (name, bodies) in &corpora {
        let raw: usize = bodies.iter().map(Vec::len).sum();
        let before = (raw + 40 * bodies.len()) as f64 / bodies.len() as f64;
        let after = payload_log_bytes(bodies)? as f64 / bodies.len() as f64;
        println!(
            "| {name} | {} | {:.0} | {before:.0} | {after:.0} | {:.3} |",
            bodies.len(),
            raw as f64 / bodies.len() as f64,
            after / before
        );
    }
    println!();
    println!("Small bodies (level 1): share whose frame is smaller, and stored / raw, by size");
    println!("| size | bodies | smaller | stored / raw |");
    println!("|---|---|---|---|");
    let mut small: Vec<Vec<u8>> = fixture_bodies()?;
    small.extend(events(200, stripe_invoice_paid).into_iter().map(|body| {
        let len = body.len();
        body[..len.min(200)].to_vec()
    }));
    for (low, high) in [(0, 64), (64, 128), (128, 256), (256, 512), (512, 1024)] {
        let in_range: Vec<&Vec<u8>> = small
            .iter()
            .filter(|b| (low..high).contains(&b.len()))
            .collect();
        if in_range.is_empty() {
            continue;
        }
        let mut compressor = zstd::bulk::Compressor::new(1)?;
        let (mut smaller, mut stored, mut raw) = (0, 0, 0);
        for body in &in_range {
            let frame = compressor.compress(body)?;
            raw += body.len();
            if frame.len() < body.len() {
                smaller += 1;
                stored += frame.len();
            } else {
                stored += body.len();
            }
        }
        println!(
            "| {low}–{high} | {} | {smaller} | {:.3} |",
            in_range.len(),
            stored as f64 / raw as f64
        );
    }
    Ok(())
}

/// Bytes of the payload log after a sealed SQLite store accepted
/// `bodies`, one event each, 64 at a time.
fn payload_log_bytes(bodies: &[Vec<u8>]) -> anyhow::Result<u64> {
    let dir = tempfile::tempdir()?;
    let mut options = SqliteOptions::new(dir.path().join("inbox.db"));
    let key = secrecy::SecretBox::new(Box::new([7_u8; 32]));
    options.keys = Some(Arc::new(EncryptionKeys::new("k1", key)?));
    let store = Arc::new(SqliteStore::open(options)?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        for (chunk_index, chunk) in bodies.chunks(64).enumerate() {
            let mut tasks = Vec::new();
            for (n, body) in chunk.iter().enumerate() {
                let event = NewEvent {
                    endpoint_id: "bench".into(),
                    provider: "lab".into(),
                    provider_event_id: format!("e-{chunk_index}-{n}"),
                    event_type: Some("bench".into()),
                    object_id: None,
                    object_version: None,
                    provider_created_at: None,
                    received_at_ms: 1_700_000_000_000,
                    content_type: Some("application/json".into()),
                    fingerprint: Fingerprint::of(body),
                    payload: Bytes::from(body.clone()),
                    audit_headers: vec![],
                    matched_secret_version: "1".into(),
                    targets: vec![],
                    not_routed: Vec::new(),
                    delays_ms: Default::default(),
                    unsigned_metadata: UnsignedMetadata::default(),
                    fingerprint_window_ms: None,
                    trace_parent: None,
                };
                let store = store.clone();
                tasks.push(tokio::spawn(async move { store.accept(event).await }));
            }
            for task in tasks {
                task.await??;
            }
        }
        anyhow::Ok(())
    })?;
    let disk = store.reader().stats()?.disk;
    Ok(disk.map_or(0, |disk| disk.payload_log_bytes))
}

/// Bytes stored for all `bodies` at `level`, and the best time of
/// [`ROUNDS`] in nanoseconds.
fn compress_all(bodies: &[Vec<u8>], level: i32) -> anyhow::Result<(usize, f64)> {
    let mut compressor = zstd::bulk::Compressor::new(level)?;
    let mut best = f64::MAX;
    let mut stored = 0;
    for _ in 0..ROUNDS {
        stored = 0;
        let started = Instant::now();
        for body in bodies {
            let mut frame = Vec::with_capacity(body.len().saturating_sub(1));
            stored += match compressor.compress_to_buffer(body.as_slice(), &mut frame) {
                Ok(_) => frame.len(),
                Err(_) => body.len(),
            };
        }
        best = best.min(started.elapsed().as_nanos() as f64);
    }
    Ok((stored, best))
}

/// The best time of [`ROUNDS`] to decompress every body that compressed.
fn decompress_all(bodies: &[Vec<u8>], level: i32) -> anyhow::Result<f64> {
    let mut compressor = zstd::bulk::Compressor::new(level)?;
    let frames: Vec<(Vec<u8>, usize)> = bodies
        .iter()
        .map(|body| Ok((compressor.compress(body)?, body.len())))
        .collect::<anyhow::Result<_>>()?;
    let mut decompressor = zstd::bulk::Decompressor::new()?;
    let mut best = f64::MAX;
    for _ in 0..ROUNDS {
        let started = Instant::now();
        for (frame, len) in &frames {
            let mut body = Vec::with_capacity(*len);
            decompressor.decompress_to_buffer(frame.as_slice(), &mut body)?;
        }
        best = best.min(started.elapsed().as_nanos() as f64);
    }
    Ok(best)
}

/// The load generator's bodies, as `bench/run.sh` sends them by default.
fn bench_mix() -> anyhow::Result<Vec<Vec<u8>>> {
    let spec = body_sizes::SizeSpec {
        mean: 10_240,
        sigma: 1.0,
        large_share: 0.002,
        large_size: 1_000_000,
    };
    let bodies =
        event_body::EventBodies::new("c1".into(), body_sizes::BodySizes::draw(spec, 1)?, 1);
    Ok((0..4096).map(|seq| bodies.body(seq).to_vec()).collect())
}

fn events(count: u64, event: fn(u64) -> serde_json::Value) -> Vec<Vec<u8>> {
    (0..count)
        .map(|n| serde_json::to_vec(&event(n)).unwrap_or_default())
        .collect()
}

/// The small real bodies of the provider fixtures (`request.body_b64`).
fn fixture_bodies() -> anyhow::Result<Vec<Vec<u8>>> {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../hookinbox-verify/tests/fixtures"
    );
    let mut bodies = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        for line in std::fs::read_to_string(&path)?.lines() {
            let case: serde_json::Value = serde_json::from_str(line)?;
            if let Some(b64) = case["request"]["body_b64"].as_str() {
                bodies.push(base64::engine::general_purpose::STANDARD.decode(b64)?);
            }
        }
    }
    Ok(bodies)
}

/// A pseudo-random but repeatable hex string of `len` digits.
fn hex(seed: u64, len: usize) -> String {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from_digit((state % 16) as u32, 16).unwrap_or('0')
        })
        .collect()
}

fn github_user(login: &str, id: u64) -> serde_json::Value {
    let api = format!("https://api.github.com/users/{login}");
    json!({
        "login": login, "id": id, "node_id": format!("MDQ6VXNlcj{}", hex(id, 8)),
        "avatar_url": format!("https://avatars.githubusercontent.com/u/{id}?v=4"),
        "gravatar_id": "", "url": api, "html_url": format!("https://github.com/{login}"),
        "followers_url": format!("{api}/followers"),
        "following_url": format!("{api}/following{{/other_user}}"),
        "gists_url": format!("{api}/gists{{/gist_id}}"),
        "starred_url": format!("{api}/starred{{/owner}}{{/repo}}"),
        "subscriptions_url": format!("{api}/subscriptions"),
        "organizations_url": format!("{api}/orgs"), "repos_url": format!("{api}/repos"),
        "events_url": format!("{api}/events{{/privacy}}"),
        "received_events_url": format!("{api}/received_events"),
        "type": "User", "user_view_type": "public", "site_admin": false
    })
}

fn github_repo(owner: &str, name: &str, id: u64) -> serde_json::Value {
    let full = format!("{owner}/{name}");
    let api = format!("https://api.github.com/repos/{full}");
    let mut repo = json!({
        "id": id, "node_id": format!("R_kgDO{}", hex(id, 6)), "name": name, "full_name": full,
        "private": false, "owner": github_user(owner, id / 7), "html_url": format!("https://github.com/{full}"),
        "description": "Receives webhooks durably and delivers them", "fork": false, "url": api,
        "created_at": "2024-03-11T09:12:44Z", "updated_at": "2026-11-30T17:02:10Z",
        "pushed_at": "2026-12-01T08:41:03Z", "git_url": format!("git://github.com/{full}.git"),
        "ssh_url": format!("git@github.com:{full}.git"), "clone_url": format!("https://github.com/{full}.git"),
        "svn_url": format!("https://github.com/{full}"), "homepage": null, "size": 4211,
        "stargazers_count": 318, "watchers_count": 318, "language": "Rust", "has_issues": true,
        "has_projects": true, "has_downloads": true, "has_wiki": false, "has_pages": false,
        "has_discussions": false, "forks_count": 12, "mirror_url": null, "archived": false,
        "disabled": false, "open_issues_count": 9, "license": {"key": "mit", "name": "MIT License",
        "spdx_id": "MIT", "url": "https://api.github.com/licenses/mit", "node_id": "MDc6TGljZW5zZTEz"},
        "allow_forking": true, "is_template": false, "web_commit_signoff_required": false,
        "topics": ["webhooks", "rust"], "visibility": "public", "forks": 12, "open_issues": 9,
        "watchers": 318, "default_branch": "main"
    });
    for (key, path) in [
        ("forks_url", "/forks"),
        ("keys_url", "/keys{/key_id}"),
        ("collaborators_url", "/collaborators{/collaborator}"),
        ("teams_url", "/teams"),
        ("hooks_url", "/hooks"),
        ("issue_events_url", "/issues/events{/number}"),
        ("events_url", "/events"),
        ("assignees_url", "/assignees{/user}"),
        ("branches_url", "/branches{/branch}"),
        ("tags_url", "/tags"),
        ("blobs_url", "/git/blobs{/sha}"),
        ("git_tags_url", "/git/tags{/sha}"),
        ("git_refs_url", "/git/refs{/sha}"),
        ("trees_url", "/git/trees{/sha}"),
        ("statuses_url", "/statuses/{sha}"),
        ("languages_url", "/languages"),
        ("stargazers_url", "/stargazers"),
        ("contributors_url", "/contributors"),
        ("subscribers_url", "/subscribers"),
        ("subscription_url", "/subscription"),
        ("commits_url", "/commits{/sha}"),
        ("git_commits_url", "/git/commits{/sha}"),
        ("comments_url", "/comments{/number}"),
        ("issue_comment_url", "/issues/comments{/number}"),
        ("contents_url", "/contents/{+path}"),
        ("compare_url", "/compare/{base}...{head}"),
        ("merges_url", "/merges"),
        ("archive_url", "/{archive_format}{/ref}"),
        ("downloads_url", "/downloads"),
        ("issues_url", "/issues{/number}"),
        ("pulls_url", "/pulls{/number}"),
        ("milestones_url", "/milestones{/number}"),
        (
            "notifications_url",
            "/notifications{?since,all,participating}",
        ),
        ("labels_url", "/labels{/name}"),
        ("releases_url", "/releases{/id}"),
        ("deployments_url", "/deployments"),
    ] {
        repo[key] = json!(format!("{api}{path}"));
    }
    repo
}

fn github_pull_request(n: u64) -> serde_json::Value {
    let number = 1000 + n;
    let api = format!("https://api.github.com/repos/acme/hookinbox/pulls/{number}");
    let author = ["mara", "teodor", "lin-w", "okafor"][(n % 4) as usize];
    let head_sha = hex(n * 3 + 1, 40);
    json!({
        "action": "opened", "number": number,
        "pull_request": {
            "url": api, "id": 2_000_000_000 + n, "node_id": format!("PR_kwDO{}", hex(n, 12)),
            "html_url": format!("https://github.com/acme/hookinbox/pull/{number}"),
            "diff_url": format!("https://github.com/acme/hookinbox/pull/{number}.diff"),
            "patch_url": format!("https://github.com/acme/hookinbox/pull/{number}.patch"),
            "issue_url": format!("https://api.github.com/repos/acme/hookinbox/issues/{number}"),
            "number": number, "state": "open", "locked": false,
            "title": format!("Retry deliveries with jitter (#{})", n % 97),
            "user": github_user(author, 5_000 + n % 4),
            "body": "This changes the retry policy to full jitter and adds tests at the boundaries.\r\n\r\nCloses #12.",
            "created_at": "2026-12-01T08:41:03Z", "updated_at": "2026-12-01T08:41:03Z",
            "closed_at": null, "merged_at": null, "merge_commit_sha": null, "assignee": null,
            "assignees": [github_user(author, 5_000 + n % 4)],
            "requested_reviewers": [github_user("octo-reviewer", 77)], "requested_teams": [],
            "labels": [{"id": 1362934389, "node_id": "MDU6TGFiZWwxMzYyOTM0Mzg5",
                        "url": "https://api.github.com/repos/acme/hookinbox/labels/delivery",
                        "name": "delivery", "color": "d73a4a", "default": false,
                        "description": "Delivery workers"}],
            "milestone": null, "draft": false,
            "commits_url": format!("{api}/commits"), "review_comments_url": format!("{api}/comments"),
            "review_comment_url": "https://api.github.com/repos/acme/hookinbox/pulls/comments{/number}",
            "comments_url": format!("https://api.github.com/repos/acme/hookinbox/issues/{number}/comments"),
            "statuses_url": format!("https://api.github.com/repos/acme/hookinbox/statuses/{head_sha}"),
            "head": {"label": format!("{author}:retry-jitter-{n}"), "ref": format!("retry-jitter-{n}"),
                     "sha": head_sha, "user": github_user(author, 5_000 + n % 4),
                     "repo": github_repo("acme", "hookinbox", 186_853_002)},
            "base": {"label": "acme:main", "ref": "main", "sha": hex(n * 3 + 2, 40),
                     "user": github_user("acme", 9_000), "repo": github_repo("acme", "hookinbox", 186_853_002)},
            "_links": {"self": {"href": api}, "html": {"href": format!("https://github.com/acme/hookinbox/pull/{number}")}},
            "author_association": "CONTRIBUTOR", "auto_merge": null, "active_lock_reason": null,
            "merged": false, "mergeable": null, "rebaseable": null, "mergeable_state": "unknown",
            "merged_by": null, "comments": 0, "review_comments": 0, "maintainer_can_modify": false,
            "commits": 1 + n % 5, "additions": 40 + n % 300, "deletions": n % 80, "changed_files": 1 + n % 9
        },
        "repository": github_repo("acme", "hookinbox", 186_853_002),
        "sender": github_user(author, 5_000 + n % 4)
    })
}

fn stripe_invoice_paid(n: u64) -> serde_json::Value {
    let customer = format!("cus_{}", hex(n % 50, 14));
    let created = 1_767_225_600 + n * 37;
    let lines: Vec<serde_json::Value> = (0..1 + n % 3)
        .map(|i| {
            json!({
                "id": format!("il_{}", hex(n * 10 + i, 24)), "object": "line_item",
                "amount": 1900 * (i + 1), "amount_excluding_tax": 1900 * (i + 1), "currency": "eur",
                "description": format!("{} × Pro plan (at €19.00 / month)", i + 1),
                "discount_amounts": [], "discountable": true, "discounts": [], "invoice": null,
                "livemode": true, "metadata": {},
                "period": {"end": created + 2_592_000, "start": created},
                "plan": {"id": "price_1PRo0000000000000000", "object": "plan", "active": true,
                         "aggregate_usage": null, "amount": 1900, "amount_decimal": "1900",
                         "billing_scheme": "per_unit", "created": 1_700_000_000, "currency": "eur",
                         "interval": "month", "interval_count": 1, "livemode": true, "metadata": {},
                         "nickname": null, "product": "prod_PRoPlan00000", "tiers_mode": null,
                         "transform_usage": null, "trial_period_days": null, "usage_type": "licensed"},
                "proration": false, "proration_details": {"credited_items": null},
                "quantity": i + 1, "subscription": format!("sub_{}", hex(n, 24)),
                "subscription_item": format!("si_{}", hex(n + i, 14)),
                "tax_amounts": [], "tax_rates": [], "type": "subscription",
                "unit_amount_excluding_tax": "1900"
            })
        })
        .collect();
    json!({
        "id": format!("evt_{}", hex(n, 24)), "object": "event", "api_version": "2024-06-20",
        "created": created, "livemode": true, "pending_webhooks": 1,
        "request": {"id": null, "idempotency_key": null}, "type": "invoice.paid",
        "data": {"object": {
            "id": format!("in_{}", hex(n + 7, 24)), "object": "invoice",
            "account_country": "DE", "account_name": "Acme GmbH", "account_tax_ids": null,
            "amount_due": 1900, "amount_paid": 1900, "amount_remaining": 0, "amount_shipping": 0,
            "application": null, "application_fee_amount": null, "attempt_count": 1, "attempted": true,
            "auto_advance": false, "automatic_tax": {"enabled": false, "liability": null, "status": null},
            "billing_reason": "subscription_cycle", "charge": format!("ch_{}", hex(n + 9, 24)),
            "collection_method": "charge_automatically", "created": created, "currency": "eur",
            "custom_fields": null, "customer": customer, "customer_address": null,
            "customer_email": format!("billing+{}@example.com", n % 50), "customer_name": "Example Customer",
            "customer_phone": null, "customer_shipping": null, "customer_tax_exempt": "none",
            "customer_tax_ids": [], "default_payment_method": null, "default_source": null,
            "default_tax_rates": [], "description": null, "discount": null, "discounts": [],
            "due_date": null, "effective_at": created, "ending_balance": 0, "footer": null,
            "from_invoice": null, "hosted_invoice_url": format!("https://invoice.stripe.com/i/acct_1Acme/test_{}", hex(n + 3, 40)),
            "invoice_pdf": format!("https://pay.stripe.com/invoice/acct_1Acme/test_{}/pdf", hex(n + 3, 40)),
            "issuer": {"type": "self"}, "last_finalization_error": null, "latest_revision": null,
            "lines": {"object": "list", "data": lines, "has_more": false, "total_count": 1 + n % 3,
                      "url": format!("/v1/invoices/in_{}/lines", hex(n + 7, 24))},
            "livemode": true, "metadata": {}, "next_payment_attempt": null,
            "number": format!("ACME-{:04}-{:04}", n / 100, n % 100), "on_behalf_of": null, "paid": true,
            "paid_out_of_band": false, "payment_intent": format!("pi_{}", hex(n + 11, 24)),
            "payment_settings": {"default_mandate": null, "payment_method_options": null, "payment_method_types": null},
            "period_end": created, "period_start": created - 2_592_000, "post_payment_credit_notes_amount": 0,
            "pre_payment_credit_notes_amount": 0, "quote": null, "receipt_number": null, "rendering": null,
            "shipping_cost": null, "shipping_details": null, "starting_balance": 0, "statement_descriptor": null,
            "status": "paid", "status_transitions": {"finalized_at": created, "marked_uncollectible_at": null,
            "paid_at": created, "voided_at": null}, "subscription": format!("sub_{}", hex(n, 24)),
            "subscription_details": {"metadata": {}}, "subtotal": 1900, "subtotal_excluding_tax": 1900,
            "tax": null, "test_clock": null, "total": 1900, "total_discount_amounts": [],
            "total_excluding_tax": 1900, "total_tax_amounts": [], "transfer_data": null,
            "webhooks_delivered_at": created
        }}
    })
}

fn shopify_address(n: u64) -> serde_json::Value {
    json!({"first_name": "Alex", "address1": format!("{} Lindenstraße", 1 + n % 90), "phone": "+49 30 1234567",
           "city": "Berlin", "zip": "10969", "province": null, "country": "Germany", "last_name": "Example",
           "address2": null, "company": null, "latitude": 52.5, "longitude": 13.4, "name": "Alex Example",
           "country_code": "DE", "province_code": null})
}

fn shopify_money(amount: &str) -> serde_json::Value {
    json!({"shop_money": {"amount": amount, "currency_code": "EUR"},
           "presentment_money": {"amount": amount, "currency_code": "EUR"}})
}

fn shopify_order(n: u64) -> serde_json::Value {
    let id = 5_900_000_000_000 + n;
    let colours = ["blue", "sand", "moss", "coal"];
    let items: Vec<serde_json::Value> = (0..1 + n % 4)
        .map(|i| {
            let colour = colours[i as usize];
            json!({"id": 13_000_000_000_000 + n * 10 + i, "admin_graphql_api_id": format!("gid://shopify/LineItem/{}", 13_000_000_000_000 + n * 10 + i),
                   "attributed_staffs": [], "current_quantity": 1, "fulfillable_quantity": 1,
                   "fulfillment_service": "manual", "fulfillment_status": null, "gift_card": false,
                   "grams": 250, "name": format!("Ceramic mug — {colour}"),
                   "price": "24.00", "price_set": shopify_money("24.00"), "product_exists": true,
                   "product_id": 8_100_000_000 + i, "properties": [], "quantity": 1, "requires_shipping": true,
                   "sku": format!("MUG-{}", i), "taxable": true, "title": "Ceramic mug",
                   "total_discount": "0.00", "total_discount_set": shopify_money("0.00"),
                   "variant_id": 44_000_000_000 + i, "variant_inventory_management": "shopify",
                   "variant_title": colour, "vendor": "Acme Ceramics",
                   "tax_lines": [{"channel_liable": false, "price": "3.83", "price_set": shopify_money("3.83"),
                                  "rate": 0.19, "title": "DE MwSt"}],
                   "duties": [], "discount_allocations": []})
        })
        .collect();
    json!({
        "id": id, "admin_graphql_api_id": format!("gid://shopify/Order/{id}"), "app_id": 580111,
        "browser_ip": format!("203.0.113.{}", n % 250), "buyer_accepts_marketing": false,
        "cancel_reason": null, "cancelled_at": null, "cart_token": hex(n, 32),
        "checkout_id": 37_000_000_000_000 + n, "checkout_token": hex(n + 1, 32),
        "client_details": {"accept_language": "de-DE", "browser_height": null, "browser_ip": format!("203.0.113.{}", n % 250),
                           "browser_width": null, "session_hash": null,
                           "user_agent": "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15"},
        "closed_at": null, "confirmation_number": hex(n + 5, 9).to_uppercase(), "confirmed": true,
        "contact_email": format!("customer{}@example.com", n), "created_at": "2026-12-01T09:41:03+01:00",
        "currency": "EUR", "current_subtotal_price": "96.00", "current_subtotal_price_set": shopify_money("96.00"),
        "current_total_discounts": "0.00", "current_total_discounts_set": shopify_money("0.00"),
        "current_total_price": "100.90", "current_total_price_set": shopify_money("100.90"),
        "current_total_tax": "16.11", "current_total_tax_set": shopify_money("16.11"),
        "customer_locale": "de", "discount_codes": [], "email": format!("customer{}@example.com", n),
        "estimated_taxes": false, "financial_status": "paid", "fulfillment_status": null,
        "landing_site": "/products/ceramic-mug", "name": format!("#{}", 1000 + n), "note": null,
        "note_attributes": [], "number": n, "order_number": 1000 + n,
        "order_status_url": format!("https://shop.example.com/5910/orders/{}/authenticate?key={}", hex(n, 32), hex(n + 2, 32)),
        "payment_gateway_names": ["shopify_payments"], "phone": null, "presentment_currency": "EUR",
        "processed_at": "2026-12-01T09:41:02+01:00", "source_name": "web", "subtotal_price": "96.00",
        "subtotal_price_set": shopify_money("96.00"), "tags": "", "tax_lines": [{"price": "16.11", "rate": 0.19,
        "title": "DE MwSt", "price_set": shopify_money("16.11"), "channel_liable": false}],
        "taxes_included": true, "test": false, "token": hex(n + 4, 32), "total_discounts": "0.00",
        "total_discounts_set": shopify_money("0.00"), "total_line_items_price": "96.00",
        "total_line_items_price_set": shopify_money("96.00"), "total_price": "100.90",
        "total_price_set": shopify_money("100.90"), "total_tax": "16.11", "total_tax_set": shopify_money("16.11"),
        "total_weight": 1000, "updated_at": "2026-12-01T09:41:04+01:00", "user_id": null,
        "billing_address": shopify_address(n), "shipping_address": shopify_address(n),
        "customer": {"id": 7_400_000_000_000 + n % 300, "email": format!("customer{}@example.com", n),
                     "created_at": "2025-04-02T10:00:00+02:00", "updated_at": "2026-12-01T09:41:04+01:00",
                     "first_name": "Alex", "last_name": "Example", "state": "enabled", "note": null,
                     "verified_email": true, "multipass_identifier": null, "tax_exempt": false,
                     "phone": null, "currency": "EUR", "tax_exemptions": [],
                     "admin_graphql_api_id": format!("gid://shopify/Customer/{}", 7_400_000_000_000 + n % 300),
                     "default_address": shopify_address(n)},
        "discount_applications": [], "fulfillments": [], "line_items": items, "payment_terms": null,
        "refunds": [], "shipping_lines": [{"id": 4_700_000_000_000 + n, "carrier_identifier": null,
        "code": "Standard", "discounted_price": "4.90", "discounted_price_set": shopify_money("4.90"),
        "phone": null, "price": "4.90", "price_set": shopify_money("4.90"), "source": "shopify",
        "title": "Standard", "tax_lines": [], "discount_allocations": []}]
    })
}
