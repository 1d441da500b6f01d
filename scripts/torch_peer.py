#!/usr/bin/env python3
"""Runs attnbench scenarios through PyTorch's scaled_dot_product_attention.

Each expanded case (from `attnbench list --json`, the one source of truth for
expansion) runs once per SDPA backend forced in turn -- torch.flash,
torch.cudnn, torch.efficient, torch.math -- with attnbench's inputs (the same
seeded values, generated on the device and checked bit for bit against a host
copy), its timing protocol (cold L2, CUDA events, the same warm-up, stopping
rule and statistics), peak memory from the caching allocator, and an fp64
check on a seeded sample. The records go into a results file of the
attnbench.results/1 schema, so `attnbench report` and `attnbench merge` put
them beside attnbench's own. See docs/peers.md.

    scripts/torch_peer.py scenarios/fa2/fwd.json -o results/fa2-torch.json
    scripts/torch_peer.py SCENARIO --backends flash,math --filter 'q4096' --device 1
    scripts/torch_peer.py SCENARIO --callable fa2 --callable mykernels:attention=mine
    scripts/torch_peer.py SCENARIO --plugin ./libmy_attention.so   # a scenario naming a plug-in's implementation

--callable runs other attention callables through the same protocol: the
adapters fa2, fa3 and flashinfer (scripts/peer_callables.py) or any function
with SDPA's signature.

Without PyTorch or without a CUDA device it still writes a valid file, every
record skipped with the reason, and exits with 4. Exit codes follow attnbench:
0 success, 1 a record failed, 2 bad usage or a bad scenario (nothing written),
4 this machine cannot run what was asked.
"""
import argparse
import datetime
import gc
import importlib.util
import json
import math
import os
import pathlib
import platform
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import warnings

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import peer_callables  # noqa: E402  (beside this script)

EXIT_FAILED, EXIT_BAD_INPUT, EXIT_CANNOT_RUN = 1, 2, 4
SOURCE_DIR = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_BINARY = SOURCE_DIR / "build" / "harness" / "attnbench"

# implementation name -> torch.nn.attention.SDPBackend member
BACKENDS = {
    "torch.flash": "FLASH_ATTENTION",
    "torch.cudnn": "CUDNN_ATTENTION",
    "torch.efficient": "EFFICIENT_ATTENTION",
    "torch.math": "MATH",
}

# The effective settings attnbench records for a scenario (docs/scenarios.md),
# in its key order; a scenario's `measure` / `accuracy` objects override them.
MEASURE_DEFAULTS = {"warmup_min_iterations": 2, "warmup_min_seconds": 0.05, "warmup_window": 5,
                    "warmup_max_seconds": 0.5, "min_samples": 10,
                    "max_samples": 1000, "min_seconds": 0.2, "max_seconds": 5.0,
                    "target_ci_width": 0.02, "cache": "cold"}
ACCURACY_DEFAULTS = {"check": True, "max_oracle_macs": 4e9, "seed": 0, "floor_factor": 2.0,
                     "bound": {"fp64": 1e-12, "fp32": 1e-4, "fp16": 1e-2, "bf16": 5e-2}}
ORACLE = "float64 reference of scripts/torch_peer.py (numpy, on the host)"
DROPOUT_NOT_CHECKED = ("dropout: PyTorch draws its own dropout mask, not the Philox contract of docs/design.md "
                       "section 2, so no oracle reproduces it")


class BadInput(Exception):
    """Bad usage or a bad scenario: exit 2, nothing written."""


# ---------------------------------------------------------------------------
# Inputs: kernels/common/input_distribution.hpp, vectorised. Element e of
# tensor t (logical [batch, seq, heads, dim] order) takes Philox4x32-10 block
# counter {(e/4) low, (e/4) high, t, "INPU"}, key = seed, word e mod 4; normal
# values by Box-Muller over word pairs (0, 1) and (2, 3), uniform from the
# element's own word. The functions below take numpy uint64 arrays or torch
# int64 tensors alike (only *, >>, &, ^ on integers), so the device generates
# the same bits as the host.

TENSOR_IDS = {"Q": 1, "K": 2, "V": 3, "dO": 4}
INPUT_STREAM = 0x494E5055
GENERATION_CHUNK = 1 << 25  # elements generated at once on the device (a few GiB of temporaries)
MASK32 = 0xFFFFFFFF
PHILOX_M0, PHILOX_M1 = 0xD2511F53, 0xCD9E8D57
PHILOX_W0, PHILOX_W1 = 0x9E3779B9, 0xBB67AE85


def philox4x32_10(c0, c1, c2, c3, key0, key1):
    """Ten Philox rounds on counter words given as integer arrays holding 32-bit values."""
    for round_index in range(10):
        if round_index:
            key0 = (key0 + PHILOX_W0) & MASK32
            key1 = (key1 + PHILOX_W1) & MASK32
        p0 = c0 * PHILOX_M0  # < 2^64: exact in uint64, wraps in int64 with the same bits
        p1 = c2 * PHILOX_M1
        high0, low0 = (p0 >> 32) & MASK32, p0 & MASK32
        high1, low1 = (p1 >> 32) & MASK32, p1 & MASK32
        c0, c1, c2, c3 = high1 ^ c1 ^ key0, low1, high0 ^ c3 ^ key1, low0
    return c0, c1, c2, c3


class NumpyOps:
    """What the generator needs from an array library: numpy on the host."""

    @staticmethod
    def arange(start, stop):
        return np.arange(start, stop, dtype=np.uint64)

    @staticmethod
    def to_double(words):
        return words.astype(np.float64)

    full = staticmethod(lambda like, value: np.full(like.shape, value, dtype=np.uint64))
    log, sqrt, cos, sin, where = np.log, np.sqrt, np.cos, np.sin, np.where


def input_values(ops, seed, tensor, first, count, distribution):
    """Values of elements [first, first + count) of one input tensor, as float64."""
    elements = ops.arange(first, first + count)
    block = elements >> 2
    word_index = elements & 3
    c0 = block & MASK32
    c1 = (block >> 32) & MASK32
    c2 = ops.full(c0, TENSOR_IDS[tensor])
    c3 = ops.full(c0, INPUT_STREAM)
    words = philox4x32_10(c0, c1, c2, c3, seed & MASK32, (seed >> 32) & MASK32)
    scale = 1.0 / 4294967296.0
    if distribution["distribution"] == "uniform":
        word = ops.where(word_index == 0, words[0], ops.where(word_index == 1, words[1],
                         ops.where(word_index == 2, words[2], words[3])))
        unit = (ops.to_double(word) + 0.5) * scale
        return distribution["low"] + (distribution["high"] - distribution["low"]) * unit
    first_pair = word_index < 2
    u_radius = ops.to_double(ops.where(first_pair, words[0], words[2])) + 1.0
    u_angle = ops.to_double(ops.where(first_pair, words[1], words[3])) + 1.0
    radius = ops.sqrt(-2.0 * ops.log(u_radius * scale))
    angle = 6.283185307179586 * (u_angle * scale)
    standard = ops.where((elements & 1) == 0, radius * ops.cos(angle), radius * ops.sin(angle))
    return distribution["mean"] + distribution["std"] * standard


