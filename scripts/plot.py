#!/usr/bin/env python3
"""Draws attnbench results as PNG and SVG figures, with an index (docs/reports.md).

    scripts/plot.py RESULTS.json [MORE.json ...] [--out plots] [--baseline NAME]
                    [--attnbench build/harness/attnbench]

The tables come from `attnbench report --format json`, so merging files and
grouping a sweep happen in one place (the C++ report). One figure per view,
with one panel per group of the sweep (one setting of the fields that vary
other than the lengths), written into --out:

    throughput.{png,svg}  throughput (TFLOP/s, or GFLOP/s on slow devices) against
                          the sequence length, bars per implementation
    speedup.{png,svg}     speedup over the baseline against the sequence length
                          (when the report has a baseline)
    memory.{png,svg}      peak memory against the sequence length, log-log
    io.{png,svg}          measured (or counted) and modelled HBM bytes against
                          the compulsory bytes, log-log, with the compulsory line
    index.md              the figures, with their titles

A view with more than 12 groups continues in throughput-2, throughput-3, ...
Titles name the scenario, the device and the parameters every group shares.
Exit status: 0 on success, 2 on bad input (the report's message is shown),
1 when matplotlib is missing.
"""
import argparse
import json
import math
import pathlib
import subprocess
import sys
import textwrap

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker
except ImportError:
    sys.exit("plot.py: the Python package matplotlib is missing: run scripts/setup.sh")

REPORT_SCHEMA = "attnbench.report/1"
DEFAULT_BINARY = pathlib.Path(__file__).resolve().parent.parent / "build" / "harness" / "attnbench"
PANELS_PER_FIGURE = 12
PANEL_SIZE = (4.2, 3.1)  # inches
CHARACTERS_PER_INCH = 14  # of 9-point text, for wrapping titles

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


def column_of(document, key):
    for i, column in enumerate(document["columns"]):
        if column["key"] == key or column["quantity"] == key:
            return i
    raise InputProblem(f"the {document['table']} report has no {key} column")


def series(document, group, quantity):
    """{implementation: [cell per row]} for the columns of one quantity."""
    return {column["implementation"]: [row[i] for row in group["rows"]]
            for i, column in enumerate(document["columns"])
            if column["quantity"] == quantity and "implementation" in column}


def unit_of(document, quantity):
    return next((column["unit"] for column in document["columns"] if column["quantity"] == quantity), "")


# ---- Titles ----

def devices(document):
    names = []
    for source in document["sources"]:
        for name in source["devices"]:
            if name not in names:
                names.append(name)
    return names


def scenarios(document):
    names = [document["common"]["scenario"]] if "scenario" in document.get("common", {}) else []
    for group in document["groups"]:
        name = group["fields"].get("scenario")
        if name is not None and name not in names:
            names.append(name)
    return names


def figure_title(view, document):
    """'<view>: <scenarios> on <devices>' and the fields every group shares."""
    where = ", ".join(scenarios(document)) or "no records"
    on = ", ".join(devices(document)) or "no device"
    fixed = ", ".join(f"{key}={label}" for key, label in document.get("common_labels", {}).items()
                      if key != "scenario")
    return f"{view}: {where} on {on}" + (f"\nfixed: {fixed}" if fixed else "")


def wrapped(title, inches):
    width = max(20, int(inches * CHARACTERS_PER_INCH))
    return "\n".join(textwrap.fill(line, width) for line in title.split("\n"))


def panel_title(group, single):
    """What distinguishes a group (the report's group title: its varying fields), or
    nothing when it is the only one (the figure's title says it all)."""
    return "" if single else group["title"]


# ---- Axes ----

def nice_log_ticks(low, high):
    """Tick positions on a log axis from low to high: decades, or 1-2-5 (then 1-9) steps
    when the span is too short for two decades to show."""
    for mantissas in ((1,), (1, 2, 5), (1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9)):
        ticks = [m * 10.0 ** e for e in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1)
                 for m in mantissas if low <= m * 10.0 ** e <= high]
        if len(ticks) >= 2 and len(ticks) <= 8:
            return ticks
        if len(ticks) > 8:
            return ticks[::math.ceil(len(ticks) / 8)]
    return [low, high]


def log_axis(axes, which, numbers):
    """A log x or y axis around `numbers` with labelled major ticks and no minor labels
    (a single point included)."""
    positive = [n for n in numbers if n is not None and n > 0]
    if not positive:
        return
    low, high = min(positive) / 1.5, max(positive) * 1.5
    ticks = nice_log_ticks(low, high)
    axis = axes.xaxis if which == "x" else axes.yaxis
    (axes.set_xscale if which == "x" else axes.set_yscale)("log")
    (axes.set_xlim if which == "x" else axes.set_ylim)(low, high)
    axis.set_major_locator(ticker.FixedLocator(ticks))
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_locator(ticker.NullLocator())


