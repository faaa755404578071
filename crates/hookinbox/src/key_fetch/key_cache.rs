//! The keys providers serve, fetched once, kept until they expire, and
//! never waited for long (docs/architecture.md §3, "Keys fetched from the
//! provider").
//!
//! A request whose key is not here starts its fetch in a task of its own
//! (later requests for the same key join it) and waits at most
//! [`REQUEST_WAIT`]; past that, or when the fetch failed, it is answered 503
//! (`unavailable`) and the provider retries — the key may be here by then,
//! since the fetch goes on without the request. A failed fetch is not tried
//! again for [`RETRY_AFTER_FAILURE`], so a flood of requests naming a key
//! that cannot be had makes no flood of fetches.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use hookinbox_verify::{Key, KeyReference};
use rustls::RootCertStore;
use tokio::sync::watch;
use tokio::time::Instant;

use super::allowlist::{self, KeySource, NotAllowed};
use super::certificate;
use super::https_client::{HttpsClient, Resolver};
use super::plaid_key::{self, PlaidCredentials, PlaidKeyError};
use super::test_override::TestOverride;

/// The longest a request waits for its key before it is answered 503.
pub const REQUEST_WAIT: Duration = Duration::from_secs(2);
/// The longest one fetch may take, in its own task.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a failed fetch is remembered before the key is tried again.
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(10);
/// The longest a key is kept, even when its certificate is valid longer.
const MOST_KEPT: Duration = Duration::from_secs(24 * 3600);
/// The most keys remembered at once (fetched, failed or being fetched):
/// every one is on the provider's hosts, but a request chooses which.
const MAX_ENTRIES: usize = 256;

/// Why a request's key cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyFetchError {
    /// The request names a key outside its provider's allowlist: refused
    /// as a bad signature, nothing fetched.
    #[error(transparent)]
    NotAllowed(#[from] NotAllowed),
    /// The key cannot be had now (being fetched, the fetch failed or timed
    /// out): the service's trouble, answered 503.
    #[error("the signing key is not available: {0}")]
    Unavailable(String),
    /// The provider says the key is retired: what it signed is not trusted
    /// (`signature`).
    #[error("the signing key is retired: {0}")]
    Retired(String),
}

/// What one fetch gets.
enum Job {
    Certificate(KeySource),
    PlaidKey {
        credentials: PlaidCredentials,
        kid: String,
    },
}

/// A fetch's outcome: the key and how long to keep it, or why not (and
/// whether the provider itself refused the key).
type Fetched = Result<(Key, Duration), (String, bool)>;

enum Slot {
    Ready {
        key: Key,
        until: Instant,
    },
    Fetching(watch::Receiver<Option<Result<Key, (String, bool)>>>),
    Failed {
        cause: String,
        retired: bool,
        until: Instant,
    },
}

impl Slot {
    fn is_current(&self, now: Instant) -> bool {
        match self {
            Slot::Ready { until, .. } | Slot::Failed { until, .. } => *until > now,
            Slot::Fetching(_) => true,
        }
    }
}

struct Fetcher {
    /// `None` when the test override could not be read: nothing is fetched.
    client: Option<HttpsClient>,
    roots: Arc<RootCertStore>,
    slots: Mutex<HashMap<String, Slot>>,
    fetches: AtomicU64,
}

/// The process's fetched keys, shared by every endpoint.
#[derive(Clone)]
pub struct KeyCache {
    fetcher: Arc<Fetcher>,
    wait: Duration,
}

impl KeyCache {
    /// Mozilla's roots and the system's resolver, or the test override of
    /// the environment ([`super::test_override`]), said as a warning.
    pub fn from_environment() -> KeyCache {
        match TestOverride::from_environment() {
            Ok(None) => KeyCache::new(
                RootCertStore {
                    roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
                },
                Resolver::System,
            ),
            Ok(Some(test)) => {
                tracing::warn!(
                    message = "Key fetching runs under the test override: provider keys are fetched from a test server under test roots.",
                    connect = %test.connect
                );
                KeyCache::new(test.roots, Resolver::Fixed(test.connect))
            }
            Err(error) => {
                tracing::error!(
                    message = "The key-fetch test override is invalid; no provider key will be fetched.",
                    %error
                );
                KeyCache::without_client()
            }
        }
    }

