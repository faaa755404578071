//! The one verification pipeline every provider goes through (docs/architecture.md §1,
//! steps 4–7): read the claim, check it against every trusted secret
//! version, check the signed timestamp in both directions, and only then read
//! the verified body.

use secrecy::{ExposeSecret, SecretString};

use crate::{
    freshness, Adapter, Envelope, FetchedKeys, KeyError, KeyRing, NoFetchedKeys, Outcome, Refusal,
    Request, SecretVersion, UnsignedMetadata, FETCHED_KEY_VERSION,
};

/// The most signatures one request may present. Senders present one, or a
/// few while they rotate a secret; more is only a way to make the receiver
/// run many checks (each an Ed25519 or HMAC pass over up to the whole body)
/// for one unauthenticated request. Refused before any cryptography.
pub const MAX_SIGNATURE_CANDIDATES: usize = 8;

/// One configured secret, before its provider decodes it. The value is a
/// [`SecretString`]: redacted in `Debug`, zeroed when dropped.
#[derive(Debug, Clone)]
pub struct SecretInput {
    pub version: String,
    pub value: SecretString,
    pub not_before: Option<i64>,
    pub not_after: Option<i64>,
}

/// Why a verifier could not be built from configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifierError {
    #[error("no secret is configured")]
    NoSecrets,
    #[error("secret version `{version}`: {source}")]
    Key { version: String, source: KeyError },
    #[error("secret version `{0}` is listed twice")]
    DuplicateVersion(String),
}

/// A verified request: built only by [`Verifier::verify`].
#[derive(Debug, Clone)]
pub struct Verified {
    outcome: Outcome,
    matched_secret_version: String,
    diagnosis: Diagnosis,
    unsigned: UnsignedMetadata,
}

impl Verified {
    /// What the verified body is: an event, a handshake to answer, or an
    /// event of a type the endpoint does not take.
    pub fn outcome(&self) -> &Outcome {
        &self.outcome
    }

    pub fn into_outcome(self) -> Outcome {
        self.outcome
    }

    /// The event, when the outcome is one to store.
    pub fn event(&self) -> Option<&Envelope> {
        match &self.outcome {
            Outcome::Event(envelope) => Some(envelope),
            _ => None,
        }
    }

    /// Which metadata of the event came from values the provider's
    /// signature does not cover (see [`crate::coverage`]); empty for
    /// handshakes.
    pub fn unsigned_metadata(&self) -> UnsignedMetadata {
        self.unsigned
    }

    pub fn matched_secret_version(&self) -> &str {
        &self.matched_secret_version
    }

    pub fn diagnosis(&self) -> &Diagnosis {
        &self.diagnosis
    }
}

/// What the pipeline saw, for operators (`hookinbox verify`, logs). Holds
/// version names and numbers only, never secrets or body bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnosis {
    /// Secret versions trusted at `now` and tried, in order.
    pub tried_versions: Vec<String>,
    /// Secret versions outside their validity window at `now`, not tried.
    pub inactive_versions: Vec<String>,
    /// How many signatures the request presented.
    pub presented_signatures: usize,
    /// The signed timestamp, when the scheme has one.
    pub signed_at: Option<i64>,
    /// `now - signed_at`: positive in the past, negative in the future.
    pub skew_seconds: Option<i64>,
    /// The tolerance applied to the timestamp.
    pub tolerance_seconds: Option<u64>,
}

/// A refused request: the reason for the wire and what the pipeline saw.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{refusal}")]
pub struct Failure {
    pub refusal: Refusal,
    /// Boxed so `Result<_, Failure>` stays small on the accepted path.
    pub diagnosis: Box<Diagnosis>,
}

/// The verification pipeline of one endpoint.
#[derive(Debug)]
pub struct Verifier {
    adapter: Box<dyn Adapter>,
    keys: KeyRing,
    tolerance_seconds: Option<u64>,
    allowed_types: Option<Vec<String>>,
}

