//! The agent card as proto types: `AgentCard`, its interfaces, capabilities and skills,
//! and the security schemes and OAuth flows a client authenticates with.

use serde::{Deserialize, Serialize};

use super::Metadata;
use crate::a2a::serde_util::{is_false, map_is_empty, null_default};

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentCard {
    #[serde(deserialize_with = "null_default")]
    pub name: String,
    #[serde(deserialize_with = "null_default")]
    pub description: String,
    #[serde(alias = "supported_interfaces", deserialize_with = "null_default")]
    pub supported_interfaces: Vec<AgentInterface>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    #[serde(deserialize_with = "null_default")]
    pub version: String,
    #[serde(alias = "documentation_url", skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    #[serde(deserialize_with = "null_default")]
    pub capabilities: AgentCapabilities,
    #[serde(
        alias = "security_schemes",
        deserialize_with = "null_default",
        skip_serializing_if = "std::collections::BTreeMap::is_empty"
    )]
    pub security_schemes: std::collections::BTreeMap<String, SecurityScheme>,
    #[serde(
        alias = "security_requirements",
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub security_requirements: Vec<SecurityRequirement>,
    #[serde(alias = "default_input_modes", deserialize_with = "null_default")]
    pub default_input_modes: Vec<String>,
    #[serde(alias = "default_output_modes", deserialize_with = "null_default")]
    pub default_output_modes: Vec<String>,
    #[serde(deserialize_with = "null_default")]
    pub skills: Vec<AgentSkill>,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub signatures: Vec<AgentCardSignature>,
    #[serde(alias = "icon_url", skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentInterface {
    #[serde(deserialize_with = "null_default")]
    pub url: String,
    #[serde(alias = "protocol_binding", deserialize_with = "null_default")]
    pub protocol_binding: String,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub tenant: String,
    #[serde(alias = "protocol_version", deserialize_with = "null_default")]
    pub protocol_version: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentProvider {
    #[serde(deserialize_with = "null_default")]
    pub url: String,
    #[serde(deserialize_with = "null_default")]
    pub organization: String,
}

/// Optional proto fields are printed whenever they are set, even to `false`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentCapabilities {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    #[serde(alias = "push_notifications", skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<AgentExtension>,
    #[serde(alias = "extended_agent_card", skip_serializing_if = "Option::is_none")]
    pub extended_agent_card: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentExtension {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub uri: String,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    #[serde(deserialize_with = "null_default", skip_serializing_if = "is_false")]
    pub required: bool,
    #[serde(skip_serializing_if = "map_is_empty")]
    pub params: Metadata,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentSkill {
    #[serde(deserialize_with = "null_default")]
    pub id: String,
    #[serde(deserialize_with = "null_default")]
    pub name: String,
    #[serde(deserialize_with = "null_default")]
    pub description: String,
    #[serde(deserialize_with = "null_default")]
    pub tags: Vec<String>,
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub examples: Vec<String>,
    #[serde(
        alias = "input_modes",
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub input_modes: Vec<String>,
    #[serde(
        alias = "output_modes",
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub output_modes: Vec<String>,
    #[serde(
        alias = "security_requirements",
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub security_requirements: Vec<SecurityRequirement>,
}

/// `{schemes: {name: {list: [scope]}}}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SecurityRequirement {
    #[serde(deserialize_with = "null_default")]
    pub schemes: std::collections::BTreeMap<String, StringList>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StringList {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub list: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentCardSignature {
    #[serde(deserialize_with = "null_default")]
    pub protected: String,
    #[serde(deserialize_with = "null_default")]
    pub signature: String,
    #[serde(skip_serializing_if = "map_is_empty")]
    pub header: Metadata,
}

/// How a client authenticates: exactly one member set.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SecurityScheme {
    #[serde(
        alias = "api_key_security_scheme",
        skip_serializing_if = "Option::is_none"
    )]
    pub api_key_security_scheme: Option<ApiKeySecurityScheme>,
    #[serde(
        alias = "http_auth_security_scheme",
        skip_serializing_if = "Option::is_none"
    )]
    pub http_auth_security_scheme: Option<HttpAuthSecurityScheme>,
    #[serde(
        alias = "oauth2_security_scheme",
        skip_serializing_if = "Option::is_none"
    )]
    pub oauth2_security_scheme: Option<OAuth2SecurityScheme>,
    #[serde(
        alias = "open_id_connect_security_scheme",
        skip_serializing_if = "Option::is_none"
    )]
    pub open_id_connect_security_scheme: Option<OpenIdConnectSecurityScheme>,
    #[serde(
        alias = "mtls_security_scheme",
        skip_serializing_if = "Option::is_none"
    )]
    pub mtls_security_scheme: Option<MutualTlsSecurityScheme>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ApiKeySecurityScheme {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    #[serde(deserialize_with = "null_default")]
    pub location: String,
    #[serde(deserialize_with = "null_default")]
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HttpAuthSecurityScheme {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    #[serde(deserialize_with = "null_default")]
    pub scheme: String,
    #[serde(
        alias = "bearer_format",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub bearer_format: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OAuth2SecurityScheme {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flows: Option<OAuthFlows>,
    #[serde(
        alias = "oauth2_metadata_url",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub oauth2_metadata_url: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OpenIdConnectSecurityScheme {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    #[serde(alias = "open_id_connect_url", deserialize_with = "null_default")]
    pub open_id_connect_url: String,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MutualTlsSecurityScheme {
    #[serde(
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
}

/// The OAuth 2.0 flow a scheme supports: exactly one member set.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OAuthFlows {
    #[serde(alias = "authorization_code", skip_serializing_if = "Option::is_none")]
    pub authorization_code: Option<OAuthFlow>,
    #[serde(alias = "client_credentials", skip_serializing_if = "Option::is_none")]
    pub client_credentials: Option<OAuthFlow>,
    #[serde(alias = "device_code", skip_serializing_if = "Option::is_none")]
    pub device_code: Option<OAuthFlow>,
    /// Deprecated in the proto; kept so such cards still parse.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub implicit: Option<OAuthFlow>,
    /// Deprecated in the proto; kept so such cards still parse.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password: Option<OAuthFlow>,
}

/// The fields of every OAuth flow message; each flow prints only those it has set.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OAuthFlow {
    #[serde(
        alias = "authorization_url",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub authorization_url: String,
    #[serde(
        alias = "device_authorization_url",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub device_authorization_url: String,
    #[serde(
        alias = "token_url",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub token_url: String,
    #[serde(
        alias = "refresh_url",
        deserialize_with = "null_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub refresh_url: String,
    #[serde(deserialize_with = "null_default")]
    pub scopes: std::collections::BTreeMap<String, String>,
    #[serde(
        alias = "pkce_required",
        deserialize_with = "null_default",
        skip_serializing_if = "is_false"
    )]
    pub pkce_required: bool,
}
