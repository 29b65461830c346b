//! The bridge from the driver's TLS hooks to tokio-rustls, and the one-line wording of a
//! failed handshake: which check failed (unknown CA, name mismatch, …), against which
//! trusted CAs and which host.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use rustls::pki_types::ServerName;
use rustls::{CertificateError, ClientConfig};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_rustls::TlsConnector;

use super::binding::end_point_digest;
use super::verify::{Check, client_config};

/// Makes one TLS connector per session (the driver's [`MakeTlsConnect`]).
#[derive(Clone)]
pub(in crate::store::postgres) struct MakeRustls {
    config: Arc<ClientConfig>,
    /// The trusted CAs as messages name them ("the CA of sslrootcert=…").
    roots: Arc<str>,
}

impl MakeRustls {
    pub(super) fn new(check: Check, roots: String) -> Result<Self, String> {
        Ok(Self {
            config: Arc::new(client_config(check)?),
            roots: roots.into(),
        })
    }
}

impl<S> MakeTlsConnect<S> for MakeRustls
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsConnect;
    type Error = HandshakeError;

    /// Never fails: the driver asks even for Unix sockets and `sslmode=disable`, where no
    /// handshake follows; a host name TLS cannot check fails the handshake itself.
    fn make_tls_connect(&mut self, host: &str) -> Result<RustlsConnect, HandshakeError> {
        Ok(RustlsConnect {
            connector: TlsConnector::from(Arc::clone(&self.config)),
            host: host.to_owned(),
            roots: Arc::clone(&self.roots),
        })
    }
}

/// One session's handshake.
pub(in crate::store::postgres) struct RustlsConnect {
    connector: TlsConnector,
    host: String,
    roots: Arc<str>,
}

type Handshake<S> = Pin<Box<dyn Future<Output = Result<RustlsStream<S>, HandshakeError>> + Send>>;

impl<S> TlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = HandshakeError;
    type Future = Handshake<S>;

    fn connect(self, stream: S) -> Handshake<S> {
        Box::pin(async move {
            let name = ServerName::try_from(self.host.clone()).map_err(|_| HandshakeError {
                text: format!(
                    "the host name {:?} cannot be checked against a certificate",
                    self.host
                ),
                refused: true,
            })?;
            self.connector
                .connect(name, stream)
                .await
                .map(RustlsStream)
                .map_err(|e| HandshakeError {
                    text: wording(&e, &self.host, &self.roots),
                    refused: tls_error(&e).is_some(),
                })
        })
    }
}

/// A failed handshake, in one line.
#[derive(Debug)]
pub(in crate::store::postgres) struct HandshakeError {
    text: String,
    /// TLS itself said no (a certificate that fails verification, a host name it cannot
    /// check, a protocol the two sides do not share): the next attempt meets the same
    /// answer. An I/O failure mid-handshake is not one.
    refused: bool,
}

impl std::fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for HandshakeError {}

/// The driver's own refusal when `sslmode` requires TLS and the server offers none.
const NO_TLS_AT_SERVER: &str = "server does not support TLS";

/// Whether a failed connection attempt is TLS refusing the server for good (see
/// [`HandshakeError`]), or a server that offers no TLS where it is required.
pub(in crate::store::postgres) fn is_tls_refusal(e: &postgres::Error) -> bool {
    std::iter::successors(std::error::Error::source(e), |inner| inner.source()).any(|inner| {
        inner
            .downcast_ref::<HandshakeError>()
            .map_or(inner.to_string() == NO_TLS_AT_SERVER, |h| h.refused)
    })
}

/// The TLS protocol error inside a failed handshake, if it was one (not an I/O failure).
fn tls_error(e: &io::Error) -> Option<&rustls::Error> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
}

/// Which check failed, for `host` against `roots`.
fn wording(e: &io::Error, host: &str, roots: &str) -> String {
    let Some(tls) = tls_error(e) else {
        return format!("the TLS handshake with {host} failed ({e})");
    };
    match tls {
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => {
            format!("unknown CA: the server's certificate is not signed by {roots}")
        }
        rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext {
            presented,
            ..
        }) => format!(
            "name mismatch: the server's certificate is not valid for {host:?} (it names {})",
            if presented.is_empty() {
                "no host".to_owned()
            } else {
                presented
                    .iter()
                    .map(|name| bare_name(name))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ),
        rustls::Error::InvalidCertificate(CertificateError::NotValidForName) => {
            format!("name mismatch: the server's certificate is not valid for {host:?}")
        }
        rustls::Error::InvalidCertificate(
            CertificateError::Expired | CertificateError::ExpiredContext { .. },
        ) => format!("expired: the server's certificate is past its validity ({tls})"),
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. },
        ) => format!("not yet valid: the server's certificate starts later ({tls})"),
        rustls::Error::InvalidCertificate(other) => {
            format!("bad certificate: the server's certificate was refused ({other})")
        }
        other => format!("the TLS handshake with {host} failed ({other})"),
    }
}

/// A name as rustls presents it (`DnsName("db.internal")`, `IpAddress(10.0.0.5)`), bare.
fn bare_name(presented: &str) -> &str {
    presented
        .split_once('(')
        .and_then(|(_, inner)| inner.strip_suffix(')'))
        .map_or(presented, |inner| inner.trim_matches('"'))
}

/// A session's TLS stream.
pub(in crate::store::postgres) struct RustlsStream<S>(tokio_rustls::client::TlsStream<S>);

impl<S: AsyncRead + AsyncWrite + Unpin> TlsStream for RustlsStream<S> {
    /// `tls-server-end-point` (RFC 5929): SCRAM authentication bound to this certificate,
    /// so a man in the middle cannot relay it (`channel_binding=require` insists on it).
    fn channel_binding(&self) -> ChannelBinding {
        let (_, session) = self.0.get_ref();
        session
            .peer_certificates()
            .and_then(<[_]>::first)
            .and_then(|cert| end_point_digest(cert))
            .map_or_else(ChannelBinding::none, ChannelBinding::tls_server_end_point)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presented_names_are_shown_bare() {
        assert_eq!(bare_name("DnsName(\"db.internal\")"), "db.internal");
        assert_eq!(bare_name("IpAddress(127.0.0.1)"), "127.0.0.1");
        assert_eq!(bare_name("plain"), "plain");
    }
}
