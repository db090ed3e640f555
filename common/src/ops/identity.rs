//! Who a request comes from: the participant a token authenticates (`jwt`), or the one a
//! request names (`none`), never the harness itself.

use super::Harness;
use crate::a2a::{A2aError, Operation, Timestamp};
use crate::auth::AuthError;
use crate::store::{AuditRecord, TaskRecord};

impl Harness {
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
    /// An answer link's (`ui::answer`, the link's token verified): its message may use
    /// the link's message id, which no one else's may.
    pub answer_link: bool,
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
