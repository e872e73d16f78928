//! Fetching chunk bytes through `object_store` on one shared tokio runtime.
//!
//! A [`Source`] is a resolved object with its store; stores are built once
//! per (scheme, bucket or host, settings) and shared process-wide. A
//! [`Fetcher`] reads many `(source, ranges)` requests concurrently with a
//! bounded number of HTTP requests in flight, every range of a multi-range
//! request fetched concurrently and concatenated in order. Transient failures
//! of remote reads (5xx, timeouts, dropped connections, truncated or short
//! bodies: everything object_store reports as a generic error) are retried
//! here, with exponential backoff, `GDAL_HTTP_MAX_RETRY` times; answers that
//! retrying cannot change (not found, permission denied) are not. The final
//! error names the URL and byte range.

use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::http::HttpBuilder;
use object_store::local::LocalFileSystem;
use object_store::path::Path as StorePath;
use object_store::{BackoffConfig, ClientOptions, GetOptions, GetRange, ObjectStore, RetryConfig};
use tokio::sync::Semaphore;

use crate::base::buffers::scratch_buffer;
use crate::base::error::{Error, Result};
use crate::base::process::PerProcess;
use crate::io::config::{AwsSettings, AzureSettings, GcsSettings, Settings};
use crate::io::resolve::{Location, ObjectUrl, Scheme};

mod coalesce;
mod failure;
mod http_clients;
mod plain_http;

use failure::Failure;

use http_clients::SharedClient;
use plain_http::PlainHttp;

/// Largest span of merged ranges read with one request (8 MiB): larger
/// reads are split so they run concurrently.
pub const MAX_SPAN: u64 = 8 << 20;

/// How long a request may take when `GDAL_HTTP_TIMEOUT` is not set
/// (object_store's default, kept by [`plain_http`] too).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// Longest wait between two retries.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The process's I/O runtime, built on first use (safe from any GDAL
/// thread; a forked child builds its own, see [`PerProcess`]).
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: PerProcess<tokio::runtime::Runtime> = PerProcess::new(|| {
        tokio::runtime::Builder::new_multi_thread()
            .thread_name("chunkref-io")
            .enable_all()
            .build()
            .expect("cannot start the chunkref I/O runtime")
    });
    RUNTIME.get()
}

/// Which bytes of an object to read.
#[derive(Debug, Clone, Copy)]
pub enum Want<'a> {
    /// The whole object.
    Whole,
    /// The `length` bytes at `offset`.
    Range(u64, u64),
    /// These `(offset, length)` ranges, concatenated in order.
    Ranges(&'a [(u64, u64)]),
}

/// An object ready to be read: its store, its path in the store, its URL.
#[derive(Clone)]
pub struct Source {
    url: String,
    remote: bool,
    /// The file, for a local source (read with plain file I/O).
    local: Option<PathBuf>,
    /// The remote store's key: the client itself is looked up per process
    /// at each read (a forked child must not use its parent's connections).
    key: Option<Arc<StoreKey>>,
    path: StorePath,
}

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Source").field(&self.url).finish()
    }
}

impl Source {
    /// Whether this is a local file.
    pub fn is_local(&self) -> bool {
        self.local.is_some()
    }

    /// The store and path for `loc`, configured by `settings` (no I/O).
    pub fn open(loc: &Location, settings: &Settings) -> Result<Source> {
        let url = loc.to_string();
        let bad = |reason: String| Error::Io {
            url: url.clone(),
            range: String::new(),
            reason,
        };
        match loc {
            Location::Local(path) => Ok(Source {
                path: StorePath::from_absolute_path(path).map_err(|e| bad(e.to_string()))?,
                key: None,
                remote: false,
                local: Some(path.clone()),
                url,
            }),
            Location::Object(o) => {
                let path = match o.scheme {
                    Scheme::Http | Scheme::Https => {
                        if o.key.contains('#') {
                            return Err(Error::unsupported(format!(
                                "a fragment ('#...') in the HTTP URL '{url}': a '#' in a \
                                 file name is written %23"
                            )));
                        }
                        StorePath::from_url_path(split_query(&o.key).0)
                    }
                    _ => StorePath::parse(&o.key),
                }
                .map_err(|e| bad(format!("invalid object path: {e}")))?;
                let key = store_key(o, settings);
                // Built now, so that a bad configuration fails the open.
                store_of(&key).map_err(|e| bad(e.to_string()))?;
                Ok(Source {
                    key: Some(Arc::new(key)),
                    remote: true,
                    local: None,
                    path,
                    url,
                })
            }
        }
    }

