//! Requests for discord, zoom, twitch, sendgrid, adyen and xero signed outside
//! this crate — by the providers' own libraries where one exists (Adyen,
//! SendGrid, discord-interactions), by the documented formula otherwise —
//! must verify exactly as each fixture says. `tests/fixtures/documented/gen_asym_providers.py`
//! wrote them.

use crate::support;

use std::path::PathBuf;

#[test]
fn externally_signed_fixtures_verify_as_expected() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/documented/asym_providers.jsonl");
    support::assert_all(&support::read_vectors(&path));
}
