//! TLS to the server, asked for with libpq's URL parameters so an operator's existing
//! connection strings keep their meaning:
//!
//! - `sslmode=disable`: never TLS.
//! - `sslmode=prefer` (the default, as libpq's): TLS when the server offers it, plain text
//!   when it does not; the certificate is not checked (unless `sslrootcert` is given).
//! - `sslmode=require`: TLS or no connection; encrypted without checking the certificate,
//!   unless `sslrootcert` is given: then its CA must have signed it (libpq's rule).
//! - `sslmode=verify-ca`: TLS, and the certificate chains to a trusted CA.
//! - `sslmode=verify-full`: that, and the certificate names the host of the URL.
//! - `sslrootcert=PATH`: the trusted CAs (PEM). Without it, `verify-ca` / `verify-full`
//!   trust the system's roots; `sslrootcert=system` says so explicitly and, as in libpq,
//!   makes `verify-full` the default and refuses a weaker mode.
//!
//! The driver understands only `disable` / `prefer` / `require`, so these two parameters are
//! taken out of the URL here and the checks live in the rustls configuration
//! ([`verify`]), on the `ring` provider. A failed check is reported in one line naming it:
//! unknown CA, name mismatch ([`connect`]); a server without TLS under `require` or stronger
//! is the driver's "server does not support TLS". Nothing of a certificate file is ever
//! printed, only its path.

mod binding;
mod connect;
mod verify;

use std::path::PathBuf;
use std::sync::Arc;

use percent_encoding::percent_decode_str;
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

pub(super) use connect::{MakeRustls, is_tls_refusal};

use super::redact_url;
use crate::error::{Error, Result};

/// libpq's `sslmode` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Option<Self> {
        Some(match value {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            _ => return None,
        })
    }
}

/// Where the trusted CAs come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Roots {
    /// No `sslrootcert`: the system's, when a mode needs any.
    Unset,
    /// `sslrootcert=system`.
    System,
    /// `sslrootcert=PATH`.
    File(PathBuf),
}

/// The TLS part of a store URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TlsSettings {
    pub(super) mode: SslMode,
    pub(super) roots: Roots,
}

/// Takes `sslmode` and `sslrootcert` out of `url` (the driver would refuse the verify modes
/// and `sslrootcert`), returning the rest of the URL for the driver and the settings.
///
/// # Errors
/// `INVALID` for an unknown `sslmode`, a value that is not UTF-8 once decoded, or
/// `sslrootcert=system` with a mode that does not check host names.
pub(super) fn split_url(url: &str) -> Result<(String, TlsSettings)> {
    let invalid = |why: String| Error::Invalid(format!("{}: {why}", redact_url(url)));
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let mut kept = Vec::new();
    let mut mode = None;
    let mut roots = Roots::Unset;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, raw) = pair.split_once('=').unwrap_or((pair, ""));
        let value = || {
            percent_decode_str(raw)
                .decode_utf8()
                .map_err(|_| invalid(format!("the {key} value is not UTF-8")))
        };
        match key {
            "sslmode" => {
                let value = value()?;
                mode = Some(SslMode::parse(&value).ok_or_else(|| {
                    invalid(format!(
                        "sslmode={value:?} is not one of disable, prefer, require, verify-ca, verify-full"
                    ))
                })?);
            }
            "sslrootcert" => {
                roots = match &*value()? {
                    "" => Roots::Unset,
                    "system" => Roots::System,
                    path => Roots::File(path.into()),
                };
            }
            _ => kept.push(pair),
        }
    }
    let mode = match (mode, &roots) {
        (None, Roots::System) => SslMode::VerifyFull,
        (Some(weak), Roots::System) if weak != SslMode::VerifyFull => {
            return Err(invalid(format!(
                "sslrootcert=system needs sslmode=verify-full (the system's roots vouch for host names), not {}",
                mode_name(weak)
            )));
        }
        (mode, _) => mode.unwrap_or(SslMode::Prefer),
    };
    let rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((rest, TlsSettings { mode, roots }))
}

