#!/usr/bin/env python3
"""The timing methods side by side (docs/design.md §4.1), from results files of
the same scenario run once per method (scenarios/timing_methods.json with
--timing events, cupti and graph, cold and --hot): one row per case,
implementation and cache mode with each method's median, the launch overhead
the cupti records measured, and cupti over graph. Then the two expectations the
GPU check holds them to: on the long cases (at least --long-flops FLOPs) the
kernel times from cupti and graph agree within --agree (2%); on the short
hot cases the events time exceeds both by the launch overhead. Exit 1 where an
expectation fails, 2 on unusable input.

  scripts/compare_timing_methods.py tm-events-hot.json tm-cupti-hot.json tm-graph-hot.json ...
"""
import argparse
import json
import sys


def load_rows(paths):
    rows = {}
    for path in paths:
        try:
            with open(path) as file:
                records = json.load(file)["records"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            print(f"compare_timing_methods: {path}: not a results file ({error})", file=sys.stderr)
            sys.exit(2)
        for record in records:
            timing = record.get("timing") or {}
            method = timing.get("method")
            if record["status"] != "ok" or not method:
                print(f"{path}: {record['case_key']} {record['implementation']}: {record['status']}: "
                      f"{record['reason'][:160]}")
                continue
            key = (record["case_key"], record["implementation"], timing.get("cache", "?"))
            rows.setdefault(key, {"flops": record["flops"]["total"]})[method] = timing
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", help="results files, one per method and cache mode")
    parser.add_argument("--long-flops", type=float, default=1e11,
                        help="a case of at least this many FLOPs is a long one (default 1e11)")
    parser.add_argument("--agree", type=float, default=0.02,
                        help="how far cupti and graph may differ on the long cases (default 0.02)")
    args = parser.parse_args()
    rows = load_rows(args.results)
    if not rows:
        print("compare_timing_methods: no ok record with a timing method in the files given", file=sys.stderr)
        return 2

    median_ms = lambda timing: timing["statistics"]["p50"] * 1e3 if timing else None
    cell = lambda value, width, digits: f"{value:{width}.{digits}f}" if value is not None else "-".rjust(width)
    print(f"{'case':44} {'implementation':18} {'cache':5} {'events ms':>10} {'cupti ms':>10} {'graph ms':>10} "
          f"{'launch us':>9} {'cupti/graph':>11}")
    failures = []
    for (case, implementation, cache), by_method in sorted(rows.items()):
        events, cupti, graph = (median_ms(by_method.get(m)) for m in ("events", "cupti", "graph"))
        overhead = ((by_method.get("cupti") or {}).get("cupti") or {}).get("launch_overhead_seconds")
        ratio = cupti / graph if cupti and graph else None
        print(f"{case[:44]:44} {implementation:18} {cache:5} {cell(events, 10, 4)} {cell(cupti, 10, 4)} "
              f"{cell(graph, 10, 4)} {cell(overhead and overhead * 1e6, 9, 2)} {cell(ratio, 11, 3)}")
        where = f"{case} {implementation} {cache}"
        if by_method["flops"] >= args.long_flops and ratio is not None and abs(ratio - 1) > args.agree:
            failures.append(f"{where}: cupti and graph differ by {abs(ratio - 1):.1%} (at most {args.agree:.0%})")
        if by_method["flops"] < args.long_flops and cache == "hot" and events is not None:
            for name, kernel in (("cupti", cupti), ("graph", graph)):
                if kernel is not None and not events > kernel:
                    failures.append(f"{where}: events ({events:.4f} ms) not above {name} ({kernel:.4f} ms)")
    for failure in failures:
        print("expectation not met:", failure)
    print("timing methods:", "as expected" if not failures else f"{len(failures)} expectation(s) not met")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
