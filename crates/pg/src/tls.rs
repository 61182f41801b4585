//! TLS to the server, set as libpq sets it: `sslmode`, `sslrootcert`,
//! `sslcert` and `sslkey` in the connection string (URL query parameters or
//! `key=value` pairs). tokio-postgres knows `sslmode` up to `require` only and
//! none of the others, so [`split`] takes them out of the string before it is
//! parsed and [`Tls::new`] turns them into a rustls configuration.
//!
//! | `sslmode` | TLS | the server's certificate |
//! |---|---|---|
//! | `disable` | never | — |
//! | `allow`, `prefer` (the default) | when the server offers it | not checked |
//! | `require` | always | not checked; with a root certificate, checked as `verify-ca` |
//! | `verify-ca` | always | signed by a root certificate |
//! | `verify-full` | always | signed by a root certificate, and made out to the host |
//!
//! The root certificates are `sslrootcert`'s (a PEM file), else libpq's
//! default file `~/.postgresql/root.crt` when it exists; `sslrootcert=system`
//! takes the platform's trusted ones and requires `verify-full`, as in libpq.
//! `sslcert` and `sslkey` (PEM files, both or neither) give a client
//! certificate; on Unix the key file must not be readable by others (0600,
//! or 0640 when root owns it), as libpq requires. As in libpq, TLS is not
//! used on Unix sockets ([`checked`]).
//! Differences from libpq: `allow` tries TLS first (tokio-postgres has no
//! plain-first mode); `prefer` does not fall back to a plain connection when
//! the TLS handshake fails; client certificates are only read from the files
//! named (no default files, no `sslpassword`); `verify-full` matches subject alternative names only (webpki: no
//! fallback to a CN-only certificate's common name); no environment
//! variable is read (`PGSSLMODE`…), as tokio-postgres reads none.

use std::path::PathBuf;
use std::sync::Arc;

use forkpoint_core::{Error, Result};
use postgres::config::SslMode;
use postgres::{Client, Config, NoTls};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

/// The keys taken out of the connection string.
const KEYS: [&str; 4] = ["sslmode", "sslrootcert", "sslcert", "sslkey"];

/// The TLS settings of a connection string, as written (last one wins).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Settings {
    pub mode: Option<String>,
    pub root: Option<String>,
    pub cert: Option<String>,
    pub key: Option<String>,
}

impl Settings {
    fn set(&mut self, key: &str, value: String) {
        match key {
            "sslmode" => self.mode = Some(value),
            "sslrootcert" => self.root = Some(value),
            "sslcert" => self.cert = Some(value),
            _ => self.key = Some(value),
        }
    }
}

/// `url` without its TLS settings, and the settings. The string is cut
/// into parameters exactly as tokio-postgres cuts it (a URL's credentials run
/// to its first `@`, its parameters are `key=value` up to `&`; pairs are
/// separated by any Unicode whitespace, a backslash escapes the next
/// character), so that what is taken out is what tokio-postgres would have
/// read; [`checked`] then makes sure no `sslmode` was left for it. Text that
/// is not a connection string is given back whole, for tokio-postgres to
/// say why.
pub(crate) fn split(url: &str) -> Result<(String, Settings)> {
    let mut s = Settings::default();
    let Some(rest) = url
        .strip_prefix("postgres://")
        .or_else(|| url.strip_prefix("postgresql://"))
    else {
        let Some(pairs) = pairs(url) else {
            return Ok((url.to_string(), s));
        };
        let mut kept = Vec::new();
        for (k, v, raw) in pairs {
            if KEYS.contains(&k) {
                s.set(k, v);
            } else {
                kept.push(raw);
            }
        }
        return Ok((kept.join(" "), s));
    };
    // Credentials end at the first `@` anywhere; the parameters start at the
    // first `?` after them.
    let after_creds = rest.find('@').map_or(0, |at| at + 1);
    let Some(q) = rest[after_creds..].find('?') else {
        return Ok((url.to_string(), s));
    };
    let query_at = url.len() - rest.len() + after_creds + q;
    let (base, query) = (&url[..query_at], &url[query_at + 1..]);
    let mut kept = Vec::new();
    let mut left = query;
    while !left.is_empty() {
        let Some(eq) = left.find('=') else {
            // "unterminated parameter": tokio-postgres refuses the string.
            return Ok((url.to_string(), Settings::default()));
        };
        let end = left[eq + 1..].find('&').map_or(left.len(), |e| eq + 1 + e);
        let piece = &left[..end];
        left = left.get(end + 1..).unwrap_or("");
        let key = percent_decoded(&piece[..eq], "a parameter's name")?;
        if KEYS.contains(&key.as_str()) {
            s.set(&key, percent_decoded(&piece[eq + 1..], &key)?);
        } else {
            kept.push(piece);
        }
    }
    let rest = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((rest, s))
}

