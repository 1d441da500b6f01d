#!/usr/bin/env python3
"""scripts/peer_callables.py (torch_peer.py --callable) without PyTorch or a GPU.

flash-attn, FlashAttention-3 and FlashInfer cannot be installed here, so each
adapter is tested against a fake module with the signature of the version it
was written for (flash-attn 2.8.3, flash_attn_3 3.0.0, FlashInfer 0.6.18): an
unknown or misspelt keyword is a TypeError, as with the real function. Each
fake computes attention in numpy by the library's own documented rules
(bottom-right aligned causal and window masks, sequences packed by cumulative
offsets, kv head h // (heads / kv_heads)), written here from those docs; the
adapter's output over the harness's cases (every mask, padding, both layouts,
GQA) must match torch_peer.py's fp64 reference, which the torch_peer test
checks against attnbench's oracle. What a library cannot express is refused
with its reason. The gradients' way back to the storage layout is checked as
the inverse of the way in. torch_peer.py's --callable options: parsing, an
adapter whose library is missing, the default set of implementations.
"""
import importlib
import inspect
import json
import os
import pathlib
import subprocess
import sys

import numpy as np

import attnbench_testing

ARGS = None

FAKE_FLASH_ATTN = '''
"""flash-attn 2.8.3's two entry points, computed in numpy from their docstrings."""
import numpy as np
__version__ = "2.8.3"

def _attend(q, k, v, scale, causal, window_size):
    # one sequence: q [Sq, H, D], k, v [Sk, Hk, D]; query i sees keys in
    # [i + Sk - Sq - left, i + Sk - Sq + right]; causal sets right to 0
    sq, heads, _ = q.shape
    sk, kv_heads, _ = k.shape
    left, right = window_size
    if causal:
        right = 0
    out = np.zeros(q.shape)
    for h in range(heads):
        kh = h // (heads // kv_heads)
        for i in range(sq):
            keys = [j for j in range(sk) if (left < 0 or j >= i + sk - sq - left) and (right < 0 or j <= i + sk - sq + right)]
            if not keys:
                continue
            s = scale * (k[keys, kh] @ q[i, h])
            p = np.exp(s - s.max())
            out[i, h] = (p / p.sum()) @ v[keys, kh]
    return out

def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                    alibi_slopes=None, deterministic=False, return_attn_probs=False):
    assert q.strides[-1] == q.itemsize and k.strides[-1] == k.itemsize, "last dim must be contiguous"
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    return np.stack([_attend(q[b], k[b], v[b], scale, causal, window_size) for b in range(q.shape[0])])

def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                           softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                           deterministic=False, return_attn_probs=False, block_table=None):
    assert cu_seqlens_q.dtype == np.int32 and cu_seqlens_k.dtype == np.int32
    assert max_seqlen_q == max(np.diff(cu_seqlens_q)) and max_seqlen_k == max(np.diff(cu_seqlens_k))
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    out = np.zeros(q.shape)
    for b in range(len(cu_seqlens_q) - 1):
        qs, qe, ks, ke = cu_seqlens_q[b], cu_seqlens_q[b + 1], cu_seqlens_k[b], cu_seqlens_k[b + 1]
        out[qs:qe] = _attend(q[qs:qe], k[ks:ke], v[ks:ke], scale, causal, window_size)
    return out
'''

FAKE_FLASH_ATTN_INTERFACE = '''
"""FlashAttention-3's entry points (hopper/, flash_attn_3 3.0.0): flash-attn's rules, no dropout."""
from flash_attn import _attend, flash_attn_varlen_func as _varlen
import numpy as np

def flash_attn_func(q, k, v, softmax_scale=None, causal=False, qv=None, q_descale=None, k_descale=None,
                    v_descale=None, window_size=(-1, -1), attention_chunk=0, softcap=0.0, num_splits=1,
                    pack_gqa=None, deterministic=False, sm_margin=0, return_attn_probs=False):
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    return np.stack([_attend(q[b], k[b], v[b], scale, causal, window_size) for b in range(q.shape[0])])

def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_q=None,
                           seqused_k=None, softmax_scale=None, causal=False, qv=None, q_descale=None,
                           k_descale=None, v_descale=None, window_size=(-1, -1), attention_chunk=0, softcap=0.0,
                           num_splits=1, pack_gqa=None, deterministic=False, sm_margin=0, return_attn_probs=False):
    return _varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, softmax_scale=softmax_scale,
                   causal=causal, window_size=window_size)
'''

