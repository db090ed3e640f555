//! The registry of remote A2A agents the model may delegate to: `--agents FILE` /
//! `HARNESS_AGENTS`, a TOML file with one table per agent.
//!
//! ```toml
//! [agents.translator]
//! card_url = "https://translator.example/.well-known/agent-card.json"
//! description = "Translates documents"   # optional: shown to the model instead of the card's
//! token_env = "TRANSLATOR_TOKEN"         # optional: a bearer token, from this variable
//! deadline = 3600                        # optional: seconds a delegation may take (24 h)
//! ```
//!
//! On AWS the same text is kept in a Secrets Manager secret (`HARNESS_AGENTS_SECRET`),
//! where an agent's `token = "..."` may stand in the file itself.
//!
//! A token is a secret: it is read from the environment at start, never stored, logged or
//! shown to the model, and sent only to the agent's own interface.

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::Url;
use serde::Deserialize;

/// Most agents one registry may hold (each is a line of every system prompt).
pub const MAX_AGENTS: usize = 32;
/// Longest description shown to the model.
pub const MAX_DESCRIPTION: usize = 500;
/// How long a delegation may take when the agent's entry names no `deadline`.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(24 * 3600);
/// The longest `deadline` an entry may name.
pub const MAX_DEADLINE: Duration = Duration::from_secs(7 * 24 * 3600);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    agents: BTreeMap<String, Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    card_url: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    token_env: Option<String>,
    /// The token itself: for a registry kept in a secret (on AWS).
    #[serde(default)]
    token: Option<String>,
    /// Seconds a delegation may take before its remote task is cancelled.
    #[serde(default)]
    deadline: Option<u64>,
}

/// One remote agent.
#[derive(Clone)]
pub struct RemoteAgent {
    /// Its participant id on the tasks it joins.
    pub id: String,
    pub card_url: Url,
    /// Shown to the model instead of the card's description.
    pub description: Option<String>,
    /// A bearer token for its interface.
    pub token: Option<String>,
    /// How long a delegation to it may take: past it, the remote task is cancelled and
    /// the model told.
    pub deadline: Duration,
}

impl std::fmt::Debug for RemoteAgent {
    // The token is a secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteAgent")
            .field("id", &self.id)
            .field("card_url", &self.card_url.as_str())
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("deadline", &self.deadline)
            .finish()
    }
}

/// The remote agents, by id.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    agents: BTreeMap<String, RemoteAgent>,
}

impl Registry {
    /// The registry `source` holds; tokens from the process environment.
    pub fn load(source: &crate::config::Source) -> Result<Self, String> {
        let text = source.read("agents")?;
        Self::parse(&text, |name| std::env::var(name).ok())
            .map_err(|e| format!("agents {source:?}: {e}"))
    }

    /// The registry `text` describes, with tokens from `env`.
    pub fn parse(text: &str, env: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let file: File = toml::from_str(text).map_err(|e| {
            let line = crate::config::toml_line(text, &e);
            format!("line {line}: {}", e.message())
        })?;
        if file.agents.len() > MAX_AGENTS {
            return Err(format!("at most {MAX_AGENTS} agents"));
        }
        let mut agents = BTreeMap::new();
        for (id, entry) in file.agents {
            crate::ext::participant::parse_id(&id)?;
            let card_url = crate::config::http_url(&entry.card_url)
                .ok_or_else(|| format!("[agents.{id}] card_url is not an http(s) URL"))?;
            if entry
                .description
                .as_ref()
                .is_some_and(|d| d.chars().count() > MAX_DESCRIPTION)
            {
                return Err(format!(
                    "[agents.{id}] description is longer than {MAX_DESCRIPTION} characters"
                ));
            }
            let deadline = match entry.deadline {
                None => DEFAULT_DEADLINE,
                Some(s) if (1..=MAX_DEADLINE.as_secs()).contains(&s) => Duration::from_secs(s),
                Some(_) => {
                    return Err(format!(
                        "[agents.{id}] deadline is not 1 to {} seconds",
                        MAX_DEADLINE.as_secs()
                    ))
                }
            };
            let token = crate::config::bearer_token(
                &format!("agents.{id}"),
                entry.token_env.as_deref(),
                entry.token,
                &env,
            )?;
            agents.insert(
                id.clone(),
                RemoteAgent {
                    id,
                    card_url,
                    description: entry.description,
                    token,
                    deadline,
                },
            );
        }
        Ok(Registry { agents })
    }

    pub fn get(&self, id: &str) -> Option<&RemoteAgent> {
        self.agents.get(id)
    }

    pub fn agents(&self) -> impl Iterator<Item = &RemoteAgent> {
        self.agents.values()
    }

    pub fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_with_their_cards_and_tokens_from_the_environment() {
        let text = r#"
[agents.translator]
card_url = "https://t.example/.well-known/agent-card.json"
description = "Translates"
token_env = "T_TOKEN"

deadline = 60

[agents.b]
card_url = "http://127.0.0.1:9/.well-known/agent-card.json"
"#;
        let r = Registry::parse(text, |v| (v == "T_TOKEN").then(|| "s3cret".into())).unwrap();
        let t = r.get("translator").unwrap();
        assert_eq!(t.token.as_deref(), Some("s3cret"));
        assert_eq!(t.description.as_deref(), Some("Translates"));
        assert_eq!(t.deadline, Duration::from_secs(60));
        assert!(r.get("b").unwrap().token.is_none());
        assert_eq!(r.get("b").unwrap().deadline, DEFAULT_DEADLINE);
        assert!(!format!("{r:?}").contains("s3cret"));
    }

    #[test]
    fn a_bad_file_names_the_agent_and_the_reason() {
        for (text, want) in [
            (
                "[agents.a]\ncard_url = \"ftp://x/\"\n",
                "[agents.a] card_url",
            ),
            (
                "[agents.a]\ncard_url = \"https://x/\"\ntoken_env = \"NOPE\"\n",
                "NOPE, which is not set",
            ),
            ("[agents.a]\ncard = \"https://x/\"\n", "line 2"),
            (
                "[agents.a]\ncard_url = \"https://x/\"\ndeadline = 0\n",
                "[agents.a] deadline is not 1 to 604800 seconds",
            ),
            (
                "[agents.a]\ncard_url = \"https://x/\"\ndeadline = 604801\n",
                "[agents.a] deadline is not 1 to 604800 seconds",
            ),
            (
                "[agents.\"a\\u0001\"]\ncard_url = \"https://x/\"\n",
                "not a participant id",
            ),
        ] {
            let err = Registry::parse(text, |_| None).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        }
    }
}
