#!/usr/bin/env python3
"""Cross-checks attnbench's own JSON Schema validator with Python's jsonschema.

Runs the binary on the edge-case scenario, then validates with
jsonschema.Draft202012Validator: the results file against
scenarios/results.schema.json, and every shipped scenario (as the results file
records it, comments removed) against scenarios/scenario.schema.json. A
malformed scenario must be rejected by both validators.
"""
import argparse
import json
import pathlib
import subprocess
import tempfile

import attnbench_testing

jsonschema = attnbench_testing.require_module("jsonschema")


def strip_comments(text):
    """Removes // and /* */ comments outside JSON strings."""
    out, i, in_string = [], 0, False
    while i < len(text):
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
            out.append(c)
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = len(text) if i < 0 else i
            continue
        elif text.startswith("/*", i):
            i = text.index("*/", i) + 2
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--source-dir", required=True, type=pathlib.Path)
    args = parser.parse_args()
    scenarios = args.source_dir / "scenarios"
    results_schema = attnbench_testing.load_schema(args.source_dir, "results.schema.json")
    scenario_schema = attnbench_testing.load_schema(args.source_dir, "scenario.schema.json")
    for schema in (results_schema, scenario_schema):
        jsonschema.Draft202012Validator.check_schema(schema)

    with tempfile.TemporaryDirectory() as directory:
        output = pathlib.Path(directory) / "results.json"
        shipped = sorted(p for p in scenarios.glob("*.json") if not p.name.endswith(".schema.json"))
        attnbench_testing.run_scenario(args.binary, scenarios / "edge_cases.json", output)
        results = json.loads(output.read_text())
        jsonschema.Draft202012Validator(results_schema).validate(results)
        assert results["records"], "the run produced no records"

        # The tool records the scenario as given, comments removed.
        stripped = results["scenarios"][0]["source"]
        assert stripped == json.loads(strip_comments((scenarios / "edge_cases.json").read_text()))
        for path in shipped:
            jsonschema.Draft202012Validator(scenario_schema).validate(json.loads(strip_comments(path.read_text())))

        # A typo both validators must refuse.
        bad = dict(stripped, defaults=dict(stripped["defaults"], hed_dim=8))
        errors = list(jsonschema.Draft202012Validator(scenario_schema).iter_errors(bad))
        assert errors, "jsonschema accepted an unknown key"
        bad_path = attnbench_testing.write_scenario(pathlib.Path(directory) / "bad.json", bad)
        validate = subprocess.run([args.binary, "validate", str(bad_path)], capture_output=True, text=True)
        assert validate.returncode == 2, validate
        assert "defaults.hed_dim: unknown key" in validate.stderr, validate.stderr
    print("results and scenario schemas: our validator and Python's jsonschema agree")


if __name__ == "__main__":
    main()
