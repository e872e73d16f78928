//! `nitf-bilevel`: one bi-level NITF block (IC = C1 / M1), ITU-T T.4
//! (Group 3 fax) coded, decoded as GDAL's NITF driver decodes it.
//!
//! GDAL hands each block to libtiff's Group 3 decoder as one strip
//! (bits most significant first, one-dimensional coding, or the 2-D
//! option when COMRAT starts with `2`) and gives the pixels as bytes: 1
//! where a black run lies, 0 elsewhere. The decoder here follows libtiff's
//! rules: every row starts after an EOL code (fill bits before it are
//! skipped); with the 2-D option a tag bit after the EOL says whether the
//! row is coded alone (1) or against the row above (0); a row whose runs
//! fall short or overrun is cut or padded with white; a code that fits no
//! table ends its row (a warning, the block still reads); data that ends
//! before the last row fails the block, as it fails GDAL's read.
//!
//! Configuration: `block_width`, `block_height` (the chunk's pixels) and
//! `coding` (`"1D"` or `"2D"`). Decoding gives `[1, block_height,
//! block_width]` of `|u1`.

use std::sync::OnceLock;

use bytes::Bytes;

use super::{Codec, DecodeContext};
use crate::base::buffers::output_buffer;
use crate::base::error::{Error, Result};
use crate::codec::config::{config_str, config_uint, Config};

/// The codec's name.
pub(crate) const NAME: &str = "nitf-bilevel";

/// Every name the codec answers to.
pub(super) const NAMES: &[&str] = &[NAME];

/// Largest block side the codec accepts (NITF blocks are at most 8192).
const MAX_SIDE: u64 = 1 << 16;

#[derive(Debug)]
struct NitfBilevel {
    width: usize,
    height: usize,
    /// Rows may be coded against the row above (T.4 2-D coding).
    two_d: bool,
}

impl Codec for NitfBilevel {
    fn name(&self) -> &str {
        NAME
    }

    fn compression(&self) -> String {
        "BILEVEL".into()
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let len = self.width * self.height;
        if ctx.decoded_len != len || ctx.dtype.size != 1 {
            return Err(Error::decode(
                NAME,
                format!(
                    "a {} x {} block of bytes does not fit the chunk of {} bytes",
                    self.width, self.height, ctx.decoded_len
                ),
            ));
        }
        let mut out = output_buffer(NAME, len)?;
        out.resize(len, 0);
        let mut decoder = Decoder::new(&input, self.width, self.two_d);
        for row in 0..self.height {
            decoder
                .row(&mut out[row * self.width..][..self.width])
                .map_err(|why| {
                    Error::decode(NAME, format!("row {row} of {}: {why}", self.height))
                })?;
        }
        if decoder.bad_codes > 0 {
            crate::base::warnings::gdal_warning(&format!(
                "{NAME}: {} row(s) of a block hold a code of no T.4 table; each was \
                 ended there and padded with white, as libtiff does",
                decoder.bad_codes
            ));
        }
        Ok(Bytes::from(out))
    }
}

/// Builds the codec from its configuration.
pub(super) fn from_config(config: &Config) -> Result<Box<dyn Codec>> {
    let side = |key: &str| -> Result<usize> {
        match config_uint(NAME, config, key)? {
            Some(v) if (1..=MAX_SIDE).contains(&v) => Ok(v as usize),
            other => Err(Error::codec_config(
                NAME,
                format!("'{key}' should be 1 to {MAX_SIDE}, found {other:?}"),
            )),
        }
    };
    let two_d = match config_str(NAME, config, "coding")? {
        Some("1D") => false,
        Some("2D") => true,
        other => {
            return Err(Error::codec_config(
                NAME,
                format!("'coding' should be \"1D\" or \"2D\", found {other:?}"),
            ))
        }
    };
    Ok(Box::new(NitfBilevel {
        width: side("block_width")?,
        height: side("block_height")?,
        two_d,
    }))
}

