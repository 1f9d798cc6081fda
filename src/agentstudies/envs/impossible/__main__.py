"""Rebuild the cached variant table: ``python -m agentstudies.envs.impossible [n_jobs]``."""
import sys

from agentstudies.envs.impossible._verify import build_variant_table

if __name__ == "__main__":
    t = build_variant_table(n_jobs=int(sys.argv[1]) if len(sys.argv) > 1 else 1, write=True)
    flagged = [x["task_id"] for x in t["tasks"] if x["flagged"]]
    print(len(t["tasks"]), "tasks written;", len(flagged), "originals flagged by the audit:", ", ".join(flagged))
