//! Personal channels: a participant's own webhook (a chat incoming-webhook URL, say), a
//! pushed [`Medium`] beside the task itself. The harness posts to it each request
//! addressed to that participant (a help request, a task assigned to them), after the
//! request is committed, with a signed link that answers it once.
//!
//! Configured by a TOML file (`--personal-channels` / `HARNESS_PERSONAL_CHANNELS`), or on
//! AWS by the same text in a Secrets Manager secret (`HARNESS_PERSONAL_CHANNELS_SECRET`),
//! one table per participant: `[bob]` with `url = "https://…"`. A URL is a secret (an
//! incoming-webhook URL is its own credential): it stays in the configuration, is never
//! stored, logged or shown, and is called through the same SSRF guard as push webhooks.
//!
//! An answer link is `<public URL>/ui/answer#<token>`: the token rides in the fragment, so
//! no server or proxy log holds it. It names the task, the request and the participant,
//! expires after [`LINK_LIFETIME`], and is signed with HMAC-SHA256 under a key derived
//! from the push key. It answers its request once: when the request is no longer the one
//! pending, the link is refused. Its answer is sent under a message id of the request's
//! own that only the harness can make ([`AnswerLinks::message_id`]: `answer:` and a keyed
//! hash of what the token names), so no one can take it first; intake refuses any other
//! sender's message under an id with that prefix.
//!
//! Posts are held to two hourly quotas, counted in the store ([`Store::take_quota`]) so
//! they hold across processes: per sender (the party on whose word a post is made,
//! [`Addressed::from`]: a `/task`'s verified sender; for what the agent asks, the
//! participant who spoke last on the task; never the reporter a task's creator named) and
//! per recipient (whoever asks, so a sender that changes the id it claims in `none` mode
//! still cannot flood one person). The recipient's quota is well above a sender's (200
//! and 60 by default), so no one account takes more than a third of a person's channel
//! an hour. A post over either, or on no one's word, is not made: it is logged and
//! counted (`personal_posts_held`), and the request stays in the task and the inbox.

use crate::config::Source;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use reqwest::Url;
use ring::hmac;
use serde::Deserialize;

use crate::engine::medium::{Addressed, Asks, Medium};
use crate::https::target::{Targets, CLEARTEXT_RULE};
use crate::push::Notifier;
use crate::sealing::PushKey;
use crate::store::{Quota, Store};

/// How long an answer link stays good.
pub const LINK_LIFETIME: Duration = Duration::from_secs(7 * 24 * 3600);
/// Where the answer page is served, under the harness's public URL.
pub const ANSWER_PATH: &str = "/ui/answer";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    url: String,
}

/// What a valid answer link says: who may answer which request of which task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerClaim {
    pub task_id: String,
    pub request_id: String,
    pub participant: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LinkError {
    #[error("this answer link is not valid")]
    Invalid,
    #[error("this answer link has expired")]
    Expired,
}

pub struct PersonalChannels {
    urls: HashMap<String, Url>,
    links: AnswerLinks,
    notifier: Arc<Notifier>,
    limits: PostLimits,
}

/// The hourly quotas of posts to personal channels, and the store that counts them.
pub struct PostLimits {
    pub store: Arc<dyn Store>,
    /// Posts made on one participant's word an hour.
    pub per_sender: u64,
    /// Posts to one participant an hour.
    pub per_recipient: u64,
}

impl PostLimits {
    /// Counts a post of `request` against its sender's quota, then its recipient's;
    /// whether it may be made. Past either, without a sender, or when the store cannot
    /// count, it may not (fails closed: the request is in the task either way).
    async fn take(&self, request: &Addressed) -> bool {
        if request.from.is_empty() {
            tracing::warn!(task_id = %request.task_id, participant = %request.to, "personal channel post held: made on no one's word");
            return false;
        }
        let hour = crate::store::hour_of(crate::task::lease::now_ms());
        let quotas = [
            (Quota::PostsBySender, &request.from, self.per_sender),
            (Quota::PostsToRecipient, &request.to, self.per_recipient),
        ];
        for (quota, participant, limit) in quotas {
            match self.store.take_quota(quota, participant, hour, limit).await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::warn!(task_id = %request.task_id, participant = %request.to, sender = %request.from, quota = quota.name(), limit, "personal channel post held: over its hourly quota");
                    return false;
                }
                Err(why) => {
                    tracing::warn!(task_id = %request.task_id, participant = %request.to, %why, "personal channel post held: its quota could not be counted");
                    return false;
                }
            }
        }
        true
    }
}