/// Why a row could not be decoded.
#[derive(Debug)]
enum Failure {
    /// The data ends before the row does.
    End,
    /// More runs than a row of this width can hold.
    TooManyRuns,
    /// A 2-D code points past the room for the runs of the row above.
    PastReference,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Failure::End => "the T.4 data ends before this row does",
            Failure::TooManyRuns => "more runs than the row has pixels",
            Failure::PastReference => "a 2-D code points past the runs of the row above",
        })
    }
}

/// What a table entry stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// No code of the table.
    Invalid,
    /// A terminating run code (0 to 63 pixels).
    Term,
    /// A make-up code (a multiple of 64 pixels; more codes follow).
    MakeUp,
    /// End of line.
    Eol,
    /// 2-D pass mode.
    Pass,
    /// 2-D horizontal mode: two 1-D runs follow.
    Horizontal,
    /// 2-D vertical mode: a1 is b1 plus `param - 3` (-3 to 3).
    Vertical,
    /// 2-D extension code.
    Extension,
}

/// One entry of a lookup table: the code's bits and meaning.
#[derive(Debug, Clone, Copy)]
struct Entry {
    width: u8,
    kind: Kind,
    param: u16,
}

const INVALID: Entry = Entry {
    width: 0,
    kind: Kind::Invalid,
    param: 0,
};

/// Codes of T.4 Table 1 and 2 as (run, code bits); make-up codes from 64.
const WHITE: &[(u16, &str)] = &[
    (0, "00110101"),
    (1, "000111"),
    (2, "0111"),
    (3, "1000"),
    (4, "1011"),
    (5, "1100"),
    (6, "1110"),
    (7, "1111"),
    (8, "10011"),
    (9, "10100"),
    (10, "00111"),
    (11, "01000"),
    (12, "001000"),
    (13, "000011"),
    (14, "110100"),
    (15, "110101"),
    (16, "101010"),
    (17, "101011"),
    (18, "0100111"),
    (19, "0001100"),
    (20, "0001000"),
    (21, "0010111"),
    (22, "0000011"),
    (23, "0000100"),
    (24, "0101000"),
    (25, "0101011"),
    (26, "0010011"),
    (27, "0100100"),
    (28, "0011000"),
    (29, "00000010"),
    (30, "00000011"),
    (31, "00011010"),
    (32, "00011011"),
    (33, "00010010"),
    (34, "00010011"),
    (35, "00010100"),
    (36, "00010101"),
    (37, "00010110"),
    (38, "00010111"),
    (39, "00101000"),
    (40, "00101001"),
    (41, "00101010"),
    (42, "00101011"),
    (43, "00101100"),
    (44, "00101101"),
    (45, "00000100"),
    (46, "00000101"),
    (47, "00001010"),
    (48, "00001011"),
    (49, "01010010"),
    (50, "01010011"),
    (51, "01010100"),
    (52, "01010101"),
    (53, "00100100"),
    (54, "00100101"),
    (55, "01011000"),
    (56, "01011001"),
    (57, "01011010"),
    (58, "01011011"),
    (59, "01001010"),
    (60, "01001011"),
    (61, "00110010"),
    (62, "00110011"),
    (63, "00110100"),
    (64, "11011"),
    (128, "10010"),
    (192, "010111"),
    (256, "0110111"),
    (320, "00110110"),
    (384, "00110111"),
    (448, "01100100"),
    (512, "01100101"),
    (576, "01101000"),
    (640, "01100111"),
    (704, "011001100"),
    (768, "011001101"),
    (832, "011010010"),
    (896, "011010011"),
    (960, "011010100"),
    (1024, "011010101"),
    (1088, "011010110"),
    (1152, "011010111"),
    (1216, "011011000"),
    (1280, "011011001"),
    (1344, "011011010"),
    (1408, "011011011"),
    (1472, "010011000"),
    (1536, "010011001"),
    (1600, "010011010"),
    (1664, "011000"),
    (1728, "010011011"),
];