/// `config` as parsed from what [`split`] left: `INVALID_INPUT` when it
/// still sets `sslmode` (the two readings of the string differed: the mode
/// asked for must never be lost). Then, as libpq: a server named only by
/// `hostaddr` is named by it for TLS too (tokio-postgres needs a name for the
/// handshake; `verify-full` checks the address against the certificate), and
/// TLS is not used on Unix sockets.
pub(crate) fn checked(mut config: Config, ssl: SslMode) -> Result<Config> {
    if config.get_ssl_mode() != SslMode::Prefer {
        return Err(Error::invalid_input(
            "the PostgreSQL connection string's sslmode could not be read unambiguously (check its quoting and escapes)",
        ));
    }
    if config.get_hosts().is_empty() {
        let addrs: Vec<String> = config
            .get_hostaddrs()
            .iter()
            .map(ToString::to_string)
            .collect();
        for a in addrs {
            config.host(&a);
        }
    }
    let only_sockets = !config.get_hosts().is_empty()
        && config
            .get_hosts()
            .iter()
            .all(|h| !matches!(h, postgres::config::Host::Tcp(_)));
    config.ssl_mode(if only_sockets { SslMode::Disable } else { ssl });
    Ok(config)
}

/// `%XX` escapes decoded (a URL's parameter). The text is not repeated in
/// an error: it may be part of a password.
fn percent_decoded(text: &str, what: &str) -> Result<String> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = |j: usize| b.get(j).and_then(|c| (*c as char).to_digit(16));
            let (Some(hi), Some(lo)) = (hex(i + 1), hex(i + 2)) else {
                return Err(Error::invalid_input(format!(
                    "the PostgreSQL connection string is not valid: a bad %-escape in {what}"
                )));
            };
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| {
        Error::invalid_input(format!(
            "the PostgreSQL connection string is not valid: {what} is not UTF-8 once decoded"
        ))
    })
}

/// libpq's `key = value` pairs as tokio-postgres reads them: each key, its
/// value (quotes and backslash escapes undone; a backslash at the end is
/// dropped) and its text as written; `None` when tokio-postgres would refuse
/// the text. Parsing stops, as there, at a `=` where a key should start.
fn pairs(text: &str) -> Option<Vec<(&str, String, &str)>> {
    let mut out = Vec::new();
    let mut it = text.char_indices().peekable();
    let skip_ws = |it: &mut std::iter::Peekable<std::str::CharIndices<'_>>| {
        while it.next_if(|(_, c)| c.is_whitespace()).is_some() {}
    };
    let at = |it: &mut std::iter::Peekable<std::str::CharIndices<'_>>| {
        it.peek().map_or(text.len(), |(i, _)| *i)
    };
    loop {
        skip_ws(&mut it);
        let start = at(&mut it);
        while it
            .next_if(|(_, c)| !c.is_whitespace() && *c != '=')
            .is_some()
        {}
        let key = &text[start..at(&mut it)];
        if key.is_empty() {
            return Some(out);
        }
        skip_ws(&mut it);
        it.next_if(|(_, c)| *c == '=')?;
        skip_ws(&mut it);
        let mut value = String::new();
        if it.next_if(|(_, c)| *c == '\'').is_some() {
            loop {
                match it.next()?.1 {
                    '\'' => break,
                    '\\' => {
                        if let Some((_, c)) = it.next() {
                            value.push(c);
                        }
                    }
                    c => value.push(c),
                }
            }
        } else {
            while let Some((_, c)) = it.next_if(|(_, c)| !c.is_whitespace()) {
                if c == '\\' {
                    if let Some((_, c)) = it.next() {
                        value.push(c);
                    }
                } else {
                    value.push(c);
                }
            }
            if value.is_empty() {
                return None;
            }
        }
        out.push((key, value, &text[start..at(&mut it)]));
    }
}

/// How connections are made: plain, or with a rustls configuration.
#[derive(Clone)]
pub(crate) struct Tls(Option<MakeRustlsConnect>);

/// What `sslmode` asks of the server's certificate.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Check {
    None,
    Chain,
    Full,
}