/// Signs and checks answer links.
pub struct AnswerLinks {
    key: hmac::Key,
    /// Makes the message ids of their answers.
    ids: hmac::Key,
    base: String,
}

/// How every answer link's message id starts; no one else may send under such an id.
pub const ANSWER_ID_PREFIX: &str = "answer:";

/// Why an answer link is refused once its request is not the one its task waits on.
pub const NO_LONGER_OPEN: &str = "this question was already answered or is no longer open";

impl std::fmt::Debug for PersonalChannels {
    // The URLs are secrets: only who has a channel.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut who: Vec<&String> = self.urls.keys().collect();
        who.sort();
        f.debug_struct("PersonalChannels")
            .field("participants", &who)
            .finish()
    }
}

impl PersonalChannels {
    /// The channels `source` holds; links point at `public_url`.
    pub fn load(
        source: &Source,
        key: &PushKey,
        public_url: &str,
        notifier: Arc<Notifier>,
        limits: PostLimits,
    ) -> Result<Self, String> {
        let text = source.read("personal channels")?;
        Self::parse(&text, key, public_url, notifier, limits)
            .map_err(|e| format!("personal channels {source:?}: {e}"))
    }

    pub fn parse(
        text: &str,
        key: &PushKey,
        public_url: &str,
        notifier: Arc<Notifier>,
        limits: PostLimits,
    ) -> Result<Self, String> {
        if public_url.is_empty() {
            return Err(
                "personal channels need the harness's public URL for their answer \
                 links (HARNESS_PUBLIC_URL)"
                    .into(),
            );
        }
        // Its links' tokens are posted to the channel and back to the public URL: neither
        // in the clear, unless allowed.
        let targets = notifier.targets();
        if crate::config::http_url(public_url).is_some_and(|u| !targets.permits_scheme(&u)) {
            return Err(format!(
                "personal channels' answer links point at the public URL {public_url} \
                 (HARNESS_PUBLIC_URL), which {CLEARTEXT_RULE}"
            ));
        }
        let urls = parse_urls(text, targets)?;
        Ok(PersonalChannels {
            urls,
            links: AnswerLinks::new(key, public_url),
            notifier,
            limits,
        })
    }

    pub fn links(&self) -> &AnswerLinks {
        &self.links
    }
}

#[async_trait::async_trait]
impl Medium for PersonalChannels {
    fn reaches(&self, participant: &str) -> bool {
        self.urls.contains_key(participant)
    }

    /// Posts `request` to its addressee's webhook, within the hourly quotas
    /// ([`PostLimits`]). A failure is logged (without the URL).
    async fn send(&self, request: &Addressed) {
        let Some(url) = self.urls.get(&request.to) else {
            return;
        };
        if !self.limits.take(request).await {
            crate::metrics::record(crate::metrics::Event::PersonalPostHeld);
            return;
        }
        let now = crate::task::lease::now_ms() / 1000;
        let link = self.links.link(request, now);
        let asked = match request.asks {
            Asks::Answer => "You are asked on the task",
            Asks::Work => "A task is assigned to you:",
        };
        let reminder = if request.reminder { "Reminder: " } else { "" };
        let due = (request.due.as_ref())
            .map(|d| format!("\nAnswer by {d}."))
            .unwrap_or_default();
        let body = serde_json::json!({
            // Escaped as chat webhooks read markup, so a name or question cannot make a
            // link of its own or mention everyone.
            "text": format!(
                "{reminder}{asked} \"{}\": {}{due}\nAnswer: {link}",
                escape_markup(&request.task_name),
                escape_markup(&request.text)
            ),
            "task_id": request.task_id,
            "question": request.text,
            "answer_url": link,
            "reply_by": request.due,
            "reminder": request.reminder,
        });
        if let Err(why) = self.notifier.post_json(url, &body).await {
            tracing::warn!(task_id = %request.task_id, participant = %request.to, %why, "personal channel not reached");
        }
    }
}

