"""Attention callables for scripts/torch_peer.py (`--callable`, docs/peers.md).

A binding says how one callable is called on one case's tensors: which tensors
become the autograd leaves (made once, outside the timed region), the views
handed to the call, the one call that is timed, and how its output and
gradients map back to the harness's [B, H, Nq, D] output and storage-layout
gradients for the accuracy check. A case a library cannot express is refused
before anything runs (Unsupported, with the library's reason): the record is
skipped with it.

- sdpa_binding: any callable with torch.nn.functional.scaled_dot_product_attention's
  signature (SDPA itself, forced to one backend by torch_peer.py, or
  --callable MODULE:FUNCTION); it raises NotImplementedError to refuse a case.
- FlashAttention2: flash-attn 2.x, flash_attn_func / flash_attn_varlen_func
  (written for 2.8.3).
- FlashAttention3: FlashAttention-3, flash_attn_interface.flash_attn_func /
  flash_attn_varlen_func (the hopper/ package flash_attn_3 3.0.0).
- FlashInfer: flashinfer.single_prefill_with_kv_cache (one sequence) and
  BatchPrefillWithRaggedKVCacheWrapper (a batch), forward only (written for 0.6.18).

The adapters were written against those versions' signatures and are tested
against fake modules with the same signatures (tests/test_peer_callables.py);
they have not run against the real libraries. Every tensor operation goes
through a `tensors` object (TorchTensors here, numpy arrays in the tests), so
the mapping of masks, lengths, layout and GQA runs without a GPU.
"""
import importlib
import importlib.metadata
import itertools
import re

NAME_PATTERN = re.compile(r"^[a-z0-9_][a-z0-9_.-]*$")


class Unsupported(Exception):
    """The callable cannot express this case; the message says why (the record is skipped with it)."""


class TorchTensors:
    """The tensor operations the bindings need, on torch tensors of one device."""

    def __init__(self, torch, device):
        self.torch, self.device = torch, device

    @staticmethod
    def swap(tensor):
        """[B, S, H, D] <-> [B, H, S, D], a view."""
        return tensor.transpose(1, 2)

    def pack(self, tensor, lengths):
        """The valid rows of a [B, S, H, D] tensor, one sequence after another: [sum(lengths), H, D],
        contiguous (a copy)."""
        return self.torch.cat([tensor[b, :length] for b, length in enumerate(lengths)]).contiguous()

    def unpack(self, packed, lengths, seqlen):
        """[sum(lengths), H, D] -> [B, seqlen, H, D], zeros past each sequence's length."""
        out = packed.new_zeros((len(lengths), seqlen, *packed.shape[1:]))
        for b, (start, length) in enumerate(zip(offsets_of(lengths), lengths)):
            out[b, :length] = packed[start:start + length]
        return out

    def offsets(self, lengths):
        """[B + 1] int32 on the device: where each sequence starts in a packed tensor, then the total."""
        return self.torch.tensor(offsets_of(lengths), dtype=self.torch.int32, device=self.device)

    def bytes(self, count):
        return self.torch.empty(count, dtype=self.torch.uint8, device=self.device)

    def dtype(self, name):
        return {"fp16": self.torch.float16, "bf16": self.torch.bfloat16}[name]


def offsets_of(lengths):
    return [0, *itertools.accumulate(lengths)]


def lengths_of(problem):
    """(Lq, Lk) per batch element."""
    if problem["padding"]["kind"] == "none":
        return [problem["seqlen_q"]] * problem["batch"], [problem["seqlen_k"]] * problem["batch"]
    return problem["padding"]["lengths_q"], problem["padding"]["lengths_k"]


def padded(problem):
    lengths_q, lengths_k = lengths_of(problem)
    return lengths_q != [problem["seqlen_q"]] * problem["batch"] or lengths_k != [problem["seqlen_k"]] * problem["batch"]


def window_of(problem):
    """(left, right) with -1 for an unbounded side; (-1, -1) without a window."""
    if problem["window"] is None:
        return -1, -1
    left, right = problem["window"]
    return (left if left >= 0 else -1), (right if right >= 0 else -1)


def bottom_right_only(problem, library):
    """The refusal of a library that aligns causal and window masks bottom-right, or None."""
    masked = problem["causal"] or problem["window"] is not None
    lengths_q, lengths_k = lengths_of(problem)
    if masked and problem["align"] == "top_left" and any(q != k for q, k in zip(lengths_q, lengths_k)):
        return (f"{library} aligns causal and window masks to the bottom-right corner; this case asks top-left "
                "with a query length that differs from the key length")
    return None


def head_dim_refusal(problem, library, largest):
    if problem["head_dim"] > largest:
        return f"{library} supports head dims up to {largest}; this case has {problem['head_dim']}"
    return None