fn mode_name(mode: SslMode) -> &'static str {
    match mode {
        SslMode::Disable => "disable",
        SslMode::Prefer => "prefer",
        SslMode::Require => "require",
        SslMode::VerifyCa => "verify-ca",
        SslMode::VerifyFull => "verify-full",
    }
}

impl TlsSettings {
    /// What the driver is told: whether TLS may be skipped. The checks beyond that are the
    /// connector's.
    pub(super) fn driver_mode(&self) -> postgres::config::SslMode {
        match self.mode {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Prefer => postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                postgres::config::SslMode::Require
            }
        }
    }

    /// The connector for every session of the store; the CAs are read once, here.
    ///
    /// # Errors
    /// `INVALID` for an `sslrootcert` file that cannot be read or holds no usable
    /// certificate, or no system roots when they are needed; `label` names the server.
    pub(super) fn connector(&self, label: &str) -> Result<MakeRustls> {
        let invalid = |why: String| Error::Invalid(format!("{label}: {why}"));
        let check = match (self.mode, &self.roots) {
            (SslMode::Disable, _) | (SslMode::Prefer | SslMode::Require, Roots::Unset) => {
                verify::Check::Encrypt
            }
            (SslMode::VerifyFull, roots) => {
                verify::Check::Full(Arc::new(load(roots).map_err(invalid)?))
            }
            (_, roots) => verify::Check::Chain(Arc::new(load(roots).map_err(invalid)?)),
        };
        MakeRustls::new(check, describe_roots(&self.roots)).map_err(invalid)
    }
}

/// The trusted CAs, as the messages name them.
fn describe_roots(roots: &Roots) -> String {
    match roots {
        Roots::File(path) => format!("the CA of sslrootcert={}", path.display()),
        Roots::Unset | Roots::System => "any of the system's root CAs".to_owned(),
    }
}

