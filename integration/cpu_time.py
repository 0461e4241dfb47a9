"""How much CPU each half of the suite (`tests/`, `integration/`) used, printed at the end of a run.

Wall time on a shared or loaded machine says little about what the suite costs; CPU time
(user + system, of the test process and every program it started and reaped: wrapagent,
the CLIs, git, the demo agents) barely depends on load. It is what bounds the suite on
two cores: the run cannot take less than the CPU time of both halves over the number of
cores, however many processes it is spread over. With pytest-xdist each worker sums its
own tests and sends the sums to the controller, which prints them.

Below the sums it lists the tests that used the most CPU (`TOP` of them): where a
shorter suite has to come from, since the wall time of a run spread over processes is
bounded by the CPU over the cores.

Registered by integration/conftest.py. Not counted: a process nobody reaps (a daemon that
outlives its test is a leftover, killed and reported by the fixtures), and collection.
"""

from __future__ import annotations

import os
import resource
import time
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: How many of the tests that used the most CPU the summary lists (WRAPAGENT_CPU_TOP: more, to see
#: where all of it goes).
TOP = int(os.environ.get("WRAPAGENT_CPU_TOP") or 15)


def cpu_seconds() -> float:
    """User + system CPU of this process and of its children it has reaped so far."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def half_of(item: pytest.Item) -> str:
    """The top folder of a test (`tests`, `integration`), which is the half it belongs to."""
    try:
        return Path(item.path).resolve().relative_to(ROOT).parts[0]
    except ValueError:
        return "other"


class CpuTime:
    """Sums, per half: tests run, CPU seconds and wall seconds (setup + call + teardown)."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = defaultdict(float)
        self.wall: dict[str, float] = defaultdict(float)
        self.count: dict[str, int] = defaultdict(int)
        self.costliest: list[tuple[float, float, str]] = []  # (CPU s, wall s, test id), at most TOP

    def _note(self, cpu: float, wall: float, nodeid: str) -> None:
        """Keep `nodeid` among the TOP tests by CPU seen so far."""
        self.costliest.append((cpu, wall, nodeid))
        self.costliest.sort(reverse=True)
        del self.costliest[TOP:]

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None):
        cpu, wall = cpu_seconds(), time.monotonic()
        yield
        half = half_of(item)
        used, took = cpu_seconds() - cpu, time.monotonic() - wall
        self.cpu[half] += used
        self.wall[half] += took
        self.count[half] += 1
        self._note(used, took, item.nodeid)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:  # an xdist worker: hand the sums to the controller
            workeroutput["cpu_time"] = {h: (self.count[h], self.cpu[h], self.wall[h]) for h in self.count}
            workeroutput["cpu_costliest"] = self.costliest

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error) -> None:
        """xdist controller: add a finished worker's sums."""
        output = getattr(node, "workeroutput", None) or {}
        for half, (count, cpu, wall) in output.get("cpu_time", {}).items():
            self.count[half] += count
            self.cpu[half] += cpu
            self.wall[half] += wall
        for cpu, wall, nodeid in output.get("cpu_costliest", []):
            self._note(cpu, wall, nodeid)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.count or hasattr(terminalreporter.config, "workerinput"):
            return
        terminalreporter.section("CPU time per half (user+sys, the tests and the programs they ran)")
        for half in sorted(self.count):
            terminalreporter.write_line(
                f"{half + '/':14} {self.count[half]:5d} tests  {self.cpu[half]:8.1f} s CPU  "
                f"{self.wall[half]:8.1f} s of test time (summed over processes)"
            )
        terminalreporter.write_line(f"the {len(self.costliest)} tests that used the most CPU (CPU s / wall s):")
        for cpu, wall, nodeid in self.costliest:
            terminalreporter.write_line(f"{cpu:8.1f} {wall:8.1f}  {nodeid}")