FAKE_FLASHINFER = '''
"""FlashInfer 0.6.18's prefill: the key i + kv_len - qo_len - window_left is the first a query sees."""
import numpy as np
__version__ = "0.6.18"

def _attend(q, k, v, causal, sm_scale, window_left):
    sq, heads, _ = q.shape
    sk, kv_heads, _ = k.shape
    scale = sm_scale if sm_scale is not None else q.shape[-1] ** -0.5
    out = np.zeros(q.shape)
    for h in range(heads):
        kh = h // (heads // kv_heads)
        for i in range(sq):
            keys = [j for j in range(sk) if (not causal or j <= i + sk - sq)
                    and (window_left < 0 or j + sq + window_left >= sk + i)]
            if keys:
                s = scale * (k[keys, kh] @ q[i, h])
                p = np.exp(s - s.max())
                out[i, h] = (p / p.sum()) @ v[keys, kh]
    return out

def single_prefill_with_kv_cache(q, k, v, scale_q=None, scale_k=None, scale_v=None, o_dtype=None, custom_mask=None,
                                 packed_custom_mask=None, causal=False, kv_layout="NHD", pos_encoding_mode="NONE",
                                 use_fp16_qk_reduction=False, sm_scale=None, window_left=-1, logits_soft_cap=None,
                                 rope_scale=None, rope_theta=None, backend="auto", return_lse=False,
                                 kv_cache_sf=None, k_scale=None, v_scale=None):
    assert kv_layout == "NHD" and q.flags.c_contiguous
    return _attend(q, k, v, causal, sm_scale, window_left)

class BatchPrefillWithRaggedKVCacheWrapper:
    def __init__(self, float_workspace_buffer, kv_layout="NHD", use_cuda_graph=False, qo_indptr_buf=None,
                 kv_indptr_buf=None, custom_mask_buf=None, mask_indptr_buf=None, backend="auto", jit_args=None,
                 jit_kwargs=None):
        assert kv_layout == "NHD" and float_workspace_buffer.nbytes >= 128 << 20
        self.planned = None

    def plan(self, qo_indptr, kv_indptr, num_qo_heads, num_kv_heads, head_dim_qk, head_dim_vo=None, custom_mask=None,
             packed_custom_mask=None, causal=False, pos_encoding_mode="NONE", use_fp16_qk_reduction=False,
             window_left=-1, logits_soft_cap=None, sm_scale=None, rope_scale=None, rope_theta=None,
             q_data_type="float16", kv_data_type=None, o_data_type=None, non_blocking=True, prefix_len_ptr=None,
             token_pos_in_items_ptr=None, token_pos_in_items_len=0, max_item_len_ptr=None, fixed_split_size=None,
             disable_split_kv=False, seq_lens=None, seq_lens_q=None, max_token_per_sequence=None,
             max_sequence_kv=None, v_indptr=None, o_indptr=None):
        assert qo_indptr.dtype == np.int32 and q_data_type in ("fp16", "bf16")
        self.planned = (qo_indptr, kv_indptr, num_qo_heads, num_kv_heads, causal, sm_scale, window_left)

    def run(self, q, k, v, *args, q_scale=None, k_scale=None, v_scale=None, o_scale=None, out=None, lse=None,
            return_lse=False, enable_pdl=None, kv_cache_sf=None):
        qo, kv, heads, kv_heads, causal, sm_scale, window_left = self.planned
        assert q.shape[1] == heads and k.shape[1] == kv_heads
        result = np.zeros(q.shape)
        for b in range(len(qo) - 1):
            result[qo[b]:qo[b + 1]] = _attend(q[qo[b]:qo[b + 1]], k[kv[b]:kv[b + 1]], v[kv[b]:kv[b + 1]], causal,
                                              sm_scale, window_left)
        return result
'''

