"""The core's enum codes come from one definition: the name tuples of malleo.policy.

``_core/_types.pxd`` (ORDER_*, BACKFILL_*, ESTIMATE_*) and ``_core/malleable.pxd``
(MPOL_*, SPEEDUP_*, KIND_*) must number the names in the order of ``ORDERS``,
``BACKFILLS``, ``ESTIMATES``, ``RECONFIG_POLICIES``, ``SPEEDUP_MODELS`` and
``JOB_KINDS``, which ``malleo.policy_codes`` compiles a policy with; and the core must
not import ``malleo.policy`` at run time.
"""
import re
from pathlib import Path

import pytest

from malleo import policy as P
from malleo.policy_codes import compile_policy

CORE = Path(__file__).resolve().parents[1] / "_core"


def enum_values(pxd: str, prefix: str) -> dict[str, int]:
    """NAME -> value of the ``PREFIX_NAME = value`` enum members of a .pxd file."""
    text = (CORE / pxd).read_text()
    return {m.group(1): int(m.group(2))
            for m in re.finditer(rf"^\s+{prefix}_([A-Z0-9_]+)\s*=\s*(\d+)\s*$", text, re.M)}


@pytest.mark.parametrize("pxd, prefix, names", [
    ("_types.pxd", "ORDER", P.ORDERS),
    ("_types.pxd", "BACKFILL", P.BACKFILLS),
    ("_types.pxd", "ESTIMATE", P.ESTIMATES),
    ("_types.pxd", "BFORDER", P.BACKFILL_ORDERS),
    ("malleable.pxd", "MPOL", P.RECONFIG_POLICIES),
    ("malleable.pxd", "SPEEDUP", P.SPEEDUP_MODELS),
    ("malleable.pxd", "KIND", P.JOB_KINDS),
    ("malleable.pxd", "START", P.START_SIZES),
])
def test_enum_order_matches_the_name_tuple(pxd, prefix, names):
    expected = {name.upper().replace("-", "_"): code for code, name in enumerate(names)}
    assert enum_values(pxd, prefix) == expected


def test_compiled_policy_codes_are_tuple_indices():
    pol = P.Policy(order="wfp3", backfill="slurm", estimate="predict",
                   malleability=P.Malleability(policy="head-unblock", speedup="downey:10,1",
                                               expand_mode="slurm"))
    core = pol.core
    assert core is pol.core        # compiled once per policy
    assert (core.order, core.backfill, core.estimate) == (4, 3, 2)
    assert (core.mall_policy, core.speedup_model, core.is_slurm_expand) == (2, 2, True)
    assert compile_policy(pol) == core
    assert core.core is core


def test_core_sources_do_not_import_the_policy_module():
    for path in sorted(p for p in CORE.iterdir() if p.suffix in (".pyx", ".pxd", ".pxi", ".py")):
        text = path.read_text()
        assert "malleo.policy" not in re.sub(r"(?m)#.*$|\"\"\"[\s\S]*?\"\"\"", "", text), path
