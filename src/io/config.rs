//! Settings for remote reads, read the GDAL way: a GDAL configuration option
//! (`--config KEY VALUE`, `CPLSetConfigOption`) wins over the environment
//! variable of the same name. Read once per dataset open, on the opening
//! thread (GDAL configuration options may be thread-local).

use std::collections::HashMap;
use std::time::Duration;

use crate::base::error::{Error, Result};

/// Requests in flight per read when `CHUNKREF_MAX_REQUESTS` is not set.
pub const DEFAULT_MAX_REQUESTS: usize = 64;
/// Default of `CHUNKREF_COALESCE_GAP` (1 MiB: at object-store latencies,
/// reading a megabyte costs about as much as one more round trip; gaps are
/// read only when requests outnumber the slots in flight, see
/// `fetch::coalesce`).
pub const DEFAULT_COALESCE_GAP: u64 = 1 << 20;
/// Default of `CHUNKREF_TABLE_EAGER_ROWS`: one million rows.
pub const DEFAULT_TABLE_EAGER_ROWS: u64 = 1 << 20;
/// Largest accepted `CHUNKREF_COALESCE_GAP` (1 GiB).
const MAX_COALESCE_GAP: u64 = 1 << 30;
/// Retries of a failed request when `GDAL_HTTP_MAX_RETRY` is not set.
pub const DEFAULT_MAX_RETRY: u32 = 3;
/// First retry delay when `GDAL_HTTP_RETRY_DELAY` is not set.
pub const DEFAULT_RETRY_DELAY: Duration = Duration::from_millis(500);

/// S3 settings (GDAL's `/vsis3/` option names).
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct AwsSettings {
    /// `AWS_ACCESS_KEY_ID`, else from the `AWS_PROFILE` profile (as are the
    /// secret, the token and, when not set, the region)
    pub access_key_id: Option<String>,
    /// `AWS_SECRET_ACCESS_KEY`
    pub secret_access_key: Option<String>,
    /// `AWS_SESSION_TOKEN`
    pub session_token: Option<String>,
    /// `AWS_REGION`, else `AWS_DEFAULT_REGION`
    pub region: Option<String>,
    /// `AWS_S3_ENDPOINT`: `host[:port]` (GDAL form) or a full URL; else
    /// `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL` (the AWS SDKs' and
    /// CLI's names, full URLs).
    pub endpoint: Option<String>,
    /// `AWS_HTTPS` (default YES): scheme used with a bare `AWS_S3_ENDPOINT`.
    pub https: bool,
    /// `AWS_VIRTUAL_HOSTING` (default YES, as in GDAL; NO for path-style).
    pub virtual_hosting: bool,
    /// `AWS_NO_SIGN_REQUEST`: anonymous (unsigned) requests.
    pub no_sign_request: bool,
    /// Why the `AWS_PROFILE` profile could not be read: an error for S3
    /// stores only (as GDAL reads profiles only to sign S3 requests, a bad
    /// profile does not stop local or HTTP reads).
    pub profile_error: Option<String>,
}

/// Google Cloud Storage settings.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct GcsSettings {
    /// `GOOGLE_APPLICATION_CREDENTIALS`: service account JSON file.
    pub credentials_file: Option<String>,
    /// `GS_NO_SIGN_REQUEST`: anonymous requests.
    pub no_sign_request: bool,
    /// `CPL_GS_ENDPOINT` (GDAL's name): the server, for emulators and
    /// gateways (`https://storage.googleapis.com` when unset).
    pub endpoint: Option<String>,
}

/// Azure Blob Storage settings.
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct AzureSettings {
    /// `AZURE_STORAGE_ACCOUNT` (for `az://container/...` URLs).
    pub account: Option<String>,
    /// `AZURE_STORAGE_ACCESS_KEY`
    pub access_key: Option<String>,
    /// `AZURE_STORAGE_SAS_TOKEN` (query string, with or without `?`).
    pub sas_token: Option<String>,
    /// `AZURE_NO_SIGN_REQUEST`: anonymous requests.
    pub no_sign_request: bool,
    /// The `BlobEndpoint` of `AZURE_STORAGE_CONNECTION_STRING`: the blob
    /// service of the account (Azurite's is `http://127.0.0.1:10000/<account>`).
    pub endpoint: Option<String>,
}