impl Verifier {
    /// Builds a verifier, decoding every secret the way `adapter`'s provider
    /// encodes them. An undecodable secret is an error naming its version.
    pub fn new(
        adapter: Box<dyn Adapter>,
        secrets: impl IntoIterator<Item = SecretInput>,
    ) -> Result<Verifier, VerifierError> {
        let mut versions: Vec<SecretVersion> = Vec::new();
        for secret in secrets {
            if versions.iter().any(|v| v.version == secret.version) {
                return Err(VerifierError::DuplicateVersion(secret.version.clone()));
            }
            let key = adapter
                .parse_key(secret.value.expose_secret())
                .map_err(|source| VerifierError::Key {
                    version: secret.version.clone(),
                    source,
                })?;
            versions.push(SecretVersion {
                version: secret.version.clone(),
                key,
                not_before: secret.not_before,
                not_after: secret.not_after,
            });
        }
        // A provider that serves its own keys needs no configured secret; a
        // provider that hands its secret over starts with none (until then
        // every request is refused: the service answers 503).
        if versions.is_empty() && !adapter.fetches_keys() && !adapter.learns_secrets() {
            return Err(VerifierError::NoSecrets);
        }
        let tolerance_seconds = adapter.default_tolerance_seconds();
        Ok(Verifier {
            adapter,
            keys: KeyRing::new(versions),
            tolerance_seconds,
            allowed_types: None,
        })
    }

    /// Overrides the provider's default timestamp tolerance.
    pub fn with_tolerance_seconds(mut self, tolerance: Option<u64>) -> Self {
        if tolerance.is_some() {
            self.tolerance_seconds = tolerance;
        }
        self
    }

    /// Restricts the event types that are stored. An entry ending in `*`
    /// matches by prefix (`invoice.*`). Others are acknowledged but ignored.
    pub fn with_allowed_types(mut self, allowed: Option<Vec<String>>) -> Self {
        self.allowed_types = allowed;
        self
    }

    pub fn adapter(&self) -> &dyn Adapter {
        self.adapter.as_ref()
    }

    pub fn keys(&self) -> &KeyRing {
        &self.keys
    }

    /// The timestamp tolerance in force, if the scheme signs a timestamp.
    pub fn tolerance_seconds(&self) -> Option<u64> {
        self.tolerance_seconds
    }

    /// Whether an event type is one this endpoint stores.
    pub fn allows_type(&self, event_type: Option<&str>) -> bool {
        let Some(allowed) = &self.allowed_types else {
            return true;
        };
        let Some(event_type) = event_type else {
            return false;
        };
        allowed
            .iter()
            .any(|pattern| match pattern.strip_suffix('*') {
                Some(prefix) => event_type.starts_with(prefix),
                None => pattern == event_type,
            })
    }

    /// Runs the pipeline on one request at time `now` (unix seconds), with
    /// no fetched key: a provider that serves its own keys refuses it.
    pub fn verify(&self, request: &Request<'_>, now: i64) -> Result<Verified, Failure> {
        self.verify_with_keys(request, now, &NoFetchedKeys)
    }

