/*
 * attnbench plug-in ABI, version 1.1: attention implementations in a shared
 * library that attnbench loads at run time (`attnbench run --plugin PATH`,
 * docs/plugins.md).
 *
 * This header is the whole interface: plain C99, no other attnbench header, so a
 * plug-in can be built by any C, C++ or CUDA compiler against any standard
 * library. A plug-in exports the two functions declared at the end of this
 * header: attnbench_plugin_abi_version() (write ATTNBENCH_PLUGIN_DEFINE_ABI_VERSION
 * once) and attnbench_plugin_register(), which calls
 * registrar->add(registrar, &implementation) once per implementation.
 *
 * attnbench checks the ABI version before it calls anything else, and refuses a
 * library of another version. Every struct starts with `struct_size`: a later
 * minor revision of this version only appends fields, and each side reads no
 * further than the size the other gave. Minor revisions:
 *   1.0  the entry points, the problem, buffers, context, implementation and registrar;
 *   1.1  attnbench_implementation.release_user_data, attnbench_registrar.abi_minor_version.
 * A plug-in built against 1.0 loads unchanged; a plug-in built against 1.1 that
 * may run under a 1.0 attnbench reads attnbench_registrar_minor_version() to
 * learn whether release_user_data will be called.
 *
 * What the harness guarantees, for every call:
 * - every buffer (inputs, outputs, the workspace) was allocated by the harness
 *   from one arena per (case, implementation) on the implementation's device,
 *   so the record's peak memory is measured; outputs and the workspace are
 *   filled with NaN before the call that is checked against the fp64 oracle;
 * - inputs hold seeded random values, never all zeros, and are not written;
 * - `forward` and `backward` of one case see the same buffers, and the
 *   workspace persists from `forward` to `backward`;
 * - the problem passed to `forward` and `backward` is one `supports` accepted;
 * - calls come from one host thread at a time.
 *
 * What a plug-in must not do:
 * - allocate device memory of its own (cudaMalloc, cudaMallocAsync, a cuBLAS
 *   handle's workspace...): ask for a workspace instead. attnbench compares the
 *   device's free memory around the checked call and flags the record, whose
 *   peak memory is then incomplete;
 * - work on any CUDA stream but the one in the context (not the default stream
 *   either): samples are timed by events on that stream, so other work is not
 *   timed. attnbench captures one call on the stream (CUDA stream capture) and
 *   fails the record when nothing was captured;
 * - keep pointers to the buffers, the problem or the context after a call;
 * - write outside the buffers and their sizes, or write the inputs.
 */
#ifndef ATTNBENCH_PLUGIN_H
#define ATTNBENCH_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
#define ATTNBENCH_PLUGIN_EXTERN_C extern "C"
#else
#define ATTNBENCH_PLUGIN_EXTERN_C
#endif
#if defined(_WIN32)
#define ATTNBENCH_PLUGIN_EXPORT ATTNBENCH_PLUGIN_EXTERN_C __declspec(dllexport)
#else
#define ATTNBENCH_PLUGIN_EXPORT ATTNBENCH_PLUGIN_EXTERN_C __attribute__((visibility("default")))
#endif

/* The version of this ABI; attnbench loads only plug-ins built against the same. */
#define ATTNBENCH_PLUGIN_ABI_VERSION 1u
/* The minor revision of this header: the fields it knows (see the list above). */
#define ATTNBENCH_PLUGIN_ABI_MINOR_VERSION 1u

/* Defines the version function every plug-in exports; write it once, at file scope. */
#define ATTNBENCH_PLUGIN_DEFINE_ABI_VERSION \
  ATTNBENCH_PLUGIN_EXPORT uint32_t attnbench_plugin_abi_version(void) { return ATTNBENCH_PLUGIN_ABI_VERSION; }

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Status and messages ------------------------------------------------------ */

/* What every callback returns. */
#define ATTNBENCH_STATUS_OK 0          /* done (for `supports`: the problem is supported) */
#define ATTNBENCH_STATUS_ERROR 1       /* failed: the message says why; the record fails with it */
#define ATTNBENCH_STATUS_UNSUPPORTED 2 /* `supports` only: not this problem; the message is the reason */

/* Where a callback writes its reason or error: a NUL-terminated UTF-8 sentence,
 * cut at `capacity` bytes (the harness gives at least 1024). */
typedef struct attnbench_message {
  char* text;
  size_t capacity;
} attnbench_message;

