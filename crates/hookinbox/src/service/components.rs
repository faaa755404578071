//! What a service builds from its settings before it opens the store or a
//! socket: everything a configuration can be wrong about beyond its text
//! (secrets that cannot be read, keys a provider cannot use, certificate
//! and CA files). `hookinbox config check` builds it too.

use crate::admin::AdminSettings;
use crate::config::{ConfigError, Settings};
use crate::endpoint::{self, Endpoints};
use crate::tls::listener::TlsListener;

/// The parts of a service that read files named by the configuration.
pub(crate) struct Components {
    /// Every endpoint, with its verifier and targets.
    pub endpoints: Endpoints,
    /// The admin listener, if `[admin]` is configured.
    pub admin: Option<AdminSettings>,
    /// TLS on the public port, if `[server.tls]` is configured.
    pub tls: Option<TlsListener>,
}

impl Components {
    /// Builds them; errors name the field.
    pub fn build(settings: &Settings) -> Result<Components, ConfigError> {
        Ok(Components {
            endpoints: endpoint::build_all(settings)?,
            admin: settings
                .admin
                .as_ref()
                .map(AdminSettings::build)
                .transpose()?,
            tls: settings
                .server
                .tls
                .as_ref()
                .map(TlsListener::build)
                .transpose()?,
        })
    }
}
