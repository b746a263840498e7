"""The power model of a replay's energy metrics (docs/metrics.md, "Energy").

Each processor of the machine draws ``busy_watts`` while a job holds it (reconfiguring
included) and ``idle_watts`` otherwise, over the replay's makespan:

    energy = busy_watts x held + idle_watts x (P x makespan - held)     [joules]

with ``held`` the processor-seconds the jobs held.  Set with ``--idle-watts`` /
``--busy-watts`` (``malleo replay``, ``compare``) or ``replay(..., power=PowerModel(...))``;
the knobs are defined in ``malleo.knobs`` (table ``power``).  The defaults (5 W idle, 20 W busy per
processor) are an order of magnitude for a server core, not a measurement: set the figures
of the machine being modelled.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from malleo.knobs import knob_fields, table_knobs

__all__ = ["PowerModel", "JOULES_PER_KWH"]

JOULES_PER_KWH = 3.6e6
"""Joules in one kilowatt-hour."""


@dataclass(frozen=True)
@knob_fields("power")
class PowerModel:
    """Watts per processor, idle and busy (each in [0, 1e6], checked by the schema).

    Its fields are the ``[power]`` knobs of malleo.knobs.KNOBS (listed below, generated).
    """

    def __post_init__(self) -> None:
        for name, k in table_knobs("power").items():
            object.__setattr__(self, name, k.check(getattr(self, name)))

    def replace(self, **changes: Any) -> "PowerModel":
        """A copy with ``changes`` applied (validated again)."""
        return dataclasses.replace(self, **changes)

    def energy_kwh(self, held_proc_seconds: float, total_proc_seconds: float
                   ) -> tuple[float, float]:
        """(busy kWh, idle kWh) of ``held_proc_seconds`` held out of
        ``total_proc_seconds`` (P x makespan) available."""
        idle = max(total_proc_seconds - held_proc_seconds, 0.0)
        return (self.busy_watts * held_proc_seconds / JOULES_PER_KWH,
                self.idle_watts * idle / JOULES_PER_KWH)
