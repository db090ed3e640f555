//! The harness every operation runs against: its parts, assembled once per process (per
//! cold start) from the configuration, with its background work started. Callers outside
//! the operations get each part through its own accessor.

use std::sync::Arc;

use crate::a2a::card::PublishedCard;
use crate::auth::Verifier;
use crate::commands::CommandRegistry;
use crate::config::Config;
use crate::engine::Engine;
use crate::push::Notifier;
use crate::store::Store;

/// Why a harness with push on will not start without a key.
const NO_PUSH_KEY: &str = "push notifications are on, but no key is configured to seal \
     webhook secrets with: set HARNESS_PUSH_KEY to 32 random bytes in base64 \
     (`openssl rand -base64 32`), or turn push off with HARNESS_PUSH_NOTIFICATIONS=false";

/// What every operation runs against; built once per process (per cold start).
pub struct Harness {
    pub(super) store: Arc<dyn Store>,
    pub(super) engine: Arc<Engine>,
    pub(super) config: Config,
    pub(super) card: PublishedCard,
    /// The `/name` commands, listed on the card.
    pub(super) commands: CommandRegistry,
    /// Push notifications; None when they are off.
    pub(super) notifier: Option<Arc<Notifier>>,
    /// The participants' personal channels (their answer links); None when there are none.
    pub(super) personal: Option<Arc<crate::channels::personal::PersonalChannels>>,
    /// The remote agents tasks may delegate to; None without a registry.
    pub(super) remotes: Option<Arc<crate::remote::Remotes>>,
    /// Verifies bearer tokens in `jwt` mode; None in `none` mode.
    pub(super) verifier: Option<Arc<Verifier>>,
    /// The SubscribeToTask streams open in this process, so a task's are bounded.
    pub(super) subscribers: crate::engine::follow::Subscribers,
    /// The ids nobody from outside may be or look like, read at the first request that
    /// needs them ([`Harness::reserved`]).
    pub(super) reserved: tokio::sync::OnceCell<crate::ext::participant::Reserved>,
}

impl Harness {
    /// A harness with the built-in commands.
    pub fn new(
        store: Arc<dyn Store>,
        agent: Arc<dyn crate::engine::Agent>,
        config: Config,
    ) -> Result<Arc<Self>, String> {
        Self::with_commands(store, agent, config, CommandRegistry::builtin())
    }

    /// A harness with these commands (the built-ins plus your own, say), its background
    /// work started: in-process webhook deliveries and wake-ups, when configured.
    pub fn with_commands(
        store: Arc<dyn Store>,
        agent: Arc<dyn crate::engine::Agent>,
        config: Config,
        commands: CommandRegistry,
    ) -> Result<Arc<Self>, String> {
        let remotes = crate::remote::Remotes::from_config(&config)?;
        Self::started(Self::assemble(store, agent, config, commands, remotes)?)
    }

    /// A harness with the built-in commands whose remote agents are `remotes`: the ones
    /// its LLM agent delegates with (`agent::LlmSettings::remotes`), so the links the agent
    /// makes and the callbacks and cancels that reach them read one registry.
    pub fn with_remotes(
        store: Arc<dyn Store>,
        agent: Arc<dyn crate::engine::Agent>,
        config: Config,
        remotes: Option<Arc<crate::remote::Remotes>>,
    ) -> Result<Arc<Self>, String> {
        let commands = CommandRegistry::builtin();
        Self::started(Self::assemble(store, agent, config, commands, remotes)?)
    }

    /// `h` with its background work started: in-process webhook deliveries and wake-ups,
    /// when configured.
    fn started(h: Arc<Self>) -> Result<Arc<Self>, String> {
        if let (Some(notifier), true) = (&h.notifier, h.config.push_in_process) {
            tokio::spawn(notifier.clone().watch(h.store.pushes()));
        }
        if h.config.detached_runs {
            h.engine.watch_wakeups();
        }
        Ok(h)
    }

