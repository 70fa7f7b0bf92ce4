"""Mutation testing of the model: how many small bugs planted in a model module the suite notices.

    model/X.py ──mutmut's operators──► mutants (deterministic list; id = module + hash of the diff)
         │                                   │
         │ kill profile (KILL_PROFILES):     │ equivalent ones (properties/mutants-equivalent.toml,
         │ the tests that judge module X     │ triaged by hand with a reason) are not run
         ▼                                   ▼
    baseline: the profile's tests on the unmutated model, under coverage, one context per test
         │    (which tests execute which line of X, how long each takes; a test that fails here
         │    is left out of the profile and named)
         ▼
    each mutant: the profile's tests that execute its lines (at most 30, round-robin over the
    profile's parts), stopping at the first failing assertion (after a crash only the remaining
    cheap tests run: one may still fail on an assertion), within a time limit
    ─► killed (which test) / incompetent (raised on its own lines) / crashed_in_call (raised later
       in the call that ran them, or in a function that call called, before it returned) / crashed
       (which test, which exception, where) / survived (the diff) / timeout
         │
         ▼  with ``judge="quick"``, a second, independent judge of every mutant that ran: the quick check (``flinkspec check --profile quick``) of the check suites
    that execute its lines (found by a baseline of every suite under coverage, one context per
    suite), seeded ─► killed / incompetent / crashed / survived by the properties alone

**Generation.** mutmut's mutation operators (``mutmut.mutation.file_mutation.MutationVisitor``
with ``mutmut.mutation.mutators.mutation_operators``: numbers +1, ``<``/``<=`` and the other
operator swaps, ``and``/``or``, ``True``/``False``, ``is``/``is not``, ``in``/``not in``,
``break``/``return``, an assignment's value to None, an argument dropped or replaced by None, a
string literal changed, a conditional expression's branches swapped, ...), used as a library.
Left out: strings inside a ``raise`` statement (the text of an error is not semantics), and
what mutmut itself never mutates (decorated functions other than ``@staticmethod`` and
``@classmethod``, type annotations, lines marked ``# pragma: no mutate``). Each mutant is the
module's source with one node replaced; its id is ``<module>:<10 hex digits>`` of the SHA-256
of its diff's changed and context lines (not the hunk's line numbers, so an edit elsewhere in
the file keeps the id), with ``~2``, ``~3`` for identical diffs.

**Running.** The parent imports the model and the profile's tests once (pytest
``--collect-only``), then forks one child per mutant (at most ``workers`` at a time): the child
swaps the mutated function's code object in (``properties/mutantrun.py``) and runs its tests with
``pytest -x``. ``time_limit`` bounds every run. A mutant outside any function body (a class attribute, a default argument, a
module constant) runs in a fresh interpreter with an import hook serving its source, against the
whole profile. On Spark (``master``) every mutant runs that way, one task each.

**Kill or crash.** Only a failing assertion kills: a test whose exception is an
``AssertionError`` (an ``assert``, ``pytest.raises`` that did not raise, ``pytest.fail``, a named
invariant violation such as ``properties.machines.ViolationFound``). Any other exception escaping
the model (``TypeError``, ``AttributeError``, ``RecursionError``, ...), a test module that no
longer imports or collects, or a child ended by a signal is ``crashed``, named with the exception
type and the test: the mutant was noticed, but by the Python runtime, not by a statement of what
Flink does. (A suite run inside a test re-raises a crash of the model instead of recording it, so
that ``test_safe_variant_passes`` fails with the crash, not with an assertion on its result.)

**Incompetent.** A crash raised by the mutated code itself -- the innermost traceback frame in
the mutated module's file is in the mutated function, on one of the lines the mutant changed (a
``d.pop(k, None)`` made ``d.pop(k)`` raising ``KeyError`` there, an argument made ``None`` that
the same line adds to) -- is ``incompetent`` (mutation testing's "incompetent" or "run error"
mutant): in the state the test reached, the mutated line could not run at all, so the mutant
produced no behaviour for an assertion to judge. It is reported apart, with its exception and
line, and left out of the scores like an equivalent mutant.

**Crashed in call.** A crash raised before the very invocation of the mutated function that
ran the mutated statement returned -- in that invocation's frame (a ``None`` the mutant put in a
local or an attribute, dereferenced a few lines on) or in a function it called, directly or not
(an argument made ``None`` that the callee dereferences, a table emptied that the callee
indexes): that invocation's frame is on the exception's traceback -- is ``crashed_in_call``,
also outside the scores: between the mutated statement and the exception no test code ran, so
no assertion could judge any state the mutant made. The mutant's code is instrumented to tell
(``properties.mutantrun.instrument``: a local of the call set just before the mutated
statement, on its line). A crash raised after that invocation returned -- in a later call, the
same function called again, a generator resumed, a lambda it made called later -- stays
``crashed``: the mutant ran, the test held the state it made, and its behaviour went unjudged. A run's verdict weighs every test that crashed: one crash
elsewhere makes it ``crashed``. A ``MemoryError`` (the run's memory limit, ``max_memory``) is
always ``crashed``.

**Score.** ``killed / (killed + crashed + survived + timeout)`` per module: crashes and timeouts
count as not killed. ``score_with_crashes`` counts crashes as killed (the suite noticed the
mutant, by a crash), ``score_with_timeouts`` counts timeouts as killed (a run that never ends is
noticed, but could be a slow machine). Equivalent, incompetent and crashed-in-call mutants are
outside all three.

**The quick judge** (``judge="quick"``) scores the same mutants a second time, by the property
suites alone: ``quick`` per module is the same summary (killed, crashed, survived, timeout and
the three scores) judged by the quick check of the covering suites, and every mutant the unit
judge killed but the quick judge did not is listed as ``properties_blind`` (the properties do
not see that bug; only a unit test does; a mutant the quick judge found incompetent is not known
to be either).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import Counter
from pathlib import Path
from typing import Callable, Iterable

import attrs

from model.errors import FlinkspecError, InvalidArgument

ROOT = Path(__file__).resolve().parent.parent
#: triaged equivalent mutants: ``["<module>:<hash>"] reason = "..."``
EQUIVALENTS_FILE = ROOT / "properties" / "mutants-equivalent.toml"
#: the modules ``flinkspec mutate`` tests when none is named
TARGET_MODULES = ("checkpointcoordinator", "checkpointbarrierhandler", "watermarkstatus", "failover",
                  "stateassignment", "keygroups", "sinks")
ID_RE = re.compile(r"^[a-z_][a-z0-9_]*:[0-9a-f]{10}(~[0-9]+)?$")
OUTCOMES = ("killed", "incompetent", "crashed_in_call", "crashed", "survived", "timeout", "equivalent", "not_run")
#: outcomes outside the score: no behaviour of the mutant reached a test (see the module docstring)
UNJUDGED = ("incompetent", "crashed_in_call", "equivalent", "not_run")
#: the judges of a mutant: the module's kill profile (unit tests, focused suites, scenarios,
#: cluster runs), and the quick check of the suites covering the module
JUDGES = ("unit", "quick")
#: exit code of a forked child whose code swap was impossible (the job is run in a fresh interpreter)
SWAP_FAILED = 42
#: the address space a mutant's run may take (``--max-memory-per-mutant``): a mutant that grows a
#: table without end fails with ``MemoryError`` instead of swapping the machine
MAX_MEMORY_PER_MUTANT = 4 * 2**30


# -- the kill profile ------------------------------------------------------------------------------

#: the cluster runs every module's profile includes: every safe variant's seeded random walks
#: (40 runs each) must still pass, judged by every invariant of subject "run"
CLUSTER_RUNS = ("tests/test_engines.py::test_safe_variant_passes",)
#: the data-plane and failure scenarios (hand-written runs of the whole Cluster)
SCENARIOS = ("tests/test_runtime_scenarios.py", "tests/test_failure_scenarios.py")
#: Flink's own unit tests ported to the model (the peer suite, tests/peer/*.json), each case once
PEER_CASES = "tests/test_peer.py::test_ported_case_agrees_with_flink"
#: tests of a profile's files left out: they judge files, replays and error messages of the
#: focused suites (slow, and no semantics the suites themselves do not judge)
EXCLUDED = ("writes_a_file", "malformed", "reproducible_from_their_seed", "no_longer_reproduces")


@attrs.frozen
class KillProfile:
    """The tests that judge a module's mutants: pytest arguments (files or node ids)."""

    tests: tuple[str, ...]
    exclude: tuple[str, ...] = EXCLUDED


