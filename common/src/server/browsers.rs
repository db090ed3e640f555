//! What keeps web pages from driving the harness through a visitor's browser, checked
//! before anything else on every route: the `Host` must be one of the server's own names
//! (a page on a name its owner points at 127.0.0.1, DNS rebinding, sends its own), and
//! an `Origin`, which a browser sends with what a page asks, must be the request's own
//! origin or the public URL's. A request without a `Host` or an `Origin` is no browser's:
//! it passes. `X-Forwarded-Host` is never read here (a page may set it). The
//! Content-Type and `A2A-Version` rules that keep a page's requests from going without a
//! preflight are the bindings' ([`super::json_rpc`], [`super::rest_call`]).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::config::hosts::host_of;
use crate::config::Config;

/// The names and origin a server's requests are checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Guard {
    /// Allowed `Host` names (any port).
    names: Vec<String>,
    /// The public URL's origin: a page there may call the server under another name (a
    /// proxy's `Host`).
    public: Option<Origin>,
}

/// A web origin's host and port (the scheme's default when it names none).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    host: String,
    port: u16,
}

impl Origin {
    /// An `Origin` header's value (`http://localhost:8080`); None for `null` or anything
    /// that is not an http(s) origin.
    fn parse(text: &str) -> Option<(Origin, &'static str)> {
        let url = crate::config::http_url(text)?;
        let scheme = if url.scheme() == "https" {
            "https"
        } else {
            "http"
        };
        Some((Origin::of_url(&url)?, scheme))
    }

    /// The origin of an http(s) URL.
    fn of_url(url: &reqwest::Url) -> Option<Origin> {
        Some(Origin {
            host: host_of(url.host_str()?)?,
            port: url.port_or_known_default()?,
        })
    }

    /// The origin a `Host` header names for a page loaded over `scheme`.
    fn of_host(host: &str, scheme: &str) -> Option<Origin> {
        let authority: http::uri::Authority = host.parse().ok()?;
        let default = if scheme == "https" { 443 } else { 80 };
        Some(Origin {
            host: host_of(host)?,
            port: authority.port_u16().unwrap_or(default),
        })
    }
}

impl Guard {
    /// The guard of a server configured so; None when it answers to any host.
    pub(super) fn of(config: &Config) -> Option<Arc<Guard>> {
        let names = config.allowed_hosts.names(&config.public_url)?;
        let public = crate::config::http_url(&config.public_url)
            .as_ref()
            .and_then(Origin::of_url);
        Some(Arc::new(Guard { names, public }))
    }

    fn host_allowed(&self, host: &str) -> bool {
        host_of(host).is_some_and(|h| self.names.contains(&h))
    }

    /// Whether a page at `origin` may call this server as `host` (the request's `Host`).
    fn origin_allowed(&self, origin: &str, host: Option<&str>) -> bool {
        let Some((origin, scheme)) = Origin::parse(origin) else {
            return false;
        };
        let own = host.and_then(|h| Origin::of_host(h, scheme));
        own.as_ref() == Some(&origin) || self.public.as_ref() == Some(&origin)
    }
}

/// The middleware: 421 for a `Host` that is not the server's, 403 for a page of another
/// origin, before anything runs.
pub(super) async fn guard(State(guard): State<Arc<Guard>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    // HTTP/2 carries the host in the request's URI instead.
    let host = match headers.get(header::HOST) {
        Some(v) => Some(v.to_str().unwrap_or_default()),
        None => req.uri().authority().map(|a| a.as_str()),
    };
    if host.is_some_and(|h| !guard.host_allowed(h)) {
        tracing::debug!(
            host = host.unwrap_or_default(),
            "refused a request for another host"
        );
        return refusal(
            StatusCode::MISDIRECTED_REQUEST,
            "this harness answers only to its own host names: the loopback names, its public \
             URL's host and those HARNESS_ALLOWED_HOSTS (--allowed-hosts) adds\n",
        );
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or_default();
        if !guard.origin_allowed(origin, host) {
            tracing::debug!(origin, "refused a request from a page of another origin");
            return refusal(
                StatusCode::FORBIDDEN,
                "requests from web pages of another origin are refused\n",
            );
        }
    }
    next.run(req).await
}

fn refusal(status: StatusCode, text: &'static str) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain")], text).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::hosts::AllowedHosts;

    fn guard(public_url: &str, extra: &[&str]) -> Arc<Guard> {
        let config = Config {
            public_url: public_url.into(),
            allowed_hosts: AllowedHosts::Names(extra.iter().map(|e| e.to_string()).collect()),
            ..Config::default()
        };
        Guard::of(&config).expect("a guard")
    }

    #[test]
    fn the_loopback_names_the_public_urls_host_and_the_extra_ones_pass_with_any_port() {
        let g = guard("https://harness.example.com/a2a", &["harness.lan"]);
        for host in [
            "localhost",
            "localhost:8080",
            "LOCALHOST:1",
            "127.0.0.1:8080",
            "[::1]:8080",
            "harness.example.com",
            "harness.example.com:443",
            "harness.lan:8080",
        ] {
            assert!(g.host_allowed(host), "{host}");
        }
        for host in [
            "evil.example",
            "localhost.evil.example:8080",
            "127.0.0.2",
            "harness.example.com.evil.example",
            "",
            "user@localhost",
        ] {
            assert!(!g.host_allowed(host), "{host}");
        }
        assert_eq!(
            Guard::of(&Config {
                allowed_hosts: AllowedHosts::Any,
                ..Config::default()
            }),
            None
        );
    }

    #[test]
    fn a_page_may_call_its_own_origin_or_the_public_urls() {
        let g = guard("https://harness.example.com/a2a", &[]);
        // Same origin as the request's Host; the default port is the scheme's.
        for (origin, host) in [
            ("http://localhost:8080", "localhost:8080"),
            ("http://LocalHost:8080", "localhost:8080"),
            ("http://[::1]:8080", "[::1]:8080"),
            ("http://localhost", "localhost:80"),
            ("https://localhost", "localhost:443"),
            ("http://localhost:80", "localhost"),
            // A proxy that sends its own Host: the page is at the public URL.
            ("https://harness.example.com", "127.0.0.1:8080"),
        ] {
            assert!(g.origin_allowed(origin, Some(host)), "{origin} as {host}");
        }
        for (origin, host) in [
            ("http://evil.example", Some("localhost:8080")),
            ("http://localhost:3000", Some("localhost:8080")),
            ("http://127.0.0.1:8080", Some("localhost:8080")),
            ("http://harness.example.com", Some("127.0.0.1:8080")),
            ("null", Some("localhost:8080")),
            ("file://", Some("localhost:8080")),
            ("http://localhost:8080", None),
        ] {
            assert!(!g.origin_allowed(origin, host), "{origin} as {host:?}");
        }
    }
}
