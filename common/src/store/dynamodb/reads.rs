//! Reading tasks back: a head and the parts a reader wants (one Query per kind), heads in
//! batches, a task's event log page by page, and the sweep index's due tasks.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::KeysAndAttributes;

use super::chunks::{joined, MAX_CHUNKS};
use super::errors::{corrupt, unavailable};
use super::items::{
    decode_head, event_sk, get_s, part_items, part_prefix, part_sk, s, task_pk, Item,
};
use super::schema::{EVENTS_CHUNKED, LEASED, LISTED, SWEEP_INDEX, WOKEN};
use super::DynamoStore;
use crate::store::layout::{self, Counts, Listing, PartKind, Want};
use crate::store::{Admit, Due, LoggedEvent, StoreError, TaskRecord};

impl DynamoStore {
    /// The Query over task `task_id`'s parts of kind `kind` at the indexes `range`,
    /// consistent, in sort order unless the caller turns it.
    fn parts_query(
        &self,
        task_id: &str,
        kind: PartKind,
        range: &std::ops::Range<u64>,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        self.client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
            .expression_attribute_values(":pk", s(task_pk(task_id)))
            .expression_attribute_values(":from", s(part_sk(kind, range.start)))
            // `~` sorts after the digits: the last part's continuations are in range.
            .expression_attribute_values(
                ":to",
                s(format!("{}~~", part_sk(kind, range.end.saturating_sub(1)))),
            )
            .consistent_read(true)
    }

