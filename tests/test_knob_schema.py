"""Adding a knob is one ``Knob`` entry in ``malleo.knobs.KNOBS`` (plus the core code that
reads it): every other place derives from the schema.

A Python started fresh appends two synthetic knobs to KNOBS before anything else imports
the schema (a top-level choice with a describe label, and a ``[malleability]`` number with
a CLI option) and finds them, with no other edit, in the policy dataclasses (field,
default, check, docstring), ``Policy.describe()``, the TOML reader and writer, the CLI
options (a real ``malleo replay`` of a shared trace with the new options), the tuning space,
the docs' tables, the compiled ``CorePolicy`` (the choice as its code) and the core's
generated constants; and the schema refuses a knob whose core name would clash.
"""
import subprocess
import sys
import textwrap

import pytest

from malleo import knobs

TRACE = "/work/shared/traces/lublin_256.swf.gz"

SCRIPT = textwrap.dedent(r'''
    import json
    import malleo.knobs as K

    K.KNOBS = K.KNOBS + (
        K.Knob("", "zz_demo", "choice", "off", "a synthetic choice (test_knob_schema)",
               choices=("off", "on", "auto"), option="--zz-demo", label="/zz={value}"),
        K.Knob("malleability", "zz_gain", "int", 5, "a synthetic number (test_knob_schema)",
               "seconds", 0, 100, option="--zz-gain", metavar="SECONDS"),
    )

    import dataclasses
    from click.testing import CliRunner
    from malleo.errors import PolicyError
    from malleo.policy import Malleability, Policy
    from malleo.policy_codes import CorePolicy
    from malleo.policy_file import dump_policy, loads_policy
    from malleo.emulator.cli import cli
    from malleo.emulator.tune.space import loads_space

    # the dataclasses: field, default, check, docstring
    assert Policy().zz_demo == "off" and Malleability().zz_gain == 5
    assert [f.name for f in dataclasses.fields(Policy)][-3:] == ["zz_demo", "multifactor",
                                                                "malleability"]
    assert "zz_demo: a synthetic choice" in Policy.__doc__
    for bad, what in ((lambda: Policy(zz_demo="bad")), "zz_demo: must be one of off, on, auto"), \
                     ((lambda: Malleability(zz_gain=101)), "malleability.zz_gain: must be in 0..100"):
        try:
            bad()
        except PolicyError as exc:
            assert what in str(exc), exc
        else:
            raise AssertionError(what)
    # the short name
    pol = Policy(zz_demo="on", malleability=Malleability(zz_gain=7))
    assert Policy().describe() == "fcfs+easy" and pol.describe() == "fcfs+easy/zz=on"
    # the TOML reader and writer
    text = 'zz_demo = "auto"\n[malleability]\nzz_gain = 9\n'
    read = loads_policy(text, "demo.toml")
    assert (read.zz_demo, read.malleability.zz_gain) == ("auto", 9)
    assert loads_policy(dump_policy(read)) == read
    try:
        loads_policy('zz_demo = "nope"\n', "demo.toml")
    except PolicyError as exc:
        assert str(exc).startswith("demo.toml:1: zz_demo: must be one of"), exc
    else:
        raise AssertionError("zz_demo = nope was read")
    # the core's view: the choice as its code (index in choices), the number as is
    assert (pol.core.zz_demo, pol.core.zz_gain) == (1, 7) and isinstance(pol.core, CorePolicy)
    assert "    ZZ_DEMO_AUTO = 2" in K.core_codes_pxi().splitlines()
    # the docs' tables
    assert "| `zz_demo` | string | one of off, on, auto |" in K.markdown_table("")
    assert "`--zz-gain SECONDS`" in K.option_table("malleability")
    # the tuning space
    space = loads_space('zz_demo = ["off", "on"]\n')
    assert [p.choices for p in space.params] == [("off", "on")]
    # the CLI: the options exist, are checked, and reach the replay's policy
    def invoke(*args):     # as tests/cli_runner.py: a traceback fails
        return CliRunner().invoke(cli, list(args), catch_exceptions=False)

    assert "--zz-demo [off|on|auto]" in invoke("replay", "--help").output
    bad = invoke("replay", "TRACE", "--zz-demo", "x")
    assert bad.exit_code == 2 and "--zz-demo" in bad.output, bad.output
    done = invoke("replay", "TRACE", "--zz-demo", "on", "--zz-gain", "3", "--json", "--quiet")
    assert done.exit_code == 0, done.output
    print(json.loads(done.output)["policy_name"])
''').replace("TRACE", TRACE)


def test_a_new_knob_is_one_schema_entry():
    run = subprocess.run([sys.executable, "-c", SCRIPT], cwd="/", capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    assert run.stdout.strip().splitlines()[-1] == "fcfs+easy/zz=on"


def test_core_names_must_be_unique_across_the_scheduler_tables():
    twin = knobs.Knob("multifactor", "order", "int", 1, "clashes with the top-level order")
    with pytest.raises(ValueError, match="repeated: order"):
        knobs.core_knobs(knobs.KNOBS + (twin,))


def test_core_constants_must_be_unique():
    twin = knobs.Knob("", "zz_twin", "choice", "fcfs", "clashes with ORDER_FCFS",
                      choices=("fcfs",), code_prefix="ORDER")
    with pytest.raises(ValueError, match="ORDER_FCFS defined twice"):
        knobs.core_codes_pxi(knobs.KNOBS + (twin,))


def test_every_scheduler_knob_reaches_the_compiled_policy():
    from malleo.policy import Policy

    core = Policy().core
    for k in knobs.core_knobs():
        value = getattr(core, k.name)
        if k.codes:
            assert value == k.codes.index(k.default.partition(":")[0]), k.key
        else:
            assert value == k.default, k.key
