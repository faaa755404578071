//! The provider registry: provider name → adapter constructor. Adding a
//! provider is one file under `providers/` and one line in [`REGISTRY`].

use crate::providers;
use crate::Adapter;

/// Provider-specific settings an endpoint may carry beside its secrets.
#[derive(Debug, Clone, Default)]
pub struct AdapterSettings {
    /// The public URL the provider was given, for schemes that sign the URL
    /// (Twilio, Square).
    pub public_url: Option<String>,
    /// The scheme of a `generic_hmac` endpoint; required by that provider only.
    pub generic_hmac: Option<providers::generic_hmac::GenericHmacSettings>,
    /// The token a provider's URL-verification GET must present (Meta's
    /// `hub.verify_token`); required by `meta` only.
    pub verify_token: Option<String>,
    /// The id the provider gave the listener URL, part of what it signs
    /// (PayPal's webhook id); required by `paypal` only.
    pub webhook_id: Option<String>,
}

/// Why an adapter could not be built. Messages name the setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error("unknown provider `{name}` (known providers: {known})")]
    UnknownProvider { name: String, known: String },
    #[error("provider `{provider}` requires `{field}`")]
    Missing {
        provider: &'static str,
        field: &'static str,
    },
    #[error("`{field}`: {message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
}

type Build = fn(&AdapterSettings) -> Result<Box<dyn Adapter>, SettingsError>;

/// Every provider hookinbox knows, by configuration name.
const REGISTRY: &[(&str, Build)] = &[
    ("lab", providers::lab::build),
    ("stripe", providers::stripe::build),
    ("github", providers::github::build),
    ("slack", providers::slack::build),
    ("standard", providers::standard::build),
    ("generic_hmac", providers::generic_hmac::build),
    ("shopify", providers::shopify::build),
    ("paddle", providers::paddle::build),
    ("twilio", providers::twilio::build),
    ("square", providers::square::build),
    ("gitlab", providers::gitlab::build),
    ("linear", providers::linear::build),
    ("typeform", providers::typeform::build),
    ("razorpay", providers::razorpay::build),
    ("lemonsqueezy", providers::lemonsqueezy::build),
    ("intercom", providers::intercom::build),
    ("mailgun", providers::mailgun::build),
    ("discord", providers::discord::build),
    ("zoom", providers::zoom::build),
    ("twitch", providers::twitch::build),
    ("sendgrid", providers::sendgrid::build),
    ("adyen", providers::adyen::build),
    ("xero", providers::xero::build),
    ("coinbase_commerce", providers::coinbase_commerce::build),
    ("checkout_com", providers::checkout_com::build),
    ("paystack", providers::paystack::build),
    ("dwolla", providers::dwolla::build),
    ("modern_treasury", providers::modern_treasury::build),
    ("airwallex", providers::airwallex::build),
    ("customer_io", providers::customer_io::build),
    ("telnyx", providers::telnyx::build),
    ("orb", providers::orb::build),
    ("recurly", providers::recurly::build),
    ("gocardless", providers::gocardless::build),
    ("segment", providers::segment::build),
    ("helpscout", providers::helpscout::build),
    ("calendly", providers::calendly::build),
    ("chargebee", providers::chargebee::build),
    ("postmark", providers::postmark::build),
    ("telegram", providers::telegram::build),
    ("flutterwave", providers::flutterwave::build),
    ("box", providers::box_com::build),
    ("easypost", providers::easypost::build),
    ("aftership", providers::aftership::build),
    ("alchemy", providers::alchemy::build),
    ("persona", providers::persona::build),
    ("trello", providers::trello::build),
    ("nylas", providers::nylas::build),
    ("onfido", providers::onfido::build),
    ("airtable", providers::airtable::build),
    ("sanity", providers::sanity::build),
    ("clickup", providers::clickup::build),
    ("contentful", providers::contentful::build),
    ("meta", providers::meta::build),
    ("hubspot", providers::hubspot::build),
    ("wise", providers::wise::build),
    ("line", providers::line::build),
    ("clerk", providers::clerk::build),
    ("resend", providers::resend::build),
    ("openai", providers::openai::build),
    ("replicate", providers::replicate::build),
    ("lithic", providers::lithic::build),
    ("brex", providers::brex::build),
    ("render", providers::render::build),
    ("incident_io", providers::incident_io::build),
    ("stytch", providers::stytch::build),
    ("pleo", providers::pleo::build),
    ("polar", providers::polar::build),
    ("liveblocks", providers::liveblocks::build),
    ("woocommerce", providers::woocommerce::build),
    ("bitbucket", providers::bitbucket::build),
    ("heroku", providers::heroku::build),
    ("vercel", providers::vercel::build),
    ("sentry", providers::sentry::build),
    ("launchdarkly", providers::launchdarkly::build),
    ("circleci", providers::circleci::build),
    ("mux", providers::mux::build),
    ("auth0", providers::auth0::build),
    ("netlify", providers::netlify::build),
    ("monday", providers::monday::build),
    ("vonage", providers::vonage::build),
    ("plivo", providers::plivo::build),
    ("braintree", providers::braintree::build),
    // Issue #23, branch provB.
    ("vapi", providers::vapi::build),
    ("zendesk", providers::zendesk::build),
    ("sumsub", providers::sumsub::build),
    ("webflow", providers::webflow::build),
    ("frame_io", providers::frame_io::build),
    ("tailscale", providers::tailscale::build),
    ("workos", providers::workos::build),
    ("buildkite", providers::buildkite::build),
    ("beehiiv", providers::beehiiv::build),
    ("veriff", providers::veriff::build),
    ("docusign", providers::docusign::build),
    ("jira", providers::jira::build),
    ("pagerduty", providers::pagerduty::build),
    ("recharge", providers::recharge::build),
    ("bigcommerce", providers::bigcommerce::build),
    ("front", providers::front::build),
    ("paypal", providers::paypal::build),
    ("aws_sns", providers::aws_sns::build),
    ("plaid", providers::plaid::build),
    ("okta", providers::okta::build),
    ("dropbox", providers::dropbox::build),
    ("pandadoc", providers::pandadoc::build),
    ("elevenlabs", providers::elevenlabs::build),
    ("asana", providers::asana::build),
    ("notion", providers::notion::build),
];