def length_labels(document, group):
    """The x labels of a sweep group's rows: N, "Nq x Nk" where they differ, and B when it varies."""
    n_column, batch_column = column_of(document, "seqlen"), column_of(document, "batch")
    labels = [text(row[n_column]) for row in group["rows"]]
    batches = [value(row[batch_column]) for row in group["rows"]]
    if len(set(batches)) > 1:
        labels = [f"{label}\nB {batch:g}" for label, batch in zip(labels, batches)]
    return labels


def length_axis_label(document):
    rectangular = any("x" in text(row[column_of(document, "seqlen")])
                      for group in document["groups"] for row in group["rows"])
    return "Sequence length N" + (" (Nq x Nk where they differ)" if rectangular else "")


# ---- Figures ----

class Figures:
    """Saves each figure as PNG and SVG into one directory and lists them in index.md."""

    def __init__(self, directory):
        self.directory = pathlib.Path(directory)
        self.written = []
        self.index = []  # (name, title)

    def save(self, figure, name, title):
        self.directory.mkdir(parents=True, exist_ok=True)
        for extension in ("png", "svg"):
            path = self.directory / f"{name}.{extension}"
            metadata = {"Date": None} if extension == "svg" else {"Software": None}
            figure.savefig(path, dpi=150, metadata=metadata)
            self.written.append(path)
        self.index.append((name, title))
        plt.close(figure)

    def write_index(self, sources):
        lines = ["# attnbench figures", "", "From " + ", ".join(f"`{s}`" for s in sources) + ".", ""]
        for name, title in self.index:
            heading, _, fixed = title.partition("\n")
            lines += [f"## {heading}", ""] + ([fixed, ""] if fixed else [])
            lines += [f"![{heading}]({name}.png) ([SVG]({name}.svg))", ""]
        path = self.directory / "index.md"
        path.write_text("\n".join(lines))
        self.written.append(path)


def pages(groups):
    for start in range(0, len(groups), PANELS_PER_FIGURE):
        yield start // PANELS_PER_FIGURE, groups[start:start + PANELS_PER_FIGURE]


def panel_grid(count, title):
    columns = min(count, 3)
    rows = math.ceil(count / columns)
    width = PANEL_SIZE[0] * columns
    figure, axes = plt.subplots(rows, columns, figsize=(width, PANEL_SIZE[1] * rows + 0.9), squeeze=False,
                                layout="constrained")
    for extra in axes.flat[count:]:
        extra.set_visible(False)
    figure.suptitle(wrapped(title, width), fontsize=9)
    return figure, list(axes.flat[:count])


