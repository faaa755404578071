//! The sample events bundled with `hookinbox send --sample NAME`: for the
//! well-known providers, a body the provider sends for that event and the
//! unsigned headers it sends beside it (the event name in GitHub's
//! `X-GitHub-Event`, Shopify's `X-Shopify-Topic`, …). The signature
//! headers are the signer's (`hookinbox_verify::Adapter::sign`), never
//! part of a sample. Several bodies are the verify crate's fixtures, made by
//! the providers' own SDKs.

/// Headers a provider sends beside its signature, as (name, value).
pub type UnsignedHeaders = &'static [(&'static str, &'static str)];

/// One bundled event.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// The provider that sends it (`provider = "…"`).
    pub provider: &'static str,
    /// The event's name as the provider spells it (`payment_intent.succeeded`).
    pub name: &'static str,
    pub body: &'static [u8],
    /// Headers the provider sends with it that no signature covers.
    pub headers: UnsignedHeaders,
}

/// Every bundled sample, by provider.
pub const SAMPLES: &[Sample] = &[
    Sample {
        provider: "github",
        name: "push",
        body: include_bytes!("samples/github_push.json"),
        headers: &[("X-GitHub-Event", "push")],
    },
    Sample {
        provider: "github",
        name: "pull_request",
        body: include_bytes!("samples/github_pull_request.json"),
        headers: &[("X-GitHub-Event", "pull_request")],
    },
    Sample {
        provider: "gitlab",
        name: "push",
        body: include_bytes!("samples/gitlab_push.json"),
        headers: &[("X-Gitlab-Event", "Push Hook")],
    },
    Sample {
        provider: "lab",
        name: "thing.done",
        body: include_bytes!("samples/lab_thing_done.json"),
        headers: &[],
    },
    Sample {
        provider: "paddle",
        name: "transaction.completed",
        body: include_bytes!("samples/paddle_transaction_completed.json"),
        headers: &[],
    },
    Sample {
        provider: "shopify",
        name: "orders/create",
        body: include_bytes!("samples/shopify_orders_create.json"),
        headers: &[
            ("X-Shopify-Topic", "orders/create"),
            ("X-Shopify-Shop-Domain", "example.myshopify.com"),
            ("X-Shopify-API-Version", "2025-10"),
        ],
    },
    Sample {
        provider: "slack",
        name: "app_mention",
        body: include_bytes!("samples/slack_app_mention.json"),
        headers: &[],
    },
    Sample {
        provider: "standard",
        name: "invoice.paid",
        body: include_bytes!("samples/standard_invoice_paid.json"),
        headers: &[],
    },
    Sample {
        provider: "stripe",
        name: "payment_intent.succeeded",
        body: include_bytes!("samples/stripe_payment_intent_succeeded.json"),
        headers: &[],
    },
    Sample {
        provider: "stripe",
        name: "invoice.paid",
        body: include_bytes!("samples/stripe_invoice_paid.json"),
        headers: &[],
    },
];

/// The sample `name` of `provider`.
pub fn find(provider: &str, name: &str) -> Option<&'static Sample> {
    SAMPLES
        .iter()
        .find(|sample| sample.provider == provider && sample.name == name)
}

/// The samples of `provider`, or of every provider.
pub fn of(provider: Option<&str>) -> impl Iterator<Item = &'static Sample> + use<'_> {
    SAMPLES
        .iter()
        .filter(move |sample| provider.is_none_or(|provider| sample.provider == provider))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookinbox_verify::{
        adapter_for, AdapterSettings, Outgoing, Request, SecretInput, Verifier,
    };

    /// Every sample, signed by its provider's signer, is accepted as an
    /// event (not a body error) by that provider's adapter.
    #[test]
    fn every_sample_is_an_event_its_provider_accepts() {
        const NOW: i64 = 1_767_225_600;
        for sample in SAMPLES {
            let settings = AdapterSettings::default();
            let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
            let adapter = adapter_for(sample.provider, &settings).expect("registered provider");
            let signed = adapter
                .sign(&Outgoing {
                    body: sample.body,
                    secret,
                    now: NOW,
                    event_id: "sample-event-id",
                })
                .expect("symmetric provider");
            let mut headers = signed.to_headers();
            for (name, value) in sample.headers {
                headers.append(name, *value);
            }
            let verifier = Verifier::new(
                adapter,
                [SecretInput {
                    version: "1".into(),
                    value: secret.to_owned().into(),
                    not_before: None,
                    not_after: None,
                }],
            )
            .expect("secret decodes");
            let verified = verifier.verify(&Request::new(&headers, &signed.body), NOW);
            let event = verified
                .as_ref()
                .ok()
                .and_then(|verified| verified.event().cloned());
            assert!(
                event.is_some(),
                "{} {}: {:?}",
                sample.provider,
                sample.name,
                verified.err().map(|failure| failure.refusal)
            );
        }
    }

    #[test]
    fn names_are_unique_per_provider() {
        for (i, sample) in SAMPLES.iter().enumerate() {
            assert!(
                !SAMPLES[..i]
                    .iter()
                    .any(|other| other.provider == sample.provider && other.name == sample.name),
                "{} {} twice",
                sample.provider,
                sample.name
            );
        }
    }
}
