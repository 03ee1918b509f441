#!/usr/bin/env python3
"""Times commands alternately, round by round, so that a machine whose speed
drifts within the minute slows them all alike.

    docs/interleave.py ROUNDS 'command one' 'command two' ...

Each round runs every command once (the order reversed every other round),
its output thrown away; it prints each command's median wall time, its
fastest, its median user CPU and its median system CPU. Used for the figures of
docs/performance.md from 2026-12-01, evening.
"""
import resource
import statistics
import subprocess
import sys
import time


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rounds, cmds = int(sys.argv[1]), sys.argv[2:]
    wall = {c: [] for c in cmds}
    user = {c: [] for c in cmds}
    sys_ = {c: [] for c in cmds}
    for r in range(rounds):
        for c in (cmds if r % 2 == 0 else cmds[::-1]):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(c, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            wall[c].append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            user[c].append(after.ru_utime - before.ru_utime)
            sys_[c].append(after.ru_stime - before.ru_stime)
    for c in cmds:
        print(f"{statistics.median(wall[c]) * 1000:7.1f} ms median (fastest {min(wall[c]) * 1000:.1f}), "
              f"user {statistics.median(user[c]) * 1000:.1f} ms, sys {statistics.median(sys_[c]) * 1000:.1f} ms  {c}")


if __name__ == "__main__":
    main()
