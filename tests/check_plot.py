#!/usr/bin/env python3
"""Checks scripts/plot.py end to end on CPU results, and what its figures show.

Runs the binary on two tiny scenarios (a sweep of three lengths, causal off and
on; and one case with Nq != Nk), then:

- plot.py on both results files: throughput, speedup, memory and io as PNG and
  SVG, and index.md listing them; short file names; nothing else written;
- the figures themselves, drawn by plot.py's own functions and inspected with
  matplotlib: one figure per view with one panel per group; titles that name the
  scenarios, the device and the fixed parameters and stay inside the figure; axis
  labels; labelled y ticks on every panel (single points included); the "Nq x Nk"
  label of the rectangular case; no minor tick labels and no overlapping tick
  labels; the expected series (each implementation; measured and modelled bytes
  and the compulsory line in io; no speedup of the baseline over itself);
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
SWEEP = {
    "name": "plot_sweep", "description": "tiny sweep for the plot check",
    "defaults": {"batch": 1, "heads": 2, "head_dim": 16},
    "sweep": {"seqlen": [32, 64, 128], "causal": [False, True]},
    "implementations": ["cpu.flash", "cpu.standard"], "measure": MEASURE,
}
RECTANGLE = {
    "name": "plot_rect", "description": "one case with Nq != Nk",
    "defaults": {"batch": 1, "heads": 2, "head_dim": 16, "seqlen_q": 40, "seqlen_k": 24},
    "implementations": ["cpu.flash", "cpu.standard"], "measure": MEASURE,
}
VIEWS = ("throughput", "speedup", "memory", "io")
Y_LABELS = {"throughput": "FLOP/s", "speedup": "Speedup over cpu.standard", "memory": "Peak memory",
            "io": "HBM bytes ("}
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


def check_figures(plot_module, binary, results, device):
    tables = {name: plot_module.report(binary, [str(r) for r in results], name, None)
              for name in ("seqlen", "memory", "io")}
    class Keeper(plot_module.Figures):
        """Keeps the figures for inspection instead of saving them."""

        def __init__(self, directory):
            super().__init__(directory)
            self.kept = {}

        def save(self, figure, name, title):
            self.kept[name] = (figure, title)

    plot_module.Figures = Keeper  # the Figures draw_all makes
    kept = plot_module.draw_all(tables, tempfile.gettempdir()).kept
    assert set(kept) == set(VIEWS), f"one figure per view, got {sorted(kept)}"
    for view, (figure, title) in kept.items():
        figure.canvas.draw()
        renderer = figure.canvas.get_renderer()
        whole = figure.bbox
        suptitle = figure._suptitle
        for expected in ("plot_sweep", "plot_rect", device, "heads=2", "head_dim=16"):
            assert expected in title.replace("\n", " ") or expected in suptitle.get_text().replace("\n", " "), \
                f"{view}: the title does not name {expected!r}: {suptitle.get_text()!r}"
        box = suptitle.get_window_extent(renderer)
        assert box.x0 >= whole.x0 - 1 and box.x1 <= whole.x1 + 1, f"{view}: the title overflows the figure"
        panels = [axes for axes in figure.axes if axes.get_visible()]
        assert len(panels) == 3, f"{view}: one panel per group (causal off, on, and the rectangle): {len(panels)}"
        rectangle = [axes for axes in panels if "plot_rect" in axes.get_title()]
        assert len(rectangle) == 1, [axes.get_title() for axes in panels]
        for axes in panels:
            where = f"{view} panel {axes.get_title()!r}"
            title_box = axes.title.get_window_extent(renderer)
            assert title_box.x0 >= whole.x0 - 1 and title_box.x1 <= whole.x1 + 1, f"{where}: title overflows"
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
            expected = {f"{i} {kind}" for i in ("cpu.flash", "cpu.standard") for kind in ("measured or counted",
                                                                                        "modelled")}
            expected.add("compulsory (y = x)")
        elif view == "speedup":
            expected = {"cpu.flash"}
        else:
            expected = {"cpu.flash", "cpu.standard"}
        assert names == expected, f"{view}: series {sorted(names)}, expected {sorted(expected)}"
        legends = [text.get_text() for legend in figure.legends for text in legend.get_texts()]
        legends += [text.get_text() for axes in panels if axes.get_legend() for text in axes.get_legend().get_texts()]
        assert set(legends) == expected, f"{view}: legend {legends}"
    assert len(list(plot_module.pages(list(range(13))))) == 2, "more than 12 groups continue on a second page"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--source-dir", required=True, type=pathlib.Path)
    args = parser.parse_args()
    plot = args.source_dir / "scripts" / "plot.py"

    with tempfile.TemporaryDirectory() as directory:
        directory = pathlib.Path(directory)
        results = []
        for scenario in (SWEEP, RECTANGLE):
            path = attnbench_testing.write_scenario(directory / f"{scenario['name']}.json", scenario)
            results.append(directory / f"{scenario['name']}-results.json")
            attnbench_testing.run_scenario(args.binary, path, results[-1])
        device = json.loads(results[0].read_text())["devices"][0]["name"]

        check_files(plot, args.binary, results, directory / "plots")
        check_figures(load_plot_module(args.source_dir), args.binary, results, device)

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
    print("plot.py: one figure per view as PNG and SVG with an index; titles, labels, ticks and series checked; "
          "bad input refused")


if __name__ == "__main__":
    main()
