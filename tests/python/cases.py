"""Parameter tables shared by several test modules."""

#: Chunks left out of indexes in the missing-chunk tests: a corner, an inner
#: chunk, and the partial bottom-right edge chunk of a 75x100 array in 32x32
#: chunks.
MISSING_CHUNKS = [(0, 0), (1, 2), (2, 3)]

#: (dtype, fill_value): negative, zero, the int8 minimum, a uint64 beyond
#: 2**63, NaN, a plain float, and an infinity.
FILL_VALUES = [
    ("<i2", -7),
    ("|u1", 0),
    ("|i1", -128),
    (">u8", 2**63 + 5),
    ("<f4", float("nan")),
    (">f8", 2.5),
    ("<f8", float("-inf")),
]
FILL_VALUE_IDS = [f"{dtype}={fill}" for dtype, fill in FILL_VALUES]
