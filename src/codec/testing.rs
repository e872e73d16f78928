//! Helpers the codec tests share: decode contexts, configurations, sample
//! bytes, and decoding a codec by name through the registry (with corrupted
//! inputs too).

use bytes::Bytes;

use crate::base::dtype::DataType;
use crate::base::error::Result;
use crate::codec::config::Config;
use crate::codec::registry::build;
use crate::codec::DecodeContext;

/// A decode context for a chunk of `decoded_len` bytes of `u1`.
pub(crate) fn ctx(decoded_len: usize) -> DecodeContext<'static> {
    DecodeContext {
        chunk_shape: &[],
        chunk_index: &[],
        dtype: DataType::from_v2("|u1").expect("u1 parses"),
        decoded_len,
        needed: decoded_len,
        first_needed: 0,
    }
}

/// Parses a JSON object literal into a [`Config`].
pub(crate) fn config(json: &str) -> Config {
    serde_json::from_str(json).expect("test config is a JSON object")
}

/// Decodes hex text (whitespace ignored) into bytes.
pub(crate) fn hex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
        .collect()
}

/// Bytes that compress well but are not trivial.
pub(crate) fn sample(len: usize) -> Vec<u8> {
    (0..len).map(|i| ((i * 7) % 251 / 3) as u8).collect()
}

/// Builds codec `name` with config `json`, decodes `input` for a chunk
/// of `decoded_len` bytes.
pub(crate) fn decode_with(
    name: &str,
    json: &str,
    input: &[u8],
    decoded_len: usize,
) -> Result<Bytes> {
    let codec = build(name, &config(json))?;
    codec.decode(Bytes::copy_from_slice(input), &ctx(decoded_len))
}

/// A small deterministic generator of test noise (xorshift64) from `seed`
/// (not zero).
pub(crate) fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// Decodes many corrupted variants of `valid` (flipped bytes, cut
/// tails); any result is fine as long as nothing panics or crashes.
pub(crate) fn assert_survives_mutations(name: &str, json: &str, valid: &[u8], decoded_len: usize) {
    let codec = build(name, &config(json)).unwrap();
    let mut random = xorshift(0x9e37_79b9_7f4a_7c15);
    let mut next = move || usize::try_from(random() % 1_000_003).unwrap();
    for round in 0..300 {
        let mut bytes = valid.to_vec();
        for _ in 0..=(round % 4) {
            if !bytes.is_empty() {
                let at = next() % bytes.len();
                bytes[at] = u8::try_from(next() % 256).unwrap();
            }
        }
        if round % 3 == 0 {
            bytes.truncate(next() % (valid.len() + 1));
        }
        let _ = codec.decode(Bytes::from(bytes), &ctx(decoded_len));
    }
}