/// Each participant's URL from the file's text. No error holds a URL: they are secrets.
fn parse_urls(text: &str, targets: &Targets) -> Result<HashMap<String, Url>, String> {
    // The parser's messages quote values, which may be URLs: only where it went wrong.
    let entries: HashMap<String, Entry> = toml::from_str(text).map_err(|e| {
        let line = crate::config::toml_line(text, &e);
        format!(
            "line {line}: expected one table per participant holding only url = \"https://...\""
        )
    })?;
    let mut urls = HashMap::new();
    for (participant, entry) in entries {
        crate::ext::participant::parse_id(&participant)?;
        // Not the URL itself in the error: it is a secret.
        let url = crate::config::http_url(&entry.url)
            .ok_or_else(|| format!("[{participant}] url is not an http(s) URL"))?;
        if !targets.permits_scheme(&url) {
            return Err(format!("[{participant}] url {CLEARTEXT_RULE}"));
        }
        urls.insert(participant, url);
    }
    Ok(urls)
}

/// `&`, `<` and `>` as entities: the characters chat webhooks (Slack's `<url|text>`,
/// `<!channel>`) read as markup.
fn escape_markup(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

impl AnswerLinks {
    /// Links to `<public_url>/ui/answer`, signed with a key derived from the push key.
    pub fn new(key: &PushKey, public_url: &str) -> Self {
        AnswerLinks {
            key: hmac::Key::new(
                hmac::HMAC_SHA256,
                &key.derive(b"tiny-harness answer links v1"),
            ),
            ids: hmac::Key::new(
                hmac::HMAC_SHA256,
                &key.derive(b"tiny-harness answer message ids v1"),
            ),
            base: public_url.trim_end_matches('/').to_owned(),
        }
    }

    /// The link that answers `request`, valid until `now` plus [`LINK_LIFETIME`].
    pub fn link(&self, request: &Addressed, now: i64) -> String {
        let expires = now + LINK_LIFETIME.as_secs() as i64;
        let payload = [
            request.task_id.as_str(),
            &request.request_id,
            &request.to,
            &expires.to_string(),
        ]
        .join("\n");
        let tag = hmac::sign(&self.key, payload.as_bytes());
        format!(
            "{}{ANSWER_PATH}#{}.{}",
            self.base,
            URL_SAFE_NO_PAD.encode(payload),
            URL_SAFE_NO_PAD.encode(tag.as_ref())
        )
    }

    /// The message id an answer through a link that says `claim` is sent under:
    /// [`ANSWER_ID_PREFIX`] and an HMAC-SHA256 of its task, request and participant under
    /// a key of its own. One per request and participant (every link to it, every submit
    /// of one, is one answer), and unguessable without the deployment's key, so no one
    /// can take it first.
    pub fn message_id(&self, claim: &AnswerClaim) -> String {
        let named = [
            claim.task_id.as_str(),
            &claim.request_id,
            &claim.participant,
        ]
        .join("\n");
        let tag = hmac::sign(&self.ids, named.as_bytes());
        format!("{ANSWER_ID_PREFIX}{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
    }

    /// What a link's token says, if this harness signed it and it has not expired (`now`
    /// in seconds since the epoch).
    pub fn verify(&self, token: &str, now: i64) -> Result<AnswerClaim, LinkError> {
        let (payload, tag) = token.split_once('.').ok_or(LinkError::Invalid)?;
        let payload = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| LinkError::Invalid)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| LinkError::Invalid)?;
        hmac::verify(&self.key, &payload, &tag).map_err(|_| LinkError::Invalid)?;
        let text = String::from_utf8(payload).map_err(|_| LinkError::Invalid)?;
        let [task_id, request_id, participant, expires] = text.split('\n').collect::<Vec<_>>()[..]
        else {
            return Err(LinkError::Invalid);
        };
        let expires: i64 = expires.parse().map_err(|_| LinkError::Invalid)?;
        if now > expires {
            return Err(LinkError::Expired);
        }
        Ok(AnswerClaim {
            task_id: task_id.to_owned(),
            request_id: request_id.to_owned(),
            participant: participant.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> Addressed {
        Addressed {
            task_id: "t-1".into(),
            task_name: "T".into(),
            to: "bob".into(),
            request_id: "t-1:help:2".into(),
            asks: Asks::Answer,
            text: "Which?".into(),
            from: "alice".into(),
            due: None,
            reminder: false,
        }
    }

    fn token(link: &str) -> &str {
        link.split_once('#').map(|(_, t)| t).unwrap_or_default()
    }

    #[test]
    fn a_bad_file_is_refused_without_quoting_a_url() {
        let secret = "https://hooks.example/T000/SECRET";
        for text in [
            format!("[bob]\nurll = \"{secret}\"\n"),
            format!("[bob]\nurl = \"{secret}\"\n[bob]\nurl = \"{secret}\"\n"),
            "[bob]\nurl = \"ftp://hooks.example/SECRET\"\n".to_owned(),
            // In the clear to another host (issue 48, item 9).
            "[bob]\nurl = \"http://hooks.example/SECRET\"\n".to_owned(),
            format!("url = \"{secret}\"\n"),
        ] {
            let err = parse_urls(&text, &Targets::default()).unwrap_err();
            assert!(!err.contains("SECRET"), "{err}");
        }
        let urls = parse_urls(&format!("[bob]\nurl = \"{secret}\"\n"), &Targets::default());
        let urls = urls.unwrap();
        assert_eq!(urls["bob"].as_str(), secret);
    }

    #[test]
    fn a_link_names_its_task_request_and_participant_until_it_expires() {
        let links = AnswerLinks::new(&PushKey::generate(), "https://h.example/");
        let link = links.link(&request(), 1_000);
        assert!(link.starts_with("https://h.example/ui/answer#"), "{link}");
        let claim = links.verify(token(&link), 1_000).unwrap();
        assert_eq!(
            claim,
            AnswerClaim {
                task_id: "t-1".into(),
                request_id: "t-1:help:2".into(),
                participant: "bob".into()
            }
        );
        let last = 1_000 + LINK_LIFETIME.as_secs() as i64;
        assert!(links.verify(token(&link), last).is_ok());
        assert_eq!(
            links.verify(token(&link), last + 1),
            Err(LinkError::Expired)
        );
    }

    #[test]
    fn an_answers_message_id_is_the_requests_own_and_unguessable() {
        let key = PushKey::generate();
        let links = AnswerLinks::new(&key, "https://h.example");
        let claim_of = |now| {
            links
                .verify(token(&links.link(&request(), now)), now)
                .unwrap()
        };
        let id = links.message_id(&claim_of(1_000));
        // Every link to the request answers under one id: a second submit is a resend.
        assert_eq!(links.message_id(&claim_of(2_000)), id);
        assert!(
            id.starts_with(ANSWER_ID_PREFIX) && id.len() == 7 + 43,
            "{id}"
        );
        assert!(!id.contains("t-1") && !id.contains("help") && !id.contains("bob"));
        let mut other = claim_of(1_000);
        other.request_id = "t-1:help:3".into();
        assert_ne!(links.message_id(&other), id);
        // Made with the deployment's key: another key makes another id.
        let elsewhere = AnswerLinks::new(&PushKey::generate(), "https://h.example");
        assert_ne!(elsewhere.message_id(&claim_of(1_000)), id);
    }

    #[test]
    fn a_link_from_another_key_or_changed_is_invalid() {
        let links = AnswerLinks::new(&PushKey::generate(), "https://h.example");
        let other = AnswerLinks::new(&PushKey::generate(), "https://h.example");
        let link = other.link(&request(), 1_000);
        assert_eq!(links.verify(token(&link), 1_000), Err(LinkError::Invalid));
        let mine = links.link(&request(), 1_000);
        let (payload, tag) = token(&mine).split_once('.').unwrap();
        let changed = URL_SAFE_NO_PAD.encode(
            String::from_utf8(URL_SAFE_NO_PAD.decode(payload).unwrap())
                .unwrap()
                .replace("bob", "eve"),
        );
        for bad in [
            format!("{changed}.{tag}"),
            payload.to_owned(),
            String::new(),
        ] {
            assert_eq!(links.verify(&bad, 1_000), Err(LinkError::Invalid), "{bad}");
        }
    }
}
