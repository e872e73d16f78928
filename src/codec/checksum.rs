//! Checksum codecs (`crc32c`, `fletcher32`): a 32-bit checksum of the data
//! stored as 4 little-endian bytes after it (or, with numcodecs'
//! `"location": "start"`, before it), verified and stripped on decode.

use bytes::Bytes;

use super::{Codec, DecodeContext};
use crate::base::error::{Error, Result};
use crate::codec::config::{config_str, Config};

/// Bytes of the stored checksum.
const CHECKSUM_LEN: usize = 4;

/// Where the checksum is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Location {
    Start,
    End,
}

/// Verifies and strips a 32-bit checksum.
#[derive(Debug)]
pub(super) struct Checksum {
    name: &'static str,
    sum: fn(&[u8]) -> u32,
    location: Location,
}

impl Checksum {
    /// The codec `name` checking `sum`; `location` in `config` is `"end"`
    /// (the default) or `"start"`.
    pub(super) fn from_config(
        name: &'static str,
        sum: fn(&[u8]) -> u32,
        config: &Config,
    ) -> Result<Box<dyn Codec>> {
        let location = match config_str(name, config, "location")? {
            None | Some("end") => Location::End,
            Some("start") => Location::Start,
            Some(other) => {
                return Err(Error::codec_config(
                    name,
                    format!("'location' should be \"start\" or \"end\", found \"{other}\""),
                ))
            }
        };
        Ok(Box::new(Checksum {
            name,
            sum,
            location,
        }))
    }
}

impl Codec for Checksum {
    fn name(&self) -> &str {
        self.name
    }

    fn decode(&self, input: Bytes, _ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let Some(data_len) = input.len().checked_sub(CHECKSUM_LEN) else {
            return Err(Error::decode(
                self.name(),
                format!(
                    "needs a {CHECKSUM_LEN}-byte checksum, chunk has {} bytes",
                    input.len()
                ),
            ));
        };
        let (data_at, sum_at) = match self.location {
            Location::End => (0, data_len),
            Location::Start => (CHECKSUM_LEN, 0),
        };
        let data = input.slice(data_at..data_at + data_len);
        let mut stored = [0u8; CHECKSUM_LEN];
        stored.copy_from_slice(&input[sum_at..sum_at + CHECKSUM_LEN]);
        let stored = u32::from_le_bytes(stored);
        let computed = (self.sum)(&data);
        if stored != computed {
            return Err(Error::decode(
                self.name(),
                format!(
                    "checksum mismatch: stored {stored:#010x}, computed {computed:#010x} \
                     over {data_len} bytes"
                ),
            ));
        }
        Ok(data)
    }
}
