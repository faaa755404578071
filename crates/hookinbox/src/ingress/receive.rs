//! `POST /hooks/{endpoint_id}`: the ingress pipeline of docs/architecture.md §1, in its
//! exact order. Nothing from a request is stored or logged before it is
//! verified, and the 2xx is sent only after the commit returned — within
//! `storage.commit_timeout`, or the answer is 503.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::{header, request, HeaderMap, HeaderValue, Method, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use hookinbox_store::{AcceptOutcome, Fingerprint, NewEvent, UnsignedMetadata};
use hookinbox_verify::{Headers, NoFetchedKeys, Outcome, Reason, Reply, ResolvedKey, Verified};

use super::audit_headers::audit_headers;
use super::body::{declared_length, RequestBody};
use super::refusal_log::RefusalLog;
use super::rejection::{Acceptance, Rejection};
use crate::app_state::AppState;
use crate::clock;
use crate::endpoint::{Endpoint, NotVerified};
use crate::failpoint::Failpoint;
use crate::key_fetch::KeyFetchError;
use crate::routing::RoutedEvent;
use crate::secrets::learned;
use crate::telemetry::{
    AcceptedEvent, CommitFailed, CommitTimedOut, IngressOutcome, SecretVersionMatched,
};
use crate::traces::IngressSpan;

/// Bodies at least this large are verified on the blocking pool, so an HMAC
/// over up to the body limit never stalls the async workers; smaller ones are
/// cheaper to verify in place than to hand over.
const BLOCKING_VERIFY_THRESHOLD: usize = 32 * 1024;

/// What the router made of a request's path.
pub enum Target {
    /// `/hooks/{endpoint_id}`; `None` when the id is not UTF-8 once
    /// percent-decoded, which no endpoint's id can be: answered as an
    /// unknown endpoint (404 `not_found`), after the method check.
    Hook(Option<String>),
    /// Refused by the route itself: an unknown path (404), a method
    /// `/healthz` does not take (405).
    Refused(Rejection),
}

/// `/hooks/{endpoint_id}`. The id's extraction may fail (`/hooks/%FF`);
/// that must not answer outside the contract, so its rejection is taken
/// here rather than left to axum.
pub async fn receive(
    State(state): State<AppState>,
    endpoint_id: Result<Path<String>, PathRejection>,
    request: Request<Body>,
) -> Response {
    let endpoint_id = endpoint_id.ok().map(|Path(id)| id);
    answer(&state, Target::Hook(endpoint_id), request).await
}

/// Every answer of the public listener but `/healthz`'s: the per-client
/// refusal limit first, then the pipeline (or the route's own refusal),
/// the refusal charged to the client, the JSON of [`Rejection`], the
/// lingering close of an unread body, and the metrics — the same for every
/// refusal, whichever route or extractor made it (`docs/architecture.md` §2).
pub async fn answer(state: &AppState, target: Target, request: Request<Body>) -> Response {
    let started = std::time::Instant::now();
    let (parts, body) = request.into_parts();
    let mut span = IngressSpan::start(&parts.headers);
    let mut body = RequestBody::new(body, &parts.headers);
    // 0. a client that has spent its refusals is turned away unread
    let client = crate::server::peer_address(&parts)
        .map(|peer| state.trusted_proxies.client(peer.ip(), &parts.headers));
    let admitted = match client {
        Some(client) => state.clients.admit(client),
        None => Ok(()),
    };
    let endpoint_id = match &target {
        Target::Hook(id) => id.as_deref(),
        Target::Refused(_) => None,
    };
    let result = match (admitted, &target) {
        (Err(retry_after_seconds), _) => Err(Rejection::RateLimited {
            retry_after_seconds,
        }),
        (Ok(()), Target::Hook(_)) => {
            pipeline(state, endpoint_id, &parts, &mut body, &mut span).await
        }
        (Ok(()), Target::Refused(rejection)) => Err(*rejection),
    };
    let (mut response, outcome) = match result {
        Ok((response, outcome)) => (response, outcome),
        Err(rejection) => {
            if let (Some(client), true) = (client, rejection.charges_client()) {
                state.clients.charge(client);
            }
            (
                rejection.into_response(),
                IngressOutcome::Rejected(rejection.reason()),
            )
        }
    };
    if body.answer_closes_connection() {
        // Answered early: close once the client has finished sending (or
        // at once, for a body given up half-read).
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        body.linger(state.linger);
    }
    // Unknown ids are folded into one label so a scanner cannot grow the metric set.
    let endpoint = endpoint_id.and_then(|id| state.endpoints.get(id));
    let (outcome_label, reason) = outcome.labels();
    let endpoint_label = endpoint.map_or("_unknown", |endpoint| endpoint.id.as_str());
    span.answered(
        endpoint_label,
        outcome_label,
        reason,
        response.status().as_u16(),
    );
    match endpoint {
        Some(endpoint) => outcome.emit_for(&endpoint.metrics, started.elapsed()),
        None => outcome.emit("_unknown", started.elapsed()),
    }
    response
}