#: per model module, its kill profile: its unit tests, the focused suites and property tests of
#: its mechanism, the scenarios and the cluster runs
KILL_PROFILES: dict[str, KillProfile] = {
    "checkpointcoordinator": KillProfile(("tests/test_checkpointcoordinator.py", "tests/test_checkpointcoordinator_effects.py",
                                          "tests/test_focused_machines.py",
                                          "tests/test_timing_properties.py", *SCENARIOS, *CLUSTER_RUNS)),
    "checkpointbarrierhandler": KillProfile(("tests/test_checkpointbarrierhandler.py", "tests/test_focused_machines.py",
                                             "tests/test_snapshot_order.py",
                                             "tests/test_timing_properties.py", *SCENARIOS, *CLUSTER_RUNS)),
    # the valve's fields and output call by call (tests/test_watermarkstatus_state.py), then its unit tests
    "watermarkstatus": KillProfile(("tests/test_watermarkstatus_state.py", "tests/test_watermarkstatus.py",
                                    "tests/test_eventtime.py", *SCENARIOS,
                                    *CLUSTER_RUNS)),
    # the strategies' tables call by call (tests/test_failover_state.py), then their unit tests
    "failover": KillProfile(("tests/test_failover_state.py", "tests/test_failover.py",
                             "tests/test_restart_strategies.py", *SCENARIOS,
                             *CLUSTER_RUNS)),
    # each function's whole answer written out (tests/test_stateassignment_state.py), then its unit tests
    "stateassignment": KillProfile(("tests/test_stateassignment_state.py", "tests/test_stateassignment.py",
                                    "tests/test_focused_machines.py",
                                    "tests/test_rescale_source.py",
                                    "tests/test_channelstaterescaling.py", *SCENARIOS, *CLUSTER_RUNS)),
    "keygroups": KillProfile(("tests/test_keygroups.py", "tests/test_z3_keygroups.py",
                              "tests/test_channelstaterescaling.py", *SCENARIOS, *CLUSTER_RUNS)),
    # the sinks and the external system call by call (tests/test_sinks_state.py), then their scenarios
    "sinks": KillProfile(("tests/test_sinks_state.py", "tests/test_sinks.py", *SCENARIOS, *CLUSTER_RUNS)),
    # the ResourceManager alone (tests/test_resourcemanager.py), then driven through the control plane
    "resourcemanager": KillProfile(("tests/test_resourcemanager.py", "tests/test_controlplane.py",
                                    "tests/test_controlplane_slots.py", *SCENARIOS, *CLUSTER_RUNS)),
    "taskexecutor": KillProfile(("tests/test_taskexecutor.py", "tests/test_controlplane.py",
                                 "tests/test_controlplane_slots.py", *SCENARIOS, *CLUSTER_RUNS)),
    "jobmaster": KillProfile(("tests/test_jobmaster.py", "tests/test_controlplane.py",
                              "tests/test_controlplane_slots.py", *SCENARIOS, *CLUSTER_RUNS)),
    # the control plane call by call (tests/test_controlplane_state.py), then its hand-driven
    # scenarios, the slot requests through it, and the cluster runs (the cp-* variants among them)
    "controlplane": KillProfile(("tests/test_controlplane_state.py", "tests/test_controlplane.py",
                                 "tests/test_controlplane_slots.py", *SCENARIOS, *CLUSTER_RUNS)),
    # the backends call by call (tests/test_statebackend_state.py), alone and in hand-written
    # cluster runs (tests/test_statebackend.py), then the
    # scenarios and the safe variants' runs (the rocksdb and hashmap variants among them)
    "statebackend": KillProfile(("tests/test_statebackend_state.py", "tests/test_statebackend.py", *SCENARIOS,
                                 *CLUSTER_RUNS)),
    # the storage alone (tests/test_checkpointstorage.py), the backends that write into it, the
    # registry, and the peer suite's ported CheckpointCoordinatorTest cases of discarded state
    "checkpointstorage": KillProfile(("tests/test_checkpointstorage.py", "tests/test_statebackend.py",
                                      "tests/test_sharedstateregistry.py", PEER_CASES,
                                      *SCENARIOS, *CLUSTER_RUNS)),
    # Flink's own test cases ported (the peer suite: StateAssignmentOperationTest's channel state,
    # WindowOperatorTest and the window assigners' tests) beside the module's unit tests
    "channelstaterescaling": KillProfile(("tests/test_channelstaterescaling.py", PEER_CASES,
                                          "tests/test_rescale_source.py", *SCENARIOS, *CLUSTER_RUNS)),
    "windowing": KillProfile(("tests/test_windowing_state.py", "tests/test_windowing.py", PEER_CASES, "tests/test_event_time_judge.py",
                              "tests/test_focused_machines.py", *SCENARIOS, *CLUSTER_RUNS)),
    "creditbasedflowcontrol": KillProfile(("tests/test_creditbasedflowcontrol.py", PEER_CASES, *SCENARIOS,
                                           *CLUSTER_RUNS)),
    # the manager call by call (tests/test_checkpointfailuremanager_state.py) and alone, then the
    # real declined-checkpoint trace validated against the model under two thresholds
    "checkpointfailuremanager": KillProfile((
        "tests/test_checkpointfailuremanager_state.py", "tests/test_checkpointfailuremanager.py",
        "tests/test_trace_validation.py::test_a_declined_checkpoint_is_compared_with_its_task_and_its_global_failover",
        "tests/test_trace_validation.py::test_validation_fails_on_a_global_failover_the_threshold_tolerates",
        *SCENARIOS, *CLUSTER_RUNS)),
    # the graph, the list state, the restored state and the in-flight data call by call
    # (tests/test_rescaling_state.py), a resubmitted job's graph in a real trace, the searches
    # that rescale a source, then the savepoint and rescale scenarios (among the scenarios)
    "rescaling": KillProfile((
        "tests/test_rescaling_state.py", "tests/test_rescale_source.py",
        "tests/test_trace_validation.py::test_a_resubmitted_job_gets_flinks_default_partitioner_for_its_new_parallelisms",
        *SCENARIOS, *CLUSTER_RUNS)),
    # every field of small ExecutionGraphs (tests/test_executiongraph_state.py), the wiring, the
    # chaining and the slot sharing built on it, then the scenarios and the cluster runs
    "executiongraph": KillProfile(("tests/test_executiongraph_state.py", "tests/test_executiongraph_wiring.py",
                                   "tests/test_chaining.py", "tests/test_slotsharing.py", *SCENARIOS,
                                   *CLUSTER_RUNS)),
    # every field of each allocation call by call (tests/test_slotsharing_state.py), the strategy,
    # the z3 bound of the slots, the control plane's slot requests, then the cluster runs
    "slotsharing": KillProfile(("tests/test_slotsharing_state.py", "tests/test_slotsharing.py",
                                "tests/test_z3_slots.py", "tests/test_controlplane_slots.py", *SCENARIOS,
                                *CLUSTER_RUNS)),
    # the small modules: each one's calls and values alone first (the tests named after it), then
    # the scenarios where the data plane runs it (not the cluster runs: their baseline alone takes
    # minutes, and the unit tests state each call's whole result)
    # the stream elements alone, the forced-aligned barriers, then the scenarios that carry them
    "events": KillProfile(("tests/test_events.py", "tests/test_forced_aligned.py", *SCENARIOS)),
    # a run's history: new, copied, deep-copied
    "history": KillProfile(("tests/test_history.py", *SCENARIOS)),
    # the error texts (shortened, one line) and the bad-input cases
    "errors": KillProfile(("tests/test_errors.py", *SCENARIOS)),
    # the scope's checks and migration helpers, then how a scenario splits its settings
    "scope": KillProfile(("tests/test_scope_state.py", "tests/test_scope.py", *SCENARIOS)),
    # the Dispatcher and its runners call by call, then the session and application clusters
    "dispatcher": KillProfile(("tests/test_dispatcher_state.py", "tests/test_dispatcher.py")),
    # the coarse channels call by call, then the scenarios that fill them
    "channels": KillProfile(("tests/test_channels.py", *SCENARIOS)),
    # the reference's graph, output and comparison, then the scenarios judged against it
    "reference": KillProfile(("tests/test_reference.py", *SCENARIOS)),
    # the messages and networks call by call, then the control plane driven one call at a time
    "rpc": KillProfile(("tests/test_rpc.py", "tests/test_controlplane_state.py")),
    # the named functions, then the scenarios whose maps and filters run them
    "functions": KillProfile(("tests/test_functions.py", *SCENARIOS)),
    # the ActiveResourceManager call by call, then the application clusters that use it
    "activeresourcemanager": KillProfile(("tests/test_activeresourcemanager_state.py",
                                          "tests/test_activeresourcemanager.py")),
    # long arithmetic, the generator and the output call by call, then the sources of the scenarios
    "eventtime": KillProfile(("tests/test_eventtime_state.py", "tests/test_eventtime.py", *SCENARIOS)),
    # every field's rule, then where a scenario's settings go
    "environment": KillProfile(("tests/test_environment_state.py", "tests/test_environment.py", *SCENARIOS)),
    # the kinds, entries and registry alone, then the registered catalog
    "catalog": KillProfile(("tests/test_catalog_state.py", "tests/test_catalog.py")),
    # the registry and the override call by call (tests/test_seams*.py), the user's designs
    # that register seams, then the scenarios whose steps run within the active seams
    "seams": KillProfile(("tests/test_seams_state.py", "tests/test_seams.py", "tests/test_design.py", *SCENARIOS)),
    # each diff's whole result call by call (tests/test_oracle_state.py), the differential
    # tests, the sinks judged by it, then the scenarios judged against the reference
    "oracle": KillProfile(("tests/test_oracle_state.py", "tests/test_oracle_diff.py", "tests/test_sinks.py",
                           *SCENARIOS)),
    # the Python walk against copy.deepcopy and the C walk (tests/test_statecopy_state.py,
    # tests/test_native_walk.py), then the copies the explorer makes
    "statecopy": KillProfile(("tests/test_statecopy_state.py", "tests/test_native_walk.py",
                              "tests/test_explore_speed.py")),
    # every field of small JobGraphs (tests/test_jobgraph_state.py), the structure and chaining
    # built on them, the ExecutionGraph and failover regions, then the scenarios
    "jobgraph": KillProfile(("tests/test_jobgraph_state.py", "tests/test_structure.py", "tests/test_chaining.py",
                             "tests/test_executiongraph_state.py", "tests/test_failover_state.py",
                             "tests/test_forced_aligned.py", *SCENARIOS)),
    # each reader's exact value or message at every bound (tests/test_inputfiles.py), then the
    # bad input of every command that reads a file
    "inputfiles": KillProfile(("tests/test_inputfiles.py", "tests/test_bad_input.py")),
    # each table's whole value and each rule's message call by call (tests/test_jobfile.py), then
    # check --job and compile reading the example jobs
    "jobfile": KillProfile(("tests/test_jobfile.py", "tests/test_check_job.py", "tests/test_compile_cli.py")),
    # the slot tables, the SlotManager and the entrypoint's whole state call by call
    # (tests/test_clusterentrypoint_state.py), then the session and application clusters' runs
    "clusterentrypoint": KillProfile(("tests/test_clusterentrypoint_names.py", "tests/test_clusterentrypoint_state.py",
                                      "tests/test_clusterentrypoint.py", "tests/test_activeresourcemanager.py")),
    # every rule's exact message, the look-ups, the builder and the dict form call by call
    # (tests/test_streamgraph_state.py), then the graphs generated at random and the chaining
    "streamgraph": KillProfile(("tests/test_streamgraph_state.py", "tests/test_streamgraph.py",
                                "tests/test_chaining.py")),
}


