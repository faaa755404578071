//! Pure webhook verification for hookinbox.
//!
//! This crate turns an untrusted request (headers + raw body bytes) into a
//! [`Verified`] value, or refuses it with one of the closed set of reasons of
//! docs/architecture.md §2. It has no I/O, no async and no clock of its own: the caller
//! passes `now`, so every freshness rule is testable at its boundaries.
//!
//! The shape is one pipeline for every provider ([`Verifier`]) and one small
//! [`Adapter`] per provider that only knows *where* that provider puts its
//! signature, timestamp and event id, and *which bytes* it signs. Adding a
//! provider is one file under `providers/` and one line in [`registry`].
//!
//! Most adapters are declarations: a [`SignatureHeader`] (or
//! [`SignatureList`]) constant says where the signature is and how it is
//! written, and the JSON-pointer readers of [`envelope`] say where the event
//! id and its metadata are; what is left in an adapter is what its provider
//! really does differently.
//!
//! Verified-ness is a type: [`Verified`] can only be built by
//! [`Verifier::verify`], so code that needs a verified event cannot be handed
//! an unverified request.

pub mod adapter;
pub mod basic_credentials;
pub mod catalogue;
pub mod compact_jws;
pub mod coverage;
pub mod dotted_timestamp;
pub mod encoding;
pub mod envelope;
pub mod freshness;
pub mod handover;
pub mod headers;
pub mod json_fields;
pub mod key;
pub mod key_reference;
pub mod key_ring;
pub mod probe;
pub mod providers;
pub mod refusal;
pub mod registry;
pub mod request;
pub mod signature;
pub mod signature_header;
pub mod signature_list;
#[cfg(feature = "sign")]
pub mod signer;
#[cfg(test)]
pub(crate) mod test_support;
pub mod verifier;

pub use adapter::Adapter;
pub use catalogue::{ProviderFacts, Signing, VectorSource};
pub use coverage::{BodyCoverage, SignatureCoverage, UnsignedMetadata};
pub use envelope::{Envelope, Outcome, Reply};
pub use handover::Handover;
pub use headers::Headers;
pub use key::{Key, KeyError};
pub use key_reference::{
    FetchedKeys, KeyReference, NoFetchedKeys, ResolvedKey, FETCHED_KEY_VERSION,
};
pub use key_ring::{KeyRing, SecretVersion};
pub use probe::Probe;
pub use refusal::{Reason, Refusal};
pub use registry::{adapter_for, provider_names, AdapterSettings, SettingsError};
pub use request::Request;
// The secret types of `SecretInput` and `Key`, so a caller needs no `secrecy`
// of its own (nor a matching version of it).
pub use secrecy::{ExposeSecret, SecretSlice, SecretString};
pub use signature::{Algorithm, Candidate, SignatureClaim, SignedMessage};
pub use signature_header::{SignatureEncoding, SignatureHeader};
pub use signature_list::SignatureList;
#[cfg(feature = "sign")]
pub use signer::{Outgoing, SignError, SignedRequest};
pub use verifier::{
    Diagnosis, Failure, SecretInput, Verified, Verifier, VerifierError, MAX_SIGNATURE_CANDIDATES,
};
