//! Who may see and do what through the harness: a task is visible to its participants
//! only (anything else is the same "not found"), and an action on it is permitted by the
//! permission table.

use std::sync::Arc;

use super::{Caller, Harness};
use crate::a2a::A2aError;
use crate::push::Notifier;
use crate::store::TaskRecord;

impl Harness {
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
}