    /// The URL or path, for messages.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The keys of the objects whose keys start with this source's key
    /// (its "directory" listing, recursive, paginated by the store), with
    /// their sizes.
    pub fn list(&self) -> Result<Vec<(String, u64)>> {
        let fail = |e: object_store::Error| Error::Io {
            url: self.url.clone(),
            range: String::new(),
            reason: format!(
                "cannot list: {}",
                failure::describe(&e, self.remote, self.timeout())
            ),
        };
        let store = self.store().map_err(fail)?;
        let prefix = (!self.path.as_ref().is_empty()).then_some(&self.path);
        runtime().block_on(async {
            let mut listed = Vec::new();
            let mut stream = store.list(prefix);
            while let Some(meta) = stream.next().await {
                let meta = meta.map_err(fail)?;
                listed.push((meta.location.to_string(), meta.size));
            }
            Ok(listed)
        })
    }

    /// How long one request may take before it fails: `GDAL_HTTP_TIMEOUT`,
    /// else object_store's default, for messages.
    fn timeout(&self) -> Duration {
        let set = match self.key.as_deref() {
            Some(
                StoreKey::S3(_, _, t)
                | StoreKey::Gs(_, _, t)
                | StoreKey::Azure(_, _, _, t)
                | StoreKey::Http(_, _, _, t),
            ) => *t,
            None => None,
        };
        set.unwrap_or(DEFAULT_TIMEOUT)
    }

    /// The store to read from, this process's client for a remote source.
    fn store(&self) -> object_store::Result<Arc<dyn ObjectStore>> {
        match &self.key {
            None => Ok(local_store()),
            Some(key) => store_of(key),
        }
    }
}

fn local_store() -> Arc<dyn ObjectStore> {
    static STORE: OnceLock<Arc<LocalFileSystem>> = OnceLock::new();
    STORE
        .get_or_init(|| Arc::new(LocalFileSystem::new()))
        .clone()
}

/// `GDAL_HTTP_TIMEOUT`, the one HTTP setting a store is built with.
type Timeout = Option<Duration>;

/// What makes two remote stores the same store.
#[derive(Clone, PartialEq, Eq, Hash)]
enum StoreKey {
    S3(String, AwsSettings, Timeout),
    Gs(String, GcsSettings, Timeout),
    Azure(Scheme, String, AzureSettings, Timeout),
    /// Scheme, `host[:port]`, the URL's query string (a signature: a store
    /// per signed object), timeout.
    Http(Scheme, String, Option<String>, Timeout),
}

/// An HTTP URL's key as its path and its query string (without the `?`).
fn split_query(key: &str) -> (&str, Option<&str>) {
    match key.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (key, None),
    }
}

/// What identifies the store of `o` read with settings `s`.
fn store_key(o: &ObjectUrl, s: &Settings) -> StoreKey {
    let (a, http) = (o.authority.clone(), s.http.timeout);
    match o.scheme {
        Scheme::S3 => StoreKey::S3(a, s.aws.clone(), http),
        Scheme::Gs => StoreKey::Gs(a, s.gcs.clone(), http),
        Scheme::Az | Scheme::Abfs | Scheme::Abfss => {
            StoreKey::Azure(o.scheme, a, s.azure.clone(), http)
        }
        Scheme::Http | Scheme::Https => {
            let query = split_query(&o.key).1.map(str::to_string);
            StoreKey::Http(o.scheme, a, query, http)
        }
    }
}

/// This process's client for `key`, built on first use.
fn store_of(key: &StoreKey) -> object_store::Result<Arc<dyn ObjectStore>> {
    // Clients keep connections on the runtime: one set per process too.
    static STORES: PerProcess<Mutex<HashMap<StoreKey, Arc<dyn ObjectStore>>>> =
        PerProcess::new(Default::default);
    let mut stores = STORES.get().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(store) = stores.get(key) {
        return Ok(Arc::clone(store));
    }
    let store = build_store(key)?;
    stores.insert(key.clone(), Arc::clone(&store));
    Ok(store)
}