/// Black run codes (T.4 Tables 2 and 3).
const BLACK: &[(u16, &str)] = &[
    (0, "0000110111"),
    (1, "010"),
    (2, "11"),
    (3, "10"),
    (4, "011"),
    (5, "0011"),
    (6, "0010"),
    (7, "00011"),
    (8, "000101"),
    (9, "000100"),
    (10, "0000100"),
    (11, "0000101"),
    (12, "0000111"),
    (13, "00000100"),
    (14, "00000111"),
    (15, "000011000"),
    (16, "0000010111"),
    (17, "0000011000"),
    (18, "0000001000"),
    (19, "00001100111"),
    (20, "00001101000"),
    (21, "00001101100"),
    (22, "00000110111"),
    (23, "00000101000"),
    (24, "00000010111"),
    (25, "00000011000"),
    (26, "000011001010"),
    (27, "000011001011"),
    (28, "000011001100"),
    (29, "000011001101"),
    (30, "000001101000"),
    (31, "000001101001"),
    (32, "000001101010"),
    (33, "000001101011"),
    (34, "000011010010"),
    (35, "000011010011"),
    (36, "000011010100"),
    (37, "000011010101"),
    (38, "000011010110"),
    (39, "000011010111"),
    (40, "000001101100"),
    (41, "000001101101"),
    (42, "000011011010"),
    (43, "000011011011"),
    (44, "000001010100"),
    (45, "000001010101"),
    (46, "000001010110"),
    (47, "000001010111"),
    (48, "000001100100"),
    (49, "000001100101"),
    (50, "000001010010"),
    (51, "000001010011"),
    (52, "000000100100"),
    (53, "000000110111"),
    (54, "000000111000"),
    (55, "000000100111"),
    (56, "000000101000"),
    (57, "000001011000"),
    (58, "000001011001"),
    (59, "000000101011"),
    (60, "000000101100"),
    (61, "000001011010"),
    (62, "000001100110"),
    (63, "000001100111"),
    (64, "0000001111"),
    (128, "000011001000"),
    (192, "000011001001"),
    (256, "000001011011"),
    (320, "000000110011"),
    (384, "000000110100"),
    (448, "000000110101"),
    (512, "0000001101100"),
    (576, "0000001101101"),
    (640, "0000001001010"),
    (704, "0000001001011"),
    (768, "0000001001100"),
    (832, "0000001001101"),
    (896, "0000001110010"),
    (960, "0000001110011"),
    (1024, "0000001110100"),
    (1088, "0000001110101"),
    (1152, "0000001110110"),
    (1216, "0000001110111"),
    (1280, "0000001010010"),
    (1344, "0000001010011"),
    (1408, "0000001010100"),
    (1472, "0000001010101"),
    (1536, "0000001011010"),
    (1600, "0000001011011"),
    (1664, "0000001100100"),
    (1728, "0000001100101"),
];

/// Make-up codes both colours share (T.4 Table 4).
const EXTENDED: &[(u16, &str)] = &[
    (1792, "00000001000"),
    (1856, "00000001100"),
    (1920, "00000001101"),
    (1984, "000000010010"),
    (2048, "000000010011"),
    (2112, "000000010100"),
    (2176, "000000010101"),
    (2240, "000000010110"),
    (2304, "000000010111"),
    (2368, "000000011100"),
    (2432, "000000011101"),
    (2496, "000000011110"),
    (2560, "000000011111"),
];

/// The end-of-line code.
#[cfg(test)]
const EOL: &str = "000000000001";

/// What the run tables take of an EOL: its eleven zeros (the one after
/// them is left to the next row's search for its EOL, as libtiff does).
const EOL_ZEROS: &str = "00000000000";

/// 2-D mode codes (T.4 Table 4/T.4): kind, vertical offset + 3, bits.
const MODES: &[(Kind, u16, &str)] = &[
    (Kind::Vertical, 3, "1"),
    (Kind::Vertical, 4, "011"),
    (Kind::Vertical, 2, "010"),
    (Kind::Horizontal, 0, "001"),
    (Kind::Pass, 0, "0001"),
    (Kind::Vertical, 5, "000011"),
    (Kind::Vertical, 1, "000010"),
    (Kind::Vertical, 6, "0000011"),
    (Kind::Vertical, 0, "0000010"),
    (Kind::Extension, 0, "0000001"),
    // Seven zeros: the start of an EOL (four more zeros and a one follow).
    (Kind::Eol, 0, "0000000"),
];

