"""Text formatting of metrics and tables, shared by the CLI commands and the HTML report
(library code: it imports nothing from the CLI)."""
from __future__ import annotations

import math
from typing import Any, Sequence

from malleo.emulator.metrics import SUMMARY_KEYS
from malleo.emulator.work_metrics import MALLEABLE_KEYS, WORK_KEYS

_ALL_KEYS = {**SUMMARY_KEYS, **WORK_KEYS, **MALLEABLE_KEYS}
"""Every key a table shows: label, unit and direction."""

BREAKDOWN_ROWS = 8
"""Groups shown per breakdown in the replay table (the largest by processor-hours held;
--json has them all)."""


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def human_duration(seconds: float) -> str:
    """``5400`` -> ``"1.5 h"``: the largest of s, min, h, d that keeps the value >= 1."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if abs(seconds) >= 2 * size:
            return f"{seconds / size:,.1f} {unit}"
    return f"{seconds:,.0f} s"


def format_metric(key: str, value: Any, *, human: bool = True) -> str:
    """One summary value as text, with its unit (see :data:`SUMMARY_KEYS`)."""
    if _is_missing(value):
        return "n/a"
    unit = _ALL_KEYS.get(key, ("", "", None))[1]
    if unit == "s":
        text = f"{value:,.0f} s" if float(value).is_integer() else f"{value:,.1f} s"
        if human and abs(value) >= 120:
            text += f" ({human_duration(value)})"
        return text
    if unit == "%":
        return f"{100 * value:.2f} %"
    if unit:
        return f"{value:,.2f} {unit}"
    if isinstance(value, float):
        return f"{value:,.3f}"
    return f"{value:,}"


def _dropped_detail(by_reason: dict[str, int]) -> str:
    parts = [f"{reason.replace('_', ' ')} {count:,}" for reason, count in by_reason.items()
             if count]
    return f"  ({', '.join(parts)})" if parts else ""


def replay_table(summary: dict[str, Any]) -> str:
    """The metrics of one replay as aligned ``label  value`` lines."""
    head = [("source", str(summary.get("source", ""))),
            ("machine", _machine(summary)),
            ("policy", str(summary.get("policy", "")))]
    if summary.get("offered_load") is not None:
        load = f"{summary['offered_load']:.3f}"
        if summary.get("load_scale") is not None:
            load += f" (arrivals scaled x{summary['load_scale']:.4g}, --load)"
        head.append(("offered load", load))
    if summary.get("speedup_model") and "utilization_useful" in summary:
        head.append(("speedup model", f"{summary['speedup_model']} (assumed by useful work "
                                      f"and parallel efficiency; --speedup)"))
    rows = [(label, format_metric(key, summary.get(key)))
            for key, (label, _unit, _better) in SUMMARY_KEYS.items()]
    rows = [(label, text + _dropped_detail(summary.get("dropped_by_reason", {})))
            if label == SUMMARY_KEYS["dropped"][0] else (label, text) for label, text in rows]
    if "utilization_used" in summary:
        index = list(SUMMARY_KEYS).index("utilization") + 1
        rows.insert(index, ("utilization (used procs)",
                            format_metric("utilization", summary["utilization_used"])))
    if "utilization_useful" in summary:
        index = list(SUMMARY_KEYS).index("utilization") + 1
        rows.insert(index, ("utilization (useful work)",
                            format_metric("utilization", summary["utilization_useful"])))
    if "reconfigurations_expand" in summary:      # a malleable replay (docs/malleability.md)
        head.append(("malleability", f"{summary.get('malleability', '')}"))
        rows += [("workload completion", format_metric("makespan",
                                                       summary["workload_completion"])),
                 ("reconfigurations", f"{summary['reconfigurations_expand']:,} expand, "
                                      f"{summary['reconfigurations_shrink']:,} shrink"),
                 ("time reconfiguring", format_metric("makespan",
                                                      summary["reconfig_time_total"]))]
        if "expanders_requested" in summary:
            rows.append(("expanders", f"{summary['expanders_requested']:,} requested, "
                                      f"{summary['expanders_merged']:,} merged, "
                                      f"{summary['expanders_cancelled']:,} cancelled"))
            rows.append(("expander wait mean", format_metric(
                "wait_mean", summary["expander_wait_mean"])))
        if "resized_jobs" in summary:
            rows.append(("resized jobs", f"{summary['resized_jobs']:,} "
                                         f"({summary['resized_jobs_faster']:,} faster, "
                                         f"{summary['resized_jobs_slower']:,} slower than "
                                         f"at their trace size; net "
                                         f"{summary['resize_time_saved']:,} s saved)"))
    for key, (label, _unit, _better) in WORK_KEYS.items():
        if key in summary and key != "utilization_useful":     # shown beside utilization
            text = format_metric(key, summary[key])
            if key == "energy_kwh" and not _is_missing(summary[key]):
                text += (f" (busy {summary['energy_busy_kwh']:,.2f}, idle "
                         f"{summary['energy_idle_kwh']:,.2f}; {summary['busy_watts']:g} W "
                         f"busy, {summary['idle_watts']:g} W idle per processor)")
            rows.append((label, text))
    width = max(len(label) for label, _ in head + rows)
    lines = [f"{label:<{width}}  {text}" for label, text in head]
    lines.append("")
    # Right-align the number part so the columns of digits line up.
    numbers = [text.split(" ", 1) for _, text in rows]
    num_width = max(len(parts[0]) for parts in numbers)
    for (label, _), parts in zip(rows, numbers):
        rest = f" {parts[1]}" if len(parts) > 1 else ""
        lines.append(f"{label:<{width}}  {parts[0]:>{num_width}}{rest}")
    lines.append(f"(bounded slowdown threshold {summary.get('bsld_threshold', 10):g} s; "
                 "Jain index over users' mean bounded slowdown, 1 = all users equal)")
    for key, title in (("by_size_class", "size class (processors held)"),
                       ("by_application", "application (SWF field 14)")):
        if summary.get(key):
            lines += ["", breakdown_table(summary[key], title)]
    return "\n".join(lines)


def breakdown_table(groups: dict[str, dict[str, Any]], title: str,
                    limit: int = BREAKDOWN_ROWS) -> str:
    """One breakdown (``by_size_class`` / ``by_application``) as an aligned table: the
    ``limit`` groups with the most processor-hours held, in the breakdown's order."""
    keep = sorted(groups, key=lambda g: -groups[g]["proc_hours_held"])[:limit]
    shown = [g for g in groups if g in keep]
    header = [title, "jobs", "wait mean", "bsld mean", "proc-h held", "efficiency",
              "resized"]
    rows = [[g, f"{v['jobs']:,}", f"{v['wait_mean']:,.0f} s", f"{v['bsld_mean']:,.2f}",
             f"{v['proc_hours_held']:,.1f}", f"{v['parallel_efficiency']:.3f}",
             f"{v['resized_jobs']:,}"] for g, v in ((g, groups[g]) for g in shown)]
    widths = [max(len(r[c]) for r in [header, *rows]) for c in range(len(header))]
    out = ["  ".join([f"{r[0]:<{widths[0]}}", *(f"{c:>{w}}" for c, w in
                                                zip(r[1:], widths[1:]))]).rstrip()
           for r in [header, *rows]]
    if len(groups) > len(shown):
        out.append(f"({len(groups) - len(shown):,} more in --json)")
    return "\n".join(out)


