//! Payloads longer than one item holds: split into items that follow the first in sort
//! order, all named by the task version that wrote them, and joined again on reading, so
//! no item passes 64 KB and no reader joins the chunks of two writes.

use std::collections::HashMap;

use super::items::{get_n, get_s, n, s, Item};
use crate::store::StoreError;

/// Most bytes of a payload one item holds; the rest continues in items of its own, so no
/// item is over 64 KB (with its keys and attributes).
pub const CHUNK_BYTES: usize = 60 * 1024;
/// Most items one payload spans (a transaction holds at most 4 MB).
pub(super) const MAX_CHUNKS: usize = 4 * 1024 * 1024 / CHUNK_BYTES + 1;

/// The items of `payload` (attribute `data`) under `first`'s keys: `first` with the
/// payload's first chunk and, when there are more, how many items it spans (`chunks`);
/// then one item per further chunk, `<sk>~<n>`. Every item names the task version that
/// wrote it (`v`), so a reader never joins chunks of two writes of a rewritten part.
pub(super) fn chunked(mut first: Item, payload: &str, version: u64) -> Vec<Item> {
    let mut chunks = Vec::new();
    let mut rest = payload;
    while rest.len() > CHUNK_BYTES {
        let mut cut = CHUNK_BYTES;
        while !rest.is_char_boundary(cut) {
            cut -= 1;
        }
        chunks.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    chunks.push(rest);
    let (pk, sk) = (first.get("pk").cloned(), first.get("sk").cloned());
    if chunks.len() > 1 {
        first.insert("chunks".into(), n(chunks.len()));
    }
    first.insert("data".into(), s(chunks[0]));
    first.insert("v".into(), n(version));
    let sk = sk.and_then(|v| v.as_s().ok().cloned()).unwrap_or_default();
    let mut items = vec![first];
    for (i, chunk) in chunks.iter().enumerate().skip(1) {
        let mut item = HashMap::from([
            ("sk".to_owned(), s(format!("{sk}~{i:03}"))),
            ("data".to_owned(), s(*chunk)),
            ("v".to_owned(), n(version)),
        ]);
        if let Some(pk) = &pk {
            item.insert("pk".into(), pk.clone());
        }
        items.push(item);
    }
    items
}

/// A payload's first (or only) chunk: `data`, or `event` in events written before
/// payloads could be chunked.
fn first_chunk(item: &Item) -> Result<&str, StoreError> {
    get_s(item, "data").or_else(|_| get_s(item, "event"))
}

/// The payloads of `items` (read in sort-key order), each joined from its chunks, with
/// the item that holds its first. A payload whose chunks the page cut off, or that a
/// concurrent rewrite tore (continuations of another write), is left out, as are stale
/// continuations (of a longer payload the item held before).
pub(super) fn joined(items: &[Item]) -> Result<Vec<(&Item, String)>, StoreError> {
    let mut out: Vec<(&Item, String)> = Vec::new();
    let mut missing = 0usize;
    let mut write = None;
    for item in items {
        let sk = get_s(item, "sk")?;
        if sk.contains('~') {
            if missing > 0 && item.get("v") != write {
                out.pop();
                missing = 0;
            } else if missing > 0 {
                if let Some((_, payload)) = out.last_mut() {
                    payload.push_str(get_s(item, "data")?);
                }
                missing -= 1;
            }
            continue;
        }
        if missing > 0 {
            out.pop();
        }
        let chunks = item
            .get("chunks")
            .map(|_| get_n(item, "chunks"))
            .transpose()?;
        missing = chunks.unwrap_or(1).saturating_sub(1) as usize;
        write = item.get("v");
        out.push((item, first_chunk(item)?.to_owned()));
    }
    if missing > 0 {
        out.pop();
    }
    Ok(out)
}