class Binding:
    """How one callable runs on one case (see the module's docstring). `arguments` and `inputs`
    run outside the timed region, `call` is the timed call, `output` and `gradient` feed the check."""

    def __init__(self, arguments, inputs, call, output, d_out, gradient):
        self.arguments, self.inputs, self.call = arguments, inputs, call
        self.output, self.d_out, self.gradient = output, d_out, gradient


def sdpa_binding(view, attention):
    """A callable with SDPA's convention: tensors [B, H, S, D] (views of the storage, so the
    gradients come back in the storage layout); `attention(q, k, v)` passes the case's mask."""
    return Binding(arguments=lambda storage: storage,
                   inputs=lambda leaves: [view(name, leaf) for name, leaf in zip("QKV", leaves)],
                   call=attention, output=lambda out: out, d_out=lambda d_out: view("dO", d_out),
                   gradient=lambda name, grad: grad)


def flash_layout_binding(problem, tensors, call_dense, call_packed):
    """flash-attn's layout: [B, S, H, D] (the storage itself for bshd, a view for bhsd) without
    padding; with padding, the valid rows packed one sequence after another ([total, H, D],
    copied once, outside the timed region) with the offsets of each sequence."""
    bhsd = problem["layout"] == "bhsd"
    as_bshd = tensors.swap if bhsd else (lambda tensor: tensor)
    if not padded(problem):
        return Binding(arguments=lambda storage: storage,
                       inputs=lambda leaves: [as_bshd(leaf) for leaf in leaves],
                       call=call_dense, output=tensors.swap, d_out=as_bshd, gradient=lambda name, grad: grad)
    lengths_q, lengths_k = lengths_of(problem)
    lengths = {"Q": lengths_q, "K": lengths_k, "V": lengths_k}
    seqlen = {"Q": problem["seqlen_q"], "K": problem["seqlen_k"], "V": problem["seqlen_k"]}
    return Binding(
        arguments=lambda storage: [tensors.pack(as_bshd(tensor), lengths[name]) for name, tensor in zip("QKV", storage)],
        inputs=lambda leaves: leaves,
        call=call_packed,
        output=lambda out: tensors.swap(tensors.unpack(out, lengths_q, problem["seqlen_q"])),
        d_out=lambda d_out: tensors.pack(as_bshd(d_out), lengths_q),
        gradient=lambda name, grad: as_bshd(tensors.unpack(grad, lengths[name], seqlen[name])))


def first_of(result):
    """The output of a call that returns it alone or first in a tuple (return_attn_probs, older FA3)."""
    return result[0] if isinstance(result, (tuple, list)) else result


class FlashAttention2:
    """flash-attn 2.x (written for 2.8.3): flash_attn_func(q, k, v, dropout_p, softmax_scale, causal,
    window_size, softcap, alibi_slopes, deterministic, return_attn_probs) and flash_attn_varlen_func
    (q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p, ...). Causal and
    window masks are bottom-right aligned; GQA, dropout (its own RNG) and the backward are native."""

    key, implementation, library, module_name = "fa2", "torch.fa2", "flash-attn", "flash_attn"

    def __init__(self, module):
        self.module = module

    def version(self):
        return getattr(self.module, "__version__", "unknown")

    def refusal(self, problem):
        return bottom_right_only(problem, self.library) or head_dim_refusal(problem, self.library, 256)

    def keywords(self, problem):
        return {"dropout_p": problem["dropout"]["p"], "softmax_scale": problem["scale"],
                "causal": bool(problem["causal"]), "window_size": window_of(problem)}

    def bind(self, problem, tensors):
        keywords = self.keywords(problem)
        lengths_q, lengths_k = lengths_of(problem)
        cu_q, cu_k = tensors.offsets(lengths_q), tensors.offsets(lengths_k)
        return flash_layout_binding(
            problem, tensors,
            call_dense=lambda q, k, v: first_of(self.module.flash_attn_func(q, k, v, **keywords)),
            call_packed=lambda q, k, v: first_of(self.module.flash_attn_varlen_func(
                q, k, v, cu_q, cu_k, max(lengths_q), max(lengths_k), **keywords)))


class FlashAttention3(FlashAttention2):
    """FlashAttention-3 (hopper/, package flash_attn_3 3.0.0): flash_attn_interface.flash_attn_func(q, k,
    v, softmax_scale, causal, qv, q_descale, k_descale, v_descale, window_size, ...) and
    flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_q,
    seqused_k, softmax_scale, causal, ...). No dropout."""

    key, implementation, library, module_name = "fa3", "torch.fa3", "FlashAttention-3", "flash_attn_interface"

    def version(self):
        try:
            return importlib.metadata.version("flash_attn_3")
        except importlib.metadata.PackageNotFoundError:
            return getattr(self.module, "__version__", "unknown")

    def refusal(self, problem):
        if problem["dropout"]["p"] > 0:
            return f"{self.library} has no dropout"
        return super().refusal(problem)

    def keywords(self, problem):
        return {"softmax_scale": problem["scale"], "causal": bool(problem["causal"]),
                "window_size": window_of(problem)}