impl AzureSettings {
    /// The settings GDAL reads, in its order: `AZURE_STORAGE_CONNECTION_STRING`
    /// (`AccountName`, `AccountKey`, `SharedAccessSignature`, `BlobEndpoint`)
    /// before `AZURE_STORAGE_ACCOUNT`, `AZURE_STORAGE_ACCESS_KEY` and
    /// `AZURE_STORAGE_SAS_TOKEN`.
    fn from_lookup(get: &impl Fn(&str) -> Option<String>, no_sign_request: bool) -> Self {
        let connection: HashMap<String, String> = get("AZURE_STORAGE_CONNECTION_STRING")
            .unwrap_or_default()
            .split(';')
            .filter_map(|pair| pair.split_once('='))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let part = |key: &str| connection.get(key).filter(|v| !v.is_empty()).cloned();
        AzureSettings {
            account: part("accountname").or_else(|| get("AZURE_STORAGE_ACCOUNT")),
            access_key: part("accountkey").or_else(|| get("AZURE_STORAGE_ACCESS_KEY")),
            sas_token: part("sharedaccesssignature").or_else(|| get("AZURE_STORAGE_SAS_TOKEN")),
            no_sign_request,
            endpoint: part("blobendpoint").map(|e| e.trim_end_matches('/').to_string()),
        }
    }
}

/// HTTP behaviour shared by every remote store.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HttpSettings {
    /// `GDAL_HTTP_TIMEOUT` (seconds): limit for one request.
    pub timeout: Option<Duration>,
    /// `GDAL_HTTP_MAX_RETRY`: retries after a 5xx, timeout, dropped
    /// connection or short body.
    pub max_retry: u32,
    /// `GDAL_HTTP_RETRY_DELAY` (seconds): first retry delay, doubled at
    /// each further retry.
    pub retry_delay: Duration,
}

/// Everything the resolve and fetch stages are configured with.
#[derive(Clone, PartialEq)]
pub struct Settings {
    /// S3
    pub aws: AwsSettings,
    /// Google Cloud Storage
    pub gcs: GcsSettings,
    /// Azure
    pub azure: AzureSettings,
    /// Timeouts and retries
    pub http: HttpSettings,
    /// `CHUNKREF_MAX_REQUESTS`: requests in flight at once per read.
    pub max_requests: usize,
    /// `CHUNKREF_COALESCE_GAP`: the widest gap between two ranges of one
    /// object read to save a request (when requests outnumber the slots in
    /// flight).
    pub coalesce_gap: u64,
    /// `GDAL_ALLOW_REMOTE_RESOURCE_TO_ACCESS_LOCAL_FILE` (or
    /// `CHUNKREF_ALLOW_REMOTE_INDEX_LOCAL_FILES`): may an index read from a
    /// remote location refer to local files?
    pub remote_may_read_local: bool,
    /// `CHUNKREF_INDEX_CACHE` (default YES): keep recently opened local
    /// index files parsed for the next open (see [`crate::read::index_cache`]).
    pub index_cache: bool,
    /// `CHUNKREF_TABLE_EAGER_ROWS`: reference tables (Parquet, FlatGeobuf)
    /// of at most this many rows are read whole when opened; larger ones
    /// are read on demand, row group by row group.
    pub table_eager_rows: u64,
    /// `CHUNKREF_MOSAIC_CACHE`: MiB of decoded scene chunks a mosaic keeps
    /// (`0`: none); unset, those under four rows of its blocks, at most a
    /// quarter of GDAL's block cache.
    pub mosaic_cache_mib: Option<u64>,
    /// `CHUNKREF_FETCH_CACHE`: MiB of fetched bytes of remote chunks
    /// decoded only in part kept for a second read nearby, and fetched
    /// ahead of block reads (`0`: none); unset,
    /// [`crate::base::gdal::cpl::fetch_cache_default`].
    pub fetch_cache_mib: Option<u64>,
}

