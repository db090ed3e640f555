//! The card a deployment publishes: its interfaces, the harness's extensions (with the
//! registered commands), and the security scheme its identity mode asks for.

use serde_json::json;

use crate::a2a::card::PROTOCOL_VERSION;
use crate::a2a::{
    AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentSkill,
    HttpAuthSecurityScheme, OpenIdConnectSecurityScheme, SecurityRequirement, SecurityScheme,
    StringList,
};
use crate::auth::Auth;
use crate::commands::CommandSpec;
use crate::config::Config;
use crate::ext;

/// An interface URL has no trailing slash: clients join it with `/message:send` by
/// string concatenation, which would otherwise ask for `//message:send`.
fn interface_url(public_url: &str) -> String {
    public_url.trim_end_matches('/').to_owned()
}

/// The card for `config`, listing `commands` (in registration order) in the commands
/// extension's params.
pub fn build(config: &Config, commands: &[CommandSpec]) -> AgentCard {
    let rest_url = interface_url(&config.public_url);
    let rpc_url = config
        .jsonrpc_url
        .as_deref()
        .map(interface_url)
        .unwrap_or_else(|| rest_url.clone());
    let interface = |binding: &str, url: &str| AgentInterface {
        url: url.to_owned(),
        protocol_binding: binding.into(),
        protocol_version: PROTOCOL_VERSION.into(),
        tenant: String::new(),
    };
    let mut extensions = vec![
        AgentExtension {
            uri: ext::TASK_EXTENSION.into(),
            description: "tiny-harness task extension: name, goal, acceptance criteria, \
                participants, plan and sub-tasks in Task.metadata; event envelopes as data parts"
                .into(),
            ..Default::default()
        },
        AgentExtension {
            uri: ext::CHANNEL_EXTENSION.into(),
            description: "tiny-harness channels: messages, help requests and replies as data parts"
                .into(),
            ..Default::default()
        },
        AgentExtension {
            uri: ext::COMMANDS_EXTENSION.into(),
            description: "tiny-harness commands: /name args messages run on the harness".into(),
            params: json!({ "commands": commands }).as_object().cloned(),
            ..Default::default()
        },
    ];
    for e in &mut extensions {
        e.required = config.required_extensions.contains(&e.uri);
    }
    AgentCard {
        name: "tiny-harness".into(),
        description: "A serverless A2A agent harness: tasks with participants, help requests \
            and sub-tasks, and harness commands"
            .into(),
        supported_interfaces: [
            Some(interface("JSONRPC", &rpc_url)),
            Some(interface("HTTP+JSON", &rest_url)),
            // h2c (or h2 behind a TLS proxy) on the same address as the other two.
            config.grpc.then(|| interface("GRPC", &rest_url)),
        ]
        .into_iter()
        .flatten()
        .collect(),
        version: env!("CARGO_PKG_VERSION").into(),
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(config.push_notifications),
            extensions,
            extended_agent_card: None,
        },
        default_input_modes: vec![
            "text/plain".into(),
            ext::TASK_MEDIA_TYPE.into(),
            ext::CHANNEL_MEDIA_TYPE.into(),
            ext::EVENT_MEDIA_TYPE.into(),
        ],
        default_output_modes: vec![
            "text/plain".into(),
            ext::TASK_MEDIA_TYPE.into(),
            ext::CHANNEL_MEDIA_TYPE.into(),
        ],
        security_schemes: security_schemes(&config.auth),
        security_requirements: security_requirements(&config.auth),
        skills: vec![AgentSkill {
            id: "tasks".into(),
            name: "Tasks".into(),
            description:
                "Works on a task until it is done, asking participants when it needs input".into(),
            tags: vec!["tasks".into(), "participants".into()],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// The name of the card's one security scheme.
const SCHEME: &str = "bearer";

/// In `jwt` mode, how to authenticate: a bearer JWT, or the identity provider's OpenID
/// Connect discovery document when one is configured. Nothing in `none` mode.
fn security_schemes(auth: &Auth) -> std::collections::BTreeMap<String, SecurityScheme> {
    let Auth::Jwt(settings) = auth else {
        return Default::default();
    };
    let description = "A JWT from the deployment's identity provider; the participant is \
        its identity claim"
        .to_owned();
    let scheme = match &settings.openid_configuration_url {
        Some(url) => SecurityScheme {
            open_id_connect_security_scheme: Some(OpenIdConnectSecurityScheme {
                description,
                open_id_connect_url: url.clone(),
            }),
            ..Default::default()
        },
        None => SecurityScheme {
            http_auth_security_scheme: Some(HttpAuthSecurityScheme {
                description,
                scheme: "Bearer".into(),
                bearer_format: "JWT".into(),
            }),
            ..Default::default()
        },
    };
    [(SCHEME.to_owned(), scheme)].into()
}

/// Every operation needs the scheme (the card itself excepted).
fn security_requirements(auth: &Auth) -> Vec<SecurityRequirement> {
    match auth {
        Auth::None => Vec::new(),
        Auth::Jwt(_) => vec![SecurityRequirement {
            schemes: [(SCHEME.to_owned(), StringList::default())].into(),
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{JwtSettings, KeySource};

    fn jwt(discovery: Option<&str>) -> Config {
        Config {
            auth: Auth::Jwt(JwtSettings {
                keys: KeySource::Jwks("https://idp.example/jwks".into()),
                issuer: "https://idp.example".into(),
                audience: "harness".into(),
                identity_claim: "sub".into(),
                openid_configuration_url: discovery.map(Into::into),
            }),
            ..Config::default()
        }
    }

    #[test]
    fn interface_urls_have_no_trailing_slash() {
        let config = Config {
            public_url: "https://a2a.example/base/".into(),
            jsonrpc_url: Some("https://rpc.example/".into()),
            ..Config::default()
        };
        let card = build(&config, &[]);
        let urls: Vec<&str> = card
            .supported_interfaces
            .iter()
            .map(|i| i.url.as_str())
            .collect();
        assert_eq!(urls, ["https://rpc.example", "https://a2a.example/base"]);
    }

    #[test]
    fn the_card_asks_for_the_scheme_jwt_mode_verifies_and_none_for_none() {
        let open = serde_json::to_value(build(&Config::default(), &[])).unwrap();
        assert!(
            open.get("securitySchemes").is_none() && open.get("securityRequirements").is_none()
        );

        let bearer = serde_json::to_value(build(&jwt(None), &[])).unwrap();
        let scheme = &bearer["securitySchemes"]["bearer"]["httpAuthSecurityScheme"];
        assert_eq!(
            (scheme["scheme"].as_str(), scheme["bearerFormat"].as_str()),
            (Some("Bearer"), Some("JWT"))
        );
        assert_eq!(
            bearer["securityRequirements"],
            json!([{"schemes": {"bearer": {}}}])
        );

        let url = "https://idp.example/.well-known/openid-configuration";
        let oidc = serde_json::to_value(build(&jwt(Some(url)), &[])).unwrap();
        assert_eq!(
            oidc["securitySchemes"]["bearer"]["openIdConnectSecurityScheme"]["openIdConnectUrl"],
            url
        );
        assert!(oidc["securitySchemes"]["bearer"]
            .get("httpAuthSecurityScheme")
            .is_none());
    }

    /// The card lists the registry's commands, in registration order, valid against the
    /// seed's schema.
    #[test]
    fn the_card_commands_params_match_the_registry_and_the_schema() {
        let registry = crate::commands::CommandRegistry::builtin();
        let card = build(&Config::default(), &registry.specs());
        let ext = card
            .capabilities
            .extensions
            .iter()
            .find(|e| e.uri == ext::COMMANDS_EXTENSION);
        let params = ext.and_then(|e| e.params.clone()).expect("commands params");
        let params = serde_json::Value::Object(params);
        assert_eq!(
            ext::problems(&ext::compile(ext::COMMANDS_SCHEMA), &params),
            None
        );
        let names: Vec<&str> = params["commands"]
            .as_array()
            .expect("a list")
            .iter()
            .map(|c| c["name"].as_str().expect("a name"))
            .collect();
        assert_eq!(names, ["model", "help", "participants", "role", "task"]);
        assert_eq!(
            params["commands"][0],
            serde_json::json!({"name": "model", "description": "Show or choose this task's model", "argument_hint": "[<model>]"})
        );
    }
}