async fn pipeline(
    state: &AppState,
    endpoint_id: Option<&str>,
    parts: &request::Parts,
    body: &mut RequestBody,
    span: &mut IngressSpan,
) -> Result<(Response, IngressOutcome), Rejection> {
    // 1. method, endpoint
    if parts.method == Method::GET {
        if let Some(answer) = verification_request(state, endpoint_id, parts) {
            return answer;
        }
    }
    if parts.method != Method::POST {
        return probe(state, endpoint_id, parts).ok_or(Rejection::Method);
    }
    let endpoint = endpoint_id
        .and_then(|id| state.endpoints.get(id))
        .cloned()
        .ok_or(Rejection::NotFound)?;
    // 2. declared length, content type (headers are already bounded by the HTTP layer)
    let declared = declared_length(&parts.headers);
    if declared.is_some_and(|length| length > endpoint.max_body_bytes as u64) {
        return Err(Rejection::TooLarge);
    }
    let media_type = media_type(&parts.headers);
    let media_type_taken = endpoint.accepts_media_type(media_type.as_deref());
    // A handover (Asana's may come without a body or its type) is
    // recognised first; every other request needs a type the endpoint takes.
    if !media_type_taken && !endpoint.learns_secrets() {
        return Err(Rejection::ContentType);
    }
    // 3. read at most max_body_bytes into one buffer paid from the budget;
    // the reservation is held until the answer.
    let received = body
        .read(
            declared,
            endpoint.max_body_bytes,
            &state.bodies,
            &state.body_pace,
        )
        .await?;
    let _reservation = received.reservation;
    let body = received.bytes;
    let received_at_ms = clock::unix_millis();
    // 4–7. claim, signature, timestamp, envelope
    let headers = to_verify_headers(&parts.headers);
    if endpoint.learns_secrets() {
        // A provider handing its secret over (Asana, Notion) is answered
        // here; anything else is verified with the secrets it handed over.
        let request = hookinbox_verify::Request::new(&headers, &body).with_query(parts.uri.query());
        if let Some(answer) = super::handover::answer(state, &endpoint, &request).await {
            return answer;
        }
        if !media_type_taken {
            return Err(Rejection::ContentType);
        }
        if let Err(error) = learned::refresh(&state.store, &endpoint, false).await {
            if let Some(suppressed) = state.storage_refusals.admit() {
                tracing::warn!(
                    message = "The endpoint's learned secrets could not be read; verifying with those read before.",
                    endpoint = %endpoint.id,
                    %error,
                    suppressed_since_last_line = suppressed
                );
            }
        }
    }
    let query = parts.uri.query().map(str::to_owned);
    let fetched = provider_key(state, &endpoint, &headers, &body).await?;
    let checked = verify(
        &endpoint,
        headers,
        body,
        query,
        received_at_ms,
        fetched,
        &state.refusals,
    )
    .await?;
    let CheckedRequest {
        verified,
        headers,
        body,
        fingerprint,
    } = checked;
    // 8. the endpoint's rate limit, charged by verified requests only
    endpoint
        .check_rate()
        .map_err(|retry_after_seconds| Rejection::RateLimited {
            retry_after_seconds,
        })?;
    let matched_secret_version = verified.matched_secret_version().to_owned();
    span.verified(endpoint.provider, &matched_secret_version, body.len());
    let unsigned = verified.unsigned_metadata();
    SecretVersionMatched {
        endpoint: &endpoint.metrics,
        version: &matched_secret_version,
    }
    .emit();
    endpoint.record_match(&matched_secret_version, clock::unix_seconds());
    let mut envelope = match verified.into_outcome() {
        Outcome::Event(envelope) => envelope,
        Outcome::Handshake(reply) => return Ok((handshake(reply), IngressOutcome::Handshake)),
        Outcome::Ignored(envelope) => {
            tracing::info!(
                message = "Ignored an event type the endpoint does not take.",
                endpoint = %endpoint.id,
                event_type = envelope.event_type.as_deref().unwrap_or("")
            );
            return Ok((Acceptance::Ignored.into_response(), IngressOutcome::Ignored));
        }
    };
    endpoint.apply_ordering(&mut envelope, &body);
    // 9. durable accept (with the outbox rows), then the answer
    let event_id = envelope.event_id.clone();
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let audit_headers = audit_headers(&headers);
    // Routing runs before the commit, so the delivery rows it decides on
    // are inserted with the event (docs/architecture.md §5).
    let routing = endpoint.route(&RoutedEvent {
        provider: endpoint.provider,
        endpoint: &endpoint.id,
        id: &envelope.event_id,
        event_type: envelope.event_type.as_deref(),
        received_at_ms,
        matched_secret_version: &matched_secret_version,
        headers: &audit_headers,
        content_type: content_type.as_deref(),
        body: &body,
    });
    let event = NewEvent {
        endpoint_id: endpoint.id.clone(),
        provider: endpoint.provider.to_owned(),
        provider_event_id: envelope.event_id,
        event_type: envelope.event_type,
        object_id: envelope.object_id,
        object_version: envelope.object_version,
        provider_created_at: envelope.created_at,
        received_at_ms,
        content_type,
        payload: body,
        fingerprint,
        audit_headers,
        matched_secret_version,
        targets: routing.routed,
        not_routed: routing.not_routed,
        delays_ms: endpoint.target_delays_ms(),
        unsigned_metadata: UnsignedMetadata {
            event_id: unsigned.event_id,
            event_type: unsigned.event_type,
        },
        fingerprint_window_ms: endpoint.fingerprint_window_ms(),
        trace_parent: span.trace_parent(),
    };
    // Past the deadline the request stops waiting. Its op, if still queued,
    // is skipped by the writer; if already in a batch, it commits or not
    // with it. Either way this request has been answered 503 and never
    // hears a 2xx, and the provider's retry finds the event as a duplicate
    // or stores it.
    let accepted = match tokio::time::timeout(state.commit_timeout, state.store.accept(event)).await
    {
        Ok(accepted) => accepted,
        Err(_elapsed) => {
            CommitTimedOut {
                endpoint: &endpoint.id,
                timeout: state.commit_timeout,
            }
            .emit(&state.storage_refusals);
            return Err(Rejection::commit_timed_out());
        }
    };
    if accepted.is_ok() {
        Failpoint::AfterCommitBeforeResponse.hit();
    }
    match accepted {
        Ok(AcceptOutcome::Inserted { id }) => {
            span.committed(&id);
            endpoint.wake_targets();
            Ok(acknowledge(id, event_id, false))
        }
        Ok(AcceptOutcome::Duplicate { id }) => {
            span.committed(&id);
            Ok(acknowledge(id, event_id, true))
        }
        Ok(AcceptOutcome::Conflict { .. }) => {
            tracing::warn!(
                message = "Event id reused with a different body; refused.",
                endpoint = %endpoint.id,
                event_id = %mask(&event_id)
            );
            Err(Rejection::Conflict)
        }
        Err(error) => {
            CommitFailed {
                endpoint: &endpoint.id,
                error: &error,
            }
            .emit(&state.storage_refusals);
            Err(Rejection::storage(&error))
        }
    }
}

