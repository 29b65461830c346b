//! What is checked of the server's certificate, per `sslmode`: nothing but the handshake
//! signatures (`prefer` / `require` without a CA: encryption against passive listeners only,
//! as libpq), its chain to a trusted CA (`verify-ca`, or a CA given to the weaker modes),
//! or the chain and the host name (`verify-full`, rustls' own web-PKI verifier).

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::verify_server_cert_signed_by_trust_anchor;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// The certificate check of one store's sessions.
pub(super) enum Check {
    /// Encrypt, believe any certificate.
    Encrypt,
    /// The chain must end at one of these CAs; any host name.
    Chain(Arc<RootCertStore>),
    /// The chain must end at one of these CAs and the certificate name the host.
    Full(Arc<RootCertStore>),
}

/// The rustls client configuration for `check`, on the `ring` provider.
pub(super) fn client_config(check: Check) -> Result<ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let algorithms = provider.signature_verification_algorithms;
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS cannot be set up: {e}"))?;
    let config = match check {
        Check::Full(roots) => builder.with_root_certificates(roots),
        Check::Chain(roots) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Lenient {
                roots: Some(roots),
                algorithms,
            })),
        Check::Encrypt => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Lenient {
                roots: None,
                algorithms,
            })),
    };
    Ok(config.with_no_client_auth())
}

/// A verifier that skips the host name, and the chain too without roots; the handshake's
/// signatures are always checked (the server holds the certificate's key).
#[derive(Debug)]
struct Lenient {
    roots: Option<Arc<RootCertStore>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Some(roots) = &self.roots {
            let cert = ParsedCertificate::try_from(end_entity)?;
            verify_server_cert_signed_by_trust_anchor(
                &cert,
                roots,
                intermediates,
                now,
                self.algorithms.all,
            )?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
