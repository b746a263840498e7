"""Hypothesis strategies of hostile and careless inputs for the fuzz tests (tests/test_fuzz.py).

Each strategy mixes well-formed input with the values issue 12 found breaking the readers:
integers at and past 2**31, 2**53, 2**63 and malleo.limits, floats like 1e400, NaN and
inf, wrong types, deep nesting, CR line ends, stray bytes and truncation.  Inputs are
small (a few kB) so many run in the suite's time budget.
"""
from __future__ import annotations

import json

from hypothesis import strategies as st

from malleo.limits import MAX_PROCS, MAX_TIME

EDGE_INTS = [0, 1, -1, 2, 4, 2**24, 2**24 + 1, 2**31 - 1, 2**31, 2**32 + 2, 2**36, 2**36 + 1,
             2**53, 2**53 + 1, 2**62 + 5, 2**63 - 1, 2**63, 2**64, 10**20, -(2**63),
             MAX_TIME, MAX_PROCS]
"""Integers where types wrap or limits bite."""

ints = st.one_of(st.integers(-5, 5000), st.sampled_from(EDGE_INTS),
                 st.integers(-(2**70), 2**70))
"""Integers: mostly plausible, often at an edge, sometimes huge."""

floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([0.5, -0.0, 1e-300, 1e300, 1e308, 2.0**53 + 2]))

NUMBER_TOKENS = st.one_of(
    ints.map(str), floats.map(repr),
    st.sampled_from(["1e400", "-1e400", "9007199254740993.0", "1.5", "1e3", "-1", "+7",
                     "0x10", "nan", "inf", "", "--1", "1e", ".", "١٢"]))
"""SWF field tokens, good and bad."""


@st.composite
def swf_texts(draw, plausible: bool = False) -> bytes:
    """An SWF file: header lines (MaxProcs/MaxNodes of any size), job lines of 16-20
    tokens, comments, blanks; CR, CRLF or LF line ends; sometimes random bytes.
    ``plausible``: a small machine and mostly well-formed jobs (replayable input)."""
    lines = []
    if plausible:
        lines.append(f"; MaxProcs: {draw(st.integers(1, 16))}")
    elif draw(st.booleans()):
        lines.append(f"; MaxProcs: {draw(ints)}")
    if draw(st.booleans()):
        lines.append(f"; MaxNodes: {draw(ints)}")
    kinds = (["plausible"] * 6 + ["job", "comment", "blank"] if plausible
             else ["job", "job", "job", "plausible", "comment", "blank"])
    for _ in range(draw(st.integers(0, 8 if not plausible else 25))):
        kind = draw(st.sampled_from(kinds))
        if kind == "comment":
            lines.append("; " + draw(st.text(max_size=30)))
        elif kind == "blank":
            lines.append(draw(st.sampled_from(["", "  ", "\t"])))
        elif kind == "plausible":
            n, submit, run, procs = (draw(st.integers(1, 50)), draw(st.integers(0, 500)),
                                     draw(st.integers(-1, 500)), draw(st.integers(-1, 8)))
            req = draw(st.one_of(st.integers(-1, 600), st.sampled_from(EDGE_INTS)))
            lines.append(f"{n} {submit} -1 {run} {procs} -1 -1 {procs} {req} -1 1 "
                         f"{draw(st.integers(1, 3))} 1 1 1 1 -1 -1")
        else:
            count = draw(st.sampled_from([18, 18, 18, 17, 19, 0, 1]))
            lines.append(" ".join(draw(NUMBER_TOKENS) or "0" for _ in range(count)))
    end = draw(st.sampled_from(["\n", "\n", "\r\n", "\r"]))
    data = (end.join(lines) + (end if draw(st.booleans()) else "")).encode("utf-8")
    if draw(st.integers(0, 9)) == 0:
        data = draw(st.binary(max_size=200)) + data
    if draw(st.integers(0, 9)) == 0 and data:
        data = data[:draw(st.integers(0, len(data)))]
    return data


# ------------------------------------------------------------------------------ TOML

def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + "}"


toml_scalars = st.one_of(ints, floats, st.booleans(), st.text(max_size=12),
                         st.sampled_from(["fcfs", "sjf", "easy", "conservative", "slurm",
                                          "none", "request", "actual", "predict", "wfp3"]))
toml_values = st.recursive(
    toml_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.sampled_from(["low", "high", "step", "num",
                                                             "log", "x"]), inner, max_size=4)),
    max_leaves=8)

