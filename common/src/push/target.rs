//! Where webhooks may point: http(s) URLs only and, unless the deployment allows private
//! targets (the local server does by default), no loopback, private, link-local or other
//! non-public address. The URL is checked when a config is created; the addresses its
//! host resolves to are checked again at each delivery, since DNS can change.

use std::net::IpAddr;

use reqwest::Url;

use crate::a2a::{A2aError, TaskPushNotificationConfig};

#[derive(Debug, Clone, Copy)]
pub struct Targets {
    allow_private: bool,
}

/// Loopback, private, link-local, shared (CGNAT) and unspecified addresses.
fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.octets()[0] == 100 && (v4.octets()[1] & 0xc0) == 64
        }
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || (v6.segments()[0] & 0xfe00) == 0xfc00
                || (v6.segments()[0] & 0xffc0) == 0xfe80
                || v6
                    .to_ipv4_mapped()
                    .is_some_and(|v4| is_private(IpAddr::V4(v4)))
        }
    }
}

/// Whether `url` names a user (and maybe a password) before its host: an `@` in the part
/// after the scheme, up to the path, query or fragment. Read from the text, so an
/// unparsable URL is caught too; it errs on refusing.
fn has_userinfo(url: &str) -> bool {
    let rest = url.split_once(':').map_or(url, |(_, rest)| rest);
    let authority = rest.trim_start_matches(['/', '\\']);
    authority
        .split(['/', '\\', '?', '#'])
        .next()
        .is_some_and(|a| a.contains('@'))
}

impl Targets {
    pub fn new(allow_private: bool) -> Self {
        Targets { allow_private }
    }

    /// A config is acceptable if its URL is http(s) and, unless private targets are
    /// allowed, does not name a loopback or private address. Names are resolved only at
    /// delivery, so creating a config never waits on DNS.
    pub fn check(&self, config: &TaskPushNotificationConfig) -> Result<(), A2aError> {
        let bad = |why: &str| {
            A2aError::invalid_field("url", format!("webhook url {:?} {why}", config.url))
        };
        // Before anything that echoes the URL: the refusal would show (and the log keep) the
        // password. Credentials belong in `authentication`, where they are sealed.
        if has_userinfo(&config.url) {
            return Err(A2aError::invalid_field(
                "url",
                "webhook url must not carry a user name or password (put credentials in \
                 authentication, where they are kept sealed)",
            ));
        }
        let url = Url::parse(&config.url).map_err(|e| bad(&format!("is not a URL ({e})")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad("must be http or https"));
        }
        let host = url.host_str().ok_or_else(|| bad("has no host"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let private =
            host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(is_private);
        if private && !self.allow_private {
            return Err(bad(
                "names a loopback or private address, which this server does not call",
            ));
        }
        if let Some(auth) = &config.authentication {
            if auth.scheme.is_empty() {
                return Err(A2aError::invalid_field(
                    "authentication.scheme",
                    "authentication.scheme is required",
                ));
            }
        }
        Ok(())
    }

    /// Whether `url`'s host may be called now: every address it resolves to is public, or
    /// private targets are allowed.
    pub async fn allowed(&self, url: &Url) -> bool {
        if self.allow_private {
            return true;
        }
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
            return false;
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        match tokio::net::lookup_host((host, port)).await {
            Ok(mut addrs) => addrs.all(|a| !is_private(a.ip())),
            Err(_) => true, // the request fails on its own and is recorded
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_private_and_link_local_addresses_are_private() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
            "100.64.0.1",
            "0.0.0.0",
        ] {
            assert!(is_private(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:2800:220:1::1"] {
            assert!(!is_private(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn only_public_http_urls_pass_unless_private_ones_are_allowed() {
        let strict = Targets::new(false);
        let config = |url: &str| TaskPushNotificationConfig {
            url: url.into(),
            ..Default::default()
        };
        for url in [
            "http://127.0.0.1:9/x",
            "http://localhost/x",
            "http://[::1]/x",
            "http://169.254.169.254/latest/meta-data",
            "http://10.0.0.5/x",
        ] {
            let e = strict.check(&config(url)).unwrap_err().to_string();
            assert!(e.contains("loopback or private"), "{url}: {e}");
            Targets::new(true).check(&config(url)).unwrap();
        }
        for url in ["ftp://hooks.example/x", "file:///etc/passwd", "not a url"] {
            assert!(Targets::new(true).check(&config(url)).is_err(), "{url}");
        }
        strict.check(&config("https://hooks.example/x")).unwrap();
    }

    #[test]
    fn urls_with_a_user_or_password_are_refused_without_echoing_them() {
        let open = Targets::new(true);
        let config = |url: &str| TaskPushNotificationConfig {
            url: url.into(),
            ..Default::default()
        };
        for url in [
            "https://user:hunter2@hooks.example/x",
            "https://user@hooks.example/x",
            "http://:hunter2@127.0.0.1:9/x",
            "https:user:hunter2@hooks.example/x",
            "https://user:hunter2@hooks example/x",
        ] {
            let e = open.check(&config(url)).unwrap_err().to_string();
            assert!(e.contains("user name or password"), "{url}: {e}");
            assert!(!e.contains("hunter2") && !e.contains("user@"), "{url}: {e}");
        }
        for url in [
            "https://hooks.example/x?to=a@b.example",
            "https://hooks.example/a@b",
            "https://hooks.example/x#a@b",
        ] {
            open.check(&config(url)).unwrap();
        }
    }
}
