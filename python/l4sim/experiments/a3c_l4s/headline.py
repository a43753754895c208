"""What a full ``a3c-l4s`` run shows, in two sentences, read back from its committed tables
(``training.csv``, ``table.md``'s collapsed column and the goal lines of ``front.md``), and
the counts the docs' prose quotes (``facts``)."""

from __future__ import annotations

import re
from pathlib import Path

from l4sim.experiments._tables import bullet_lines, md_rows, read_csv

#: One goal line of ``front.md``: scenario, actor kind, how many policies met it, of how many.
_GOAL = re.compile(r"^(\S+), (A3C sets p'|A3C sets PI target): .*: (\d+) of (\d+) ")
P_ACTOR, T_ACTOR = "A3C sets p'", "A3C sets PI target"


def _goals(out_dir: Path) -> dict[tuple[str, str], tuple[int, int]]:
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for line in bullet_lines(out_dir / "front.md"):
        m = _GOAL.match(line)
        if m:
            out[(m[1], m[2])] = (int(m[3]), int(m[4]))
    return out


def facts(out_dir: Path) -> dict[str, str]:
    """The counts the headline and the docs' prose quote, as they write them: training seeds,
    p' policies better than untrained on held-out traffic and whose last 10 episodes beat
    their first 10, collapsed deployments, and each actor's policies at PI's point."""
    training = read_csv(out_dir / "training.csv")
    p_prime = [r for r in training if not r["variant"].endswith("-t")]
    better = sum(float(r["held_out_trained"]) > float(r["held_out_untrained"]) for r in p_prime)
    rising = sum(r["rising"] == "True" for r in p_prime)
    collapsed = [r["collapsed"] for r in md_rows(out_dir / "table.md")]
    n_collapsed = sum(int(c.split(" of ")[0]) for c in collapsed if " of " in c)
    n_deployed = sum(int(c.split(" of ")[1]) for c in collapsed if " of " in c)
    g = _goals(out_dir)

    def goal(scenario: str, kind: str) -> str:
        met, total = g.get((scenario, kind), (0, 0))
        return f"{met} of {total}"

    return {
        "seeds": str(len({r["seed"] for r in training})),
        "p_held_out_better": f"{better} of {len(p_prime)}",
        "p_rising": f"{rising} of {len(p_prime)}",
        "collapsed": f"{n_collapsed} of {n_deployed}",
        "p_goal_newreno": goal("10Mbps-newreno", P_ACTOR),
        "p_goal_dynamic": goal("dynamic", P_ACTOR),
        "t_goal_newreno": goal("10Mbps-newreno", T_ACTOR),
        "t_goal_dynamic": goal("dynamic", T_ACTOR),
    }


def headline(out_dir: Path) -> str:
    """Held-out gain of the p' policies, collapses, and how many policies of each actor
    reach DualPI2's PI point on the NewReno and the dynamic scenario."""
    f = facts(out_dir)
    return (
        f"Trained on {f['seeds']} seeds, {f['p_held_out_better']} p' policies score better "
        f"than untrained on held-out traffic; {f['collapsed']} deployed policies "
        f"collapsed. Policies within 2 % of PI's utilisation at ≤ its delay (NewReno "
        f"scenario) / at least PI's utilisation at ≤ its delay (dynamic): the paper's "
        f"p' actor {f['p_goal_newreno']} / {f['p_goal_dynamic']}; an actor that sets PI's "
        f"target {f['t_goal_newreno']} / {f['t_goal_dynamic']}."
    )
