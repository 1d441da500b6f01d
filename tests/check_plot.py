#!/usr/bin/env python3
"""Checks scripts/plot.py end to end on CPU results, and what its figures show.

Runs the binary on three tiny scenarios (a sweep of three lengths, causal off
and on, with the host calibrated and a published value; one case with Nq !=
Nk; a sweep of block sizes), then:

- plot.py on the first two results files: throughput, runtime, speedup, memory,
  io and roofline as PNG and SVG, and index.md listing them with the
  roofline's note; short file names; nothing else written;
- the figures themselves, drawn by plot.py's own functions and inspected with
  matplotlib at the size they are saved: one figure per view with one panel
  per group (the roofline: one per device); nothing clipped (the title, the
  legend, every panel's title, labels, tick labels and value labels inside the
  figure); titles that name the scenarios, the device and the fixed parameters
  (not the defaults); axis labels; labelled y ticks on every panel (single
  points included); the "Nq x Nk" label of the rectangular case; no minor tick
  labels and no overlapping tick labels; the expected series (each
  implementation; measured and modelled bytes and the compulsory line in io;
  no speedup of the baseline over itself; the published value as a reference
  mark; no cpu.reference); no speedup label across the line at 1;
- a sweep of block sizes with --x block (Figure 2 middle): one panel, the block
  sizes on x in every figure, io's counted and modelled bytes both visible;
- published series: a marker each, the publication's OOM drawn;
- planned memory (run --memory-only) drawn hollow, with its legend entry, and a
  GPU's planned memory titled as planned, not "on no device";
- a roof below measured points drawn dashed as a lower bound, the note naming it;
- bad input: plot.py fails naming the file and writes nothing.
"""
import argparse
import importlib.util
import itertools
import json
import pathlib
import subprocess
import sys
import tempfile

import attnbench_testing

attnbench_testing.require_module("matplotlib")  # plot.py needs it

MEASURE = {"cache": "hot", "warmup_min_iterations": 1, "warmup_min_seconds": 0, "min_samples": 3,
           "max_samples": 3, "min_seconds": 0, "max_seconds": 0.05}
PUBLISHED = {"label": "Paper", "device": "X1", "source": "a test", "counterpart": "cpu.flash",
             "quantity": "throughput", "unit": "GFLOP/s", "values": [{"where": {"seqlen": 64, "causal": False},
                                                                     "value": 1.5}]}
# A second published series, of the other implementation, that ran out of memory
# at N 128 in its publication, and the first series' runtimes: two series in one
# figure, each with its own marker, the OOM drawn as the paper prints it.
PUBLISHED_RUNTIME = {**PUBLISHED, "quantity": "runtime", "unit": "ms",
                     "values": [{"where": {"seqlen": 64, "causal": False}, "value": 0.02}]}
OTHER = {"label": "Other", "device": "X1", "source": "a test", "counterpart": "cpu.standard", "quantity": "runtime",
         "unit": "ms", "values": [{"where": {"seqlen": 64, "causal": False}, "value": 0.03},
                                  {"where": {"seqlen": 128, "causal": False}, "value": "OOM"}]}
