//! ITU-T T.4 (Group 3 fax) and T.6 (Group 4 fax) decoding of bi-level
//! rows, as libtiff decodes them for GDAL: the code tables, one-dimensional
//! (modified Huffman) runs and two-dimensional coding against the row
//! above, shared by the `nitf-bilevel` codec (NITF C1 / M1 blocks) and the
//! `tiff-tile` codec (TIFF compressions 2, 3 and 4).
//!
//! Every row is decoded into runs (white first, alternating), then written
//! out with black pixels as 1 (bytes or bits). libtiff's rules for bad data
//! are followed: a row whose runs fall short or overrun is cut or padded
//! with white; a code that fits no table ends its row (counted, the caller
//! warns); more runs than libtiff has room for, or data that ends before
//! the last row, fail the block, except in Group 4 coding, where data that
//! ends (or an EOL, the start of the end-of-block code) after the first
//! row ends the block there.

use std::sync::OnceLock;

/// How the rows of a block are coded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// TIFF compression 2 (CCITT RLE, modified Huffman): one-dimensional
    /// rows, no EOL codes, every row starting on a byte boundary.
    Rle,
    /// T.4 (TIFF compression 3, NITF C1): every row after an EOL code;
    /// with `two_d` (T4Options bit 0, NITF COMRAT `2D`), a tag bit after
    /// each EOL says whether the row is coded alone (1) or against the row
    /// above (0).
    Group3 {
        /// Rows may be coded against the row above.
        two_d: bool,
    },
    /// T.6 (TIFF compression 4): every row coded against the one above (the
    /// first against a white row), no EOLs; an end-of-block code may close
    /// the data.
    Group4,
}

/// How decoded rows are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pixels {
    /// A byte per pixel, 1 where a black run lies, 0 elsewhere.
    Bytes,
    /// A bit per pixel, most significant first, every row starting on a
    /// byte (as libtiff gives fax rows): 1 where a black run lies.
    Bits,
}

impl Pixels {
    /// Bytes of one row of `width` pixels.
    pub(crate) fn row_len(self, width: usize) -> usize {
        match self {
            Pixels::Bytes => width,
            Pixels::Bits => width.div_ceil(8),
        }
    }
}

/// What a block decoded to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Decoded {
    /// Rows written from the start of the output (fewer than asked only
    /// when Group 4 data ended early; the others are left as they were).
    pub(crate) rows: usize,
    /// Rows ended early by a code of no table.
    pub(crate) bad_codes: usize,
}

/// A row that could not be decoded, failing the block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RowFailure {
    /// The row (from 0).
    pub(crate) row: usize,
    /// Why.
    pub(crate) why: Failure,
}

/// Decodes the rows of one block (a TIFF strip or tile, a NITF block) of
/// `width` pixels coded in `mode` into `out`, whose length says how many
/// rows to decode (whole rows of `pixels.row_len(width)` bytes; `width`
/// must be at least 1).
pub(crate) fn decode(
    data: &[u8],
    width: usize,
    mode: Mode,
    pixels: Pixels,
    out: &mut [u8],
) -> std::result::Result<Decoded, RowFailure> {
    let stride = pixels.row_len(width);
    let mut decoder = Decoder::new(data, width, mode);
    let mut rows = 0;
    for (row, line) in out.chunks_exact_mut(stride).enumerate() {
        let fail = |why| RowFailure { row, why };
        let ended = decoder.row().map_err(fail)?;
        decoder.fill(line, pixels);
        rows += 1;
        if ended {
            // libtiff fails a Group 4 block that ends in its first row.
            return match row {
                0 => Err(fail(Failure::End)),
                _ => Ok(Decoded {
                    rows,
                    bad_codes: decoder.bad_codes,
                }),
            };
        }
        decoder.next_reference().map_err(fail)?;
    }
    Ok(Decoded {
        rows,
        bad_codes: decoder.bad_codes,
    })
}

/// Why a row could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
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
            Failure::End => "the fax data ends before this row does",
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
pub(crate) const EOL: &str = "000000000001";

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
        let at = self.pos / 8;
        let window = (0..3).fold(0u32, |w, i| {
            (w << 8) | u32::from(self.data.get(at + i).copied().unwrap_or(0))
        });
        let shift = 24 - self.pos % 8 - n;
        ((window >> shift) & ((1 << n) - 1)) as usize
    }

    fn consume(&mut self, n: usize) {
        self.pos += n;
    }

    /// Skips to the next byte boundary of the data (or of the zeros it was
    /// padded with), as libtiff drops the bits left in its accumulator.
    fn align(&mut self) {
        self.pos += (self.limit - self.pos.min(self.limit)) % 8;
    }

    /// Looks up the next code in `table`.
    fn lookup(&mut self, table: &Table) -> std::result::Result<Entry, Failure> {
        self.need(table.bits as usize)?;
        let e = table.entries[self.peek(table.bits as usize)];
        self.consume(usize::from(e.width));
        Ok(e)
    }
}

