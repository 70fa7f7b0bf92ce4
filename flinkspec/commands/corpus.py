"""``flinkspec corpus update [--from DIR ...] [--dry-run] [--corpus DIR]``: change the committed corpus, on purpose.

Every command that finds counterexamples writes them into a run directory under results/
(ignored by git); this command merges run directories into the corpus. Per (variant,
invariant) it keeps the shortest counterexample that still replays to its recorded
violation: a file replaces the corpus' one only when it is strictly shorter, and is added
when the corpus has none for its pair and does not leave the pair out on purpose (the
reason is printed). Files that no longer replay or whose variant no longer exists are
removed — except files a hand-written doc (README.md, docs/*.md) names, which are kept and
reported. It prints every file it adds, replaces, removes, keeps or skips. Exit 0 when the corpus is updated (or, with --dry-run, when the plan is
printed), 2 on bad input (a missing folder, a malformed file).
"""

from __future__ import annotations

from pathlib import Path

from model.errors import FlinkspecError


def register(sub) -> None:
    p = sub.add_parser("corpus", help="merge counterexamples from run directories into the committed corpus",
                       description=__doc__.split("\n\n")[1])
    actions = p.add_subparsers(dest="corpus_action", metavar="ACTION")
    u = actions.add_parser("update", help="keep the shortest counterexample per (variant, invariant): only strictly shorter files replace",
                           description=__doc__.split("\n\n")[1])
    u.add_argument("--from", dest="sources", action="append", metavar="DIR",
                   help="a run directory (or .ndjson file) to merge (repeatable; default: every run "
                        "directory under results/ holding counterexamples)")
    u.add_argument("--corpus", metavar="DIR", default=None,
                   help="the corpus to update (default: this checkout's counterexamples/)")
    u.add_argument("--dry-run", action="store_true", help="print what would change, write nothing")
    u.set_defaults(func=run_update)
    p.set_defaults(func=_usage)


def _usage(args) -> int:
    raise FlinkspecError("an ACTION is required: update (see `flinkspec corpus --help`)")


def run_update(args) -> int:
    # lazy: the catalog and the corpus load the model and every scenario kind (~0.5 s),
    # which the other commands' start-up must not pay for
    from properties.corpus import DEFAULT_CORPUS, RESULTS, run_directories, update_corpus  # lazy, as above
    from properties.validation import known_suites  # lazy, as above

    corpus = Path(args.corpus) if args.corpus else DEFAULT_CORPUS
    sources = [Path(s) for s in args.sources] if args.sources else run_directories(RESULTS)
    if not sources:
        raise FlinkspecError(f"no run directories with counterexamples under {RESULTS}/ "
                             f"(run `flinkspec check` first, or name one with --from DIR)")
    known = set(known_suites())
    changes = update_corpus(sources, corpus, dry_run=args.dry_run, known_variants=known)
    shown = _shown(corpus)
    print(f"corpus {shown} <- {len(sources)} source(s): " + ", ".join(_shown(s) for s in sources))
    for line in changes.lines():
        print(line)
    if changes.changed and not args.dry_run and corpus.resolve() == DEFAULT_CORPUS.resolve():
        print(f"regenerated {_regenerate_variants_page()} (it lists the corpus)")
    return 0


def _regenerate_variants_page() -> str:
    """Rewrite docs/variants.md (generated from the catalog and the corpus) with its generator."""
    import importlib.util  # lazy: only an update of the checkout's own corpus needs the generator

    tool = Path(__file__).resolve().parents[2] / "tools" / "gen_variants_doc.py"
    spec = importlib.util.spec_from_file_location("gen_variants_doc", tool)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.main([])
    return _shown(mod.DOC)


def _shown(p: Path) -> str:
    try:
        return str(Path(p).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(p)
