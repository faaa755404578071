//! What a provider's signature covers, declared by its adapter.
//!
//! A valid signature proves only the bytes it was computed over. Several
//! providers take the event id (or type) from a header no signature covers
//! (GitHub's `X-GitHub-Delivery`, Shopify's `X-Shopify-Event-Id`, …), and
//! Mailgun signs a token and a timestamp but none of the event data. So each
//! adapter says what its scheme binds, and the service acts on it: an
//! unsigned id is not trusted alone to tell two events apart (the body
//! fingerprint is a second identity inside the redelivery window), metadata
//! from unsigned values is marked as such where it is stored and delivered,
//! and an endpoint whose body is not covered needs a second credential.

/// What the signature of one provider's requests covers. A field is `true`
/// only when the signature covers that value on *every* request the adapter
/// accepts: a value read from the signed body on some requests and from an
/// unsigned header on others is declared unsigned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignatureCoverage {
    /// How the body is bound to the request's proof of origin.
    pub body: BodyCoverage,
    /// The event id is read from signed bytes (or composed only of values
    /// read from them).
    pub event_id: bool,
    /// The event type is read from signed bytes, or the scheme reads none.
    pub event_type: bool,
}

/// How the body of a request is bound to the proof that its provider sent it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyCoverage {
    /// The signature is computed over the whole body (or, where the provider
    /// signs decoded form parameters or a digest of the body, over all of it).
    Signed,
    /// The signature covers named fields of the body, the event id and the
    /// facts the event reports among them (Adyen's eight fields); the rest
    /// of the body is not covered.
    SignedFields,
    /// Nothing is signed: a secret token sent as is authenticates the whole
    /// request (GitLab). Whoever holds the token could send any body, so a
    /// second shared secret beside it would add nothing.
    Token,
    /// The signature covers none of the event data (Mailgun signs a token and
    /// a timestamp beside the body). Anyone holding a request signed with the
    /// same key (every webhook of the account carries one) could attach any
    /// body to it, so an endpoint must also require a credential of its own.
    Unsigned,
}

impl SignatureCoverage {
    /// A scheme whose signature covers the whole body, the event id and the
    /// event type.
    pub const COMPLETE: SignatureCoverage = SignatureCoverage {
        body: BodyCoverage::Signed,
        event_id: true,
        event_type: true,
    };

    /// Whether an endpoint of this scheme needs a credential besides the
    /// signature (`basic_auth`) to know the body is its provider's.
    pub fn needs_endpoint_credential(&self) -> bool {
        self.body == BodyCoverage::Unsigned
    }

    /// The metadata of `envelope` that came from unsigned values: only
    /// values the envelope has are named.
    pub fn unsigned_in(&self, envelope: &crate::Envelope) -> UnsignedMetadata {
        UnsignedMetadata {
            event_id: !self.event_id,
            event_type: !self.event_type && envelope.event_type.is_some(),
        }
    }
}

/// Which metadata of one verified event came from values no signature
/// covers, so that whoever stores or receives it can tell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnsignedMetadata {
    pub event_id: bool,
    pub event_type: bool,
}

impl UnsignedMetadata {
    /// True when every piece of metadata was signed.
    pub fn is_empty(&self) -> bool {
        !self.event_id && !self.event_type
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Envelope;

    #[test]
    fn only_metadata_the_event_has_is_named_unsigned() {
        let coverage = SignatureCoverage {
            body: BodyCoverage::Signed,
            event_id: false,
            event_type: false,
        };
        let untyped = Envelope::with_id("d-1").unwrap();
        assert_eq!(
            coverage.unsigned_in(&untyped),
            UnsignedMetadata {
                event_id: true,
                event_type: false
            }
        );
        let typed = untyped.event_type(Some("push".into()));
        assert_eq!(
            coverage.unsigned_in(&typed),
            UnsignedMetadata {
                event_id: true,
                event_type: true
            }
        );
        assert!(SignatureCoverage::COMPLETE.unsigned_in(&typed).is_empty());
    }

    #[test]
    fn only_an_unsigned_body_needs_an_endpoint_credential() {
        for (body, needs) in [
            (BodyCoverage::Signed, false),
            (BodyCoverage::SignedFields, false),
            (BodyCoverage::Token, false),
            (BodyCoverage::Unsigned, true),
        ] {
            let coverage = SignatureCoverage {
                body,
                ..SignatureCoverage::COMPLETE
            };
            assert_eq!(coverage.needs_endpoint_credential(), needs, "{body:?}");
        }
    }
}