def round_to_storage(values, dtype):
    """float64 values -> the stored 16-bit pattern (uint16), rounded as harness/dtype.cpp does:
    to float32 first, then to nearest even."""
    single = values.astype(np.float32)
    if dtype == "fp16":
        return single.astype(np.float16).view(np.uint16)
    bits = single.view(np.uint32).astype(np.uint64)
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF
    quiet = ((bits >> 16) | 0x40) & 0xFFFF
    return np.where(nan, quiet, rounded).astype(np.uint16)


def storage_to_float64(bits, dtype):
    """uint16 patterns -> float64 values."""
    if dtype == "fp16":
        return bits.view(np.float16).astype(np.float64)
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def host_input(problem, tensor, first=0, count=None):
    """Stored bits (uint16) of one input tensor in logical [B, S, H, D] order, flattened."""
    shape = logical_shape(problem, tensor)
    total = math.prod(shape)
    count = total - first if count is None else count
    values = input_values(NumpyOps, problem["input"]["seed"], tensor, first, count, problem["input"])
    return round_to_storage(values, problem["dtype"])


def logical_shape(problem, tensor):
    if tensor in ("Q", "dO"):
        return (problem["batch"], problem["seqlen_q"], problem["heads"], problem["head_dim"])
    return (problem["batch"], problem["seqlen_k"], problem["kv_heads"], problem["head_dim"])


# ---------------------------------------------------------------------------
# Masks (docs/design.md §2.1), per batch element as a boolean [Nq, Nk] matrix.

def shift_of(problem, b):
    if problem["align"] == "top_left":
        return 0
    return problem["padding"]["lengths_k"][b] - problem["padding"]["lengths_q"][b] \
        if problem["padding"]["kind"] != "none" else problem["seqlen_k"] - problem["seqlen_q"]


def visible_matrix(problem, b, rows=None):
    """visible[i, j] for query rows `rows` (default all) of batch element b. Query rows beyond
    the padded length keep the keys < Lk visible: SDPA has no query padding, so they are
    computed and left out of the accuracy check."""
    rows = np.arange(problem["seqlen_q"]) if rows is None else np.asarray(rows)
    i = rows[:, None].astype(np.int64)
    j = np.arange(problem["seqlen_k"], dtype=np.int64)[None, :]
    visible = np.ones((len(rows), problem["seqlen_k"]), dtype=bool)
    if problem["padding"]["kind"] != "none":
        visible &= j < problem["padding"]["lengths_k"][b]
    shift = shift_of(problem, b)
    if problem["causal"]:
        visible &= j <= i + shift
    if problem["window"] is not None:
        left, right = problem["window"]
        if left >= 0:
            visible &= j >= i + shift - left
        if right >= 0:
            visible &= j <= i + shift + right
    return visible


def valid_rows(problem, b):
    """Query rows that hold an output (the rest are padding)."""
    if problem["padding"]["kind"] == "none":
        return problem["seqlen_q"]
    return problem["padding"]["lengths_q"][b]


def mask_plan(problem):
    """How SDPA gets the case's mask: 'none', 'is_causal' (top-left), 'causal_lower_right'
    (torch.nn.attention.bias: native in flash and efficient, materialised by SDPA otherwise) or
    'explicit' (a boolean attn_mask [B, 1, Nq, Nk], for windows and padding)."""
    padded = problem["padding"]["kind"] != "none"
    if problem["window"] is not None or padded:
        return "explicit"
    if not problem["causal"]:
        return "none"
    if problem["align"] == "top_left" or problem["seqlen_q"] == problem["seqlen_k"]:
        return "is_causal"
    return "causal_lower_right"


# ---------------------------------------------------------------------------
# Statistics and the stopping rule: harness/measure/statistics.cpp and harness/measure/protocol.cpp.

def percentile_sorted(ordered, q):
    position = q * (len(ordered) - 1)
    lower = math.floor(position)
    upper = min(lower + 1, len(ordered) - 1)
    return ordered[lower] + (position - lower) * (ordered[upper] - ordered[lower])


