#!/usr/bin/env python3
"""Runs one command with this VM's freed pages held in the guest (see limits.hold_guest_memory):
the free memory is touched once first, the page-reporting knobs are restored afterwards.

    python3 bench/broker/held.py target/release/skiff-bench storage --only append

Where the knobs are missing or not writable (not root, not this kind of VM) the command runs
unchanged and a line says so: its figures then carry the host's page-fault cost."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import limits  # noqa: E402


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: held.py COMMAND [ARGS...]")
    old = limits.hold_guest_memory()
    if old is None:
        print("held.py: page reporting cannot be held here; running as is", file=sys.stderr)
    try:
        if old is not None:
            secs = limits.touch_free_memory()
            print(f"held.py: free memory touched in {secs:.0f} s", file=sys.stderr)
        code = subprocess.run(sys.argv[1:]).returncode
    finally:
        limits.release_guest_memory(old)
    sys.exit(code)


if __name__ == "__main__":
    main()