/// Builds the adapter for a provider name.
pub fn adapter_for(
    name: &str,
    settings: &AdapterSettings,
) -> Result<Box<dyn Adapter>, SettingsError> {
    match REGISTRY.iter().find(|(known, _)| *known == name) {
        Some((_, build)) => build(settings),
        None => Err(SettingsError::UnknownProvider {
            name: name.to_owned(),
            known: provider_names().collect::<Vec<_>>().join(", "),
        }),
    }
}

/// The names of every registered provider.
pub fn provider_names() -> impl Iterator<Item = &'static str> {
    REGISTRY.iter().map(|(name, _)| *name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_adapter_reports_its_own_name() {
        for name in provider_names() {
            let settings = AdapterSettings {
                public_url: Some("https://example.com/hooks/x".into()),
                generic_hmac: Some(providers::generic_hmac::GenericHmacSettings::example()),
                verify_token: Some("example-verify-token".into()),
                webhook_id: Some("EXAMPLEWEBHOOKID".into()),
            };
            let adapter = adapter_for(name, &settings).unwrap();
            assert_eq!(adapter.name(), name);
        }
    }

    /// The providers whose event id comes from an unsigned header (or, for
    /// Lemon Squeezy, may), and the one whose body no signature covers. The
    /// service relies on these answers to dedupe copies under new ids and to
    /// require `basic_auth`, so a change here must be deliberate.
    #[test]
    fn unsigned_ids_and_bodies_are_declared() {
        let settings = AdapterSettings {
            public_url: Some("https://example.com/hooks/x".into()),
            generic_hmac: Some(providers::generic_hmac::GenericHmacSettings::example()),
            verify_token: Some("example-verify-token".into()),
            webhook_id: Some("EXAMPLEWEBHOOKID".into()),
        };
        let unsigned_ids = [
            "github",
            "shopify",
            "gitlab",
            "razorpay",
            "twilio",
            "lemonsqueezy",
            "linear",
            "modern_treasury",
            "chargebee",
            "postmark",
            "telegram",
            "flutterwave",
            "sanity",
            "contentful",
            "wise",
            "woocommerce",
            "bitbucket",
            "sentry",
            "auth0",
            "monday",
            // A trigger's payload: header `X-Zendesk-Webhook-Invocation-Id`.
            "zendesk",
            "jira",
            "bigcommerce",
            "okta",
            // Header `X-PandaDoc-Webhook-Event-Id`, else the body fingerprint.
            "pandadoc",
        ];
        for name in provider_names() {
            let coverage = adapter_for(name, &settings).unwrap().coverage();
            assert_eq!(
                coverage.event_id,
                !unsigned_ids.contains(&name),
                "{name}: {coverage:?}"
            );
            assert_eq!(
                coverage.needs_endpoint_credential(),
                name == "mailgun",
                "{name}: {coverage:?}"
            );
        }
    }

    #[test]
    fn unknown_provider_lists_known_ones() {
        let err = adapter_for("strype", &AdapterSettings::default()).unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("strype") && message.contains("stripe"),
            "{message}"
        );
    }
}
