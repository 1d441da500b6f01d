#!/usr/bin/env python3
"""Draws attnbench results as PNG and SVG figures (docs/reports.md).

    scripts/plot.py RESULTS.json [MORE.json ...] [--out plots] [--baseline NAME]
                    [--attnbench build/harness/attnbench]

The tables come from `attnbench report --format json`, so merging files and
grouping a sweep happen in one place (the C++ report). For every group of the
sweep tables (one setting of the fields that vary other than the lengths) it
writes, into --out:

    tflops_<group>.{png,svg}   TFLOP/s against N per implementation, grouped bars
                               (the FlashAttention-2 paper's style)
    runtime_<group>.{png,svg}  median runtime against N (log-log)
    speedup_<group>.{png,svg}  speedup over the baseline against N (bars), when
                               the report has a baseline
    memory_<group>.{png,svg}   peak memory against N (log-log)
    io_<group>.{png,svg}       measured (or counted) against compulsory HBM bytes

<group> is "all" when nothing varies, else the varying fields and their values
("head_dim-64_causal-false"). Exit status: 0 on success, 2 on bad input (the
report's message is shown), 1 when matplotlib is missing.
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("plot.py: the Python package matplotlib is missing: run scripts/setup.sh")

REPORT_SCHEMA = "attnbench.report/1"
DEFAULT_BINARY = pathlib.Path(__file__).resolve().parent.parent / "build" / "harness" / "attnbench"

# Editable SVG text (so the names can be found and changed) and stable ids.
matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "attnbench", "font.size": 9})


class InputProblem(Exception):
    """Bad input: reported with exit status 2."""


def report(binary, results, table, baseline):
    """Runs `attnbench report --format json` and returns the parsed table."""
    command = [str(binary), "report", *results, "--table", table, "--format", "json"]
    if baseline:
        command += ["--baseline", baseline]
    try:
        completed = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as error:
        raise InputProblem(f"cannot run {binary}: {error.strerror}; build attnbench (scripts/build.sh) "
                           "or name it with --attnbench") from error
    if completed.returncode != 0:
        raise InputProblem(f"attnbench report --table {table} failed (exit {completed.returncode}):\n"
                           + completed.stderr.strip())
    document = json.loads(completed.stdout)
    if document.get("schema") != REPORT_SCHEMA:
        raise InputProblem(f"{binary} wrote a report of schema {document.get('schema')!r}, not {REPORT_SCHEMA}")
    return document


def value(cell):
    """The number in a cell, or None for a marker ("OOM"), text or an empty cell."""
    if isinstance(cell, dict):
        return cell.get("value")
    return cell if isinstance(cell, (int, float)) and not isinstance(cell, bool) else None


def text(cell):
    """What a cell says: a label, a marker, or the number itself."""
    if isinstance(cell, dict):
        return cell.get("label") or cell.get("marker", "")
    return "" if cell is None else str(cell)


def series(document, group, quantity):
    """{implementation: [cell per row]} for the columns of one quantity."""
    return {column["implementation"]: [row[i] for row in group["rows"]]
            for i, column in enumerate(document["columns"])
            if column["quantity"] == quantity and "implementation" in column}


def column_of(document, quantity):
    for i, column in enumerate(document["columns"]):
        if column["quantity"] == quantity:
            return i
    raise InputProblem(f"the {document['table']} report has no {quantity} column")


def slugs(document):
    """A file-name part per group: its varying fields and values, or "all"."""
    names = []
    for group in document["groups"]:
        parts = []
        for key, field in group["fields"].items():
            shown = field if isinstance(field, str) else json.dumps(field, separators=(",", ":"))
            parts.append(key + "-" + (re.sub(r"[^A-Za-z0-9.]+", "-", shown).strip("-") or "none"))
        name = "_".join(parts) or "all"
        names.append(name if name not in names else f"{name}_{len(names) + 1}")
    return names


class Figures:
    """Saves each figure as PNG and SVG into one directory."""

    def __init__(self, directory):
        self.directory = pathlib.Path(directory)
        self.written = []

    def save(self, figure, name):
        self.directory.mkdir(parents=True, exist_ok=True)
        for extension in ("png", "svg"):
            path = self.directory / f"{name}.{extension}"
            metadata = {"Date": None} if extension == "svg" else {"Software": None}
            figure.savefig(path, dpi=150, bbox_inches="tight", metadata=metadata)
            self.written.append(path)
        plt.close(figure)


def grouped_bars(axes, categories, bars, colors):
    """Bars per implementation at each category; markers ("OOM") where a number is missing."""
    width = 0.8 / max(len(bars), 1)
    for k, (name, cells) in enumerate(bars.items()):
        positions = [i + (k - (len(bars) - 1) / 2) * width for i in range(len(categories))]
        heights = [value(cell) or 0 for cell in cells]
        drawn = axes.bar(positions, heights, width, label=name, color=colors.get(name))
        axes.bar_label(drawn, labels=[f"{value(cell):.3g}" if value(cell) is not None else text(cell)
                                      for cell in cells], fontsize=6, padding=2, rotation=90)
    axes.set_xticks(range(len(categories)), categories)
    axes.margins(y=0.2)


def legend(axes):
    """A legend when something was drawn (a table of skipped records draws nothing)."""
    if axes.get_legend_handles_labels()[0]:
        axes.legend(fontsize=7)


def sweep_axes(title, ylabel):
    figure, axes = plt.subplots(figsize=(6.4, 4.0))
    axes.set_title(title, fontsize=9)
    axes.set_xlabel("Sequence length N")
    axes.set_ylabel(ylabel)
    axes.grid(axis="y", alpha=0.3)
    return figure, axes


def lines_against_n(axes, lengths, lines, colors):
    """One line per implementation against N, log-log, skipping missing points."""
    for name, cells in lines.items():
        points = [(n, value(cell)) for n, cell in zip(lengths, cells) if value(cell) is not None and n is not None]
        if points:
            axes.plot(*zip(*points), marker="o", label=name, color=colors.get(name))
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xticks([n for n in lengths if n is not None], [str(n) for n in lengths if n is not None])
    axes.minorticks_off()


def plot_seqlen(document, figures, colors):
    n_column = column_of(document, "seqlen_k")
    for group, slug in zip(document["groups"], slugs(document)):
        categories = [text(row[n_column]) for row in group["rows"]]
        lengths = [value(row[n_column]) for row in group["rows"]]

        figure, axes = sweep_axes(group["title"], "TFLOP/s")
        grouped_bars(axes, categories, series(document, group, "tflops"), colors)
        legend(axes)
        figures.save(figure, f"tflops_{slug}")

        figure, axes = sweep_axes(group["title"], "Runtime (ms)")
        lines_against_n(axes, lengths, series(document, group, "runtime"), colors)
        legend(axes)
        figures.save(figure, f"runtime_{slug}")

        speedups = series(document, group, "speedup")
        if speedups:
            figure, axes = sweep_axes(group["title"], f"Speedup over {document['baseline']}")
            grouped_bars(axes, categories, speedups, colors)
            axes.axhline(1.0, color="black", linewidth=0.8)
            legend(axes)
            figures.save(figure, f"speedup_{slug}")


def plot_memory(document, figures, colors):
    n_column = column_of(document, "seqlen_k")
    for group, slug in zip(document["groups"], slugs(document)):
        figure, axes = sweep_axes(group["title"], "Peak memory (MB)")
        lengths = [value(row[n_column]) for row in group["rows"]]
        lines_against_n(axes, lengths, series(document, group, "peak_memory"), colors)
        legend(axes)
        figures.save(figure, f"memory_{slug}")


def plot_io(document, figures, colors):
    name_column = column_of(document, "implementation")
    compulsory_column = column_of(document, "compulsory_bytes")
    ratio_column = column_of(document, "traffic_ratio")
    for group, slug in zip(document["groups"], slugs(document)):
        points = {}
        for row in group["rows"]:
            compulsory, ratio = value(row[compulsory_column]), value(row[ratio_column])
            if compulsory is not None and ratio is not None:
                points.setdefault(row[name_column], []).append((compulsory, compulsory * ratio))
        figure, axes = plt.subplots(figsize=(5.0, 4.6))
        axes.set_title(group["title"], fontsize=9)
        axes.set_xlabel("Compulsory HBM bytes, modelled (GB)")
        axes.set_ylabel("Measured or counted HBM bytes (GB)")
        for name, xy in points.items():
            axes.plot(*zip(*sorted(xy)), marker="o", label=name, color=colors.get(name))
        every = [x for xy in points.values() for x, _ in xy]
        if every:
            span = [min(every), max(every)]
            axes.plot(span, span, color="black", linestyle="--", linewidth=0.8, label="compulsory")
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.grid(alpha=0.3)
        legend(axes)
        figures.save(figure, f"io_{slug}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", help="attnbench results files (merged into one view)")
    parser.add_argument("--out", default="plots", help="directory for the figures (default: plots)")
    parser.add_argument("--baseline", help="implementation speedups are relative to (default: the report's)")
    parser.add_argument("--attnbench", default=str(DEFAULT_BINARY),
                        help="the attnbench binary (default: build/harness/attnbench in this checkout)")
    args = parser.parse_args()
    try:
        # Every report first, so bad input draws nothing.
        tables = {name: report(args.attnbench, args.results, name, args.baseline) for name in ("seqlen", "memory", "io")}
        # One colour per implementation in every figure, in the report's order.
        names = [column["implementation"] for column in tables["seqlen"]["columns"] if column["quantity"] == "runtime"]
        colors = {name: f"C{i % 10}" for i, name in enumerate(names)}
        figures = Figures(args.out)
        plot_seqlen(tables["seqlen"], figures, colors)
        plot_memory(tables["memory"], figures, colors)
        plot_io(tables["io"], figures, colors)
    except InputProblem as problem:
        print(f"plot.py: error: {problem}", file=sys.stderr)
        return 2
    for path in figures.written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
