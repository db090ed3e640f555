//! The audit trail as the operations write it: a record the store cannot take is logged,
//! and the request goes on. In `none` mode, where a caller names itself, a refusal counts
//! against the hourly quota of the address the request came from as well as its
//! participant's, so naming a new id for each request does not fill the trail.

use std::borrow::Cow;
use std::future::Future;
use std::net::IpAddr;

use super::Harness;
use crate::store::AuditRecord;

tokio::task_local! {
    /// The address (as [`peer_key`] writes it) the request being served came from, where
    /// its participant is self-asserted: set around the request by [`Harness::from_peer`],
    /// so every refusal audited while it is served counts against it, the refusals of its
    /// `X-Participant-Id` before any caller is known included.
    static PEER: String;
}

impl Harness {
    /// Serves a request (`serve`) that came from `peer`, when known (the connection's
    /// address; in Lambda, the one API Gateway or the Function URL saw). Only in `none`
    /// mode: a verified token's participant is its own quota's key.
    pub async fn from_peer<F: Future>(&self, peer: Option<IpAddr>, serve: F) -> F::Output {
        match peer.filter(|_| self.verifier.is_none()) {
            Some(peer) => PEER.scope(peer_key(peer), serve).await,
            None => serve.await,
        }
    }

    /// Stores an audit record, from the request's peer when [`Harness::from_peer`] knows
    /// it; one the store cannot take (down, or a refusal past its participant's or its
    /// address's hourly quota) is logged instead, and the request goes on.
    pub async fn audit(&self, record: &AuditRecord) {
        let record = match PEER.try_with(String::clone) {
            Ok(peer) if record.peer.is_empty() => Cow::Owned(AuditRecord {
                peer,
                ..record.clone()
            }),
            _ => Cow::Borrowed(record),
        };
        match self.store.audit(&record).await {
            Ok(true) => {}
            Ok(false) => tracing::info!(
                participant = record.participant,
                peer = record.peer,
                tenant = record.tenant,
                operation = record.operation,
                task_id = record.task_id,
                message_id = record.message_id,
                detail = record.detail,
                "audit quota reached for the hour; this refusal is in the log only"
            ),
            Err(e) => tracing::warn!(error = %e, "the decision could not be audited"),
        }
    }
}

/// An address as a quota's key: an IPv4 one as it is (also when it came mapped into
/// IPv6), an IPv6 one by its /64, the block one host is usually given whole; every
/// loopback address as one, `loopback` (a local client may connect from any of
/// 127.0.0.0/8, and from `::1`).
fn peer_key(peer: IpAddr) -> String {
    match peer.to_canonical() {
        ip if ip.is_loopback() => "loopback".to_owned(),
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => {
            let prefix = u128::from(v6) & !((1u128 << 64) - 1);
            format!("{}/64", std::net::Ipv6Addr::from(prefix))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_keys_a_quota_by_itself_or_its_64() {
        for (peer, key) in [
            ("192.0.2.7", "192.0.2.7"),
            ("::ffff:192.0.2.7", "192.0.2.7"),
            ("2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"),
            ("2001:db8:1:2::1", "2001:db8:1:2::/64"),
            ("127.0.0.1", "loopback"),
            ("127.8.9.10", "loopback"),
            ("::ffff:127.0.0.2", "loopback"),
            ("::1", "loopback"),
        ] {
            assert_eq!(peer_key(peer.parse().unwrap()), key, "{peer}");
        }
    }
}
