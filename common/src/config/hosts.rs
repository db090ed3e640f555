//! The host names a server answers to (`--allowed-hosts`), and so the web pages that may
//! call it: [`crate::server`] refuses a request whose `Host` is not one of them, and one
//! whose `Origin` is not the request's own (see `common/docs/configuration.md`,
//! "Browsers").

use std::net::IpAddr;

/// The names every local server answers to, whatever the port.
pub const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Which `Host` names the server answers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedHosts {
    /// Any: neither the `Host` nor a page's `Origin` is checked (`--allowed-hosts '*'`;
    /// the Lambda functions, behind API Gateway and Function URLs, which route by host
    /// themselves and whose `Host` is AWS's name).
    Any,
    /// The [`LOOPBACK`] names, the public URL's host, and these (as [`host_of`] gives
    /// them), with any port.
    Names(Vec<String>),
}

impl Default for AllowedHosts {
    /// The loopback names and the public URL's host.
    fn default() -> Self {
        AllowedHosts::Names(Vec::new())
    }
}

impl AllowedHosts {
    /// From `--allowed-hosts` entries, each checked by [`entry`]: `*` among them allows any.
    pub fn from_entries(entries: Vec<String>) -> Self {
        if entries.iter().any(|e| e == "*") {
            AllowedHosts::Any
        } else {
            AllowedHosts::Names(entries)
        }
    }

    /// Every name allowed besides any port (None: any name), for a server whose public
    /// URL is `public_url`.
    pub fn names(&self, public_url: &str) -> Option<Vec<String>> {
        let AllowedHosts::Names(extra) = self else {
            return None;
        };
        let public = super::http_url(public_url).and_then(|u| u.host_str().and_then(host_of));
        let mut names: Vec<String> = LOOPBACK.iter().map(|n| n.to_string()).collect();
        names.extend(public);
        names.extend(extra.iter().cloned());
        names.sort();
        names.dedup();
        Some(names)
    }
}

/// One `--allowed-hosts` entry: `*`, or a host name or address, with or without a port
/// (any port is allowed); lower-cased, without brackets or a trailing dot.
pub fn entry(text: &str) -> Result<String, String> {
    let text = text.trim();
    if text == "*" {
        return Ok(text.to_owned());
    }
    host_of(text).ok_or_else(|| {
        format!("{text:?} is not a host name: give the name alone (harness.lan), or * for any")
    })
}

/// The host of an authority (a `Host` header's value, `name:port`, `[::1]:8080`, a bare
/// address): lower case, without its port, brackets or a trailing dot; None if it is
/// not one.
pub fn host_of(authority: &str) -> Option<String> {
    if let Ok(ip) = authority.parse::<IpAddr>() {
        return Some(ip.to_string());
    }
    let parsed: http::uri::Authority = authority.parse().ok()?;
    if parsed.as_str().contains('@') {
        return None;
    }
    let host = parsed.host();
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
        .trim_end_matches('.');
    let host = match host.parse::<IpAddr>() {
        Ok(ip) => ip.to_string(),
        Err(_) => host.to_ascii_lowercase(),
    };
    (!host.is_empty()).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_named_without_port_case_brackets_or_trailing_dot() {
        for (authority, host) in [
            ("localhost", "localhost"),
            ("LocalHost:8080", "localhost"),
            ("[::1]:8080", "::1"),
            ("[0:0:0:0:0:0:0:1]", "::1"),
            ("::1", "::1"),
            ("127.0.0.1:1", "127.0.0.1"),
            ("harness.lan.", "harness.lan"),
            ("Harness.Lan.:443", "harness.lan"),
        ] {
            assert_eq!(host_of(authority).as_deref(), Some(host), "{authority}");
        }
        for bad in [
            "",
            ":8080",
            "http://harness.lan/",
            "a b",
            "user@harness.lan",
            "x/y",
        ] {
            assert_eq!(host_of(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn entries_name_hosts_or_any() {
        assert_eq!(entry(" Harness.Lan:8080 ").as_deref(), Ok("harness.lan"));
        assert_eq!(entry("*").as_deref(), Ok("*"));
        let bad = entry("http://harness.lan/").unwrap_err();
        assert!(bad.contains("\"http://harness.lan/\""), "{bad}");
        assert_eq!(
            AllowedHosts::from_entries(vec!["a.lan".into(), "*".into()]),
            AllowedHosts::Any
        );
    }

    #[test]
    fn the_names_are_loopbacks_the_public_hosts_and_the_extra_ones() {
        let hosts = AllowedHosts::Names(vec!["harness.lan".into()]);
        assert_eq!(
            hosts.names("https://Harness.Example.com:8443/a2a"),
            Some(
                [
                    "127.0.0.1",
                    "::1",
                    "harness.example.com",
                    "harness.lan",
                    "localhost"
                ]
                .map(String::from)
                .to_vec()
            )
        );
        assert_eq!(
            AllowedHosts::default()
                .names("http://[::1]:8080")
                .map(|n| n.len()),
            Some(3)
        );
        assert_eq!(AllowedHosts::Any.names("http://127.0.0.1:8080"), None);
    }
}
