//! A throwaway PKI made at test time: a CA and a server certificate it
//! issued, for TLS on the public listener and for https targets.

use std::sync::Arc;

/// A throwaway CA and a server certificate it issued for `names`, made at
/// test time (nothing on disk until a test writes `ca_pem`).
pub struct TestPki {
    /// The CA certificate, PEM: what a target's `ca_file` holds.
    pub ca_pem: String,
    /// The issued server certificate and its private key (PKCS#8), PEM:
    /// what `[server.tls]` files hold.
    pub cert_pem: String,
    pub key_pem: String,
    /// A TLS server configuration presenting the issued certificate.
    pub server_config: Arc<rustls::ServerConfig>,
}

impl TestPki {
    /// `names`: DNS names or IP addresses the server certificate is valid for.
    pub fn new(names: &[&str]) -> TestPki {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "hookinbox test CA");
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = ca_params.self_signed(&ca_key).unwrap();

        let server_key = KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let server = CertificateParams::new(names)
            .unwrap()
            .signed_by(&server_key, &ca, &ca_key)
            .unwrap();

        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(server_key.serialize_der().into());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server_config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![server.der().clone()], key)
            .unwrap();
        TestPki {
            ca_pem: ca.pem(),
            cert_pem: server.pem(),
            key_pem: server_key.serialize_pem(),
            server_config: Arc::new(server_config),
        }
    }
}
