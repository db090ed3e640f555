//! The listing index (`gsi1`): a task's item per member (and one for the member it waits
//! on), kept up by each commit, and ListTasks as a Query on the caller's own partition, so
//! its cost follows the caller's tasks, not the tenant's.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{Delete, Put, Select, TransactWriteItem};

use super::errors::{corrupt, unavailable};
use super::items::{
    get_s, listing_pk, listing_sk, member_item, member_sk, n, s, task_pk, waiting_item, waiting_pk,
    waiting_sk, Item,
};
use super::schema::{INDEX, LISTED};
use super::DynamoStore;
use crate::store::layout::{self, Listing, Want};
use crate::store::{Cursor, PageBytes, Store, StoreError, TaskPage, TaskQuery, TaskRecord};

/// Tasks of a ListTasks page whose parts are read at once: each read holds up to a page's
/// bytes of history ([`RESPONSE_BYTES`](crate::config::RESPONSE_BYTES)), so this many
/// bound what a page takes in memory while it is read.
const READS_AT_ONCE: usize = 4;

impl DynamoStore {
    /// The listing index's writes in a commit of `rec`: every member's item again when
    /// the task sorts or filters differently (its status or state changed), a new
    /// member's, and a delete of a gone member's; nothing when the index has it as it is.
    pub(super) fn listing_writes(
        &self,
        rec: &TaskRecord,
        split: &layout::Split,
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        // The listing as this commit stores it (computed once, by the split).
        let now = split
            .stored
            .listing
            .clone()
            .unwrap_or_else(|| Listing::of(rec));
        let was = rec.stored.listing.as_ref();
        let moved = was.is_none_or(|w| w.status_ms != now.status_ms || w.state != now.state);
        let had = |p: &String| was.is_some_and(|w| w.members.contains(p));
        let listed = |p: &&String| self.unlisted.as_ref() != Some(*p);
        let expires = self.expiry(rec);
        let mut writes = Vec::new();
        for p in (now.members.iter().filter(listed)).filter(|p| moved || !had(p)) {
            let put = Put::builder()
                .table_name(&self.table)
                .set_item(Some(member_item(rec, p, expires.as_ref())))
                .build()
                .map_err(corrupt)?;
            writes.push(TransactWriteItem::builder().put(put).build());
        }
        let delete = |sk: String| -> Result<TransactWriteItem, StoreError> {
            let delete = Delete::builder()
                .table_name(&self.table)
                .key("pk", s(task_pk(&rec.task.id)))
                .key("sk", s(sk))
                .build()
                .map_err(corrupt)?;
            Ok(TransactWriteItem::builder().delete(delete).build())
        };
        for p in was.iter().flat_map(|w| &w.members).filter(listed) {
            if !now.members.contains(p) {
                writes.push(delete(member_sk(p))?);
            }
        }
        // The member it waits on: again when it sorts differently, gone when it waits no more.
        let waited = was.and_then(|w| w.waiting.as_ref());
        if let Some(p) = now.waiting.as_ref().filter(listed) {
            if moved || waited != Some(p) {
                let put = Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(waiting_item(rec, p)))
                    .build()
                    .map_err(corrupt)?;
                writes.push(TransactWriteItem::builder().put(put).build());
            }
        }
        if let Some(p) = waited.filter(listed) {
            if now.waiting.as_ref() != Some(p) {
                writes.push(delete(waiting_sk(p))?);
            }
        }
        Ok(writes)
    }

    /// Writes the listing items of every task whose head was written before the listing
    /// index (a head without `listed`; ListTasks shows it only once this has run or it is
    /// committed again): a Scan of the table, then per such task a commit of it as it is.
    /// Safe beside running drives (each commit is conditional; a conflict is read again).
    /// Returns how many tasks it listed.
    pub async fn backfill_listing(&self) -> Result<u64, StoreError> {
        let mut listed = 0;
        let mut start: Option<Item> = None;
        loop {
            let out = self
                .client
                .scan()
                .table_name(&self.table)
                .filter_expression("sk = :task AND attribute_not_exists(#listed)")
                .expression_attribute_names("#listed", LISTED)
                .expression_attribute_values(":task", s("TASK"))
                .projection_expression("pk")
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(unavailable)?;
            for item in out.items() {
                let id = get_s(item, "pk")?.trim_start_matches("TASK#");
                loop {
                    let Some(rec) = self.load_task(id).await? else {
                        break;
                    };
                    if rec.stored.listing.is_some() {
                        break;
                    }
                    match self.commit(&rec, rec.version, &[], None).await {
                        Ok(_) => {
                            listed += 1;
                            break;
                        }
                        Err(StoreError::Conflict { .. }) => continue,
                        // One task that cannot be written (too large a roster for one
                        // transaction) stops no other.
                        Err(e) => {
                            tracing::warn!(task_id = %id, error = %e, "could not list the task");
                            break;
                        }
                    }
                }
            }
            start = out.last_evaluated_key().cloned();
            if start.is_none() {
                return Ok(listed);
            }
        }
    }

    /// [`Store::list_tasks`].
    pub(super) async fn listing_page(&self, q: &TaskQuery) -> Result<TaskPage, StoreError> {
        let (partition, sort) = if q.waiting {
            (
                waiting_pk(&q.tenant, &q.participant),
                waiting_sk(&q.participant),
            )
        } else {
            (
                listing_pk(&q.tenant, &q.participant),
                member_sk(&q.participant),
            )
        };
        let mut filters = Vec::new();
        let mut values: Item = HashMap::from([(":m".to_owned(), s(&partition))]);
        let mut names = HashMap::new();
        if let Some(ctx) = &q.context_id {
            filters.push("context_id = :c");
            values.insert(":c".into(), s(ctx));
        }
        if let Some(state) = q.state {
            filters.push("#state = :st");
            names.insert("#state".to_owned(), "state".to_owned());
            values.insert(":st".into(), n(state.number()));
        }
        let mut key = "gsi1pk = :m".to_owned();
        if let Some(after) = q.status_after {
            key.push_str(" AND gsi1sk >= :after");
            values.insert(":after".into(), s(format!("{:015}", after.millis().max(0))));
        }
        let filter = (!filters.is_empty()).then(|| filters.join(" AND "));
        let names = (!names.is_empty()).then_some(names);
        let query = || {
            self.client
                .query()
                .table_name(&self.table)
                .index_name(INDEX)
                .key_condition_expression(&key)
                .set_filter_expression(filter.clone())
                .set_expression_attribute_names(names.clone())
                .set_expression_attribute_values(Some(values.clone()))
        };

        // The participant's own partition: its size, not the tenant's, is what it costs.
        let mut total = 0u64;
        let mut start: Option<Item> = None;
        loop {
            let out = query()
                .select(Select::Count)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(unavailable)?;
            total += out.count().max(0) as u64;
            start = out.last_evaluated_key().cloned();
            if start.is_none() {
                break;
            }
        }

        // The index is eventually consistent: each head, read consistently, has the last
        // word on whether the task is listed (a member just removed is not shown it).
        let admit = |rec: &TaskRecord| {
            rec.members().contains(&q.participant)
                && q.context_id
                    .as_ref()
                    .is_none_or(|c| *c == rec.task.context_id)
                && q.state.is_none_or(|st| st == rec.state())
                && q.status_after
                    .is_none_or(|a| rec.status_millis() >= a.millis())
                && (!q.waiting || rec.waiting_on().as_ref() == Some(&q.participant))
        };
        let want = Want::view(q.history, q.artifacts);
        let mut tasks = Vec::new();
        // Where each task stands in the index: the next page starts after it there, even
        // if its head has moved on since.
        let mut listed_at: HashMap<String, i64> = HashMap::new();
        let mut start = q.cursor.as_ref().map(|c| {
            HashMap::from([
                ("pk".to_owned(), s(task_pk(&c.task_id))),
                ("sk".to_owned(), s(&sort)),
                ("gsi1pk".to_owned(), s(&partition)),
                (
                    "gsi1sk".to_owned(),
                    s(listing_sk(c.status_millis, &c.task_id)),
                ),
            ])
        });
        // Tasks in order until the next would pass the page's bytes (the first always goes
        // in): the page ends there, and the next one starts after it.
        let mut page = PageBytes::default();
        let mut full = false;
        while tasks.len() <= q.page_size && !full {
            let out = query()
                .scan_index_forward(false)
                .limit((q.page_size + 1 - tasks.len()) as i32)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(unavailable)?;
            let mut ids = Vec::new();
            for item in out.items() {
                let id = get_s(item, "pk")?.trim_start_matches("TASK#").to_owned();
                let at = get_s(item, "gsi1sk")?.split('#').next().unwrap_or_default();
                listed_at.insert(id.clone(), at.parse::<i64>().map_err(corrupt)?);
                ids.push(id);
            }
            let heads = self.heads(&ids).await?;
            for group in heads.chunks(READS_AT_ONCE) {
                let reads = (group.iter()).map(|item| self.sized(item, want, &admit));
                for (rec, bytes) in (futures::future::try_join_all(reads).await?)
                    .into_iter()
                    .flatten()
                {
                    if !page.takes(bytes) {
                        full = true;
                        break;
                    }
                    tasks.push(rec);
                }
                if full {
                    break;
                }
            }
            start = out.last_evaluated_key().cloned();
            if start.is_none() {
                break;
            }
        }
        let next = if full || tasks.len() > q.page_size {
            tasks.truncate(q.page_size);
            tasks.last().map(|t| Cursor {
                status_millis: (listed_at.get(t.id()).copied())
                    .unwrap_or_else(|| t.status_millis()),
                task_id: t.task.id.clone(),
            })
        } else {
            None
        };
        Ok(TaskPage { tasks, next, total })
    }
}
