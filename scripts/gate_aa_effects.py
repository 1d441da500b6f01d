#!/usr/bin/env python3
"""How large are the effects an A/A gate sees? The data behind compare's default
minimum effect (docs/compare.md, "Noise and rounds").

Reads the gates that scripts/gate_aa_benchmark.sh left in OUTDIR (CONDITION-K/,
each with base.json and head.json joined from rounds by `merge --rounds`) and,
for the A/A conditions (idle, loaded), takes every timed cell that is not the
oracle's: its per-round ratios of medians head/base over the rounds that were
clean on both sides. It prints the spread of those ratios and, for candidate
minimum effects, how many cells would show the effect in every clean round,
the rule compare applies before it calls a cell a regression or an improvement.

    scripts/gate_aa_effects.py OUTDIR
"""
import json
import pathlib
import statistics
import sys

CANDIDATES = (0.05, 0.10, 0.15, 0.20)


def round_medians(record):
    """{round: (median, noisy)} of a record joined from rounds."""
    timing = record["timing"]
    samples, medians, start = timing["samples_seconds"], {}, 0
    for entry in timing["rounds"]:
        part = samples[start:start + entry["samples"]]
        start += entry["samples"]
        medians[entry["round"]] = (statistics.median(part), entry["noisy"])
    return medians


def cell_ratios(base, head):
    """Per cell (key), the head/base ratios of the rounds clean on both sides."""
    def timed(document):
        return {(r["case_key"], r["implementation"]): r for r in document["records"]
                if r["status"] == "ok" and r["timing"] and "rounds" in r["timing"]
                and r["accuracy"] and r["accuracy"]["status"] != "oracle"}
    before, after = timed(base), timed(head)
    cells = {}
    for key in before.keys() & after.keys():
        a, b = round_medians(before[key]), round_medians(after[key])
        ratios = [b[k][0] / a[k][0] for k in a.keys() & b.keys() if not a[k][1] and not b[k][1]]
        if 2 * len(ratios) >= len(a) and ratios:
            cells[key] = ratios
    return cells


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    outdir = pathlib.Path(sys.argv[1])
    print("| condition | cells | rounds | median abs effect | 90th pct | 99th pct | max |"
          + "".join(f" cells beyond ±{c:.0%} in every round |" for c in CANDIDATES))
    print("|---|---|---|---|---|---|---|" + "---|" * len(CANDIDATES))
    for condition in ("idle", "loaded"):
        cells = []
        for gate in sorted(outdir.glob(f"{condition}-*/")):
            try:
                base = json.loads((gate / "base.json").read_text())
                head = json.loads((gate / "head.json").read_text())
            except OSError:
                continue
            cells.extend(cell_ratios(base, head).values())
        if not cells:
            continue
        effects = sorted(abs(r - 1) for ratios in cells for r in ratios)
        quantile = lambda q: effects[min(len(effects) - 1, int(q * len(effects)))]
        row = (f"| {condition} A/A | {len(cells)} | {len(effects)} | {100 * quantile(0.5):.1f}% |"
               f" {100 * quantile(0.9):.1f}% | {100 * quantile(0.99):.1f}% | {100 * effects[-1]:.1f}% |")
        for candidate in CANDIDATES:
            beyond = sum(1 for ratios in cells if len(ratios) > 1 and (all(r > 1 + candidate for r in ratios) or
                                                                     all(r < 1 / (1 + candidate) for r in ratios)))
            row += f" {beyond} |"
        print(row)


if __name__ == "__main__":
    main()
