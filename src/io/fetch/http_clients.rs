//! One HTTP client per (scheme, host, timeout), shared by the stores of
//! that host.
//!
//! An `http(s)://` URL with a query string (a presigned S3 URL, an Azure
//! SAS, a signed STAC asset href) gets a store of its own, because
//! object_store's HTTP store appends object paths to its base URL and keeps
//! the base URL's query. Signatures differ per object, so an index of
//! signed URLs has one store per object: they share this client, and so
//! its connections (and, over TLS, the CA certificates loaded once).

use std::collections::HashMap;
use std::sync::Mutex;

use object_store::client::{HttpClient, HttpConnector, ReqwestConnector};
use object_store::ClientOptions;

use super::plain_http::PlainHttp;
use super::Timeout;
use crate::base::process::PerProcess;
use crate::io::resolve::Scheme;

/// Gives every store of one host this process's client for that host.
#[derive(Debug)]
pub(crate) struct SharedClient {
    /// `http` or `https`.
    pub scheme: Scheme,
    /// `host[:port]`.
    pub authority: String,
    /// `GDAL_HTTP_TIMEOUT`.
    pub timeout: Timeout,
}

/// A host's client: (scheme, `host[:port]`, timeout).
type Host = (Scheme, String, Timeout);

impl HttpConnector for SharedClient {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        // Connections live on the runtime: one set per process.
        static CLIENTS: PerProcess<Mutex<HashMap<Host, HttpClient>>> =
            PerProcess::new(Default::default);
        let key = (self.scheme, self.authority.clone(), self.timeout);
        let mut clients = CLIENTS.get().lock().unwrap_or_else(|p| p.into_inner());
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        let client = match self.scheme {
            Scheme::Http => PlainHttp {
                timeout: self.timeout,
            }
            .connect(options)?,
            _ => ReqwestConnector::default().connect(options)?,
        };
        clients.insert(key, client.clone());
        Ok(client)
    }
}