def kill_profile(module: str) -> KillProfile:
    """The module's profile; a module without one: its unit tests (``tests/test_<module>.py``
    when present), the scenarios and the cluster runs."""
    if module in KILL_PROFILES:
        return KILL_PROFILES[module]
    own = f"tests/test_{module}.py"
    return KillProfile(((own,) if (ROOT / own).is_file() else ()) + SCENARIOS + CLUSTER_RUNS)


# -- mutants ---------------------------------------------------------------------------------------


@attrs.frozen
class Mutant:
    """One mutant of one model module: the source with one node replaced."""

    id: str
    module: str  # "keygroups"
    index: int  # 1-based position in the module's deterministic list
    operator: str  # mutmut's operator function
    line: int  # first and last line of the replaced node
    end_line: int
    stmt_line: int  # first line of the statement holding it (coverage counts statements)
    function: str | None  # "func" or "Class.method" when the node is in that function's body
    start: int  # character offsets of the replaced text in the source
    end: int
    replacement: str
    diff: str

    def source(self, original: str) -> str:
        return original[:self.start] + self.replacement + original[self.end:]

    @property
    def swappable(self) -> bool:
        """The mutant can be put in place by swapping one function's code object."""
        return self.function is not None

    @property
    def lines(self) -> range:
        return range(self.stmt_line, self.end_line + 1)

    @property
    def span(self) -> tuple[int, int]:
        """Character offsets of the replacement in the mutated source."""
        return self.start, self.start + len(self.replacement)

    def changed_lines(self, mutated_source: str) -> range:
        """The lines the mutant changed, numbered as in its own (mutated) source: from its
        statement's first line to the replacement's last."""
        last = mutated_source[:self.start + len(self.replacement)].count("\n") + 1
        return range(self.stmt_line, max(last, self.line) + 1)

    def raised_itself(self, mutated_source: str, at: dict | None) -> bool:
        """A crash raised at ``at`` (``{"line", "function"}``: the innermost traceback frame in
        the mutated module's file) was raised by the mutated code itself: on a changed line, in
        the mutated function (or a lambda or generator expression inside it)."""
        if not at or at.get("line") not in self.changed_lines(mutated_source):
            return False
        if self.function is None:
            return True
        return self.in_function(at)

    def in_function(self, at: dict | None) -> bool:
        """``at`` (a ``raised_at``) is in the mutated function or a lambda or comprehension inside it."""
        fn = (at or {}).get("function") or ""
        return self.function is not None and (fn == self.function or fn.startswith(self.function + ".<locals>."))

    def crash_kind(self, mutated_source: str, at: dict | None) -> str | None:
        """Why a crash raised at ``at`` is not judged, or None (a crash): ``"own line"`` when the
        mutated code itself raised (:meth:`raised_itself`); ``"same call"`` when it was raised
        in the invocation of the mutated function that executed a changed line (``at["same_call"]``,
        recorded by the run's instrumented code: ``properties.mutantrun.instrument``), before that
        invocation returned; ``"in callee"`` when it was raised in a function that invocation
        called (directly or not), before it returned (``at["in_call"]``): the invocation passed
        the mutant's value down (an argument made None, a table emptied) and its callee tripped
        over it, with no test code run in between either."""
        if self.raised_itself(mutated_source, at):
            return "own line"
        if at is not None and at.get("same_call") and self.in_function(at):
            return "same call"
        if at is not None and at.get("in_call"):
            return "in callee"
        return None


