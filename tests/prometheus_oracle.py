#!/usr/bin/env python3
"""An independent reading of radixkv's Prometheus text exposition, with Python's prometheus_client
(Debian's python3-prometheus-client).

Usage: prometheus_oracle.py EXPOSITION.txt EXPECTED.json
       prometheus_oracle.py --dump EXPOSITION.txt...

EXPECTED.json lists the families radixkv meant to write: [{"name", "type", "help", "samples":
[{"name", "labels": {...}, "value"}]}], samples in order, a histogram's as Prometheus names them
(NAME_bucket with its le as a number or "+Inf", NAME_sum, NAME_count); values are numbers or
"+Inf", "-Inf", "NaN". The script parses the exposition with
prometheus_client.parser.text_string_to_metric_families and compares family by family: names
(a counter's family is named without _total, as the client names it), types, help texts (after
unescaping), every sample's name, labels (after unescaping) and value. Prints "ok", or the first
difference, and exits 0 or 1.

With --dump it prints what it parsed of each file as one JSON line instead, for tests that compare values
with their own oracle: {"types": {family: type}, "samples": {"NAME{k=v,...}": value}}, labels
sorted by name and unescaped, non-finite values as "+Inf", "-Inf", "NaN".
"""
import json
import math
import sys

from prometheus_client.parser import text_string_to_metric_families


def same_value(a, b):
    if isinstance(b, str):  # "+Inf", "-Inf", "NaN"
        b = float(b)
    if math.isnan(b):
        return math.isnan(a)
    return a == b


def main():
    text = open(sys.argv[1], encoding="utf-8").read()
    expected = json.load(open(sys.argv[2], encoding="utf-8"))
    parsed = list(text_string_to_metric_families(text))
    if len(parsed) != len(expected):
        return f"{len(parsed)} families parsed, {len(expected)} written"
    for family, want in zip(parsed, expected):
        name = want["name"][:-len("_total")] if want["type"] == "counter" else want["name"]
        if family.name != name or family.type != want["type"]:
            return f"family {family.name} ({family.type}), expected {name} ({want['type']})"
        if family.documentation != want["help"]:
            return f"family {name}: help {family.documentation!r}, expected {want['help']!r}"
        if len(family.samples) != len(want["samples"]):
            return f"family {name}: {len(family.samples)} samples, expected {len(want['samples'])}"
        for sample, w in zip(family.samples, want["samples"]):
            labels = dict(sample.labels)
            if "le" in w["labels"]:  # a bucket's bound must read back as the same number
                if "le" not in labels or not same_value(float(labels.pop("le")), w["labels"]["le"]):
                    return f"sample {sample.name}{sample.labels}: le, expected {w['labels']['le']!r}"
            want_labels = {k: v for k, v in w["labels"].items() if k != "le"}
            if sample.name != w["name"] or labels != want_labels:
                return f"sample {sample.name}{sample.labels}, expected {w['name']}{w['labels']}"
            if not same_value(sample.value, w["value"]):
                return f"sample {sample.name}{sample.labels}: {sample.value!r}, expected {w['value']!r}"
    return None


def dump(path):
    text = open(path, encoding="utf-8").read()
    types, samples = {}, {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            key = f"{sample.name}{{{labels}}}"
            if key in samples:
                raise SystemExit(f"sample {key} written twice")
            value = sample.value
            if not math.isfinite(value):
                value = "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
            samples[key] = value
    print(json.dumps({"types": types, "samples": samples}))


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--dump":
        for path in sys.argv[2:]:
            dump(path)
        sys.exit(0)
    difference = main()
    print("ok" if difference is None else difference)
    sys.exit(0 if difference is None else 1)