OTHER_LABEL = "Other (X1), published"
SWEEP = {
    "name": "plot_sweep", "description": "tiny sweep for the plot check",
    "defaults": {"batch": 1, "heads": 2, "head_dim": 16},
    "sweep": {"seqlen": [32, 64, 128], "causal": [False, True]},
    "implementations": ["cpu.flash", "cpu.standard", "cpu.reference"], "measure": MEASURE,
    "published": [PUBLISHED, PUBLISHED_RUNTIME, OTHER],
}
RECTANGLE = {
    "name": "plot_rect", "description": "one case with Nq != Nk",
    "defaults": {"batch": 1, "heads": 2, "head_dim": 16, "seqlen_q": 40, "seqlen_k": 24},
    "implementations": ["cpu.flash", "cpu.standard"], "measure": MEASURE,
}
BLOCKS = {
    "name": "plot_blocks", "description": "a sweep of block sizes",
    "defaults": {"batch": 1, "heads": 2, "head_dim": 16, "seqlen": 64},
    "cases": [{"block_q": 16, "block_k": 16}, {"block_q": 32, "block_k": 32}, {"block_q": 64, "block_k": 64}],
    "implementations": ["cpu.flash"], "measure": MEASURE,
}
VIEWS = ("throughput", "runtime", "speedup", "memory", "io", "roofline")
Y_LABELS = {"throughput": "FLOP/s", "runtime": "Runtime (ms)", "speedup": "Speedup over cpu.standard",
            "memory": "Peak memory", "io": "Bytes between arrays and tiles (", "roofline": "Achieved"}
