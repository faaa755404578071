//! Why a request is refused: the closed set of reason strings of docs/architecture.md §2
//! that verification can produce, plus a human-readable detail for operators.

use std::borrow::Cow;

/// The reasons verification can give. Their strings are part of the HTTP
/// contract; [`Reason::as_str`] is the one place they are spelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// The header (or field) that carries the signature is absent.
    MissingSignature,
    /// The signature metadata is present but cannot be parsed.
    MalformedSignature,
    /// No trusted secret version produced any of the presented signatures.
    Signature,
    /// The signed timestamp is malformed or outside the tolerance, in either direction.
    Timestamp,
    /// The verified body carries no logical event id where the provider puts one.
    MissingEventId,
    /// The verified body is not the envelope the provider sends (bad JSON, bad form).
    MalformedBody,
}

impl Reason {
    /// The wire spelling of the reason.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::MissingSignature => "missing_signature",
            Reason::MalformedSignature => "malformed_signature",
            Reason::Signature => "signature",
            Reason::Timestamp => "timestamp",
            Reason::MissingEventId => "missing_event_id",
            Reason::MalformedBody => "malformed_body",
        }
    }

    /// Every reason, for tests and documentation.
    pub const ALL: [Reason; 6] = [
        Reason::MissingSignature,
        Reason::MalformedSignature,
        Reason::Signature,
        Reason::Timestamp,
        Reason::MissingEventId,
        Reason::MalformedBody,
    ];
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refusal: the reason that goes on the wire, and a detail for the operator
/// (`hookinbox verify`, logs). The detail names headers and fields, never a
/// secret and never bytes of an unverified body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}: {detail}")]
pub struct Refusal {
    pub reason: Reason,
    pub detail: Cow<'static, str>,
}

impl Refusal {
    pub fn new(reason: Reason, detail: impl Into<Cow<'static, str>>) -> Self {
        Refusal {
            reason,
            detail: detail.into(),
        }
    }
    pub fn missing_signature(detail: impl Into<Cow<'static, str>>) -> Self {
        Self::new(Reason::MissingSignature, detail)
    }
    pub fn malformed_signature(detail: impl Into<Cow<'static, str>>) -> Self {
        Self::new(Reason::MalformedSignature, detail)
    }
    pub fn signature(detail: impl Into<Cow<'static, str>>) -> Self {
        Self::new(Reason::Signature, detail)
    }
    pub fn timestamp(detail: impl Into<Cow<'static, str>>) -> Self {
        Self::new(Reason::Timestamp, detail)
    }
    pub fn missing_event_id(detail: impl Into<Cow<'static, str>>) -> Self {
        Self::new(Reason::MissingEventId, detail)
    }
    pub fn malformed_body(detail: impl Into<Cow<'static, str>>) -> Self {
        Self::new(Reason::MalformedBody, detail)
    }
}
