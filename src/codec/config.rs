//! A codec's configuration object, the readers of its fields, and the
//! constructor type that takes it.

use crate::base::error::{Error, Result};
use crate::codec::Codec;

/// The configuration object of a codec (the v2 codec object or the v3
/// `configuration` member).
pub type Config = serde_json::Map<String, serde_json::Value>;

/// Reads an optional non-negative integer field; `null` counts as absent.
pub(crate) fn config_uint(codec: &str, config: &Config, key: &str) -> Result<Option<u64>> {
    match config.get(key) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(value) => value.as_u64().map(Some).ok_or_else(|| {
            Error::codec_config(
                codec,
                format!("'{key}' should be a non-negative integer, found {value}"),
            )
        }),
    }
}

/// Reads an optional string field; `null` counts as absent.
pub(crate) fn config_str<'a>(
    codec: &str,
    config: &'a Config,
    key: &str,
) -> Result<Option<&'a str>> {
    match config.get(key) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(value) => value.as_str().map(Some).ok_or_else(|| {
            Error::codec_config(codec, format!("'{key}' should be a string, found {value}"))
        }),
    }
}

/// A codec constructor.
pub type BuildFn = fn(&Config) -> Result<Box<dyn Codec>>;
