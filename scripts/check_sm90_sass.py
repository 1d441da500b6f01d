#!/usr/bin/env python3
"""The structure of cuda.flash.sm90's kernels in their SASS, checked with the toolkit.

Disassembles a binary or object that holds the sm_90a build of
kernels/cuda/flash_sm90_forward.cu or flash_sm90_backward.cu (cuobjdump -sass) and, for every instance of
flash_sm90_forward_kernel, requires: wgmma (HGMMA), the register split per role
(USETMAXREG), TMA loads (UTMALDG), mbarrier operations (SYNCS), a wgmma wait
that leaves a group in flight (WARPGROUP.DEPBAR with a non-zero count: the
softmax overlapping P·V; ptxas turns every wait into a count of 0 when it
serialises the wgmmas, warning C7514; not at head dim 256, where the overlap
does not fit the registers and the kernel runs in order), the consumers' ping-pong (named
barriers of 256 threads: BAR.SYNC to wait for a turn, BAR.ARV to pass it), the
epilogue's stmatrix (STSM) and TMA store (UTMASTG), and no local-memory loads
or stores
(LDL, STL: a spill or an array ptxas could not keep in registers). For every
instance of flash_sm90_backward_kernel (kernels/cuda/flash_sm90_backward.cu):
HGMMA, USETMAXREG, UTMALDG, SYNCS, STSM (the dSᵀ tile and the epilogue),
UTMASTG (dK and dV), UBLKRED (a dQ part's bulk reduce-add; not at head dim
256, whose dQ parts are added from registers), REDG (the deterministic mode's
adds and semaphore), and no LDL or STL. Prints one line
per kernel; exits 1 when one fails, 4 when cuobjdump or the kernels cannot be
found.

  scripts/check_sm90_sass.py FILE... [--cuobjdump PATH]

cuobjdump comes with the CUDA toolkit or the Python packages
nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm (found in the running Python's
site-packages; NVDISASM_PATH is set to their folder).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

REQUIRED = ("HGMMA", "USETMAXREG", "UTMALDG", "SYNCS", "DEPBAR_NONZERO", "TURN_SYNC", "TURN_ARRIVE", "STSM",
            "UTMASTG")
# The backward (kernels/cuda/flash_sm90_backward.cu): wgmma, the register
# split, TMA loads, mbarriers, stmatrix (the dSᵀ tile, the epilogue), the
# epilogue's TMA stores of dK and dV, the bulk reduce-add of a dQ part
# (UBLKRED, cp.reduce.async.bulk) and the deterministic mode's red.global.add
# and semaphore release (REDG).
BACKWARD_REQUIRED = ("HGMMA", "USETMAXREG", "UTMALDG", "SYNCS", "STSM", "UTMASTG", "UBLKRED", "REDG")
FORBIDDEN = ("LDL", "STL")
KERNELS = ("flash_sm90_forward_kernel", "flash_sm90_backward_kernel")


def find_cuobjdump(given):
    if given:
        return given
    found = shutil.which("cuobjdump")
    if found:
        return found
    candidates = ["/usr/local/cuda/bin/cuobjdump"]
    try:
        import nvidia  # the pip packages' namespace
        candidates += [os.path.join(folder, "cu13", "bin", "cuobjdump") for folder in nvidia.__path__]
    except ImportError:
        pass
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            os.environ.setdefault("NVDISASM_PATH", os.path.dirname(candidate))
            return candidate
    return None


def kernels(sass):
    """{mangled name: [instruction lines]} for the sm90 forward's and backward's main kernels."""
    functions, current = {}, None
    for line in sass.splitlines():
        header = re.match(r"\s*Function : (\S+)", line)
        if header:
            current = header.group(1) if any(kernel in header.group(1) for kernel in KERNELS) else None
            if current:
                functions[current] = []
        elif current:
            functions[current].append(line)
    return functions


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--cuobjdump")
    args = parser.parse_args()
    cuobjdump = find_cuobjdump(args.cuobjdump)
    if not cuobjdump:
        print("check_sm90_sass: no cuobjdump (CUDA toolkit or pip nvidia-cuda-cuobjdump)", file=sys.stderr)
        return 4
    found = {}
    for path in args.files:
        result = subprocess.run([cuobjdump, "-sass", path], capture_output=True, text=True)
        if result.returncode != 0:
            print(f"check_sm90_sass: {cuobjdump} -sass {path} failed: {result.stderr.strip()}", file=sys.stderr)
            return 4
        found.update(kernels(result.stdout))
    if not found:
        print(f"check_sm90_sass: no {' or '.join(KERNELS)} in {' '.join(args.files)}", file=sys.stderr)
        return 4
    failed = 0
    for name, lines in sorted(found.items()):
        text = "\n".join(lines)
        backward = "flash_sm90_backward_kernel" in name
        checked = BACKWARD_REQUIRED if backward else REQUIRED
        counts = {op: len(re.findall(r"\b" + op + r"\b", text)) for op in checked + FORBIDDEN}
        counts["DEPBAR_NONZERO"] = len(re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, 0x[1-9a-f]", text))
        counts["TURN_SYNC"] = len(re.findall(r"\bBAR\.SYNC\S* R\d+, 0x100\b", text))
        counts["TURN_ARRIVE"] = len(re.findall(r"\bBAR\.ARV R\d+, 0x100\b", text))
        # Head dim 256: the forward runs in order, the backward adds dQ from registers.
        required = [op for op in checked if not (op in ("DEPBAR_NONZERO", "UBLKRED") and "Li256E" in name)]
        missing = [op for op in required if counts[op] == 0]
        present = [op for op in FORBIDDEN if counts[op] > 0]
        ok = not missing and not present
        failed += not ok
        summary = ", ".join(f"{op} {counts[op]}" for op in checked + FORBIDDEN)
        problems = "; ".join(filter(None, [missing and "missing " + " ".join(missing),
                                           present and "local memory: " + " ".join(present)]))
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {summary}{'  (' + problems + ')' if problems else ''}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