fn build_store(key: &StoreKey) -> object_store::Result<Arc<dyn ObjectStore>> {
    Ok(match key {
        StoreKey::S3(bucket, aws, http) => {
            if let Some(e) = &aws.profile_error {
                return Err(object_store::Error::Generic {
                    store: "S3",
                    source: e.clone().into(),
                });
            }
            Arc::new(s3_builder(bucket, aws, http).build()?)
        }
        StoreKey::Gs(bucket, gcs, http) => {
            let plain = gcs
                .endpoint
                .as_deref()
                .is_some_and(|e| e.starts_with("http://"));
            let mut b = GoogleCloudStorageBuilder::new()
                .with_bucket_name(bucket)
                .with_retry(retry_config())
                .with_client_options(client_options(http).with_allow_http(plain))
                .with_skip_signature(gcs.no_sign_request);
            b = match (&gcs.endpoint, &gcs.credentials_file) {
                (Some(endpoint), file) => b.with_service_account_key(gcs_key_at(endpoint, file)?),
                (None, Some(file)) => b.with_application_credentials(file),
                (None, None) => b,
            };
            Arc::new(b.build()?)
        }
        StoreKey::Azure(scheme, authority, az, http) => {
            let mut b = MicrosoftAzureBuilder::new()
                .with_retry(retry_config())
                .with_client_options(client_options(http))
                .with_skip_signature(az.no_sign_request);
            b = match authority.split_once('@') {
                Some(_) => b.with_url(format!("{}://{authority}", scheme.as_str())),
                None => b.with_container_name(authority),
            };
            if let Some(account) = &az.account {
                b = b.with_account(account);
            }
            if let Some(endpoint) = &az.endpoint {
                b = b.with_endpoint(endpoint.clone()).with_allow_http(true);
            }
            if let Some(k) = &az.access_key {
                b = b.with_access_key(k);
            }
            if let Some(sas) = &az.sas_token {
                let pairs: Vec<(String, String)> = sas
                    .trim_start_matches('?')
                    .split('&')
                    .filter_map(|kv| kv.split_once('='))
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
                b = b.with_sas_authorization(pairs);
            }
            Arc::new(b.build()?)
        }
        StoreKey::Http(scheme, authority, query, http) => {
            // Object paths are appended to the base URL's path; its query
            // stays on every request.
            let query = query.as_ref().map_or(String::new(), |q| format!("?{q}"));
            let b = HttpBuilder::new()
                .with_url(format!("{}://{authority}/{query}", scheme.as_str()))
                .with_retry(retry_config())
                .with_client_options(client_options(http).with_allow_http(true))
                .with_http_connector(SharedClient {
                    scheme: *scheme,
                    authority: authority.clone(),
                    timeout: *http,
                });
            Arc::new(b.build()?)
        }
    })
}

/// An S3 store following GDAL's option semantics: `AWS_S3_ENDPOINT` is
/// `host[:port]` reached over https unless `AWS_HTTPS=NO`; with virtual
/// hosting (the default, except for bucket names with dots and endpoints
/// that are IP addresses or `localhost`, which have no subdomains) the
/// bucket is a subdomain of the endpoint, else the first path segment.
fn s3_builder(bucket: &str, aws: &AwsSettings, http: &Timeout) -> AmazonS3Builder {
    let virtual_hosting = aws.virtual_hosting
        && !bucket.contains('.')
        && !aws.endpoint.as_deref().is_some_and(has_no_subdomains);
    let mut b = AmazonS3Builder::new()
        .with_bucket_name(bucket)
        .with_region(aws.region.as_deref().unwrap_or("us-east-1"))
        .with_retry(retry_config())
        .with_client_options(client_options(http))
        .with_virtual_hosted_style_request(virtual_hosting)
        .with_skip_signature(aws.no_sign_request);
    if let (Some(id), Some(secret)) = (&aws.access_key_id, &aws.secret_access_key) {
        b = b.with_access_key_id(id).with_secret_access_key(secret);
        if let Some(token) = &aws.session_token {
            b = b.with_token(token);
        }
    }
    if let Some(endpoint) = &aws.endpoint {
        let (scheme, host) = match endpoint.split_once("://") {
            Some((s, h)) => (s, h.trim_end_matches('/')),
            None if aws.https => ("https", endpoint.as_str()),
            None => ("http", endpoint.as_str()),
        };
        let url = if virtual_hosting {
            format!("{scheme}://{bucket}.{host}")
        } else {
            format!("{scheme}://{host}")
        };
        b = b.with_endpoint(url).with_allow_http(scheme == "http");
        if scheme == "http" {
            b = b.with_http_connector(PlainHttp { timeout: *http });
        }
    }
    b
}

/// Whether the host of `endpoint` (`host[:port]` or a URL) is an IP
/// address or `localhost`, where a bucket cannot be a subdomain.
fn has_no_subdomains(endpoint: &str) -> bool {
    let authority = endpoint
        .split_once("://")
        .map_or(endpoint, |(_, rest)| rest);
    let authority = authority.split('/').next().unwrap_or_default();
    let host = match authority.strip_prefix('[') {
        Some(v6) => return v6.contains(']'),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::Ipv4Addr>().is_ok()
}

/// The service account key object_store reads a GCS server from
/// (`gcs_base_url`: it has no other setting for one): the key of
/// `credentials_file` with the endpoint added, or, without a file, an
/// unsigned key for emulators (`disable_oauth`).
fn gcs_key_at(endpoint: &str, credentials_file: &Option<String>) -> object_store::Result<String> {
    let generic = |message: String| object_store::Error::Generic {
        store: "GCS",
        source: message.into(),
    };
    let mut key = match credentials_file {
        Some(file) => {
            let text = std::fs::read_to_string(file).map_err(|e| {
                generic(format!(
                    "cannot read GOOGLE_APPLICATION_CREDENTIALS {file}: {e}"
                ))
            })?;
            serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&text).map_err(
                |e| {
                    generic(format!(
                        "GOOGLE_APPLICATION_CREDENTIALS {file} is not a JSON object: {e}"
                    ))
                },
            )?
        }
        None => serde_json::json!({
            "private_key": "", "private_key_id": "", "client_email": "", "disable_oauth": true
        })
        .as_object()
        .cloned()
        .unwrap_or_default(),
    };
    key.insert("gcs_base_url".into(), endpoint.into());
    Ok(serde_json::Value::Object(key).to_string())
}