/* Copies `text` into `message` (cut to fit) and returns `status`:
 *   return attnbench_message_set(message, ATTNBENCH_STATUS_UNSUPPORTED, "no dropout");  */
static inline int32_t attnbench_message_set(attnbench_message* message, int32_t status, const char* text) {
  if (message && message->text && message->capacity > 0) {
    size_t length = strlen(text);
    if (length >= message->capacity) length = message->capacity - 1;
    memcpy(message->text, text, length);
    message->text[length] = '\0';
  }
  return status;
}

/* ---- The problem ---------------------------------------------------------------- */

/* Element types. Inputs (Q, K, V, dO) are fp16 or bf16; O, dQ, dK and dV have the
 * type the implementation declares (`output_dtype`); LSE is always fp32. */
#define ATTNBENCH_DTYPE_FP16 1 /* IEEE binary16 */
#define ATTNBENCH_DTYPE_BF16 2 /* bfloat16: the upper 16 bits of a binary32 */
#define ATTNBENCH_DTYPE_FP32 3 /* IEEE binary32 */

/* How Q, K, V, O and the gradients are laid out in memory (the strides say it too). */
#define ATTNBENCH_LAYOUT_BSHD 0 /* [batch, seq, heads, dim], flash-attn's */
#define ATTNBENCH_LAYOUT_BHSD 1 /* [batch, heads, seq, dim] */

/* What one call computes. */
#define ATTNBENCH_DIRECTION_FWD 0     /* forward only */
#define ATTNBENCH_DIRECTION_BWD 1     /* backward; the forward runs first, untimed */
#define ATTNBENCH_DIRECTION_FWD_BWD 2 /* forward then backward, both timed */

/* Where the causal and window constraints are aligned when Lq != Lk. */
#define ATTNBENCH_ALIGN_TOP_LEFT 0     /* key j visible to query i iff j <= i */
#define ATTNBENCH_ALIGN_BOTTOM_RIGHT 1 /* iff j <= i + Lk - Lq (flash-attn >= 2.1) */

/* Element strides of a tensor indexed [batch, seq, head, dim]; the dim stride is 1.
 * Element (b, s, h, c) is at data[b * batch + s * seq + h * head + c]. */
typedef struct attnbench_strides {
  int64_t batch;
  int64_t seq;
  int64_t head;
} attnbench_strides;

typedef struct attnbench_problem {
  uint32_t struct_size; /* sizeof(attnbench_problem) of the harness */
  int32_t direction;    /* ATTNBENCH_DIRECTION_* */

  /* Sizes. Query head h reads kv head h / (heads / kv_heads) (grouped-query attention). */
  int64_t batch;
  int64_t heads;    /* query heads */
  int64_t kv_heads; /* key/value heads; divides heads */
  int64_t seqlen_q; /* Nq: query rows per batch element, padding included */
  int64_t seqlen_k; /* Nk: key rows per batch element, padding included */
  int64_t head_dim; /* d */

  int32_t input_dtype;  /* Q, K, V, dO: ATTNBENCH_DTYPE_FP16 or _BF16 */
  int32_t output_dtype; /* O, dQ, dK, dV: what the implementation declared */
  int32_t layout;       /* ATTNBENCH_LAYOUT_*; the strides below are its consequence */
  int32_t causal;       /* 1: key j is invisible to query i when j > i + shift */

  /* Strides in elements. dO has O's, dQ has Q's, dK has K's and dV has V's.
   * LSE is [batch, heads, seqlen_q], contiguous: element (b, h, i) is at (b * heads + h) * seqlen_q + i. */
  attnbench_strides q, k, v, o;

  /* The mask, for batch element b with valid lengths Lq = lengths_q[b], Lk = lengths_k[b]:
   *   shift = Lk - Lq with ATTNBENCH_ALIGN_BOTTOM_RIGHT, 0 with _TOP_LEFT;
   *   padding: key j >= Lk is invisible; query rows i >= Lq see nothing;
   *   causal:  key j is invisible when j > i + shift;
   *   window:  key j is invisible when j < i + shift - window_left (if window_left >= 0)
   *            or j > i + shift + window_right (if window_right >= 0); negative: unbounded;
   * causal and window combine (their intersection). A query row that sees no key
   * (padding rows included) has O = 0, LSE = -infinity, dQ = 0; keys that no row
   * sees have dK = dV = 0. Never NaN. */
  int32_t align; /* ATTNBENCH_ALIGN_* */
  int32_t padded; /* 0: every Lq = seqlen_q and Lk = seqlen_k; the arrays hold those */
  int64_t window_left;
  int64_t window_right;
  const int64_t* lengths_q; /* [batch], host memory, always set */
  const int64_t* lengths_k; /* [batch], host memory, always set */
  /* The same arrays in device memory, for CUDA plug-ins in `forward` and
   * `backward` (harness-owned, outside the workspace); NULL otherwise. */
  const int64_t* device_lengths_q;
  const int64_t* device_lengths_k;

  /* Softmax: P = softmax(scale * Q K^T + mask) row by row. */
  double scale; /* resolved: 1/sqrt(head_dim) unless the scenario set it */

  /* Dropout on P after normalization, with attnbench's Philox contract
   * (docs/design.md section 2.3) so outputs can be checked: element (b, h, i, j)
   * takes Philox4x32-10 with counter {j / 4, i, b * heads + h, dropout_offset} and
   * key {seed low 32 bits, seed high 32 bits}, output word j % 4; it is dropped iff
   * that word < min(floor(p * 2^32), 2^32 - 1); kept ones are scaled by 1 / (1 - p).
   * dropout_p = 0 means no dropout. Refuse it in `supports` if you do not implement it. */
  double dropout_p;
  uint64_t dropout_seed;
  uint32_t dropout_offset;
} attnbench_problem;

