"""Type stub for malleo._core._swfscan (the SWF body tokenizer)."""
import numpy as np
import numpy.typing as npt

BAD_FIELD_COUNT: int
BAD_NUMBER: int
BAD_INTEGER: int
BAD_RANGE: int

def scan(
    text: bytes,                    # the whole decompressed trace
    is_int: npt.NDArray[np.uint8],  # one flag per field: 1 = must hold an integral value
    lenient: bool,                  # skip bad lines instead of stopping at the first
) -> tuple[
    npt.NDArray[np.int64],          # integer fields, shape (n_int, rows), file order
    npt.NDArray[np.float64],        # other fields, shape (nfields - n_int, rows)
    npt.NDArray[np.int64],          # byte offset of each good job line
    list[tuple[int, int]],          # (start, end) byte ranges of comment lines
    list[tuple[int, int, int, int, int]],  # bad lines: (line_start, kind, field, tok_start, tok_end)
    dict[str, int],                 # "lines", "blank", "comment" counts
]: ...