impl Settings {
    /// Reads the settings from GDAL configuration options (which GDAL takes
    /// from the environment when they are not set).
    pub fn from_gdal() -> Result<Settings> {
        Settings::from_lookup(crate::base::gdal::cpl::config_option)
    }

    /// Reads the settings through `get` (option name -> value).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Settings> {
        let flag = |k: &str, default: bool| get(k).map_or(default, |v| test_bool(&v));
        let seconds = |k: &str| -> Result<Option<Duration>> {
            get(k)
                .map(|v| {
                    v.trim()
                        .parse::<f64>()
                        .ok()
                        .filter(|s| s.is_finite() && *s >= 0.0 && *s < 1e9)
                        .map(Duration::from_secs_f64)
                        .ok_or_else(|| bad_option(k, &v, "a number of seconds"))
                })
                .transpose()
        };
        let count = |k: &str| -> Result<Option<u64>> {
            get(k)
                .map(|v| {
                    v.trim()
                        .parse::<u64>()
                        .map_err(|_| bad_option(k, &v, "a whole number"))
                })
                .transpose()
        };
        let max_requests = match count("CHUNKREF_MAX_REQUESTS")? {
            None => DEFAULT_MAX_REQUESTS,
            Some(n @ 1..=4096) => n as usize,
            Some(n) => {
                return Err(bad_option(
                    "CHUNKREF_MAX_REQUESTS",
                    &n.to_string(),
                    "between 1 and 4096",
                ))
            }
        };
        let coalesce_gap = match count("CHUNKREF_COALESCE_GAP")? {
            None => DEFAULT_COALESCE_GAP,
            Some(n @ 0..=MAX_COALESCE_GAP) => n,
            Some(n) => {
                return Err(bad_option(
                    "CHUNKREF_COALESCE_GAP",
                    &n.to_string(),
                    "a number of bytes up to 1073741824",
                ))
            }
        };
        let max_retry = match count("GDAL_HTTP_MAX_RETRY")? {
            None => DEFAULT_MAX_RETRY,
            Some(n @ 0..=100) => n as u32,
            Some(n) => {
                return Err(bad_option(
                    "GDAL_HTTP_MAX_RETRY",
                    &n.to_string(),
                    "between 0 and 100",
                ))
            }
        };
        let table_eager_rows =
            count("CHUNKREF_TABLE_EAGER_ROWS")?.unwrap_or(DEFAULT_TABLE_EAGER_ROWS);
        let no_sign_request = flag("AWS_NO_SIGN_REQUEST", false);
        let (mut access_key_id, mut secret_access_key, mut session_token) = (
            get("AWS_ACCESS_KEY_ID"),
            get("AWS_SECRET_ACCESS_KEY"),
            get("AWS_SESSION_TOKEN"),
        );
        let mut region = get("AWS_REGION").or_else(|| get("AWS_DEFAULT_REGION"));
        let mut profile_error = None;
        if access_key_id.is_none() && !no_sign_request {
            match aws_profile(&get) {
                Ok(profile) => {
                    access_key_id = profile.get("aws_access_key_id").cloned();
                    secret_access_key = profile.get("aws_secret_access_key").cloned();
                    session_token = profile.get("aws_session_token").cloned();
                    region = region.or_else(|| profile.get("region").cloned());
                }
                Err(e) => profile_error = Some(e.to_string()),
            }
        }
        Ok(Settings {
            aws: AwsSettings {
                access_key_id,
                secret_access_key,
                session_token,
                region,
                endpoint: get("AWS_S3_ENDPOINT")
                    .or_else(|| get("AWS_ENDPOINT_URL_S3"))
                    .or_else(|| get("AWS_ENDPOINT_URL")),
                https: flag("AWS_HTTPS", true),
                virtual_hosting: flag("AWS_VIRTUAL_HOSTING", true),
                no_sign_request,
                profile_error,
            },
            gcs: GcsSettings {
                credentials_file: get("GOOGLE_APPLICATION_CREDENTIALS"),
                no_sign_request: flag("GS_NO_SIGN_REQUEST", false),
                endpoint: get("CPL_GS_ENDPOINT").map(|e| e.trim_end_matches('/').to_string()),
            },
            azure: AzureSettings::from_lookup(&get, flag("AZURE_NO_SIGN_REQUEST", false)),
            http: HttpSettings {
                timeout: seconds("GDAL_HTTP_TIMEOUT")?.filter(|d| !d.is_zero()),
                max_retry,
                retry_delay: seconds("GDAL_HTTP_RETRY_DELAY")?.unwrap_or(DEFAULT_RETRY_DELAY),
            },
            max_requests,
            coalesce_gap,
            remote_may_read_local: flag("GDAL_ALLOW_REMOTE_RESOURCE_TO_ACCESS_LOCAL_FILE", false)
                || flag("CHUNKREF_ALLOW_REMOTE_INDEX_LOCAL_FILES", false),
            index_cache: flag("CHUNKREF_INDEX_CACHE", true),
            table_eager_rows,
            mosaic_cache_mib: count("CHUNKREF_MOSAIC_CACHE")?,
            fetch_cache_mib: count("CHUNKREF_FETCH_CACHE")?,
        })
    }
}

