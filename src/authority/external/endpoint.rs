//! Where an `http` handler's requests go: `http://HOST[:PORT]/PATH`, parsed once from the
//! config file. Loopback unless the handler opts in with `allow_remote`: attempts carry
//! payloads and idempotency keys in clear text, so sending them off the machine is a
//! decision the config file states.

use std::net::IpAddr;

use hyper::Uri;

/// A parsed `http://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The host as written (`127.0.0.1`, `[::1]`, `localhost`, `billing.internal`).
    pub host: String,
    pub port: u16,
    /// The request target: path and query, at least `/`.
    pub path: String,
    /// All of it, as requests are sent: checked here, so a handler never meets a target
    /// the HTTP client refuses.
    uri: Uri,
}

impl Endpoint {
    /// Parses `url`; a host that is not loopback is refused unless `allow_remote`.
    ///
    /// # Errors
    /// One line saying what is wrong with it.
    pub fn parse(url: &str, allow_remote: bool) -> Result<Self, String> {
        let Some(rest) = url.strip_prefix("http://") else {
            return Err(if url.starts_with("https://") {
                format!(
                    "{url:?}: https is not supported; put a local proxy in front, or use http:// on loopback"
                )
            } else {
                format!("{url:?} is not an http:// URL")
            });
        };
        let (authority, path) = rest
            .find(['/', '?'])
            .map_or((rest, "/"), |i| rest.split_at(i));
        let path = if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_owned()
        };
        if path
            .bytes()
            .any(|b| b.is_ascii_control() || b == b' ' || b == b'#')
        {
            return Err(format!(
                "{url:?}: the path must be plain (no spaces, control characters or fragment)"
            ));
        }
        if authority.contains('@') {
            return Err(format!("{url:?}: credentials in the URL are not supported"));
        }
        let (host, port) =
            split_host_port(authority).ok_or_else(|| format!("{url:?}: no valid host[:port]"))?;
        let uri = format!("http://{host}:{port}{path}")
            .parse()
            .map_err(|e| format!("{url:?}: {e}"))?;
        let endpoint = Self {
            host,
            port,
            path,
            uri,
        };
        if !allow_remote && !endpoint.is_loopback() {
            return Err(format!(
                "{url:?} is not a loopback address (127.0.0.1, [::1], localhost); set allow_remote = true on this handler to send attempts there"
            ));
        }
        Ok(endpoint)
    }

    /// Whether the host is this machine.
    #[must_use]
    pub fn is_loopback(&self) -> bool {
        self.host.eq_ignore_ascii_case("localhost")
            || self
                .host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    /// `host:port`, for messages.
    #[must_use]
    pub fn authority(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// Where requests go.
    #[must_use]
    pub fn uri(&self) -> &Uri {
        &self.uri
    }
}

fn split_host_port(authority: &str) -> Option<(String, u16)> {
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (inner, after) = v6.split_once(']')?;
        inner.parse::<std::net::Ipv6Addr>().ok()?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if after.is_empty() => 80,
            None => return None,
        };
        (format!("[{inner}]"), port)
    } else {
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) => (h, p.parse().ok()?),
            None => (authority, 80),
        };
        let valid = !host.is_empty()
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'));
        if !valid {
            return None;
        }
        (host.to_owned(), port)
    };
    (port != 0).then_some((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_urls_parse_and_remote_ones_need_the_opt_in() {
        let e = Endpoint::parse("http://127.0.0.1:8081/charge?v=2", false).expect("loopback");
        assert_eq!(
            (e.host.as_str(), e.port, e.path.as_str()),
            ("127.0.0.1", 8081, "/charge?v=2")
        );
        assert_eq!(
            Endpoint::parse("http://localhost", false)
                .expect("localhost")
                .path,
            "/"
        );
        let v6 = Endpoint::parse("http://[::1]:9/x", false).expect("v6");
        assert_eq!(
            (v6.authority().as_str(), v6.uri().to_string().as_str()),
            ("[::1]:9", "http://[::1]:9/x")
        );
        let remote = Endpoint::parse("http://billing.internal:80/x", false).expect_err("remote");
        assert!(remote.contains("allow_remote = true"), "{remote}");
        assert!(Endpoint::parse("http://billing.internal/x", true).is_ok());
        for bad in [
            "https://127.0.0.1/",
            "ftp://x",
            "http://",
            "http://h:0/",
            "http://h:99999/",
            "http://u@h/",
            "http://[::1/x",
            "http://127.0.0.1/a b",
            "http://127.0.0.1/a<b>",
        ] {
            let why = Endpoint::parse(bad, true).expect_err(bad);
            assert!(!why.contains('\n'));
        }
    }
}