POLICY_KEYS = ["order", "backfill", "estimate", "bf_max_job_test", "bf_window",
               "bf_resolution", "predict_history", "max_factor", "weight_age", "unknown_key"]
TABLES = ["multifactor", "malleability"]
TABLE_KEYS = ["weight_age", "weight_job_size", "weight_fair_share", "max_age", "malleable",
              "min_factor", "max_factor", "speedup", "reconfig_cost", "min_interval", "x"]


@st.composite
def toml_texts(draw) -> str:
    """A policy or space file: known and unknown keys with values of any type, tables,
    sometimes a runaway nesting or a byte-level mutation."""
    lines = [f"{key} = {_toml_value(draw(toml_values))}"
             for key in draw(st.lists(st.sampled_from(POLICY_KEYS), max_size=5, unique=True))]
    for table in draw(st.lists(st.sampled_from(TABLES), max_size=2, unique=True)):
        lines.append(f"[{table}]")
        lines += [f"{key} = {_toml_value(draw(toml_values))}"
                  for key in draw(st.lists(st.sampled_from(TABLE_KEYS), max_size=4,
                                           unique=True))]
    text = "\n".join(lines) + "\n"
    mutation = draw(st.integers(0, 9))
    if mutation == 0:
        depth = draw(st.sampled_from([50, 3000]))
        text += "deep = " + "[" * depth + "]" * depth + "\n"
    elif mutation == 1 and text:
        cut = draw(st.integers(0, len(text)))
        text = text[:cut] + draw(st.text(max_size=5)) + text[cut:]
    return text


# ------------------------------------------------------------------------------ sacct

SACCT_HEADER = ["JobID", "JobIDRaw", "User", "Group", "Partition", "QOS", "Submit", "Start",
                "End", "Elapsed", "Timelimit", "State", "AllocCPUS", "ReqCPUS", "AllocNodes",
                "ReqNodes"]
_STAMPS = st.one_of(
    st.datetimes(min_value=__import__("datetime").datetime(1970, 1, 2),
                 max_value=__import__("datetime").datetime(2100, 1, 1)).map(
        lambda d: d.isoformat(timespec="seconds")),
    st.sampled_from(["Unknown", "None", "", "9999-12-31T23:59:59", "0001-01-01T00:00:00",
                     "soon", "2024-02-30T00:00:00"]))
_DURATIONS = st.one_of(
    st.sampled_from(["UNLIMITED", "Partition_Limit", "INVALID", "", "1-00:00:00", "00:01.5",
                     "5", "999999999999999999999", "1-", ":::", "-1"]),
    ints.map(str),
    st.tuples(st.integers(0, 400), st.integers(0, 99), st.integers(0, 99)).map(
        lambda t: f"{t[0]}:{t[1]:02d}:{t[2]:02d}"))
_COUNTS = st.one_of(ints.map(str), st.sampled_from(["", "1K", "4294967294", "x"]))
_CELLS = {"JobID": st.one_of(st.integers(1, 99).map(str), st.sampled_from(["7.batch", "7_3",
                                                                          "", "8.0"])),
          "JobIDRaw": st.one_of(st.integers(1, 99).map(str), st.just("")),
          "User": st.sampled_from(["alice", "bob(1000)", "", "root(0)"]),
          "Group": st.sampled_from(["lab", ""]), "Partition": st.sampled_from(["p", ""]),
          "QOS": st.sampled_from(["normal", ""]), "Submit": _STAMPS, "Start": _STAMPS,
          "End": _STAMPS, "Elapsed": _DURATIONS, "Timelimit": _DURATIONS,
          "State": st.sampled_from(["COMPLETED", "FAILED", "CANCELLED by 0", "RUNNING",
                                    "EXPLODED", "", "TIMEOUT"]),
          "AllocCPUS": _COUNTS, "ReqCPUS": _COUNTS, "AllocNodes": _COUNTS, "ReqNodes": _COUNTS}


@st.composite
def sacct_texts(draw) -> str:
    """``sacct --parsable2`` output: a header of some of the fields, rows of good and bad
    cells, sometimes a row with a wrong number of cells."""
    header = [f for f in SACCT_HEADER if draw(st.integers(0, 5)) > 0]
    rows = []
    for _ in range(draw(st.integers(0, 6))):
        cells = [draw(_CELLS[f]) for f in header]
        if draw(st.integers(0, 14)) == 0:
            cells.append("extra")
        rows.append("|".join(cells))
    return "\n".join(["|".join(header), *rows]) + "\n"