/// A table indexed by the next `bits` bits of the stream.
struct Table {
    bits: u32,
    entries: Vec<Entry>,
}

impl Table {
    fn new(bits: u32, codes: impl IntoIterator<Item = (Kind, u16, &'static str)>) -> Table {
        let mut entries = vec![INVALID; 1 << bits];
        for (kind, param, code) in codes {
            let width = code.len() as u32;
            let value = code
                .bytes()
                .fold(0usize, |v, b| (v << 1) | usize::from(b == b'1'));
            let first = value << (bits - width);
            for e in &mut entries[first..first + (1 << (bits - width))] {
                *e = Entry {
                    width: width as u8,
                    kind,
                    param,
                };
            }
        }
        Table { bits, entries }
    }

    /// A run-length table: terminating and make-up codes of `colour`, the
    /// shared make-up codes and EOL.
    fn runs(bits: u32, colour: &'static [(u16, &'static str)]) -> Table {
        let runs = colour.iter().chain(EXTENDED).map(|&(run, code)| {
            let kind = if run < 64 { Kind::Term } else { Kind::MakeUp };
            (kind, run, code)
        });
        Table::new(bits, runs.chain([(Kind::Eol, 0, EOL_ZEROS)]))
    }
}

/// The white, black and 2-D mode tables.
fn tables() -> &'static [Table; 3] {
    static TABLES: OnceLock<[Table; 3]> = OnceLock::new();
    TABLES.get_or_init(|| {
        [
            Table::runs(12, WHITE),
            Table::runs(13, BLACK),
            Table::new(7, MODES.iter().copied()),
        ]
    })
}

/// Reads a stream of bits, most significant first; past the end of the
/// data, a read that has at least one real bit left sees zeros (libtiff
/// pads the last bits so).
struct Bits<'a> {
    data: &'a [u8],
    pos: usize,
    limit: usize,
}

impl Bits<'_> {
    /// Makes `n` bits available, or fails when none is left.
    fn need(&mut self, n: usize) -> std::result::Result<(), Failure> {
        if self.limit - self.pos < n {
            if self.pos >= self.limit {
                return Err(Failure::End);
            }
            self.limit = self.pos + n;
        }
        Ok(())
    }

    /// The next `n` (at most 16) bits as a number, zeros past the data.
    fn peek(&self, n: usize) -> usize {
        (0..n).fold(0, |v, i| {
            let at = self.pos + i;
            let bit = self.data.get(at / 8).map_or(0, |b| (b >> (7 - at % 8)) & 1);
            (v << 1) | usize::from(bit)
        })
    }

    fn consume(&mut self, n: usize) {
        self.pos += n;
    }

    /// Looks up the next code in `table`.
    fn lookup(&mut self, table: &Table) -> std::result::Result<Entry, Failure> {
        self.need(table.bits as usize)?;
        let e = table.entries[self.peek(table.bits as usize)];
        self.consume(usize::from(e.width));
        Ok(e)
    }
}

/// libtiff's Group 3 decoding state across the rows of one block.
struct Decoder<'a> {
    bits: Bits<'a>,
    width: i64,
    two_d: bool,
    /// Runs of the row being decoded (white first, alternating).
    current: Vec<i64>,
    /// Runs of the row above, then an imaginary 0.
    reference: Vec<i64>,
    /// Runs a row may hold, as libtiff sizes its buffers.
    max_runs: usize,
    /// The last code read was an EOL, already partly consumed.
    eol_seen: bool,
    /// Rows ended early by a code of no table.
    bad_codes: usize,
}

/// State of one row being decoded: a0 and the length of a run being built
/// from make-up codes.
struct Row {
    a0: i64,
    pending: i64,
}

