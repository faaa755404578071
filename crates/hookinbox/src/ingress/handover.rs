//! A provider handing over the secret it will sign with (Asana's
//! `X-Hook-Secret`, Notion's verification token): taken only at the URL
//! that carries the endpoint's handshake token (the adapter checks it, see
//! `hookinbox_verify::handover`), sealed into the store, put in the
//! endpoint's key ring, and answered as the provider expects. The secret is
//! never logged: log lines name the endpoint and the learned version only.
//! Nothing else of the request is stored.

use axum::http::{HeaderName, HeaderValue};
use axum::response::Response;
use hookinbox_store::Learned;
use hookinbox_verify::{ExposeSecret, Handover};

use super::rejection::Rejection;
use crate::app_state::AppState;
use crate::clock;
use crate::endpoint::Endpoint;
use crate::secrets::learned::{self, version_name};
use crate::telemetry::IngressOutcome;

/// The answer to `request` when it is a handover to `endpoint`; `None`
/// when it is not one (then it is verified as an event).
pub(super) async fn answer(
    state: &AppState,
    endpoint: &Endpoint,
    request: &hookinbox_verify::Request<'_>,
) -> Option<Result<(Response, IngressOutcome), Rejection>> {
    let handover = endpoint.verifier().adapter().handover(request)?;
    Some(match handover {
        Ok(handover) => take(state, endpoint, handover).await,
        Err(refusal) => {
            if let Some(suppressed) = state.refusals.admit() {
                tracing::info!(
                    message = "Refused a secret handover.",
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

async fn take(
    state: &AppState,
    endpoint: &Endpoint,
    handover: Handover,
) -> Result<(Response, IngressOutcome), Rejection> {
    let Some(store) = std::sync::Arc::clone(&state.store).learned_secrets() else {
        return Err(Rejection::Unavailable {
            retry_after_seconds: 60,
        });
    };
    let learned = store
        .learn(&endpoint.id, &handover.secret, clock::unix_millis())
        .await
        .map_err(|error| {
            tracing::warn!(
                message = "A handed-over secret could not be kept; answered 503.",
                endpoint = %endpoint.id,
                %error
            );
            Rejection::storage(&error)
        })?;
    let number = match learned {
        Learned::New(number) | Learned::Known(number) => number,
        Learned::Full => {
            tracing::warn!(
                message = "A secret handover was refused: the endpoint holds as many learned secrets as it may.",
                endpoint = %endpoint.id,
                most = hookinbox_store::learned_secrets::MAX_LEARNED_PER_ENDPOINT
            );
            return Err(Rejection::Conflict);
        }
    };
    if let Err(error) = learned::refresh(&state.store, endpoint, true).await {
        // Kept, but not read back: the next request reads it again.
        tracing::warn!(
            message = "A learned secret was kept but could not be read back yet.",
            endpoint = %endpoint.id,
            %error
        );
    }
    tracing::info!(
        message = "Took a secret handed over by the provider.",
        endpoint = %endpoint.id,
        version = %version_name(number),
        repeated = matches!(learned, Learned::Known(_))
    );
    let mut response = super::receive::handshake(handover.reply);
    if let Some(name) = handover.echo_header {
        // Both were checked to be printable ASCII; `from_bytes` lower-cases the name.
        let malformed = |_| Rejection::Verification(hookinbox_verify::Reason::MalformedSignature);
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(malformed)?;
        let mut value = HeaderValue::from_str(handover.secret.expose_secret())
            .map_err(|_| Rejection::Verification(hookinbox_verify::Reason::MalformedSignature))?;
        value.set_sensitive(true);
        response.headers_mut().insert(name, value);
    }
    Ok((response, IngressOutcome::Handshake))
}
