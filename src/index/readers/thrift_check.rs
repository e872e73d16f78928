//! A walk over the Thrift compact-protocol structures of a Parquet file
//! (its footer, page indexes and page headers) before the parquet crate
//! parses them.
//!
//! The crate skips a field it does not know by looping over the element
//! count a list declares, and a list of booleans costs it no byte per
//! element: a few bytes declaring a list of 2^31 booleans spin it for
//! seconds, nested ones for hours. Every element of a well-formed list,
//! set or map takes at least one byte, so a container declaring more
//! elements than bytes remain is refused here, as are nesting past 64
//! levels, unknown types and truncation; a well-formed structure passes
//! whatever its fields.

/// Deepest nesting of structs and containers accepted (the crate's own).
const MAX_DEPTH: u32 = 64;

/// Walks the struct at the start of `bytes`; its length in bytes.
pub fn check_struct(bytes: &[u8]) -> Result<usize, String> {
    let mut w = Walker { b: bytes, i: 0 };
    w.structure(0, None)?;
    Ok(w.i)
}

/// Walks the pages of a column chunk: each a `PageHeader` struct followed
/// by its `compressed_page_size` (field 3) bytes of page data.
pub fn check_pages(chunk: &[u8]) -> Result<(), String> {
    let mut at = 0usize;
    while at < chunk.len() {
        let mut w = Walker {
            b: &chunk[at..],
            i: 0,
        };
        let size = w
            .structure(0, Some(3))?
            .ok_or_else(|| format!("the page header at byte {at} has no compressed size"))?;
        let size = usize::try_from(size)
            .map_err(|_| format!("the page header at byte {at} declares {size} bytes"))?;
        at = at
            .checked_add(w.i)
            .and_then(|a| a.checked_add(size))
            .ok_or_else(|| format!("the page at byte {at} overflows"))?;
    }
    Ok(())
}

/// A position in the bytes being walked.
struct Walker<'a> {
    b: &'a [u8],
    i: usize,
}

