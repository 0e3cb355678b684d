#!/usr/bin/env python3
"""Validates every shipped scenario (data/scenarios/*.json) against the shipped JSON Schema
(data/scenario.schema.json) with an independent validator (python3-jsonschema), and checks that the
schema rejects what kvplan rejects: an unknown key, a value of the wrong type, a value out of range,
a choice not listed.

    python3 tests/plan/validate_scenarios.py <source tree>
"""
import json
import pathlib
import sys

import jsonschema


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    schema = json.loads((root / "data/scenario.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    failures = 0
    files = sorted((root / "data/scenarios").glob("*.json"))
    for path in files:
        for error in validator.iter_errors(json.loads(path.read_text())):
            print(f"{path}: {'.'.join(map(str, error.path))}: {error.message}")
            failures += 1
    bad = [
        {"kvplan_scenario": 2, "workload": {"rat": 3}},
        {"kvplan_scenario": 2, "engine": {"max_model_len": "8192"}},
        {"kvplan_scenario": 2, "engine": {"gpu_memory_utilization": 1.5}},
        {"kvplan_scenario": 2, "kv_cache": {"dtype": "fp7"}},
        {"kvplan_scenario": 2, "compare": [{"kv_cache": {"dtyp": "fp8"}}]},
        {"kvplan_scenario": 1},
    ]
    for doc in bad:
        if validator.is_valid(doc):
            print(f"schema accepts {json.dumps(doc)}, which kvplan rejects")
            failures += 1
    print(f"{len(files)} shipped scenarios, {len(bad)} bad documents checked: {failures} failures")
    return 1 if failures or not files else 0


if __name__ == "__main__":
    sys.exit(main())
