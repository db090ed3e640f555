//! Who a request comes from: the participant a token authenticates (`jwt`), or the one a
//! request names (`none`), never the harness itself.

use super::Harness;
use crate::a2a::{A2aError, Operation, Timestamp};
use crate::auth::{AuthError, Verified};
use crate::ext::participant::{self, IdRefusal, Reserved};
use crate::ext::task::{Participant, ParticipantKind, TaskExtension};
use crate::store::{AuditRecord, TaskRecord};

impl Harness {
    /// The participant a request's token authenticates in `jwt` mode, and its expiry (None
    /// in `none` mode, where no token is read). Runs before anything else of the request
    /// is read.
    pub async fn authenticate(
        &self,
        authorization: Option<&[u8]>,
    ) -> Result<Option<Verified>, AuthError> {
        let Some(v) = &self.verifier else {
            return Ok(None);
        };
        let verified = v.verify(authorization).await;
        if verified == Err(AuthError::Invalid(crate::auth::NOT_AN_ID)) {
            // A token that verified but names no participant id: the id itself is not
            // kept (it is no id), the refusal is.
            let record = AuditRecord {
                at: Some(Timestamp::now()),
                operation: "authenticate".into(),
                accepted: false,
                detail: format!("{}: {}", crate::auth::NOT_AN_ID, participant::ID_RULE),
                ..Default::default()
            };
            self.audit(&record).await;
        }
        verified.map(Some)
    }

    /// Who a request comes from: the participant its token authenticated (`jwt`), else
    /// its `X-Participant-Id` header, else the configured default participant, else no
    /// one (which fails closed). With a token, a header naming someone else is refused;
    /// in every mode, so is acting as the harness itself.
    pub async fn caller(
        &self,
        op: Operation,
        header: Option<&str>,
        verified: Option<Verified>,
    ) -> Result<Caller, A2aError> {
        let token_expires = verified.as_ref().and_then(Verified::accepted_until);
        let verified = verified.map(|v| v.participant);
        let header = header.filter(|h| !h.is_empty());
        // Before the comparison with a verified id, whose refusal repeats the header.
        if let Some(named) = header.filter(|named| !participant::valid_id(named)) {
            let refused = self
                .refuse_id(op, IdEntry::new("", named), &IdRefusal::Syntax)
                .await;
            return Err(A2aError::invalid_field("X-Participant-Id", refused));
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
            token_expires,
            ..Caller::default()
        })
    }

    /// The refusal of an `X-Participant-Id` header that is not UTF-8 (`raw`, shown with
    /// U+FFFD for what is not), audited like any other id that is none.
    pub async fn unreadable_participant_header(&self, op: Operation, raw: &[u8]) -> A2aError {
        let shown = String::from_utf8_lossy(raw);
        let refused = (self.refuse_id(op, IdEntry::new("", &shown), &IdRefusal::Syntax)).await;
        A2aError::invalid_field("X-Participant-Id", refused)
    }

    /// `id`, unless it is not a participant id, or is or looks like a reserved id (see
    /// [`Harness::reserved`]): no client request acts as the harness or its agents. A
    /// refusal is audited.
    pub async fn speaking_as(
        &self,
        op: Operation,
        tenant: &str,
        id: String,
    ) -> Result<String, A2aError> {
        let reserved = self.reserved().await?;
        match participant::check_id(&id, reserved, []) {
            Ok(()) => Ok(id),
            Err(refusal) => Err(A2aError::invalid_params(
                self.refuse_id(op, IdEntry::new(tenant, &id), &refusal)
                    .await,
            )),
        }
    }

    /// The ids nobody from outside may be or look like: the harness's agent id, every
    /// agent id it used before (recorded in the store at the first request that needs
    /// them, so the current one is reserved after the next `--agent-id` change), and every
    /// registry agent's id.
    pub async fn reserved(&self) -> Result<&Reserved, A2aError> {
        self.reserved
            .get_or_try_init(|| async {
                self.store.record_agent_id(&self.config.agent_id).await?;
                let mut ids = self.store.agent_ids().await?;
                ids.push(self.config.agent_id.clone());
                if let Some(remotes) = &self.remotes {
                    ids.extend(remotes.registry.agents().map(|a| a.id.clone()));
                }
                Ok::<_, crate::store::StoreError>(Reserved::new(ids))
            })
            .await
            .map_err(A2aError::from)
    }

    /// Whether the participants an envelope from `sender` leaves on a task (`after`,
    /// changed from `before`) may stand: the sender is not made an agent participant
    /// (which would let them speak as the agent), and each id it adds is a participant
    /// id, not a reserved one (unless listed as an agent: the harness and registry agents
    /// may be), and does not look like a reserved id or any other participant's. Only
    /// the task's creator or an admin gets this far (`TaskEnvelope`), so comparing with
    /// the members tells a stranger nothing. `entry` names the sender; a refusal names
    /// `field` and is audited.
    pub(crate) async fn check_roster(
        &self,
        op: Operation,
        entry: IdEntry<'_>,
        field: &str,
        before: &[Participant],
        after: &TaskExtension,
    ) -> Result<(), A2aError> {
        let was_agent = before
            .iter()
            .any(|b| b.id == entry.id && b.kind == ParticipantKind::Agent);
        if after.is_agent(entry.id) && !was_agent {
            let refused = (self.refuse_id(op, entry, &IdRefusal::OwnAgent)).await;
            return Err(A2aError::invalid_field(field, refused));
        }
        let reserved = self.reserved().await?;
        let ids = || after.participants.iter().map(|p| p.id.as_str());
        for p in (after.participants.iter()).filter(|p| before.iter().all(|b| b.id != p.id)) {
            let refusal = match participant::check_id(&p.id, reserved, ids()) {
                Err(IdRefusal::Reserved(_)) if p.kind == ParticipantKind::Agent => continue,
                Ok(()) => continue,
                Err(refusal) => refusal,
            };
            let refused = self
                .refuse_id(op, IdEntry { id: &p.id, ..entry }, &refusal)
                .await;
            return Err(A2aError::invalid_field(field, refused));
        }
        Ok(())
    }

    /// Audits the refusal of an id where it entered and says why, for the caller's
    /// error. An id that is not one is shown escaped and cut, and is audited under no
    /// participant (it cannot key the audit's quota).
    pub(crate) async fn refuse_id(
        &self,
        op: impl OperationName,
        entry: IdEntry<'_>,
        refusal: &IdRefusal,
    ) -> String {
        let shown = participant::shown(entry.id);
        let record = AuditRecord {
            at: Some(Timestamp::now()),
            tenant: entry.tenant.into(),
            operation: op.name().into(),
            task_id: entry.task_id.into(),
            message_id: entry.message_id.into(),
            participant: match refusal {
                IdRefusal::Syntax => String::new(),
                _ => entry.id.into(),
            },
            accepted: false,
            detail: format!("participant id {shown} refused: {refusal}"),
            ..Default::default()
        };
        tracing::info!(participant = %shown, op = op.name(), %refusal, "participant id refused");
        self.audit(&record).await;
        format!("participant id {shown} refused: {refusal}")
    }
}