# The cases each adapter maps: every mask and alignment, padding, GQA, both layouts, one sequence.
SCENARIO = {
    "name": "callables",
    "description": "cases for the adapters of scripts/peer_callables.py",
    "defaults": {"batch": 2, "heads": 4, "kv_heads": 2, "head_dim": 8, "seqlen_q": 9, "seqlen_k": 13},
    "cases": [
        {},
        {"causal": True},
        {"causal": True, "seqlen_q": 13, "seqlen_k": 9},
        {"window": [3, 0]},
        {"window": [2, 2], "layout": "bhsd"},
        {"window": [4, -1], "causal": True, "kv_heads": 1},
        {"causal": True, "align": "top_left", "seqlen": 11},
        {"causal": True, "align": "top_left"},
        {"seqlen": 12, "causal": True, "padding": {"lengths_q": [12, 5], "lengths_k": [12, 7]}},
        {"seqlen": 12, "window": [3, 1], "padding": {"lengths": [12, 6]}, "layout": "bhsd"},
        {"batch": 1, "causal": True, "layout": "bhsd"},
        {"dropout": 0.1},
        {"direction": "fwd+bwd", "causal": True},
        {"head_dim": 264, "seqlen": 4},
    ],
    "implementations": ["cpu.reference"],
}


class NumpyTensors:
    """peer_callables.TorchTensors's operations on numpy arrays."""

    @staticmethod
    def swap(tensor):
        return np.swapaxes(tensor, 1, 2)

    @staticmethod
    def pack(tensor, lengths):
        return np.ascontiguousarray(np.concatenate([tensor[b, :length] for b, length in enumerate(lengths)]))

    @staticmethod
    def unpack(packed, lengths, seqlen):
        out = np.zeros((len(lengths), seqlen, *packed.shape[1:]))
        start = 0
        for b, length in enumerate(lengths):
            out[b, :length] = packed[start:start + length]
            start += length
        return out

    @staticmethod
    def offsets(lengths):
        return np.array([0, *np.cumsum(lengths)], dtype=np.int32)

    @staticmethod
    def bytes(count):
        return np.empty(count, dtype=np.uint8)

    @staticmethod
    def dtype(name):
        return name


