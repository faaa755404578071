//! MEASUREMENT ONLY: instructions of the Standard Webhooks envelope read,
//! with a `serde_json::Value` of the whole body (as before #20) and with
//! `JsonFields` (bench/RESULTS.md, section 0f). Run under callgrind and read
//! the inclusive counts of `by_value` and `by_fields`:
//!
//! ```text
//! cargo build --profile profiling -p hookinbox-verify --example envelope_cost
//! valgrind --tool=callgrind --callgrind-out-file=envelope.out \
//!     target/profiling/examples/envelope_cost 300
//! callgrind_annotate --inclusive=yes envelope.out | grep envelope_cost::by_
//! ```
//!
//! Bodies are the load generator's shape (`{"id":…,"type":"bench","pad":"…"}`,
//! bench/src/event_body.rs), lognormal sizes around 10 KiB (σ = 1), drawn
//! from a fixed seed, so both readers see the same bytes.

use std::hint::black_box;

use hookinbox_verify::envelope::{self, JsonFields};

fn main() {
    let count: u64 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(300);
    let bodies: Vec<Vec<u8>> = (0..count).map(body).collect();
    let bytes: usize = bodies.iter().map(Vec::len).sum();
    let mut found = 0;
    for body in &bodies {
        found += usize::from(by_value(body).is_some());
        found += usize::from(by_fields(body).is_some());
    }
    println!(
        "{count} bodies, {} bytes on average, {found} types read",
        bytes / bodies.len().max(1)
    );
}

/// Before #20: a `Value` of the whole body, then two pointers.
#[inline(never)]
fn by_value(body: &[u8]) -> Option<(Option<String>, Option<i64>)> {
    let value = envelope::json(black_box(body)).ok()?;
    Some((
        envelope::string_at(&value, "/type"),
        envelope::rfc3339_at(&value, "/timestamp"),
    ))
}

/// After: the two fields in one pass.
#[inline(never)]
fn by_fields(body: &[u8]) -> Option<(Option<String>, Option<i64>)> {
    let fields = JsonFields::read(black_box(body), &["/type", "/timestamp"]).ok()?;
    Some((fields.string_at("/type"), fields.rfc3339_at("/timestamp")))
}

/// Body `n`: the benchmark's shape at a lognormal size (median ~6 KiB,
/// mean ~10 KiB), padded with alphanumerics.
fn body(n: u64) -> Vec<u8> {
    let mut state = n.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut uniform = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let (u1, u2) = (uniform().max(f64::MIN_POSITIVE), uniform());
    let normal = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
    let size = (10_240.0 * (normal - 0.5).exp()) as usize;
    let mut body = format!(r#"{{"id":"bench-r1-{n}","type":"bench","pad":""#).into_bytes();
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    while body.len() + 2 < size {
        body.push(ALPHABET[(uniform() * ALPHABET.len() as f64) as usize % ALPHABET.len()]);
    }
    body.extend_from_slice(b"\"}");
    body
}
