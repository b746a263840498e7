"""The endpoint's request validation: every field checked, anything else a BadRequest."""
import json

import pytest
from hypothesis import given, settings, strategies as st

from helpers import EXAMPLES
from malleo.plugin.reconfig.request import BadRequest, Request, parse


def line(**fields):
    base = {"version": 1, "op": "check", "job_id": 12, "nodes": 2}
    base.update(fields)
    return json.dumps({k: v for k, v in base.items() if v is not ...}).encode()


def test_well_formed():
    assert parse(line()) == Request(job_id=12, nodes=2)


@pytest.mark.parametrize("raw, word", [
    (b"\xff\xfe\x00garbage", "not UTF-8"),
    (b"hello", "not JSON"),
    (b"[1, 2]", "JSON object"),
    (line(version=2), "version"),
    (line(version=True), "version"),
    (line(version=1.0), "version"),
    (line(op="resize"), "op"),
    (line(job_id="12"), "job_id: must be an integer"),
    (line(job_id=True), "job_id: must be an integer"),
    (line(job_id=1.5), "job_id: must be an integer"),
    (line(job_id=0), "outside"),
    (line(job_id=2**40), "outside"),
    (line(nodes=-1), "outside"),
    (line(nodes=None), "nodes: must be an integer"),
    (line(nodes=...), "missing nodes"),
    (line(extra=1), "unknown 'extra'"),
])
def test_refused(raw, word):
    with pytest.raises(BadRequest, match=word):
        parse(raw)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_parse_or_refuse(raw):
    try:
        req = parse(raw)
    except BadRequest:
        return
    assert req.job_id >= 1 and req.nodes >= 1


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.dictionaries(st.sampled_from(["version", "op", "job_id", "nodes", "x"]),
                       st.one_of(st.integers(), st.text(max_size=5), st.booleans(), st.none(),
                                 st.floats(allow_nan=False))))
def test_arbitrary_objects_parse_or_refuse(obj):
    try:
        req = parse(json.dumps(obj).encode())
    except BadRequest:
        return
    assert set(obj) == {"version", "op", "job_id", "nodes"}
    assert req == Request(obj["job_id"], obj["nodes"])