class Callables(attnbench_testing.ScenarioTestCase):
    prefix, scenario_content, scenario_file = "attnbench_callables_", SCENARIO, "callables.json"

    @classmethod
    def setUpClass(cls):
        cls.callables = attnbench_testing.load_script(ARGS.source_dir, "peer_callables")
        cls.peer = attnbench_testing.load_script(ARGS.source_dir, "torch_peer")
        cls.fakes = attnbench_testing.make_temporary_directory("attnbench_fake_libraries_")
        (cls.fakes / "flash_attn").mkdir()
        (cls.fakes / "flash_attn" / "__init__.py").write_text(FAKE_FLASH_ATTN)
        (cls.fakes / "flash_attn_interface.py").write_text(FAKE_FLASH_ATTN_INTERFACE)
        (cls.fakes / "flashinfer").mkdir()
        (cls.fakes / "flashinfer" / "__init__.py").write_text(FAKE_FLASHINFER)
        sys.path.insert(0, str(cls.fakes))
        path = attnbench_testing.write_scenario(cls.fakes / "callables.json", SCENARIO)
        cls.problems = [case["problem"] for case in attnbench_testing.listed_scenario(ARGS.binary, path)["cases"]]

    @classmethod
    def tearDownClass(cls):
        sys.path.remove(str(cls.fakes))
        for name in ("flash_attn", "flash_attn_interface", "flashinfer"):
            sys.modules.pop(name, None)

    def adapters(self):
        for key in ("fa2", "fa3", "flashinfer"):
            adapter, unavailable = self.callables.CallableSpec(key).load()
            self.assertIsNone(unavailable)
            yield adapter

    def storage(self, problem, seed):
        rng = np.random.default_rng(seed)
        tensors = {}
        for name in ("Q", "K", "V", "dO"):
            shape = list(self.peer.logical_shape(problem, name))
            if problem["layout"] == "bhsd":
                shape[1], shape[2] = shape[2], shape[1]
            tensors[name] = rng.standard_normal(shape)
        return tensors

    def logical(self, problem, tensor):
        return np.swapaxes(tensor, 1, 2) if problem["layout"] == "bhsd" else tensor

    # ---- each adapter against its fake, over the harness's cases ----

    def test_outputs_match_the_reference_or_the_case_is_refused_with_a_reason(self):
        expected_refusals = {
            "fa2": {7: "bottom-right corner", 13: "head dims up to 256"},
            "fa3": {7: "bottom-right corner", 11: "has no dropout", 13: "head dims up to 256"},
            "flashinfer": {3: "left bound only", 4: "left bound only", 7: "bottom-right corner",
                           9: "left bound only", 11: "has no dropout", 12: "has no backward"},
        }
        for adapter in self.adapters():
            for index, problem in enumerate(self.problems):
                with self.subTest(adapter=adapter.key, case=index):
                    refusal = adapter.refusal(problem)
                    expected = expected_refusals[adapter.key].get(index)
                    if expected:
                        self.assertIsNotNone(refusal)
                        self.assertIn(expected, refusal)
                        continue
                    self.assertIsNone(refusal)
                    if problem["dropout"]["p"] > 0:
                        continue  # the library's own RNG: not checked (docs/peers.md)
                    self.check_output(adapter, problem, index)

    def check_output(self, adapter, problem, seed):
        storage = self.storage(problem, seed)
        binding = adapter.bind(problem, NumpyTensors())
        out = binding.output(binding.call(*binding.inputs(binding.arguments([storage[n] for n in "QKV"]))))
        self.assertEqual(out.shape, (problem["batch"], problem["heads"], problem["seqlen_q"], problem["head_dim"]))
        q, k, v = (self.logical(problem, storage[n]) for n in "QKV")
        group = problem["heads"] // problem["kv_heads"]
        for b in range(problem["batch"]):
            rows = self.peer.valid_rows(problem, b)
            for kv in range(problem["kv_heads"]):
                heads = slice(kv * group, (kv + 1) * group)
                reference = self.peer.reference_unit(
                    q[b, :, heads].transpose(1, 0, 2), k[b, :, kv], v[b, :, kv], None,
                    self.peer.visible_matrix(problem, b), problem["scale"], key_side=False)["O"]
                np.testing.assert_allclose(out[b, heads, :rows], reference[:, :rows], rtol=0, atol=1e-12)

    def test_gradients_return_to_the_storage_layout(self):
        """binding.gradient undoes binding.arguments: what is differentiated is a view or a packed
        copy of the storage, and the gradient comes back where the storage holds it (padded rows 0)."""
        for adapter in list(self.adapters())[:2]:  # flash-attn 2 and 3 have a backward
            for index in (1, 4, 8, 9):
                problem = self.problems[index]
                with self.subTest(adapter=adapter.key, case=index):
                    storage = self.storage(problem, index)
                    binding = adapter.bind(problem, NumpyTensors())
                    arguments = binding.arguments([storage[n] for n in "QKV"])
                    lengths_q, lengths_k = self.callables.lengths_of(problem)
                    for name, argument, lengths in zip("QKV", arguments, (lengths_q, lengths_k, lengths_k)):
                        expected = self.logical(problem, storage[name]).copy()
                        for b, length in enumerate(lengths):
                            expected[b, length:] = 0
                        np.testing.assert_array_equal(self.logical(problem, binding.gradient(name, argument)),
                                                      expected)
                    d_out = binding.d_out(storage["dO"])
                    self.assertEqual(d_out.shape[-2:], (problem["heads"], problem["head_dim"]))

    def test_the_fakes_have_the_pinned_signatures(self):
        """The parameters each adapter passes exist in the pinned signature (a misspelt keyword
        would be a TypeError against the real library too)."""
        import flash_attn
        import flash_attn_interface
        import flashinfer
        pinned = {
            flash_attn.flash_attn_func: ["q", "k", "v", "dropout_p", "softmax_scale", "causal", "window_size",
                                         "softcap", "alibi_slopes", "deterministic", "return_attn_probs"],
            flash_attn_interface.flash_attn_func: [
                "q", "k", "v", "softmax_scale", "causal", "qv", "q_descale", "k_descale", "v_descale", "window_size",
                "attention_chunk", "softcap", "num_splits", "pack_gqa", "deterministic", "sm_margin",
                "return_attn_probs"],
            flashinfer.single_prefill_with_kv_cache: [
                "q", "k", "v", "scale_q", "scale_k", "scale_v", "o_dtype", "custom_mask", "packed_custom_mask",
                "causal", "kv_layout", "pos_encoding_mode", "use_fp16_qk_reduction", "sm_scale", "window_left",
                "logits_soft_cap", "rope_scale", "rope_theta", "backend", "return_lse", "kv_cache_sf", "k_scale",
                "v_scale"],
        }
        for function, parameters in pinned.items():
            self.assertEqual(list(inspect.signature(function).parameters), parameters, function.__qualname__)
        problem = self.problems[5]
        for adapter in list(self.adapters())[:2]:
            inspect.signature(adapter.module.flash_attn_func).bind("q", "k", "v", **adapter.keywords(problem))
        self.assertEqual(self.callables.CallableSpec("fa2").load()[0].version(), "2.8.3")

    # ---- --callable on the command line ----

    def test_a_missing_library_or_module(self):
        spec = self.callables.CallableSpec("fa2")
        sys.modules.pop("flash_attn", None)
        sys.path.remove(str(self.fakes))
        try:
            adapter, reason = spec.load()
            self.assertIsNone(adapter)
            self.assertTrue(reason.startswith("flash-attn is not installed (import flash_attn: "), reason)
        finally:
            sys.path.insert(0, str(self.fakes))
            importlib.invalidate_caches()
        with self.assertRaisesRegex(ValueError, "cannot import no_such_module"):
            self.callables.CallableSpec("no_such_module:attention").load()
        with self.assertRaisesRegex(ValueError, "has no callable nothing_here"):
            self.callables.CallableSpec("flash_attn:nothing_here").load()
        function, reason = self.callables.CallableSpec("flash_attn:flash_attn_func=fa").load()
        self.assertTrue(callable(function) and reason is None)
        self.assertEqual(self.callables.CallableSpec("mod.sub:Attention").implementation, "torch.attention")

    def test_the_command_line(self):
        def peer(*arguments):
            stub = self.directory / "stub"
            (stub / "torch").mkdir(parents=True, exist_ok=True)
            (stub / "torch" / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
            (stub / "mykernels.py").write_text("def attention(q, k, v):\n    raise AssertionError('never called')\n")
            env = dict(os.environ, PYTHONPATH=str(stub))
            return subprocess.run([sys.executable, str(ARGS.source_dir / "scripts" / "torch_peer.py"), "--attnbench",
                                   str(ARGS.binary), str(self.scenario), "-o", str(output), *arguments],
                                  capture_output=True, text=True, env=env)
        output = self.directory / "peer.json"
        for arguments, message in ((["--callable", "flash_attn"], "expected MODULE:FUNCTION[=NAME]"),
                                   (["--callable", "m:f=Bad Name"], 'the name "Bad Name"'),
                                   (["--callable", "fa2", "--callable", "fa2"], "torch.fa2 is already measured"),
                                   (["--backends", "flash", "--callable", "m:f=flash"], "torch.flash is already")):
            with self.subTest(arguments=arguments):
                run = peer(*arguments)
                self.assertEqual(run.returncode, 2, run.stderr)
                self.assertIn(message, run.stderr)
                self.assertFalse(output.exists())
        run = peer("--callable", "fa2", "--callable", "mykernels:attention=mine", "--filter", "k9-")
        self.assertEqual(run.returncode, 4, run.stderr)
        document = json.loads(output.read_text())
        self.assertEqual(document["scenarios"][0]["implementations"], ["torch.fa2", "torch.mine"])
        self.assertEqual({r["reason"] for r in document["records"]}, {"PyTorch is not installed"})


if __name__ == "__main__":
    ARGS, rest = attnbench_testing.parse_path_arguments(binary="the attnbench binary", source_dir="the checkout")
    attnbench_testing.run_unittests(rest)
