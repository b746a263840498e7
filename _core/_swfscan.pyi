"""Type stub for malleo._core._swfscan (the incremental SWF body tokenizer)."""
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

BAD_FIELD_COUNT: int
BAD_NUMBER: int
BAD_INTEGER: int
BAD_RANGE: int
BAD_INEXACT: int
BAD_INFINITE: int

class Scanner:
    stopped: bool                   # a bad line stopped a strict scan
    lenient: bool
    rows: int                       # good job lines stored so far
    lines: int                      # physical lines so far
    blank: int
    ncomment: int
    comments_skipped: int           # comment lines past the byte budget (counted only)
    comments: list[tuple[int, bytes]]          # (line number, text) of kept comment lines
    bad: list[tuple[int, int, int, bytes]]     # first 3 per kind: (line, kind, field, token)
    bad_counts: dict[int, int]                 # kind -> bad lines of that kind

    def __init__(
        self,
        is_int: npt.NDArray[np.uint8],  # one flag per field: 1 = must hold an integral value
        lenient: bool,                  # skip bad lines instead of stopping at the first
        comment_budget: int = ...,      # bytes of comment text kept
        keep: Sequence[bool] | None = ...,  # per field: store its values (None: all)
    ) -> None: ...
    def feed(self, text: bytes) -> None: ...   # whole lines, "\n" ends only
    def result(self) -> tuple[
        list[npt.NDArray[np.int64] | None],    # integer fields (None: not kept)
        list[npt.NDArray[np.float64] | None],  # other fields
        npt.NDArray[np.int64],          # 1-based line number of each good line
    ]: ...

class Column:
    """A scanner buffer handed to numpy (the base of the arrays ``Scanner.result`` returns):
    writable bytes in an anonymous memory mapping, unmapped when the last view is freed."""
