//! TLS for the PostgreSQL client, with rustls (no system OpenSSL), by libpq's settings in the
//! URL or connection string:
//!
//! | `sslmode` | TLS | the server's certificate |
//! |---|---|---|
//! | `disable` | never | — |
//! | `prefer` (the default) | if the server offers it | not checked (libpq's `prefer`) |
//! | `require` | always: a server without TLS is refused | not checked (libpq's `require` without a root certificate) |
//! | `verify-ca` | always | signed by a trusted root |
//! | `verify-full` | always | signed by a trusted root, and naming the host connected to |
//!
//! The trusted roots are the PEM certificates of the file `sslrootcert=PATH` names, or else
//! the Mozilla roots built into the `webpki-roots` crate (`sslrootcert=system` says the
//! same). The `postgres` client reads `disable`, `prefer` and `require` itself; `verify-ca`,
//! `verify-full` and `sslrootcert` are taken out of the text here (and `require` handed to
//! it in their place), since it refuses words it does not know.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::{Error, Result};

/// How hard the client insists on TLS, and what it checks (libpq's `sslmode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// The TLS settings of a connection string, and the string as the `postgres` client reads it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Settings {
    /// The string without `sslrootcert`, with `verify-*` said as `require`.
    pub(crate) client: String,
    pub(crate) mode: Mode,
    pub(crate) root_cert: Option<PathBuf>,
}

impl Mode {
    fn parse(word: &str) -> Result<Mode> {
        Ok(match word {
            "disable" => Mode::Disable,
            "prefer" => Mode::Prefer,
            "require" => Mode::Require,
            "verify-ca" => Mode::VerifyCa,
            "verify-full" => Mode::VerifyFull,
            other => {
                return Err(Error::invalid(
                    "sslmode",
                    format!("{other:?} is not one of disable, prefer, require, verify-ca, verify-full"),
                ));
            }
        })
    }
}

/// Splits `db` (a `postgres://` URL or a key=value string) into what the client reads and
/// the TLS settings it does not.
pub(crate) fn split(db: &str) -> Result<Settings> {
    let mut mode = Mode::Prefer;
    let mut root_cert = None;
    let mut take = |key: &str, value: &str| -> Result<Option<String>> {
        match key {
            "sslmode" => {
                mode = Mode::parse(value)?;
                Ok(Some(
                    if matches!(mode, Mode::VerifyCa | Mode::VerifyFull) { "require" } else { value }.into(),
                ))
            }
            "sslrootcert" => {
                if value != "system" {
                    root_cert = Some(PathBuf::from(value));
                }
                Ok(None)
            }
            _ => Ok(Some(value.into())),
        }
    };
    let client = if db.contains("://") { url(db, &mut take)? } else { conninfo(db, &mut take)? };
    Ok(Settings { client, mode, root_cert })
}

type Take<'a> = dyn FnMut(&str, &str) -> Result<Option<String>> + 'a;

/// A URL's query parameters through `take`: kept, rewritten or dropped.
fn url(db: &str, take: &mut Take<'_>) -> Result<String> {
    let Some((head, query)) = db.split_once('?') else { return Ok(db.to_owned()) };
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let decoded = decode(value)?;
        if let Some(value) = take(key, &decoded)? {
            kept.push(if value == decoded { pair.to_owned() } else { format!("{key}={value}") });
        }
    }
    Ok(if kept.is_empty() { head.to_owned() } else { format!("{head}?{}", kept.join("&")) })
}

/// A URL query value, percent-decoded.
fn decode(value: &str) -> Result<String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = value.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok());
            let byte = hex.ok_or_else(|| Error::invalid("url", "a % not followed by two hex digits"))?;
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| Error::invalid("url", "a query value that is not UTF-8"))
}

/// A key=value string's pairs through `take`. Values may be single-quoted with backslash
/// escapes, as libpq reads them; a rewritten value is written back quoted.
fn conninfo(db: &str, take: &mut Take<'_>) -> Result<String> {
    let mut out = String::new();
    let mut rest = db.trim_start();
    while !rest.is_empty() {
        let (key, after) =
            rest.split_once('=').ok_or_else(|| Error::invalid("db", "a word without =value"))?;
        let key = key.trim();
        let after = after.trim_start();
        let (raw, value, tail) = if let Some(quoted) = after.strip_prefix('\'') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next().map(|(_, c)| c)),
                    '\'' => {
                        end = Some(i);
                        break;
                    }
                    c => value.push(c),
                }
            }
            let end = end.ok_or_else(|| Error::invalid("db", "an unterminated quoted value"))?;
            (&after[..end + 2], value, &quoted[end + 1..])
        } else {
            let end = after.find(char::is_whitespace).unwrap_or(after.len());
            (&after[..end], after[..end].to_owned(), &after[end..])
        };
        if let Some(kept) = take(key, &value)? {
            let written = if kept == value {
                raw.to_owned()
            } else {
                format!("'{}'", kept.replace('\\', "\\\\").replace('\'', "\\'"))
            };
            out.push_str(&format!("{}{key}={written}", if out.is_empty() { "" } else { " " }));
        }
        rest = tail.trim_start();
    }
    Ok(out)
}