def _job_skeleton(draw) -> dict:
    submit = draw(st.integers(0, 2_000_000_000))
    start = submit + draw(st.integers(0, 1000))
    return {"job_id": draw(st.integers(1, 99)), "user": "ann", "group": "g", "partition": "p",
            "qos": "normal", "state": {"current": draw(st.sampled_from(
                ["COMPLETED", ["FAILED"], "RUNNING"]))},
            "time": {"submission": submit, "start": start, "end": start + 100,
                     "elapsed": 100, "limit": {"set": True, "infinite": False, "number": 10}},
            "tres": {"allocated": [{"type": "cpu", "count": 4}], "requested": []},
            "array": {"job_id": 0, "task_id": {"set": False, "infinite": False, "number": 0}},
            "allocation_nodes": 1, "steps": [{"step": {"id": "1.batch"}}]}


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), ints, floats, st.text(max_size=8)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["set", "infinite", "number",
                                                             "type", "count", "current",
                                                             "id", "step"]),
                                            inner, max_size=3)),
    max_leaves=6)

_PATHS = [("job_id",), ("user",), ("group",), ("partition",), ("qos",), ("state",),
          ("state", "current"), ("time",), ("time", "submission"), ("time", "start"),
          ("time", "end"), ("time", "elapsed"), ("time", "limit"), ("tres",),
          ("tres", "allocated"), ("tres", "requested"), ("array",), ("array", "task_id"),
          ("array", "job_id"), ("allocation_nodes",), ("steps",), ("required",)]


@st.composite
def sacct_json_texts(draw) -> str:
    """``sacct --json`` output: valid job objects with a few fields replaced by any JSON
    value (NaN and Infinity included), sometimes a deep nesting or a cut document."""
    jobs = []
    for _ in range(draw(st.integers(0, 3))):
        job = _job_skeleton(draw)
        for path in draw(st.lists(st.sampled_from(_PATHS), max_size=3)):
            target = job
            for key in path[:-1]:
                if not isinstance(target.get(key), dict):
                    target[key] = {}
                target = target[key]
            target[path[-1]] = draw(json_values)
        jobs.append(job)
    text = json.dumps({"jobs": jobs})          # NaN and Infinity written as such
    mutation = draw(st.integers(0, 9))
    if mutation == 0:
        text = '{"jobs": [' + "[" * 3000 + "]" * 3000 + "]}"
    elif mutation == 1:
        text = text[:draw(st.integers(0, len(text)))]
    return text


# ------------------------------------------------------------------------------ report

REPORT_CELLS = st.one_of(ints.map(str), floats.map(repr),
                         st.sampled_from(["", "nan", "inf", "-inf", "x", "True", "1e400",
                                          '"', "1,2"]))


@st.composite
def csv_mutations(draw, lines: list[str]) -> str:
    """A replay CSV (``lines``: header and rows) with cells replaced, rows cut or given
    extra cells, or only its header."""
    lines = list(lines)
    header = lines[0].split(",")
    for _ in range(draw(st.integers(0, 3))):
        row = draw(st.integers(1, len(lines) - 1))
        cells = lines[row].split(",")
        action = draw(st.integers(0, 5))
        if action == 0:
            cells.append(draw(REPORT_CELLS))
        elif action == 1:
            cells = cells[:draw(st.integers(0, len(cells)))]
        elif cells:
            cells[draw(st.integers(0, len(cells) - 1))] = draw(REPORT_CELLS)
        lines[row] = ",".join(cells)
    if draw(st.integers(0, 9)) == 0:
        lines = lines[:1]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------ CLI options

HOSTILE_VALUES = st.one_of(
    ints.map(str), floats.map(repr),
    st.sampled_from(["", "-1", "0", "inf", "nan", "1e308", "99999999999999999999", "x",
                     "1:2", "0:0", "-5:3", "checkin:60", "checkin:99999999999999999999",
                     "fcfs+slurm(K=99999999999999999999)", "sjf+easy", "fcfs+slurm(K=2)",
                     "linear", "amdahl:0.1", "downey:10:1"]))
