"""Design files (flinkspec.design): a user's seams, invariants and variants, loaded from a file
outside the package, searched by the engines, and named by the counterexamples they produce."""

import json
from pathlib import Path

import pytest

from flinkspec.cli import main
from flinkspec.design import DesignError, load_design, unload
from model import seams
from model.variants import VARIANTS
from properties import engines
from properties.counterexample import load_counterexample, replay_counterexample, write_counterexample
from properties.engines import random_walk
from model.variants import generate
from spec.invariant import REGISTRY, Violation

ROOT = Path(__file__).resolve().parent.parent
SAFE = ROOT / "examples" / "designs" / "retain-one-more-checkpoint.py"
UNSAFE = ROOT / "examples" / "designs" / "failover-skips-consumer-regions.py"


@pytest.fixture(autouse=True)
def _unload_designs():
    """Every design a test loads is forgotten after it: the next tests see the package's catalog."""
    before = (set(seams.SEAMS), set(VARIANTS), set(REGISTRY))
    yield
    unload()
    assert (set(seams.SEAMS), set(VARIANTS), set(REGISTRY)) == before
    assert not any(i.name.startswith(("store_holds", "test_design")) for i in engines.ALWAYS)


def _write(tmp_path, text: str, name: str = "design.py") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_the_unsafe_example_is_found_and_its_counterexample_names_the_design(tmp_path):
    d = load_design(UNSAFE)
    assert d.variants == ["skip-consumer-regions"] and VARIANTS["skip-consumer-regions"].origin == str(UNSAFE)
    v = VARIANTS["skip-consumer-regions"]
    r = next((r for r in (random_walk(v.name, seed) for seed in range(100)) if r.violation), None)
    assert r is not None, "skip-consumer-regions: no violation in 100 walks"
    assert r.invariant in v.expected
    path = write_counterexample(tmp_path, variant=v.name, expected=v.expected, engine="random_walk", seed=r.seed,
                                scenario=generate(v, r.seed), actions=r.actions,
                                violation=Violation.from_dict(r.violation))
    header = json.loads(path.read_text().splitlines()[0])
    assert header["design"]["path"] == str(UNSAFE) and len(header["design"]["sha256"]) == 64
    ok, _ = replay_counterexample(load_counterexample(path, known_variant=True))
    assert ok


def test_the_safe_example_passes_and_its_own_invariant_is_judged():
    d = load_design(SAFE)
    assert "store_holds_at_most_one_more" in d.invariants
    assert any(i.name == "store_holds_at_most_one_more" for i in engines.ALWAYS)
    for seed in range(15):
        r = random_walk("retain-one-more-aligned", seed)
        assert r.invariant is None, r.violation


def test_a_design_invariant_reaches_every_engine_and_a_design_seam_acts(tmp_path):
    p = _write(tmp_path, '''
from flinkspec.design import Violation, invariant, seam, variant
from model.checkpointcoordinator import CompletedCheckpointStore

@seam("test-design-store-empty", CompletedCheckpointStore, "get_latest_checkpoint",
      "the store forgets its checkpoints when asked for the latest")
def forget(self):
    return None

@invariant("test_design_no_restore_from_nothing", kind="always",
           statement="A restore after a checkpoint completed restores a checkpoint.")
def no_restore_from_nothing(run):
    c = run.cluster
    restored_now = c.restored_from and c.restored_from[-1][0] == c.now - 1
    if restored_now and c.restored_from[-1][1] is None and c.completed_ids:
        return Violation(invariant="test_design_no_restore_from_nothing", expected="a checkpoint",
                         actual=c.restored_from[-1], message="restored from nothing after a completed checkpoint")
    return None

variant("test-design-forgetful-store", "the store forgets", base="aligned-2pc",
        seams=[forget], expected=("test_design_no_restore_from_nothing", "exactly_once",
                                  "committed_output_within_reference"))
''')
    load_design(p)
    found = [r.invariant for r in (random_walk("test-design-forgetful-store", s) for s in range(60)) if r.invariant]
    assert found and set(found) <= set(VARIANTS["test-design-forgetful-store"].expected)
    # outside the design's runs the store is Flink's again
    assert seams.SEAMS["test-design-store-empty"].safe is not None
    assert all(r.invariant is None for r in (random_walk("aligned-2pc", s) for s in range(5)))