/// The connector for `mode`, trusting `root_cert`'s certificates (else the built-in roots).
pub(crate) fn connector(settings: &Settings) -> Result<MakeRustlsConnect> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::invalid("sslmode", format!("no TLS version to offer: {e}")))?;
    let chain = match settings.mode {
        Mode::VerifyFull => {
            return Ok(MakeRustlsConnect::new(
                builder.with_root_certificates(roots(settings)?).with_no_client_auth(),
            ));
        }
        Mode::Disable | Mode::Prefer | Mode::Require => None,
        Mode::VerifyCa => Some(
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots(settings)?), Arc::clone(&provider))
                .build()
                .map_err(|e| Error::invalid("sslrootcert", e.to_string()))?,
        ),
    };
    let config = builder
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Verifier { provider, chain }))
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// The trusted roots: the file's, or the built-in ones.
fn roots(settings: &Settings) -> Result<RootCertStore> {
    let Some(path) = &settings.root_cert else {
        return Ok(RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() });
    };
    let unreadable = |why: String| Error::invalid("sslrootcert", format!("{}: {why}", path.display()));
    let mut store = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(path).map_err(|e| unreadable(e.to_string()))? {
        let cert = cert.map_err(|e| unreadable(e.to_string()))?;
        store.add(cert).map_err(|e| unreadable(e.to_string()))?;
    }
    if store.is_empty() {
        return Err(unreadable("holds no PEM certificate".into()));
    }
    Ok(store)
}

/// The verifier of `require`, `prefer` and `verify-ca`. The channel is encrypted and the
/// handshake's signatures checked either way. Without `chain` any certificate is accepted, as
/// libpq does without a root certificate; with it, the chain must lead to a trusted root,
/// and the name in the certificate is not compared with the host.
#[derive(Debug)]
struct Verifier {
    provider: Arc<CryptoProvider>,
    chain: Option<Arc<WebPkiServerVerifier>>,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        use rustls::CertificateError::{NotValidForName, NotValidForNameContext};
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            // The chain is checked before the name: this error means the chain was good.
            Err(rustls::Error::InvalidCertificate(NotValidForName | NotValidForNameContext { .. })) => {
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libpq_words_are_taken_out_of_a_url() {
        let s = split(
            "postgres://u:pw@h:5/db?sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.pem&application_name=x",
        )
        .expect("split");
        assert_eq!(s.client, "postgres://u:pw@h:5/db?sslmode=require&application_name=x");
        assert_eq!((s.mode, s.root_cert), (Mode::VerifyFull, Some(PathBuf::from("/tmp/ca.pem"))));
        let s = split("postgres://h/db?sslmode=require").expect("split");
        assert_eq!(
            (s.client.as_str(), s.mode, s.root_cert),
            ("postgres://h/db?sslmode=require", Mode::Require, None)
        );
        let s = split("postgres://h/db?sslrootcert=system").expect("split");
        assert_eq!((s.client.as_str(), s.mode, s.root_cert), ("postgres://h/db", Mode::Prefer, None));
        let err = split("postgres://h/db?sslmode=verify").unwrap_err();
        assert!(err.to_string().contains("sslmode") && err.to_string().contains("verify-full"), "{err}");
    }

    #[test]
    fn libpq_words_are_taken_out_of_a_conninfo_string() {
        let s =
            split("host=h dbname=d sslmode=verify-ca sslrootcert='/a b/c\\'s.pem' user=u").expect("split");
        assert_eq!(s.client, "host=h dbname=d sslmode='require' user=u");
        assert_eq!((s.mode, s.root_cert), (Mode::VerifyCa, Some(PathBuf::from("/a b/c's.pem"))));
        assert_eq!(split("host=h password='x y'").expect("split").client, "host=h password='x y'");
        assert!(split("host=h sslrootcert='open").is_err());
    }

    #[test]
    fn a_root_file_without_certificates_is_refused_by_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, "not a certificate\n").expect("write");
        let settings = Settings { client: String::new(), mode: Mode::VerifyFull, root_cert: Some(path) };
        let err = connector(&settings).err().expect("refused");
        assert!(err.to_string().contains("sslrootcert") && err.to_string().contains("no PEM"), "{err}");
        let missing = Settings { root_cert: Some(dir.path().join("none.pem")), ..settings };
        assert!(connector(&missing).is_err());
        let builtin = Settings { client: String::new(), mode: Mode::VerifyFull, root_cert: None };
        assert!(connector(&builtin).is_ok());
    }
}