PUBLISHED_LABEL = "Paper (X1), published"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def load_plot_module(source_dir):
    spec = importlib.util.spec_from_file_location("plot", source_dir / "scripts" / "plot.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_files(plot, binary, results, out):
    drawn = subprocess.run([sys.executable, str(plot), *map(str, results), "--attnbench", binary, "--out", str(out)],
                           capture_output=True, text=True)
    assert drawn.returncode == 0, drawn.stderr
    expected = {f"{view}.{extension}" for view in VIEWS for extension in ("png", "svg")} | {"index.md"}
    written = {path.name for path in out.iterdir()}
    assert written == expected, f"missing {sorted(expected - written)}, unexpected {sorted(written - expected)}"
    assert sorted(drawn.stdout.split()) == sorted(str(out / name) for name in expected), drawn.stdout
    for name in expected:
        data = (out / name).read_bytes()
        assert data, f"{name} is empty"
        if name.endswith(".png"):
            assert data.startswith(PNG_SIGNATURE), f"{name} is not a PNG"
        if name.endswith(".svg"):
            assert "<svg" in data.decode(), f"{name} is not an SVG"
    index = (out / "index.md").read_text()
    for view in VIEWS:
        assert f"]({view}.png)" in index and f"({view}.svg)" in index, f"index.md does not list {view}:\n{index}"
    for result in results:
        assert str(result) in index, "index.md names its sources"


def tick_labels(axis):
    """The non-empty major tick labels of an axis that lie within its view."""
    low, high = sorted(axis.get_view_interval())
    labels = []
    for tick, location in zip(axis.get_ticklabels(), axis.get_ticklocs()):
        if tick.get_text() and low * (1 - 1e-9) <= location <= high * (1 + 1e-9):
            labels.append(tick)
    return labels


def overlapping(boxes):
    return [(a, b) for a, b in itertools.combinations(boxes, 2) if a.overlaps(b)]


class Keeper:
    """A Figures stand-in that keeps the figures for inspection instead of saving them."""

    def __init__(self, directory):
        self.kept = {}

    def save(self, figure, name, title, note=""):
        self.kept[name] = (figure, title, note)


def draw_kept(plot_module, binary, results, x_axis="seqlen"):
    """plot.py's figures of `results`, kept: {name: (figure, title, note)} (those of
    earlier calls closed)."""
    plot_module.plt.close("all")
    tables = {name: plot_module.report(binary, [str(r) for r in results], name, None, x_axis)
              for name in plot_module.TABLES}
    plot_module.Figures = Keeper  # the Figures draw_all makes
    return plot_module.draw_all(tables, tempfile.gettempdir()).kept


def unclipped(view, figure):
    """Every text of the figure (titles, legends, labels, tick labels, value labels) and
    every legend lies within the figure at the size it is saved."""
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    whole = figure.bbox
    artists = list(figure.legends) + [figure._suptitle] + [t for t in figure.texts]
    for axes in figure.axes:
        if not axes.get_visible():
            continue
        artists += [axes.title, axes.xaxis.label, axes.yaxis.label] + axes.texts
        artists += tick_labels(axes.xaxis) + tick_labels(axes.yaxis)  # those drawn: within the view
        if axes.get_legend():
            artists.append(axes.get_legend())
    for artist in artists:
        if artist is None or not artist.get_visible() or (hasattr(artist, "get_text") and not artist.get_text()):
            continue
        box = artist.get_window_extent(renderer)
        name = artist.get_text() if hasattr(artist, "get_text") else type(artist).__name__
        assert (box.x0 >= whole.x0 - 1 and box.x1 <= whole.x1 + 1 and box.y0 >= whole.y0 - 1
                and box.y1 <= whole.y1 + 1), f"{view}: {name!r} is clipped ({box} outside {whole})"


def roof_at(axes, x):
    """The height of the panel's ceiling line at intensity x (None without one)."""
    line = next((l for l in axes.get_lines() if l.get_label().startswith("ceilings")), None)
    if line is None:
        return None
    (low, ridge, _), (base, peak, _) = line.get_xdata(), line.get_ydata()
    return peak if x >= ridge else base * x / low


def check_figures(plot_module, binary, results, device):
    kept = draw_kept(plot_module, binary, results)
    assert set(kept) == set(VIEWS), f"one figure per view, got {sorted(kept)}"
    assert "right of the ridge" in kept["roofline"][2] or "left of it" in kept["roofline"][2], kept["roofline"][2]
    for view, (figure, title, _) in kept.items():
        unclipped(view, figure)
        renderer = figure.canvas.get_renderer()
        suptitle = figure._suptitle
        for expected in ("plot_sweep", "plot_rect", f"on CPU {device}", "heads=2", "head_dim=16"):
            assert expected in title.replace("\n", " ") or expected in suptitle.get_text().replace("\n", " "), \
                f"{view}: the title does not name {expected!r}: {suptitle.get_text()!r}"
        assert "layout=bshd" not in title, f"{view}: the title lists the defaults: {title!r}"
        panels = [axes for axes in figure.axes if axes.get_visible()]
        if view == "roofline":
            assert len(panels) == 1, f"roofline: one panel per device: {len(panels)}"
            assert panels[0].get_xscale() == "log" and "intensity" in panels[0].get_xlabel()
            names = set(panels[0].get_legend_handles_labels()[1])
            ceilings = {name for name in names if name.startswith("ceilings")}
            assert names - ceilings == {"cpu.flash", "cpu.standard"} and len(ceilings) == 1, names
            # Tiny cases' counted bytes stay in the caches, so their points may lie above the copy
            # bandwidth's roof; where they do, the roof is drawn and named as a lower bound.
            above = [line for line in panels[0].get_lines() if line.get_label() in ("cpu.flash", "cpu.standard")
                     and any(y > roof for x, y in zip(line.get_xdata(), line.get_ydata())
                             for roof in [roof_at(panels[0], x)] if roof is not None)]
            assert bool(above) == ("a lower bound" in next(iter(ceilings))), (ceilings, [l.get_label() for l in above])
            continue
        assert len(panels) == 3, f"{view}: one panel per group (causal off, on, and the rectangle): {len(panels)}"
        rectangle = [axes for axes in panels if "plot_rect" in axes.get_title()]
        assert len(rectangle) == 1, [axes.get_title() for axes in panels]
        for axes in panels:
            where = f"{view} panel {axes.get_title()!r}"
            assert axes.get_xlabel() and axes.get_ylabel(), where
            assert Y_LABELS[view] in axes.get_ylabel(), (where, axes.get_ylabel())
            for axis in (axes.xaxis, axes.yaxis):
                labels = tick_labels(axis)
                assert labels, f"{where}: no labelled tick on the {axis.axis_name} axis"
                assert not any(t.get_text() for t in axis.get_minorticklabels()), f"{where}: minor tick labels"
                clash = overlapping([t.get_window_extent(renderer) for t in labels])
                assert not clash, f"{where}: overlapping {axis.axis_name} tick labels"
            if view != "io":
                assert "Sequence length" in axes.get_xlabel(), where
                x_texts = [t.get_text() for t in tick_labels(axes.xaxis)]
                if axes in rectangle:
                    assert x_texts == ["40x24"], f"{where}: {x_texts}"
                else:
                    assert x_texts == ["32", "64", "128"], f"{where}: {x_texts}"
            else:
                assert "Compulsory" in axes.get_xlabel(), where
        names = set()
        for axes in panels:
            names |= set(axes.get_legend_handles_labels()[1])
        if view == "io":
            expected = {f"{i} {kind}" for i in ("cpu.flash", "cpu.standard") for kind in ("counted",
                                                                                        "modelled")}
            expected.add("compulsory (y = x)")
        elif view == "speedup":
            expected = {"cpu.flash"}
        elif view == "throughput":
            expected = {"cpu.flash", "cpu.standard", PUBLISHED_LABEL}
        elif view == "runtime":
            expected = {"cpu.flash", "cpu.standard", PUBLISHED_LABEL, OTHER_LABEL}
        else:
            expected = {"cpu.flash", "cpu.standard"}
        assert names == expected, f"{view}: series {sorted(names)}, expected {sorted(expected)}"
        legends = [text.get_text() for legend in figure.legends for text in legend.get_texts()]
        legends += [text.get_text() for axes in panels if axes.get_legend() for text in axes.get_legend().get_texts()]
        assert set(legends) == expected, f"{view}: legend {legends}"
        if view == "io":  # no HBM on a CPU: the bytes a tiled implementation counted
            assert "HBM" not in title and all("HBM" not in axes.get_ylabel() for axes in panels), title
        if view == "runtime":  # each published series its own marker and colour; the OOM drawn as the paper prints it
            marks = {line.get_label(): (line.get_marker(), line.get_color()) for axes in panels
                     for line in axes.get_lines() if line.get_label().endswith(", published")}
            assert len(set(marks.values())) == len(marks) == 2, f"runtime: published series look alike: {marks}"
            unmasked = [axes for axes in panels if "causal=false" in axes.get_title()]
            assert [t.get_text() for axes in unmasked for t in axes.texts] == ["OOM"], \
                f"runtime: the published OOM at N 128: {[t.get_text() for a in unmasked for t in a.texts]}"
        if view == "speedup":  # no value label across the line at 1
            for axes in panels:
                line_y = axes.transData.transform((0, 1.0))[1]
                for label in axes.texts:
                    box = label.get_window_extent(renderer)
                    assert not box.y0 < line_y < box.y1, f"speedup: label {label.get_text()!r} crosses the line at 1"
    assert len(list(plot_module.pages(list(range(13))))) == 2, "more than 12 groups continue on a second page"


def check_block_axis(plot_module, binary, results):
    """A sweep of block sizes with --x block (Figure 2 middle) is one panel with the
    block sizes on x in every figure against the sweep, io included: the counted and
    the modelled bytes both visible where they agree (the dashed model over a wider,
    paler counted line), and the compulsory bytes."""
    kept = draw_kept(plot_module, binary, [results], "block")
    for view in ("throughput", "runtime", "memory", "io"):
        figure = kept[view][0]
        unclipped(f"{view} --x block", figure)
        panels = [axes for axes in figure.axes if axes.get_visible()]
        assert len(panels) == 1, f"{view} --x block: {len(panels)} panels"
        axes = panels[0]
        assert [t.get_text() for t in tick_labels(axes.xaxis)] == ["16", "32", "64"], \
            f"{view} --x block: x ticks {[t.get_text() for t in tick_labels(axes.xaxis)]}"
        assert "Block size" in axes.get_xlabel(), f"{view}: {axes.get_xlabel()}"
    axes = [a for a in kept["io"][0].axes if a.get_visible()][0]
    lines = {line.get_label(): line for line in axes.get_lines()}
    assert {"cpu.flash counted", "cpu.flash modelled", "compulsory"} <= set(lines), sorted(lines)
    counted, modelled = lines["cpu.flash counted"], lines["cpu.flash modelled"]
    assert len(counted.get_xdata()) == len(modelled.get_xdata()) == 3, "one point per block size"
    assert list(counted.get_ydata()) == list(modelled.get_ydata()), "cpu.flash counts what its model says"
    assert len(set(counted.get_ydata())) == 3, "the bytes change with the block size"
    assert modelled.get_linestyle() == "--" and modelled.get_zorder() > counted.get_zorder(), \
        "the dashed model line is drawn over the counted one"
    assert counted.get_linewidth() > 2 * modelled.get_linewidth() and counted.get_alpha() < 1, \
        "the counted line shows around the model line"


def check_speedup_labels(plot_module, binary, results, directory):
    """A speedup just under 1 keeps its value label clear of the line at 1."""
    document = json.loads(results.read_text())
    medians = {(r["case_key"], r["implementation"]): r["timing"]["statistics"]["p50"] for r in document["records"]}
    for record in document["records"]:
        if record["implementation"] == "cpu.flash":
            record["timing"]["statistics"]["p50"] = medians[(record["case_key"], "cpu.standard")] / 0.97
    edited = directory / "slower.json"
    edited.write_text(json.dumps(document))
    figure = draw_kept(plot_module, binary, [edited])["speedup"][0]
    unclipped("speedup of 0.97", figure)
    renderer = figure.canvas.get_renderer()
    for axes in [a for a in figure.axes if a.get_visible()]:
        line_y = axes.transData.transform((0, 1.0))[1]
        assert axes.texts, "the bars carry their values"
        for label in axes.texts:
            box = label.get_window_extent(renderer)
            assert not box.y0 < line_y < box.y1, f"speedup: label {label.get_text()!r} crosses the line at 1"


def check_planned_memory(plot_module, binary, results, directory):
    """A record whose memory was planned (run --memory-only) is drawn hollow, with a legend entry."""
    document = json.loads(results.read_text())
    for record in document["records"]:
        if record["implementation"] == "cpu.standard" and record["problem"]["seqlen_q"] == 128:
            record["memory"]["source"] = "planned"
    edited = directory / "planned.json"
    edited.write_text(json.dumps(document))
    figure = draw_kept(plot_module, binary, [edited])["memory"][0]
    unclipped("memory with planned points", figure)
    hollow = [line for axes in figure.axes for line in axes.get_lines() if line.get_fillstyle() == "none"]
    assert hollow, "no hollow marker for the planned amount"
    legends = [text.get_text() for legend in figure.legends for text in legend.get_texts()]
    assert "hollow: planned (arena plan, not run)" in legends, legends


def check_roof_below_points(plot_module, binary, results, directory):
    """A calibration below the measured points is no roof: drawn dashed as a lower
    bound, and the note names the contradiction."""
    document = json.loads(results.read_text())
    document["host"]["calibration"]["gemm"]["flops_per_second"] = 1e6
    document["host"]["calibration"]["copy"]["bytes_per_second"] = 1e5
    edited = directory / "low_roof.json"
    edited.write_text(json.dumps(document))
    figure, _, note = draw_kept(plot_module, binary, [edited])["roofline"]
    unclipped("roofline under its points", figure)
    ceilings = [line for axes in figure.axes for line in axes.get_lines() if line.get_label().startswith("ceilings")]
    assert len(ceilings) == 1 and ceilings[0].get_linestyle() == "--", [line.get_label() for line in ceilings]
    assert "a lower bound" in ceilings[0].get_label(), ceilings[0].get_label()
    assert "Contradiction" in note and "lower bound" in note, note


def check_planned_title(plot_module, binary, directory):
    """A --memory-only run of a GPU implementation without a GPU is titled with what was
    planned, not "on no device"."""
    info = json.loads(subprocess.run([binary, "info", "--json"], capture_output=True, text=True).stdout)
    if not info["tool"]["cuda_built"]:
        print("plot.py: planned title not checked (built without CUDA)")
        return
    scenario = {"name": "plot_planned", "description": "memory planned for a GPU that is not here",
                "defaults": {"batch": 1, "heads": 2, "head_dim": 64}, "sweep": {"seqlen": [128, 256]},
                "implementations": ["cuda.flash"]}
    path = attnbench_testing.write_scenario(directory / "planned_scenario.json", scenario)
    results = directory / "planned-results.json"
    run = subprocess.run([binary, "run", str(path), "--memory-only", "-o", str(results)], capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    if json.loads(results.read_text())["devices"]:
        print("plot.py: planned title not checked (a GPU is here)")
        return
    kept = draw_kept(plot_module, binary, [results])
    _, title, _ = kept["memory"]
    assert "no device" not in title and "on cuda (planned, not run)" in title, title
    _, io_title, _ = kept["io"]
    assert io_title.startswith("Modelled HBM bytes against the compulsory bytes"), io_title


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--source-dir", required=True, type=pathlib.Path)
    args = parser.parse_args()
    plot = args.source_dir / "scripts" / "plot.py"

    with tempfile.TemporaryDirectory() as directory:
        directory = pathlib.Path(directory)
        results = []
        for scenario in (SWEEP, RECTANGLE, BLOCKS):
            path = attnbench_testing.write_scenario(directory / f"{scenario['name']}.json", scenario)
            results.append(directory / f"{scenario['name']}-results.json")
            flags = ["--calibrate"] if scenario is SWEEP else []  # the roofline's ceilings
            run = subprocess.run([args.binary, "run", str(path), "-o", str(results[-1]), *flags],
                                 capture_output=True, text=True)
            assert run.returncode == 0, run.stdout + run.stderr
        blocks = results.pop()
        first = json.loads(results[0].read_text())
        device = f"{first['devices'][0]['name']}, {first['threads']} thread"  # "AMD EPYC, 2 threads"

        check_files(plot, args.binary, results, directory / "plots")
        check_figures(load_plot_module(args.source_dir), args.binary, results, device)
        check_block_axis(load_plot_module(args.source_dir), args.binary, blocks)
        check_planned_memory(load_plot_module(args.source_dir), args.binary, results[0], directory)
        check_speedup_labels(load_plot_module(args.source_dir), args.binary, results[0], directory)
        check_roof_below_points(load_plot_module(args.source_dir), args.binary, results[0], directory)
        check_planned_title(load_plot_module(args.source_dir), args.binary, directory)

        broken = directory / "broken.json"
        broken.write_text('{"schema": "attnbench.results/1", "records": [')
        nothing = directory / "nothing"
        failed = subprocess.run([sys.executable, str(plot), str(broken), "--attnbench", args.binary,
                                 "--out", str(nothing)], capture_output=True, text=True)
        assert failed.returncode == 2, (failed.returncode, failed.stderr)
        assert "broken.json" in failed.stderr, failed.stderr
        assert not nothing.exists(), "a failed plot wrote figures"

        missing = subprocess.run([sys.executable, str(plot), str(results[0]), "--attnbench",
                                  str(directory / "absent"), "--out", str(nothing)], capture_output=True, text=True)
        assert missing.returncode == 2 and "--attnbench" in missing.stderr, missing.stderr
    print("plot.py: one figure per view as PNG and SVG with an index; nothing clipped; titles, labels, ticks, "
          "series, published marks and OOM, the block axis, planned memory and titles, a roof under its points "
          "checked; bad input refused")


if __name__ == "__main__":
    main()