/// The 200 for an event committed now or before, and its outcome for the
/// metrics and the log line.
fn acknowledge(
    inbox_id: String,
    provider_event_id: String,
    duplicate: bool,
) -> (Response, IngressOutcome) {
    let outcome = IngressOutcome::Accepted(AcceptedEvent {
        inbox_id: inbox_id.clone(),
        provider_event_id,
        duplicate,
    });
    let response = Acceptance::Accepted {
        id: inbox_id,
        duplicate,
    }
    .into_response();
    (response, outcome)
}

/// A verified request with what the store needs from it.
struct CheckedRequest {
    verified: Verified,
    headers: Headers,
    body: Bytes,
    fingerprint: Fingerprint,
}

/// Seconds a request refused for want of its provider's key is told to wait.
const KEY_UNAVAILABLE_RETRY_AFTER_SECONDS: u64 = 10;

/// For a provider that serves its own keys (docs/architecture.md §3): the
/// key the request names, from the cache or fetched within the bounded
/// wait. A key off the provider's allowlist is a bad signature (401); a key
/// that cannot be had now is the service's trouble (503, `unavailable`).
/// `None` for every other provider, and for a request that names no key at
/// all (the pipeline refuses it with the adapter's own reason).
async fn provider_key(
    state: &AppState,
    endpoint: &Endpoint,
    headers: &Headers,
    body: &Bytes,
) -> Result<Option<ResolvedKey>, Rejection> {
    let verifier = endpoint.verifier();
    let adapter = verifier.adapter();
    // Without the endpoint's own credential nothing is fetched: the
    // pipeline refuses the request.
    if !adapter.fetches_keys() || !endpoint.credential_ok(headers) {
        return Ok(None);
    }
    let Ok(Some(reference)) = adapter.key_reference(&hookinbox_verify::Request::new(headers, body))
    else {
        return Ok(None);
    };
    match state
        .provider_keys
        .resolve(endpoint.provider, &reference, endpoint.plaid_credentials())
        .await
    {
        Ok(key) => Ok(Some(ResolvedKey { reference, key })),
        Err(refused @ (KeyFetchError::NotAllowed(_) | KeyFetchError::Retired(_))) => {
            if let Some(suppressed) = state.refusals.admit() {
                tracing::info!(
                    message = "Refused a request.",
                    endpoint = %endpoint.id,
                    reason = Reason::Signature.as_str(),
                    detail = %refused,
                    suppressed_since_last_line = suppressed
                );
            }
            Err(Rejection::Verification(Reason::Signature))
        }
        Err(KeyFetchError::Unavailable(cause)) => {
            if let Some(suppressed) = state.refusals.admit() {
                tracing::warn!(
                    message = "The provider's signing key is not available; answered 503.",
                    endpoint = %endpoint.id,
                    cause = %cause,
                    suppressed_since_last_line = suppressed
                );
            }
            Err(Rejection::Unavailable {
                retry_after_seconds: KEY_UNAVAILABLE_RETRY_AFTER_SECONDS,
            })
        }
    }
}