impl<'a> Decoder<'a> {
    fn new(data: &'a [u8], width: usize, two_d: bool) -> Decoder<'a> {
        let per_row = (width + 1).next_multiple_of(32);
        Decoder {
            bits: Bits {
                data,
                pos: 0,
                limit: data.len() * 8,
            },
            width: width as i64,
            two_d,
            current: Vec::new(),
            reference: vec![width as i64, 0],
            max_runs: if two_d { 2 * per_row } else { per_row },
            eol_seen: false,
            bad_codes: 0,
        }
    }

    /// Decodes the next row into `out` (bytes 0 / 1).
    fn row(&mut self, out: &mut [u8]) -> std::result::Result<(), Failure> {
        self.current.clear();
        let mut row = Row { a0: 0, pending: 0 };
        let result = self.sync_eol().and_then(|()| {
            let one_d = if self.two_d {
                self.bits.need(1)?;
                let tag = self.bits.peek(1);
                self.bits.consume(1);
                tag == 1
            } else {
                true
            };
            if one_d {
                self.expand_1d(&mut row)
            } else {
                self.expand_2d(&mut row)
            }
        });
        result?;
        self.fill(out);
        if self.two_d {
            // An imaginary change closes the reference row.
            if self.current.len() < self.max_runs {
                self.current.push(0);
            }
            std::mem::swap(&mut self.current, &mut self.reference);
        }
        Ok(())
    }

    /// Skips to the end of the next EOL code: its eleven or more zeros
    /// (unless an EOL was already met) and its one.
    fn sync_eol(&mut self) -> std::result::Result<(), Failure> {
        if !self.eol_seen {
            loop {
                self.bits.need(11)?;
                if self.bits.peek(11) == 0 {
                    break;
                }
                self.bits.consume(1);
            }
        }
        loop {
            self.bits.need(8)?;
            if self.bits.peek(8) != 0 {
                break;
            }
            self.bits.consume(8);
        }
        while self.bits.peek(1) == 0 {
            self.bits.consume(1);
        }
        self.bits.consume(1);
        self.eol_seen = false;
        Ok(())
    }

    /// Appends a run of `pending + x` pixels.
    fn set(&mut self, row: &mut Row, x: i64) -> std::result::Result<(), Failure> {
        if self.current.len() >= self.max_runs {
            return Err(Failure::TooManyRuns);
        }
        self.current.push(row.pending + x);
        row.a0 += x;
        row.pending = 0;
        Ok(())
    }

    /// One run of `colour` (0 white, 1 black): make-up codes, then a
    /// terminating code: `None`, or the kind of code that ended it early
    /// (EOL, or a code of no table).
    fn run(&mut self, row: &mut Row, colour: usize) -> std::result::Result<Option<Kind>, Failure> {
        loop {
            let e = self.bits.lookup(&tables()[colour])?;
            match e.kind {
                Kind::Term => {
                    self.set(row, i64::from(e.param))?;
                    return Ok(None);
                }
                Kind::MakeUp => {
                    row.a0 += i64::from(e.param);
                    row.pending += i64::from(e.param);
                }
                other => return Ok(Some(other)),
            }
        }
    }

    /// A row coded alone: white and black runs until the row is full.
    fn expand_1d(&mut self, row: &mut Row) -> std::result::Result<(), Failure> {
        'row: loop {
            for colour in 0..2 {
                match self.run(row, colour)? {
                    None => {}
                    Some(Kind::Eol) => {
                        self.eol_seen = true;
                        break 'row;
                    }
                    Some(_) => {
                        self.bad_codes += 1;
                        break 'row;
                    }
                }
                if row.a0 >= self.width {
                    break 'row;
                }
            }
            // A pair of empty runs says nothing: drop it.
            let n = self.current.len();
            if n >= 2 && self.current[n - 1] == 0 && self.current[n - 2] == 0 {
                self.current.truncate(n - 2);
            }
        }
        self.cleanup(row)
    }

    /// The reference row's run at `i`: 0 past its end (a code may look one
    /// change past the row's end, where libtiff's buffer holds whatever it
    /// held), an error past the room libtiff gives a row's runs.
    fn reference(&self, i: usize) -> std::result::Result<i64, Failure> {
        match self.reference.get(i) {
            Some(&run) => Ok(run),
            None if i < self.max_runs => Ok(0),
            None => Err(Failure::PastReference),
        }
    }

    /// Moves b1 right of a0 by pairs of the reference row's runs (libtiff's
    /// CHECK_b1), once the row has a run.
    fn check_b1(
        &self,
        row: &Row,
        b1: &mut i64,
        pb: &mut usize,
    ) -> std::result::Result<(), Failure> {
        if !self.current.is_empty() {
            while *b1 <= row.a0 && *b1 < self.width {
                *b1 += self.reference(*pb)? + self.reference(*pb + 1)?;
                *pb += 2;
            }
        }
        Ok(())
    }