def median_confidence_ranks(n, confidence):
    """1-based ranks (low, high) bounding the median with at least `confidence` coverage, or (0, 0)."""
    if n == 0:
        return 0, 0
    alpha, tail, best = 1.0 - confidence, 0.0, 0
    for k in range(1, (n + 1) // 2 + 1):
        tail += math.exp(math.lgamma(n + 1) - math.lgamma(k) - math.lgamma(n - (k - 1) + 1) - n * math.log(2.0))
        if 2.0 * tail > alpha:
            break
        best = k
    return (best, n + 1 - best) if best else (0, 0)


def summarize(samples, confidence=0.95):
    ordered = sorted(samples)
    n = len(ordered)
    stats = {"count": n}
    if not n:
        return stats
    mean = sum(ordered) / n
    stats.update({"min": ordered[0]})
    for name, q in (("p10", .10), ("p25", .25), ("p50", .50), ("p75", .75), ("p90", .90), ("p99", .99)):
        stats[name] = percentile_sorted(ordered, q)
    stats.update({"max": ordered[-1], "mean": mean,
                  "stddev": math.sqrt(sum((s - mean) ** 2 for s in ordered) / (n - 1)) if n > 1 else 0.0})
    low, high = median_confidence_ranks(n, confidence)
    stats.update({"median_ci_low": ordered[low - 1] if low else ordered[0],
                  "median_ci_high": ordered[high - 1] if low else ordered[-1],
                  "median_ci_confidence": confidence, "median_ci_defined": bool(low)})
    return stats


def median_ci_relative_width(stats):
    if not stats.get("median_ci_defined") or not stats["p50"] > 0:
        return math.inf
    return (stats["median_ci_high"] - stats["median_ci_low"]) / stats["p50"]


def measure(settings, timer, before_sample, call, clock=None):
    """The protocol of harness/measure/protocol.cpp: warm up (count and time), then sample until the
    minimums are met and the median's 95% CI is narrow enough, or a limit is reached (the
    time limit only once min_samples are taken). `timer(call)` returns one sample's seconds;
    `clock()` is the host's wall clock."""
    import time
    clock = clock or time.monotonic
    result = {"warmup_iterations": 0}
    start = clock()
    # As attnbench: the minimums, then until the medians of the last two
    # windows of warmup_window timed calls agree within 5%, at most warmup_max_seconds.
    window, recent = settings["warmup_window"], []

    def stable():
        if len(recent) < 2 * window:
            return False
        earlier, later = statistics.median(recent[:window]), statistics.median(recent[window:])
        return abs(later / earlier - 1.0) <= 0.05

    while True:
        elapsed = clock() - start
        if (result["warmup_iterations"] >= settings["warmup_min_iterations"]
                and elapsed >= settings["warmup_min_seconds"]):
            if window <= 0 or stable():
                break
            if elapsed >= max(settings["warmup_max_seconds"], settings["warmup_min_seconds"]):
                break
        before_sample()
        if window > 0:
            recent = (recent + [timer(call)])[-2 * window:]
        else:
            call()
        result["warmup_iterations"] += 1
    result["warmup_seconds"] = clock() - start
    samples, sampled, start = [], 0.0, clock()
    converged, stop_reason = False, None
    while True:
        before_sample()
        elapsed = timer(call)
        samples.append(elapsed)
        sampled += elapsed
        if len(samples) >= settings["min_samples"] and sampled >= settings["min_seconds"]:
            if median_ci_relative_width(summarize(samples)) <= settings["target_ci_width"]:
                converged, stop_reason = True, "converged"
                break
        if len(samples) >= settings["max_samples"]:
            stop_reason = "max_samples"
            break
        if len(samples) >= settings["min_samples"] and clock() - start >= settings["max_seconds"]:
            stop_reason = "max_seconds"
            break
    result.update({"samples_seconds": samples, "converged": converged, "stop_reason": stop_reason,
                   "wall_seconds": clock() - start, "statistics": summarize(samples)})
    return result


# ---------------------------------------------------------------------------
# Bytes: harness/common/problem.cpp's compulsory traffic.

def element_counts(problem):
    q = problem["batch"] * problem["seqlen_q"] * problem["heads"] * problem["head_dim"]
    kv = problem["batch"] * problem["seqlen_k"] * problem["kv_heads"] * problem["head_dim"]
    lse = problem["batch"] * problem["heads"] * problem["seqlen_q"]
    return q, kv, lse


def compulsory_bytes(problem):
    q, kv, lse = element_counts(problem)
    q, kv, lse = 2.0 * q, 2.0 * kv, 4.0 * lse
    forward = (q + 2 * kv, q + lse)
    backward = (3 * q + 2 * kv + lse, q + 2 * kv)
    read, write = {"fwd": forward, "bwd": backward,
                   "fwd+bwd": (forward[0] + backward[0], forward[1] + backward[1])}[problem["direction"]]
    return {"read_bytes": read, "write_bytes": write}


def memory_roles(problem):
    """(input bytes, output bytes) of one sample: Q, K, V (+ dO and, for bwd, the forward's O)
    in; O and / or dQ, dK, dV out."""
    q, kv, _ = element_counts(problem)
    direction = problem["direction"]
    inputs = 2 * (q + 2 * kv + (q if direction != "fwd" else 0) + (q if direction == "bwd" else 0))
    outputs = 2 * ((q if direction != "bwd" else 0) + (q + 2 * kv if direction != "fwd" else 0))
    return inputs, outputs


# ---------------------------------------------------------------------------
# Accuracy: a seeded sample of (batch, kv head) units within the scenario's oracle budget,
# checked in float64 on the host.

def plan_sample(problem, settings):
    b, hkv, nq, nk, d = (problem[k] for k in ("batch", "kv_heads", "seqlen_q", "seqlen_k", "head_dim"))
    group = problem["heads"] // hkv
    backward = problem["direction"] != "fwd"
    row_macs = (4.0 if backward else 2.0) * group * nk * d
    unit_macs = (5.0 if backward else 2.0) * group * nq * nk * d
    rng = np.random.default_rng(settings["seed"])
    if b * hkv * unit_macs <= settings["max_oracle_macs"]:
        units = [(i // hkv, i % hkv) for i in range(b * hkv)]
        return {"units": units, "rows": list(range(nq)), "key_side": backward, "complete": True,
                "macs": b * hkv * unit_macs}
    count = max(1, min(b * hkv, 8 // group))
    picked = sorted(int(i) for i in rng.permutation(b * hkv)[:count])
    units = [(i // hkv, i % hkv) for i in picked]
    rows_per_unit = int(min(nq, max(1, settings["max_oracle_macs"] // (count * row_macs))))
    if rows_per_unit >= nq:
        rows = list(range(nq))
    else:
        middle = rng.permutation(np.arange(1, nq - 1))[:max(0, rows_per_unit - 2)] if nq > 2 else []
        rows = sorted({0, nq - 1, *(int(r) for r in middle)})[:max(rows_per_unit, 1)]
    key_side = backward and len(rows) == nq
    macs = count * (unit_macs if key_side else row_macs * len(rows))
    return {"units": units, "rows": rows, "key_side": key_side, "complete": False, "macs": macs}


def reference_unit(q, k, v, d_out, visible, scale, key_side):
    """fp64 attention of one kv head and its query heads. q: [G, R, d]; k, v: [Nk, d];
    d_out: [G, R, d] or None; visible: [R, Nk]. Rows with no visible key give zeros.
    Returns O, LSE and, with d_out, dQ (and dK, dV when key_side: all rows are present)."""
    scores = scale * np.einsum("grd,kd->grk", q, k)
    scores = np.where(visible[None], scores, -np.inf)
    row_max = scores.max(axis=-1, keepdims=True)
    empty = ~np.isfinite(row_max)
    exps = np.where(visible[None], np.exp(scores - np.where(empty, 0.0, row_max)), 0.0)
    norm = exps.sum(axis=-1, keepdims=True)
    probabilities = exps / np.where(norm > 0, norm, 1.0)
    out = {"O": np.einsum("grk,kd->grd", probabilities, v)}
    with np.errstate(divide="ignore"):
        out["LSE"] = np.where(empty[..., 0], -np.inf, row_max[..., 0] + np.log(np.where(norm > 0, norm, 1.0))[..., 0])
    if d_out is not None:
        d_p = np.einsum("grd,kd->grk", d_out, v)
        delta = (d_out * out["O"]).sum(axis=-1, keepdims=True)
        d_s = probabilities * (d_p - delta)
        out["dQ"] = scale * np.einsum("grk,kd->grd", d_s, k)
        if key_side:
            out["dK"] = scale * np.einsum("grk,grd->kd", d_s, q)
            out["dV"] = np.einsum("grk,grd->kd", probabilities, d_out)
    return out


def tensor_error(values, reference, bound_per_dtype):
    """The metrics of harness/measure/accuracy.cpp's ErrorAccumulator, plus the per-dtype bound."""
    values, reference = np.asarray(values, np.float64).ravel(), np.asarray(reference, np.float64).ravel()
    oracle_finite = np.isfinite(reference)
    nan = np.isnan(values) & oracle_finite
    inf = np.isinf(values) & oracle_finite
    ok = oracle_finite & ~nan & ~inf
    difference = np.abs(values[ok] - reference[ok])
    squared_reference = float(np.sum(reference[ok] ** 2))
    squared_error = float(np.sum(difference ** 2))
    oracle_max_abs = float(np.max(np.abs(reference[oracle_finite]))) if oracle_finite.any() else 0.0
    error = {"checked": int(values.size),
             "max_abs_error": float(difference.max()) if difference.size else 0.0,
             "mean_abs_error": float(difference.mean()) if difference.size else 0.0,
             "relative_l2_error": math.sqrt(squared_error / squared_reference) if squared_reference > 0
             else math.sqrt(squared_error),
             "oracle_max_abs": oracle_max_abs, "nan": int(nan.sum()), "inf": int(inf.sum()),
             "infinity_mismatch": 0, "oracle_nonfinite": int((~oracle_finite).sum()),
             "bound": bound_per_dtype * max(1.0, oracle_max_abs), "rule_limit": None}
    error["passed"] = (error["nan"] == 0 and error["inf"] == 0 and error["oracle_nonfinite"] == 0
                       and error["max_abs_error"] <= error["bound"])
    return error


def failure_text(name, error):
    if error["nan"]:
        return f"{name}: {error['nan']} NaN"
    if error["inf"]:
        return f"{name}: {error['inf']} Inf"
    if error["oracle_nonfinite"]:
        return f"{name}: {error['oracle_nonfinite']} oracle values overflow"
    return f"{name}: max abs error {error['max_abs_error']:.3e} > bound {error['bound']:.3e}"


def not_checked(reason):
    return {"status": "not_checked", "reason": reason, "oracle": ORACLE, "sample": None,
            "baseline": None, "rule_applied": False, "tensors": {}}


def check_accuracy(problem, settings, plan, fetch_inputs, fetch_outputs):
    """Compares a backend's outputs with the fp64 reference on the planned sample.
    fetch_inputs(b, kv_head, rows) -> dict of float64 host arrays (q [G,R,d], k, v [Nk,d],
    dO [G,R,d] or absent); fetch_outputs(b, kv_head, rows) -> dict of what the backend wrote,
    same shapes (O, dQ, and dK, dV when all rows are sampled)."""
    bound = settings["bound"][problem["dtype"]]
    pairs = {}
    for b, kv_head in plan["units"]:
        rows = np.asarray(plan["rows"])
        inputs = fetch_inputs(b, kv_head, rows)
        reference = reference_unit(inputs["Q"], inputs["K"], inputs["V"], inputs.get("dO"),
                                   visible_matrix(problem, b, rows), problem["scale"], plan["key_side"])
        produced = fetch_outputs(b, kv_head, rows)
        kept = rows < valid_rows(problem, b)
        for name, value in produced.items():
            ref = reference[name]
            if name in ("O", "dQ"):
                value, ref = value[:, kept], ref[:, kept]
            pairs.setdefault(name, ([], []))
            pairs[name][0].append(np.ravel(value))
            pairs[name][1].append(np.ravel(ref))
    tensors = {name: tensor_error(np.concatenate(v), np.concatenate(r), bound) for name, (v, r) in pairs.items()}
    failures = [failure_text(name, e) for name, e in tensors.items() if not e["passed"]]
    group = problem["heads"] // problem["kv_heads"]
    notes = ["only the per-dtype bound applies (no baseline rule among SDPA backends)",
             "LSE is not returned by SDPA and not checked"]
    if problem["padding"]["kind"] != "none":
        notes.append("query rows beyond the padded length are computed by SDPA and not compared")
    return {"status": "failed" if failures else "passed",
            "reason": "; ".join(failures) if failures else "; ".join(notes),
            "oracle": ORACLE,
            "sample": {"complete": plan["complete"], "query_heads": len(plan["units"]) * group,
                       "query_rows": len(plan["units"]) * group * len(plan["rows"]),
                       "kv_heads": len(plan["units"]) if plan["key_side"] else 0,
                       "key_side_checked": plan["key_side"], "oracle_macs": plan["macs"]},
            "baseline": None, "rule_applied": False, "tensors": tensors}


# ---------------------------------------------------------------------------
# The document: the environment, the scenarios, the records.

def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


JSON_STRING_OR_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.S)


def strip_comments(text):
    """Removes // and /* */ comments outside JSON strings (the file has passed attnbench validate)."""
    return JSON_STRING_OR_COMMENT.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text)


def effective_settings(source, cache_override):
    """The scenario's measure and accuracy settings with attnbench's defaults filled in, each value
    of the type attnbench writes (a merge compares them with attnbench's own)."""
    measure_settings = {key: type(default)(source.get("measure", {}).get(key, default))
                        for key, default in MEASURE_DEFAULTS.items()}
    if cache_override:
        measure_settings["cache"] = cache_override
    given = source.get("accuracy", {})
    accuracy = {key: type(default)(given.get(key, default))
                for key, default in ACCURACY_DEFAULTS.items() if key != "bound"}
    accuracy["bound"] = {key: float(given.get("bound", {}).get(key, default))
                         for key, default in ACCURACY_DEFAULTS["bound"].items()}
    return measure_settings, accuracy


def git_revision():
    try:
        head = subprocess.run(["git", "-C", str(SOURCE_DIR), "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(SOURCE_DIR), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def host_record():
    cpu_model, memory = platform.processor() or "unknown", 0
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
        for line in pathlib.Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = int(line.split()[1]) * 1024
    except OSError:
        pass
    uname = platform.uname()
    return {"hostname": socket.gethostname(), "os": f"{uname.system} {uname.release}",
            "cpu_model": cpu_model, "logical_cpus": os.cpu_count() or 1, "memory_bytes": memory}


def module_exists(name):
    """Whether `name` (dotted) can be found on the Python path, without importing it (its parents are)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def list_cases(binary, scenarios, case_filter, plugins=()):
    """`attnbench list --json` of the scenarios (with the filter, when given): the one expansion."""
    if not pathlib.Path(binary).is_file():
        raise BadInput(f"the attnbench binary {binary} does not exist: build it (scripts/build.sh) "
                       "or name it with --attnbench")
    command = [str(binary), "list", "--json", *map(str, scenarios)]
    for plugin in plugins:
        command += ["--plugin", str(plugin)]
    if case_filter is not None:
        command += ["--filter", case_filter]
    try:
        listing = subprocess.run(command, capture_output=True, text=True)
    except OSError as error:
        raise BadInput(f"cannot run {binary}: {error}") from error
    if listing.returncode != 0:
        message = (listing.stderr or listing.stdout).strip() or f"{binary} list exited with {listing.returncode}"
        if 'unknown implementation "cuda.' in message:
            message += ("\n(this attnbench was built without CUDA, so it does not know the scenario's cuda.* "
                        "implementations: name a CUDA build with --attnbench)")
        raise BadInput("attnbench list refused the scenarios:\n" + message)
    return json.loads(listing.stdout)["scenarios"]


def skipped_record(scenario, case, implementation, reason):
    return {"scenario": scenario, "case_index": case["index"], "case_key": case["key"],
            "case_origin": case["origin"], "implementation": implementation, "device": "cuda",
            "problem": case["problem"], "status": "skipped", "reason": reason, "configuration": {},
            "flops": case["flops"], "timing": None, "memory": None,
            "traffic": {"compulsory": compulsory_bytes(case["problem"]), "counted": None, "measured": None},
            "accuracy": None}


def prepare_output(output, scenarios, overwrite):
    """-o as `attnbench run -o` takes it: no directory, no scenario file, no existing file without
    --overwrite; missing directories above it are made, and only a directory that cannot be made or
    written into is bad input."""
    if output.is_dir():
        raise BadInput(f"-o {output}: is a directory; give a file name")
    if any(output.resolve() == s.resolve() for s in scenarios):
        raise BadInput(f"-o {output}: is one of the scenario files")
    if output.exists() and not overwrite:
        raise BadInput(f"-o {output}: exists; --overwrite replaces it, or write to another file")
    directory = output.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as error:
        raise BadInput(f'-o: cannot create or write into the directory "{directory}" ({error.strerror})') from None


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomically(path, document):
    """Through a temporary file and a rename, readable as attnbench's files are (0644 less the umask)."""
    path = pathlib.Path(path)
    descriptor, temporary = tempfile.mkstemp(prefix=path.name + ".tmp.", dir=path.parent)
    try:
        os.fchmod(descriptor, 0o644 & ~current_umask())
        with os.fdopen(descriptor, "w") as stream:
            json.dump(document, stream, indent=1)
            stream.write("\n")
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        pathlib.Path(temporary).unlink(missing_ok=True)
        raise


# ---------------------------------------------------------------------------
# The PyTorch side. Everything above runs without torch.

def load_torch():
    """(torch module or None, the reason it cannot run anything or None)."""
    try:
        import torch
    except ImportError:
        return None, "PyTorch is not installed"
    try:
        import torch.nn.attention  # noqa: F401  (sdpa_kernel, SDPBackend: PyTorch >= 2.3)
        torch.nn.attention.sdpa_kernel  # noqa: B018
    except (ImportError, AttributeError):
        return torch, f"PyTorch {torch.__version__} has no torch.nn.attention.sdpa_kernel (needs PyTorch 2.3 or later)"
    if not torch.cuda.is_available():
        return torch, "no CUDA device (torch.cuda.is_available() is false)"
    return torch, None


def driver_attributes(ordinal):
    """Driver version and ECC state from libcuda (what attnbench's CUDA backend reports)."""
    import ctypes
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        version, device, ecc, l2 = ctypes.c_int(), ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        cuda.cuInit(0)
        cuda.cuDriverGetVersion(ctypes.byref(version))
        cuda.cuDeviceGet(ctypes.byref(device), ordinal)
        cuda.cuDeviceGetAttribute(ctypes.byref(ecc), 32, device)  # CU_DEVICE_ATTRIBUTE_ECC_ENABLED
        cuda.cuDeviceGetAttribute(ctypes.byref(l2), 38, device)   # CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE
        return f"{version.value // 1000}.{(version.value % 1000) // 10}", bool(ecc.value), l2.value
    except (OSError, AttributeError):
        return "unknown", False, 0


def describe_device(torch, ordinal):
    properties = torch.cuda.get_device_properties(ordinal)
    driver, ecc, l2 = driver_attributes(ordinal)
    l2 = getattr(properties, "L2_cache_size", 0) or l2
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {"kind": "cuda", "name": properties.name, "ordinal": ordinal,
            "compute_capability": f"{properties.major}.{properties.minor}",
            "sm_count": properties.multi_processor_count, "l2_bytes": l2,
            "memory_bytes": properties.total_memory, "ecc": ecc, "driver": driver,
            "cuda_runtime": torch.version.cuda or "unknown",
            "torch": torch.__version__, "cudnn": str(cudnn) if cudnn else None}


class TorchCase:
    """One case's device tensors: inputs in the problem's layout, the mask, the flush buffer."""

    def __init__(self, torch, problem, device):
        self.torch, self.problem, self.device = torch, problem, device
        self.dtype = torch.float16 if problem["dtype"] == "fp16" else torch.bfloat16
        self.leaves = {}
        for name in ("Q", "K", "V") + (("dO",) if problem["direction"] != "fwd" else ()):
            tensor = self.generate(name)
            if name == "dO" and problem["padding"]["kind"] != "none":
                for b, length in enumerate(problem["padding"]["lengths_q"]):
                    tensor[b, length:] = 0  # padded query rows carry no gradient
            if problem["layout"] == "bhsd":
                tensor = tensor.permute(0, 2, 1, 3).contiguous()
            self.leaves[name] = tensor
        self.plan = mask_plan(problem)
        self.mask = self.explicit_mask() if self.plan == "explicit" else None

    def generate(self, name):
        """The harness's values in logical [B, S, H, D] order, generated on the device in chunks;
        the first elements are checked bit for bit against the host generator."""
        torch, problem = self.torch, self.problem
        shape = logical_shape(problem, name)
        total = math.prod(shape)
        flat = torch.empty(total, dtype=self.dtype, device=self.device)
        ops = TorchOps(torch, self.device)
        for first in range(0, total, GENERATION_CHUNK):
            count = min(GENERATION_CHUNK, total - first)
            values = input_values(ops, problem["input"]["seed"], name, first, count, problem["input"])
            flat[first:first + count] = values.to(torch.float32).to(self.dtype)
        probe = min(total, 4096)
        device_bits = flat[:probe].view(torch.int16).cpu().numpy().view(np.uint16)
        if not np.array_equal(device_bits, host_input(problem, name, 0, probe)):
            raise RuntimeError(f"inputs generated on the device differ from the host generator ({name})")
        return flat.reshape(shape)

    def explicit_mask(self):
        """Boolean [B, 1, Nq, Nk], True where a key is visible; filled one batch element at a time."""
        torch, problem = self.torch, self.problem
        mask = torch.empty((problem["batch"], 1, problem["seqlen_q"], problem["seqlen_k"]), dtype=torch.bool,
                           device=self.device)
        for b in range(problem["batch"]):
            mask[b, 0] = torch.from_numpy(visible_matrix(problem, b)).to(self.device)
        return mask

    def view(self, name, leaf=None):
        """[B, H, S, D] view of an input (or of `leaf`, a tensor with the input's storage layout)."""
        tensor = self.leaves[name] if leaf is None else leaf
        return tensor.transpose(1, 2) if self.problem["layout"] == "bshd" else tensor


class TorchOps:
    """The generator's array operations on torch int64 / float64 tensors on the device."""

    def __init__(self, torch, device):
        self.torch, self.device = torch, device
        self.log, self.sqrt, self.cos, self.sin, self.where = torch.log, torch.sqrt, torch.cos, torch.sin, torch.where

    def arange(self, start, stop):
        return self.torch.arange(start, stop, dtype=self.torch.int64, device=self.device)

    def to_double(self, words):
        return words.to(self.torch.float64)

    def full(self, like, value):
        return self.torch.full_like(like, value)


def storage_slice(problem, tensor, b, heads, rows):
    """float64 host array [len(heads), len(rows), D] of batch element b from a tensor stored in
    the problem's layout ([B, S, H, D] or [B, H, S, D])."""
    if problem["layout"] == "bshd":
        part = tensor[b][rows][:, heads].transpose(0, 1)
    else:
        part = tensor[b][heads][:, rows]
    return part.double().cpu().numpy()


class BackendRun:
    """Runs one case on one forced SDPA backend, or on a --callable (`target`: an adapter of
    scripts/peer_callables.py, or a function with SDPA's signature)."""

    def __init__(self, torch, case, implementation, flush, events, target=None, spec=None):
        self.torch, self.case, self.implementation = torch, case, implementation
        self.problem = case.problem
        self.target = target
        self.adapter = target if hasattr(target, "bind") else None
        self.backend = getattr(torch.nn.attention.SDPBackend, BACKENDS[implementation], None) \
            if implementation in BACKENDS else None
        self.flush, self.events = flush, events
        self.configuration = {"backend": BACKENDS[implementation], "torch": torch.__version__} \
            if implementation in BACKENDS else {"callable": spec, "torch": torch.__version__}
        if self.adapter is not None:
            self.configuration.update({"library": self.adapter.library, "library_version": self.adapter.version(),
                                       "packed": peer_callables.padded(self.problem)})
        else:
            self.configuration["mask"] = case.plan
        self.configuration.update({"layout": self.problem["layout"],
                                   "inputs": "attnbench's seeded values (device-generated, first 4096 elements "
                                             "of each tensor checked against the host generator)"})
        if case.mask is not None and self.adapter is None:
            self.configuration["mask_bytes"] = case.mask.numel()
        if self.problem["kv_heads"] != self.problem["heads"]:
            self.configuration["gqa"] = "enable_gqa=True"
        if self.problem["dropout"]["p"] > 0:
            self.configuration["dropout_rng"] = "PyTorch's generator (not the Philox contract of docs/design.md)"

    def attention(self, q, k, v):
        torch, problem = self.torch, self.problem
        kwargs = {"dropout_p": problem["dropout"]["p"], "scale": problem["scale"]}
        if problem["kv_heads"] != problem["heads"]:
            kwargs["enable_gqa"] = True
        if self.case.plan == "is_causal":
            kwargs["is_causal"] = True
        elif self.case.plan == "causal_lower_right":
            from torch.nn.attention.bias import causal_lower_right
            kwargs["attn_mask"] = causal_lower_right(problem["seqlen_q"], problem["seqlen_k"])
        elif self.case.plan == "explicit":
            kwargs["attn_mask"] = self.case.mask
        function = self.target or torch.nn.functional.scaled_dot_product_attention
        return function(q, k, v, **kwargs)

    def prepare(self):
        """Returns (the call timed per sample, the outputs of one checked call)."""
        torch, case, direction = self.torch, self.case, self.problem["direction"]
        binding = self.adapter.bind(self.problem, peer_callables.TorchTensors(torch, case.device)) \
            if self.adapter is not None else peer_callables.sdpa_binding(case.view, self.attention)
        storage = [case.leaves[name] for name in ("Q", "K", "V")]
        if direction == "fwd":
            inputs = binding.inputs(binding.arguments(storage))

            def call():
                with torch.no_grad():
                    return binding.call(*inputs)
            return call, lambda: {"O": binding.output(call())}
        leaves = [argument.detach().requires_grad_() for argument in binding.arguments(storage)]
        inputs = binding.inputs(leaves)
        d_out = binding.d_out(case.leaves["dO"])

        def gradients(grads):
            return {"d" + name: binding.gradient(name, grad) for name, grad in zip(("Q", "K", "V"), grads)}
        if direction == "fwd+bwd":
            def call():
                out = binding.call(*inputs)
                return (out, *torch.autograd.grad(out, leaves, d_out))

            def checked():
                out, *grads = call()
                return {"O": binding.output(out), **gradients(grads)}
            return call, checked
        out = binding.call(*inputs)  # bwd: the graph is built once, outside the samples

        def call():
            return torch.autograd.grad(out, leaves, d_out, retain_graph=True)
        return call, lambda: gradients(call())

    def run(self, measure_settings, accuracy_settings, plan):
        torch, problem = self.torch, self.problem
        if self.implementation not in BACKENDS:
            refusal = self.adapter.refusal(problem) if self.adapter is not None else None
            if refusal:
                return "skipped", refusal, None, None, None
            return self.measured(measure_settings, accuracy_settings, plan)
        if self.backend is None:
            return "skipped", f"this PyTorch ({torch.__version__}) has no SDPBackend.{BACKENDS[self.implementation]}", \
                None, None, None
        math_reduction = None
        if self.implementation == "torch.math":
            math_reduction = getattr(torch.backends.cuda, "allow_fp16_bf16_reduction_math_sdp", None)
            self.configuration["math_low_precision_reduction"] = math_reduction is not None
            if math_reduction is not None:
                math_reduction(True)
        try:
            with torch.nn.attention.sdpa_kernel([self.backend]):
                return self.measured(measure_settings, accuracy_settings, plan)
        finally:
            if math_reduction is not None:
                math_reduction(False)

    def measured(self, measure_settings, accuracy_settings, plan):
        torch = self.torch
        base = self.case.base_allocated
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                torch.cuda.synchronize()
                if self.problem["direction"] != "bwd":
                    torch.cuda.reset_peak_memory_stats()
                call, checked = self.prepare()
                if self.problem["direction"] == "bwd":
                    torch.cuda.synchronize()
                    torch.cuda.reset_peak_memory_stats()
                outputs = checked()
                torch.cuda.synchronize()
            except (NotImplementedError, peer_callables.Unsupported) as error:
                return "skipped", f"{self.implementation} refused this case: {error}", None, None, None
            except RuntimeError as error:
                if self.implementation not in BACKENDS:
                    raise
                if "No available kernel" in str(error) or "no kernel" in str(error).lower():
                    reasons = sorted({str(w.message).strip() for w in caught if w.category is UserWarning})
                    detail = " ".join(reasons) or str(error)
                    return "skipped", f"{BACKENDS[self.implementation]} does not support this case: {detail}", \
                        None, None, None
                raise
        peak = torch.cuda.max_memory_allocated() - base
        input_bytes, output_bytes = memory_roles(self.problem)
        extra = max(0, peak - input_bytes - output_bytes)
        memory = {"peak_bytes": int(peak), "input_bytes": input_bytes, "output_bytes": output_bytes,
                  "workspace_bytes": int(extra), "extra_bytes": int(extra)}
        accuracy = self.accuracy(accuracy_settings, plan, outputs)
        del outputs

        start, end = self.events
        cold = measure_settings["cache"] == "cold"
        flush_value = [0]

        def before_sample():
            if cold:
                flush_value[0] = (flush_value[0] + 1) % 256
                self.flush.fill_(flush_value[0])

        def timer(function):
            start.record()
            function()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3

        timing = measure(measure_settings, timer, before_sample, call)
        timing = {"clock": "cuda_event", "cache": measure_settings["cache"],
                  "cache_flush_bytes": self.flush.numel() if cold else 0,
                  "warmup_iterations": timing["warmup_iterations"], "warmup_seconds": timing["warmup_seconds"],
                  "samples_seconds": timing["samples_seconds"], "converged": timing["converged"],
                  "stop_reason": timing["stop_reason"], "wall_seconds": timing["wall_seconds"],
                  "throttled": None, "statistics": timing["statistics"]}
        return None, None, timing, memory, accuracy

    def accuracy(self, settings, plan, outputs):
        problem, case = self.problem, self.case
        if not settings["check"]:
            return not_checked("accuracy.check is false in the scenario")
        if problem["dropout"]["p"] > 0:
            return not_checked(DROPOUT_NOT_CHECKED)
        group = problem["heads"] // problem["kv_heads"]

        def heads_of(kv_head):
            return list(range(kv_head * group, (kv_head + 1) * group))

        def fetch_inputs(b, kv_head, rows):
            rows = list(rows)
            keys = list(range(problem["seqlen_k"]))
            fetched = {"Q": storage_slice(problem, case.leaves["Q"], b, heads_of(kv_head), rows),
                       "K": storage_slice(problem, case.leaves["K"], b, [kv_head], keys)[0],
                       "V": storage_slice(problem, case.leaves["V"], b, [kv_head], keys)[0]}
            if "dO" in case.leaves:
                fetched["dO"] = storage_slice(problem, case.leaves["dO"], b, heads_of(kv_head), rows)
            return fetched

        def fetch_outputs(b, kv_head, rows):
            rows, keys = list(rows), list(range(problem["seqlen_k"]))
            fetched = {}
            if "O" in outputs:  # [B, H, Nq, D] view
                fetched["O"] = outputs["O"][b][heads_of(kv_head)][:, rows].double().cpu().numpy()
            if "dQ" in outputs:  # gradients have the storage layout of their leaves
                fetched["dQ"] = storage_slice(problem, outputs["dQ"], b, heads_of(kv_head), rows)
                if plan["key_side"]:
                    fetched["dK"] = storage_slice(problem, outputs["dK"], b, [kv_head], keys)[0]
                    fetched["dV"] = storage_slice(problem, outputs["dV"], b, [kv_head], keys)[0]
            return fetched

        return check_accuracy(problem, settings, plan, fetch_inputs, fetch_outputs)


def finish_record(record, timing):
    """TFLOP/s and compulsory bandwidth from the median, as the harness derives them."""
    median = timing["statistics"]["p50"]
    traffic = record["traffic"]["compulsory"]
    timing["tflops"] = record["flops"]["total"] / median / 1e12 if median > 0 else 0.0
    timing["compulsory_bandwidth_gb_per_s"] = \
        (traffic["read_bytes"] + traffic["write_bytes"]) / median / 1e9 if median > 0 else 0.0
    return timing


def run_backend(torch, case_tensors, scenario, case, implementation, flush, events, measure_settings,
                accuracy_settings, callables):
    record = skipped_record(scenario, case, implementation, "")
    target, unavailable, spec = callables.get(implementation, (None, None, None))
    if unavailable:
        record["reason"] = unavailable
        return record
    runner = BackendRun(torch, case_tensors, implementation, flush, events, target, spec)
    record["configuration"] = runner.configuration
    plan = plan_sample(case["problem"], accuracy_settings)
    try:
        status, reason, timing, memory, accuracy = runner.run(measure_settings, accuracy_settings, plan)
    except torch.cuda.OutOfMemoryError as error:
        status, reason, timing, memory, accuracy = "skipped", f"out of memory: {str(error).splitlines()[0]}", \
            None, None, None
    except Exception as error:  # a failing case is a record with a reason, never the end of a sweep
        status, reason, timing, memory, accuracy = "failed", f"{type(error).__name__}: {error}", None, None, None
    if status is None:
        status, reason = "ok", ""
        if accuracy["status"] == "failed":
            status, reason = "failed", "accuracy: " + accuracy["reason"]
        record.update({"timing": finish_record(record, timing), "memory": memory, "accuracy": accuracy})
    record.update({"status": status, "reason": reason})
    return record


# ---------------------------------------------------------------------------

def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        description="Run attnbench scenarios through PyTorch's scaled_dot_product_attention backends.",
        epilog="Exit codes: 0 success, 1 a record failed, 2 bad usage or input, 4 nothing could run here.")
    parser.add_argument("scenarios", nargs="+", type=pathlib.Path, help="scenario files")
    parser.add_argument("-o", "--output", type=pathlib.Path,
                        help="results file (default: results/torch-<scenario>-<time>.json); missing directories "
                             "are made")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing -o FILE")
    parser.add_argument("--device", type=int, default=0, help="CUDA device ordinal (default 0)")
    parser.add_argument("--backends",
                        help="comma-separated backends: flash, cudnn, efficient, math (default: all, unless "
                             "--callable is given)")
    parser.add_argument("--callable", dest="callables", action="append", default=[], metavar="SPEC",
                        help="also run an attention callable (repeatable): fa2, fa3 or flashinfer (adapters for "
                             "flash-attn 2, FlashAttention-3, FlashInfer), or MODULE:FUNCTION[=NAME], a function "
                             "with scaled_dot_product_attention's signature, recorded as torch.NAME")
    parser.add_argument("--filter", dest="case_filter",
                        help='only cases whose "<scenario>/<case key>" matches this regex (as attnbench run)')
    parser.add_argument("--plugin", dest="plugins", action="append", default=[], type=pathlib.Path, metavar="PATH",
                        help="an attnbench plug-in the scenarios name implementations of (repeatable): handed to "
                             "`attnbench list`, which expands the cases (ATTNBENCH_PLUGINS works too)")
    parser.add_argument("--attnbench", type=pathlib.Path, default=DEFAULT_BINARY,
                        help=f"the attnbench binary that expands the scenarios (default {DEFAULT_BINARY})")
    cache = parser.add_mutually_exclusive_group()
    cache.add_argument("--hot", action="store_const", const="hot", dest="cache", help="back-to-back samples")
    cache.add_argument("--cold", action="store_const", const="cold", dest="cache",
                       help="flush the L2 before every sample")
    try:
        arguments = parser.parse_args(argv)
    except SystemExit as exit_:
        raise SystemExit(EXIT_BAD_INPUT if exit_.code else 0) from None
    implementations = []
    backends = arguments.backends
    if backends is None:
        backends = "" if arguments.callables else ",".join(b.split(".")[1] for b in BACKENDS)
    for name in filter(None, (n.strip() for n in backends.split(","))):
        full = name if name.startswith("torch.") else "torch." + name
        if full not in BACKENDS:
            raise BadInput(f"--backends: unknown backend \"{name}\"; known: flash, cudnn, efficient, math")
        if full not in implementations:
            implementations.append(full)
    arguments.specs = {}
    for text in arguments.callables:
        try:
            spec = peer_callables.CallableSpec(text)
        except ValueError as error:
            raise BadInput(str(error)) from None
        if spec.implementation in implementations:
            raise BadInput(f'--callable "{text}": {spec.implementation} is already measured; give another NAME')
        # Before PyTorch is looked for: a module that does not exist is bad input on any machine.
        if spec.adapter is None and not module_exists(spec.module_name):
            raise BadInput(f'--callable "{text}": no module {spec.module_name} on the Python path '
                           f"({', '.join(list(dict.fromkeys(filter(None, sys.path)))[:3])}, …): check its name, or add "
                           "its directory to PYTHONPATH")
        implementations.append(spec.implementation)
        arguments.specs[spec.implementation] = spec
    if not implementations:
        raise BadInput("--backends names no backend")
    arguments.implementations = implementations
    if arguments.device < 0:
        raise BadInput("--device must be a non-negative ordinal")
    return arguments


def build_document(arguments, listing, implementations, torch):
    torch_version = torch.__version__ if torch is not None else "not installed"
    scenarios = []
    for entry in listing:
        source = json.loads(strip_comments(pathlib.Path(entry["path"]).read_text()))
        measure_settings, accuracy = effective_settings(source, arguments.cache)
        scenarios.append({"path": entry["path"], "name": entry["name"], "description": entry["description"],
                          "source": source, "implementations": implementations, "measure": measure_settings,
                          "accuracy": accuracy, "case_count": entry["case_count"]})
    return {"schema": "attnbench.results/1",
            "tool": {"name": "attnbench", "version": "torch_peer", "git_revision": git_revision(),
                     "build_type": "scripts/torch_peer.py",
                     "compiler": f"Python {platform.python_version()}, PyTorch {torch_version}",
                     "cuda_built": bool(torch is not None and torch.version.cuda)},
            "command_line": [sys.argv[0], *arguments.argv],
            "started_at": utc_now(), "finished_at": None, "complete": False,
            "host": host_record(), "devices": [],
            "threads": torch.get_num_threads() if torch is not None else (os.cpu_count() or 1),
            "shard": None, "scenarios": scenarios, "records": []}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        arguments = parse_arguments(argv)
        arguments.argv = argv
        listing = list_cases(arguments.attnbench, arguments.scenarios, arguments.case_filter, arguments.plugins)
        full = list_cases(arguments.attnbench, arguments.scenarios, None, arguments.plugins) \
            if arguments.case_filter else listing
        for entry, whole in zip(listing, full):
            entry["case_count"] = len(whole["cases"])
        if not any(entry["cases"] for entry in listing):
            raise BadInput(f'--filter "{arguments.case_filter}" matches no case')
        output = arguments.output or SOURCE_DIR / "results" / (
            f"torch-{listing[0]['name']}-{datetime.datetime.now().strftime('%Y%m%d-%H%M%S')}.json")
        prepare_output(output, arguments.scenarios, arguments.overwrite)
    except BadInput as error:
        print(f"torch_peer: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT

    torch, unavailable = load_torch()
    if torch is not None and unavailable is None and arguments.device >= torch.cuda.device_count():
        unavailable = f"no CUDA device {arguments.device} (this machine has {torch.cuda.device_count()})"
    callables = {}
    try:
        for name, spec in arguments.specs.items():
            if unavailable is None:
                callables[name] = (*spec.load(), spec.text)
    except ValueError as error:
        print(f"torch_peer: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    document = build_document(arguments, listing, arguments.implementations, torch)
    if unavailable:
        for entry in listing:
            for case in entry["cases"]:
                for implementation in arguments.implementations:
                    document["records"].append(skipped_record(entry["name"], case, implementation, unavailable))
        document.update({"complete": True, "finished_at": utc_now()})
        write_atomically(output, document)
        print(f"torch_peer: nothing can run here: {unavailable}. Every record is skipped with that reason "
              f"({len(document['records'])} records in {output}).", file=sys.stderr)
        return EXIT_CANNOT_RUN

    device = torch.device("cuda", arguments.device)
    torch.cuda.set_device(device)
    description = describe_device(torch, arguments.device)
    document["devices"].append(description)
    flush = torch.empty(2 * max(description["l2_bytes"], 1 << 20), dtype=torch.uint8, device=device)
    events = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
    failed = False
    total = sum(len(entry["cases"]) for entry in listing)
    done = 0
    for entry, scenario in zip(listing, document["scenarios"]):
        for case in entry["cases"]:
            done += 1
            print(f"[{done}/{total}] {entry['name']}/{case['key']}", file=sys.stderr, flush=True)
            records = run_case(torch, device, entry["name"], case, arguments.implementations,
                               flush, events, scenario["measure"], scenario["accuracy"], callables)
            for record in records:
                failed |= record["status"] == "failed"
                print(f"    {record['implementation']:16} {record['status']:8} "
                      + (f"{record['timing']['statistics']['p50'] * 1e3:.3f} ms" if record["timing"]
                         else record["reason"][:100]), file=sys.stderr, flush=True)
            document["records"].extend(records)
            write_atomically(output, document)
    document.update({"complete": True, "finished_at": utc_now()})
    write_atomically(output, document)
    print(f"wrote {output}")
    return EXIT_FAILED if failed else 0


def run_case(torch, device, scenario, case, implementations, flush, events, measure_settings, accuracy_settings,
             callables):
    """Every backend on one case; the case's tensors are made once and shared."""
    gc.collect()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    try:
        tensors = TorchCase(torch, case["problem"], device)
    except torch.cuda.OutOfMemoryError as error:
        return [skipped_record(scenario, case, i, f"out of memory for the inputs: {str(error).splitlines()[0]}")
                for i in implementations]
    except Exception as error:
        record = [skipped_record(scenario, case, i, "") for i in implementations]
        for r in record:
            r.update({"status": "failed", "reason": f"inputs: {type(error).__name__}: {error}"})
        return record
    tensors.base_allocated = base
    records = [run_backend(torch, tensors, scenario, case, implementation, flush, events, measure_settings,
                           accuracy_settings, callables) for implementation in implementations]
    del tensors
    gc.collect()
    return records


if __name__ == "__main__":
    sys.exit(main())
