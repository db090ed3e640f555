//! The LLM agent as a function that never drives it sees it. In Lambda only the resume
//! function calls the model; the request functions, the notifier and the sweeper need of
//! the agent only what `/model` lists and that its drives are not theirs. This stand-in
//! knows just that, so those functions link no model provider, no MCP client and no
//! LLM agent.

use async_trait::async_trait;

use super::LlmSettings;
use crate::a2a::Message;
use crate::engine::{Agent, ModelChoices, RunError, TaskRun};

/// The LLM agent, driven elsewhere (by the resume function).
#[derive(Debug)]
pub struct DrivenElsewhere {
    choices: ModelChoices,
}

impl DrivenElsewhere {
    /// What the LLM agent built from `settings` would list for `/model`. A model setting
    /// the LLM agent would refuse (an unknown name, a script that does not load) is refused
    /// here too, so every function fails at its start on it, as before, not only resume.
    pub fn new(settings: &LlmSettings) -> Result<Self, String> {
        let named = settings.model_name();
        if let Some(name) = named {
            let spec = settings.catalog.resolve(name)?;
            if spec.provider == crate::models::config::Provider::Scripted {
                crate::models::scripted::Scripted::load(std::path::Path::new(&spec.model))?;
            }
        }
        let default = named.unwrap_or(crate::models::offline::NAME);
        Ok(DrivenElsewhere {
            choices: ModelChoices {
                default: crate::models::config::shown_name(default),
                names: settings.catalog.names(),
            },
        })
    }
}

#[async_trait]
impl Agent for DrivenElsewhere {
    fn models(&self) -> Option<ModelChoices> {
        Some(self.choices.clone())
    }

    /// Never driven here: its drives are not quick, so no request drives it inline, and
    /// Lambda functions run nothing detached (`detached_runs` is off). If a drive ever
    /// reached it, the task is handed over as it stands, runnable, to the function that
    /// drives it. Only for processes whose wake-ups go elsewhere: where this process
    /// answered its own wake-ups, the hand-over would wake it again.
    async fn run(&self, run: &mut TaskRun, _input: &Message) -> Result<(), RunError> {
        run.hand_over();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::config::{Credentials, ModelCatalog};

    /// `/model` lists the same in a function that drives the LLM agent and in one that
    /// does not.
    #[tokio::test]
    async fn it_lists_what_the_llm_agent_lists() {
        let mut catalog = ModelCatalog::from_toml(
            "test",
            "default = \"fast\"\n[models.fast]\nprovider = \"openai\"\nmodel = \"gpt-4.1-mini\"\n\
             [models.deep]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\n",
        )
        .expect("a catalog");
        catalog.credentials = Credentials::NoCalls;
        for model in [None, Some("deep".to_owned())] {
            let settings = LlmSettings {
                model,
                catalog: catalog.clone(),
                ..Default::default()
            };
            let built = crate::agent::build(crate::agent::AgentKind::Llm, &settings)
                .await
                .expect("the LLM agent");
            let elsewhere = DrivenElsewhere::new(&settings).expect("the stand-in");
            assert_eq!(elsewhere.models(), built.models());
        }
        let offline = LlmSettings::default();
        let built = crate::agent::build(crate::agent::AgentKind::Llm, &offline)
            .await
            .expect("the LLM agent on the offline model");
        let elsewhere = DrivenElsewhere::new(&offline).expect("the stand-in");
        assert_eq!(elsewhere.models(), built.models());
    }

    /// A model setting the LLM agent refuses stops a function that does not drive it too.
    #[tokio::test]
    async fn it_refuses_what_the_llm_agent_refuses() {
        for model in ["no-such-model", "scripted:/no/such/script.json"] {
            let settings = LlmSettings {
                model: Some(model.into()),
                ..Default::default()
            };
            assert!(crate::agent::build(crate::agent::AgentKind::Llm, &settings)
                .await
                .is_err());
            assert!(DrivenElsewhere::new(&settings).is_err(), "{model}");
        }
    }
}