@pytest.mark.parametrize("body,line,message", [
    ("x = (\n", 1, "syntax error: '(' was never closed"),
    ("from flinkspec.design import seam\nfrom model.checkpointcoordinator import CompletedCheckpointStore\n"
     "@seam('t-typo', CompletedCheckpointStore, 'subsum', 'typo')\ndef f(self): pass\n",
     3, "seam 't-typo': CompletedCheckpointStore defines no method 'subsum'"),
    ("from flinkspec.design import variant\nvariant('t-v', 'x', base='no-such-variant')\n",
     2, "variant 't-v': base 'no-such-variant' is not a built-in variant"),
    ("from flinkspec.design import variant\nvariant('t-v', 'x', base='aligned-2pc', config={'bugs': ()})\n",
     2, "variant 't-v': config key 'bugs' is not a RuntimeConfig field (switch seams with seams=)"),
    ("from flinkspec.design import variant\nvariant('t-v', 'x', base='aligned-2pc', config={'channel_capacity': 2})\n",
     2, "variant 't-v': config key 'channel_capacity' is not a RuntimeConfig field (it is the model's scope: give it in scope=)"),
    ("from flinkspec.design import variant\nvariant('t-v', 'x', base='session-cluster', scope={'control_plane': True})\n",
     2, "variant 't-v': deployment_mode and control_plane cannot be combined"),
    ("from flinkspec.design import variant\nvariant('t-v', 'x', base='aligned-2pc', expected='no_such_invariant')\n",
     2, "variant 't-v': expected invariant 'no_such_invariant' is not registered"),
    ("from flinkspec.design import variant\nvariant('aligned-2pc', 'x', base='aligned-2pc')\n",
     2, "variant 'aligned-2pc' is declared twice"),
    ("1 / 0\n", 1, "ZeroDivisionError: division by zero"),
    ("from flinkspec.design import seam\n", None, "the design declares no variant"),
])
def test_a_bad_design_is_one_line_and_leaves_nothing_registered(tmp_path, body, line, message):
    before = (set(seams.SEAMS), set(VARIANTS), set(REGISTRY))
    # the first three lines register an invariant that a failed load must remove again
    p = _write(tmp_path, "from flinkspec.design import invariant as _i\n"
               "@_i('t_left_behind', kind='always', statement='x')\ndef _inv(run): return None\n" + body, "bad.py")
    with pytest.raises(DesignError) as e:
        load_design(p)
    where = f"{p}:{line + 3}" if line is not None else str(p)
    assert str(e.value).startswith(f"{where}: {message}"), str(e.value)
    assert "\n" not in str(e.value)
    assert (set(seams.SEAMS), set(VARIANTS), set(REGISTRY)) == before


def test_check_explore_show_and_replay_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "cx"
    assert main(["check", "--design", str(UNSAFE), "--corpus", str(out)]) == 0
    files = sorted(out.glob("*/*.ndjson"))
    assert files and "1/1 unsafe variants caught" in capsys.readouterr().out
    assert main(["explore", "--design", str(UNSAFE), "--small", "--out", str(tmp_path / "ex")]) == 0
    assert "skip-consumer-regions: violation restart_set_sufficient" in capsys.readouterr().out
    html = tmp_path / "cx.html"
    assert main(["show", str(files[0]), "--html", str(html)]) == 0 and html.stat().st_size > 1000
    assert main(["replay", str(files[0])]) == 0
    assert "reproduced" in capsys.readouterr().out
    assert main(["check", "--design", str(UNSAFE), "--only", "aligned-2pc"]) == 2
    assert "not a variant of" in capsys.readouterr().err