/// Where an id entered, for its refusal's audit row.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct IdEntry<'a> {
    pub tenant: &'a str,
    pub task_id: &'a str,
    pub message_id: &'a str,
    pub id: &'a str,
}

impl<'a> IdEntry<'a> {
    pub fn new(tenant: &'a str, id: &'a str) -> Self {
        IdEntry {
            tenant,
            id,
            ..Default::default()
        }
    }
}

/// What an audit row names as the operation: an A2A operation's name, or another
/// entry's (a command, the inbox).
pub(crate) trait OperationName {
    fn name(&self) -> &str;
}

impl OperationName for Operation {
    fn name(&self) -> &str {
        Operation::name(*self)
    }
}

impl OperationName for &str {
    fn name(&self) -> &str {
        self
    }
}

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
    /// When the token that proved it stops being accepted (its `exp` plus the leeway): a
    /// stream it opened ends then, as if it were a stranger's. None without a token.
    pub token_expires: Option<std::time::Instant>,
    /// An answer link's (`ui::answer`, the link's token verified): the id of the request
    /// it answers. Its message may use the link's message id, which no one else's may, and
    /// is taken only while the task waits on that request (checked on the record its write
    /// is conditional on).
    pub answer_link: Option<String>,
    /// The trace the request is part of, from its `traceparent` (None unless traces are
    /// on): the parent of the request's span.
    pub trace_parent: Option<crate::traces::Remote>,
    /// The request's `Last-Event-ID` header: the SSE id of the last event a client had of
    /// a stream it resumes (SubscribeToTask reads it).
    pub last_event_id: Option<String>,
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
