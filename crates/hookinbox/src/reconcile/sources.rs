//! The provider sources of a configuration: one per endpoint with
//! `[endpoint.reconcile]`. Only Stripe has one (the config refuses the
//! table elsewhere); another provider is one more file and one more arm.

use crate::config::{ConfigError, Settings};

use super::stripe::StripeSource;

/// Every endpoint's source, in the configuration's order.
pub struct Sources(pub Vec<StripeSource>);

impl Sources {
    /// Reads every source's API key; an error names the field.
    pub fn build(settings: &Settings) -> Result<Sources, ConfigError> {
        let mut sources = Vec::new();
        for (index, endpoint) in settings.endpoints.iter().enumerate() {
            if let Some(reconcile) = &endpoint.reconcile {
                sources.push(StripeSource::build(
                    &endpoint.id,
                    reconcile,
                    &format!("endpoint[{index}].reconcile"),
                )?);
            }
        }
        Ok(Sources(sources))
    }
}