/// The settings of an AWS profile, as GDAL reads them: the section
/// `[NAME]` of the shared credentials file (`AWS_SHARED_CREDENTIALS_FILE`,
/// else `~/.aws/credentials`) over the section `[profile NAME]` (`[default]`)
/// of the config file (`AWS_CONFIG_FILE`, else `~/.aws/config`). NAME is
/// `AWS_PROFILE`, else `AWS_DEFAULT_PROFILE`, else `default`; a profile
/// named explicitly must exist.
fn aws_profile(get: &impl Fn(&str) -> Option<String>) -> Result<HashMap<String, String>> {
    let named = get("AWS_PROFILE").or_else(|| get("AWS_DEFAULT_PROFILE"));
    let name = named.clone().unwrap_or_else(|| "default".into());
    let home = get("HOME").unwrap_or_default();
    let file =
        |key: &str, default: &str| get(key).unwrap_or_else(|| format!("{home}/.aws/{default}"));
    let credentials = file("AWS_SHARED_CREDENTIALS_FILE", "credentials");
    let config = file("AWS_CONFIG_FILE", "config");
    let config_section = if name == "default" {
        name.clone()
    } else {
        format!("profile {name}")
    };
    let mut found = false;
    let mut values = HashMap::new();
    for (path, section) in [(&config, &config_section), (&credentials, &name)] {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        if let Some(pairs) = ini_section(&text, section) {
            found = true;
            values.extend(pairs);
        }
    }
    match named {
        Some(n) if !found => Err(Error::Usage {
            what: format!("AWS_PROFILE={n}: no such profile in {credentials} or {config}"),
        }),
        _ => Ok(values),
    }
}

/// The `key = value` pairs of `[section]` in an INI text, if it has one.
fn ini_section(text: &str, section: &str) -> Option<HashMap<String, String>> {
    let mut current: Option<bool> = None;
    let mut found = None;
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let here = name.trim() == section;
            current = Some(here);
            if here {
                found.get_or_insert_with(HashMap::new);
            }
        } else if let (Some(true), Some((k, v))) = (current, line.split_once('=')) {
            if let Some(map) = found.as_mut() {
                map.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
            }
        }
    }
    found
}

/// GDAL's `CPLTestBool`: everything but NO, FALSE, OFF and 0 is true.
pub(crate) fn test_bool(v: &str) -> bool {
    !["NO", "FALSE", "OFF", "0"]
        .iter()
        .any(|f| v.trim().eq_ignore_ascii_case(f))
}

