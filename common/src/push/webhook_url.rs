//! Whether a webhook config may be stored: its URL is http(s), names no address this
//! server does not call ([`Targets`]), and carries no user name or password, which is
//! refused without echoing it (the password would be in the answer and the logs).

use std::net::{IpAddr, Ipv4Addr};

use reqwest::Url;

use crate::a2a::{A2aError, TaskPushNotificationConfig};
use crate::https::target::{literal, Targets, CLEARTEXT_RULE};

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

/// A config is acceptable if its URL is http(s) and does not name an address this
/// server does not call. Names are resolved only at delivery, so creating a config
/// never waits on DNS.
pub fn check(targets: &Targets, config: &TaskPushNotificationConfig) -> Result<(), A2aError> {
    let bad =
        |why: &str| A2aError::invalid_field("url", format!("webhook url {:?} {why}", config.url));
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
    let ip = if host.eq_ignore_ascii_case("localhost") {
        Some(IpAddr::V4(Ipv4Addr::LOCALHOST))
    } else {
        literal(&url)
    };
    if ip.is_some_and(|ip| !targets.permits(ip)) {
        return Err(bad(
            "names a loopback or private address (or another special-purpose one), \
             which this server does not call",
        ));
    }
    if !targets.permits_scheme(&url) {
        return Err(bad(CLEARTEXT_RULE));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_http_urls_pass_unless_private_ones_are_allowed() {
        let strict = Targets::new(false, vec![]);
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
            "http://198.18.0.1/x",
            "http://[64:ff9b::7f00:1]/x",
            "http://[::ffff:127.0.0.1]/x",
            "http://2130706433/x",
            "http://0x7f.1/x",
        ] {
            let e = check(&strict, &config(url)).unwrap_err().to_string();
            assert!(e.contains("loopback or private"), "{url}: {e}");
            let private = Targets::new(true, vec![]).with_cleartext(true);
            check(&private, &config(url)).unwrap();
        }
        for url in ["ftp://hooks.example/x", "file:///etc/passwd", "not a url"] {
            assert!(
                check(&Targets::new(true, vec![]), &config(url)).is_err(),
                "{url}"
            );
        }
        check(&strict, &config("https://hooks.example/x")).unwrap();
        // Plain http reaches only this machine, unless allowed (issue 48, item 9).
        let e = check(&strict, &config("http://hooks.example/x"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("in the clear") && e.contains("https"), "{e}");
        check(
            &strict.clone().with_cleartext(true),
            &config("http://hooks.example/x"),
        )
        .unwrap();
        check(&Targets::new(true, vec![]), &config("http://127.0.0.1:9/x")).unwrap();
        let one = Targets::new(false, vec!["10.0.0.5/32".parse().unwrap()]).with_cleartext(true);
        check(&one, &config("http://10.0.0.5/x")).unwrap();
        assert!(check(&one, &config("http://10.0.0.6/x")).is_err());
    }

    #[test]
    fn urls_with_a_user_or_password_are_refused_without_echoing_them() {
        let open = Targets::new(true, vec![]);
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
            let e = check(&open, &config(url)).unwrap_err().to_string();
            assert!(e.contains("user name or password"), "{url}: {e}");
            assert!(!e.contains("hunter2") && !e.contains("user@"), "{url}: {e}");
        }
        for url in [
            "https://hooks.example/x?to=a@b.example",
            "https://hooks.example/a@b",
            "https://hooks.example/x#a@b",
        ] {
            check(&open, &config(url)).unwrap();
        }
    }
}
