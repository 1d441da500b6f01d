#!/usr/bin/env python3
"""Draws attnbench results as PNG and SVG figures, with an index (docs/reports.md).

    scripts/plot.py RESULTS.json [MORE.json ...] [--out plots] [--baseline NAME]
                    [--x AXIS] [--with-oracle] [--attnbench build/harness/attnbench]

The tables come from `attnbench report --format json`, so merging files,
grouping a sweep and reading published values happen in one place (the C++
report). One figure per view, with one panel per group of the sweep (one
setting of the fields that vary other than the x axis), written into --out:

    throughput.{png,svg}  throughput (TFLOP/s, or GFLOP/s on slow devices) against
                          the x axis (the sequence length by default), bars per
                          implementation, published values as reference marks
    runtime.{png,svg}     median runtime against the x axis, log-log, with the
                          published runtimes as reference marks
    speedup.{png,svg}     speedup over the baseline (when the report has a baseline)
    memory.{png,svg}      peak memory, log-log; planned amounts (run --memory-only)
                          hollow and dotted, published ones as reference marks
    io.{png,svg}          measured (or counted) and modelled HBM bytes against
                          the compulsory bytes, log-log, with the compulsory line
    roofline.{png,svg}    achieved FLOP/s against FLOPs per byte under the device's
                          compute and bandwidth ceilings, one panel per device
    index.md              the figures, with their titles and the roofline's note

--x names what the x axis shows (seqlen, batch, block, or a problem field such
as block_q): a sweep over it is one panel instead of one per value. The fp64
oracle (cpu.reference) is left out unless --with-oracle. A view with more than
12 groups continues in throughput-2, throughput-3, ... Titles name the
scenario, the device and the parameters every group shares (those that differ
from a scenario's defaults). Exit status: 0 on success, 2 on bad input (the
report's message is shown), 1 when matplotlib is missing.
"""
import argparse
import json
import math
import pathlib
import statistics
import subprocess
import sys
import textwrap

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker
    from matplotlib.lines import Line2D
except ImportError:
    sys.exit("plot.py: the Python package matplotlib is missing: run scripts/setup.sh")

REPORT_SCHEMA = "attnbench.report/1"
DEFAULT_BINARY = pathlib.Path(__file__).resolve().parent.parent / "build" / "harness" / "attnbench"
TABLES = ("seqlen", "memory", "io", "roofline")
PANELS_PER_FIGURE = 12
PANEL_SIZE = (4.2, 3.1)  # inches
SINGLE_PANEL_WIDTH = 6.0  # inches: room for a title and a legend beside one panel
CHARACTERS_PER_INCH = 14  # of 9-point text, for wrapping titles
LEGEND_COLUMNS = 4  # at most, fewer when they would not fit the figure's width
# Published values: hollow marks, one marker shape per series (by its label), in
# the colour of its counterpart (black when that did not run here).
PUBLISHED_MARKERS = ("D", "s", "^", "v", "P", "X", "*", "h")
PUBLISHED_STYLE = {"fillstyle": "none", "linestyle": "none", "markersize": 6}

# Editable SVG text (so the names can be found and changed) and stable ids.
matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "attnbench", "font.size": 9})


class InputProblem(Exception):
    """Bad input: reported with exit status 2."""


def report(binary, results, table, baseline, x_axis="seqlen", with_oracle=False):
    """Runs `attnbench report --format json` and returns the parsed table."""
    command = [str(binary), "report", *results, "--table", table, "--format", "json", "--x", x_axis]
    if baseline:
        command += ["--baseline", baseline]
    if with_oracle:
        command.append("--with-oracle")
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


def planned(cell):
    """Whether a cell holds a planned amount (the arena plan of a call that was not run)."""
    return isinstance(cell, dict) and cell.get("source") == "planned"


def text(cell):
    """What a cell says: a label, a marker, or the number itself."""
    if isinstance(cell, dict):
        if "label" in cell or "marker" in cell:
            return cell.get("label") or cell.get("marker", "")
        return f"{cell.get('value'):g}" if cell.get("value") is not None else ""
    if isinstance(cell, float):
        return f"{cell:g}"
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


