//! Decompressing streams drained into memory, never past the decoded
//! chunk's size.

use std::io::Read;

use bytes::Bytes;

use crate::base::buffers::output_buffer;
use crate::base::error::{Error, Result};
use crate::codec::DecodeContext;

/// Drains a decompressing reader into memory.
///
/// A stage may decode to fewer bytes than the chunk (a later filter such as
/// `delta` with a narrower `astype` widens them again) but never to more, so
/// the output is capped at `ctx.decoded_len`: a stream that goes on past that
/// is an error, and the only allocation is that of the capped buffer.
pub(crate) fn read_bounded(
    codec: &str,
    reader: impl Read,
    ctx: &DecodeContext<'_>,
) -> Result<Bytes> {
    let limit = ctx.decoded_len;
    let mut out = output_buffer(codec, limit.saturating_add(1))?;
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    reader.take(cap).read_to_end(&mut out).map_err(|e| {
        Error::decode(
            codec,
            format!("corrupt, truncated or unsupported stream: {e}"),
        )
    })?;
    if out.len() > limit {
        return Err(Error::decode(
            codec,
            format!("stream decodes to more than {limit} bytes, the size of the decoded chunk"),
        ));
    }
    Ok(Bytes::from(out))
}
