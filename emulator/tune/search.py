"""Search strategies: which parameter points a tuning run tries, in which order.

* ``grid``: every combination of the parameters' grid values (``--trials N`` keeps the
  first N, in grid order); trial numbers are grid positions.
* ``random``: points drawn independently from a ``numpy`` generator seeded with ``seed``;
  trial ``i`` is always the ``i``-th draw, so a resumed run redraws the same points and
  skips those already done.  Repeated points are redrawn (up to 1,000 times).
* ``tpe``: optuna's Tree-structured Parzen Estimator, seeded; sequential in spirit, it
  keeps ``workers`` trials in flight and learns from every finished one.  A resumed run
  feeds the recorded trials to the sampler before asking for more, with the seed
  ``seed + recorded trials`` (so its start-up draws differ from the recorded ones).
  A replay is deterministic, so a point the sampler asks for again is not replayed: it is
  told the score already known (or the one of the same point in flight) and asked again;
  the search ends, with fewer trials than asked, once every point of a finite space has
  been tried or after 1,000 repeated points in a row (as the random search).
"""
from __future__ import annotations

import itertools
from typing import Any, Iterator

import numpy as np

from malleo.emulator.tune.evaluate import params_key
from malleo.emulator.tune.space import Space
from malleo.emulator.tune.space_limits import param_size
from malleo.errors import MalleoError

__all__ = ["SEARCHES", "fixed_points", "TpeSearch", "DEFAULT_TRIALS", "MAX_REPEATS",
           "space_points"]

SEARCHES = ("grid", "random", "tpe")
DEFAULT_TRIALS = 20
"""Trials of a random or TPE search without ``--trials``."""

MAX_REPEATS = 1000
"""Points already tried that a random or TPE search draws in a row before it stops."""


def space_points(space: Space) -> int | None:
    """The number of distinct points random and TPE search can draw from ``space``
    (choices, ranges with ``step``: :func:`~malleo.emulator.tune.space_limits.param_size`;
    an integer range without one: every integer of it), or None when a parameter is a
    continuous float range."""
    total = 1
    for param in space.params:
        if param.kind == "choice" or param.step is not None:
            total *= param_size(param)
        elif param.kind == "int":
            total *= int(param.high) - int(param.low) + 1
        else:
            return None
    return total


def fixed_points(space: Space, search: str, trials: int | None, seed: int
                 ) -> list[tuple[int, dict[str, Any]]]:
    """``(trial number, params)`` of a grid or random search, in trial order."""
    if search == "grid":
        # Lazily: a large grid cut by --trials is never listed whole.
        names = [p.name for p in space.params]
        product = itertools.product(*(p.grid() for p in space.params))
        return [(i, dict(zip(names, values)))
                for i, values in enumerate(itertools.islice(product, trials))]
    if search == "random":
        count = DEFAULT_TRIALS if trials is None else trials
        return list(enumerate(_distinct_draws(space, count, seed)))
    raise MalleoError(f"search: expected grid or random here, got {search!r}")


def _distinct_draws(space: Space, count: int, seed: int) -> Iterator[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    seen: set[str] = set()
    for _ in range(count):
        for _attempt in range(MAX_REPEATS):
            point = space.sample(rng)
            key = params_key(point)
            if key not in seen:
                break
        else:
            return              # the space has fewer distinct points than asked for
        seen.add(key)
        yield point


class TpeSearch:
    """optuna's TPE through its ask/tell interface (optuna is imported here, lazily),
    asking each distinct point once.

    Invariant: every point :meth:`ask` returns is neither recorded with a score
    (:meth:`add_done`, :meth:`tell`) nor in flight (asked, not yet told).

    Args:
        space: the search space.
        seed: the sampler's seed.
    """

    def __init__(self, space: Space, seed: int) -> None:
        try:
            import optuna
        except ImportError:
            raise MalleoError("search tpe needs optuna, which is not installed "
                              "(pip install 'malleo[tune]')") from None
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.optuna = optuna
        self.space = space
        self.study = optuna.create_study(direction="minimize",
                                         sampler=optuna.samplers.TPESampler(seed=seed))
        self.distributions = {p.name: self._distribution(p) for p in space.params}
        self._open: dict[int, tuple[Any, str]] = {}   # number in flight -> trial, key
        self._next = 0
        self._size = space_points(space)
        self._scores: dict[str, float] = {}       # params_key -> score (NaN: failed)
        self._waiting: dict[str, list[Any]] = {}  # params_key in flight -> repeats asked

    def _distribution(self, param):
        d = self.optuna.distributions
        if param.kind == "choice":
            return d.CategoricalDistribution(list(param.choices))
        if param.kind == "int":
            return d.IntDistribution(int(param.low), int(param.high), log=param.log,
                                     step=int(param.step or 1))
        return d.FloatDistribution(float(param.low), float(param.high), log=param.log,
                                   step=param.step)

    def add_done(self, number: int, params: dict[str, Any], score: float) -> None:
        """Tell the sampler about trial ``number``, finished in an earlier run."""
        self._next = max(self._next, int(number) + 1)
        if not all(name in params for name in self.distributions):
            return
        if score == score:
            # A recorded failure is not remembered: asked again, it is retried.
            self._scores[params_key({k: params[k] for k in self.distributions})] = score
        state = self.optuna.trial.TrialState
        trial = self.optuna.trial.create_trial(
            params={k: params[k] for k in self.distributions},
            distributions=self.distributions,
            value=score if score == score else None,
            state=state.COMPLETE if score == score else state.FAIL)
        self.study.add_trial(trial)

    def ask(self) -> tuple[int, dict[str, Any]] | None:
        """A point not tried yet: ``(trial number, params)``, numbers following the
        recorded ones; None when the space has no point left or the sampler repeated
        :data:`MAX_REPEATS` points in a row."""
        for _attempt in range(MAX_REPEATS):
            if self._size is not None and \
                    len(self._scores) + len(self._waiting) >= self._size:
                return None
            trial = self.study.ask(self.distributions)
            params = dict(trial.params)
            key = params_key(params)
            if key in self._scores:
                self._tell(trial, self._scores[key])
            elif key in self._waiting:
                self._waiting[key].append(trial)
            else:
                number = self._next
                self._next += 1
                self._open[number] = (trial, key)
                self._waiting[key] = []
                return number, params
        return None

    def tell(self, number: int, score: float) -> None:
        """The score of an asked point (NaN: the trial failed); the sampler's repeats of
        the point while it was in flight get the same score."""
        trial, key = self._open.pop(number)
        self._scores[key] = score
        self._tell(trial, score)
        for trial in self._waiting.pop(key):
            self._tell(trial, score)

    def _tell(self, trial: Any, score: float) -> None:
        if score == score:
            self.study.tell(trial, score)
        else:
            self.study.tell(trial, state=self.optuna.trial.TrialState.FAIL)