impl Walker<'_> {
    fn remaining(&self) -> usize {
        self.b.len() - self.i
    }

    fn byte(&mut self) -> Result<u8, String> {
        let v = *self
            .b
            .get(self.i)
            .ok_or_else(|| format!("Thrift structure truncated at byte {}", self.i))?;
        self.i += 1;
        Ok(v)
    }

    fn skip(&mut self, n: u64) -> Result<(), String> {
        match usize::try_from(n) {
            Ok(n) if n <= self.remaining() => {
                self.i += n;
                Ok(())
            }
            _ => Err(format!(
                "Thrift value of {n} bytes at byte {} runs past the end",
                self.i
            )),
        }
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            if shift < 64 {
                v |= u64::from(b & 0x7f) << shift;
            }
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(format!("Thrift varint too long at byte {}", self.i))
    }

    fn zigzag(&mut self) -> Result<i64, String> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// A struct's fields up to its stop byte; the integer value of field
    /// `want`, if asked for and present.
    fn structure(&mut self, depth: u32, want: Option<i16>) -> Result<Option<i64>, String> {
        if depth > MAX_DEPTH {
            return Err(format!("Thrift nesting deeper than {MAX_DEPTH} levels"));
        }
        let (mut last, mut found) = (0i16, None);
        loop {
            let header = self.byte()?;
            if header == 0 {
                return Ok(found);
            }
            let kind = header & 0x0f;
            let id = match header >> 4 {
                0 => self.zigzag()? as i16,
                delta => last.wrapping_add(i16::from(delta)),
            };
            last = id;
            if Some(id) == want && matches!(kind, 5 | 6) {
                found = Some(self.zigzag()?);
            } else {
                self.value(kind, depth + 1, true)?;
            }
        }
    }

    /// One value of compact type `kind`; a boolean holds no byte as a
    /// struct field (its type is its value) and one as an element.
    fn value(&mut self, kind: u8, depth: u32, field: bool) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("Thrift nesting deeper than {MAX_DEPTH} levels"));
        }
        match kind {
            1 | 2 if field => Ok(()),
            1..=3 => self.byte().map(drop),
            4..=6 => self.varint().map(drop),
            7 => self.skip(8),
            8 => {
                let n = self.varint()?;
                self.skip(n)
            }
            9 | 10 => {
                let header = self.byte()?;
                let n = match header >> 4 {
                    15 => self.varint()?,
                    n => u64::from(n),
                };
                self.elements(n, 1)?;
                for _ in 0..n {
                    self.value(header & 0x0f, depth + 1, false)?;
                }
                Ok(())
            }
            11 => {
                let n = self.varint()?;
                if n > 0 {
                    let kinds = self.byte()?;
                    self.elements(n, 2)?;
                    for _ in 0..n {
                        self.value(kinds >> 4, depth + 1, false)?;
                        self.value(kinds & 0x0f, depth + 1, false)?;
                    }
                }
                Ok(())
            }
            12 => self.structure(depth, None).map(drop),
            13 => self.skip(16),
            other => Err(format!("unknown Thrift type {other} at byte {}", self.i)),
        }
    }

    /// Refuses `n` elements of at least `bytes` bytes each past the end.
    fn elements(&self, n: u64, bytes: u64) -> Result<(), String> {
        if n.saturating_mul(bytes) > self.remaining() as u64 {
            return Err(format!(
                "a Thrift container at byte {} declares {n} elements in {} bytes",
                self.i,
                self.remaining()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_of_more_booleans_than_bytes_is_refused() {
        // Field 1: list (type 9) of 2^31 booleans (element type 1), then stop.
        let mut hostile = vec![0x19, 0xf1];
        hostile.extend([0x80, 0x80, 0x80, 0x80, 0x08]);
        hostile.push(0);
        let err = check_struct(&hostile).unwrap_err();
        assert!(err.contains("declares 2147483648 elements"), "{err}");
        // Three booleans in three bytes are fine.
        assert_eq!(check_struct(&[0x19, 0x31, 1, 2, 1, 0]), Ok(6));
    }

    #[test]
    fn fields_of_every_type_are_walked() {
        let s = [
            0x11, // field 1: bool true (no byte)
            0x13, 7, // field 2: byte
            0x15, 0x81, 0x01, // field 3: i32 varint
            0x17, 0, 0, 0, 0, 0, 0, 0, 0, // field 4: double
            0x18, 2, b'a', b'b', // field 5: binary
            0x1c, 0x15, 2, 0, // field 6: struct { field 1: i32 }
            0x1b, 1, 0x55, 2, 4, // field 7: map<i32, i32> of 1 entry
            0x0d, 0x28, // field 20 (long form): uuid, its 16 bytes below
        ];
        let mut s = s.to_vec();
        s.extend([0u8; 16]);
        s.push(0);
        assert_eq!(check_struct(&s), Ok(s.len()));
        assert!(check_struct(&s[..s.len() - 1])
            .unwrap_err()
            .contains("truncated"));
        assert!(check_struct(&[0x1e, 0])
            .unwrap_err()
            .contains("unknown Thrift type 14"));
    }

    #[test]
    fn deep_nesting_is_refused() {
        let mut s = vec![0x1c; 100];
        s.extend(vec![0; 101]);
        assert!(check_struct(&s).unwrap_err().contains("deeper than 64"));
    }

    #[test]
    fn pages_are_walked_by_their_compressed_size() {
        // PageHeader { 1: type 0, 2: uncompressed 3, 3: compressed 3 } + 3 bytes, twice.
        let page = [0x15, 0, 0x15, 6, 0x15, 6, 0, 9, 9, 9];
        let chunk = [page, page].concat();
        assert_eq!(check_pages(&chunk), Ok(()));
        let no_size = [0x15, 0, 0];
        assert!(check_pages(&no_size)
            .unwrap_err()
            .contains("no compressed size"));
        let negative = [0x35, 1, 0];
        assert!(check_pages(&negative)
            .unwrap_err()
            .contains("declares -1 bytes"));
    }
}