/// libtiff's fax decoding state across the rows of one block.
struct Decoder<'a> {
    bits: Bits<'a>,
    width: i64,
    mode: Mode,
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
    fn new(data: &'a [u8], width: usize, mode: Mode) -> Decoder<'a> {
        let per_row = (width + 1).next_multiple_of(32);
        let two_d = matches!(mode, Mode::Group3 { two_d: true } | Mode::Group4);
        Decoder {
            bits: Bits {
                data,
                pos: 0,
                limit: data.len() * 8,
            },
            width: width as i64,
            mode,
            current: Vec::new(),
            reference: vec![width as i64, 0],
            max_runs: if two_d { 2 * per_row } else { per_row },
            eol_seen: false,
            bad_codes: 0,
        }
    }

    /// Decodes the next row into `current`: `true` when the block ends
    /// with it (Group 4 data that ended, or met an EOL, in this row).
    fn row(&mut self) -> std::result::Result<bool, Failure> {
        self.current.clear();
        let mut row = Row { a0: 0, pending: 0 };
        match self.mode {
            Mode::Rle => {
                self.expand_1d(&mut row)?;
                self.bits.align();
            }
            Mode::Group3 { two_d } => {
                self.sync_eol()?;
                let one_d = if two_d {
                    self.bits.need(1)?;
                    let tag = self.bits.peek(1);
                    self.bits.consume(1);
                    tag == 1
                } else {
                    true
                };
                if one_d {
                    self.expand_1d(&mut row)?;
                } else {
                    self.expand_2d(&mut row)?;
                }
            }
            Mode::Group4 => match self.expand_2d(&mut row) {
                Ok(()) => return Ok(self.eol_seen),
                Err(Failure::End) => {
                    // libtiff keeps what the row holds and stops.
                    self.cleanup(&mut row)?;
                    return Ok(true);
                }
                Err(other) => return Err(other),
            },
        }
        Ok(false)
    }

    /// Makes the row just decoded the reference of the next, closed by an
    /// imaginary change (in Group 3 only where libtiff has room for it).
    fn next_reference(&mut self) -> std::result::Result<(), Failure> {
        match self.mode {
            Mode::Rle | Mode::Group3 { two_d: false } => return Ok(()),
            Mode::Group3 { two_d: true } => {
                if self.current.len() < self.max_runs {
                    self.current.push(0);
                }
            }
            Mode::Group4 => {
                if self.current.len() >= self.max_runs {
                    return Err(Failure::TooManyRuns);
                }
                self.current.push(0);
            }
        }
        std::mem::swap(&mut self.current, &mut self.reference);
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

    /// Writes the runs of the row just decoded into `out`, black as 1.
    fn fill(&self, out: &mut [u8], pixels: Pixels) {
        out.fill(0);
        let width = self.width as usize;
        let mut x = 0usize;
        for (i, &run) in self.current.iter().enumerate() {
            let end = x.saturating_add(run.max(0) as usize).min(width);
            if i % 2 == 1 {
                match pixels {
                    Pixels::Bytes => out[x..end].fill(1),
                    Pixels::Bits => set_bits(out, x, end),
                }
            }
            x = end;
        }
    }
}

/// Sets bits `start..end` of `out` (most significant bit first).
fn set_bits(out: &mut [u8], start: usize, end: usize) {
    let mut x = start;
    while x < end && !x.is_multiple_of(8) {
        out[x / 8] |= 0x80 >> (x % 8);
        x += 1;
    }
    let whole = end / 8 * 8;
    if x < whole {
        out[x / 8..whole / 8].fill(0xFF);
        x = whole;
    }
    while x < end {
        out[x / 8] |= 0x80 >> (x % 8);
        x += 1;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Bits from text ("0"/"1", other characters ignored), zero-padded to
    /// whole bytes.
    pub(crate) fn pack(text: &str) -> Vec<u8> {
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

    /// Decodes `rows` rows of `width` pixels as bits.
    fn bits(
        data: &[u8],
        width: usize,
        rows: usize,
        mode: Mode,
    ) -> std::result::Result<(Vec<u8>, Decoded), RowFailure> {
        let mut out = vec![0xAA; rows * width.div_ceil(8)];
        let decoded = decode(data, width, mode, Pixels::Bits, &mut out)?;
        Ok((out, decoded))
    }

    #[test]
    fn rle_rows_start_on_bytes() {
        // Width 10: white 3, black 4, white 3 (11 bits, then 5 fill bits);
        // white 10 (5 bits, 3 fill bits); black 10 after a white 0.
        let data = pack("1000 011 1000 00000  00111 000  00110101 0000100 0");
        let (out, decoded) = bits(&data, 10, 3, Mode::Rle).unwrap();
        assert_eq!(out, [0b0001_1110, 0, 0, 0, 0xFF, 0b1100_0000]);
        assert_eq!(
            decoded,
            Decoded {
                rows: 3,
                bad_codes: 0
            }
        );
        // The data ends before the last row: the block fails, as in libtiff.
        let err = bits(&data[..3], 10, 3, Mode::Rle).unwrap_err();
        assert_eq!((err.row, err.why), (2, Failure::End));
    }

    #[test]
    fn group3_rows_follow_eols_and_fill_bits() {
        // Width 12, 2-D coding: row 0 (1-D) = white 4, black 8; row 1
        // (2-D) = V0 twice: the same. Fill bits pad each EOL to end on a
        // byte (T4Options bit 2).
        let data = pack(&format!(
            "0000 {EOL} 1 1011 000101 0000000 {EOL} 0 1 1 0000"
        ));
        let (out, decoded) = bits(&data, 12, 2, Mode::Group3 { two_d: true }).unwrap();
        assert_eq!(out, [0x0F, 0xF0, 0x0F, 0xF0]);
        assert_eq!(decoded.rows, 2);
    }

    #[test]
    fn group4_rows_code_against_the_row_above() {
        // Width 8: row 0 against white = horizontal (white 2, black 3),
        // V0; row 1 = V0 three times; then EOFB.
        let rows = "001 0111 10 1  1 1 1";
        let data = pack(&format!("{rows} {EOL}{EOL}"));
        let (out, decoded) = bits(&data, 8, 2, Mode::Group4).unwrap();
        assert_eq!(out, [0x38, 0x38]);
        assert_eq!(
            decoded,
            Decoded {
                rows: 2,
                bad_codes: 0
            }
        );
        // Bytes of 0 / 1 for the same rows.
        let mut bytes = [9u8; 16];
        decode(&data, 8, Mode::Group4, Pixels::Bytes, &mut bytes).unwrap();
        assert_eq!(bytes[..8], [0, 0, 1, 1, 1, 0, 0, 0]);
        assert_eq!(bytes[..8], bytes[8..]);
    }

    #[test]
    fn group4_blocks_that_end_early_keep_their_first_rows() {
        // Four rows asked, two coded then EOFB: rows 0 and 1 decode, row 2
        // is the EOL's (white), row 3 is left as it was.
        let data = pack(&format!("001 0111 10 1  1 1 1 {EOL}{EOL}"));
        let (out, decoded) = bits(&data, 8, 4, Mode::Group4).unwrap();
        assert_eq!(out, [0x38, 0x38, 0, 0xAA]);
        assert_eq!(decoded.rows, 3);
        // Data that ends after row 0: row 1 is padded white, the rest left.
        let (out, decoded) = bits(&pack("001 0111 10 1"), 8, 3, Mode::Group4).unwrap();
        assert_eq!((out, decoded.rows), (vec![0x38, 0, 0xAA], 2));
        // Data that ends in the first row fails the block, as in libtiff
        // (a code cut short is read with zeros after it first, as there).
        let err = bits(&[], 8, 2, Mode::Group4).unwrap_err();
        assert_eq!((err.row, err.why), (0, Failure::End));
    }

    #[test]
    fn bad_codes_end_their_row() {
        // Width 31, RLE. Row 0: white 8, then eight zeros and a one, which
        // no black code starts with: the row ends, white; the next row
        // starts on the following byte (libtiff drops the bits left of the
        // byte it is in): white 30, black 1.
        let data = pack("10011 000  00000011 010 00000");
        let (out, decoded) = bits(&data, 31, 2, Mode::Rle).unwrap();
        assert_eq!(out, [0, 0, 0, 0, 0, 0, 0, 0x02]);
        assert_eq!(
            decoded,
            Decoded {
                rows: 2,
                bad_codes: 1
            }
        );
    }

    #[test]
    fn wide_runs_fill_whole_bytes() {
        let mut out = [0u8; 5];
        set_bits(&mut out, 3, 37);
        assert_eq!(out, [0x1F, 0xFF, 0xFF, 0xFF, 0xF8]);
        let mut out = [0u8; 1];
        set_bits(&mut out, 2, 5);
        assert_eq!(out, [0b0011_1000]);
    }

    #[test]
    fn garbage_ends_in_an_error_or_whole_rows() {
        let mut next = crate::codec::testing::xorshift(0x2545_f491_4f6c_dd1d);
        let modes = [
            Mode::Rle,
            Mode::Group3 { two_d: false },
            Mode::Group3 { two_d: true },
            Mode::Group4,
        ];
        for round in 0..400 {
            let len = (next() % 600) as usize;
            let mut data: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if round % 5 == 0 {
                // Long runs of zeros and ones stress the EOL search.
                data.iter_mut().for_each(|b| *b = [0x00, 0xFF][round % 2]);
            }
            let width = 1 + (next() % 300) as usize;
            for mode in modes {
                for pixels in [Pixels::Bits, Pixels::Bytes] {
                    let mut out = vec![0u8; 40 * pixels.row_len(width)];
                    if let Ok(decoded) = decode(&data, width, mode, pixels, &mut out) {
                        assert!(decoded.rows <= 40 && decoded.rows > 0);
                    }
                }
            }
        }
    }
}
