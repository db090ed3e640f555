//! Which models a deployment may use: named models (provider, model id, base URL, the
//! environment variable holding the API key) from a TOML file, and the default. A model
//! may also be named inline as `<provider>:<model id>` (`openai:gpt-4o-mini`,
//! `bedrock:anthropic.claude-3-5-haiku-20241022-v1:0`) or `scripted:<path>`.
//!
//! ```toml
//! default = "gpt"
//!
//! [models.gpt]
//! provider = "openai"                      # openai | anthropic | bedrock | scripted
//! model = "gpt-4o-mini"
//! base_url = "https://api.openai.com/v1"   # optional: Ollama, vLLM, LiteLLM...
//! api_key_env = "OPENAI_API_KEY"           # optional: the variable holding the key
//! context_tokens = 100000                  # optional: most tokens a request may hold
//! ```

use serde::Deserialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Provider {
    OpenAi,
    Anthropic,
    Bedrock,
    Scripted,
}

impl Provider {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "openai" => Some(Provider::OpenAi),
            "anthropic" => Some(Provider::Anthropic),
            "bedrock" => Some(Provider::Bedrock),
            "scripted" => Some(Provider::Scripted),
            _ => None,
        }
    }

    /// The provider as traces name it (the GenAI semantic conventions' `gen_ai.system`;
    /// the scripted model is the harness's own).
    pub fn system(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Bedrock => "aws.bedrock",
            Provider::Scripted => "scripted",
        }
    }

    /// Most tokens a request holds unless configured otherwise: the provider's usual
    /// context window less room for the answer and a margin for the estimate (Bedrock
    /// serves models of several sizes: the smaller). None: no budget (the scripted model).
    pub fn default_context_tokens(self) -> Option<usize> {
        match self {
            Provider::OpenAi | Provider::Bedrock => Some(100_000),
            Provider::Anthropic => Some(160_000),
            Provider::Scripted => None,
        }
    }

    /// Where the API key is read from when the configuration names no variable.
    pub fn default_key_env(self) -> Option<&'static str> {
        match self {
            Provider::OpenAi => Some(crate::config::settings::OPENAI_API_KEY.env),
            Provider::Anthropic => Some(crate::config::settings::ANTHROPIC_API_KEY.env),
            Provider::Bedrock | Provider::Scripted => None,
        }
    }
}

/// Where the OpenAI and Anthropic providers get their API key.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum Credentials {
    /// The variable the model names (`api_key_env`), else the provider's default one.
    #[default]
    FromEnv,
    /// A key the deployment read for this process (from AWS Secrets Manager) for the
    /// default model: used by the models of that provider at that base URL which name no
    /// variable of their own, and sent nowhere else.
    Key {
        provider: Provider,
        base_url: Option<String>,
        key: String,
    },
    /// This process makes no model calls (a Lambda function that only answers requests):
    /// models are built without a key, and a call fails saying so.
    NoCalls,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Credentials::FromEnv => "FromEnv",
            Credentials::Key { .. } => "Key([redacted])",
            Credentials::NoCalls => "NoCalls",
        })
    }
}

/// One model a task may use. For `scripted`, `model` is the script's path.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    #[serde(skip)]
    pub name: String,
    pub provider: Provider,
    pub model: String,
    #[serde(default)]
    pub base_url: Option<String>,
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Most tokens a request to the model may hold (the context budget).
    #[serde(default)]
    pub context_tokens: Option<usize>,
    /// Never from the file: the catalog's, set by [`ModelCatalog::resolve`].
    #[serde(skip)]
    pub credentials: Credentials,
}

/// How a model named `name` (a catalog name, `<provider>:<model>`, `scripted:<path>`) is
/// shown to participants (`/model`): as named, but a script as `scripted:<its file's stem>`.
/// Its path is the operator's, and names their directories (a user name, a checkout); the
/// stem still tells their scripts apart.
pub fn shown_name(name: &str) -> String {
    match name.strip_prefix("scripted:") {
        Some(path) => format!("scripted:{}", script_stem(path)),
        None => name.to_owned(),
    }
}

/// The file stem of a script's path (the path itself when it has none).
fn script_stem(path: &str) -> &str {
    std::path::Path::new(path)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(path)
}

impl ModelSpec {
    /// The model id its requests carry, which the metrics count its calls under: the
    /// provider's id, and for a script `scripted:<its file's stem>`, not its path (see
    /// [`shown_name`]).
    pub fn id(&self) -> String {
        match self.provider {
            Provider::Scripted => format!("scripted:{}", script_stem(&self.model)),
            _ => self.model.clone(),
        }
    }

    /// `<provider>:<model>`: a model named by itself.
    pub fn inline(s: &str) -> Option<Self> {
        let (provider, model) = s.split_once(':')?;
        let provider = Provider::parse(provider)?;
        (!model.is_empty()).then(|| ModelSpec {
            name: s.to_owned(),
            provider,
            model: model.to_owned(),
            base_url: None,
            api_key_env: None,
            context_tokens: None,
            credentials: Credentials::FromEnv,
        })
    }

    /// The model's context budget: its own, else `fallback` (`--context-tokens`), else
    /// its provider's default.
    pub fn context_budget(&self, fallback: Option<usize>) -> Option<usize> {
        self.context_tokens
            .or(fallback)
            .or(self.provider.default_context_tokens())
    }
}

/// The configured models, in file order, and the default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelCatalog {
    pub models: Vec<ModelSpec>,
    pub default: Option<String>,
    /// How this process's models get their keys.
    pub credentials: Credentials,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    default: Option<String>,
    #[serde(default)]
    models: toml::Table,
}