PLAUSIBLE_VALUES: dict[str, list[str]] = {
    "--procs": ["8", "16", "4"], "--node-procs": ["0", "2", "4"], "--jobs": ["0:10", "5:20"],
    "--order": ["fcfs", "sjf", "ljf", "wfp3", "unicep", "f1", "saf", "multifactor"],
    "--backfill": ["none", "easy", "conservative", "slurm"],
    "--estimate": ["request", "actual", "predict"], "--bf-max-job-test": ["1", "3", "50"],
    "--bf-window": ["60", "3600", "86400"], "--bf-resolution": ["1", "60"],
    "--malleable": ["0", "0.5", "1"], "--flex-seed": ["0", "7"],
    "--min-factor": ["0.5", "0.25", "1"], "--max-factor": ["1", "2", "4"],
    "--speedup": ["linear", "amdahl:0.1", "downey:10:1"], "--reconfig-cost": ["0", "30"],
    "--min-interval": ["0", "600"], "--reconfig-points": ["any", "checkin:60"],
    "--bsld-threshold": ["10", "1", "0.5"], "--flex-min-procs": ["1", "2"]}
"""Values each replay option accepts, so that option combinations reach the replay."""

REPLAY_OPTIONS = ["--procs", "--node-procs", "--jobs", "--order", "--backfill", "--estimate",
                  "--bf-max-job-test", "--bf-window", "--bf-resolution", "--malleable",
                  "--flex-seed", "--min-factor", "--max-factor", "--speedup",
                  "--reconfig-cost", "--min-interval", "--reconfig-points",
                  "--bsld-threshold", "--flex-min-procs"]


@st.composite
def replay_arguments(draw) -> list[str]:
    """Option/value pairs for ``malleo replay`` (values of any kind for any option)."""
    args = []
    for option in draw(st.lists(st.sampled_from(REPLAY_OPTIONS), max_size=5, unique=True)):
        hostile = draw(st.integers(0, 2)) == 0
        args += [option, draw(HOSTILE_VALUES) if hostile
                 else draw(st.sampled_from(PLAUSIBLE_VALUES[option]))]
    return args


COMMAND_OPTIONS: dict[str, dict[str, list[str]]] = {
    "trace generate": {"--jobs": ["1", "20"], "--procs": ["1", "64"], "--seed": ["0", "9"]},
    "trace from-sacct": {"--procs": ["64"], "--node-cpus": ["1", "8"],
                         "--tz": ["UTC", "Europe/Paris", "Mars/Olympus", "../../etc/passwd"],
                         "--format": ["parsable", "json"], "--computer": ["c", ""]},
    "tune": {"--trials": ["1", "2"], "--seed": ["0", "3"], "--split": ["0.5", "0.7"],
             "--search": ["grid", "random"], "--objective": ["bsld", "p95_wait+bsld",
                                                             "utilization", "nope*2"],
             "--procs": ["8", "16"], "--node-procs": ["0", "2"],
             "--bsld-threshold": ["10", "1"], "--top": ["1", "5"]},
}
"""Options of the other commands that take values, with values they accept."""


@st.composite
def command_arguments(draw, command: str) -> list[str]:
    """Option/value pairs for ``command`` (a key of :data:`COMMAND_OPTIONS`); a third of
    the values hostile."""
    options = COMMAND_OPTIONS[command]
    args = []
    for option in draw(st.lists(st.sampled_from(sorted(options)), max_size=4, unique=True)):
        hostile = draw(st.integers(0, 2)) == 0
        args += [option, draw(HOSTILE_VALUES) if hostile
                 else draw(st.sampled_from(options[option]))]
    return args


SPACE_LINES = st.sampled_from([
    'order = ["fcfs", "sjf", "wfp3"]', 'backfill = ["easy", "conservative", "slurm"]',
    'estimate = "request"', "bf_max_job_test = { low = 1, high = 20 }",
    "bf_window = { low = 600, high = 7200, step = 600 }",
    "bf_window = { low = 60, high = 86400, log = true }"])


@st.composite
def space_texts(draw) -> str:
    """A tuning space file: mostly valid lines, sometimes a fuzzed TOML file."""
    if draw(st.integers(0, 2)) == 0:
        return draw(toml_texts())
    lines = draw(st.lists(SPACE_LINES, min_size=1, max_size=4, unique=True))
    keys = [line.split("=")[0] for line in lines]
    lines = [line for i, line in enumerate(lines) if keys[i] not in keys[:i]]
    if draw(st.booleans()):
        lines.append(f"bf_resolution = {_toml_value(draw(toml_values))}")
    return "\n".join(lines) + "\n"