impl Tls {
    /// The connector for `s`, and the mode tokio-postgres is to use.
    /// Settings that cannot be used (an unknown mode, a root certificate
    /// file that is missing or holds none, half a client certificate) are
    /// `INVALID_INPUT`.
    pub(crate) fn new(s: &Settings) -> Result<(Tls, SslMode)> {
        let bad = |m: String| Error::invalid_input(m);
        let system = s.root.as_deref() == Some("system");
        let mode = match s.mode.as_deref() {
            Some(m) => m,
            None if system => "verify-full",
            None => "prefer",
        };
        if system && mode != "verify-full" {
            return Err(bad(format!(
                "sslrootcert=system needs sslmode=verify-full, not {mode} (as in libpq: the system's roots are only worth the check of the host's name)"
            )));
        }
        let (ssl, check) = match mode {
            "disable" => return Ok((Tls(None), SslMode::Disable)),
            "allow" | "prefer" => (SslMode::Prefer, Check::None),
            "require" => (SslMode::Require, Check::None),
            "verify-ca" => (SslMode::Require, Check::Chain),
            "verify-full" => (SslMode::Require, Check::Full),
            other => {
                return Err(bad(format!(
                    "sslmode must be disable, allow, prefer, require, verify-ca or verify-full, not {other:?}"
                )));
            }
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let roots = match (&s.root, check) {
            (Some(r), _) if r == "system" => Some(system_roots()?),
            (Some(path), Check::None) if mode != "require" => {
                // prefer and allow never check; the file must still be sound.
                roots_from(&PathBuf::from(path))?;
                None
            }
            (Some(path), _) => Some(roots_from(&PathBuf::from(path))?),
            (None, Check::None) if mode != "require" => None,
            (None, _) => match default_root_file().filter(|p| p.is_file()) {
                Some(p) => Some(roots_from(&p)?),
                None if check == Check::None => None,
                None => {
                    return Err(bad(format!(
                        "sslmode={mode} needs the certificates of the CA that signed the server's: set sslrootcert to a PEM file of them, or to system for the platform's trusted ones (no default file ~/.postgresql/root.crt was found)"
                    )));
                }
            },
        };
        // require with a root certificate checks as verify-ca (libpq).
        let check = match (check, &roots) {
            (Check::None, Some(_)) => Check::Chain,
            (c, _) => c,
        };
        let chain = match roots {
            None => None,
            Some(roots) => Some(
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                    .build()
                    .map_err(|e| bad(format!("the root certificates cannot be used: {e}")))?,
            ),
        };
        let verifier = Arc::new(Checks {
            chain,
            name: check == Check::Full,
            provider: provider.clone(),
        });
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::internal(format!("rustls: {e}")))?
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let config = match (&s.cert, &s.key) {
            (None, None) => builder.with_no_client_auth(),
            (Some(cert), Some(key)) => {
                let chain = certs_from(&PathBuf::from(cert), "sslcert")?;
                let path = key;
                // Before a byte is read (as libpq): a FIFO or a device is
                // refused at once, not read from forever.
                key_file_private(path)?;
                let key = PrivateKeyDer::from_pem_file(path).map_err(|e| {
                    bad(format!(
                        "sslkey {path}: no private key could be read ({e}); it must be an unencrypted PEM key (PKCS#8, PKCS#1 or SEC1)"
                    ))
                })?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| bad(format!("sslcert and sslkey cannot be used together: {e}")))?
            }
            _ => {
                return Err(bad(
                    "sslcert and sslkey go together: a client certificate needs both files".into(),
                ));
            }
        };
        Ok((Tls(Some(MakeRustlsConnect::new(config))), ssl))
    }
}

/// How a connection is opened: the connection's settings and its TLS.
#[derive(Clone)]
pub(crate) struct Connector {
    config: Config,
    tls: Tls,
}

impl Connector {
    pub(crate) fn new(config: Config, tls: Tls) -> Connector {
        Connector { config, tls }
    }

    /// A new connection.
    pub(crate) fn connect(&self) -> std::result::Result<Client, postgres::Error> {
        match &self.tls.0 {
            None => self.config.connect(NoTls),
            Some(tls) => self.config.connect(tls.clone()),
        }
    }
}

/// libpq's default root certificate file.
fn default_root_file() -> Option<PathBuf> {
    if cfg!(windows) {
        std::env::var_os("APPDATA").map(|d| PathBuf::from(d).join("postgresql").join("root.crt"))
    } else {
        std::env::home_dir().map(|h| h.join(".postgresql").join("root.crt"))
    }
}

