//! How a webhook's host becomes the addresses a delivery connects to: a [`Lookup`] (the
//! system resolver, or a test's), which the webhook client resolves through.

use std::io;
use std::net::IpAddr;
use std::sync::Arc;

use futures::future::BoxFuture;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

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

/// The webhook client's resolver.
pub struct Resolver {
    lookup: Arc<dyn Lookup>,
}

impl Resolver {
    pub fn new(lookup: Arc<dyn Lookup>) -> Self {
        Resolver { lookup }
    }
}

impl Resolve for Resolver {
    fn resolve(&self, name: Name) -> Resolving {
        let lookup = self.lookup.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let ips = lookup.lookup(&host).await?;
            let addrs: Addrs = Box::new(ips.into_iter().map(|ip| (ip, 0).into()));
            Ok(addrs)
        })
    }
}