    fn new(roots: RootCertStore, resolver: Resolver) -> KeyCache {
        let client = match HttpsClient::new(roots.clone(), resolver) {
            Ok(client) => Some(client),
            Err(error) => {
                tracing::error!(message = "Cannot build the key-fetch client.", %error);
                None
            }
        };
        KeyCache::with(client, roots)
    }

    fn without_client() -> KeyCache {
        KeyCache::with(None, RootCertStore::empty())
    }

    fn with(client: Option<HttpsClient>, roots: RootCertStore) -> KeyCache {
        KeyCache {
            fetcher: Arc::new(Fetcher {
                client,
                roots: Arc::new(roots),
                slots: Mutex::default(),
                fetches: AtomicU64::new(0),
            }),
            wait: REQUEST_WAIT,
        }
    }

    /// How many fetches were started.
    #[cfg(test)]
    pub fn fetches(&self) -> u64 {
        self.fetcher.fetches.load(Ordering::Relaxed)
    }

    /// The key `reference` names for a request to a `provider` endpoint
    /// (with its Plaid credentials, for `plaid`): from the cache, or
    /// fetched within [`REQUEST_WAIT`].
    pub async fn resolve(
        &self,
        provider: &'static str,
        reference: &KeyReference,
        plaid: Option<&PlaidCredentials>,
    ) -> Result<Key, KeyFetchError> {
        let (url, job) = match reference {
            KeyReference::Certificate { url } => (
                url.clone(),
                Job::Certificate(allowlist::certificate_source(provider, url)?),
            ),
            KeyReference::KeyId { kid } => {
                let credentials = match (provider, plaid) {
                    ("plaid", Some(credentials)) => credentials,
                    _ => return Err(NotAllowed::Provider(provider.to_owned()).into()),
                };
                if !plaid_key::is_key_id(kid) {
                    return Err(NotAllowed::KeyId.into());
                }
                (
                    format!("plaid {} {} {kid}", credentials.host, credentials.client_id),
                    Job::PlaidKey {
                        credentials: credentials.clone(),
                        kid: kid.clone(),
                    },
                )
            }
        };
        let url = &url;
        let mut receiver = {
            let mut slots = self
                .fetcher
                .slots
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let now = Instant::now();
            match slots.get(url) {
                Some(Slot::Ready { key, until }) if *until > now => return Ok(key.clone()),
                Some(Slot::Failed {
                    cause,
                    retired,
                    until,
                }) if *until > now => return Err(failure(cause, *retired)),
                Some(Slot::Fetching(receiver)) => receiver.clone(),
                _ => {
                    if slots.len() >= MAX_ENTRIES {
                        slots.retain(|_, slot| slot.is_current(now));
                    }
                    if slots.len() >= MAX_ENTRIES {
                        return Err(KeyFetchError::Unavailable(
                            "too many provider keys at once".into(),
                        ));
                    }
                    let (sender, receiver) = watch::channel(None);
                    slots.insert(url.clone(), Slot::Fetching(receiver.clone()));
                    tokio::spawn(Arc::clone(&self.fetcher).fetch(
                        provider,
                        url.clone(),
                        job,
                        sender,
                    ));
                    receiver
                }
            }
        };
        let waited = tokio::time::timeout(self.wait, receiver.wait_for(Option::is_some)).await;
        let resolved = match waited {
            Ok(Ok(outcome)) => match &*outcome {
                Some(Ok(key)) => Ok(key.clone()),
                Some(Err((cause, retired))) => Err(failure(cause, *retired)),
                None => Err(KeyFetchError::Unavailable("the fetch ended".into())),
            },
            Ok(Err(_stopped)) => Err(KeyFetchError::Unavailable("the fetch ended".into())),
            Err(_elapsed) => Err(KeyFetchError::Unavailable(format!(
                "not fetched within {} s",
                self.wait.as_secs()
            ))),
        };
        resolved
    }
}

