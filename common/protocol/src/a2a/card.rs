//! The agent card as served: its JSON and the caching headers (ETag, Last-Modified) of
//! `/.well-known/agent-card.json`. What a deployment's card says is `ops::card`'s.

use sha2::{Digest, Sha256};

use super::types::AgentCard;

pub const PROTOCOL_VERSION: &str = "1.0";

/// The card and what its caching headers need, computed once.
#[derive(Debug, Clone)]
pub struct PublishedCard {
    pub card: AgentCard,
    pub json: Vec<u8>,
    pub etag: String,
    pub last_modified: String,
}

impl PublishedCard {
    pub fn new(card: AgentCard) -> Self {
        let json = serde_json::to_vec(&card).unwrap_or_default();
        let digest = Sha256::digest(&json);
        let etag = format!(
            "\"{}\"",
            digest
                .iter()
                .take(16)
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        );
        let last_modified = chrono::Utc::now()
            .format("%a, %d %b %Y %H:%M:%S GMT")
            .to_string();
        PublishedCard {
            card,
            json,
            etag,
            last_modified,
        }
    }

    /// Whether an `If-None-Match` value names this card's ETag.
    pub fn matches(&self, if_none_match: &str) -> bool {
        if_none_match
            .split(',')
            .map(|t| t.trim().trim_start_matches("W/"))
            .any(|t| t == "*" || t == self.etag)
    }
}