    /// The parts of kind `kind` at the indexes `range` (one Query, paged), as `attach`
    /// takes them.
    async fn read_parts(
        &self,
        task_id: &str,
        kind: PartKind,
        range: std::ops::Range<u64>,
    ) -> Result<Vec<(PartKind, u64, String)>, StoreError> {
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let out = self
                .parts_query(task_id, kind, &range)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(unavailable)?;
            items.extend(out.items().iter().cloned());
            start = out.last_evaluated_key().cloned();
            if start.is_none() {
                break;
            }
        }
        joined(&items)?
            .into_iter()
            .map(|(item, payload)| Ok((kind, part_index(item, kind)?, payload)))
            .collect()
    }

    /// Task `task_id`'s history messages at the indexes `range`, newest first, while they
    /// hold at most `budget` bytes together (one Query, read backwards, paged no further
    /// than the budget), as `attach` takes them.
    async fn read_newest_history(
        &self,
        task_id: &str,
        range: std::ops::Range<u64>,
        budget: usize,
    ) -> Result<Vec<(PartKind, u64, String)>, StoreError> {
        let kind = PartKind::History;
        let mut items = Vec::new();
        let mut read = 0;
        let mut start: Option<Item> = None;
        loop {
            let out = self
                .parts_query(task_id, kind, &range)
                .scan_index_forward(false)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(unavailable)?;
            for item in out.items() {
                read += item
                    .get("data")
                    .and_then(|d| d.as_s().ok())
                    .map_or(0, String::len);
                items.push(item.clone());
            }
            start = out.last_evaluated_key().cloned();
            if start.is_none() || read > budget {
                break;
            }
        }
        // In sort order again: a message's continuations follow it (one whose first item
        // the budget left unread is left out).
        items.reverse();
        let mut spent = 0;
        let mut parts = Vec::new();
        for (item, payload) in joined(&items)?.into_iter().rev() {
            spent += payload.len();
            if spent > budget {
                break;
            }
            parts.push((kind, part_index(item, kind)?, payload));
        }
        Ok(parts)
    }

    /// The record of a head item with the parts `want` asks for (one Query per kind, run
    /// together); None, with nothing more read, unless `admit` passes the head.
    pub(super) async fn with_parts(
        &self,
        item: &Item,
        want: Want,
        admit: &Admit<'_>,
    ) -> Result<Option<TaskRecord>, StoreError> {
        Ok(self.sized(item, want, admit).await?.map(|(rec, _)| rec))
    }

    /// [`Self::with_parts`], and the bytes of stored JSON it was read from. History within
    /// a budget (`want.history_bytes`) is read newest first, no further than the budget.
    pub(super) async fn sized(
        &self,
        item: &Item,
        mut want: Want,
        admit: &Admit<'_>,
    ) -> Result<Option<(TaskRecord, usize)>, StoreError> {
        let (mut rec, counts) = decode_head(item)?;
        if !admit(&rec) {
            return Ok(None);
        }
        let id = &rec.task.id;
        let reads = (PartKind::ALL.into_iter())
            .filter(|k| want.reads(*k, &counts))
            .map(|k| async move {
                let range = want.range(k, &counts);
                match (k, want.history_bytes) {
                    (PartKind::History, Some(budget)) => {
                        self.read_newest_history(id, range, budget).await
                    }
                    _ => self.read_parts(id, k, range).await,
                }
            });
        let parts = futures::future::try_join_all(reads).await?.concat();
        if want.history_bytes.is_some() {
            let kept = parts.iter().filter(|p| p.0 == PartKind::History).count();
            want = want.keeping(kept);
        }
        let bytes = get_s(item, "record")?.len() + parts.iter().map(|p| p.2.len()).sum::<usize>();
        layout::attach(&mut rec, &counts, want, parts)?;
        if want == Want::WHOLE {
            if counts == Counts::default() {
                self.write_out_inline_parts(&mut rec).await?;
            }
            rec.stored.listing = item.contains_key(LISTED).then(|| Listing::of(&rec));
            rec.stored.events_chunked = item
                .get(EVENTS_CHUNKED)
                .and_then(|v| v.as_n().ok())
                .map(|v| v != "0");
        }
        Ok(Some((rec, bytes)))
    }

    /// A head written before the layout holds its lists inline: they are written out as
    /// parts now (batches, outside any commit: more than one transaction could hold), so
    /// the record's next commit writes only its head and what is new.
    async fn write_out_inline_parts(&self, rec: &mut TaskRecord) -> Result<(), StoreError> {
        // What it already holds is not refused: it is only moved.
        let split = layout::split(rec, &crate::config::TaskBounds::NONE)?;
        if split.parts.is_empty() {
            return Ok(());
        }
        let items: Vec<Item> = (split.parts.iter())
            .flat_map(|p| part_items(rec, p))
            .collect();
        self.put_batches(&items).await?;
        rec.stored = split.stored;
        Ok(())
    }

    /// The task's head and the parts `want` asks for. A read that meets a part torn by a
    /// concurrent rewrite (an artifact being extended) is made again.
    pub(super) async fn load(
        &self,
        task_id: &str,
        want: Want,
        admit: &Admit<'_>,
    ) -> Result<Option<TaskRecord>, StoreError> {
        let mut attempt = 0;
        loop {
            let out = self
                .client
                .get_item()
                .table_name(&self.table)
                .key("pk", s(task_pk(task_id)))
                .key("sk", s("TASK"))
                .consistent_read(true)
                .send()
                .await
                .map_err(unavailable)?;
            let Some(item) = out.item() else {
                return Ok(None);
            };
            match self.with_parts(item, want, admit).await {
                Err(StoreError::Corrupt(_)) if attempt < 2 => attempt += 1,
                other => return other,
            }
        }
    }

    /// The heads of the tasks `ids`, read consistently, in the order of `ids` (one
    /// BatchGetItem per 100; a task gone since is left out). Keys throttling leaves
    /// unprocessed are asked for again a bounded number of times, then are an error.
    pub(super) async fn heads(&self, ids: &[String]) -> Result<Vec<Item>, StoreError> {
        let mut found: HashMap<String, Item> = HashMap::new();
        for chunk in ids.chunks(100) {
            let keys = chunk
                .iter()
                .map(|id| HashMap::from([("pk".into(), s(task_pk(id))), ("sk".into(), s("TASK"))]))
                .collect::<Vec<_>>();
            let mut pending = Some(
                KeysAndAttributes::builder()
                    .set_keys(Some(keys))
                    .consistent_read(true)
                    .build()
                    .map_err(corrupt)?,
            );
            let mut attempt = 0;
            while let Some(request) = pending.take() {
                let out = self
                    .client
                    .batch_get_item()
                    .request_items(&self.table, request)
                    .send()
                    .await
                    .map_err(unavailable)?;
                for item in out
                    .responses()
                    .and_then(|r| r.get(&self.table))
                    .into_iter()
                    .flatten()
                {
                    found.insert(get_s(item, "pk")?.to_owned(), item.clone());
                }
                pending = (out.unprocessed_keys())
                    .and_then(|u| u.get(&self.table))
                    .filter(|k| !k.keys().is_empty())
                    .cloned();
                if pending.is_some() {
                    attempt += 1;
                    if attempt > 5 {
                        return Err(StoreError::Unavailable(
                            "task heads left unread after 5 attempts".into(),
                        ));
                    }
                    tokio::time::sleep(Duration::from_millis(50 << attempt)).await;
                }
            }
        }
        Ok(ids
            .iter()
            .filter_map(|id| found.remove(&task_pk(id)))
            .collect())
    }

    /// [`Store::read_events`](crate::store::Store::read_events).
    pub(super) async fn events_after(
        &self,
        task_id: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        let from = after.map(|a| a + 1).unwrap_or(0);
        let limit = limit.clamp(1, 1000);
        // Pages until `limit` whole events are read or the log ends: a page (1 MB at most)
        // may end inside a long event, which must not pass for the end of the log.
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
                .expression_attribute_values(":pk", s(task_pk(task_id)))
                .expression_attribute_values(":from", s(event_sk(from)))
                .expression_attribute_values(":to", s(event_sk(u64::MAX)))
                .consistent_read(true)
                // Room for the continuations of long events.
                .limit((limit + MAX_CHUNKS) as i32)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(unavailable)?;
            items.extend(out.items().iter().cloned());
            start = out.last_evaluated_key().cloned();
            if start.is_none() || joined(&items)?.len() >= limit {
                break;
            }
        }
        joined(&items)?
            .into_iter()
            .take(limit)
            .map(|(item, payload)| {
                let sk = get_s(item, "sk")?;
                let seq = sk.trim_start_matches("EV#").parse().map_err(corrupt)?;
                let event = serde_json::from_str(&payload).map_err(corrupt)?;
                Ok(LoggedEvent { seq, event })
            })
            .collect()
    }

    /// [`Store::due_tasks`](crate::store::Store::due_tasks): the two partitions of the
    /// sweep index, read together.
    pub(super) async fn due(
        &self,
        leases_before: i64,
        woken_before: i64,
        limit: usize,
    ) -> Result<Due, StoreError> {
        let ids = |partition: &'static str, before: i64| async move {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(SWEEP_INDEX)
                .key_condition_expression("gsi2pk = :p AND gsi2sk < :before")
                .expression_attribute_values(":p", s(partition))
                .expression_attribute_values(":before", s(format!("{:015}", before.max(0))))
                .limit(limit.clamp(1, 1000) as i32)
                .send()
                .await
                .map_err(unavailable)?;
            (out.items().iter())
                .map(|item| Ok(get_s(item, "pk")?.trim_start_matches("TASK#").to_owned()))
                .collect::<Result<Vec<String>, StoreError>>()
        };
        let (leased, woken) =
            futures::try_join!(ids(LEASED, leases_before), ids(WOKEN, woken_before))?;
        Ok(Due { leased, woken })
    }
}

/// The index a part item's sort key names.
fn part_index(item: &Item, kind: PartKind) -> Result<u64, StoreError> {
    let sk = get_s(item, "sk")?;
    sk[part_prefix(kind).len()..].parse().map_err(corrupt)
}