def figure_legend(figure, panels):
    handles = {}
    for axes in panels:
        for handle, label in zip(*axes.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    if not handles:
        return
    try:
        figure.legend(handles.values(), handles.keys(), loc="outside lower center", ncols=min(len(handles), 4),
                      fontsize=8)
    except ValueError:  # matplotlib before 3.7 (Debian 12's 3.6) places no legend outside the panels
        panels[0].legend(handles.values(), handles.keys(), fontsize=7)


def draw_view(figures, document, view, name, draw):
    """One figure per page of groups, each group in a panel drawn by draw(axes, group)."""
    groups = document["groups"]
    if not groups:
        return
    title = figure_title(view, document)
    for page, chunk in pages(groups):
        figure, panels = panel_grid(len(chunk), title)
        for axes, group in zip(panels, chunk):
            axes.set_title(wrapped(panel_title(group, len(groups) == 1), PANEL_SIZE[0]), fontsize=8)
            draw(axes, group)
        figure_legend(figure, panels)
        figures.save(figure, name if page == 0 else f"{name}-{page + 1}", title)


def grouped_bars(axes, labels, bars, colors):
    """Bars per implementation at each sequence length, each with its value; markers ("OOM") where none."""
    width = 0.8 / max(len(bars), 1)
    for k, (name, cells) in enumerate(bars.items()):
        positions = [i + (k - (len(bars) - 1) / 2) * width for i in range(len(labels))]
        heights = [value(cell) or 0 for cell in cells]
        drawn = axes.bar(positions, heights, width, label=name, color=colors.get(name))
        axes.bar_label(drawn, labels=[f"{value(cell):.3g}" if value(cell) is not None else text(cell)
                                      for cell in cells], fontsize=6, padding=2, rotation=90)
    axes.set_xticks(range(len(labels)), labels)
    axes.margins(y=0.25)
    axes.grid(axis="y", alpha=0.3)


def plot_throughput(figures, document, colors):
    unit = unit_of(document, "throughput")

    def draw(axes, group):
        grouped_bars(axes, length_labels(document, group), series(document, group, "throughput"), colors)
        axes.set_xlabel(length_axis_label(document))
        axes.set_ylabel(unit)

    draw_view(figures, document, f"Throughput ({unit})", "throughput", draw)


def plot_speedup(figures, document, colors):
    baseline = document["baseline"]
    if not baseline or not any(column["quantity"] == "speedup" for column in document["columns"]):
        return

    def draw(axes, group):
        grouped_bars(axes, length_labels(document, group), series(document, group, "speedup"), colors)
        axes.axhline(1.0, color="black", linewidth=0.8)
        axes.set_xlabel(length_axis_label(document))
        axes.set_ylabel(f"Speedup over {baseline}")

    draw_view(figures, document, f"Speedup over {baseline}", "speedup", draw)


def lines_against_length(axes, document, group, cells_by_name, colors):
    """One line per implementation against the sequence length, on log axes."""
    n_column = column_of(document, "seqlen")
    lengths = [value(row[n_column]) for row in group["rows"]]
    labels = length_labels(document, group)
    unique = len(set(lengths)) == len(lengths)
    positions = lengths if unique else list(range(len(lengths)))  # one N for several rows: evenly spaced
    drawn = []
    for name, cells in cells_by_name.items():
        points = [(x, value(cell)) for x, cell in zip(positions, cells) if value(cell) is not None]
        if points:
            axes.plot(*zip(*points), marker="o", label=name, color=colors.get(name))
            drawn += [y for _, y in points]
    if unique:
        log_axis(axes, "x", positions)
        axes.xaxis.set_major_locator(ticker.FixedLocator(positions))
        axes.xaxis.set_major_formatter(ticker.FixedFormatter(labels))
    else:
        axes.set_xticks(positions, labels)
    log_axis(axes, "y", drawn)
    axes.grid(alpha=0.3)


def plot_memory(figures, document, colors):
    unit = unit_of(document, "peak_memory")

    def draw(axes, group):
        lines_against_length(axes, document, group, series(document, group, "peak_memory"), colors)
        axes.set_xlabel(length_axis_label(document))
        axes.set_ylabel(f"Peak memory ({unit})")

    draw_view(figures, document, f"Peak memory ({unit})", "memory", draw)


def plot_io(figures, document, colors):
    unit = unit_of(document, "compulsory_bytes")
    name_column = column_of(document, "implementation")
    compulsory_column = column_of(document, "compulsory_bytes")
    modelled_column = column_of(document, "modelled_bytes")
    traffic_columns = (column_of(document, "measured_bytes"), column_of(document, "counted_bytes"))

    def draw(axes, group):
        moved, modelled = {}, {}
        for row in group["rows"]:
            x = value(row[compulsory_column])
            if x is None:
                continue
            name = row[name_column]
            traffic = next((value(row[c]) for c in traffic_columns if value(row[c]) is not None), None)
            if traffic is not None:
                moved.setdefault(name, []).append((x, traffic))
            if value(row[modelled_column]) is not None:
                modelled.setdefault(name, []).append((x, value(row[modelled_column])))
        compulsory = [x for points in (moved, modelled) for xy in points.values() for x, _ in xy]
        for name, xy in moved.items():
            axes.plot(*zip(*sorted(xy)), marker="o", label=f"{name} measured or counted", color=colors.get(name))
        for name, xy in modelled.items():
            axes.plot(*zip(*sorted(xy)), marker="x", linestyle="--", label=f"{name} modelled",
                      color=colors.get(name))
        log_axis(axes, "x", compulsory)
        log_axis(axes, "y", [y for points in (moved, modelled) for xy in points.values() for _, y in xy] + compulsory)
        if compulsory:  # the floor, y = x, across the whole panel
            span = axes.get_xlim()
            axes.plot(span, span, color="black", linestyle=":", linewidth=0.8, label="compulsory (y = x)")
        axes.set_xlabel(f"Compulsory HBM bytes ({unit})")
        axes.set_ylabel(f"HBM bytes ({unit})")
        axes.grid(alpha=0.3)

    draw_view(figures, document, f"HBM traffic against the compulsory bytes ({unit})", "io", draw)


def draw_all(tables, directory):
    """Every view of the report tables into `directory`; returns the Figures written."""
    # One colour per implementation in every figure, in the report's order.
    names = [column["implementation"] for column in tables["seqlen"]["columns"] if column["quantity"] == "runtime"]
    colors = {name: f"C{i % 10}" for i, name in enumerate(names)}
    figures = Figures(directory)
    plot_throughput(figures, tables["seqlen"], colors)
    plot_speedup(figures, tables["seqlen"], colors)
    plot_memory(figures, tables["memory"], colors)
    plot_io(figures, tables["io"], colors)
    return figures


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
    except InputProblem as problem:
        print(f"plot.py: error: {problem}", file=sys.stderr)
        return 2
    figures = draw_all(tables, args.out)
    figures.write_index(args.results)
    for path in figures.written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
