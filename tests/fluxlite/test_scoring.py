"""Edge-group ordering: the port of libstdc++'s std::sort must order ties exactly like the real one."""

from __future__ import annotations

import random
import shutil
import subprocess

import pytest

from fluxlite.match._scoring import Dfu, std_sort

CPP = r"""
#include <algorithm>
#include <iostream>
#include <vector>
struct E { long s; int tag; };
int main () {
    int n, d;
    while (std::cin >> n >> d) {
        std::vector<E> v (n);
        for (int i = 0; i < n; i++) { std::cin >> v[i].s; v[i].tag = i; }
        if (d) std::sort (v.begin (), v.end (), [] (const E &a, const E &b) { return a.s > b.s; });
        else std::sort (v.begin (), v.end (), [] (const E &a, const E &b) { return a.s < b.s; });
        for (auto &e : v) std::cout << e.tag << " ";
        std::cout << "\n";
    }
}
"""


@pytest.fixture(scope="module")
def real_sort(tmp_path_factory: pytest.TempPathFactory) -> str:
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not installed: cannot compare with the real libstdc++ std::sort")
    d = tmp_path_factory.mktemp("stdsort")
    (d / "s.cpp").write_text(CPP)
    subprocess.run([gxx, "-O2", "-o", str(d / "s"), str(d / "s.cpp")], check=True)
    return str(d / "s")


def test_std_sort_matches_libstdcxx_on_ties(real_sort: str) -> None:
    """Random tie-heavy inputs of every size class sort to the same permutation as g++'s std::sort."""
    rng = random.Random(7)
    cases = []
    for _ in range(300):
        n = rng.choice([0, 1, 2, 5, 16, 17, 18, 33, 64, 100, 257, 700])
        k = rng.choice([1, 2, 3, 10, 1000])
        cases.append(([rng.randrange(k) for _ in range(n)], rng.choice([0, 1])))
    inp = "".join(f"{len(a)} {d}\n{' '.join(map(str, a))}\n" for a, d in cases)
    out = subprocess.run(
        [real_sort], input=inp, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    for (a, d), line in zip(cases, out, strict=True):
        v = [(x, i) for i, x in enumerate(a)]
        std_sort(v, (lambda p, q: p[0] > q[0]) if d else (lambda p, q: p[0] < q[0]))
        assert [i for _, i in v] == [int(t) for t in line.split()], (a, d)


def test_choose_best_k_takes_units_not_groups() -> None:
    """Best-k selection covers k units: a 2-unit group counts twice."""
    dfu = Dfu()
    for score, count in [(5, 2), (9, 1), (7, 2)]:
        dfu.add("memory", (score, count, False, False, ((count, count, False, 0),)))
    dfu.choose_accum_best_k("memory", 3, True)
    ev = dfu.evals["memory"]
    assert [eg[0] for eg in ev.egroups[: ev.best_i]] == [9, 7]
    assert dfu.hier_constrain_now


def test_choose_best_k_refuses_more_than_qualified() -> None:
    """Asking for more units than qualify chooses nothing."""
    dfu = Dfu()
    dfu.add("core", (3, 1, False, False, ((1, 1, False, 0),)))
    dfu.choose_accum_best_k("core", 2, True)
    assert dfu.evals["core"].best_k == 0
    assert not dfu.hier_constrain_now