/// object_store's own retries are off: [`Fetcher`] retries every request
/// (including short and truncated bodies, which object_store does not retry
/// in every case) under one policy.
fn retry_config() -> RetryConfig {
    RetryConfig {
        backoff: BackoffConfig::default(),
        max_retries: 0,
        retry_timeout: Duration::ZERO,
    }
}

fn client_options(timeout: &Timeout) -> ClientOptions {
    let options = ClientOptions::new();
    match *timeout {
        Some(t) => options.with_timeout(t).with_connect_timeout(t),
        None => options,
    }
}

/// Reads many requests concurrently with a bounded number in flight.
#[derive(Debug, Clone)]
pub struct Fetcher {
    max_in_flight: usize,
    max_retry: u32,
    retry_delay: Duration,
    coalesce_gap: u64,
    /// Requests no longer wanted, not made if not started (see
    /// [`Fetcher::skipping`]).
    unwanted: Option<Arc<dyn Unwanted>>,
}

/// Which requests of a read are no longer wanted (by request number).
pub trait Unwanted: Send + Sync + fmt::Debug {
    /// Whether request `request` is no longer wanted.
    fn unwanted(&self, request: usize) -> bool;
}

/// One request sent to a store: a span of an object, or the whole object.
struct Job<'a> {
    source: &'a Source,
    range: Option<Range<u64>>,
}

/// A part of one fetched job: `(job, offset, length)`; length
/// [`u64::MAX`] stands for the whole job.
type Piece = (usize, u64, u64);

impl Fetcher {
    /// A fetcher with `CHUNKREF_MAX_REQUESTS` requests in flight, ranges
    /// closer than `CHUNKREF_COALESCE_GAP` merged, and the retry settings of
    /// `settings`.
    pub fn new(settings: &Settings) -> Fetcher {
        Fetcher {
            max_in_flight: settings.max_requests.max(1),
            max_retry: settings.http.max_retry,
            retry_delay: settings.http.retry_delay,
            coalesce_gap: settings.coalesce_gap,
            unwanted: None,
        }
    }

    /// This fetcher, not making the requests `unwanted` says are no longer
    /// wanted when their turn comes (they fail as not read): for reads that
    /// may turn out unneeded while in flight.
    pub fn skipping(&self, unwanted: Arc<dyn Unwanted>) -> Fetcher {
        Fetcher {
            unwanted: Some(unwanted),
            ..self.clone()
        }
    }