impl ModelCatalog {
    pub fn from_toml(source: &str, text: &str) -> Result<Self, String> {
        let file: File =
            toml::from_str(text).map_err(|e| format!("model configuration {source}: {e}"))?;
        let models = file
            .models
            .into_iter()
            .map(|(name, value)| {
                let mut spec: ModelSpec = value
                    .try_into()
                    .map_err(|e| format!("model configuration {source}, model {name}: {e}"))?;
                spec.name = name;
                Ok(spec)
            })
            .collect::<Result<Vec<_>, String>>()?;
        let catalog = ModelCatalog {
            models,
            default: file.default,
            credentials: Credentials::FromEnv,
        };
        if let Some(default) = &catalog.default {
            catalog
                .resolve(default)
                .map_err(|e| format!("model configuration {source}: default: {e}"))?;
        }
        Ok(catalog)
    }

    /// Reads a models file.
    pub fn load(path: &std::path::Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the models file {}: {e}", path.display()))?;
        Self::from_toml(&path.display().to_string(), &text)
    }

    /// A configured name, or an inline `<provider>:<model>`.
    pub fn resolve(&self, name: &str) -> Result<ModelSpec, String> {
        let mut spec = self
            .models
            .iter()
            .find(|m| m.name == name)
            .cloned()
            .or_else(|| ModelSpec::inline(name))
            .ok_or_else(|| {
                format!(
                    "unknown model {name:?}; the choices are {}",
                    self.choices().join(", ")
                )
            })?;
        spec.credentials = match &self.credentials {
            // A model naming its own variable keeps it, and another provider or endpoint
            // never gets the key, whatever the deployment read.
            Credentials::Key {
                provider, base_url, ..
            } if spec.api_key_env.is_some()
                || spec.provider != *provider
                || spec.base_url != *base_url =>
            {
                Credentials::FromEnv
            }
            credentials => credentials.clone(),
        };
        Ok(spec)
    }

    /// The configured models' names, in the file's order.
    pub fn names(&self) -> Vec<String> {
        self.models.iter().map(|m| m.name.clone()).collect()
    }

    /// The names a task may choose, for messages and `/model`.
    pub fn choices(&self) -> Vec<String> {
        let mut names = self.names();
        if names.is_empty() {
            names.push("<provider>:<model>".into());
        }
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
default = "local"

[models.gpt]
provider = "openai"
model = "gpt-4o-mini"
api_key_env = "MY_OPENAI_KEY"

[models.local]
provider = "openai"
model = "llama3.2"
base_url = "http://localhost:11434/v1"

[models.claude]
provider = "bedrock"
model = "anthropic.claude-3-5-haiku-20241022-v1:0"
"#;

    #[test]
    fn named_models_are_read_in_file_order_with_their_settings() {
        let c = ModelCatalog::from_toml("models.toml", FILE).expect("valid");
        assert_eq!(c.choices(), ["gpt", "local", "claude"]);
        assert_eq!(c.default.as_deref(), Some("local"));
        let local = c.resolve("local").expect("configured");
        assert_eq!(
            (local.provider, local.base_url.as_deref()),
            (Provider::OpenAi, Some("http://localhost:11434/v1"))
        );
        assert_eq!(
            c.resolve("gpt").expect("configured").api_key_env.as_deref(),
            Some("MY_OPENAI_KEY")
        );
    }

    #[test]
    fn inline_models_and_scripts_need_no_file() {
        let c = ModelCatalog::default();
        let spec = c
            .resolve("bedrock:anthropic.claude-3-5-haiku-20241022-v1:0")
            .expect("inline");
        assert_eq!(
            (spec.provider, spec.model.as_str()),
            (
                Provider::Bedrock,
                "anthropic.claude-3-5-haiku-20241022-v1:0"
            )
        );
        assert_eq!(
            c.resolve("scripted:/tmp/s.json").expect("inline").provider,
            Provider::Scripted
        );
    }

    #[test]
    fn a_script_is_shown_and_counted_by_its_files_stem_never_its_path() {
        let c = ModelCatalog::default();
        let script = c.resolve("scripted:/home/ann/work/s.json").expect("inline");
        assert_eq!(script.id(), "scripted:s");
        assert_eq!(shown_name("scripted:/home/ann/work/s.json"), "scripted:s");
        let hosted = c.resolve("openai:gpt-4o-mini").expect("inline");
        assert_eq!(hosted.id(), "gpt-4o-mini");
        for name in ["openai:gpt-4o-mini", "gpt", "offline"] {
            assert_eq!(shown_name(name), name);
        }
    }

    #[test]
    fn unknown_names_and_bad_files_are_refused_with_the_reason() {
        let c = ModelCatalog::from_toml("models.toml", FILE).expect("valid");
        assert_eq!(
            c.resolve("gtp").unwrap_err(),
            "unknown model \"gtp\"; the choices are gpt, local, claude"
        );
        let bad_provider = "[models.x]\nprovider = \"acme\"\nmodel = \"m\"\n";
        assert!(ModelCatalog::from_toml("f", bad_provider)
            .unwrap_err()
            .contains("model x"));
        let bad_default = "default = \"nope\"\n";
        assert!(ModelCatalog::from_toml("f", bad_default)
            .unwrap_err()
            .contains("default"));
        let typo = "[models.x]\nprovider = \"openai\"\nmodel = \"m\"\nbase_ulr = \"h\"\n";
        assert!(ModelCatalog::from_toml("f", typo)
            .unwrap_err()
            .contains("base_ulr"));
    }
}
