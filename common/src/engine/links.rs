//! Links between tasks of this harness: a parent names its sub-tasks and a sub-task its
//! parents (task extension), and a link counts only when both sides name each other in
//! one tenant, so a client cannot link itself to someone else's task.

use crate::store::{Store, StoreError, TaskRecord};

/// Which side of a link a task names another from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// `from` names `id` in its `sub_tasks`; `id` must name `from` in its `parent_tasks`.
    SubTask,
    /// `from` names `id` in its `parent_tasks`; `id` must name `from` in its `sub_tasks`.
    Parent,
}

/// The ids of the tasks of this harness `child` names as its parents (a remote agent's
/// are not ours to wake).
pub fn local_parents(child: &TaskRecord) -> Vec<String> {
    (child.ext().map(|e| e.parent_tasks).unwrap_or_default())
        .into_iter()
        .filter(|p| p.agent.is_none())
        .map(|p| p.task_id)
        .collect()
}

/// The task `id` that `from` links to as `link`: None (as if it did not exist) unless it
/// is in `from`'s tenant and links back.
pub async fn linked(
    store: &dyn Store,
    from: &TaskRecord,
    id: &str,
    link: Link,
) -> Result<Option<TaskRecord>, StoreError> {
    let Some(other) = store.load_task(id).await? else {
        return Ok(None);
    };
    let back = other.ext().is_some_and(|e| {
        let refs = match link {
            Link::SubTask => e.parent_tasks,
            Link::Parent => e.sub_tasks,
        };
        refs.iter()
            .any(|r| r.agent.is_none() && r.task_id == from.id())
    });
    if other.tenant != from.tenant || !back {
        tracing::warn!(
            task_id = from.id(),
            linked = id,
            "a one-sided link is ignored"
        );
        return Ok(None);
    }
    Ok(Some(other))
}