def module_path(module: str) -> Path:
    return ROOT / "model" / f"{module}.py"


def parse_module_arg(text: str) -> str:
    """``model/X.py`` (or ``X``, ``model.X``) -> ``X``; InvalidArgument when there is no such model module."""
    name = text.strip()
    if name.endswith(".py"):
        name = name[:-3]
    name = name.replace("\\", "/")
    for prefix in ("./", "model/", "model."):
        if name.startswith(prefix):
            name = name[len(prefix):]
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", name) or name == "__init__" or not module_path(name).is_file():
        known = ", ".join(sorted(p.stem for p in (ROOT / "model").glob("*.py") if p.stem != "__init__"))
        raise InvalidArgument(f"--module {text!r}: no such model module (one of model/{{{known}}}.py)")
    return name


_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(?:i?B)?\s*$", re.IGNORECASE)


def parse_size(text: str, flag: str = "--max-memory-per-mutant") -> int | None:
    """``4G``, ``512MiB``, ``3.5g``, ``1073741824`` (bytes; K, M, G, T are powers of 1024) ->
    bytes; ``none`` -> None (no bound). InvalidArgument on anything else or below 64 MiB (a
    Python process with pytest and the model loaded needs about that much)."""
    if text.strip().lower() == "none":
        return None
    m = _SIZE_RE.match(text)
    if not m:
        raise InvalidArgument(f"{flag} {text!r}: not a size (a number of bytes, or with K, M, G or T: 4G, 512M; "
                              "or none)")
    size = int(float(m.group(1)) * 1024 ** "_KMGT".index((m.group(2) or "_").upper()))
    if size < 64 * 2**20:
        raise InvalidArgument(f"{flag} {text!r}: below 64M, too little for a Python process running pytest")
    return size


def _diff_body(diff: str) -> str:
    return "\n".join(l for l in diff.splitlines() if not l.startswith(("---", "+++", "@@")))


def make_id(module: str, diff: str) -> str:
    return f"{module}:{hashlib.sha256(_diff_body(diff).encode()).hexdigest()[:10]}"


def _line_offsets(text: str) -> list[int]:
    offsets, pos = [0], 0
    for line in text.splitlines(keepends=True):
        pos += len(line)
        offsets.append(pos)
    return offsets


def _qualnames(module_node) -> dict[int, str]:
    """id(FunctionDef node) -> qualified name, for module-level functions and methods of
    module-level classes (the functions mutmut assigns mutants to)."""
    import libcst as cst  # lazy: libcst only when mutants are generated

    names: dict[int, str] = {}
    for stmt in module_node.body:
        if isinstance(stmt, cst.FunctionDef):
            names[id(stmt)] = stmt.name.value
        elif isinstance(stmt, cst.ClassDef) and isinstance(stmt.body, cst.IndentedBlock):
            for member in stmt.body.body:
                if isinstance(member, cst.FunctionDef):
                    names[id(member)] = f"{stmt.name.value}.{member.name.value}"
    return names


def generate(module: str) -> list[Mutant]:
    """Every mutant of ``model/<module>.py``, in mutmut's visiting order (deterministic)."""
    import libcst as cst  # lazy: libcst and mutmut only when mutants are generated (~0.5 s to import)
    from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider  # lazy: as above
    from libcst.metadata import WhitespaceInclusivePositionProvider as WSPos  # lazy: as above
    from mutmut.mutation.file_mutation import MutationVisitor  # lazy: as above
    from mutmut.mutation.mutators import mutation_operators  # lazy: as above
    from mutmut.mutation.pragma_handling import IgnoredCode, PragmaVisitor  # lazy: as above

    path = module_path(module)
    code = path.read_text()
    wrapper = MetadataWrapper(cst.parse_module(code))
    pragmas = PragmaVisitor(str(path))
    wrapper.visit(pragmas)
    ignored = IgnoredCode(no_mutate_lines=pragmas.no_mutate_lines, ignore_node_lines=pragmas.ignore_node_lines,
                          ignore_pattern_lines=set())
    found = []  # (operator name, original node, mutated node, function node)
    for node_type, op in mutation_operators:
        visitor = MutationVisitor([(node_type, op)], ignored)
        wrapper.visit(visitor)
        found.extend((op.__name__, m.original_node, m.mutated_node, m.contained_by_top_level_function)
                     for m in visitor.mutations)
    positions, ws_positions = wrapper.resolve(PositionProvider), wrapper.resolve(WSPos)
    parents = wrapper.resolve(ParentNodeProvider)
    qualnames = _qualnames(wrapper.module)
    offsets = _line_offsets(code)
    lines = code.splitlines(keepends=True)
    order = sorted(range(len(found)), key=lambda i: (positions[found[i][1]].start.line,
                                                     positions[found[i][1]].start.column, i))
    mutants, seen = [], Counter()
    for i in order:
        opname, orig, mutated, func = found[i]
        ancestors, p = [], orig
        while p in parents:
            p = parents[p]
            ancestors.append(p)
        if any(isinstance(a, cst.Raise) for a in ancestors):
            continue
        if opname == "operator_string" and not any(isinstance(a, cst.Comparison) for a in ancestors):
            continue
        stmt = next((a for a in ancestors if isinstance(a, (cst.BaseSmallStatement, cst.BaseCompoundStatement))),
                    None)
        in_params = any(isinstance(a, (cst.Parameters, cst.Decorator)) for a in ancestors)
        ws = ws_positions[orig]
        start = offsets[ws.start.line - 1] + ws.start.column
        end = offsets[ws.end.line - 1] + ws.end.column
        replacement = wrapper.module.code_for_node(mutated)
        new_code = code[:start] + replacement + code[end:]
        if new_code == code:
            continue
        diff = "".join(difflib.unified_diff(lines, new_code.splitlines(keepends=True), f"a/model/{module}.py",
                                            f"b/model/{module}.py", n=2))
        mid = make_id(module, diff)
        seen[mid] += 1
        if seen[mid] > 1:
            mid = f"{mid}~{seen[mid]}"
        pos = positions[orig]
        stmt_line = positions[stmt].start.line if stmt is not None else pos.start.line
        mutants.append(Mutant(
            id=mid, module=module, index=len(mutants) + 1, operator=opname, line=pos.start.line,
            end_line=pos.end.line, stmt_line=min(stmt_line, pos.start.line),
            function=None if func is None or in_params else qualnames.get(id(func)),
            start=start, end=end, replacement=replacement, diff=diff))
    return mutants