def published_series(document, group, quantity):
    """[(reference, [cell per row])] for the published columns of one quantity."""
    return [(column["reference"], [row[i] for row in group["rows"]])
            for i, column in enumerate(document["columns"]) if column["quantity"] == "published_" + quantity]


def published_label(reference):
    device = f" ({reference['device']})" if reference.get("device") else ""
    return f"{reference['label']}{device}, published"


class PublishedStyles:
    """A marker shape per published series (one per label, in order of appearance) and
    its counterpart's colour, the same in every figure."""

    def __init__(self, colors):
        self.colors = colors
        self.markers = {}

    def __call__(self, reference):
        label = published_label(reference)
        marker = self.markers.setdefault(label, PUBLISHED_MARKERS[len(self.markers) % len(PUBLISHED_MARKERS)])
        return {**PUBLISHED_STYLE, "marker": marker, "color": self.colors.get(reference.get("counterpart"), "black")}


def is_oom(cell):
    return isinstance(cell, dict) and cell.get("marker") == "OOM"


def draw_published(axes, published, positions, styles, drawn):
    """Each published series' values as hollow marks at `positions` (appending the
    values to `drawn`); where the publication ran out of memory, its marker at the
    panel's top with "OOM", as the paper prints it. Returns the OOM positions drawn."""
    for reference, cells in published:
        style = styles(reference)
        points = [(x, value(cell)) for x, cell in zip(positions, cells) if value(cell) is not None]
        if points:
            axes.plot(*zip(*points), label=published_label(reference), **style)
            drawn += [y for _, y in points]
        out_of_memory = [x for x, cell in zip(positions, cells) if is_oom(cell)]
        if not out_of_memory:
            continue
        if not points:  # its legend entry all the same
            axes.plot([], [], label=published_label(reference), **style)
        top = axes.get_xaxis_transform()  # x in data, y in the panel's fraction
        for x in out_of_memory:
            axes.plot([x], [0.93], transform=top, clip_on=False, **style)
            axes.annotate("OOM", (x, 0.93), xycoords=top, xytext=(0, -4), textcoords="offset points", ha="center",
                          va="top", fontsize=6, color=style["color"])


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
    """'<view>: <scenarios> on <what ran>' (the CPU and its threads, a GPU's name, the
    simulator's model, or a device that only planned its memory) and the fields every
    group shares that differ from a scenario's defaults (the report's notes list them all)."""
    where = ", ".join(scenarios(document)) or "no records"
    on = ", ".join(document.get("ran_on") or devices(document)) or "no records"
    labels = document.get("title_labels", document.get("common_labels", {}))
    fixed = ", ".join(f"{key}={label}" for key, label in labels.items() if key != "scenario")
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


def x_axis_of(document):
    return document.get("x_axis", "seqlen")


def x_labels(document, group):
    """The x labels of a sweep group's rows: the x value (N, "Nq x Nk" where they differ),
    with N and B where they vary along it."""
    axis = x_axis_of(document)
    n_column, batch_column = column_of(document, "seqlen"), column_of(document, "batch")
    lengths = [text(row[n_column]) for row in group["rows"]]
    batches = [value(row[batch_column]) for row in group["rows"]]
    if axis == "seqlen":
        labels = lengths
    else:
        labels = [text(row[0]) for row in group["rows"]]
        if axis != "batch" and len(set(lengths)) > 1:
            labels = [f"{label}\nN {length}" for label, length in zip(labels, lengths)]
    if axis != "batch" and len(set(batches)) > 1:
        labels = [f"{label}\nB {batch:g}" for label, batch in zip(labels, batches)]
    return labels


def x_positions(document, group):
    """Numbers to place the rows at on a log axis, or None when the x values are not
    distinct positive numbers (then the rows are evenly spaced)."""
    column = column_of(document, "seqlen") if x_axis_of(document) == "seqlen" else 0
    numbers = [value(row[column]) for row in group["rows"]]
    if any(n is None or n <= 0 for n in numbers) or len(set(numbers)) != len(numbers):
        return None
    return numbers


def x_axis_label(document):
    axis = x_axis_of(document)
    if axis == "seqlen":
        rectangular = any("x" in text(row[column_of(document, "seqlen")])
                          for group in document["groups"] for row in group["rows"])
        return "Sequence length N" + (" (Nq x Nk where they differ)" if rectangular else "")
    return {"batch": "Batch B", "block": "Block size (block_q x block_k)"}.get(axis, axis)


