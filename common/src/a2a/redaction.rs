//! Where a client's message meets redaction: what of a [`Message`] the intake redacts.

use super::Message;
use crate::redact::Redactor;

impl Message {
    /// Redacts a client's message where it enters: every text part, data part, file
    /// name and URL, part metadata and message metadata. Returns true when anything
    /// changed.
    pub fn redact(&mut self, redactor: &Redactor) -> bool {
        let mut changed = redactor.metadata(&mut self.metadata);
        for part in &mut self.parts {
            for text in [part.text.as_mut(), part.url.as_mut()]
                .into_iter()
                .flatten()
            {
                changed |= redactor.redact_string(text);
            }
            changed |= redactor.redact_string(&mut part.filename);
            if let Some(data) = &mut part.data {
                changed |= redactor.redact_json(data);
            }
            changed |= redactor.metadata(&mut part.metadata);
        }
        changed
    }
}