class FlashInfer:
    """FlashInfer's prefill (written for 0.6.18): single_prefill_with_kv_cache(q [Nq, H, D], k, v [Nk,
    Hkv, D], ..., causal, kv_layout, pos_encoding_mode, use_fp16_qk_reduction, sm_scale, window_left,
    ...) for one unpadded sequence, else BatchPrefillWithRaggedKVCacheWrapper(workspace, "NHD") planned
    once (qo_indptr, kv_indptr, heads, kv heads, head dim, causal, sm_scale, window_left, data types)
    and run per call on the packed sequences. Bottom-right aligned; a left window bound only; no
    dropout and no backward."""

    key, implementation, library, module_name = "flashinfer", "torch.flashinfer", "FlashInfer", "flashinfer"
    WORKSPACE_BYTES = 128 << 20  # FlashInfer's recommended float workspace

    def __init__(self, module):
        self.module = module

    def version(self):
        return getattr(self.module, "__version__", "unknown")

    def refusal(self, problem):
        if problem["direction"] != "fwd":
            return f"{self.library}'s prefill has no backward"
        if problem["dropout"]["p"] > 0:
            return f"{self.library}'s prefill has no dropout"
        left, right = window_of(problem)
        if right >= 0 and not problem["causal"]:
            return f"{self.library}'s window has a left bound only (window_left); this case bounds it on the right"
        return bottom_right_only(problem, self.library)

    def bind(self, problem, tensors):
        left, _ = window_of(problem)
        lengths_q, lengths_k = lengths_of(problem)
        bhsd = problem["layout"] == "bhsd"
        as_bshd = tensors.swap if bhsd else (lambda tensor: tensor)
        lengths = {"Q": lengths_q, "K": lengths_k, "V": lengths_k}

        def arguments(storage):  # contiguous [total, heads, dim] copies, made once
            return [tensors.pack(as_bshd(tensor), lengths[name]) for name, tensor in zip("QKV", storage)]

        if problem["batch"] == 1 and not padded(problem):
            def call(q, k, v):
                return self.module.single_prefill_with_kv_cache(
                    q, k, v, causal=bool(problem["causal"]), kv_layout="NHD", sm_scale=problem["scale"],
                    window_left=left)
        else:
            wrapper = self.module.BatchPrefillWithRaggedKVCacheWrapper(tensors.bytes(self.WORKSPACE_BYTES), "NHD")
            dtype = tensors.dtype(problem["dtype"])
            wrapper.plan(tensors.offsets(lengths_q), tensors.offsets(lengths_k), problem["heads"], problem["kv_heads"],
                         problem["head_dim"], causal=bool(problem["causal"]), sm_scale=problem["scale"],
                         window_left=left, q_data_type=dtype, kv_data_type=dtype)

            def call(q, k, v):
                return wrapper.run(q, k, v)
        return Binding(arguments=arguments, inputs=lambda leaves: leaves, call=call,
                       output=lambda out: tensors.swap(tensors.unpack(out, lengths_q, problem["seqlen_q"])),
                       d_out=None, gradient=None)


ADAPTERS = {adapter.key: adapter for adapter in (FlashAttention2, FlashAttention3, FlashInfer)}


class CallableSpec:
    """One --callable: an adapter's key, or MODULE:FUNCTION[=NAME] with SDPA's signature."""

    def __init__(self, text):
        self.text = text
        if text in ADAPTERS:
            self.adapter, self.implementation = ADAPTERS[text], ADAPTERS[text].implementation
            return
        match = re.fullmatch(r"([A-Za-z_][\w.]*):([A-Za-z_]\w*)(?:=(.*))?", text)
        if not match:
            raise ValueError(f'--callable "{text}": expected MODULE:FUNCTION[=NAME] or one of '
                             f'{", ".join(ADAPTERS)}')
        self.adapter = None
        self.module_name, self.function_name, name = match.groups()
        name = name if name is not None else self.function_name.lower()
        if not NAME_PATTERN.match(name):
            raise ValueError(f'--callable "{text}": the name "{name}" must be lowercase letters, digits, '
                             "'_', '-' and '.'")
        self.implementation = "torch." + name

    def load(self):
        """(the adapter instance or the function, None), or (None, why it cannot run here) when an
        adapter's library is not installed. A MODULE:FUNCTION that does not import is bad input
        (ValueError)."""
        if self.adapter is not None:
            try:
                return self.adapter(importlib.import_module(self.adapter.module_name)), None
            except ImportError as error:
                return None, f"{self.adapter.library} is not installed (import {self.adapter.module_name}: {error})"
        try:
            module = importlib.import_module(self.module_name)
        except ImportError as error:
            raise ValueError(f'--callable "{self.text}": cannot import {self.module_name} ({error})') from error
        function = getattr(module, self.function_name, None)
        if not callable(function):
            raise ValueError(f'--callable "{self.text}": {self.module_name} has no callable {self.function_name}')
        return function, None
