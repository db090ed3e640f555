//! One module per A2A operation, each the whole behaviour of that operation: validate
//! the request, run it against the store and engine, shape the answer. The bindings
//! only decode, call and encode.

pub mod cancel_task;
pub mod card;
pub mod get_extended_agent_card;
pub mod get_task;
pub mod list_tasks;
pub mod push_config;
pub mod send_message;
pub mod subscribe_to_task;

use std::sync::Arc;

use crate::a2a::card::PublishedCard;
use crate::a2a::{A2aError, Call, Operation, Timestamp};
use crate::auth::{AuthError, Verifier};
use crate::commands::CommandRegistry;
use crate::config::Config;
use crate::engine::Engine;
use crate::push::Notifier;
use crate::store::{AuditRecord, Store, StoreError, TaskRecord};

/// Why a harness with push on will not start without a key.
const NO_PUSH_KEY: &str = "push notifications are on, but no key is configured to seal \
     webhook secrets with: set HARNESS_PUSH_KEY to 32 random bytes in base64 \
     (`openssl rand -base64 32`), or turn push off with HARNESS_PUSH_NOTIFICATIONS=false";

/// What every operation runs against; built once per process (per cold start).
pub struct Harness {
    pub store: Arc<dyn Store>,
    pub engine: Arc<Engine>,
    pub config: Config,
    pub card: PublishedCard,
    /// The `/name` commands, listed on the card.
    pub commands: CommandRegistry,
    /// Push notifications; None when they are off.
    pub notifier: Option<Arc<Notifier>>,
    /// The participants' personal channels (their answer links); None when there are none.
    pub personal: Option<Arc<crate::channels::personal::PersonalChannels>>,
    /// The remote agents tasks may delegate to; None without a registry.
    pub remotes: Option<Arc<crate::remote::Remotes>>,
    /// Verifies bearer tokens in `jwt` mode; None in `none` mode.
    pub verifier: Option<Arc<Verifier>>,
    /// The SubscribeToTask streams open in this process, so a task's are bounded.
    pub subscribers: crate::engine::follow::Subscribers,
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
        let h = Self::assemble(store, agent, config, commands)?;
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
        Self::assemble(
            store,
            crate::agent::conformance(),
            config,
            CommandRegistry::builtin(),
        )
    }

    fn assemble(
        store: Arc<dyn Store>,
        agent: Arc<dyn crate::engine::Agent>,
        config: Config,
        commands: CommandRegistry,
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
        let remotes = crate::remote::Remotes::from_config(&config)?;
        let engine = Engine::new(store.clone(), agent, &config, media)?;
        let card = PublishedCard::new(card::build(&config, &commands.specs()));
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
        }))
    }

    /// The task if it exists for this tenant and the caller is one of its participants;
    /// anything else is the same "not found", so a stranger learns nothing.
    pub async fn visible_task(
        &self,
        tenant: &str,
        id: &str,
        caller: &Caller,
    ) -> Result<TaskRecord, A2aError> {
        // The head first: a stranger's request reads nothing more.
        let admit = |rec: &TaskRecord| Self::visible(rec, tenant, caller);
        (self.store.load_task_for(id, &admit).await?).ok_or_else(|| A2aError::task_not_found(id))
    }

    /// [`Harness::visible_task`] for a reader: the task's last `history` messages (all
    /// when None) and its artifacts if `artifacts`; a view, which cannot be committed.
    pub async fn visible_view(
        &self,
        tenant: &str,
        id: &str,
        caller: &Caller,
        history: Option<usize>,
        artifacts: bool,
    ) -> Result<TaskRecord, A2aError> {
        let admit = |rec: &TaskRecord| Self::visible(rec, tenant, caller);
        (self.store.load_view(id, history, artifacts, &admit).await?)
            .ok_or_else(|| A2aError::task_not_found(id))
    }

    fn visible(rec: &TaskRecord, tenant: &str, caller: &Caller) -> bool {
        rec.tenant == tenant && caller.may_see(rec)
    }

    /// The visibility test (see [`Harness::visible_task`]) for `participant`, which a
    /// stream or a blocking send puts the task to again as it moves on.
    pub fn visibility(&self, tenant: &str, participant: &str) -> crate::engine::follow::MaySee {
        let (tenant, caller) = (tenant.to_owned(), Caller::named(participant));
        Arc::new(move |rec| Self::visible(rec, &tenant, &caller))
    }

    /// Whether the caller, a participant of `rec` (see [`Harness::visible_task`]), may do
    /// `action` on it: a refusal names the rule.
    pub fn permit(
        &self,
        rec: &TaskRecord,
        caller: &Caller,
        action: crate::ext::permissions::Action,
    ) -> Result<(), A2aError> {
        let ext = rec.ext().unwrap_or_default();
        Ok(crate::ext::permissions::require(&ext, caller.id(), action)?)
    }

    /// The notifier, or PushNotificationNotSupported when push is off.
    pub fn notifier(&self) -> Result<&Arc<Notifier>, A2aError> {
        self.notifier
            .as_ref()
            .ok_or(A2aError::PushNotificationNotSupported)
    }

    /// The participant a request's token authenticates in `jwt` mode (None in `none` mode,
    /// where no token is read). Runs before anything else of the request is read.
    pub async fn authenticate(
        &self,
        authorization: Option<&[u8]>,
    ) -> Result<Option<String>, AuthError> {
        match &self.verifier {
            None => Ok(None),
            Some(v) => v.participant(authorization).await.map(Some),
        }
    }

    /// Who a request comes from: the participant its token authenticated (`jwt`), else
    /// its `X-Participant-Id` header, else the configured default participant, else no
    /// one (which fails closed). With a token, a header naming someone else is refused;
    /// in every mode, so is acting as the harness itself.
    pub async fn caller(
        &self,
        op: Operation,
        header: Option<&str>,
        verified: Option<String>,
    ) -> Result<Caller, A2aError> {
        let header = header.filter(|h| !h.is_empty());
        // Before the comparison with a verified id, whose refusal repeats the header.
        if header.is_some_and(|named| !crate::ext::participant::valid_id(named)) {
            return Err(A2aError::invalid_field(
                "X-Participant-Id",
                crate::ext::participant::ID_RULE,
            ));
        }
        let (participant, verified) = match (verified, header) {
            (Some(id), Some(named)) if named != id => {
                return Err(A2aError::invalid_field(
                    "X-Participant-Id",
                    format!("X-Participant-Id names {named}, but the token authenticates {id}"),
                ))
            }
            (Some(id), _) => (Some(id), true),
            (None, named) => (
                named
                    .map(str::to_owned)
                    .or_else(|| self.config.default_participant.clone()),
                false,
            ),
        };
        let participant = match participant {
            Some(p) => Some(self.speaking_as(op, "", p).await?),
            None => None,
        };
        Ok(Caller {
            participant,
            verified,
            ..Caller::default()
        })
    }

    /// Stores an audit record; one the store cannot take (down, or a refusal past the
    /// participant's hourly quota) is logged instead, and the request goes on.
    pub async fn audit(&self, record: &AuditRecord) {
        match self.store.audit(record).await {
            Ok(true) => {}
            Ok(false) => tracing::info!(
                participant = record.participant,
                tenant = record.tenant,
                operation = record.operation,
                task_id = record.task_id,
                message_id = record.message_id,
                detail = record.detail,
                "audit quota reached for the hour; this refusal is in the log only"
            ),
            Err(e) => tracing::warn!(error = %e, "the decision could not be audited"),
        }
    }

    /// `id`, unless it is reserved for the harness (its own agent id): no client request
    /// acts as the harness. A refusal is audited.
    pub async fn speaking_as(
        &self,
        op: Operation,
        tenant: &str,
        id: String,
    ) -> Result<String, A2aError> {
        if id != self.config.agent_id {
            return Ok(id);
        }
        let record = AuditRecord {
            at: Some(Timestamp::now()),
            tenant: tenant.into(),
            operation: op.name().into(),
            task_id: String::new(),
            message_id: String::new(),
            participant: id.clone(),
            accepted: false,
            detail: RESERVED.into(),
        };
        tracing::info!(participant = %id, op = op.name(), "reserved participant id refused");
        self.audit(&record).await;
        Err(A2aError::invalid_params(format!(
            "participant id {id} is {RESERVED}"
        )))
    }
}