    /// A harness for a function that serves only reads (see [`Reads`]): the
    /// conformance agent stands in for an agent it never runs, and nothing runs in the
    /// background, so it links no agent, model or webhook delivery.
    pub fn reader(store: Arc<dyn Store>, config: Config) -> Result<Arc<Self>, String> {
        let remotes = crate::remote::Remotes::from_config(&config)?;
        Self::assemble(
            store,
            crate::agent::conformance(),
            config,
            CommandRegistry::builtin(),
            remotes,
        )
    }

    fn assemble(
        store: Arc<dyn Store>,
        agent: Arc<dyn crate::engine::Agent>,
        config: Config,
        commands: CommandRegistry,
        remotes: Option<Arc<crate::remote::Remotes>>,
    ) -> Result<Arc<Self>, String> {
        let verifier = crate::auth::verifier(&config.auth)?;
        match (&verifier, &config.default_participant) {
            (Some(_), Some(_)) => {
                return Err(
                    "a default participant stands for requests that name no one, \
                     which jwt mode does not take: unset it (HARNESS_DEFAULT_PARTICIPANT)"
                        .into(),
                )
            }
            (None, Some(id)) if *id == config.agent_id => {
                return Err(format!(
                    "the default participant cannot be the harness's own id {id}"
                ))
            }
            (None, _) => tracing::warn!(
                "auth none: identity is not verified; a request is whoever it says it is \
                 (X-Participant-Id, metadata.participant_id). Use --auth jwt where others \
                 can reach this server"
            ),
            (Some(v), None) => {
                tracing::info!(issuer = %v.settings().issuer, "auth jwt: bearer tokens verified")
            }
        }
        let notifier = if config.push_notifications {
            let key = config.push_key.clone().ok_or(NO_PUSH_KEY)?;
            Some(Arc::new(Notifier::new(
                store.clone(),
                key,
                config.push_timeout,
                config.targets(),
            )))
        } else {
            None
        };
        let personal = match (&config.personal_channels, &notifier, &config.push_key) {
            (Some(source), Some(notifier), Some(key)) => {
                Some(Arc::new(crate::channels::personal::PersonalChannels::load(
                    source,
                    key,
                    &config.public_url,
                    notifier.clone(),
                    crate::channels::personal::PostLimits {
                        store: store.clone(),
                        per_sender: config.posts_per_sender_per_hour,
                        per_recipient: config.posts_per_recipient_per_hour,
                    },
                )?))
            }
            (Some(_), _, _) => {
                return Err(
                    "personal channels need push notifications on (their guard and key)".into(),
                )
            }
            _ => None,
        };
        let media = crate::engine::medium::Media::new(
            (personal
                .iter()
                .map(|p| p.clone() as Arc<dyn crate::engine::medium::Medium>))
            .collect(),
        );
        let engine = Engine::new(store.clone(), agent, &config, media)?;
        let card = PublishedCard::new(super::card::build(&config, &commands.specs()));
        Ok(Arc::new(Harness {
            store,
            engine,
            config,
            card,
            commands,
            notifier,
            personal,
            remotes,
            verifier,
            subscribers: Default::default(),
            reserved: Default::default(),
        }))
    }

    /// The store every operation reads and writes.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The engine: drives, wake-ups and event logs.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The agent card as served.
    pub fn card(&self) -> &PublishedCard {
        &self.card
    }

    /// The `/name` commands, listed on the card.
    pub fn commands(&self) -> &CommandRegistry {
        &self.commands
    }

    /// Push notifications, when they are on.
    pub fn push(&self) -> Option<&Arc<Notifier>> {
        self.notifier.as_ref()
    }

    /// The participants' personal channels, when there are any.
    pub fn personal(&self) -> Option<&Arc<crate::channels::personal::PersonalChannels>> {
        self.personal.as_ref()
    }

    /// The remote agents tasks may delegate to, when there is a registry.
    pub fn remotes(&self) -> Option<&Arc<crate::remote::Remotes>> {
        self.remotes.as_ref()
    }
}
