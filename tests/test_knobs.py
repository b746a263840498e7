"""The knob schema (malleo.knobs) is the one definition every reader derives from: the
policy file's keys, the dataclasses' fields and defaults, the CLI options, the tuning
space's keys and the docs' option tables."""
import dataclasses
import re
from pathlib import Path

import pytest

from malleo import knobs
from malleo.emulator.cli._options import MALLEABILITY_OPTION_KEYS, POLICY_KEYS
from malleo.emulator.power import PowerModel
from malleo.flexible import FlexibleJobs
from malleo.policy import Malleability, Multifactor, Policy
from malleo.policy_file import FLEXIBLE_KEYS, MALLEABILITY_KEYS, MULTIFACTOR_KEYS, TOP_KEYS

DOCS = Path(__file__).resolve().parents[1] / "docs"
CLASSES = {"": Policy, "multifactor": Multifactor, "malleability": Malleability,
           "flexible": FlexibleJobs, "power": PowerModel}


@pytest.mark.parametrize("table", list(CLASSES))
def test_every_dataclass_field_is_a_knob_with_its_default(table):
    own = {f.name: f for f in dataclasses.fields(CLASSES[table])
           if f.name not in ("multifactor", "malleability", "queue_factors",
                             "partition_factors")}
    schema = knobs.table_knobs(table)
    assert list(own) == list(schema)
    for name, field in own.items():
        assert field.default == schema[name].default, name


def test_policy_file_keys_derive_from_the_schema():
    assert list(TOP_KEYS) == list(knobs.table_knobs(""))
    assert list(MULTIFACTOR_KEYS) == list(knobs.table_knobs("multifactor"))
    assert list(MALLEABILITY_KEYS) == list(knobs.table_knobs("malleability"))
    assert list(FLEXIBLE_KEYS) == list(knobs.table_knobs("flexible"))


def test_scheduler_and_workload_knobs_are_split():
    """Issue 13: the scheduler's tables hold no workload-synthesis knob, and the
    [flexible] table holds nothing else."""
    for k in knobs.KNOBS:
        assert (k.role == "workload") == (k.table == "flexible"), k.key


def test_cli_options_derive_from_the_schema():
    assert POLICY_KEYS == tuple(n for n, k in knobs.table_knobs("").items() if k.option)
    with_option = [knobs.option_dest(k) for table in ("malleability", "flexible")
                   for k in knobs.table_knobs(table).values() if k.option]
    assert set(with_option) <= set(MALLEABILITY_OPTION_KEYS)


def test_defaults_pass_their_own_checks():
    for k in knobs.KNOBS:
        assert k.problem(k.default) is None, k.key


@pytest.mark.parametrize("path, tables", [
    ("policy-file.md", {"top", "multifactor", "malleability", "flexible"}),
    ("cli.md", {"options:top", "options:malleability", "options:flexible", "options:power"}),
])
def test_docs_tables_are_generated_from_the_schema(path, tables):
    text = (DOCS / path).read_text()
    found = re.findall(r"<!-- knobs:([\w:]+) -->\n(.*?)<!-- /knobs -->", text, re.S)
    assert {name for name, _ in found} == tables
    for name, body in found:
        assert body.strip() == knobs._table_of(name), \
            f"docs/{path}: table {name} is stale; run `python -m malleo.knobs --write-docs`"