/// Runs verification (and the fingerprint) in place or on the blocking pool.
async fn verify(
    endpoint: &Arc<Endpoint>,
    headers: Headers,
    body: Bytes,
    query: Option<String>,
    received_at_ms: i64,
    fetched: Option<ResolvedKey>,
    refusals: &RefusalLog,
) -> Result<CheckedRequest, Rejection> {
    let body_len = body.len();
    let run = {
        let endpoint = Arc::clone(endpoint);
        move || -> Result<CheckedRequest, NotVerified> {
            let request = hookinbox_verify::Request::new(&headers, &body)
                .with_query(query.as_deref())
                .with_received_at_ms(Some(received_at_ms));
            let verified = match &fetched {
                Some(key) => endpoint.verify_serving(&request, clock::unix_seconds(), key)?,
                None => endpoint.verify_serving(&request, clock::unix_seconds(), &NoFetchedKeys)?,
            };
            let fingerprint = Fingerprint::of(&body);
            Ok(CheckedRequest {
                verified,
                headers,
                body,
                fingerprint,
            })
        }
    };
    let endpoint_id = endpoint.id.clone();
    let result = if body_len >= BLOCKING_VERIFY_THRESHOLD {
        tokio::task::spawn_blocking(run)
            .await
            .map_err(|_| Rejection::Unavailable {
                retry_after_seconds: 1,
            })?
    } else {
        run()
    };
    result.map_err(|not_verified| {
        let failure = match not_verified {
            NotVerified::Refused(failure) => failure,
            NotVerified::NoActiveSecret => {
                if let Some(suppressed) = refusals.admit() {
                    tracing::warn!(
                        message = "No secret version of the endpoint is inside its validity window; answered 503.",
                        endpoint = %endpoint_id,
                        suppressed_since_last_line = suppressed
                    );
                }
                return Rejection::NoActiveSecret;
            }
        };
        // Only names and numbers: never the body of an unverified request;
        // and a bounded number of lines, however many refusals arrive.
        if let Some(suppressed) = refusals.admit() {
            tracing::info!(
                message = "Refused a request.",
                endpoint = %endpoint_id,
                reason = failure.refusal.reason.as_str(),
                detail = %failure.refusal.detail,
                suppressed_since_last_line = suppressed
            );
        }
        Rejection::Verification(failure.refusal.reason)
    })
}

