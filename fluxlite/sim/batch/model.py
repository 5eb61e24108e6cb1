"""Performance of a job under resizing: run time and MTCT as functions of its size.

:class:`SpeedupModel` (malleable jobs), per job type, with parameters
``t0`` (run time at the reference size ``n0``), ``sigma`` (the share of
that time spent in communication, MPI) and ``beta`` (how communication
grows with size)::

    compute(n) = t0 * (1 - sigma) * n0 / n          perfectly parallel part
    mpi(n)     = t0 * sigma * (n / n0) ** beta      communication
    time(n)    = compute(n) + mpi(n)                seconds for the whole job
    mtct(n)    = mpi(n) / compute(n)                MPI-time to compute-time ratio

so ``time(n0) == t0``; ``sigma = 0`` is a perfectly malleable job, a large
``sigma`` one that gains little (or loses) from more nodes; the MTCT grows
with size, which is what the performance-aware strategy reads.

:class:`TwoSpeedModel` (evolving jobs): ``t_static`` at the submitted size,
``t_dynamic`` once its dynamic request was granted; the remaining work
runs at the new speed (a granted request shortens the remaining run
linearly).

A rigid job is ``SpeedupModel(t0, n0, sigma=0)`` that never changes size.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ESP_SIGMA", "SpeedupModel", "TwoSpeedModel"]

#: communication share per ESP type for the malleable study (documented choice, not measured)
ESP_SIGMA = {
    "A": 0.02, "B": 0.05, "C": 0.10, "D": 0.08, "E": 0.10, "F": 0.05, "G": 0.06,
    "H": 0.06, "I": 0.02, "J": 0.05, "K": 0.04, "L": 0.06, "M": 0.08, "Z": 0.10,
}  # fmt: skip


@dataclass(frozen=True)
class SpeedupModel:
    t0: float
    n0: int
    sigma: float = 0.0
    beta: float = 0.5

    def compute(self, n: int) -> float:
        return self.t0 * (1.0 - self.sigma) * self.n0 / n

    def mpi(self, n: int) -> float:
        return self.t0 * self.sigma * (n / self.n0) ** self.beta

    def time(self, n: int) -> float:
        return self.compute(n) + self.mpi(n)

    def mtct(self, n: int) -> float:
        c = self.compute(n)
        return self.mpi(n) / c if c > 0 else 0.0


@dataclass(frozen=True)
class TwoSpeedModel:
    t_static: float
    t_dynamic: float
    n0: int

    def time(self, n: int) -> float:
        return self.t_static if n <= self.n0 else self.t_dynamic

    def mtct(self, n: int) -> float:
        return 0.0