# ---- Figures ----

class Figures:
    """Saves each figure as PNG and SVG into one directory and lists them in index.md."""

    def __init__(self, directory):
        self.directory = pathlib.Path(directory)
        self.written = []
        self.index = []  # (name, title, note)

    def save(self, figure, name, title, note=""):
        self.directory.mkdir(parents=True, exist_ok=True)
        for extension in ("png", "svg"):
            path = self.directory / f"{name}.{extension}"
            metadata = {"Date": None} if extension == "svg" else {"Software": None}
            figure.savefig(path, dpi=150, metadata=metadata)
            self.written.append(path)
        self.index.append((name, title, note))
        plt.close(figure)

    def write_index(self, sources):
        lines = ["# attnbench figures", "", "From " + ", ".join(f"`{s}`" for s in sources) + ".", ""]
        for name, title, note in self.index:
            heading, _, fixed = title.partition("\n")
            lines += [f"## {heading}", ""] + ([fixed, ""] if fixed else [])
            lines += [f"![{heading}]({name}.png) ([SVG]({name}.svg))", ""]
            if note:
                lines += [note, ""]
        path = self.directory / "index.md"
        path.write_text("\n".join(lines))
        self.written.append(path)


def pages(groups):
    for start in range(0, len(groups), PANELS_PER_FIGURE):
        yield start // PANELS_PER_FIGURE, groups[start:start + PANELS_PER_FIGURE]


def panel_grid(count, title):
    columns = min(count, 3)
    rows = math.ceil(count / columns)
    width = max(PANEL_SIZE[0] * columns, SINGLE_PANEL_WIDTH)
    figure, axes = plt.subplots(rows, columns, figsize=(width, PANEL_SIZE[1] * rows + 0.9), squeeze=False,
                                layout="constrained")
    for extra in axes.flat[count:]:
        extra.set_visible(False)
    figure.suptitle(wrapped(title, width), fontsize=9)
    return figure, list(axes.flat[:count])


def fits(figure, artist):
    """Whether an artist lies within the figure once the layout is done."""
    figure.canvas.draw()
    box, whole = artist.get_window_extent(figure.canvas.get_renderer()), figure.bbox
    return box.x0 >= whole.x0 - 0.5 and box.x1 <= whole.x1 + 0.5 and box.y0 >= whole.y0 - 0.5


