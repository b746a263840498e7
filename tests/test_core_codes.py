"""The core's enum codes come from one definition: the knobs of malleo.knobs.KNOBS.

``_core/_knob_codes.pxi`` (included by ``_core/_types.pxd``) is written by setup.py from
the schema: ORDER_*, BACKFILL_*, ESTIMATE_*, BFORDER_*, MPOL_*, START_*, SPEEDUP_*, ...
number each knob's values in the order of its ``choices`` (``ORDERS``, ``BACKFILLS``, ...),
which ``malleo.policy_codes`` compiles a policy with; ``_core/malleable.pxd``'s KIND_*
(a job column, not a knob) follows ``JOB_KINDS``; and the core must not import
``malleo.policy`` at run time.
"""
import re
from pathlib import Path

import pytest

from malleo import knobs
from malleo import policy as P
from malleo.policy_codes import compile_policy

CORE = Path(__file__).resolve().parents[1] / "_core"


def enum_values(pxd: str, prefix: str) -> dict[str, int]:
    """NAME -> value of the ``PREFIX_NAME = value`` enum members of a core source file."""
    text = (CORE / pxd).read_text()
    return {m.group(1): int(m.group(2))
            for m in re.finditer(rf"^\s+{prefix}_([A-Z0-9_]+)\s*=\s*(\d+)\s*$", text, re.M)}


def test_the_built_constants_are_the_schema_s():
    """The generated file the core was built with is what the schema gives now (a knob
    added or reordered without a rebuild fails here: rebuild with setup.py build_ext)."""
    assert (CORE / "_knob_codes.pxi").read_text() == knobs.core_codes_pxi()
    assert 'include "_knob_codes.pxi"' in (CORE / "_types.pxd").read_text()


@pytest.mark.parametrize("prefix, names", [
    ("ORDER", P.ORDERS),
    ("BACKFILL", P.BACKFILLS),
    ("ESTIMATE", P.ESTIMATES),
    ("BFORDER", P.BACKFILL_ORDERS),
    ("MPOL", P.RECONFIG_POLICIES),
    ("SPEEDUP", P.SPEEDUP_MODELS),
    ("START", P.START_SIZES),
    ("BF_ROUNDING", P.BF_ROUNDINGS),
    ("EXPAND_MODE", P.EXPAND_MODES),
])
def test_enum_order_matches_the_name_tuple(prefix, names):
    expected = {name.upper().replace("-", "_"): code for code, name in enumerate(names)}
    found = enum_values("_knob_codes.pxi", prefix)
    assert {n: c for n, c in found.items() if n in expected} == expected
    assert not set(expected) - set(found)


def test_job_kinds_match_the_name_tuple():
    expected = {name.upper(): code for code, name in enumerate(P.JOB_KINDS)}
    assert enum_values("malleable.pxd", "KIND") == expected


def test_hand_written_enums_do_not_redefine_the_generated_ones():
    generated = set(re.findall(r"^\s+([A-Z0-9_]+) = \d+$", knobs.core_codes_pxi(), re.M))
    for path in sorted(CORE.glob("*.pxd")):
        own = set(re.findall(r"^\s+([A-Z0-9_]+)\s*=\s*\d+", path.read_text(), re.M))
        assert not own & generated, (path.name, own & generated)


def test_compiled_policy_codes_are_tuple_indices():
    pol = P.Policy(order="wfp3", backfill="slurm", estimate="predict",
                   malleability=P.Malleability(policy="head-unblock", speedup="downey:10,1",
                                               expand_mode="slurm"))
    core = pol.core
    assert core is pol.core        # compiled once per policy
    assert (core.order, core.backfill, core.estimate) == (4, 3, 2)
    assert (core.policy, core.speedup, core.expand_mode) == (2, 2, 1)
    assert core.backfill_order == 0 and core.bf_rounding == 0 and core.weight_age == 1000.0
    assert compile_policy(pol) == core
    assert core.core is core


def test_core_sources_do_not_import_the_policy_module():
    for path in sorted(p for p in CORE.iterdir() if p.suffix in (".pyx", ".pxd", ".pxi", ".py")):
        text = path.read_text()
        assert "malleo.policy" not in re.sub(r"(?m)#.*$|\"\"\"[\s\S]*?\"\"\"", "", text), path
