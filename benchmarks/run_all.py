"""Run every benchmark script in this folder (``make bench``).

Benchmarks measure speed; they are not tests and assert nothing about time. Each script
prints its own table; this runner only executes them in turn and reports failures.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

here = Path(__file__).resolve().parent
failed = []
for script in sorted(here.glob("bench_*.py")):
    print(f"\n=== {script.name} ===", flush=True)
    t0 = time.perf_counter()
    rc = subprocess.call([sys.executable, str(script)], cwd=here.parent)
    print(f"--- {script.name}: exit {rc} after {time.perf_counter() - t0:.1f} s", flush=True)
    if rc:
        failed.append(script.name)
sys.exit(1 if failed else 0)