# -- equivalent mutants ---------------------------------------------------------------------------


def load_equivalents(path: Path | str = EQUIVALENTS_FILE) -> dict[str, str]:
    """``{mutant id: reason}`` from the triage file; a malformed file is a one-line error."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text()) if p.exists() else {}
    except tomllib.TOMLDecodeError as e:
        raise InvalidArgument(f"{p}: not TOML ({e})") from None
    out = {}
    for key, entry in data.items():
        if not ID_RE.match(key):
            raise InvalidArgument(f"{p}: [{key!r}]: not a mutant id (<module>:<10 hex digits>)")
        if not isinstance(entry, dict) or not isinstance(entry.get("reason"), str) or not entry["reason"].strip():
            raise InvalidArgument(f"{p}: [{key!r}]: needs reason = \"why no test can tell it from the model\"")
        out[key] = entry["reason"].strip()
    return out


# -- running ---------------------------------------------------------------------------------------


#: a test that took at most this long on the unmutated model is always selected for a mutant
#: whose lines it executes, beside the ``TESTS_PER_MUTANT`` others
CHEAP_TEST_S = 0.1


@attrs.frozen
class Baseline:
    """The profile's tests on the unmutated model: which execute which line, how long each took."""

    tests: tuple[str, ...]  # node ids, in profile order, passing ones only
    seconds: dict  # node id -> seconds
    lines: dict  # line -> tuple of node ids
    failing: tuple[str, ...]  # tests that fail without any mutant (left out)
    parts: dict = attrs.field(factory=dict)  # node id -> index of the profile entry it belongs to

    def tests_for(self, mutant: Mutant, limit: int = 0) -> list[str]:
        """The tests that execute the mutant's lines (every test for a mutant outside a function
        body: its lines run at import), taken round-robin over the profile's parts (unit tests,
        focused suites, scenarios, cluster runs), each part in its own order: every cheap one
        (at most ``CHEAP_TEST_S`` on the unmutated model) first, part after part, then at most
        ``limit`` others (0: all, in round-robin order). Deterministic: the same tests for the same coverage."""
        if not mutant.swappable:
            chosen = set(self.tests)
        else:
            chosen = {t for line in mutant.lines for t in self.lines.get(line, ())}
        groups: dict[int, list[str]] = {}
        for t in self.tests:
            if t in chosen:
                groups.setdefault(self.parts.get(t, 0), []).append(t)
        order = [g[i] for i in range(max((len(g) for g in groups.values()), default=0))
                 for _, g in sorted(groups.items()) if i < len(g)]
        if not limit:
            return order
        # the cheap tests (unit tests, mostly) cost nearly nothing: all of them, first, in the
        # profile's order (the module's own unit tests before a cheap scenario that, under a
        # mutant, may grow without end); the limit bounds the others
        cheap = sorted((t for t in order if self.seconds.get(t, 0.0) <= CHEAP_TEST_S),
                       key=lambda t: self.parts.get(t, 0))
        return cheap + [t for t in order if self.seconds.get(t, 0.0) > CHEAP_TEST_S][:limit]

    def seconds_for(self, tests: Iterable[str]) -> float:
        return sum(self.seconds.get(t, 0.0) for t in tests)


@attrs.frozen
class Result:
    mutant: Mutant
    outcome: str  # one of OUTCOMES
    seconds: float = 0.0
    killed_by: str | None = None
    tests: int = 0  # tests selected
    reason: str | None = None  # equivalent: the triage reason; survived: "no test executes it" etc.
    exception: str | None = None  # crashed: the exception's type (or "collection error", "signal N")
    raised_at: dict | None = None  # crashed, incompetent: line, function and message of the raise
    quick: "Result | None" = None  # the quick judge's verdict on the same mutant

    @property
    def properties_blind(self) -> bool:
        """The unit judge killed it, the quick check of the covering suites did not (a mutant the
        quick judge did not run, its budget spent, is not known to be either)."""
        return self.outcome == "killed" and self.quick is not None and self.quick.outcome not in (
            "killed", "not_run", "incompetent", "crashed_in_call")

    def to_json(self, *, with_diff: bool) -> dict:
        m = self.mutant
        d = {"id": m.id, "module": m.module, "index": m.index, "operator": m.operator, "line": m.line,
             "function": m.function, "outcome": self.outcome, "seconds": round(self.seconds, 2),
             "tests": self.tests}
        if self.killed_by:
            d["killed_by"] = self.killed_by
        if self.exception:
            d["exception"] = self.exception
        if self.reason:
            d["reason"] = self.reason
        if self.raised_at:
            d["raised_at"] = self.raised_at
        if self.quick is not None:
            q = {"outcome": self.quick.outcome, "seconds": round(self.quick.seconds, 2), "suites": self.quick.tests}
            for k in ("killed_by", "exception", "reason", "raised_at"):
                if getattr(self.quick, k):
                    q[k] = getattr(self.quick, k)
            d["quick"] = q
            d["properties_blind"] = self.properties_blind
        if with_diff or self.outcome in ("survived", "timeout"):
            d["diff"] = m.diff
        return d


def _quiet_fds() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)


class _Deselect:
    """pytest plugin: leave out the items whose node id contains one of ``patterns``."""

    def __init__(self, patterns):
        self.patterns = tuple(patterns)

    def pytest_collection_modifyitems(self, config, items):
        keep = [it for it in items if not any(p in it.nodeid for p in self.patterns)]
        dropped = [it for it in items if it not in keep]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = keep


def warm_up(profiles: Iterable[KillProfile]) -> None:
    """Import the model, the spec and every profile's test modules in this process (pytest
    ``--collect-only``), so forked children start warm. Output is discarded."""
    import pytest  # lazy: pytest is needed only by mutation runs

    args = sorted({t for p in profiles for t in p.tests})
    saved, cwd = (os.dup(1), os.dup(2)), os.getcwd()
    try:
        os.chdir(ROOT)  # the profiles name tests relative to the repository (node ids too)
        _quiet_fds()
        rc = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *args])
    finally:
        os.chdir(cwd)
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
    if rc not in (0,):
        raise FlinkspecError(f"the kill profile's tests do not collect (pytest exit {rc}): "
                             f"run `pytest --collect-only {' '.join(args)}`")


def _baseline_child(module: str, profile: KillProfile, out: str) -> None:
    """In a forked child: run the profile under coverage, one context per test; write the
    Baseline as JSON to ``out``."""
    import coverage  # lazy: only the baseline child measures coverage
    import pytest  # lazy: as above

    path = str(module_path(module))
    cov = coverage.Coverage(data_file=None, include=[path], config_file=False)
    tests, seconds, failing = [], {}, []

    class Contexts:
        def pytest_runtest_setup(self, item):
            cov.switch_context(item.nodeid)

        def pytest_runtest_logreport(self, report):
            if report.when == "call":
                tests.append(report.nodeid)
                seconds[report.nodeid] = report.duration
            if report.failed and report.nodeid not in failing:
                failing.append(report.nodeid)

    _quiet_fds()
    cov.start()
    pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-o", "addopts=", *profile.tests],
                plugins=[Contexts(), _Deselect(profile.exclude)])
    cov.stop()
    data = cov.get_data()
    lines = {}
    for line, ctxs in data.contexts_by_lineno(path).items():
        named = [c for c in ctxs if c]
        if named:
            lines[line] = named
    with open(out, "w") as f:
        json.dump({"tests": [t for t in tests if t not in failing], "seconds": seconds, "lines": lines,
                   "failing": failing}, f)


