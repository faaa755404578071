//! What a target is sent of a stored event: the stored body as it is, a
//! form body as JSON (`body = "json"`), or what the target's `transform`
//! makes of it (docs/delivery.md, "Transformations"). The stored body never
//! changes; this runs at every attempt, on the body read with the lease.

use std::sync::Arc;

use bytes::Bytes;
use hookinbox_store::StoredEvent;
use hyper::header::{HeaderName, HeaderValue};

use crate::config::DeliveredBody;
use crate::form_body;
use crate::transform::{TransformOutcome, TransformPool, TransformScript, WebhookInput};

/// A target's reshaping rules.
#[derive(Debug, Default)]
pub struct Reshape {
    /// `transform`, loaded and checked.
    pub transform: Option<Arc<TransformScript>>,
    /// `body`.
    pub body: DeliveredBody,
    /// The URL a script sees as `webhook.url` (`http` targets; empty for
    /// the others).
    pub url: String,
}

/// What an `http` target sends beside the body, as a transform set it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestOverrides {
    pub method: hyper::Method,
    /// A URL other than the target's.
    pub url: Option<String>,
    /// Headers the script added.
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

impl Default for RequestOverrides {
    fn default() -> RequestOverrides {
        RequestOverrides {
            method: hyper::Method::POST,
            url: None,
            headers: Vec::new(),
        }
    }
}

/// How one delivery goes out.
#[derive(Debug)]
pub enum Reshaped {
    /// `event` with the body (and `Content-Type`) to send.
    Send {
        event: Box<StoredEvent>,
        overrides: RequestOverrides,
    },
    /// The transform answered `cancel: true`.
    Cancel,
    /// The transform failed: the delivery is dead with `error` (no payload
    /// in it), replayable once the script is fixed.
    Failed(String),
}

impl Reshape {
    /// Applies the rules to `event` (its payload read with the lease),
    /// running the transform on a transform thread.
    pub async fn apply(&self, event: StoredEvent) -> Reshaped {
        let Some(script) = &self.transform else {
            return Reshaped::Send {
                event: Box::new(self.body_as_configured(event)),
                overrides: RequestOverrides::default(),
            };
        };
        let input = self.webhook_input(&event);
        match TransformPool::shared().run(Arc::clone(script), input).await {
            Ok(outcome) => Reshape::reshaped(event, outcome),
            Err(error) => Reshaped::Failed(format!("transform: {error}")),
        }
    }

    /// What the script is handed for `event`.
    pub fn webhook_input(&self, event: &StoredEvent) -> WebhookInput {
        let body = event.payload.as_deref().unwrap_or_default();
        WebhookInput {
            url: self.url.clone(),
            payload: WebhookInput::payload_of(event.content_type.as_deref(), body),
            content_type: event.content_type.clone(),
            event_type: event.event_type.clone(),
            event_id: event.provider_event_id.clone(),
            inbox_id: event.id.clone(),
            provider: event.provider.clone(),
            endpoint: event.endpoint_id.clone(),
            received_at_ms: event.received_at_ms,
        }
    }

    /// `event` as the script's `outcome` says to send it.
    pub fn reshaped(mut event: StoredEvent, outcome: TransformOutcome) -> Reshaped {
        match outcome {
            TransformOutcome::Cancel => Reshaped::Cancel,
            TransformOutcome::Send(request) => {
                event.payload = Some(request.body);
                event.content_type = request.content_type;
                Reshaped::Send {
                    event: Box::new(event),
                    overrides: RequestOverrides {
                        method: request.method,
                        url: request.url,
                        headers: request.headers,
                    },
                }
            }
        }
    }

    /// Without a transform: a form body as JSON for `body = "json"`, every
    /// other body as stored. (With one, the script's result is what is
    /// sent, and `body` does not apply.)
    pub fn body_as_configured(&self, mut event: StoredEvent) -> StoredEvent {
        if self.body != DeliveredBody::Json || !form_body::is_form(event.content_type.as_deref()) {
            return event;
        }
        if let Some(body) = &event.payload {
            event.payload = Some(Bytes::from(form_body::as_json(body).to_string()));
            event.content_type = Some("application/json".to_owned());
        }
        event
    }
}