fn failure(cause: &str, retired: bool) -> KeyFetchError {
    if retired {
        KeyFetchError::Retired(cause.to_owned())
    } else {
        KeyFetchError::Unavailable(cause.to_owned())
    }
}

impl Fetcher {
    /// Fetches and checks one key, then puts the outcome in its slot and
    /// tells whoever waits.
    async fn fetch(
        self: Arc<Self>,
        provider: &'static str,
        slot_key: String,
        job: Job,
        sender: watch::Sender<Option<Result<Key, (String, bool)>>>,
    ) {
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let outcome = match &self.client {
            None => Err((
                "key fetching is not set up (see the log at start)".to_owned(),
                false,
            )),
            Some(client) => match tokio::time::timeout(FETCH_TIMEOUT, self.run(client, &job)).await
            {
                Ok(outcome) => outcome,
                Err(_elapsed) => Err((
                    format!(
                        "the key server did not answer within {} s",
                        FETCH_TIMEOUT.as_secs()
                    ),
                    false,
                )),
            },
        };
        let now = Instant::now();
        let slot = match &outcome {
            Ok((key, keep)) => {
                tracing::info!(message = "Fetched a provider's signing key.", provider);
                Slot::Ready {
                    key: key.clone(),
                    until: now + *keep,
                }
            }
            Err((cause, retired)) => {
                // The key's name came with an unverified request: only the
                // provider and the fixed cause are logged.
                tracing::warn!(
                    message = "Could not fetch a provider's signing key; its requests are refused until it can be.",
                    provider,
                    cause = %cause
                );
                Slot::Failed {
                    cause: cause.clone(),
                    retired: *retired,
                    until: now + RETRY_AFTER_FAILURE,
                }
            }
        };
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(slot_key, slot);
        sender.send_replace(Some(outcome.map(|(key, _)| key)));
    }

    async fn run(&self, client: &HttpsClient, job: &Job) -> Fetched {
        match job {
            Job::Certificate(source) => {
                let pem = client
                    .get(&source.url)
                    .await
                    .map_err(|error| (format!("the key server: {error}"), false))?;
                let now = SystemTime::now();
                let checked = certificate::check(&pem, &self.roots, &source.certificate_names, now)
                    .map_err(|error| (error.to_string(), false))?;
                Ok((
                    checked.key,
                    certificate::keep_for(checked.not_after, now, MOST_KEPT),
                ))
            }
            Job::PlaidKey { credentials, kid } => {
                let url: hyper::Uri =
                    format!("https://{}{}", credentials.host, plaid_key::KEY_PATH)
                        .parse()
                        .map_err(|_| ("the Plaid key URL".to_owned(), false))?;
                let answer = client
                    .post_json(&url, plaid_key::request_body(credentials, kid))
                    .await
                    .map_err(|error| (format!("Plaid's key API: {error}"), false))?;
                let key = plaid_key::parse_answer(&answer)
                    .map_err(|error| (error.to_string(), error == PlaidKeyError::Expired))?;
                // Plaid's keys carry no expiry until retired: kept a day.
                Ok((key, MOST_KEPT))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_url_off_the_allowlist_is_refused_without_a_fetch() {
        let cache = KeyCache::without_client();
        let reference = KeyReference::Certificate {
            url: "https://evil.example/v1/notifications/certs/CERT-1".into(),
        };
        assert_eq!(
            cache.resolve("paypal", &reference, None).await.unwrap_err(),
            KeyFetchError::NotAllowed(NotAllowed::Host { provider: "paypal" })
        );
        assert_eq!(cache.fetches(), 0);
    }

    #[tokio::test]
    async fn a_failed_fetch_is_remembered_and_not_repeated_at_once() {
        let cache = KeyCache::without_client();
        let reference = KeyReference::Certificate {
            url: "https://api.paypal.com/v1/notifications/certs/CERT-1".into(),
        };
        for _ in 0..3 {
            assert!(matches!(
                cache.resolve("paypal", &reference, None).await,
                Err(KeyFetchError::Unavailable(_))
            ));
        }
        assert_eq!(cache.fetches(), 1);
    }
}