fn bad_option(key: &str, value: &str, expected: &str) -> Error {
    Error::Usage {
        what: format!("configuration option {key}={value}: expected {expected}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> Result<Settings> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn endpoints_in_gdal_then_sdk_order() {
        let endpoint = |pairs: &[(&str, &str)]| settings(pairs).unwrap().aws.endpoint;
        let gdal = ("AWS_S3_ENDPOINT", "gdal:1");
        let s3 = ("AWS_ENDPOINT_URL_S3", "http://s3:2");
        let any = ("AWS_ENDPOINT_URL", "http://any:3");
        assert_eq!(endpoint(&[gdal, s3, any]).as_deref(), Some("gdal:1"));
        assert_eq!(endpoint(&[s3, any]).as_deref(), Some("http://s3:2"));
        assert_eq!(endpoint(&[any]).as_deref(), Some("http://any:3"));
        assert_eq!(endpoint(&[]), None);
    }

    #[test]
    fn azure_connection_string_before_the_single_settings() {
        let azurite = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;\
                       AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1/;";
        let s = settings(&[
            ("AZURE_STORAGE_CONNECTION_STRING", azurite),
            ("AZURE_STORAGE_ACCOUNT", "other"),
            ("AZURE_STORAGE_SAS_TOKEN", "sv=1"),
        ])
        .unwrap()
        .azure;
        assert_eq!(s.account.as_deref(), Some("devstoreaccount1"));
        assert_eq!(s.access_key.as_deref(), Some("a2V5"));
        assert_eq!(s.sas_token.as_deref(), Some("sv=1"));
        assert_eq!(
            s.endpoint.as_deref(),
            Some("http://127.0.0.1:10000/devstoreaccount1")
        );
        let plain = settings(&[("AZURE_STORAGE_ACCOUNT", "acct")])
            .unwrap()
            .azure;
        assert_eq!(
            (plain.account.as_deref(), plain.endpoint),
            (Some("acct"), None)
        );
    }

    #[test]
    fn defaults() {
        let s = settings(&[]).unwrap();
        assert_eq!(s.max_requests, DEFAULT_MAX_REQUESTS);
        assert_eq!(s.http.max_retry, DEFAULT_MAX_RETRY);
        assert_eq!(s.http.retry_delay, DEFAULT_RETRY_DELAY);
        assert_eq!(s.http.timeout, None);
        assert!(s.aws.https && s.aws.virtual_hosting && !s.aws.no_sign_request);
        assert!(!s.remote_may_read_local);
    }

    #[test]
    fn parses_values_gdal_style() {
        let s = settings(&[
            ("AWS_HTTPS", "NO"),
            ("AWS_VIRTUAL_HOSTING", "FALSE"),
            ("AWS_NO_SIGN_REQUEST", "YES"),
            ("AWS_DEFAULT_REGION", "eu-west-1"),
            ("GDAL_HTTP_TIMEOUT", "2.5"),
            ("GDAL_HTTP_MAX_RETRY", "0"),
            ("GDAL_HTTP_RETRY_DELAY", "0.1"),
            ("CHUNKREF_MAX_REQUESTS", "8"),
            ("CHUNKREF_ALLOW_REMOTE_INDEX_LOCAL_FILES", "ON"),
        ])
        .unwrap();
        assert!(!s.aws.https && !s.aws.virtual_hosting && s.aws.no_sign_request);
        assert_eq!(s.aws.region.as_deref(), Some("eu-west-1"));
        assert_eq!(s.http.timeout, Some(Duration::from_millis(2500)));
        assert_eq!(s.http.max_retry, 0);
        assert_eq!(s.http.retry_delay, Duration::from_millis(100));
        assert_eq!(s.max_requests, 8);
        assert!(s.remote_may_read_local);
        let s = settings(&[("AWS_REGION", "us-west-2"), ("AWS_DEFAULT_REGION", "x")]).unwrap();
        assert_eq!(s.aws.region.as_deref(), Some("us-west-2"));
    }

    #[test]
    fn aws_profiles_from_the_shared_files() {
        let dir = std::env::temp_dir().join(format!("chunkref-profile-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(".aws")).unwrap();
        std::fs::write(
            dir.join(".aws/credentials"),
            "[default]\naws_access_key_id = DK\naws_secret_access_key = DS\n\n\
             # comment\n[work]\nAWS_ACCESS_KEY_ID=WK\naws_secret_access_key=WS\naws_session_token=WT\n",
        )
        .unwrap();
        std::fs::write(
            dir.join(".aws/config"),
            "[default]\nregion = eu-west-1\n[profile work]\nregion = ap-south-1\n",
        )
        .unwrap();
        let home = dir.to_str().unwrap();
        let s = settings(&[("HOME", home)]).unwrap();
        assert_eq!(s.aws.access_key_id.as_deref(), Some("DK"));
        assert_eq!(s.aws.region.as_deref(), Some("eu-west-1"));
        let s = settings(&[("HOME", home), ("AWS_PROFILE", "work")]).unwrap();
        assert_eq!(s.aws.access_key_id.as_deref(), Some("WK"));
        assert_eq!(s.aws.secret_access_key.as_deref(), Some("WS"));
        assert_eq!(s.aws.session_token.as_deref(), Some("WT"));
        assert_eq!(s.aws.region.as_deref(), Some("ap-south-1"));
        // Explicit keys and region win; a missing named profile is an error.
        let s = settings(&[
            ("HOME", home),
            ("AWS_ACCESS_KEY_ID", "K"),
            ("AWS_SECRET_ACCESS_KEY", "S"),
            ("AWS_REGION", "us-west-2"),
        ])
        .unwrap();
        assert_eq!(s.aws.access_key_id.as_deref(), Some("K"));
        assert_eq!(s.aws.region.as_deref(), Some("us-west-2"));
        // A missing named profile fails S3 stores only.
        let s = settings(&[("HOME", home), ("AWS_PROFILE", "nope")]).unwrap();
        let e = s.aws.profile_error.clone().unwrap_or_default();
        assert!(
            e.contains("AWS_PROFILE=nope") && e.contains("credentials"),
            "{e}"
        );
        let loc =
            |u: &str| crate::io::resolve::resolve(u, &crate::io::resolve::Base::Dir("/".into()));
        let e = crate::io::fetch::Source::open(&loc("s3://bkt/k").unwrap(), &s)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("s3://bkt/k") && e.contains("AWS_PROFILE=nope"),
            "{e}"
        );
        assert!(crate::io::fetch::Source::open(&loc("https://h/k").unwrap(), &s).is_ok());
        assert!(crate::io::fetch::Source::open(&loc("/tmp/k.tif").unwrap(), &s).is_ok());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn bad_values_name_the_option() {
        for (k, v) in [
            ("GDAL_HTTP_TIMEOUT", "soon"),
            ("GDAL_HTTP_MAX_RETRY", "-1"),
            ("CHUNKREF_MAX_REQUESTS", "0"),
            ("GDAL_HTTP_RETRY_DELAY", "inf"),
        ] {
            let e = settings(&[(k, v)]).err().unwrap().to_string();
            assert!(e.contains(k) && e.contains(v), "{e}");
        }
    }

    #[test]
    fn gdal_config_options_win_over_the_environment() {
        let key = "CHUNKREF_MAX_REQUESTS";
        std::env::set_var(key, "5");
        assert_eq!(Settings::from_gdal().unwrap().max_requests, 5);
        crate::base::gdal::cpl::set_config_option(key, Some("7"));
        assert_eq!(Settings::from_gdal().unwrap().max_requests, 7);
        crate::base::gdal::cpl::set_config_option(key, None);
        std::env::remove_var(key);
        assert_eq!(
            Settings::from_gdal().unwrap().max_requests,
            DEFAULT_MAX_REQUESTS
        );
    }
}
