"""model/watermarkstatus.py against the real StatusWatermarkValve of apache-flink 2.3.0.

Hundreds of seeded random input sequences (watermarks, IDLE, ACTIVE on 1-4 channels, with
edge values Long.MIN/MAX and int32 bounds) are fed to both valves; the emitted watermarks and
statuses must be identical, input by input. The z3 counterexample traces of spec/z3_valve.py
are included as fixed cases: real Flink 2.3.0 shows the FLINK-40475 stall exactly as the
model's default valve does, and the model's ``flink_40475=True`` variant (the later fix)
must *differ* from 2.3.0 on that trace.

Runs ``tools/flink_valve_oracle.py`` with ``.venv-flink/bin/python`` (``make flink-env``);
without that environment every test fails with that instruction (no skips).
"""

from __future__ import annotations

import importlib.util
import random
import time
from pathlib import Path

import pytest

from model.watermarkstatus import RecordingValveOutput, StatusWatermarkValve

pytestmark = [pytest.mark.slow, pytest.mark.flink]

REPO = Path(__file__).resolve().parents[2]
SEED = 7728
N_RANDOM = 600
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
INT_MIN, INT_MAX = -(2**31), 2**31 - 1

#: the FLINK-40475 stall found by spec/z3_valve.py (valve_progress_flink_2_3_0)
STALL_TRACE = [
    ["watermark", 1, 3], ["idle", 0], ["watermark", 2, 1], ["idle", 1],
    ["active", 0], ["idle", 2], ["active", 1],
]
#: the all-idle flush skipped in 2.3.0 (the last channel to go idle is unaligned)
SKIPPED_FLUSH_TRACE = STALL_TRACE + [["idle", 1], ["idle", 0]]


def _oracle_module():
    spec = importlib.util.spec_from_file_location(
        "flinkspec_tools_flink_valve_oracle", REPO / "tools" / "flink_valve_oracle.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _random_case(rng: random.Random) -> dict:
    """Half the cases churn idleness on 3-4 channels (where the valve's subtle paths live)."""
    churn = rng.random() < 0.5
    n = rng.choice([3, 4]) if churn else rng.choice([1, 2, 2, 3, 3, 4])
    p_wm, p_idle = (0.4, 0.7) if churn else (0.6, 0.8)
    length = rng.randint(3, 40)
    base = rng.choice([0, -1000, 10**6, INT_MAX - 20, LONG_MAX - 50, LONG_MIN])
    inputs = []
    for _ in range(length):
        r = rng.random()
        ch = rng.randrange(n)
        if r < p_wm:
            roll = rng.random()
            if roll < 0.05:
                v = rng.choice([LONG_MIN, LONG_MAX, INT_MIN, INT_MAX, INT_MAX + 1, 0, -1])
            else:
                v = base + rng.randint(-5, 30)
                v = max(LONG_MIN, min(LONG_MAX, v))
            inputs.append(["watermark", ch, v])
        elif r < p_idle:
            inputs.append(["idle", ch])
        else:
            inputs.append(["active", ch])
    return {"num_channels": n, "inputs": inputs}


def _model_events(case: dict, **knobs) -> tuple[list, list]:
    out = RecordingValveOutput()
    valve = StatusWatermarkValve(case["num_channels"], **knobs)
    per_input = []
    for inp in case["inputs"]:
        before = len(out.events)
        if inp[0] == "watermark":
            valve.input_watermark(inp[2], inp[1], out)
        else:
            valve.input_watermark_status(inp[0] == "idle", inp[1], out)
        per_input.append(len(out.events) - before)
    return [list(e) for e in out.events], per_input


@pytest.fixture(scope="module")
def flink_results():
    mod = _oracle_module()
    if not mod.FLINK_PYTHON.exists():
        pytest.fail(
            f"the real-Flink environment {mod.FLINK_VENV} is missing: run `make flink-env` first",
            pytrace=False,
        )
    rng = random.Random(SEED)
    cases = [{"num_channels": 3, "inputs": STALL_TRACE},
             {"num_channels": 3, "inputs": SKIPPED_FLUSH_TRACE}]
    cases += [_random_case(rng) for _ in range(N_RANDOM)]
    t0 = time.perf_counter()
    resp = mod.run_valve_cases(cases)
    elapsed = time.perf_counter() - t0
    n_inputs = sum(len(c["inputs"]) for c in cases)
    print(f"\nvalve oracle: {len(cases)} cases, {n_inputs} inputs, Flink {resp['flink_version']}, "
          f"{elapsed:.1f}s")
    return cases, resp


def test_flink_version_is_2_3_0(flink_results):
    _, resp = flink_results
    assert resp["flink_version"] == "2.3.0"


def test_model_valve_equals_flink_2_3_0_on_random_sequences(flink_results):
    cases, resp = flink_results
    diffs = []
    n_events = 0
    for case, res in zip(cases, resp["results"]):
        assert "error" not in res, f"Flink raised on {case}: {res['error']}"
        assert not [e for e in res["events"] if e[0] == "unexpected"], res["events"]
        model_events, model_per_input = _model_events(case)
        n_events += len(res["events"])
        if (model_events, model_per_input) != (res["events"], res["per_input"]):
            diffs.append((case, model_events, res["events"]))
    assert not diffs, f"{len(diffs)} of {len(cases)} sequences differ; first: {diffs[:3]}"
    # the random cases must exercise the valve: watermarks, IDLE and ACTIVE emissions
    kinds = {e[0] if e[0] == "watermark" else e[1] for r in resp["results"] for e in r["events"]}
    assert kinds == {"watermark", "IDLE", "ACTIVE"}
    assert n_events > len(cases)


def test_flink_2_3_0_has_the_flink_40475_stall(flink_results):
    cases, resp = flink_results
    stall = resp["results"][0]
    # the watermark stays at 1 although the only aligned channel (1) is at 3
    assert stall["events"] == [["watermark", 1]]
    fixed_events, _ = _model_events(cases[0], flink_40475=True)
    assert fixed_events != stall["events"]
    assert fixed_events[-1] == ["watermark", 3]


def test_flink_2_3_0_skips_the_all_idle_flush(flink_results):
    cases, resp = flink_results
    res = resp["results"][1]
    # all inputs idle, max watermark 3, but the output stays at 1
    assert res["events"] == [["watermark", 1], ["status", "IDLE"]]
    fixed_events, _ = _model_events(cases[1], flink_40475=True)
    assert ["watermark", 3] in fixed_events


@pytest.mark.parametrize(
    "knobs",
    [{"flink_40475": True}, {"flush_on_all_idle": False}, {"check_aligned_nonempty": False},
     {"realign_below_output": True}],
    ids=["flink-40475-fix", "pre-flink-7728", "pre-flink-7721", "mutant-realign-below-output"],
)
def test_random_cases_tell_every_variant_apart_from_flink_2_3_0(flink_results, knobs):
    """The random sequences have teeth: each model variant differs from 2.3.0 on some case."""
    cases, resp = flink_results
    differing = [
        c for c, r in zip(cases[2:], resp["results"][2:]) if _model_events(c, **knobs)[0] != r["events"]
    ]
    assert differing, f"no random case distinguishes {knobs} from Flink 2.3.0"