/// libpq's rule for a private key file on Unix (`fe-secure-openssl.c`): a
/// regular file, which no one but its owner can read, write or run (0600 or
/// less), or, when root owns it, root's group may read too (0640 or less).
/// Anyone else who could read the key could connect as its certificate says.
#[cfg(unix)]
fn key_file_private(path: &str) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path)
        .map_err(|e| Error::invalid_input(format!("sslkey {path} cannot be read: {e}")))?;
    if !meta.is_file() {
        return Err(Error::invalid_input(format!(
            "sslkey {path} is not a regular file"
        )));
    }
    let mode = meta.mode() & 0o7777;
    let open = if meta.uid() == 0 {
        mode & 0o037
    } else {
        mode & 0o077
    };
    if open != 0 {
        return Err(Error::invalid_input(format!(
            "sslkey {path} has group or world access (mode {mode:04o}); as libpq requires, it must be u=rw (0600) or less, or u=rw,g=r (0640) or less when root owns it (chmod 600 {path})"
        )));
    }
    Ok(())
}

/// Windows has no such modes (libpq checks nothing there either).
#[cfg(not(unix))]
fn key_file_private(_path: &str) -> Result<()> {
    Ok(())
}

fn certs_from(path: &PathBuf, what: &str) -> Result<Vec<CertificateDer<'static>>> {
    let shown = path.display();
    let bytes = std::fs::read(path)
        .map_err(|e| Error::invalid_input(format!("{what} {shown} cannot be read: {e}")))?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| Error::invalid_input(format!("{what} {shown} is not PEM: {e}")))?;
    if certs.is_empty() {
        return Err(Error::invalid_input(format!(
            "{what} {shown} holds no certificate (-----BEGIN CERTIFICATE-----)"
        )));
    }
    Ok(certs)
}

fn roots_from(path: &PathBuf) -> Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    for cert in certs_from(path, "sslrootcert")? {
        roots.add(cert).map_err(|e| {
            Error::invalid_input(format!(
                "sslrootcert {}: a certificate cannot be used as a root: {e}",
                path.display()
            ))
        })?;
    }
    Ok(roots)
}

fn system_roots() -> Result<RootCertStore> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(found.certs);
    if roots.is_empty() {
        let why: Vec<String> = found.errors.iter().map(ToString::to_string).collect();
        return Err(Error::invalid_input(format!(
            "sslrootcert=system: the platform has no trusted CA certificates to read{}",
            if why.is_empty() {
                String::new()
            } else {
                format!(" ({})", why.join("; "))
            }
        )));
    }
    Ok(roots)
}