def figure_legend(figure, panels, extra=()):
    """One legend for the figure, under the panels, in as many columns (at most
    LEGEND_COLUMNS) as fit the figure's width; `extra` adds (handle, label) pairs."""
    handles = {}
    for axes in panels:
        for handle, label in zip(*axes.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    for handle, label in extra:
        handles.setdefault(label, handle)
    if not handles:
        return
    for columns in range(min(len(handles), LEGEND_COLUMNS), 0, -1):
        try:
            legend = figure.legend(handles.values(), handles.keys(), loc="outside lower center", ncols=columns,
                                   fontsize=8)
        except ValueError:  # matplotlib before 3.7 (Debian 12's 3.6) places no legend outside the panels
            legend = panels[0].legend(handles.values(), handles.keys(), fontsize=7, ncols=1)
            return
        if columns == 1 or fits(figure, legend):
            return
        legend.remove()


def has_numbers(document, quantity):
    """Whether any cell of the quantity's columns (ours or published) holds a number: a
    run without timing (--memory-only) has no throughput to draw."""
    columns = [i for i, column in enumerate(document["columns"])
               if column["quantity"] in (quantity, "published_" + quantity)]
    return any(value(row[i]) is not None for group in document["groups"] for row in group["rows"] for i in columns)


def draw_view(figures, document, view, name, draw, extra_legend=(), note="", quantity=None):
    """One figure per page of groups, each group in a panel drawn by draw(axes, group);
    none when the view's quantity has no number at all."""
    groups = document["groups"]
    if not groups or (quantity and not has_numbers(document, quantity)):
        return
    title = figure_title(view, document)
    for page, chunk in pages(groups):
        figure, panels = panel_grid(len(chunk), title)
        for axes, group in zip(panels, chunk):
            axes.set_title(wrapped(panel_title(group, len(groups) == 1), PANEL_SIZE[0]), fontsize=8)
            draw(axes, group)
        figure_legend(figure, panels, extra_legend)
        figures.save(figure, name if page == 0 else f"{name}-{page + 1}", title, note)


def value_labels(axes, drawn, cells, floor=None):
    """Each bar's value (its marker, "OOM", where it has none) above it, rotated; above
    `floor` too where the bar ends below it, so that no label crosses a reference line
    drawn there (the speedup's 1)."""
    for bar, cell in zip(drawn, cells):
        top = bar.get_height() if floor is None else max(bar.get_height(), floor)
        label = f"{value(cell):.3g}" if value(cell) is not None else text(cell)
        axes.annotate(label, (bar.get_x() + bar.get_width() / 2, top), xytext=(0, 3), textcoords="offset points",
                      ha="center", va="bottom", rotation=90, fontsize=6)


def grouped_bars(axes, labels, bars, colors, floor=None, published=(), styles=None):
    """Bars per implementation at each x value, each with its value; published values
    of a bar's implementation (its counterpart) as marks on it."""
    width = 0.8 / max(len(bars), 1)
    offsets = {name: (k - (len(bars) - 1) / 2) * width for k, name in enumerate(bars)}
    for name, cells in bars.items():
        positions = [i + offsets[name] for i in range(len(labels))]
        heights = [value(cell) or 0 for cell in cells]
        drawn = axes.bar(positions, heights, width, label=name, color=colors.get(name))
        value_labels(axes, drawn, cells, floor)
    axes.set_xticks(range(len(labels)), labels)
    axes.margins(y=0.25)
    for reference, cells in published:
        offset = offsets.get(reference.get("counterpart"), 0.0)
        draw_published(axes, [(reference, cells)], [i + offset for i in range(len(cells))], styles, [])
    axes.grid(axis="y", alpha=0.3)


def plot_throughput(figures, document, colors, styles):
    unit = unit_of(document, "throughput")

    def draw(axes, group):
        grouped_bars(axes, x_labels(document, group), series(document, group, "throughput"), colors,
                     published=published_series(document, group, "throughput"), styles=styles)
        axes.set_xlabel(x_axis_label(document))
        axes.set_ylabel(unit)

    draw_view(figures, document, f"Throughput ({unit})", "throughput", draw, quantity="throughput")


def plot_speedup(figures, document, colors):
    baseline = document["baseline"]
    if not baseline or not any(column["quantity"] == "speedup" for column in document["columns"]):
        return

    def draw(axes, group):
        axes.axhline(1.0, color="black", linewidth=0.8)
        grouped_bars(axes, x_labels(document, group), series(document, group, "speedup"), colors, floor=1.0)
        axes.set_xlabel(x_axis_label(document))
        axes.set_ylabel(f"Speedup over {baseline}")

    draw_view(figures, document, f"Speedup over {baseline}", "speedup", draw, quantity="speedup")


def lines_against_x(axes, document, group, cells_by_name, colors, published=(), styles=None, styles_of=None):
    """One line per implementation against the x axis, on log axes (evenly spaced x when
    the x values are not distinct numbers); planned amounts hollow and dotted, published
    values as reference marks. `styles_of(name)` gives a series' label and line style
    (default: its name, solid with dots). Returns the y values drawn."""
    labels = x_labels(document, group)
    numbers = x_positions(document, group)
    positions = numbers if numbers else list(range(len(labels)))
    drawn = []
    for name, cells in cells_by_name.items():
        points = [(x, value(cell), planned(cell)) for x, cell in zip(positions, cells) if value(cell) is not None]
        if not points:
            continue
        label, style = styles_of(name) if styles_of else (name, {"color": colors.get(name), "marker": "o"})
        axes.plot([x for x, _, _ in points], [y for _, y, _ in points], label=label,
                  markevery=[i for i, (_, _, p) in enumerate(points) if not p], **style)
        hollow = [(x, y) for x, y, p in points if p]
        if hollow:
            axes.plot(*zip(*hollow), marker="o", fillstyle="none", linestyle="none", color=style["color"])
        drawn += [y for _, y, _ in points]
    if published:
        draw_published(axes, published, positions, styles, drawn)
    if numbers:
        log_axis(axes, "x", positions)
        axes.xaxis.set_major_locator(ticker.FixedLocator(positions))
        axes.xaxis.set_major_formatter(ticker.FixedFormatter(labels))
    else:
        axes.set_xticks(positions, labels)
    log_axis(axes, "y", drawn)
    axes.grid(alpha=0.3)
    return drawn


def plot_runtime(figures, document, colors, styles):
    def draw(axes, group):
        lines_against_x(axes, document, group, series(document, group, "runtime"), colors,
                        published_series(document, group, "runtime"), styles)
        axes.set_xlabel(x_axis_label(document))
        axes.set_ylabel("Runtime (ms)")

    draw_view(figures, document, "Runtime (ms, median)", "runtime", draw, quantity="runtime")


def plot_memory(figures, document, colors, styles):
    unit = unit_of(document, "peak_memory")
    any_planned = any(planned(cell) for group in document["groups"] for row in group["rows"] for cell in row)
    extra = [(Line2D([], [], color="gray", marker="o", fillstyle="none", linestyle="none"),
              "hollow: planned (arena plan, not run)")] if any_planned else []

    def draw(axes, group):
        lines_against_x(axes, document, group, series(document, group, "peak_memory"), colors,
                        published_series(document, group, "peak_memory"), styles)
        axes.set_xlabel(x_axis_label(document))
        axes.set_ylabel(f"Peak memory ({unit})")

    draw_view(figures, document, f"Peak memory ({unit})", "memory", draw, extra, quantity="peak_memory")


def traffic_words(document):
    """What the io figure's bytes are: HBM bytes where a profiler measured them, the
    bytes a CPU tiled implementation moved between its arrays and tiles where it
    counted them (no HBM on a CPU), both where the sources mix; modelled HBM bytes
    where nothing was measured or counted."""
    source_column = column_of(document, "hbm_source")
    sources = {row[source_column] for group in document["groups"] for row in group["rows"]} & {"measured", "counted"}
    if not sources:  # only the implementations' models (a --memory-only run of a GPU's implementations)
        return "Modelled HBM bytes", "measured"
    if sources == {"measured"}:
        return "HBM bytes", "measured"
    if sources == {"counted"}:
        return "Bytes between arrays and tiles", "counted"
    return "Bytes (HBM measured, or counted between arrays and tiles)", "measured or counted"


def plot_io(figures, document, colors):
    """Moved bytes (measured, else counted; solid) and modelled bytes (dashed, drawn over
    the moved ones, which are wider and paler so that both show where they agree):
    against the compulsory bytes (log-log, with y = x) when the x axis is the sequence
    length, else against the x axis (--x block: the FlashAttention paper's Figure 2
    middle), with the compulsory bytes as a dotted line."""
    unit = unit_of(document, "compulsory_bytes")
    name_column = column_of(document, "implementation")
    compulsory_column = column_of(document, "compulsory_bytes")
    modelled_column = column_of(document, "modelled_bytes")
    traffic_columns = (column_of(document, "measured_bytes"), column_of(document, "counted_bytes"))
    words, source = traffic_words(document)
    against_compulsory = x_axis_of(document) == "seqlen"
    moved_style = {"linewidth": 3.5, "alpha": 0.45, "marker": "o", "markersize": 7, "zorder": 2}
    modelled_style = {"linewidth": 1.2, "linestyle": "--", "marker": "x", "zorder": 3}

    def moved_bytes(row):
        return next((value(row[c]) for c in traffic_columns if value(row[c]) is not None), None)

    def draw_against_compulsory(axes, group):
        moved, modelled = {}, {}
        for row in group["rows"]:
            x = value(row[compulsory_column])
            if x is None:
                continue
            name = row[name_column]
            if moved_bytes(row) is not None:
                moved.setdefault(name, []).append((x, moved_bytes(row)))
            if value(row[modelled_column]) is not None:
                modelled.setdefault(name, []).append((x, value(row[modelled_column])))
        compulsory = [x for points in (moved, modelled) for xy in points.values() for x, _ in xy]
        for name, xy in moved.items():
            axes.plot(*zip(*sorted(xy)), label=f"{name} {source}", color=colors.get(name), **moved_style)
        for name, xy in modelled.items():
            axes.plot(*zip(*sorted(xy)), label=f"{name} modelled", color=colors.get(name), **modelled_style)
        log_axis(axes, "x", compulsory)
        log_axis(axes, "y", [y for points in (moved, modelled) for xy in points.values() for _, y in xy] + compulsory)
        if compulsory:  # the floor, y = x, across the whole panel
            span = axes.get_xlim()
            axes.plot(span, span, color="black", linestyle=":", linewidth=0.8, label="compulsory (y = x)")
        axes.set_xlabel(f"Compulsory bytes ({unit})")
        axes.grid(alpha=0.3)

    def draw_against_x(axes, group):
        # One column per series: (implementation, kind) -> a cell per row, the x axis's rows
        # in the group (several implementations share a row's x value).
        rows = group["rows"]
        keys = list(dict.fromkeys(tuple(text(cell) for cell in row[:name_column]) for row in rows))
        row_group = {"rows": [next(row for row in rows if tuple(text(c) for c in row[:name_column]) == key)
                              for key in keys]}
        cells = {}
        for row in rows:
            at = keys.index(tuple(text(cell) for cell in row[:name_column]))
            name = row[name_column]
            for kind, amount in (("moved", moved_bytes(row)), ("modelled", value(row[modelled_column])),
                                 ("compulsory", value(row[compulsory_column]))):
                cells.setdefault((name, kind), [None] * len(keys))[at] = amount
        compulsory = [None] * len(keys)
        for (name, kind), amounts in cells.items():
            if kind == "compulsory":
                compulsory = [c if c is not None else a for c, a in zip(compulsory, amounts)]
        series_cells = {key: amounts for key, amounts in cells.items() if key[1] != "compulsory"}
        series_cells = dict(sorted(series_cells.items(), key=lambda item: item[0][1] == "modelled"))
        series_cells[("compulsory", "compulsory")] = compulsory

        def style_of(key):
            name, kind = key
            if kind == "compulsory":
                return "compulsory", {"color": "black", "linestyle": ":", "linewidth": 0.8, "marker": "none"}
            style = moved_style if kind == "moved" else modelled_style
            return f"{name} {source if kind == 'moved' else 'modelled'}", {"color": colors.get(name), **style}

        lines_against_x(axes, document, row_group, series_cells, colors, styles_of=style_of)
        axes.set_xlabel(x_axis_label(document))

    def draw(axes, group):
        (draw_against_compulsory if against_compulsory else draw_against_x)(axes, group)
        axes.set_ylabel(f"{words} ({unit})")

    against = "the compulsory bytes" if against_compulsory else x_axis_label(document).lower()
    draw_view(figures, document, f"{words} against {against} ({unit})", "io", draw)


# ---- The roofline ----

BYTES_MARKERS = {"measured": "o", "counted": "s", "modelled": "^"}


def roofline_points(document):
    """Per device: [dict(implementation, algorithm, intensity, achieved, roof, bound, source, case)]."""
    columns = {key: column_of(document, key) for key in
               ("implementation", "device", "intensity", "achieved", "roof", "bound", "bytes_source", "algorithm")}
    n_column = column_of(document, "seqlen")
    by_device = {}
    for group in document["groups"]:
        for row in group["rows"]:
            point = {key: row[i] for key, i in columns.items()}
            if value(point["intensity"]) is None or value(point["achieved"]) is None:
                continue
            point["case"] = (group["title"], text(row[0]), text(row[n_column]))
            by_device.setdefault(point["device"], []).append(point)
    return by_device


def roofline_note(document, by_device, unit):
    """Where the points fall, and which do not fall where the IO argument predicts: a
    fused implementation moves fewer bytes than a materializing one (its point lies to
    the right), which makes it faster where memory bounds both (left of the ridge) and
    says nothing where compute does."""
    lines = ["Where the points fall (achieved " + unit + "; marker shape: the bytes' source, circle measured, "
             "square counted, triangle modelled):"]
    ceilings = {c["kind"]: c for c in document.get("ceilings", [])}
    for device, points in by_device.items():
        ceiling = ceilings.get(device)
        if ceiling is None:
            lines.append(f"- {device}: no ceilings (a host without a calibration: `attnbench run --calibrate`; "
                         "or a GPU model without published peaks).")
        else:
            bound = [p["bound"] for p in points]
            unplaced = len(points) - bound.count("compute") - bound.count("memory")
            lines.append(f"- {device} ({ceiling['device']}): ridge at {ceiling['ridge_flop_per_byte']:.2g} "
                         f"FLOP/byte; {bound.count('compute')} of {len(points)} points right of it (compute-bound), "
                         f"{bound.count('memory')} left of it (memory-bound)"
                         + (f", {unplaced} from a results file without ceilings" if unplaced else "")
                         + f". Ceilings: {ceiling['source']}.")
            for name in dict.fromkeys(p["implementation"] for p in points):
                fractions = [value(p["achieved"]) / value(p["roof"])
                             for p in points if p["implementation"] == name and value(p["roof"])]
                if fractions:
                    lines.append(f"  - {name}: median {100 * statistics.median(fractions):.0f}% of the roof.")
            above = [p for p in points if value(p["roof"]) and value(p["achieved"]) > value(p["roof"])]
            if above:
                lines.append(f"  - Contradiction: {len(above)} point(s) lie above the roof "
                             f"({', '.join(sorted({p['implementation'] for p in above}))}), so the roof is drawn "
                             "dashed, as a lower bound: "
                             + ("a calibrated ceiling is a measured rate, not a limit (recalibrate on an idle machine: "
                                "`attnbench run --calibrate`), and counted bytes on a CPU are tile traffic that the "
                                "caches serve faster than the copy bandwidth." if device == "cpu" else
                                "the published peaks are below what ran; check the device's model and clocks."))
        cases = {}
        for p in points:
            cases.setdefault(p["case"], []).append(p)
        pairs = [(f, s) for members in cases.values() for f in members if f["algorithm"] == "fused"
                 for s in members if s["algorithm"] == "standard"]
        more_bytes = [(f, s) for f, s in pairs if value(f["intensity"]) <= value(s["intensity"])]
        memory_bound = [(f, s) for f, s in pairs if (f, s) not in more_bytes and "memory" in (f["bound"], s["bound"])]
        compute_bound = [(f, s) for f, s in pairs if (f, s) not in more_bytes and (f, s) not in memory_bound]
        for f, s in more_bytes:
            lines.append(f"  - Not as predicted: {f['implementation']} moves no fewer bytes than "
                         f"{s['implementation']} at {', '.join(x for x in f['case'] if x)} (its tiles re-read more "
                         "than the materializing intermediates cost at this size).")
        for f, s in memory_bound:
            if value(f["achieved"]) <= value(s["achieved"]):
                lines.append(f"  - Not as predicted: {f['implementation']} moves fewer bytes than "
                             f"{s['implementation']} at {', '.join(x for x in f['case'] if x)} and memory bounds it, "
                             "yet it is not faster (its extra work, or caches absorbing the materializing traffic).")
        if memory_bound and all(value(f["achieved"]) > value(s["achieved"]) for f, s in memory_bound):
            lines.append(f"  - In all {len(memory_bound)} memory-bound case(s) the fused implementation moves fewer "
                         "bytes and is faster, as the IO argument predicts.")
        if compute_bound:
            ratios = [value(f["achieved"]) / value(s["achieved"]) for f, s in compute_bound]
            lines.append(f"  - In {len(compute_bound)} case(s) both lie right of the ridge: compute, not memory "
                         "traffic, sets their time, so the IO argument predicts no gain from the fused "
                         f"implementation's fewer bytes; its FLOP/s are {min(ratios):.2g}-{max(ratios):.2g}x the "
                         "materializing one's there, which the roofline does not explain: it comes from how each "
                         "computes, or from memory levels a single bandwidth does not show (on a CPU the counted "
                         "bytes are traffic between arrays and tiles, much of it in the caches).")
    return "\n".join(lines)


def plot_roofline(figures, document, colors):
    unit = unit_of(document, "throughput")
    scale = {"TFLOP/s": 1e12, "GFLOP/s": 1e9, "MFLOP/s": 1e6}.get(unit, 1.0)
    by_device = roofline_points(document)
    if not by_device:
        return
    ceilings = {c["kind"]: c for c in document.get("ceilings", [])}
    title = figure_title(f"Roofline ({unit} against FLOP/byte)", document)
    figure, panels = panel_grid(len(by_device), title)
    for axes, (device, points) in zip(panels, by_device.items()):
        axes.set_title(device if len(by_device) > 1 else "", fontsize=8)
        xs = [value(p["intensity"]) for p in points]
        ys = [value(p["achieved"]) for p in points]
        ceiling = ceilings.get(device)
        if ceiling:
            peak = ceiling["flops_per_second"] / scale
            bandwidth = ceiling["bytes_per_second"] / scale
            ridge = ceiling["ridge_flop_per_byte"]
            xs_all = xs + [ridge]
            low, high = min(xs_all) / 3, max(xs_all) * 3
            if ceiling.get("lower_bound"):  # measured points above it: no limit, and the figure says so
                axes.plot([low, ridge, high], [bandwidth * low, peak, peak], color="black", linewidth=1,
                          linestyle="--", label=f"ceilings, a lower bound: {ceiling['points_above']} point(s) "
                                                "above (see the note)")
            else:
                axes.plot([low, ridge, high], [bandwidth * low, peak, peak], color="black", linewidth=1,
                          label="ceilings (compute, bandwidth)")

            ys = ys + [peak, bandwidth * low]
        for name in dict.fromkeys(p["implementation"] for p in points):
            for source, marker in BYTES_MARKERS.items():
                mine = [p for p in points if p["implementation"] == name and p["bytes_source"] == source]
                if mine:
                    axes.plot([value(p["intensity"]) for p in mine], [value(p["achieved"]) for p in mine],
                              marker=marker, linestyle="none", color=colors.get(name), label=name)
        log_axis(axes, "x", xs + ([ceiling["ridge_flop_per_byte"]] if ceiling else []))
        log_axis(axes, "y", ys)
        if ceiling:  # the compute ceiling's value, at the panel's right edge
            axes.annotate(f"{ceiling['flops_per_second'] / scale:.3g} {unit}",
                          (axes.get_xlim()[1], ceiling["flops_per_second"] / scale), xytext=(-3, 3),
                          textcoords="offset points", ha="right", va="bottom", fontsize=7)
        axes.set_xlabel("Arithmetic intensity (FLOP/byte)")
        axes.set_ylabel(f"Achieved {unit}")
        axes.grid(alpha=0.3)
    figure_legend(figure, panels)
    figures.save(figure, "roofline", title, roofline_note(document, by_device, unit))


def draw_all(tables, directory):
    """Every view of the report tables into `directory`; returns the Figures written."""
    # One colour per implementation in every figure, in the report's order.
    names = [column["implementation"] for column in tables["seqlen"]["columns"] if column["quantity"] == "runtime"]
    colors = {name: f"C{i % 10}" for i, name in enumerate(names)}
    styles = PublishedStyles(colors)
    figures = Figures(directory)
    plot_throughput(figures, tables["seqlen"], colors, styles)
    plot_runtime(figures, tables["seqlen"], colors, styles)
    plot_speedup(figures, tables["seqlen"], colors)
    plot_memory(figures, tables["memory"], colors, styles)
    plot_io(figures, tables["io"], colors)
    plot_roofline(figures, tables["roofline"], colors)
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", help="attnbench results files (merged into one view)")
    parser.add_argument("--out", default="plots", help="directory for the figures (default: plots)")
    parser.add_argument("--baseline", help="implementation speedups are relative to (default: the report's)")
    parser.add_argument("--x", default="seqlen", dest="x_axis",
                        help="the x axis: seqlen (default), batch, block or a problem field (attnbench report --x)")
    parser.add_argument("--with-oracle", action="store_true", help="draw the fp64 oracle (cpu.reference) too")
    parser.add_argument("--attnbench", default=str(DEFAULT_BINARY),
                        help="the attnbench binary (default: build/harness/attnbench in this checkout)")
    args = parser.parse_args()
    try:
        # Every report first, so bad input draws nothing.
        tables = {name: report(args.attnbench, args.results, name, args.baseline, args.x_axis, args.with_oracle)
                  for name in TABLES}
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