/* ---- Buffers and context ---------------------------------------------------------- */

/* Device memory the harness allocated for one case (host memory for CPU plug-ins). */
typedef struct attnbench_buffers {
  uint32_t struct_size;
  const void* q;     /* [batch, seqlen_q, heads, head_dim] in the layout, input dtype */
  const void* k;     /* [batch, seqlen_k, kv_heads, head_dim] */
  const void* v;     /* like k */
  const void* d_out; /* like q; NULL when the direction has no backward */
  void* out;         /* like q, output dtype: written by `forward` */
  float* lse;        /* [batch, heads, seqlen_q] fp32, natural log: written by `forward` */
  void* d_q;         /* like q, output dtype: written by `backward`; NULL without one */
  void* d_k;         /* like k, output dtype */
  void* d_v;         /* like v, output dtype */
  void* workspace;   /* workspace_bytes bytes (256-byte aligned), or NULL for none */
  uint64_t workspace_bytes;
} attnbench_buffers;

typedef struct attnbench_context {
  uint32_t struct_size;
  int32_t threads;        /* host threads a CPU plug-in may use (>= 1) */
  void* stream;           /* CUDA plug-ins: the cudaStream_t to launch every operation on */
  int32_t device_ordinal; /* CUDA plug-ins: the device attnbench uses (already current) */
} attnbench_context;

/* ---- Implementations ---------------------------------------------------------------- */

#define ATTNBENCH_DEVICE_CPU 1  /* runs on the host; buffers are host memory */
#define ATTNBENCH_DEVICE_CUDA 2 /* runs on attnbench's CUDA device and stream */

#define ATTNBENCH_ALGORITHM_FUSED 1         /* never writes S or P to memory (O(N) extra) */
#define ATTNBENCH_ALGORITHM_MATERIALIZING 2 /* writes S and/or P (Theta(N^2) extra) */

/* `output_dtype`: 0 stores O, dQ, dK, dV in the input dtype; or ATTNBENCH_DTYPE_FP32. */
#define ATTNBENCH_OUTPUT_INPUT_DTYPE 0

/* Whether this implementation handles `problem`: ATTNBENCH_STATUS_OK, or
 * ATTNBENCH_STATUS_UNSUPPORTED with the reason in `message` (the case is recorded
 * as skipped with it). No buffers yet: called before anything is allocated. */
typedef int32_t (*attnbench_supports_fn)(void* user_data, const attnbench_problem* problem,
                                         attnbench_message* message);
/* Bytes of workspace `forward` and `backward` need together (including what the
 * forward keeps for the backward), for the threads in `context`. */
typedef int32_t (*attnbench_workspace_fn)(void* user_data, const attnbench_problem* problem,
                                          const attnbench_context* context, uint64_t* bytes,
                                          attnbench_message* message);
/* One forward or backward pass; on a CUDA plug-in, enqueued on context->stream
 * (the harness synchronizes). ATTNBENCH_STATUS_ERROR with a message fails the record. */
