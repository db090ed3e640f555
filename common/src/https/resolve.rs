//! How a webhook's host becomes the addresses a delivery connects to, decided once: the
//! webhook client resolves every name through [`Resolver`], which asks a [`Lookup`] (the
//! system resolver, or a test's) and hands reqwest the answer only if [`Targets`] permits
//! every address in it. reqwest connects only to addresses its resolver returned, so the
//! addresses checked are the addresses connected to; a name that answers differently the
//! next time (DNS rebinding) is checked again on that next connection.
//!
//! Fail closed: a lookup error, an empty answer or any refused address in the answer is an
//! error, and nothing is connected to. Two things do not pass through a resolver and are
//! covered elsewhere: an address written in the URL (checked before sending, with
//! [`Targets::permits`]) and a proxy (the webhook client uses none, so an environment
//! proxy cannot resolve the name its own way). A pooled connection is reused without a
//! new lookup; it goes to an address checked when it was opened.

use std::io;
use std::net::IpAddr;
use std::sync::Arc;

use futures::future::BoxFuture;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::target::{self, Targets};

/// Resolves a host name to its addresses.
pub trait Lookup: Send + Sync {
    fn lookup<'a>(&'a self, host: &'a str) -> BoxFuture<'a, io::Result<Vec<IpAddr>>>;
}

/// The system resolver (getaddrinfo, on a blocking thread).
pub struct SystemLookup;

impl Lookup for SystemLookup {
    fn lookup<'a>(&'a self, host: &'a str) -> BoxFuture<'a, io::Result<Vec<IpAddr>>> {
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host, 0)).await?;
            Ok(addrs.map(|a| a.ip()).collect())
        })
    }
}

/// Why a webhook was not connected to. The messages are recorded on the config, where
/// participants read them: they name no address and nothing of the resolver (the logs do).
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("the webhook's host could not be resolved")]
    Unresolved(#[source] io::Error),
    #[error("the webhook's host resolved to no address")]
    NoAddress,
    #[error("the webhook's host resolves to an address this server does not call")]
    Blocked(IpAddr),
}

impl Refused {
    /// The refusal behind a failed request, if a refusal failed it.
    pub fn behind<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a Refused> {
        let mut next = Some(error);
        while let Some(e) = next {
            if let Some(refused) = e.downcast_ref::<Refused>() {
                return Some(refused);
            }
            next = e.source();
        }
        None
    }
}

/// The webhook client's resolver: one lookup, every address checked.
#[derive(Clone)]
pub struct Resolver {
    targets: Arc<Targets>,
    lookup: Arc<dyn Lookup>,
}

impl Resolver {
    pub fn new(targets: Targets, lookup: Arc<dyn Lookup>) -> Self {
        Resolver {
            targets: Arc::new(targets),
            lookup,
        }
    }

    /// `host`'s addresses, if there are some and this server may call every one of them.
    pub async fn addresses(&self, host: &str) -> Result<Vec<IpAddr>, Refused> {
        let ips = self.lookup.lookup(host).await.map_err(|e| {
            tracing::info!(host, error = %e, "webhook host lookup failed");
            Refused::Unresolved(e)
        })?;
        if ips.is_empty() {
            return Err(Refused::NoAddress);
        }
        // One refused address refuses the answer: a connection may go to any of them.
        if let Some(&ip) = ips.iter().find(|&&ip| !self.targets.permits(ip)) {
            let range = target::blocked(ip).unwrap_or_default();
            tracing::warn!(host, %ip, range, "webhook host resolves to a blocked address");
            return Err(Refused::Blocked(ip));
        }
        Ok(ips)
    }
}

impl Resolve for Resolver {
    fn resolve(&self, name: Name) -> Resolving {
        let me = self.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let ips = me.addresses(&host).await?;
            // Port 0: reqwest puts the URL's port in.
            let addrs: Addrs = Box::new(ips.into_iter().map(|ip| (ip, 0).into()));
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Answer(fn() -> io::Result<Vec<IpAddr>>);

    impl Lookup for Answer {
        fn lookup<'a>(&'a self, _: &'a str) -> BoxFuture<'a, io::Result<Vec<IpAddr>>> {
            Box::pin(std::future::ready((self.0)()))
        }
    }

    fn resolver(answer: fn() -> io::Result<Vec<IpAddr>>) -> Resolver {
        Resolver::new(Targets::new(false, Vec::new()), Arc::new(Answer(answer)))
    }

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|s| s.parse().unwrap()).collect()
    }

    #[tokio::test]
    async fn an_answer_passes_only_if_every_address_is_permitted() {
        let public = resolver(|| Ok(ips(&["93.184.216.34", "2606:2800:220:1::1"])));
        assert_eq!(public.addresses("h").await.unwrap().len(), 2);
        let mixed = resolver(|| Ok(ips(&["93.184.216.34", "198.18.0.1"])));
        assert!(matches!(
            mixed.addresses("h").await,
            Err(Refused::Blocked(ip)) if ip == "198.18.0.1".parse::<IpAddr>().unwrap()
        ));
        let empty = resolver(|| Ok(Vec::new()));
        assert!(matches!(
            empty.addresses("h").await,
            Err(Refused::NoAddress)
        ));
        let failed = resolver(|| Err(io::Error::other("SERVFAIL")));
        assert!(matches!(
            failed.addresses("h").await,
            Err(Refused::Unresolved(_))
        ));
    }

    #[tokio::test]
    async fn a_refusal_is_found_behind_the_client_error() {
        let client = crate::https::client_builder()
            .no_proxy()
            .dns_resolver(resolver(|| Ok(ips(&["127.0.0.1"]))))
            .build()
            .unwrap();
        let e = client.get("http://h.test/").send().await.unwrap_err();
        assert!(
            matches!(Refused::behind(&e), Some(Refused::Blocked(_))),
            "{e:?}"
        );
    }
}
