"""Rigid replays stay byte-identical: every shared trace, every rigid policy, compared with
the digests recorded from the reference build (tests/golden/rigid_digests.json, written
by ``python tests/rigid_digests.py --write``; see that module for the policy set).

A changed *input* digest means the trace reader changed, not the core: regenerate the
file from a build of the commit the digests came from plus that reader change.
"""
import json

import pytest

import rigid_digests as rd

RECORDED = json.loads(rd.DIGESTS.read_text()) if rd.DIGESTS.is_file() else {}
PRESENT = {p.name: p for p in sorted(rd.traces_dir().glob("*.swf.gz"))}


def test_digests_cover_every_shared_trace():
    if not PRESENT:
        pytest.skip(f"no shared traces at {rd.traces_dir()}")
    assert sorted(RECORDED) == sorted(PRESENT)


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_rigid_replays_are_byte_identical(name):
    if name not in PRESENT:
        pytest.skip(f"{name} not in {rd.traces_dir()}")
    cols, total = rd.load(PRESENT[name])
    assert rd.input_digest(cols) == RECORDED[name]["input"], \
        f"{name}: the trace reader's output changed; the digests need a new reference"
    n = len(cols["submit"])
    cases = list(rd.cases(n))
    assert {label for label, *_ in cases} == set(RECORDED[name]["replays"])
    changed = [label for label, k, o, b, e in cases
               if rd.replay_digest(cols, total, k, o, b, e) != RECORDED[name]["replays"][label]]
    assert not changed, f"{name}: schedules differ from the reference under {changed}"
