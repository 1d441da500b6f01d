/*
 * cpu.example: exact attention on the CPU as an attnbench plug-in, in plain C
 * with no header but include/attnbench/plugin.h (docs/plugins.md walks
 * through it). Built outside attnbench's build, as a user would:
 *
 *   cc -std=c11 -O2 -fPIC -shared -fopenmp -I include examples/plugins/cpu_attention.c \
 *      -o libcpu_attention.so -lm
 *
 * and run with `attnbench run SCENARIO --plugin ./libcpu_attention.so --impl cpu.example`.
 *
 * What it computes: for every (batch, query head, row) the visible key range
 * of the mask (causal, window, padding, either alignment), the scores of that
 * row in fp32, their softmax and O = P V; LSE = max + log(sum). The backward
 * recomputes P from LSE and accumulates dQ, and dK and dV per kv head, as
 * FlashAttention's backward does (D = rowsum(dO * O), dS = P (dP - D)).
 * Parallel over (batch, head) in the forward and (batch, kv head) in the
 * backward with OpenMP, on the threads attnbench gives; without -fopenmp it
 * runs on one. It keeps no score matrix: one row of scores per thread, in the
 * workspace it asks attnbench for, so it registers as fused and names
 * cpu.standard as the baseline that bounds its error. Dropout is refused.
 *
 * Built with -DATTNBENCH_EXAMPLE_WRONG it is cpu.example_wrong, which drops the
 * last visible key of every row (an off-by-one in the key range): attnbench's
 * accuracy check fails it. Built with -DATTNBENCH_EXAMPLE_SLOWER it is still
 * cpu.example but computes every fourth unit of work twice, a known slowdown
 * of about 25% (where the units divide by four) for the regression gate to
 * catch (scripts/gate_aa_benchmark.sh).
 */
#include <attnbench/plugin.h>

#include <math.h>
#include <stdint.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#ifdef ATTNBENCH_EXAMPLE_WRONG
#define EXAMPLE_NAME "cpu.example_wrong"
#define EXAMPLE_SUMMARY "cpu.example with an off-by-one in the key range (for the accuracy check to catch)"
#define KEYS_DROPPED 1
#else
#define EXAMPLE_NAME "cpu.example"
#define EXAMPLE_SUMMARY "plain C attention plug-in: one row of scores per thread, fp32 accumulation"
#define KEYS_DROPPED 0
#endif

/* Every how many units of work one is done twice (0: none). Read at run time
 * (volatile), so that both builds compile to the same loops. */
#ifdef ATTNBENCH_EXAMPLE_SLOWER
static volatile int repeat_every = 4;
#else
static volatile int repeat_every = 0;
#endif

static int passes(int64_t unit, int every) { return every > 0 && unit % every == 0 ? 2 : 1; }

/* ---- fp16 and bf16 <-> float, rounding to nearest even ---- */

static float bits_to_float(uint32_t bits) {
  float value;
  memcpy(&value, &bits, sizeof value);
  return value;
}

static uint32_t float_to_bits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  return bits;
}

static float half_to_float(uint16_t half) {
  const uint32_t sign = (uint32_t)(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  const uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1f) return bits_to_float(sign | 0x7f800000u | (mantissa << 13)); /* inf, NaN */
  if (exponent != 0) return bits_to_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
  /* zero or subnormal: mantissa * 2^-24 */
  const float magnitude = (float)mantissa * 5.9604644775390625e-8f;
  return sign ? -magnitude : magnitude;
}

static uint16_t float_to_half(float value) {
  const uint32_t bits = float_to_bits(value);
  const uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);           /* NaN */
  if (magnitude >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);          /* rounds to inf */
  if (magnitude < 0x38800000u) {                                             /* subnormal or zero */
    const float scaled = bits_to_float(magnitude) * 16777216.0f;             /* in units of 2^-24 */
    return (uint16_t)(sign | (uint16_t)lrintf(scaled));                      /* lrintf: to nearest even */
  }
  const uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u) - 0x38000000u;
  return (uint16_t)(sign | (uint16_t)(rounded >> 13));
}

static float bf16_to_float(uint16_t value) { return bits_to_float((uint32_t)value << 16); }