/// Why a request naming the harness's own id is refused.
const RESERVED: &str = "reserved for the harness itself";

/// The participant a request comes from, as the bindings resolved it, whether a token
/// proved it, and when the invocation serving it must end (Lambda), if it must.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    pub participant: Option<String>,
    /// The request's id in the logs (the Lambda invocation's, or one made up locally).
    pub request_id: String,
    /// Verified by a token: the request may not name anyone else (a message's
    /// `metadata.participant_id` included).
    pub verified: bool,
    pub deadline: Option<std::time::Instant>,
}

impl Caller {
    pub fn named(id: &str) -> Self {
        Caller {
            participant: Some(id.to_owned()),
            ..Default::default()
        }
    }

    /// The caller's participant id ("" for none, which [`Harness::visible_task`] refuses).
    pub fn id(&self) -> &str {
        self.participant.as_deref().unwrap_or_default()
    }

    /// Only a task's participants may see or touch it.
    pub fn may_see(&self, rec: &TaskRecord) -> bool {
        rec.ext()
            .is_some_and(|e| e.is_participant(self.participant.as_deref()))
    }
}

impl From<StoreError> for A2aError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Conflict { task_id, .. } => A2aError::Internal(format!(
                "task {task_id} is being changed by another request; try again"
            )),
            StoreError::NoTask(task_id) => A2aError::task_not_found(&task_id),
            StoreError::TooLarge(_) => A2aError::invalid_params(
                "the task would be larger than the store takes: a task's own data (its \
                 metadata and task envelope) is at most 48 KB, one commit at most 4 MB; send less",
            ),
            StoreError::KeyTooLong(what) => A2aError::invalid_params(format!(
                "{what}: too long for the task store's keys (at most 2048 bytes in a partition \
                 key and 1024 in a sort key, DynamoDB's bounds, which every store keeps; a \
                 character counts its UTF-8 bytes, and a '#' or '%' in a tenant, participant id \
                 or messageId three); use shorter names"
            )),
            StoreError::PushConfigTaken { task_id, id } => A2aError::invalid_params(format!(
                "push notification config {id} of task {task_id} exists: {}",
                crate::ext::permissions::REPLACE_WEBHOOK_RULE
            )),
            StoreError::TooManyPushConfigs(task_id) => A2aError::invalid_params(format!(
                "task {task_id} already has {} push notification configs (the limit)",
                crate::store::MAX_CONFIGS_PER_TASK
            )),
            // The store's own words (its endpoint, the table, the SDK's request ids) are the
            // operator's: logged in the request's span, and the caller told only what failed.
            StoreError::Unavailable(why) => {
                tracing::error!(error = %why, "store unavailable");
                A2aError::Unavailable(STORE_FAILED.into())
            }
            other @ (StoreError::Corrupt(_) | StoreError::ReadOnly) => {
                tracing::error!(error = %other, "store error");
                A2aError::Internal(STORE_FAILED.into())
            }
            other => A2aError::Internal(other.to_string()),
        }
    }
}

