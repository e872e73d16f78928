//! Whole documents read at once, for catalogues the builders walk (STAC
//! items, catalogues, search pages): a local file, an object in a store
//! (read with the sources' settings), or an HTTP(S) URL with a query string
//! (GET, or POST with a JSON body, as STAC API searches page). Every read is
//! capped in size, so a hostile server cannot make the command hold more
//! than the cap.

use std::time::Duration;

use crate::base::error::{Error, Result};
use crate::io::fetch;
use crate::io::resolve::{Location, Scheme};
use crate::io::source::{self, Source};

/// How long one HTTP request of a document may take.
const TIMEOUT: Duration = Duration::from_secs(60);

/// A request for a document: its URL or path, and a JSON body to POST
/// (HTTP(S) only).
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Path or URL.
    pub url: String,
    /// The JSON body of a POST; `None` for a GET (or a file).
    pub body: Option<serde_json::Value>,
}

/// The bytes of the document `request` names, at most `cap` of them (a
/// longer one is an error naming it).
pub fn read(request: &Request, cap: u64) -> Result<Vec<u8>> {
    let name = &request.url;
    let too_long = |len: u64| Error::Limits {
        what: format!("{name}: a document of {len} bytes (at most {cap} are read)"),
    };
    match source::locate(name)? {
        Location::Object(url) if matches!(url.scheme, Scheme::Http | Scheme::Https) => {
            fetch::runtime().block_on(http(request, cap))
        }
        _ if request.body.is_some() => Err(Error::Usage {
            what: format!("{name}: a request with a body needs an http(s):// URL"),
        }),
        _ => {
            let s = Source::open(name, "document")?;
            if s.len() > cap {
                return Err(too_long(s.len()));
            }
            s.read(0, s.len())
        }
    }
}

/// [`read`] of an HTTP(S) URL: the body streamed, refused past `cap`.
async fn http(request: &Request, cap: u64) -> Result<Vec<u8>> {
    let url = &request.url;
    let io = |reason: String| Error::Io {
        url: url.clone(),
        range: String::new(),
        reason,
    };
    let client = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .user_agent(concat!("chunkref/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| io(e.to_string()))?;
    let builder = match &request.body {
        Some(body) => client
            .post(url)
            .header("Content-Type", "application/json")
            .body(body.to_string()),
        None => client.get(url),
    };
    let mut response = builder
        .header("Accept", "application/geo+json, application/json")
        .send()
        .await
        .map_err(|e| io(e.to_string()))?;
    let status = response.status();
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| io(e.to_string()))? {
        if (bytes.len() + chunk.len()) as u64 > cap {
            return Err(Error::Limits {
                what: format!("{url}: a document of more than {cap} bytes"),
            });
        }
        bytes.extend_from_slice(&chunk);
    }
    if !status.is_success() {
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(300)]).into_owned();
        return Err(io(format!("HTTP {status}: {}", text.trim())));
    }
    Ok(bytes)
}

/// True when `e` is an HTTP server's 405 (Method Not Allowed): a POST it
/// does not take.
pub fn method_not_allowed(e: &Error) -> bool {
    matches!(e, Error::Io { reason, .. } if reason.starts_with(&format!("HTTP {}", reqwest::StatusCode::METHOD_NOT_ALLOWED)))
}

/// `url` with the query parameters `params` added (percent-encoded).
pub fn with_query(url: &str, params: &[(&str, String)]) -> Result<String> {
    let parsed = reqwest::Url::parse_with_params(url, params).map_err(|e| Error::Usage {
        what: format!("{url}: {e}"),
    })?;
    Ok(parsed.to_string())
}