def _fork(target: Callable[[], int]) -> int:
    """Fork; the child runs ``target`` in its own process group and exits with its code."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 3
        try:
            os.setpgid(0, 0)
            os.chdir(ROOT)
            code = target()
        except BaseException:  # noqa: BLE001 - whatever the mutant raised, the child must exit
            code = 3
        finally:
            os._exit(code if isinstance(code, int) else 3)
    return pid


def _forked_json(child: Callable[[str], object], failure: str) -> dict:
    """What ``child(out)``, run in a forked child of the warm process, wrote to the JSON file
    ``out``; ``failure`` names the run in the error raised when it wrote nothing."""
    with tempfile.TemporaryDirectory(prefix="flinkspec-mutate-") as d:
        out = os.path.join(d, "baseline.json")
        pid = _fork(lambda: child(out) or 0)
        try:
            _, status = os.waitpid(pid, 0)
        except BaseException:  # interrupted: the child (its own process group) goes too
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise
        if not os.path.exists(out):
            raise FlinkspecError(f"{failure} failed (status {status})")
        return json.loads(Path(out).read_text())


def run_baseline(module: str, profile: KillProfile) -> Baseline:
    """The unmutated profile (in a forked child of the warm process)."""
    data = _forked_json(lambda out: _baseline_child(module, profile, out),
                        f"model/{module}.py: the kill profile's baseline run")
    tests = tuple(data["tests"])
    if not tests:
        raise FlinkspecError(f"model/{module}.py: the kill profile has no passing test")
    return Baseline(tests=tests, seconds=data["seconds"], failing=tuple(data["failing"]),
                    lines={int(k): tuple(v) for k, v in data["lines"].items()},
                    parts={t: part_of(t, profile) for t in tests})


def check_suite_names() -> list[str]:
    """The suites ``flinkspec check`` runs, in catalog order (the one registry of them)."""
    from properties.catalog import check_suites  # lazy: registers every variant and focused suite

    return [e.name for e in check_suites()]


def _quick_baseline_child(module: str, runs: int | None, seed: int, out: str) -> None:
    """In a forked child: every check suite's quick check on the unmutated model under
    coverage of the module, one context per suite; write which suite executes which line, how
    long each took, and the suites not as expected without a mutant."""
    import coverage  # lazy: only the baseline child measures coverage

    from properties.mutantrun import run_suites  # lazy: the runner half

    path = str(module_path(module))
    cov = coverage.Coverage(data_file=None, include=[path], config_file=False)
    names, seconds, failing = check_suite_names(), {}, []
    _quiet_fds()
    cov.start()
    with tempfile.TemporaryDirectory(prefix="flinkspec-mutate-") as d:
        for name in names:
            cov.switch_context(name)
            t0 = time.perf_counter()
            if run_suites([name], os.path.join(d, "r.json"), runs=runs, base_seed=seed) != 0:
                failing.append(name)
            seconds[name] = time.perf_counter() - t0
    cov.stop()
    data = cov.get_data()
    lines = {}
    for line, ctxs in data.contexts_by_lineno(path).items():
        named = [c for c in ctxs if c and c not in failing]
        if named:
            lines[line] = named
    covering = sorted({c for cs in lines.values() for c in cs}, key=names.index)
    with open(out, "w") as f:
        json.dump({"tests": covering, "seconds": seconds, "lines": lines, "failing": failing}, f)


def run_quick_baseline(module: str, runs: int | None, seed: int) -> Baseline:
    """The quick judge's baseline: the check suites that execute the module's lines (and how
    long each takes), measured on the unmutated model in a forked child."""
    data = _forked_json(lambda out: _quick_baseline_child(module, runs, seed, out),
                        f"model/{module}.py: the quick judge's baseline run")
    return Baseline(tests=tuple(data["tests"]), seconds=data["seconds"], failing=tuple(data["failing"]),
                    lines={int(k): tuple(v) for k, v in data["lines"].items()})


def part_of(nodeid: str, profile: KillProfile) -> int:
    """Index of the profile entry (a file or a node-id prefix) a test was collected from."""
    for i, entry in enumerate(profile.tests):
        if nodeid == entry or nodeid.startswith((entry + "::", entry + "[")):
            return i
    return len(profile.tests)


@attrs.frozen
class Job:
    """One mutant to run: its source, its tests, its time limit."""

    mutant: Mutant
    source: str
    tests: tuple[str, ...]
    limit: float
    fresh: bool = False  # in a fresh interpreter (else: a forked child swapping the code in)
    suites: bool = False  # the quick judge: ``tests`` are check suites, run with ``runs``/``seed``
    runs: int | None = None
    seed: int = 0
    cheap: tuple[str, ...] = ()  # the cheap ones among ``tests``: after a crash they still run
    max_memory: int | None = MAX_MEMORY_PER_MUTANT  # bytes of address space (RLIMIT_AS); None: unbounded


def time_limit(baseline_seconds: float, override: float | None) -> float:
    """The per-mutant time limit: ``override``, else 4 x the tests' unmutated time + 10 s (the
    machine is shared: timings are noisy)."""
    return override if override is not None else 4.0 * baseline_seconds + 10.0


def _subprocess_spec(job: Job, result_path: str) -> dict:
    spec = {"root": str(ROOT), "module": f"model.{job.mutant.module}",
            "path": str(module_path(job.mutant.module)), "source": job.source, "tests": list(job.tests),
            "result": result_path, "cheap": list(job.cheap), "max_memory": job.max_memory,
            "function": job.mutant.function, "span": list(job.mutant.span)}
    if job.suites:
        spec.update(suites=list(job.tests), runs=job.runs, seed=job.seed)
    return spec


class _Running:
    def __init__(self, job: Job, result_path: str, pid: int | None = None, popen=None):
        self.job, self.result_path, self.pid, self.popen = job, result_path, pid, popen
        self.t0 = time.monotonic()

    def poll(self) -> int | None:
        """Exit status when done (a negative number: killed by that signal), else None."""
        if self.popen is not None:
            return self.popen.poll()
        pid, status = os.waitpid(self.pid, os.WNOHANG)
        if pid == 0:
            return None
        return os.waitstatus_to_exitcode(status)

    def kill(self) -> None:
        pid = self.popen.pid if self.popen is not None else self.pid
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self.popen is not None:
            self.popen.wait()
        else:
            os.waitpid(self.pid, 0)


def _start(job: Job, tmp: str) -> _Running:
    """Start a mutant: a forked child swapping the code in, or a fresh interpreter."""
    from properties import mutantrun  # lazy: the runner half, imported in the warm parent only when running

    result_path = os.path.join(tmp, job.mutant.id.replace(":", "_").replace("~", "_") + ".json")
    if job.mutant.swappable and not job.fresh:
        def child() -> int:
            path = str(module_path(job.mutant.module))
            try:
                code = mutantrun.instrument(job.source, path, job.mutant.function, job.mutant.span)
                mutantrun.swap_code(f"model.{job.mutant.module}", job.mutant.function, job.source, code)
            except (ValueError, KeyError, AttributeError):
                return SWAP_FAILED
            mutantrun._INSTRUMENTED = True
            mutantrun.limit_memory(job.max_memory)
            try:
                if job.suites:
                    _quiet_fds()
                    return mutantrun.run_suites(list(job.tests), result_path, runs=job.runs, base_seed=job.seed,
                                                module_file=path)
                return mutantrun.run_tests(list(job.tests), result_path, module_file=path, cheap=job.cheap)
            except MemoryError:  # the run itself out of memory (the limit), not only a test
                return mutantrun.OUT_OF_MEMORY

        return _Running(job, result_path, pid=_fork(child))
    spec_path = result_path + ".spec"
    Path(spec_path).write_text(json.dumps(_subprocess_spec(job, result_path)))
    popen = subprocess.Popen([sys.executable, "-m", "properties.mutantrun", spec_path], cwd=ROOT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    return _Running(job, result_path, popen=popen)


def _judge(job: Job, status: int | None, seconds: float, result_path: str) -> Result:
    """The outcome of a finished (or timed-out: ``status`` None) mutant run."""
    info = {}
    if os.path.exists(result_path):
        try:
            info = json.loads(Path(result_path).read_text())
        except ValueError:
            info = {}
    n = len(job.tests)
    if status is None:
        return Result(job.mutant, "timeout", seconds, tests=n, reason=f"no verdict within {job.limit:.0f} s")
    from properties.mutantrun import CRASHED, KILLED, OUT_OF_MEMORY  # lazy: the runner half (see _start)

    if status == 0:
        return Result(job.mutant, "survived", seconds, tests=n)
    if status == KILLED:
        return Result(job.mutant, "killed", seconds, killed_by=info.get("failed") or "a failed run",
                      exception=info.get("exception") if job.suites else None, tests=n)
    memory = f"memory limit ({job.max_memory / 2**20:.0f} MiB of address space)" if job.max_memory else None
    if status == CRASHED:
        outcome, crash = _crash_verdict(job, info)
        exception = crash.get("exception") or "an exception"
        return Result(job.mutant, outcome, seconds, killed_by=crash.get("test"), exception=exception,
                      raised_at=crash.get("raised_at"), tests=n,
                      reason=memory if exception == "MemoryError" else None)
    if status == OUT_OF_MEMORY:
        return Result(job.mutant, "crashed", seconds, killed_by=info.get("failed"), exception="MemoryError",
                      reason=memory or "out of memory", tests=n)
    # a signal (segfault, the kernel's out-of-memory killer), pytest unable to run, or the child's own failure
    what = f"signal {-status}" if status < 0 else f"exit {status}"
    return Result(job.mutant, "crashed", seconds, killed_by=info.get("failed"), exception=what, tests=n)


def _crash_verdict(job: Job, info: dict) -> tuple[str, dict]:
    """A crashed run's outcome and the crash that decides it (``{"test", "exception",
    "raised_at"}``), from every crashing test of the run (``info["crashes"]``; the quick judge
    has one): ``incompetent`` when every crash was raised on the mutant's own lines,
    ``crashed_in_call`` when every one was raised there or during the invocation of the mutated
    function that executed a changed line, in that invocation itself or in a function it called
    (``raised_at["kind"]`` says which: ``"own line"``, ``"same call"``, ``"in callee"``), else ``crashed``
    (the first crash raised elsewhere decides: there the mutant's wrong state left the call).
    A ``MemoryError`` is always a crash: where memory ran out says nothing of where the mutant
    went wrong. A mutant whose module failed at its first import on the mutant's own lines
    (``info["first_import"]``, see ``properties.mutantrun.FIRST_IMPORT``) is incompetent from
    that failure, whatever later imports of the half-imported module raised."""
    first = info.get("first_import") or {}
    if first.get("own_lines") and first.get("raised_at"):
        return "incompetent", {"test": first.get("test"), "exception": first.get("exception"),
                               "raised_at": {**first["raised_at"], "kind": "own line"}}
    crashes = info.get("crashes") or [{"test": info.get("failed"), "exception": info.get("exception"),
                                       "raised_at": info.get("raised_at")}]
    kinds = [None if c.get("exception") == "MemoryError" else job.mutant.crash_kind(job.source, c.get("raised_at"))
             for c in crashes]
    if None in kinds:
        return "crashed", crashes[kinds.index(None)]
    pick = next(k for k in ("in callee", "same call", "own line") if k in kinds)
    crash = dict(crashes[kinds.index(pick)])
    crash["raised_at"] = {**crash["raised_at"], "kind": pick}
    return ("incompetent" if pick == "own line" else "crashed_in_call"), crash


def run_local(jobs: list[Job], *, workers: int, deadline: float | None,
              progress: Callable[[Result], None]) -> list[Result]:
    """Run the jobs, at most ``workers`` at a time; jobs not started by ``deadline``
    (``time.monotonic()``) are ``not_run``."""
    results: list[Result] = []
    queue = list(jobs)
    running: list[_Running] = []
    with tempfile.TemporaryDirectory(prefix="flinkspec-mutate-") as tmp:
        try:
            while queue or running:
                while queue and len(running) < workers:
                    if deadline is not None and time.monotonic() >= deadline:
                        for job in queue:
                            results.append(Result(job.mutant, "not_run", reason="--budget-s spent"))
                        queue.clear()
                        break
                    running.append(_start(queue.pop(0), tmp))
                for r in list(running):
                    status = r.poll()
                    elapsed = time.monotonic() - r.t0
                    if status is None and elapsed > r.job.limit:
                        r.kill()
                        res = _judge(r.job, None, elapsed, r.result_path)
                    elif status is None:
                        continue
                    elif status == SWAP_FAILED:
                        running.remove(r)
                        queue.insert(0, attrs.evolve(r.job, fresh=True))
                        continue
                    else:
                        res = _judge(r.job, status, elapsed, r.result_path)
                    running.remove(r)
                    results.append(res)
                    progress(res)
                time.sleep(0.02)
        finally:
            for r in running:
                r.kill()
    return results


def _spark_task(spec: dict, limit: float) -> dict:
    """On an executor: one mutant in a fresh interpreter; returns status, seconds and the
    result file's content."""
    with tempfile.TemporaryDirectory(prefix="flinkspec-mutant-") as d:
        spec = dict(spec, result=os.path.join(d, "result.json"))
        spec_path = os.path.join(d, "spec.json")
        Path(spec_path).write_text(json.dumps(spec))
        t0 = time.monotonic()
        p = subprocess.Popen([sys.executable, "-m", "properties.mutantrun", spec_path], cwd=spec["root"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            status = p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            status = None
        seconds = time.monotonic() - t0
        info = Path(spec["result"]).read_text() if os.path.exists(spec["result"]) else "{}"
    return {"status": status, "seconds": seconds, "info": info}


def run_spark(jobs: list[Job], *, master: str, progress: Callable[[Result], None]) -> list[Result]:
    """Every mutant as one Spark task (a fresh interpreter on the executor, with the import
    hook). The executors must see the project at the same path as the driver."""
    from spark.session import session  # lazy: pyspark only with --master

    specs = [(_subprocess_spec(j, ""), j.limit) for j in jobs]
    with session(master) as spark:
        sc = spark.sparkContext
        out = sc.parallelize(list(enumerate(specs)), max(1, len(specs))) \
            .map(lambda item: (item[0], _spark_task(item[1][0], item[1][1]))).collect()
    results = []
    with tempfile.TemporaryDirectory(prefix="flinkspec-mutate-") as tmp:
        for i, got in sorted(out):
            path = os.path.join(tmp, f"{i}.json")
            Path(path).write_text(got["info"])
            res = _judge(jobs[i], got["status"], got["seconds"], path)
            results.append(res)
            progress(res)
    return results


# -- one module ------------------------------------------------------------------------------------


@attrs.frozen
class ModuleReport:
    module: str
    results: tuple[Result, ...]
    seconds: float
    baseline_tests: int
    failing_baseline: tuple[str, ...]
    stale_equivalents: tuple[str, ...]
    quick_suites: tuple[str, ...] | None = None  # the quick judge's covering suites (None: not judged)
    quick_seconds: float = 0.0

    def count(self, outcome: str) -> int:
        return sum(1 for r in self.results if r.outcome == outcome)

    def summary(self) -> dict:
        out = {"module": f"model/{self.module}.py", "mutants": len(self.results),
               **scores([r.outcome for r in self.results]),
               "seconds": round(self.seconds, 1),
               "profile_tests": self.baseline_tests, "failing_without_mutant": list(self.failing_baseline),
               "stale_equivalents": list(self.stale_equivalents)}
        if self.quick_suites is not None:
            judged = [r for r in self.results if r.quick is not None]
            out["quick"] = {**scores([r.quick.outcome for r in judged]), "mutants": len(judged),
                            "suites": list(self.quick_suites), "seconds": round(self.quick_seconds, 1)}
            out["properties_blind"] = [r.mutant.id for r in self.results if r.properties_blind]
        return out


def scores(outcomes: list[str]) -> dict:
    """Counts per outcome and the three scores (see the module docstring): equivalent,
    incompetent and crashed-in-call mutants are outside them."""
    c = {o: sum(1 for x in outcomes if x == o) for o in OUTCOMES}
    judged = c["killed"] + c["crashed"] + c["survived"] + c["timeout"]

    def pct(n: int) -> float | None:
        return round(100.0 * n / judged, 1) if judged else None

    return {**c, "score": pct(c["killed"]), "score_with_crashes": pct(c["killed"] + c["crashed"]),
            "score_with_timeouts": pct(c["killed"] + c["timeout"]), "complete": c["not_run"] == 0}


#: tests run per mutant at most (``--tests-per-mutant``; 0: every test executing its lines)
TESTS_PER_MUTANT = 30


def plan(module: str, mutants: list[Mutant], baseline: Baseline, equivalents: dict[str, str],
         timeout: float | None, source: str, tests_per_mutant: int = TESTS_PER_MUTANT,
         max_memory: int | None = MAX_MEMORY_PER_MUTANT) -> tuple[list[Job], list[Result]]:
    """The jobs to run and the results known without running: equivalent (triaged) mutants,
    and mutants no test of the profile executes (they survive)."""
    jobs, known = [], []
    for m in mutants:
        if m.id in equivalents:
            known.append(Result(m, "equivalent", reason=equivalents[m.id]))
            continue
        tests = baseline.tests_for(m, tests_per_mutant)
        if not tests:
            known.append(Result(m, "survived", reason="no test of the kill profile executes this line"))
            continue
        cheap = tuple(t for t in tests if baseline.seconds.get(t, 0.0) <= CHEAP_TEST_S)
        jobs.append(Job(m, m.source(source), tuple(tests), time_limit(baseline.seconds_for(tests), timeout),
                        cheap=cheap, max_memory=max_memory))
    return jobs, known


def mutate_module(module: str, *, workers: int, deadline: float | None, master: str | None,
                  equivalents: dict[str, str], timeout: float | None, only: set[str] | None,
                  tests_per_mutant: int = TESTS_PER_MUTANT, profile: KillProfile | None = None, progress: Callable[[str, Result, int, int], None],
                  note: Callable[[str], None], judge: str = "unit", quick_runs: int | None = None,
                  seed: int = 0, max_memory: int | None = MAX_MEMORY_PER_MUTANT) -> ModuleReport:
    """Generate, triage, run and judge the mutants of one module; with ``judge="quick"`` judge
    every mutant that ran (killed, incompetent, crashed, survived) a second time by the quick check of the suites
    that execute its lines (at most ``quick_runs`` random walks per cluster suite, seeds from
    ``seed``); every mutant's run gets at most ``max_memory`` bytes of address space."""
    t0 = time.monotonic()
    source = module_path(module).read_text()
    mutants = generate(module)
    ids = {m.id for m in mutants}
    stale = tuple(sorted(k for k in equivalents if k.split(":")[0] == module and k not in ids))
    if only is not None:
        mutants = [m for m in mutants if m.id in only]
    profile = profile or kill_profile(module)
    note(f"model/{module}.py: {len(mutants)} mutant(s); baseline of the kill profile "
         f"({len(profile.tests)} test file(s)/selection(s)) under coverage ...")
    baseline = run_baseline(module, profile)
    note(f"model/{module}.py: baseline {len(baseline.tests)} test(s), "
         f"{baseline.seconds_for(baseline.tests):.0f} s" +
         (f"; {len(baseline.failing)} failing without a mutant, left out: {', '.join(baseline.failing[:3])}"
          if baseline.failing else ""))
    jobs, known = plan(module, mutants, baseline, equivalents, timeout, source, tests_per_mutant, max_memory)
    done = [0]
    total = len(jobs)

    def tick(res: Result) -> None:
        done[0] += 1
        progress(module, res, done[0], total)

    if master is not None:
        ran = run_spark(jobs, master=master, progress=tick)
    else:
        ran = run_local(jobs, workers=workers, deadline=deadline, progress=tick)
    results = sorted(known + ran, key=lambda r: r.mutant.index)
    quick_suites, quick_seconds = None, 0.0
    if judge == "quick" and deadline is not None and time.monotonic() >= deadline:
        note(f"model/{module}.py: quick judge: --budget-s spent, not run")
        results = [attrs.evolve(r, quick=Result(r.mutant, "not_run", reason="--budget-s spent"))
                   if r.outcome in ("killed", "incompetent", "crashed_in_call", "crashed", "survived") else r
                   for r in results]
        quick_suites = ()
    elif judge == "quick":
        t1 = time.monotonic()
        note(f"model/{module}.py: quick judge: every check suite's quick check under coverage "
             f"({'the profile' if quick_runs is None else f'at most {quick_runs}'} runs per cluster suite, seed {seed}) ...")
        check_suite_names()  # imported here, in the parent, so that the forked children start warm
        qb = run_quick_baseline(module, quick_runs, seed)
        quick_suites = qb.tests
        note(f"model/{module}.py: quick judge: {len(qb.tests)} suite(s) execute it: {', '.join(qb.tests) or 'none'}"
             + (f"; not as expected without a mutant, left out: {', '.join(qb.failing)}" if qb.failing else ""))
        qjobs, qknown = [], {}
        for r in results:
            if r.outcome not in ("killed", "incompetent", "crashed_in_call", "crashed", "survived"):
                continue
            suites = qb.tests_for(r.mutant, 0)
            if not suites:
                qknown[r.mutant.id] = Result(r.mutant, "survived", reason="no check suite executes this line")
                continue
            qjobs.append(Job(r.mutant, r.mutant.source(source), tuple(suites),
                             time_limit(qb.seconds_for(suites), timeout), suites=True, runs=quick_runs, seed=seed,
                             max_memory=max_memory))
        qdone, qtotal = [0], len(qjobs)

        def qtick(res: Result) -> None:
            qdone[0] += 1
            progress(f"{module} quick", res, qdone[0], qtotal)

        qran = run_local(qjobs, workers=workers, deadline=deadline, progress=qtick)
        qknown.update({q.mutant.id: q for q in qran})
        results = [attrs.evolve(r, quick=qknown[r.mutant.id]) if r.mutant.id in qknown else r for r in results]
        quick_seconds = time.monotonic() - t1
    return ModuleReport(module, tuple(results), time.monotonic() - t0, len(baseline.tests), baseline.failing,
                        stale, quick_suites, quick_seconds)
