//! A remote agent's card: what the harness needs of it before it sends anything, and why
//! a card will not do. A card is usable when it has an interface this client speaks
//! (JSON-RPC or HTTP+JSON, protocol 1.x), requires no extension the harness does not
//! support, and asks for no credentials the registry lacks (no requirement, or one made
//! only of HTTP bearer schemes, with a token). One that offers push notifications is
//! followed through its webhook; one that does not is polled.

use crate::a2a::{AgentCard, AgentInterface};

/// The bindings this client speaks, in the order it prefers them.
pub const BINDINGS: &[&str] = &["JSONRPC", "HTTP+JSON"];

/// How the harness talks to a remote agent, chosen from its card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    pub binding: Binding,
    /// The interface's URL.
    pub url: reqwest::Url,
    /// The interface's tenant (sent as the requests' `tenant`).
    pub tenant: String,
    /// It offers push notifications: the harness waits for its webhook, else polls it.
    pub push: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    JsonRpc,
    Rest,
}

/// Why a card cannot be used: each says what the card lacks, in words the model and the
/// operator can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unusable {
    #[error("its card offers no interface this harness speaks (JSONRPC or HTTP+JSON at protocol 1.x); it offers {0}")]
    NoInterface(String),
    #[error("its card requires the extension {0}, which this harness does not support")]
    RequiredExtension(String),
    #[error("its card asks for credentials ({0}) that the registry does not hold for it")]
    NoCredentials(String),
    #[error(
        "its card's interface is not at the card's own origin, where the registry's token may go"
    )]
    OtherOrigin,
}

/// What of `card` (read at `card_url`) the harness uses, or why it cannot. `has_token`:
/// the registry holds a bearer token for the agent, which goes only to an interface at
/// the card's own origin (scheme, host and port), so a card cannot send it elsewhere.
pub fn choose(
    card: &AgentCard,
    card_url: &reqwest::Url,
    has_token: bool,
) -> Result<Chosen, Unusable> {
    let chosen = BINDINGS
        .iter()
        .find_map(|b| {
            card.supported_interfaces
                .iter()
                .find(|i| i.protocol_binding == *b && speaks(i))
        })
        .and_then(|i| {
            let url = reqwest::Url::parse(&i.url)
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https"))?;
            Some(Chosen {
                binding: if i.protocol_binding == "JSONRPC" {
                    Binding::JsonRpc
                } else {
                    Binding::Rest
                },
                url,
                tenant: i.tenant.clone(),
                push: card.capabilities.push_notifications == Some(true),
            })
        })
        .ok_or_else(|| {
            let offered: Vec<String> = (card.supported_interfaces.iter())
                .map(|i| format!("{} {}", i.protocol_binding, i.protocol_version))
                .collect();
            Unusable::NoInterface(if offered.is_empty() {
                "none".into()
            } else {
                offered.join(", ")
            })
        })?;
    if let Some(ext) = (card.capabilities.extensions.iter())
        .find(|e| e.required && !crate::ext::SUPPORTED.contains(&e.uri.as_str()))
    {
        return Err(Unusable::RequiredExtension(ext.uri.clone()));
    }
    let satisfiable = |r: &crate::a2a::SecurityRequirement| {
        r.schemes.keys().all(|name| {
            has_token
                && card.security_schemes.get(name).is_some_and(|s| {
                    s.http_auth_security_scheme
                        .as_ref()
                        .is_some_and(|h| h.scheme.eq_ignore_ascii_case("bearer"))
                })
        })
    };
    let requirements = &card.security_requirements;
    if !requirements.is_empty() && !requirements.iter().any(satisfiable) {
        let asked: Vec<&str> = (requirements.iter())
            .flat_map(|r| r.schemes.keys().map(String::as_str))
            .collect();
        return Err(Unusable::NoCredentials(asked.join(", ")));
    }
    if has_token && chosen.url.origin() != card_url.origin() {
        return Err(Unusable::OtherOrigin);
    }
    Ok(chosen)
}

fn speaks(i: &AgentInterface) -> bool {
    i.protocol_version == "1" || i.protocol_version.starts_with("1.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::{AgentExtension, HttpAuthSecurityScheme, SecurityRequirement, SecurityScheme};
    use serde_json::json;

    fn card() -> AgentCard {
        serde_json::from_value(json!({
            "name": "B", "description": "b", "version": "1",
            "supportedInterfaces": [
                {"url": "grpc://b.example", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
                {"url": "https://b.example/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
                {"url": "https://b.example/", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}
            ],
            "capabilities": {"pushNotifications": true},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": []
        }))
        .unwrap()
    }

    fn at() -> reqwest::Url {
        reqwest::Url::parse("https://b.example/.well-known/agent-card.json").unwrap()
    }

    #[test]
    fn a_token_goes_only_to_the_cards_own_origin() {
        let elsewhere = reqwest::Url::parse("https://card.example/card.json").unwrap();
        assert_eq!(
            choose(&card(), &elsewhere, true),
            Err(Unusable::OtherOrigin)
        );
        assert!(choose(&card(), &elsewhere, false).is_ok());
        assert!(choose(&card(), &at(), true).is_ok());
    }

    #[test]
    fn the_first_binding_it_speaks_at_protocol_one() {
        let chosen = choose(&card(), &at(), false).unwrap();
        assert_eq!(chosen.binding, Binding::Rest);
        assert_eq!(chosen.url.as_str(), "https://b.example/rest");
    }

    #[test]
    fn each_unusable_card_says_why() {
        let mut grpc = card();
        grpc.supported_interfaces
            .retain(|i| i.protocol_binding == "GRPC");
        assert_eq!(
            choose(&grpc, &at(), true),
            Err(Unusable::NoInterface("GRPC 1.0".into()))
        );

        let mut ext = card();
        ext.capabilities.extensions.push(AgentExtension {
            uri: "https://x.example/ext/v9".into(),
            required: true,
            ..Default::default()
        });
        assert_eq!(
            choose(&ext, &at(), true),
            Err(Unusable::RequiredExtension(
                "https://x.example/ext/v9".into()
            ))
        );
        // One it supports may be required.
        ext.capabilities.extensions[0].uri = crate::ext::CHANNEL_EXTENSION.into();
        assert!(choose(&ext, &at(), true).is_ok());

        let mut secured = card();
        secured.security_schemes.insert(
            "bearer".into(),
            SecurityScheme {
                http_auth_security_scheme: Some(HttpAuthSecurityScheme {
                    scheme: "Bearer".into(),
                    ..Default::default()
                }),
                ..Default::default()
            },
        );
        let mut req = SecurityRequirement::default();
        req.schemes.insert("bearer".into(), Default::default());
        secured.security_requirements.push(req);
        assert_eq!(
            choose(&secured, &at(), false),
            Err(Unusable::NoCredentials("bearer".into()))
        );
        assert!(choose(&secured, &at(), true).is_ok());

        // One without push notifications is polled.
        let mut quiet = card();
        quiet.capabilities.push_notifications = Some(false);
        assert!(!choose(&quiet, &at(), true).unwrap().push);
        assert!(choose(&card(), &at(), true).unwrap().push);
    }
}