    /// A row coded against the one above (T.4 4.2), b1 and the reference
    /// runs walked as libtiff walks them.
    fn expand_2d(&mut self, row: &mut Row) -> std::result::Result<(), Failure> {
        let mut pb = 1usize;
        let mut b1 = self.reference(0)?;
        while row.a0 < self.width {
            if self.current.len() >= self.max_runs {
                return Err(Failure::TooManyRuns);
            }
            let e = self.bits.lookup(&tables()[2])?;
            // b1: the first change on the row above right of a0 of the
            // colour opposite a0's (after the row's first code).
            if matches!(e.kind, Kind::Pass | Kind::Vertical) {
                self.check_b1(row, &mut b1, &mut pb)?;
            }
            match e.kind {
                Kind::Pass => {
                    b1 += self.reference(pb)?;
                    pb += 1;
                    row.pending += b1 - row.a0;
                    row.a0 = b1;
                    b1 += self.reference(pb)?;
                    pb += 1;
                }
                Kind::Horizontal => {
                    let first = self.current.len() % 2;
                    let ok = self.run(row, first)?.is_none() && self.run(row, 1 - first)?.is_none();
                    if !ok {
                        self.bad_codes += 1;
                        return self.cleanup(row);
                    }
                    self.check_b1(row, &mut b1, &mut pb)?;
                }
                Kind::Vertical => {
                    let offset = i64::from(e.param) - 3;
                    if offset < 0 && b1 < row.a0 - offset {
                        self.bad_codes += 1;
                        return self.cleanup(row);
                    }
                    self.set(row, b1 - row.a0 + offset)?;
                    if offset < 0 {
                        if pb == 0 {
                            self.bad_codes += 1;
                            return self.cleanup(row);
                        }
                        pb -= 1;
                        b1 -= self.reference(pb)?;
                    } else {
                        b1 += self.reference(pb)?;
                        pb += 1;
                    }
                }
                Kind::Eol => {
                    self.current.push(self.width - row.a0);
                    self.bits.need(4)?;
                    if self.bits.peek(4) != 0 {
                        self.bad_codes += 1;
                    }
                    self.bits.consume(4);
                    self.eol_seen = true;
                    return self.cleanup(row);
                }
                Kind::Extension => {
                    self.current.push(self.width - row.a0);
                    self.bad_codes += 1;
                    return self.cleanup(row);
                }
                _ => {
                    self.bad_codes += 1;
                    return self.cleanup(row);
                }
            }
        }
        if row.pending != 0 {
            if row.pending + row.a0 < self.width {
                self.bits.need(1)?;
                if self.bits.peek(1) == 0 {
                    self.bad_codes += 1;
                    return self.cleanup(row);
                }
                self.bits.consume(1);
            }
            self.set(row, 0)?;
        }
        self.cleanup(row)
    }

    /// Makes the runs cover the row exactly: a pending make-up run is
    /// closed, runs past the end dropped, a short row padded with white.
    fn cleanup(&mut self, row: &mut Row) -> std::result::Result<(), Failure> {
        if row.pending != 0 {
            self.set(row, 0)?;
        }
        if row.a0 != self.width {
            while row.a0 > self.width {
                match self.current.pop() {
                    Some(run) => row.a0 -= run,
                    None => break,
                }
            }
            if row.a0 < self.width {
                row.a0 = row.a0.max(0);
                if self.current.len() % 2 == 1 {
                    self.set(row, 0)?;
                }
                self.set(row, self.width - row.a0)?;
            } else if row.a0 > self.width {
                self.set(row, self.width)?;
                self.set(row, 0)?;
            }
        }
        Ok(())
    }