    /// Runs the pipeline on one request at time `now` (unix seconds). For a
    /// provider that serves its own keys ([`Adapter::fetches_keys`]) the
    /// signature is checked with the key `fetched` holds for the request's
    /// [`Adapter::key_reference`] — and with nothing else; every other
    /// provider checks its configured key ring and ignores `fetched`.
    pub fn verify_with_keys(
        &self,
        request: &Request<'_>,
        now: i64,
        fetched: &dyn FetchedKeys,
    ) -> Result<Verified, Failure> {
        let mut diagnosis = Diagnosis::default();
        let fail = |refusal: Refusal, diagnosis: &Diagnosis| Failure {
            refusal,
            diagnosis: Box::new(diagnosis.clone()),
        };

        let claim = self
            .adapter
            .claim(request)
            .map_err(|refusal| fail(refusal, &diagnosis))?;
        diagnosis.presented_signatures = claim.candidates.len();
        diagnosis.signed_at = claim.timestamp;
        if claim.candidates.is_empty() {
            return Err(fail(
                Refusal::malformed_signature("no usable signature in the signature header"),
                &diagnosis,
            ));
        }
        if claim.candidates.len() > MAX_SIGNATURE_CANDIDATES {
            return Err(fail(
                Refusal::malformed_signature(format!(
                    "{} signatures presented; at most {MAX_SIGNATURE_CANDIDATES} are checked",
                    claim.candidates.len()
                )),
                &diagnosis,
            ));
        }

        let fetched_version = if self.adapter.fetches_keys() {
            let reference = self
                .adapter
                .key_reference(request)
                .map_err(|refusal| fail(refusal, &diagnosis))?
                .ok_or_else(|| {
                    fail(
                        Refusal::missing_signature("the request names no signing key"),
                        &diagnosis,
                    )
                })?;
            let key = fetched.key_for(&reference).ok_or_else(|| {
                fail(
                    Refusal::signature("the key the request names was not fetched"),
                    &diagnosis,
                )
            })?;
            Some(SecretVersion::new(FETCHED_KEY_VERSION, key))
        } else {
            None
        };
        diagnosis.inactive_versions = self
            .keys
            .versions()
            .iter()
            .filter(|v| fetched_version.is_none() && !v.is_active(now))
            .map(|v| v.version.clone())
            .collect();
        let candidates: Vec<&SecretVersion> = match &fetched_version {
            Some(version) => vec![version],
            None => self.keys.active(now).collect(),
        };
        let mut matched = None;
        for version in candidates {
            diagnosis.tried_versions.push(version.version.clone());
            if claim.is_signed_by(&version.key) {
                matched = Some(version);
                break;
            }
        }
        let Some(matched) = matched else {
            let detail = format!(
                "none of the trusted secret versions [{}] produced any of the {} presented signature(s){}",
                diagnosis.tried_versions.join(", "),
                diagnosis.presented_signatures,
                if diagnosis.inactive_versions.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; not tried, outside their validity window: [{}]",
                        diagnosis.inactive_versions.join(", ")
                    )
                }
            );
            return Err(fail(Refusal::signature(detail), &diagnosis));
        };

        if let Some(signed_at) = claim.timestamp {
            diagnosis.skew_seconds = Some(now.saturating_sub(signed_at));
            diagnosis.tolerance_seconds = self.tolerance_seconds;
            if let Some(tolerance) = self.tolerance_seconds {
                if let Err(skew) = freshness::check(signed_at, now, tolerance) {
                    let detail = if skew.seconds > 0 {
                        format!(
                            "signed {}s ago, more than the tolerance of {tolerance}s",
                            skew.seconds
                        )
                    } else {
                        format!(
                            "signed {}s in the future, more than the tolerance of {tolerance}s",
                            skew.seconds.unsigned_abs()
                        )
                    };
                    return Err(fail(Refusal::timestamp(detail), &diagnosis));
                }
            }
        }

        let outcome = self
            .adapter
            .envelope(request, &matched.key)
            .map_err(|refusal| fail(refusal, &diagnosis))?;
        let outcome = match outcome {
            Outcome::Event(envelope) if !self.allows_type(envelope.event_type.as_deref()) => {
                Outcome::Ignored(envelope)
            }
            other => other,
        };
        let unsigned = match &outcome {
            Outcome::Event(envelope) | Outcome::Ignored(envelope) => {
                self.adapter.coverage().unsigned_in(envelope)
            }
            Outcome::Handshake(_) => UnsignedMetadata::default(),
        };
        Ok(Verified {
            outcome,
            matched_secret_version: matched.version.clone(),
            diagnosis,
            unsigned,
        })
    }
}
