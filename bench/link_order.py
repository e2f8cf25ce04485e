"""Writes a link order: every function of a binary that callgrind saw run, in the order of their addresses.

    python3 bench/link_order.py <dir of callgrind.* profiles> <binary> <order file>

Made for rust-lld's `--symbol-ordering-file` (deploy/build-controller.sh, crates/uc/build.rs): the functions
a process runs laid out together, so that the kernel, which maps a binary in 64 KB blocks around each page
touched, maps few blocks. The first line names the rustc whose symbols these are.
"""

import glob
import re
import subprocess
import sys


def executed(profiles):
    """The mangled names of the functions the callgrind profiles in `profiles` saw run."""
    names = set()
    for path in glob.glob(f"{profiles}/callgrind.*"):
        for line in open(path, errors="replace"):
            m = re.match(r"c?fn=\(\d+\) (\S+)", line)
            if m:
                names.add(re.sub(r"'\d+$", "", m.group(1)))
    return names


def ordered(binary, names):
    """The functions of `binary` among `names`, by address."""
    nm = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    rows = (line.split(" ", 2) for line in nm.splitlines() if line.count(" ") >= 2)
    functions = sorted((int(addr, 16), name) for addr, kind, name in rows if kind in "tTwW" and name in names)
    return list(dict.fromkeys(name for _, name in functions))


def main():
    profiles, binary, out = sys.argv[1:]
    functions = ordered(binary, executed(profiles))
    if len(functions) < 1000:
        sys.exit(f"only {len(functions)} functions recorded: did the scenarios run?")
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    with open(out, "w") as f:
        f.write(f"# {rustc}\n")
        f.writelines(f"{name}\n" for name in functions)
    print(f"{out}: {len(functions)} functions")


if __name__ == "__main__":
    main()