    /// Reads every `(source, want)` request and returns the bytes of each,
    /// in the order of `requests` (see [`Fetcher::fetch_each`]).
    pub fn fetch_many(&self, requests: &[(&Source, Want<'_>)]) -> Vec<Result<Bytes>> {
        let mut out: Vec<Option<Result<Bytes>>> = vec![None; requests.len()];
        self.fetch_each(requests, |i, bytes| out[i] = Some(bytes));
        out.into_iter()
            .map(|r| r.unwrap_or_else(|| Err(Error::unsupported("a request without an answer"))))
            .collect()
    }

    /// Reads every `(source, want)` request and hands `ready(i, bytes)` the
    /// bytes of request `i` as soon as they are all in (in completion
    /// order, on the calling thread), so callers can decode while the rest
    /// is still in flight. The ranges of all requests on one object are
    /// planned together: nearby ranges merge into one span (up to
    /// [`MAX_SPAN`] bytes; gaps up to `coalesce_gap` bytes are read only
    /// while the read has more spans than `max_in_flight`, see
    /// [`coalesce::plan_all`]), and every span is one request, with at most
    /// `max_in_flight` in flight at once. A failed span
    /// fails every request that needed it. Blocks the calling thread (call it
    /// from outside the runtime).
    pub fn fetch_each(
        &self,
        requests: &[(&Source, Want<'_>)],
        mut ready: impl FnMut(usize, Result<Bytes>),
    ) {
        // Local files are read on this thread, one request after another,
        // each handed on as soon as it is in: no runtime hop, and buffers of
        // one chunk, freed once it is decoded (reads from the page cache
        // gain nothing from coalescing or concurrency).
        if requests.iter().all(|(source, _)| source.local.is_some()) {
            let mut files = LocalFiles::default();
            for (i, &(source, want)) in requests.iter().enumerate() {
                ready(i, files.read(source, want));
            }
            return;
        }
        let mut jobs: Vec<Job<'_>> = Vec::new();
        let mut pieces: Vec<Result<Vec<Piece>>> = Vec::with_capacity(requests.len());
        let mut by_object: HashMap<&str, Vec<(usize, Range<u64>)>> = HashMap::new();
        for (i, &(source, want)) in requests.iter().enumerate() {
            let single;
            let ranges = match want {
                Want::Whole => {
                    jobs.push(Job {
                        source,
                        range: None,
                    });
                    pieces.push(Ok(vec![(jobs.len() - 1, 0, u64::MAX)]));
                    continue;
                }
                Want::Range(offset, length) => {
                    single = [(offset, length)];
                    &single[..]
                }
                Want::Ranges(ranges) => ranges,
            };
            match checked_ranges(source, ranges) {
                Ok(rs) => {
                    let wanted = by_object.entry(source.url.as_str()).or_default();
                    wanted.extend(rs.into_iter().map(|r| (i, r)));
                    pieces.push(Ok(Vec::new()));
                }
                Err(e) => pieces.push(Err(e)),
            }
        }
        let mut objects: Vec<Vec<(usize, Range<u64>)>> =
            by_object.into_values().filter(|w| !w.is_empty()).collect();
        objects.sort_by_key(|wanted| wanted[0].0);
        let ranges: Vec<Vec<Range<u64>>> = objects
            .iter()
            .map(|wanted| wanted.iter().map(|(_, r)| r.clone()).collect())
            .collect();
        // Slots left for ranged requests once whole-object reads have theirs.
        let slots = self.max_in_flight.saturating_sub(jobs.len()).max(1);
        let plans = coalesce::plan_all(&ranges, self.coalesce_gap, MAX_SPAN, slots);
        for (wanted, plan) in objects.into_iter().zip(plans) {
            let source = requests[wanted[0].0].0;
            let first = jobs.len();
            jobs.extend(plan.spans.into_iter().map(|span| Job {
                source,
                range: Some(span),
            }));
            for ((i, r), place) in wanted.iter().zip(plan.places) {
                if let Ok(p) = &mut pieces[*i] {
                    p.push((first + place.span, place.offset, r.end - r.start));
                }
            }
        }

        // Which requests wait for each job, and how many jobs each waits for.
        let mut waiting: Vec<usize> = vec![0; requests.len()];
        let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); jobs.len()];
        for (i, p) in pieces.iter().enumerate() {
            if let Ok(p) = p {
                for job in distinct_jobs(p) {
                    dependents[job].push(i);
                    waiting[i] += 1;
                }
            }
        }
        // Requests still to be assembled from each job: a job's bytes are
        // dropped once the last of them is (a read of many chunks holds
        // only those in flight or waiting for a sibling span, and the
        // allocator reuses their memory instead of finding fresh pages).
        let mut unassembled: Vec<usize> = dependents.iter().map(Vec::len).collect();
        let mut fetched: Vec<Option<Result<Bytes>>> = vec![None; jobs.len()];
        for (i, p) in pieces.iter().enumerate() {
            match p {
                Err(e) => ready(i, Err(e.clone())),
                Ok(p) if p.is_empty() => ready(i, Ok(Bytes::new())),
                Ok(_) => {}
            }
        }
        // The lowest-numbered request that failed so far: spans not yet
        // started that only later requests need are not read (their
        // requests fail as skipped), so a read of many chunks from an
        // unreachable server fails after one round of retries, not one per
        // `max_in_flight` chunks. Requests before it are still read: the
        // failure callers report (the first in order) stays the same.
        let first_failed = Cell::new(usize::MAX);
        let mut complete = |j: usize, bytes: Result<Bytes>| {
            if bytes.is_err() {
                let lowest = dependents[j].iter().copied().min().unwrap_or(usize::MAX);
                first_failed.set(first_failed.get().min(lowest));
            }
            fetched[j] = Some(bytes);
            for &i in &dependents[j] {
                waiting[i] -= 1;
                if waiting[i] == 0 {
                    if let Ok(p) = &pieces[i] {
                        ready(i, assemble_pieces(&fetched, p));
                        for job in distinct_jobs(p) {
                            unassembled[job] -= 1;
                            if unassembled[job] == 0 {
                                fetched[job] = None;
                            }
                        }
                    }
                }
            }
        };
        let permits = Semaphore::new(self.max_in_flight);
        runtime().block_on(async {
            let mut done = futures::stream::iter(jobs.iter().enumerate())
                .map(|(j, job)| {
                    let failed = first_failed.get();
                    let skip = failed != usize::MAX && dependents[j].iter().all(|&i| i > failed);
                    let dropped = self
                        .unwanted
                        .as_ref()
                        .is_some_and(|u| dependents[j].iter().all(|&i| u.unwanted(i)));
                    let attempt = self.attempts(job.source, job.range.clone(), &permits);
                    async move {
                        if skip {
                            return (j, Err(skipped(job, failed)));
                        }
                        if dropped {
                            return (j, Err(unwanted(job)));
                        }
                        (j, attempt.await)
                    }
                })
                .buffer_unordered(self.max_in_flight);
            while let Some((j, bytes)) = done.next().await {
                complete(j, bytes);
            }
        });
    }

    /// Reads one request (see [`Fetcher::fetch_many`]).
    pub fn fetch_one(&self, source: &Source, want: Want<'_>) -> Result<Bytes> {
        self.fetch_many(&[(source, want)])
            .pop()
            .unwrap_or_else(|| Err(Error::unsupported("empty fetch")))
    }

    /// One range (or the whole object), retried while the failure is
    /// transient and the source remote; a response shorter than the range
    /// counts as a transient failure.
    async fn attempts(
        &self,
        source: &Source,
        range: Option<Range<u64>>,
        permits: &Semaphore,
    ) -> Result<Bytes> {
        self.retried(source, described(range.as_ref()), || {
            self.attempt(source, range.clone(), permits)
        })
        .await
    }

    /// `op` until it succeeds, fails for good (not found, denied) or has
    /// been tried `GDAL_HTTP_MAX_RETRY` more times (remote sources only),
    /// with exponential backoff; the error names the URL and `described`
    /// (the byte range).
    async fn retried<T, F: std::future::Future<Output = Result<T, Failure>>>(
        &self,
        source: &Source,
        described: String,
        op: impl Fn() -> F,
    ) -> Result<T> {
        let attempts = if source.remote { self.max_retry + 1 } else { 1 };
        let mut delay = self.retry_delay;
        let mut attempt = 1;
        loop {
            let failure = match op().await {
                Ok(done) => return Ok(done),
                Err(failure) => failure,
            };
            if !failure.transient() || attempt >= attempts {
                let reason = failure.describe(source.remote, source.timeout());
                let note = if attempt > 1 {
                    format!(", after {attempt} attempts")
                } else {
                    String::new()
                };
                return Err(Error::Io {
                    url: source.url.clone(),
                    range: described,
                    reason: reason + &note,
                });
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(MAX_BACKOFF);
            attempt += 1;
        }
    }

    /// The first `n` bytes of `source` (all of it when it is shorter) and
    /// its size, from one request (the size comes with the answer), retried
    /// as every read is. Blocks the calling thread.
    pub fn fetch_head(&self, source: &Source, n: u64) -> Result<(Bytes, u64)> {
        runtime().block_on(self.head(source, n))
    }

    /// [`Fetcher::fetch_head`] as a future, for a task on the I/O runtime.
    pub async fn head(&self, source: &Source, n: u64) -> Result<(Bytes, u64)> {
        self.retried(source, described(Some(&(0..n))), || async {
            let store = source.store()?;
            let options = GetOptions {
                range: Some(GetRange::Bounded(0..n.max(1))),
                ..GetOptions::default()
            };
            let got = store.get_opts(&source.path, options).await?;
            let size = got.meta.size;
            let bytes = got.bytes().await?;
            let expected = n.min(size);
            if bytes.len() as u64 != expected {
                return Err(Failure::Short {
                    got: bytes.len(),
                    expected,
                });
            }
            Ok((bytes, size))
        })
        .await
    }

    async fn attempt(
        &self,
        source: &Source,
        range: Option<Range<u64>>,
        permits: &Semaphore,
    ) -> Result<Bytes, Failure> {
        let _permit = permits.acquire().await;
        let store = source.store()?;
        let Some(r) = range else {
            let got = store.get(&source.path).await?;
            return Ok(got.bytes().await?);
        };
        let got = store.get_range(&source.path, r.clone()).await?;
        let expected = r.end - r.start;
        if got.len() as u64 != expected {
            return Err(Failure::Short {
                got: got.len(),
                expected,
            });
        }
        Ok(got)
    }
}

/// Local files open for one batch of reads, by path.
#[derive(Default)]
struct LocalFiles(HashMap<PathBuf, File>);

impl LocalFiles {
    /// Reads `want` of the local `source` with plain file I/O, failing as
    /// the store would (file not found, short read), naming URL and range.
    fn read(&mut self, source: &Source, want: Want<'_>) -> Result<Bytes> {
        let Some(path) = &source.local else {
            return Err(Error::unsupported("a remote source read as a local file"));
        };
        let fail = |range: String, e: std::io::Error| Error::Io {
            url: source.url.clone(),
            range,
            reason: match e.kind() {
                std::io::ErrorKind::NotFound => "file not found".to_string(),
                _ => e.to_string(),
            },
        };
        let file = match self.0.entry(path.clone()) {
            std::collections::hash_map::Entry::Occupied(f) => f.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(File::open(path).map_err(|e| fail(String::new(), e))?)
            }
        };
        let single;
        let ranges = match want {
            Want::Whole => {
                let mut all = Vec::new();
                file.seek(SeekFrom::Start(0))
                    .and_then(|_| file.read_to_end(&mut all))
                    .map_err(|e| fail(String::new(), e))?;
                return Ok(Bytes::from(all));
            }
            Want::Range(offset, length) => {
                single = [(offset, length)];
                &single[..]
            }
            Want::Ranges(ranges) => ranges,
        };
        let ranges = checked_ranges(source, ranges)?;
        let total: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        // Every byte is read into (a short read is an error): a recycled
        // buffer is not zeroed first.
        let mut buffer = scratch_buffer(&format!("reading {}", source.url), total as usize)?;
        let mut at = 0;
        for r in ranges {
            let expected = (r.end - r.start) as usize;
            let into = &mut buffer[at..at + expected];
            at += expected;
            // One positioned read per range (no seek, no end-of-file probe).
            let mut got = 0;
            while got < expected {
                match file.read_at(&mut into[got..], r.start + got as u64) {
                    Ok(0) => break,
                    Ok(n) => got += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(fail(format!(" bytes {}..{}", r.start, r.end), e)),
                }
            }
            if got != expected {
                return Err(Error::Io {
                    url: source.url.clone(),
                    range: format!(" bytes {}..{}", r.start, r.end),
                    reason: format!("short read: expected {expected} bytes, got {got}"),
                });
            }
        }
        Ok(Bytes::from(buffer))
    }
}

/// The ranges of `ranges` as `start..end`, refusing overflowing ends and
/// totals larger than memory.
fn checked_ranges(source: &Source, ranges: &[(u64, u64)]) -> Result<Vec<Range<u64>>> {
    let mut total: u64 = 0;
    ranges
        .iter()
        .map(|&(o, l)| {
            let end = o.checked_add(l).ok_or_else(|| Error::Io {
                url: source.url.clone(),
                range: format!(" bytes {o}+{l}"),
                reason: "range overflows".into(),
            })?;
            total = total
                .checked_add(l)
                .filter(|t| usize::try_from(*t).is_ok())
                .ok_or_else(|| Error::Limits {
                    what: format!("ranges of {} add up to more than memory", source.url),
                })?;
            Ok(o..end)
        })
        .collect()
}

/// How errors name a byte range: ` bytes a..b`, or nothing for a whole
/// object.
fn described(range: Option<&Range<u64>>) -> String {
    range.map_or(String::new(), |r| format!(" bytes {}..{}", r.start, r.end))
}

/// The error of `job`, not read because request `failed`, before it in
/// the same read, had failed.
fn skipped(job: &Job<'_>, failed: usize) -> Error {
    Error::Io {
        url: job.source.url.clone(),
        range: described(job.range.as_ref()),
        reason: format!("not read: request {failed} of the same read failed first"),
    }
}

/// The error of a request not made because it was no longer wanted.
fn unwanted(job: &Job<'_>) -> Error {
    Error::Io {
        url: job.source.url.clone(),
        range: described(job.range.as_ref()),
        reason: "not read: no longer wanted".into(),
    }
}

/// The jobs `pieces` are cut from, each once.
fn distinct_jobs(pieces: &[Piece]) -> Vec<usize> {
    let mut jobs: Vec<usize> = pieces.iter().map(|&(job, _, _)| job).collect();
    jobs.sort_unstable();
    jobs.dedup();
    jobs
}

/// Concatenates the pieces of one request out of the fetched jobs (all of
/// which are in).
fn assemble_pieces(fetched: &[Option<Result<Bytes>>], pieces: &[Piece]) -> Result<Bytes> {
    let slice = |&(job, offset, length): &Piece| -> Result<Bytes> {
        let span = fetched[job]
            .as_ref()
            .ok_or_else(|| Error::unsupported("a span used before it was fetched"))?
            .as_ref()
            .map_err(Clone::clone)?;
        if length == u64::MAX {
            return Ok(span.clone());
        }
        Ok(span.slice(offset as usize..(offset + length) as usize))
    };
    match pieces {
        [one] => slice(one),
        _ => {
            let parts = pieces.iter().map(slice).collect::<Result<Vec<_>>>()?;
            let mut out = BytesMut::with_capacity(parts.iter().map(Bytes::len).sum());
            for part in parts {
                out.extend_from_slice(&part);
            }
            Ok(out.freeze())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(max_requests: usize) -> Settings {
        let n = max_requests.to_string();
        Settings::from_lookup(|k| (k == "CHUNKREF_MAX_REQUESTS").then(|| n.clone())).unwrap()
    }

    #[test]
    fn reads_ranges_in_order_and_reports_short_reads() {
        let dir = std::env::temp_dir().join(format!("chunkref-fetch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("f.bin");
        std::fs::write(&f, b"0123456789").unwrap();
        let s = settings(2);
        let src = Source::open(&Location::Local(f.clone()), &s).unwrap();
        let fetcher = Fetcher::new(&s);
        let got = fetcher
            .fetch_one(&src, Want::Ranges(&[(7, 2), (1, 3), (0, 1)]))
            .unwrap();
        assert_eq!(&got[..], b"781230");
        assert_eq!(
            &fetcher.fetch_one(&src, Want::Whole).unwrap()[..],
            b"0123456789"
        );
        let e = fetcher
            .fetch_one(&src, Want::Ranges(&[(8, 5)]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("f.bin") && e.contains("8..13"), "{e}");
        let missing = Source::open(&Location::Local(dir.join("nope.bin")), &s).unwrap();
        let e = fetcher
            .fetch_one(&missing, Want::Whole)
            .unwrap_err()
            .to_string();
        assert!(e.contains("nope.bin") && e.contains("not found"), "{e}");

        // Many requests, fewer permits than ranges: results come back in order.
        let ranges: Vec<[(u64, u64); 2]> = (0..9).map(|i| [(i, 1), (9 - i, 1)]).collect();
        let requests: Vec<(&Source, Want<'_>)> =
            ranges.iter().map(|r| (&src, Want::Ranges(r))).collect();
        let got = fetcher.fetch_many(&requests);
        for (i, g) in got.into_iter().enumerate() {
            let want = format!("{i}{}", 9 - i);
            assert_eq!(&g.unwrap()[..], want.as_bytes());
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn spans_are_dropped_once_every_request_cut_from_them_is_handed_on() {
        let dir = std::env::temp_dir().join(format!("chunkref-spans-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("f.bin");
        std::fs::write(&f, vec![7u8; 1 << 20]).unwrap();
        // Through the store (the path remote sources take), one request in
        // flight: ranges far apart are spans of their own, completed in turn.
        let s = settings(1);
        let mut src = Source::open(&Location::Local(f), &s).unwrap();
        src.local = None;
        let fetcher = Fetcher {
            coalesce_gap: 0,
            ..Fetcher::new(&s)
        };
        let requests: Vec<(&Source, Want<'_>)> = (0..4)
            .map(|i| (&src, Want::Range(i * (256 << 10), 1000)))
            .collect();
        let mut handed: Vec<Bytes> = Vec::new();
        fetcher.fetch_each(&requests, |_, bytes| {
            // The requests handed on before hold the only reference to
            // their span: the fetcher kept none.
            assert!(handed.iter_mut().all(|b| b.is_unique()));
            handed.push(bytes.unwrap());
        });
        assert_eq!(handed.len(), 4);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn ip_and_localhost_endpoints_have_no_subdomains() {
        for yes in [
            "127.0.0.1:9000",
            "http://127.0.0.1:9000/",
            "http://localhost:5000",
            "localhost",
            "http://[::1]:9000",
        ] {
            assert!(has_no_subdomains(yes), "{yes}");
        }
        for no in ["s3.example.com", "https://minio.lan:9000", "http://s3:2"] {
            assert!(!has_no_subdomains(no), "{no}");
        }
    }

    #[test]
    fn stores_are_shared_per_bucket_and_settings() {
        let s = settings(4);
        let loc =
            |u: &str| crate::io::resolve::resolve(u, &crate::io::resolve::Base::Dir("/".into()));
        let a = Source::open(&loc("s3://bkt/a").unwrap(), &s).unwrap();
        let b = Source::open(&loc("/vsis3/bkt/b").unwrap(), &s).unwrap();
        let c = Source::open(&loc("s3://other/b").unwrap(), &s).unwrap();
        let mut s2 = s.clone();
        s2.aws.no_sign_request = true;
        let d = Source::open(&loc("s3://bkt/a").unwrap(), &s2).unwrap();
        let store = |s: &Source| s.store().unwrap();
        assert!(Arc::ptr_eq(&store(&a), &store(&b)));
        assert!(!Arc::ptr_eq(&store(&a), &store(&c)));
        assert!(!Arc::ptr_eq(&store(&a), &store(&d)));
        for url in [
            "gs://bkt/k",
            "abfs://c@acct.dfs.core.windows.net/k",
            "https://h/k",
        ] {
            let src = Source::open(&loc(url).unwrap(), &s);
            assert!(src.is_ok(), "{url}: {:?}", src.err());
        }
        // Azure needs an account: the error names the URL.
        let e = Source::open(&loc("az://c/k").unwrap(), &s)
            .unwrap_err()
            .to_string();
        assert!(e.contains("az://c/k"), "{e}");
        let mut az = s.clone();
        az.azure.account = Some("acct".into());
        assert!(Source::open(&loc("az://c/k").unwrap(), &az).is_ok());
        let h = Source::open(&loc("http://127.0.0.1:1/x%20y.tif").unwrap(), &s).unwrap();
        assert_eq!(h.path.as_ref(), "x y.tif");
        // A signed URL: the path without its query; a store per signature.
        let signed = |q: &str| Source::open(&loc(&format!("https://h/d/x.tif?{q}")).unwrap(), &s);
        let (one, two) = (signed("sig=1").unwrap(), signed("sig=2").unwrap());
        assert_eq!(one.path.as_ref(), "d/x.tif");
        assert!(!Arc::ptr_eq(&store(&one), &store(&two)));
        assert!(Arc::ptr_eq(&store(&one), &store(&signed("sig=1").unwrap())));
        let e = Source::open(&loc("https://h/x#part").unwrap(), &s)
            .unwrap_err()
            .to_string();
        assert!(e.contains("%23"), "{e}");
    }
}