/// What a caller is told of a store that failed their request.
const STORE_FAILED: &str = "the task store could not serve this request; try again later";

impl From<crate::sealing::SealError> for A2aError {
    fn from(e: crate::sealing::SealError) -> Self {
        A2aError::Internal(e.to_string())
    }
}

/// What an operation answers: one JSON value (printed once, straight from its type), or a
/// stream of events.
pub enum Answer {
    Json(Box<serde_json::value::RawValue>),
    Stream(crate::engine::follow::EventStream),
}

fn json<T: serde::Serialize>(v: T) -> Result<Answer, A2aError> {
    serde_json::value::to_raw_value(&v)
        .map(Answer::Json)
        .map_err(|e| A2aError::Internal(format!("cannot encode the answer: {e}")))
}

/// Runs one operation for `caller`, in a span named for it.
pub async fn execute(h: &Harness, call: Call, caller: &Caller) -> Result<Answer, A2aError> {
    // Boxed: every operation's future is in it, too large to be carried on the stack twice.
    checked(call, caller, |call| Box::pin(run(h, call, caller))).await
}

/// `op` on the call, in the call's span, once the names it carries are within bounds
/// (checked before the span, whose fields they are: no log line holds an oversized one).
fn checked<'a, F>(
    call: Call,
    caller: &'a Caller,
    op: impl FnOnce(Call) -> F + Send + 'a,
) -> impl std::future::Future<Output = Result<Answer, A2aError>> + Send + 'a
where
    F: std::future::Future<Output = Result<Answer, A2aError>> + Send + 'a,
{
    let named = call.check_names();
    let span = span_of(&call, caller, named.is_ok());
    traced(span, async move {
        named?;
        op(call).await
    })
}

/// The span every line of a request carries (the JSON logs' span fields); the request
/// is counted.
fn span_of(call: &Call, caller: &Caller, named: bool) -> tracing::Span {
    let op = call.operation().name();
    crate::metrics::request(op);
    let (task_id, context_id) = if named { call.names() } else { ("", "") };
    tracing::info_span!(
        "a2a",
        op,
        request_id = %caller.request_id,
        participant = caller.participant.as_deref().unwrap_or(""),
        task_id,
        context_id,
    )
}

