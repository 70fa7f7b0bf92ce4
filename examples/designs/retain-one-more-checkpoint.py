"""A design: the CompletedCheckpointStore retains one checkpoint more than
``execution.checkpointing.num-retained`` asks for, so that a restore can fall back to the
previous checkpoint if the latest one turns out to be unreadable.

Flink's ``DefaultCompletedCheckpointStore`` subsumes the oldest checkpoint as soon as the store
holds more than num-retained (``CheckpointSubsumeHelper.subsume``); the SharedStateRegistry then
discards the shared files no retained checkpoint references any more. The proposal keeps one
more. Does anything break? Incremental RocksDB checkpoints share files across checkpoints, so
the registry must now keep the files of the extra checkpoint too, and a restore must still
restore the latest one.

    .venv/bin/flinkspec check --design examples/designs/retain-one-more-checkpoint.py
    .venv/bin/flinkspec explore --design examples/designs/retain-one-more-checkpoint.py --small
"""

from flinkspec.design import Violation, invariant, original, seam, variant
from model.checkpointcoordinator import CompletedCheckpointStore


@seam("store-retains-one-more", CompletedCheckpointStore, "add_checkpoint_and_subsume_oldest_one",
      "the store subsumes only when it holds more than num-retained + 1 checkpoints")
def add_and_keep_one_more(self, checkpoint):
    self.max_retained += 1  # Flink's rule, with a store one larger
    try:
        return original("store-retains-one-more")(self, checkpoint)
    finally:
        self.max_retained -= 1


@invariant("store_holds_at_most_one_more", kind="always",
           statement="The CompletedCheckpointStore holds at most num-retained + 1 checkpoints.")
def store_holds_at_most_one_more(run):
    c = run.cluster
    store = c.coordinator.store
    ids = store.checkpoint_ids()
    if len(ids) > c.config.max_retained_checkpoints + 1:
        return Violation(invariant="store_holds_at_most_one_more",
                         expected=f"at most {c.config.max_retained_checkpoints + 1} checkpoints",
                         actual=list(ids), message="the store holds more checkpoints than the design allows")
    return None


variant("retain-one-more-incremental", "incremental RocksDB checkpoints (2 retained, a CLAIM restore) with the "
        "store retaining one more", base="rocksdb-incremental", seams=[add_and_keep_one_more])
variant("retain-one-more-aligned", "aligned checkpoints, a 2PC sink, task failures, with the store retaining one "
        "more", base="aligned-2pc", seams=[add_and_keep_one_more])