    /// Writes the row's black runs as 1s.
    fn fill(&self, out: &mut [u8]) {
        let mut x = 0usize;
        for (i, &run) in self.current.iter().enumerate() {
            let end = x.saturating_add(run.max(0) as usize).min(out.len());
            if i % 2 == 1 {
                out[x..end].fill(1);
            }
            x = end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::testing::{assert_survives_mutations, decode_with};

    /// Bits from text ("0"/"1", other characters ignored), zero-padded to
    /// whole bytes.
    fn pack(text: &str) -> Vec<u8> {
        let bits: Vec<u8> = text
            .bytes()
            .filter_map(|b| match b {
                b'0' => Some(0),
                b'1' => Some(1),
                _ => None,
            })
            .collect();
        bits.chunks(8)
            .map(|c| {
                c.iter()
                    .enumerate()
                    .fold(0u8, |v, (i, b)| v | (b << (7 - i)))
            })
            .collect()
    }

    fn config(width: usize, height: usize, coding: &str) -> String {
        format!(r#"{{"block_width": {width}, "block_height": {height}, "coding": "{coding}"}}"#)
    }

    #[test]
    fn decodes_one_dimensional_rows() {
        // Width 16: row 0 = white 3, black 2, white 11; row 1 = white 0, black 16.
        let data = pack(&format!(
            "{EOL} 1000 11 01000 {EOL} 00110101 0000010111 {EOL}{EOL}"
        ));
        let out = decode_with(NAME, &config(16, 2, "1D"), &data, 32).unwrap();
        let mut want = [0u8; 32];
        want[3..5].fill(1);
        want[16..].fill(1);
        assert_eq!(out[..], want[..]);
    }

    #[test]
    fn decodes_two_dimensional_rows() {
        // Width 8: row 0 (1-D) = white 2, black 3, white 3; row 1 (2-D):
        // V0 (a1 = 2), VR1 (a2 = 6), then V0 to the end: white 2, black 4,
        // white 2.
        let data = pack(&format!("{EOL}1 0111 10 1000 {EOL}0 1 011 1"));
        let out = decode_with(NAME, &config(8, 2, "2D"), &data, 16).unwrap();
        assert_eq!(out[..], [0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0]);
    }

    #[test]
    fn pads_short_rows_and_fails_truncated_blocks() {
        // Row 0 stops after white 3 (an EOL follows): padded with white.
        let data = pack(&format!("{EOL} 1000 {EOL} 1000 0011 0111"));
        let out = decode_with(NAME, &config(9, 2, "1D"), &data, 18).unwrap();
        assert_eq!(out[..9], [0; 9]);
        assert_eq!(out[9..], [0, 0, 0, 1, 1, 1, 1, 1, 0]);
        // The data ends before the second row.
        let short = pack(&format!("{EOL} 1000 0011 0111"));
        let err = decode_with(NAME, &config(9, 2, "1D"), &short, 18).unwrap_err();
        assert!(err.to_string().contains("row 1 of 2"), "{err}");
    }

    #[test]
    fn refuses_bad_configurations() {
        for bad in [
            r#"{"block_width": 0, "block_height": 1, "coding": "1D"}"#,
            r#"{"block_width": 8, "block_height": 1, "coding": "3D"}"#,
            r#"{"block_width": 8, "block_height": 1}"#,
        ] {
            assert!(decode_with(NAME, bad, &[], 8).is_err(), "{bad}");
        }
        let wrong = decode_with(NAME, &config(8, 2, "1D"), &[], 8).unwrap_err();
        assert!(wrong.to_string().contains("8 x 2"), "{wrong}");
    }

    #[test]
    fn survives_garbage_and_truncation() {
        let row = format!("{EOL}0111 10 1000 ");
        let one = pack(&row.repeat(64));
        assert_survives_mutations(NAME, &config(8, 64, "1D"), &one, 512);
        let two = pack(&format!(
            "{EOL}1 0111 10 1000 {}",
            format!("{EOL}0 1 011 1 ").repeat(63)
        ));
        assert_survives_mutations(NAME, &config(8, 64, "2D"), &two, 512);
        // Long runs of ones and zeros: no hang, no panic.
        for fill in [0x00u8, 0xFF, 0x01, 0x80] {
            for coding in ["1D", "2D"] {
                let _ = decode_with(NAME, &config(64, 64, coding), &[fill; 4096], 4096);
            }
        }
    }
}
