//! The A2A service parameters carried as HTTP headers: `A2A-Version` and `A2A-Extensions`.
//!
//! `A2A-Version` counts only as a header. Spec §3.6.1 also allows it as a query parameter;
//! that form is not honoured (a request whose version is only in its query has none, and
//! is refused like any request without one): a web page can put a query parameter into
//! any URL and have a visitor's browser send it without asking the server first, whereas
//! a header of its own makes the browser ask (a CORS preflight), which the harness never
//! grants. See `common/docs/protocol.md`.

use http::HeaderMap;

use super::error::A2aError;
use super::types::AgentCard;

pub const VERSION_HEADER: &str = "a2a-version";
pub const EXTENSIONS_HEADER: &str = "a2a-extensions";

/// The version a request asks for: its `A2A-Version` header (never a query parameter).
pub fn requested_version(headers: &HeaderMap) -> Option<String> {
    headers
        .get(VERSION_HEADER)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_owned())
}

/// Only 1.0 (with any patch, `1.0.3`) is served. Missing or empty means 0.3 (spec §3.6.2),
/// which this server does not speak.
pub fn check_version(requested: Option<&str>) -> Result<(), A2aError> {
    let v = requested.unwrap_or("");
    if v.is_empty() {
        return Err(A2aError::VersionNotSupported(
            "no A2A-Version given, which means 0.3; this server supports 1.0".into(),
        ));
    }
    let mut parts = v.split('.');
    let ok = parts.next() == Some("1")
        && parts.next() == Some("0")
        && parts.clone().count() <= 1
        && parts.all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    if ok {
        Ok(())
    } else {
        Err(A2aError::VersionNotSupported(format!(
            "A2A-Version {v} (this server supports 1.0)"
        )))
    }
}

/// Every URI in every `A2A-Extensions` header, trimmed, in order, without repeats.
pub fn requested_extensions(headers: &HeaderMap) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in headers.get_all(EXTENSIONS_HEADER) {
        for uri in String::from_utf8_lossy(v.as_bytes()).split(',') {
            let uri = uri.trim();
            if !uri.is_empty() && !out.iter().any(|u| u == uri) {
                out.push(uri.to_owned());
            }
        }
    }
    out
}

/// The requested extensions this agent supports (unknown ones are ignored), for the
/// response's `A2A-Extensions` header. Fails if a required extension was not requested.
pub fn activate(card: &AgentCard, requested: &[String]) -> Result<Vec<String>, A2aError> {
    let extensions = &card.capabilities.extensions;
    if let Some(missing) = extensions
        .iter()
        .find(|e| e.required && !requested.contains(&e.uri))
    {
        return Err(A2aError::ExtensionSupportRequired(missing.uri.clone()));
    }
    Ok(requested
        .iter()
        .filter(|r| extensions.iter().any(|e| &e.uri == *r))
        .cloned()
        .collect())
}

/// Whether a request Content-Type is JSON (`application/json` or `application/a2a+json`,
/// parameters such as `charset` allowed).
pub fn is_json_content_type(value: &str) -> bool {
    let essence = value.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json")
        || essence.eq_ignore_ascii_case("application/a2a+json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_one_zero_with_any_patch_is_accepted_and_others_refused() {
        for ok in ["1.0", "1.0.0", "1.0.17"] {
            assert!(check_version(Some(ok)).is_ok(), "{ok}");
        }
        for bad in [
            "", "0.3", "0.3.0", "99.0", "1", "1.1", "1.0.", "1.0.x", "abc",
        ] {
            assert!(check_version(Some(bad)).is_err(), "{bad}");
        }
        assert!(check_version(None).is_err());
    }

    #[test]
    fn repeated_extension_headers_are_merged_trimmed_and_deduplicated() {
        let mut h = HeaderMap::new();
        h.append(EXTENSIONS_HEADER, "a, b".parse().unwrap());
        h.append(EXTENSIONS_HEADER, "b,c ,".parse().unwrap());
        assert_eq!(requested_extensions(&h), vec!["a", "b", "c"]);
    }
}
