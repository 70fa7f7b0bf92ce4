"""A design that breaks exactly-once: region failover restarts only the failed task's own
pipelined region (and the producers of lost partitions), not the regions that consume its
output.

The reasoning behind it: a producer that replays deterministically from a checkpoint sends
its consumers the same records again, so they need not restart. It is wrong behind a
rebalance (a non-deterministic partitioner) or with a two-phase-commit sink whose transactions
the restart aborts: Flink restarts every consumer region of a restarted region
(``RestartPipelinedRegionFailoverStrategy``). The searches find the lost or duplicated output.

    .venv/bin/flinkspec check --design examples/designs/failover-skips-consumer-regions.py
    .venv/bin/flinkspec explore --design examples/designs/failover-skips-consumer-regions.py --small
"""

from flinkspec.design import seam, variant
from model.failover import RestartPipelinedRegionFailoverStrategy


@seam("failover-skips-consumer-regions", RestartPipelinedRegionFailoverStrategy, "tasks_to_restart",
      "a failover restarts the failed regions and the producers of lost partitions, not their consumers")
def tasks_to_restart(self, failed, unavailable_channels=frozenset()):
    involved, todo = set(), [self.region_of[s] for s in failed]
    while todo:
        r = todo.pop()
        if r not in involved:
            involved.add(r)
            todo.extend(self.region_of[ch.producer] for ch in self.inputs_of[r]
                        if self.producer_to_backtrack(ch, unavailable_channels))
    return frozenset().union(*(self.regions[r] for r in involved)) if involved else frozenset()


variant("skip-consumer-regions", "blocking and pipelined exchanges, a 2PC sink, task failures and TaskManager "
        "loss; failover skips consumer regions", base="blocking-region-failover",
        seams=[tasks_to_restart],
        expected=("restart_set_sufficient", "restart_set_exact", "exactly_once", "committed_output_within_reference"))