typedef int32_t (*attnbench_call_fn)(void* user_data, const attnbench_problem* problem,
                                     const attnbench_buffers* buffers, const attnbench_context* context,
                                     attnbench_message* message);

/* Frees what `user_data` holds (attnbench_implementation.release_user_data). */
typedef void (*attnbench_release_fn)(void* user_data);

typedef struct attnbench_implementation {
  uint32_t struct_size; /* sizeof(attnbench_implementation) */
  /* "<device>.<algorithm>": starts with "cpu." or "cuda." as `device` says; then
   * lowercase letters, digits, '_', '-' and '.'; at most 64 bytes; unique among
   * built-in and loaded implementations. */
  const char* name;
  int32_t device;    /* ATTNBENCH_DEVICE_* */
  int32_t algorithm; /* ATTNBENCH_ALGORITHM_* */
  const char* summary;           /* one line for `attnbench info` and `list` */
  const char* version;           /* this implementation's own version, recorded with each record */
  const char* accuracy_baseline; /* NULL, or the materializing implementation whose error bounds
                                    a fused one's (at most twice it plus a floor), e.g. "cuda.cublas" */
  const char* configuration;     /* NULL, or a text recorded with each record (tile sizes, flags) */
  int32_t output_dtype;          /* ATTNBENCH_OUTPUT_INPUT_DTYPE or ATTNBENCH_DTYPE_FP32 */
  void* user_data;               /* handed back to every callback */
  attnbench_supports_fn supports;         /* required */
  attnbench_workspace_fn workspace_bytes; /* NULL: no workspace */
  attnbench_call_fn forward;              /* required */
  attnbench_call_fn backward;             /* NULL: forward only (backward cases are skipped) */
  /* Since 1.1. NULL, or called once with `user_data` when attnbench is done with
   * this implementation: at the end of the command, or at once when the
   * plug-in's registration is refused. Not called when the process dies (a
   * signal, a crash). A plug-in that shares one user_data among implementations
   * sets it on one of them. */
  attnbench_release_fn release_user_data;
} attnbench_implementation;

/* What `attnbench_plugin_register` receives. `add` copies everything it needs
 * (the strings too) and returns ATTNBENCH_STATUS_OK, or ATTNBENCH_STATUS_ERROR
 * when attnbench refuses the implementation (it reports why itself). */
typedef struct attnbench_registrar {
  uint32_t struct_size;
  uint32_t abi_version; /* ATTNBENCH_PLUGIN_ABI_VERSION of the harness */
  void* harness;        /* attnbench's; do not touch */
  int32_t (*add)(struct attnbench_registrar* registrar, const attnbench_implementation* implementation);
  uint32_t abi_minor_version; /* since 1.1: ATTNBENCH_PLUGIN_ABI_MINOR_VERSION of the harness */
} attnbench_registrar;

/* The minor revision of the attnbench that loads the plug-in: 0 for one older than 1.1. */
static inline uint32_t attnbench_registrar_minor_version(const attnbench_registrar* registrar) {
  return registrar->struct_size >= offsetof(attnbench_registrar, abi_minor_version) + sizeof(uint32_t)
             ? registrar->abi_minor_version
             : 0u;
}

/* ---- The entry points ----------------------------------------------------------- */

/* Returns ATTNBENCH_PLUGIN_ABI_VERSION; ATTNBENCH_PLUGIN_DEFINE_ABI_VERSION defines it. */
typedef uint32_t (*attnbench_plugin_abi_version_fn)(void);
#define ATTNBENCH_PLUGIN_ABI_VERSION_SYMBOL "attnbench_plugin_abi_version"

/* Calls registrar->add once per implementation; ATTNBENCH_STATUS_OK, or
 * ATTNBENCH_STATUS_ERROR with the reason in `message` (nothing is registered). */
typedef int32_t (*attnbench_plugin_register_fn)(attnbench_registrar* registrar, attnbench_message* message);
#define ATTNBENCH_PLUGIN_REGISTER_SYMBOL "attnbench_plugin_register"

#ifdef __cplusplus
}
#endif

/* What a plug-in exports (the types above are their signatures). */
ATTNBENCH_PLUGIN_EXPORT uint32_t attnbench_plugin_abi_version(void);
ATTNBENCH_PLUGIN_EXPORT int32_t attnbench_plugin_register(attnbench_registrar* registrar, attnbench_message* message);

#endif /* ATTNBENCH_PLUGIN_H */