static uint16_t float_to_bf16(float value) {
  const uint32_t bits = float_to_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((bits >> 16) | 0x40u); /* quiet NaN */
  return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

static float load(const void* data, int32_t dtype, int64_t index) {
  const uint16_t bits = ((const uint16_t*)data)[index];
  return dtype == ATTNBENCH_DTYPE_FP16 ? half_to_float(bits) : bf16_to_float(bits);
}

static void store(void* data, int32_t dtype, int64_t index, float value) {
  ((uint16_t*)data)[index] = dtype == ATTNBENCH_DTYPE_FP16 ? float_to_half(value) : float_to_bf16(value);
}

/* ---- the mask: the keys row i of batch element b sees, [*begin, *end) ---- */

static void visible_keys(const attnbench_problem* p, int64_t b, int64_t i, int64_t* begin, int64_t* end) {
  const int64_t length_q = p->lengths_q[b], length_k = p->lengths_k[b];
  *begin = 0;
  *end = i < length_q ? length_k : 0;
  if (*end == 0) return;
  const int64_t shift = p->align == ATTNBENCH_ALIGN_BOTTOM_RIGHT ? length_k - length_q : 0;
  if (p->window_left >= 0 && i + shift - p->window_left > *begin) *begin = i + shift - p->window_left;
  if (p->causal && i + shift + 1 < *end) *end = i + shift + 1;
  if (p->window_right >= 0 && i + shift + p->window_right + 1 < *end) *end = i + shift + p->window_right + 1;
  *end -= KEYS_DROPPED;
  if (*end < *begin) *end = *begin;
}

/* ---- workspace: per thread, a row of scores and a row of O (and dK, dV accumulators) ---- */

static int64_t floats_per_thread(const attnbench_problem* p) {
  const int64_t backward = p->direction != ATTNBENCH_DIRECTION_FWD;
  return p->seqlen_k + p->head_dim + (backward ? 2 * p->seqlen_k * p->head_dim : 0);
}

static int thread_index(void) {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

/* ---- callbacks ---- */

static int32_t example_supports(void* user_data, const attnbench_problem* p, attnbench_message* message) {
  (void)user_data;
  if (p->dropout_p > 0) return attnbench_message_set(message, ATTNBENCH_STATUS_UNSUPPORTED, "no dropout in this example");
  if (p->input_dtype != ATTNBENCH_DTYPE_FP16 && p->input_dtype != ATTNBENCH_DTYPE_BF16) {
    return attnbench_message_set(message, ATTNBENCH_STATUS_UNSUPPORTED, "inputs must be fp16 or bf16");
  }
  return ATTNBENCH_STATUS_OK;
}

static int32_t example_workspace_bytes(void* user_data, const attnbench_problem* p, const attnbench_context* context,
                                       uint64_t* bytes, attnbench_message* message) {
  (void)user_data;
  (void)message;
  *bytes = (uint64_t)context->threads * (uint64_t)floats_per_thread(p) * sizeof(float);
  return ATTNBENCH_STATUS_OK;
}

/* One (batch, query head) of the forward. */
static void forward_unit(const attnbench_problem* p, const attnbench_buffers* buffers, int64_t unit) {
  const int64_t d = p->head_dim, group = p->heads / p->kv_heads;
  const int64_t b = unit / p->heads, h = unit % p->heads, kv = h / group;
  float* scores = (float*)buffers->workspace + (int64_t)thread_index() * floats_per_thread(p);
  float* out = scores + p->seqlen_k;
  for (int64_t i = 0; i < p->seqlen_q; ++i) {
    int64_t begin, end;
    visible_keys(p, b, i, &begin, &end);
    const int64_t q_row = b * p->q.batch + i * p->q.seq + h * p->q.head;
    float row_max = -INFINITY;
    for (int64_t j = begin; j < end; ++j) {
      const int64_t k_row = b * p->k.batch + j * p->k.seq + kv * p->k.head;
      float dot = 0;
      for (int64_t c = 0; c < d; ++c) dot += load(buffers->q, p->input_dtype, q_row + c) * load(buffers->k, p->input_dtype, k_row + c);
      scores[j] = (float)p->scale * dot;
      if (scores[j] > row_max) row_max = scores[j];
    }
    float sum = 0;
    for (int64_t c = 0; c < d; ++c) out[c] = 0;
    for (int64_t j = begin; j < end; ++j) {
      const float weight = expf(scores[j] - row_max);
      const int64_t v_row = b * p->v.batch + j * p->v.seq + kv * p->v.head;
      sum += weight;
      for (int64_t c = 0; c < d; ++c) out[c] += weight * load(buffers->v, p->input_dtype, v_row + c);
    }
    const int64_t o_row = b * p->o.batch + i * p->o.seq + h * p->o.head;
    for (int64_t c = 0; c < d; ++c) store(buffers->out, p->output_dtype, o_row + c, end > begin ? out[c] / sum : 0.0f);
    buffers->lse[(b * p->heads + h) * p->seqlen_q + i] = end > begin ? row_max + logf(sum) : -INFINITY;
  }
}

static int32_t example_forward(void* user_data, const attnbench_problem* p, const attnbench_buffers* buffers,
                               const attnbench_context* context, attnbench_message* message) {
  (void)user_data;
  (void)context; /* its threads: used by OpenMP */
  (void)message;
  const int64_t units = p->batch * p->heads;
  const int every = repeat_every;
#pragma omp parallel for num_threads(context->threads) schedule(dynamic)
  for (int64_t unit = 0; unit < units; ++unit) {
    for (int pass = 0; pass < passes(unit, every); ++pass) forward_unit(p, buffers, unit);
  }
  return ATTNBENCH_STATUS_OK;
}

/* One (batch, kv head) of the backward: its dK, dV and its query heads' dQ. */
static void backward_unit(const attnbench_problem* p, const attnbench_buffers* buffers, int64_t unit) {
  const int64_t d = p->head_dim, group = p->heads / p->kv_heads;
  const int64_t b = unit / p->kv_heads, kv = unit % p->kv_heads;
  float* probabilities = (float*)buffers->workspace + (int64_t)thread_index() * floats_per_thread(p);
  float* d_q = probabilities + p->seqlen_k;
  float* d_k = d_q + d;
  float* d_v = d_k + p->seqlen_k * d;
  memset(d_k, 0, (size_t)(2 * p->seqlen_k * d) * sizeof(float));
  for (int64_t h = kv * group; h < (kv + 1) * group; ++h) {
    for (int64_t i = 0; i < p->seqlen_q; ++i) {
      int64_t begin, end;
      visible_keys(p, b, i, &begin, &end);
      const int64_t q_row = b * p->q.batch + i * p->q.seq + h * p->q.head;
      const int64_t o_row = b * p->o.batch + i * p->o.seq + h * p->o.head;
      const float lse = buffers->lse[(b * p->heads + h) * p->seqlen_q + i];
      float delta = 0; /* D = rowsum(dO * O) */
      for (int64_t c = 0; c < d; ++c) {
        delta += load(buffers->d_out, p->input_dtype, q_row + c) * load(buffers->out, p->output_dtype, o_row + c);
      }
      for (int64_t c = 0; c < d; ++c) d_q[c] = 0;
      for (int64_t j = begin; j < end; ++j) {
        const int64_t k_row = b * p->k.batch + j * p->k.seq + kv * p->k.head;
        const int64_t v_row = b * p->v.batch + j * p->v.seq + kv * p->v.head;
        float dot = 0, d_p = 0;
        for (int64_t c = 0; c < d; ++c) {
          dot += load(buffers->q, p->input_dtype, q_row + c) * load(buffers->k, p->input_dtype, k_row + c);
          d_p += load(buffers->d_out, p->input_dtype, q_row + c) * load(buffers->v, p->input_dtype, v_row + c);
        }
        const float probability = expf((float)p->scale * dot - lse);
        const float d_s = probability * (d_p - delta);
        for (int64_t c = 0; c < d; ++c) {
          d_v[j * d + c] += probability * load(buffers->d_out, p->input_dtype, q_row + c);
          d_k[j * d + c] += (float)p->scale * d_s * load(buffers->q, p->input_dtype, q_row + c);
          d_q[c] += (float)p->scale * d_s * load(buffers->k, p->input_dtype, k_row + c);
        }
      }
      for (int64_t c = 0; c < d; ++c) store(buffers->d_q, p->output_dtype, q_row + c, d_q[c]);
    }
  }
  for (int64_t j = 0; j < p->seqlen_k; ++j) {
    const int64_t k_row = b * p->k.batch + j * p->k.seq + kv * p->k.head;
    for (int64_t c = 0; c < d; ++c) {
      store(buffers->d_k, p->output_dtype, k_row + c, d_k[j * d + c]);
      store(buffers->d_v, p->output_dtype, k_row + c, d_v[j * d + c]);
    }
  }
}

static int32_t example_backward(void* user_data, const attnbench_problem* p, const attnbench_buffers* buffers,
                                const attnbench_context* context, attnbench_message* message) {
  (void)user_data;
  (void)context; /* its threads: used by OpenMP */
  (void)message;
  const int64_t units = p->batch * p->kv_heads;
  const int every = repeat_every;
#pragma omp parallel for num_threads(context->threads) schedule(dynamic)
  for (int64_t unit = 0; unit < units; ++unit) {
    for (int pass = 0; pass < passes(unit, every); ++pass) backward_unit(p, buffers, unit);
  }
  return ATTNBENCH_STATUS_OK;
}

/* ---- registration ---- */

ATTNBENCH_PLUGIN_DEFINE_ABI_VERSION

ATTNBENCH_PLUGIN_EXPORT int32_t attnbench_plugin_register(attnbench_registrar* registrar, attnbench_message* message) {
  (void)message;
  attnbench_implementation implementation;
  memset(&implementation, 0, sizeof implementation);
  implementation.struct_size = sizeof implementation;
  implementation.name = EXAMPLE_NAME;
  implementation.device = ATTNBENCH_DEVICE_CPU;
  implementation.algorithm = ATTNBENCH_ALGORITHM_FUSED;
  implementation.summary = EXAMPLE_SUMMARY;
  implementation.version = "1.0.0";
  implementation.accuracy_baseline = "cpu.standard";
  implementation.configuration = "one score row per thread";
  implementation.output_dtype = ATTNBENCH_OUTPUT_INPUT_DTYPE;
  implementation.supports = example_supports;
  implementation.workspace_bytes = example_workspace_bytes;
  implementation.forward = example_forward;
  implementation.backward = example_backward;
  return registrar->add(registrar, &implementation);
}