def _machine(summary: dict[str, Any]) -> str:
    text = f"{summary.get('procs', 0):,} processors"
    if summary.get("node_procs"):
        nodes = summary["procs"] // summary["node_procs"]
        text += f" ({nodes:,} exclusive nodes of {summary['node_procs']})"
    return text


def _rigid_value(key: str, summary: dict[str, Any]) -> Any:
    """What a rigid replay's column shows for a malleable-only key: its makespan as the
    workload completion (the same definition), no reconfiguration."""
    if key not in MALLEABLE_KEYS:
        return None
    return summary.get("makespan") if key == "workload_completion" else 0


def best_index(key: str, values: Sequence[Any]) -> set[int]:
    """Positions of the best value of metric ``key`` (ties all marked); empty if no direction."""
    better = _ALL_KEYS.get(key, ("", "", None))[2]
    present = [(i, v) for i, v in enumerate(values) if not _is_missing(v)]
    if better is None or len(present) < 2:
        return set()
    target = (min if better == "lower" else max)(v for _, v in present)
    return {i for i, v in present if v == target}


def compare_table(names: Sequence[str], summaries: Sequence[dict[str, Any]]) -> str:
    """Policies side by side: one row per metric, ``*`` on the best value of each row."""
    header = ["metric", "better", *names]
    rows: list[list[str]] = []
    keys = {**SUMMARY_KEYS, **{k: v for k, v in {**MALLEABLE_KEYS, **WORK_KEYS}.items()
                               if any(k in s for s in summaries)}}
    for key, (label, unit, better) in keys.items():
        values = [s.get(key, _rigid_value(key, s)) for s in summaries]
        best = best_index(key, values)
        cells = [format_metric(key, v, human=False) + ("*" if i in best else " ")
                 for i, v in enumerate(values)]
        rows.append([label, better or "", *cells])
    widths = [max(len(row[c]) for row in [header, *rows]) for c in range(len(header))]
    lines = []
    for r, row in enumerate([header, *rows]):
        cells = [f"{row[0]:<{widths[0]}}", f"{row[1]:<{widths[1]}}"]
        cells += [f"{cell:>{w}}" if r else f"{cell:>{w - 1}} " for cell, w in
                  zip(row[2:], widths[2:])]
        lines.append("  ".join(cells).rstrip())
    lines.append("* best value of the row (\"better\" says whether lower or higher is better)")
    return "\n".join(lines)