/// Reads the trusted CAs. A file's text is never echoed (a key pasted into it by mistake
/// must not reach a log); only its path and what was wrong.
fn load(roots: &Roots) -> std::result::Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    match roots {
        Roots::File(path) => {
            let name = format!("sslrootcert={}", path.display());
            let certs = CertificateDer::pem_file_iter(path).map_err(|e| match e {
                rustls::pki_types::pem::Error::Io(io) => format!("{name}: cannot read it ({io})"),
                _ => format!("{name}: cannot read it"),
            })?;
            for cert in certs {
                let cert = cert.map_err(|e| match e {
                    rustls::pki_types::pem::Error::Io(io) => {
                        format!("{name}: cannot read it ({io})")
                    }
                    _ => format!("{name}: not a well-formed PEM file"),
                })?;
                store.add(cert).map_err(|e| {
                    format!("{name}: a certificate in it is not usable as a CA ({e})")
                })?;
            }
            if store.is_empty() {
                return Err(format!(
                    "{name}: no certificate in it (a PEM file of CA certificates is expected)"
                ));
            }
        }
        Roots::Unset | Roots::System => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                return Err(
                    "no system root certificates were found: install the system's CA bundle or give sslrootcert=PATH"
                        .to_owned(),
                );
            }
        }
    }
    Ok(store)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(url: &str) -> (String, TlsSettings) {
        split_url(url).expect("a valid URL")
    }

    #[test]
    fn the_default_is_prefer_without_a_ca() {
        let (rest, tls) = split("postgres://app@db:5432/work");
        assert_eq!(rest, "postgres://app@db:5432/work");
        assert_eq!(tls.mode, SslMode::Prefer);
        assert_eq!(tls.roots, Roots::Unset);
        assert_eq!(tls.driver_mode(), postgres::config::SslMode::Prefer);
    }

    #[test]
    fn the_tls_parameters_are_taken_out_and_the_rest_is_kept_in_order() {
        let (rest, tls) = split(
            "postgres://app:pw@db/work?application_name=x&sslmode=verify-full&sslrootcert=%2Fetc%2Fpg%20ca%2Froot.pem&connect_timeout=3",
        );
        assert_eq!(
            rest,
            "postgres://app:pw@db/work?application_name=x&connect_timeout=3"
        );
        assert_eq!(tls.mode, SslMode::VerifyFull);
        assert_eq!(tls.roots, Roots::File("/etc/pg ca/root.pem".into()));
        assert_eq!(tls.driver_mode(), postgres::config::SslMode::Require);

        let (rest, tls) = split("postgres://db/work?sslmode=disable");
        assert_eq!(rest, "postgres://db/work");
        assert_eq!(tls.driver_mode(), postgres::config::SslMode::Disable);
        for (value, mode) in [
            ("require", SslMode::Require),
            ("verify-ca", SslMode::VerifyCa),
            ("prefer", SslMode::Prefer),
        ] {
            assert_eq!(
                split(&format!("postgres://db/w?sslmode={value}")).1.mode,
                mode
            );
        }
    }

    #[test]
    fn sslrootcert_system_means_verify_full_and_refuses_weaker_modes() {
        let (_, tls) = split("postgres://db/w?sslrootcert=system");
        assert_eq!(tls.mode, SslMode::VerifyFull);
        assert_eq!(tls.roots, Roots::System);
        let e = split_url("postgres://app:secret@db/w?sslmode=require&sslrootcert=system")
            .expect_err("refused");
        assert_eq!(e.code(), "INVALID");
        assert!(e.to_string().contains("verify-full"), "{e}");
        assert!(!e.to_string().contains("secret"), "{e}");
    }

    #[test]
    fn unknown_modes_are_refused_in_one_line_without_the_password() {
        for mode in ["allow", "verify_full", "REQUIRE", ""] {
            let e = split_url(&format!("postgres://app:secret@db/w?sslmode={mode}"))
                .expect_err("refused");
            assert_eq!(e.code(), "INVALID");
            let text = e.to_string();
            assert!(
                text.contains("sslmode") && text.contains("verify-full"),
                "{text}"
            );
            assert!(!text.contains("secret") && !text.contains('\n'), "{text}");
        }
        let e = split_url("postgres://db/w?sslrootcert=%ff").expect_err("refused");
        assert!(e.to_string().contains("sslrootcert"), "{e}");
    }

    #[test]
    fn a_missing_or_certificateless_root_file_is_named_and_its_text_never_echoed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let missing = dir.path().join("missing.pem");
        let key = dir.path().join("key.pem");
        std::fs::write(
            &key,
            "-----BEGIN PRIVATE KEY-----\nU0VDUkVUS0VZTUFURVJJQUw=\n-----END PRIVATE KEY-----\n",
        )
        .expect("write");
        let garbled = dir.path().join("garbled.pem");
        std::fs::write(
            &garbled,
            "-----BEGIN CERTIFICATE-----\nU0VDUkVUS0VZTUFURVJJQUw=\n-----END CERTIFICATE-----\n",
        )
        .expect("write");
        for (path, why) in [
            (&missing, "cannot read it"),
            (&key, "no certificate"),
            (&garbled, "not usable as a CA"),
        ] {
            let settings = TlsSettings {
                mode: SslMode::VerifyFull,
                roots: Roots::File(path.clone()),
            };
            let e = settings
                .connector("postgres://app@db:5432/w")
                .err()
                .expect("refused");
            let text = e.to_string();
            assert_eq!(e.code(), "INVALID");
            assert!(
                text.contains(&format!("sslrootcert={}", path.display())),
                "{text}"
            );
            assert!(text.contains(why), "{text}");
            assert!(!text.contains("U0VDUkVU") && !text.contains('\n'), "{text}");
        }
    }
}