/// What is checked of the server's certificate: nothing (`prefer`, `allow`
/// and `require` without a root certificate, as libpq), its chain
/// (`verify-ca`), or its chain and name (`verify-full`). The handshake's
/// signatures are always checked, so the connection is encrypted to whoever
/// holds the certificate's key.
#[derive(Debug)]
struct Checks {
    chain: Option<Arc<WebPkiServerVerifier>>,
    name: bool,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Checks {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.name => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    fn settings(mode: &str, root: &str) -> Settings {
        Settings {
            mode: Some(mode.into()),
            root: Some(root.into()),
            ..Settings::default()
        }
    }

    #[test]
    fn urls_lose_only_the_tls_keys() {
        let (rest, s) = split(
            "postgres://u:p%40w@h:5432/db?sslmode=verify-full&application_name=x&sslrootcert=%2Ftmp%2Fca%20b.pem&channel_binding=require",
        )
        .unwrap();
        assert_eq!(
            rest,
            "postgres://u:p%40w@h:5432/db?application_name=x&channel_binding=require"
        );
        assert_eq!(s, settings("verify-full", "/tmp/ca b.pem"));
        let (rest, s) = split("postgresql://h/db?sslmode=require").unwrap();
        assert_eq!(
            (rest.as_str(), s.mode.as_deref()),
            ("postgresql://h/db", Some("require"))
        );
        let (rest, s) = split("postgres://h/db").unwrap();
        assert_eq!((rest.as_str(), s), ("postgres://h/db", Settings::default()));
        for bad in [
            "postgres://h/db?sslrootcert=%zz",
            "postgres://h/db?sslrootcert=%ff",
            "postgres://h/db?sslrootcert=%+0",
        ] {
            let e = split(bad).unwrap_err();
            let value = bad.rsplit('=').next().unwrap();
            assert!(!e.message.contains(value), "the value is not repeated: {e}");
        }
    }

    /// What `split` takes out is what tokio-postgres would have read: for
    /// each string, the rest parses with no sslmode left in it, and the mode
    /// found is the one the string sets.
    #[test]
    fn split_reads_as_tokio_postgres_reads() {
        for (text, mode) in [
            // A `?` or `=` in the password: credentials run to the first `@`.
            ("postgres://u:pa?ss@h/db?sslmode=require", Some("require")),
            (
                "postgres://u:p?sslmode=disable@h/db?sslmode=require",
                Some("require"),
            ),
            ("postgres://u:p?sslmode=disable@h/db", None),
            (
                "postgres://h/db?application_name=a&sslmode=verify-full&",
                Some("verify-full"),
            ),
            (
                "postgres://h/db?sslmode=require&sslmode=disable",
                Some("disable"),
            ),
            // Any Unicode whitespace separates pairs.
            ("host=h\u{a0}sslmode=require", Some("require")),
            ("host=h\u{b}sslmode=require\u{3000}port=5", Some("require")),
            // A backslash at the end is dropped; one inside escapes.
            ("sslmode=require password=abc\\", Some("require")),
            (
                "password=a\\ sslmode=disable sslmode=require",
                Some("require"),
            ),
            (
                "password='a\\' sslmode=disable' sslmode=require",
                Some("require"),
            ),
            ("password='x'sslmode=require", Some("require")),
        ] {
            let (rest, s) = split(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(s.mode.as_deref(), mode, "{text:?}");
            let config =
                Config::from_str(&rest).unwrap_or_else(|e| panic!("{text:?} → {rest:?}: {e}"));
            assert_eq!(
                config.get_ssl_mode(),
                SslMode::Prefer,
                "{text:?} → {rest:?}"
            );
            assert!(checked(config, SslMode::Require).is_ok());
        }
        // Where tokio-postgres would refuse the string, it is given back whole.
        for text in [
            "host=h password='open sslmode=require",
            "sslmode=",
            "postgres://h/db?sslmode",
        ] {
            let (rest, _) = split(text).unwrap();
            assert_eq!(rest, text);
            assert!(Config::from_str(&rest).is_err(), "{text:?}");
        }
    }

    #[test]
    fn checked_refuses_a_mode_left_behind_and_names_a_bare_address() {
        let left = Config::from_str("host=h sslmode=require").unwrap();
        assert!(checked(left, SslMode::Prefer).is_err());
        let bare = checked(
            Config::from_str("hostaddr=127.0.0.1").unwrap(),
            SslMode::Require,
        )
        .unwrap();
        assert_eq!(
            bare.get_hosts(),
            &[postgres::config::Host::Tcp("127.0.0.1".into())]
        );
        assert_eq!(bare.get_ssl_mode(), SslMode::Require);
        let socket = checked(
            Config::from_str("host=/run/postgresql").unwrap(),
            SslMode::Require,
        )
        .unwrap();
        assert_eq!(socket.get_ssl_mode(), SslMode::Disable);
    }

    #[test]
    fn pairs_lose_only_the_tls_keys() {
        let (rest, s) = split(
            r"host=h port = 5 sslmode= verify-ca  password='a b\'c' sslrootcert='/x y/ca.pem' sslcert=/c\ d.pem sslkey=k.pem",
        )
        .unwrap();
        assert_eq!(rest, r"host=h port = 5 password='a b\'c'");
        assert_eq!(
            s,
            Settings {
                mode: Some("verify-ca".into()),
                root: Some("/x y/ca.pem".into()),
                cert: Some("/c d.pem".into()),
                key: Some("k.pem".into()),
            }
        );
        // The last one wins, as in libpq.
        let (_, s) = split("sslmode=require sslmode=disable").unwrap();
        assert_eq!(s.mode.as_deref(), Some("disable"));
        // Not pairs: given back whole for tokio-postgres to refuse.
        for text in ["host", "password='open"] {
            let (rest, s) = split(text).unwrap();
            assert_eq!((rest.as_str(), s), (text, Settings::default()));
        }
    }

    #[test]
    fn modes_are_libpqs() {
        let code = |s: &Settings| Tls::new(s).err().map(|e| e.code);
        let mode = |s: &Settings| Tls::new(s).map(|(_, m)| m).ok();
        assert_eq!(mode(&Settings::default()), Some(SslMode::Prefer));
        let only = |m: &str| Settings {
            mode: Some(m.into()),
            ..Settings::default()
        };
        assert_eq!(mode(&only("disable")), Some(SslMode::Disable));
        assert_eq!(mode(&only("allow")), Some(SslMode::Prefer));
        assert_eq!(mode(&only("require")), Some(SslMode::Require));
        for bad in [
            only("verify"),
            only("VERIFY-FULL"),
            settings("require", "system"),
            settings("verify-full", "/nonexistent/ca.pem"),
            Settings {
                cert: Some("/nonexistent/c.pem".into()),
                ..Settings::default()
            },
        ] {
            assert_eq!(
                code(&bad),
                Some(forkpoint_core::ErrorCode::InvalidInput),
                "{bad:?}"
            );
        }
    }
}
