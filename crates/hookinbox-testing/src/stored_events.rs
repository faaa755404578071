//! Events written into a store directly, as `serve` would have stored them
//! at some earlier time: for tests that need rows older than the test
//! itself (retention), which no request can make.

use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use hookinbox_store::{EncryptionKeys, Fingerprint, NewEvent, UnsignedMetadata};
use secrecy::SecretBox;

use crate::config::{ENCRYPTION_KEY, ENCRYPTION_KEY_ID};

/// The key ring of [`crate::TestConfig::encrypted`], to open (or write) a
/// database the encrypted test configuration uses.
pub fn test_encryption_keys() -> Arc<EncryptionKeys> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(ENCRYPTION_KEY)
        .expect("the test key is base64");
    let key = SecretBox::init_with_mut(|key: &mut [u8; 32]| key.copy_from_slice(&bytes));
    Arc::new(EncryptionKeys::new(ENCRYPTION_KEY_ID, key).expect("the test key id is valid"))
}

/// A `lab` event of the test configuration's `lab` endpoint (no targets),
/// with event id `event_id` and `body`, received at `received_at_ms`.
pub fn lab_stored_event(event_id: &str, body: &[u8], received_at_ms: i64) -> NewEvent {
    NewEvent {
        endpoint_id: "lab".to_owned(),
        provider: "lab".to_owned(),
        provider_event_id: event_id.to_owned(),
        event_type: Some("test.event".to_owned()),
        object_id: None,
        object_version: None,
        provider_created_at: None,
        received_at_ms,
        content_type: Some("application/json".to_owned()),
        payload: Bytes::copy_from_slice(body),
        fingerprint: Fingerprint::of(body),
        audit_headers: vec![("content-type".to_owned(), "application/json".to_owned())],
        matched_secret_version: "v1".to_owned(),
        targets: Vec::new(),
        not_routed: Vec::new(),
        delays_ms: Default::default(),
        unsigned_metadata: UnsignedMetadata::default(),
        fingerprint_window_ms: None,
        trace_parent: None,
    }
}