/// A bodiless probe of a known endpoint's URL (Trello's `HEAD`, Nylas's
/// and Dropbox's `GET ?challenge=`, Okta's verification `GET`), answered by
/// its adapter without verification or storage (docs/architecture.md §3).
/// `None` when the endpoint is unknown or its provider sends no such probe:
/// then the method is refused, as it is for any endpoint, so a probe cannot
/// tell which endpoints exist.
fn probe(
    state: &AppState,
    endpoint_id: Option<&str>,
    parts: &request::Parts,
) -> Option<(Response, IngressOutcome)> {
    let endpoint = state.endpoints.get(endpoint_id?)?;
    let headers = to_verify_headers(&parts.headers);
    let probe = hookinbox_verify::Probe {
        method: parts.method.as_str(),
        query: parts.uri.query(),
        headers: &headers,
    };
    let reply = endpoint.verifier().adapter().probe(&probe)?;
    Some((handshake(reply), IngressOutcome::Handshake))
}

/// The unsigned URL-verification GET of a provider that sends one (Meta's
/// `hub.challenge`, checked against the endpoint's `verify_token` by its
/// adapter): answered at once, nothing stored. `None` for every other GET,
/// which stays a 405.
fn verification_request(
    state: &AppState,
    endpoint_id: Option<&str>,
    parts: &request::Parts,
) -> Option<Result<(Response, IngressOutcome), Rejection>> {
    let endpoint = state.endpoints.get(endpoint_id?)?;
    let answer = endpoint
        .verifier()
        .adapter()
        .verification_request(parts.uri.query())?;
    Some(match answer {
        Ok(reply) => Ok((handshake(reply), IngressOutcome::Handshake)),
        Err(refusal) => {
            if let Some(suppressed) = state.refusals.admit() {
                tracing::info!(
                    message = "Refused a URL-verification request.",
                    endpoint = %endpoint.id,
                    reason = refusal.reason.as_str(),
                    detail = %refusal.detail,
                    suppressed_since_last_line = suppressed
                );
            }
            Err(Rejection::Verification(refusal.reason))
        }
    })
}

/// A handshake's answer. `nosniff` because some echo what the provider
/// sent (a challenge): a browser must never read it as anything but its
/// declared type.
pub(super) fn handshake(reply: Reply) -> Response {
    let status = StatusCode::from_u16(reply.status).unwrap_or(StatusCode::OK);
    (
        status,
        [
            (header::CONTENT_TYPE, reply.content_type),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        reply.body,
    )
        .into_response()
}

fn media_type(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .filter(|v| !v.is_empty())
}

fn to_verify_headers(headers: &HeaderMap) -> Headers {
    let mut out = Headers::new();
    for (name, value) in headers {
        out.append(
            name.as_str(),
            String::from_utf8_lossy(value.as_bytes()).into_owned(),
        );
    }
    out
}

/// An event id as logs show it: enough to correlate, not the whole id.
fn mask(id: &str) -> String {
    let shown: String = id.chars().take(6).collect();
    format!("{shown}…")
}