fn traced(
    span: tracing::Span,
    run: impl std::future::Future<Output = Result<Answer, A2aError>>,
) -> impl std::future::Future<Output = Result<Answer, A2aError>> {
    use futures::FutureExt;
    use tracing::Instrument;
    // Combinators, not an async fn: an async fn holds the future it was given and, while
    // awaiting it, a second copy of it (2.7 KB each here), in every request's future.
    let refused = span.clone();
    run.instrument(span).inspect(move |result| {
        if let Err(e) = result {
            refused.in_scope(|| tracing::info!(code = e.json_rpc_code(), error = %e, "refused"));
        }
    })
}

/// Which operations a server runs. The server is generic over it, so a function built
/// on [`Reads`] links nothing that only the other operations reach: the agent, the
/// models, webhook deliveries.
pub trait Operations: Send + Sync + 'static {
    /// Whether any operation writes: the routes that only writes need (answers from the
    /// inbox, remote agents' callbacks, the metrics page) are left out of those that
    /// do not.
    const WRITES: bool;

    fn execute<'a>(
        h: &'a Harness,
        call: Call,
        caller: &'a Caller,
    ) -> impl std::future::Future<Output = Result<Answer, A2aError>> + Send + 'a;
}

/// Every operation.
pub struct All;

impl Operations for All {
    const WRITES: bool = true;

    fn execute<'a>(
        h: &'a Harness,
        call: Call,
        caller: &'a Caller,
    ) -> impl std::future::Future<Output = Result<Answer, A2aError>> + Send + 'a {
        execute(h, call, caller)
    }
}

/// The operations that change nothing: GetTask, ListTasks, GetPushConfig,
/// ListPushConfigs, GetExtendedAgentCard. Any other is unsupported.
pub struct Reads;

impl Operations for Reads {
    const WRITES: bool = false;

    fn execute<'a>(
        h: &'a Harness,
        call: Call,
        caller: &'a Caller,
    ) -> impl std::future::Future<Output = Result<Answer, A2aError>> + Send + 'a {
        checked(call, caller, move |call| read(h, call, caller))
    }
}

/// The operations that change nothing, for both servers; any other is unsupported.
async fn read(h: &Harness, call: Call, c: &Caller) -> Result<Answer, A2aError> {
    match call {
        Call::GetTask(r) => json(get_task::get_task(h, r, c).await?),
        Call::ListTasks(r) => json(list_tasks::list_tasks(h, r, c).await?),
        Call::GetPushConfig(r) => json(push_config::get(h, r, c).await?),
        Call::ListPushConfigs(r) => json(push_config::list(h, r, c).await?),
        Call::GetExtendedAgentCard(r) => {
            json(get_extended_agent_card::get_extended_agent_card(h, r).await?)
        }
        other => Err(A2aError::UnsupportedOperation(format!(
            "{} is not served here",
            other.operation().name()
        ))),
    }
}

async fn run(h: &Harness, call: Call, c: &Caller) -> Result<Answer, A2aError> {
    match call {
        Call::SendMessage(r) => json(send_message::send_message(h, r, c).await?),
        Call::SendStreamingMessage(r) => Ok(Answer::Stream(
            send_message::send_streaming_message(h, r, c).await?,
        )),
        // Boxed: its future is ~20 KB, and this one holds the largest of its arms.
        Call::CancelTask(r) => json(Box::pin(cancel_task::cancel_task(h, r, c)).await?),
        Call::SubscribeToTask(r) => Ok(Answer::Stream(
            subscribe_to_task::subscribe_to_task(h, r, c).await?,
        )),
        Call::CreatePushConfig(r) => json(push_config::create(h, r, c).await?),
        Call::DeletePushConfig(r) => {
            push_config::delete(h, r, c).await?;
            json(serde_json::json!({}))
        }
        Call::GetTask(_)
        | Call::ListTasks(_)
        | Call::GetPushConfig(_)
        | Call::ListPushConfigs(_)
        | Call::GetExtendedAgentCard(_) => read(h, call, c).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store's failure reaches the caller as what failed, never in the store's words.
    #[test]
    fn a_store_failure_tells_the_caller_nothing_of_the_store() {
        let inner = "dispatch failure: io error: connection refused (http://10.1.2.3:8000), \
                     table harness-prod, request id 7f3c";
        for (e, code) in [
            (StoreError::Unavailable(inner.into()), 503),
            (StoreError::Corrupt(inner.into()), 500),
        ] {
            let answer = A2aError::from(e);
            assert_eq!(answer.http_status(), code);
            let text = answer.to_json_rpc().to_string();
            for word in ["10.1.2.3", "harness-prod", "7f3c", "dispatch"] {
                assert!(!text.contains(word), "{text}");
            }
            assert!(text.contains(STORE_FAILED), "{text}");
        }
    }
}
