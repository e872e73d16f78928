//! The HTTP client of stores reached over plain `http://` (an HTTP server,
//! an S3-compatible endpoint with `AWS_HTTPS=NO`).
//!
//! object_store's own client loads the system's CA certificates when it is
//! built (about 5 ms, a fresh process's first open of a remote index), which
//! only TLS needs. This client is object_store's, less the certificates: the
//! same timeouts, HTTP/1.1 only, no content encodings (sizes must match
//! `Content-Length`). A redirect to `https://` fails with a message saying
//! so instead of a certificate error.

use std::time::Duration;

use object_store::client::{ClientOptions, HttpClient, HttpConnector};

/// object_store's default request timeout.
const TIMEOUT: Duration = super::DEFAULT_TIMEOUT;
/// object_store's default connect timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Redirects followed, as reqwest's default policy.
const MAX_REDIRECTS: usize = 10;

/// Builds clients without TLS roots, with `timeout` (`GDAL_HTTP_TIMEOUT`)
/// for requests and connections when set.
#[derive(Debug)]
pub(crate) struct PlainHttp {
    pub timeout: Option<Duration>,
}

impl HttpConnector for PlainHttp {
    fn connect(&self, _options: &ClientOptions) -> object_store::Result<HttpClient> {
        let redirects = reqwest::redirect::Policy::custom(|attempt| {
            if attempt.url().scheme() != "http" {
                let to = attempt.url().to_string();
                attempt.error(format!(
                    "redirected to {to}: use that URL (an http:// store is read without TLS)"
                ))
            } else if attempt.previous().len() >= MAX_REDIRECTS {
                attempt.error("too many redirects")
            } else {
                attempt.follow()
            }
        });
        let client = reqwest::ClientBuilder::new()
            .user_agent("object_store/0.12")
            .timeout(self.timeout.unwrap_or(TIMEOUT))
            .connect_timeout(self.timeout.unwrap_or(CONNECT_TIMEOUT))
            .http1_only()
            .no_gzip()
            .no_brotli()
            .no_zstd()
            .no_deflate()
            .tls_built_in_root_certs(false)
            .redirect(redirects)
            .build()
            .map_err(|e| object_store::Error::Generic {
                store: "HTTP",
                source: Box::new(e),
            })?;
        Ok(HttpClient::new(client))
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;

    use crate::io::config::Settings;
    use crate::io::fetch::{Fetcher, Source, Want};
    use crate::io::resolve::{resolve, Base};

    /// An http:// server answering every request with a redirect to `to`.
    fn redirecting(to: &'static str) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for stream in listener.incoming().take(4) {
                let Ok(mut stream) = stream else { return };
                let mut request = [0u8; 4096];
                let _ = stream.read(&mut request);
                let answer = format!(
                    "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        url
    }

    #[test]
    fn a_redirect_to_https_is_an_error_saying_so() {
        let url = redirecting("https://127.0.0.1:9/elsewhere.tif");
        let settings =
            Settings::from_lookup(|k| (k == "GDAL_HTTP_MAX_RETRY").then(|| "0".into())).unwrap();
        let loc = resolve(&format!("{url}data.tif"), &Base::Dir("/".into())).unwrap();
        let source = Source::open(&loc, &settings).unwrap();
        let e = Fetcher::new(&settings)
            .fetch_one(&source, Want::Range(0, 10))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("data.tif") && e.contains("redirected to https://"),
            "{e}"
        );
    }
}
