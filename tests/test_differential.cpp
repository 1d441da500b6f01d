// The differential check (docs/cudasim.md, "The differential check"): the
// instruction probes of tests/cuda/differential_probes.cu run on two devices
// from the same seeded random inputs, and their outputs are compared bit for
// bit, one line per form:
//
//   <form>  <N> elements  identical | differs (first difference at …) | decided: <reading>
//
// Exact comparison is sound because every probe's result is fixed by the ISA:
// the mma and wgmma inputs are small multiples of 1/8, so every product and
// every partial sum is exact in fp32 and the order and precision of the
// tensor cores' accumulation (which the ISA leaves open) cannot show; the one
// approximate instruction, ex2.approx, is compared within the ISA's bound.
//
// Built twice (tests/CMakeLists.txt), with ATTNBENCH_TEST_DEVICE:
//   "cudasim" the simulator against itself, in every test run: the check's own
//             machinery (inputs, launches, comparison, report) without a GPU;
//   "cuda"    a GPU against the simulator (label "gpu"; scripts/device-check.sh
//             runs it first), skipping, saying why, without an sm_90a GPU.
// The base-offset probe (a 128-byte-swizzled wgmma operand starting mid-pattern)
// runs on the GPU only: its result is compared with the two readings of the
// descriptor's base offset, computed here on the host.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "harness/backend.hpp"
#include "harness/cudasim/sanitizer_switch.hpp"
#include "harness/dtype.hpp"
#include "harness/errors.hpp"
#include "tests/cuda/differential_probes.hpp"

namespace attnbench {
namespace {

using differential::OperandLayout;
using differential::Probe;
using differential::ProbeForm;

constexpr const char* kDevice = ATTNBENCH_TEST_DEVICE;
constexpr unsigned kSeed = 36;

// ---- the forms ------------------------------------------------------------------------

std::string swizzle_name(int swizzle) { return swizzle == 0 ? "no swizzle" : std::to_string(swizzle) + "B swizzle"; }

ProbeForm wgmma_form(int n, bool bf16, bool registers, bool a_mn, bool b_mn, int swizzle) {
  ProbeForm f;
  f.probe = Probe::wgmma;
  f.n = n;
  f.bf16 = bf16;
  f.a_in_registers = registers;
  f.a_mn_major = a_mn;
  f.b_mn_major = b_mn;
  f.swizzle = swizzle;
  f.name = std::string("wgmma ") + (registers ? "RS" : "SS") + " m64n" + std::to_string(n) + "k16." +
           (bf16 ? "bf16" : "f16") + (registers ? "" : a_mn ? " A MN" : " A K") + (b_mn ? " B MN" : " B K") + ", " +
           swizzle_name(swizzle);
  return f;
}

ProbeForm simple_form(std::string name, Probe probe) {
  ProbeForm f;
  f.name = std::move(name);
  f.probe = probe;
  return f;
}
ProbeForm in_bf16(ProbeForm f) {
  f.bf16 = true;
  return f;
}
ProbeForm transposed(ProbeForm f) {
  f.transposed = true;
  return f;
}

ProbeForm tma_form(Probe probe, int swizzle) {
  ProbeForm f = simple_form(std::string(probe == Probe::tma_load ? "TMA load" : "TMA store") +
                                " 2d, box out of bounds, " + swizzle_name(swizzle),
                            probe);
  f.swizzle = swizzle;
  return f;
}

// B of m64n64k16.f16 (K-major, 128-byte swizzle) starting on line `line` of its 1024-byte pattern.
ProbeForm base_offset_form(int line) {
  ProbeForm f = wgmma_form(64, false, false, false, false, 128);
  f.probe = Probe::base_offset;
  f.line = line;
  f.name = "wgmma base offset: B from line " + std::to_string(line) + " of its 128B pattern";
  return f;
}

// Every wrapper once; wgmma over N, majors and swizzles, TMA over swizzles.
std::vector<ProbeForm> probe_forms() {
  std::vector<ProbeForm> forms = {
      simple_form("mma.sync m16n8k16.f32.f16", Probe::mma),
      in_bf16(simple_form("mma.sync m16n8k16.f32.bf16", Probe::mma)),
      simple_form("ldmatrix.x4", Probe::ldmatrix),
      transposed(simple_form("ldmatrix.x4.trans", Probe::ldmatrix)),
      simple_form("st.shared.u32, ld.shared.v4.u32, ld.shared.v2.f32", Probe::shared_vectors),
      simple_form("cp.async.cg 16 (copy and zero fill)", Probe::cp_async),
      simple_form("shfl.sync.bfly b32 and f32", Probe::shuffle),
      simple_form("ex2.approx.ftz.f32", Probe::ex2),
      simple_form("cvt.rn f32 -> f16 (from_float, pack_pair)", Probe::to_half),
      simple_form("cvt.rn f32 -> bf16 (from_float, pack_pair)", Probe::to_bfloat16),
      simple_form("cvt f16 -> f32 (to_float), every pattern", Probe::from_half),
      simple_form("cvt bf16 -> f32 (to_float), every pattern", Probe::from_bfloat16),
      simple_form("red.global.add.v2.f32", Probe::red_add_pair),
      simple_form("red.global.add.v4.f32 and .f32", Probe::red_add_vector),
      simple_form("cp.reduce.async.bulk .add.f32", Probe::bulk_reduce),
      simple_form("elect.sync", Probe::elect),
      simple_form("stmatrix.x4", Probe::stmatrix),
      transposed(simple_form("stmatrix.x4.trans", Probe::stmatrix)),
  };
  for (int swizzle : {0, 32, 64, 128}) {
    forms.push_back(wgmma_form(64, false, false, false, false, swizzle));
    forms.push_back(wgmma_form(64, false, false, true, true, swizzle));
  }
  forms.push_back(wgmma_form(64, true, false, false, true, 128));
  for (int n : {8, 128, 256}) forms.push_back(wgmma_form(n, true, false, false, false, 128));
  forms.push_back(wgmma_form(64, true, true, false, false, 0));
  forms.push_back(wgmma_form(64, true, true, false, false, 128));
  forms.push_back(wgmma_form(64, true, true, false, true, 32));
  forms.push_back(wgmma_form(64, true, true, false, true, 128));
  forms.push_back(wgmma_form(8, false, true, false, false, 64));
  forms.push_back(wgmma_form(256, false, true, false, false, 128));
  for (int swizzle : {0, 32, 64, 128}) forms.push_back(tma_form(Probe::tma_load, swizzle));
  for (int swizzle : {0, 32, 64, 128}) forms.push_back(tma_form(Probe::tma_store, swizzle));
  forms.push_back(simple_form("mbarrier expect_tx completed by TMA", Probe::mbarrier_tx));
  forms.push_back(base_offset_form(3));
  return forms;
}

// ---- inputs ---------------------------------------------------------------------------

struct ProbeData {
  std::vector<std::uint32_t> input;
  std::vector<std::uint32_t> initial_output;
};

// k/8 for k in [-limit, limit]: exact in fp16, bf16 and fp32, and so are products and short sums.
float eighths(std::mt19937& random, int limit) {
  return static_cast<float>(std::uniform_int_distribution<int>(-limit, limit)(random)) / 8.0f;
}
std::uint32_t pair_of_eighths(std::mt19937& random, bool bf16) {
  const auto encode = [&](float x) { return bf16 ? float_to_bfloat16(x) : float_to_half(x); };
  return encode(eighths(random, 16)) | std::uint32_t{encode(eighths(random, 16))} << 16;
}

// fp32 inputs for the narrowing conversions: the special values, values
// halfway between two 16-bit neighbours (ties to even), values beyond the
// 16-bit range and in its subnormals, and random bit patterns.
std::vector<std::uint32_t> narrowing_inputs(std::mt19937& random) {
  std::vector<std::uint32_t> values = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                       0x477fe000u, 0x477ff000u, 0x47800000u, 0x33800000u, 0x33000000u,
                                       0x3f801000u, 0x3f803000u, 0x3f808000u, 0x3f818000u, 0x00000001u};
  std::uniform_int_distribution<std::uint32_t> bits;
  while (values.size() < differential::kConversionCount) {
    const std::uint32_t word = bits(random);
    switch (values.size() % 4) {
      case 0:  // an fp16 tie: an fp16 value's bits plus half its last place (bit 12), in [2^-15, 2)
        values.push_back((word & 0x807fe000u) | (0x70u + (word >> 23) % 16u) << 23 | 0x1000u);
        break;
      case 1:  // a bf16 tie (bit 15), magnitude below 2
        values.push_back((word & 0xbfff8000u) | 0x8000u);
        break;
      case 2:  // fp16's subnormal and overflow ranges: exponents 2^-25 .. 2^17
        values.push_back((word & 0x807fffffu) | (0x66u + word % 43u) << 23);
        break;
      default:
        values.push_back((word & 0x7f800000u) == 0x7f800000u ? word & 0xbfffffffu : word);
    }
  }
  return values;
}

// ex2's inputs: the special values (±0, ±inf, NaN, subnormals), inputs whose
// result is subnormal (flushed) or overflows, and the range the softmax uses.
std::vector<std::uint32_t> ex2_inputs(std::mt19937& random) {
  std::vector<std::uint32_t> values = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                                       0x00000001u, 0x80400000u, float_to_bits(-126.0f), float_to_bits(-126.5f),
                                       float_to_bits(-149.0f), float_to_bits(-151.0f), float_to_bits(127.0f),
                                       float_to_bits(127.99f), float_to_bits(128.0f), float_to_bits(1.0f)};
  std::uniform_real_distribution<float> softmax(-30.0f, 0.0f), wide(-130.0f, 130.0f);
  while (values.size() < differential::kEx2Count) {
    values.push_back(float_to_bits(values.size() % 2 == 0 ? softmax(random) : wide(random)));
  }
  return values;
}

ProbeData make_data(const ProbeForm& form, std::mt19937& random) {
  ProbeData data;
  data.input.resize(differential::input_words(form));
  data.initial_output.assign(differential::output_words(form), 0u);
  std::uniform_int_distribution<std::uint32_t> bits;
  switch (form.probe) {
    case Probe::mma:
      for (std::size_t lane = 0; lane < 32; ++lane) {
        std::uint32_t* mine = &data.input[10 * lane];
        for (int i = 0; i < 6; ++i) mine[i] = pair_of_eighths(random, form.bf16);
        for (int i = 6; i < 10; ++i) mine[i] = float_to_bits(eighths(random, 64));
      }
      break;
    case Probe::shuffle:
      for (std::size_t lane = 0; lane < 32; ++lane) {
        data.input[2 * lane] = bits(random);
        data.input[2 * lane + 1] = float_to_bits(std::uniform_real_distribution<float>(-1e6f, 1e6f)(random));
      }
      break;
    case Probe::ex2:
      data.input = ex2_inputs(random);
      break;
    case Probe::to_half:
    case Probe::to_bfloat16:
      data.input = narrowing_inputs(random);
      break;
    case Probe::from_half:
    case Probe::from_bfloat16:
      for (std::uint32_t i = 0; i < data.input.size(); ++i) data.input[i] = 2 * i | (2 * i + 1) << 16;
      break;
    case Probe::red_add_pair:
    case Probe::red_add_vector:
    case Probe::bulk_reduce:
      for (std::uint32_t& word : data.input) word = float_to_bits(eighths(random, 64));
      break;
    case Probe::wgmma:
    case Probe::base_offset: {
      const std::size_t accumulators = differential::wgmma_accumulator_word(form);
      for (std::size_t i = 0; i < accumulators; ++i) data.input[i] = pair_of_eighths(random, form.bf16);
      for (std::size_t i = accumulators; i < data.input.size(); ++i) data.input[i] = float_to_bits(eighths(random, 64));
      break;
    }
    case Probe::tma_store:
      for (std::uint32_t& word : data.input) word = bits(random);
      for (std::uint32_t& word : data.initial_output) word = bits(random);  // what the store must not touch
      break;
    default:  // data moved as bits
      for (std::uint32_t& word : data.input) word = bits(random);
  }
  return data;
}

// ---- running a form on a device -------------------------------------------------------

struct Side {
  std::string device;  // "cuda" or "cudasim"
  bool (*runs_here)(std::string& why);
  void (*run)(const ProbeForm& form, const std::uint32_t* input, std::uint32_t* output);
};

Side simulated_side() { return Side{"cudasim", &simulated::differential_probes_run_here, &simulated::run_differential_probe}; }

// The side under test: the GPU in the "cuda" build, otherwise the simulator again.
Side device_side() {
#if defined(ATTNBENCH_DIFFERENTIAL_GPU)
  return Side{"cuda", &differential_probes_run_here, &run_differential_probe};
#else
  return simulated_side();
#endif
}

std::vector<std::uint32_t> run_on(const Side& side, const ProbeForm& form, const ProbeData& data) {
  Backend* backend = BackendRegistry::instance().get(side.device);
  if (!backend) throw DeviceError("this build has no " + side.device + " backend", false);
  const std::size_t in_bytes = 4 * data.input.size(), out_bytes = 4 * data.initial_output.size();
  DeviceArena arena(*backend, DeviceArena::aligned(in_bytes) + DeviceArena::aligned(out_bytes));
  const TensorBuffer input = arena.take(ElementType::f32, data.input.size(), "probe input");
  const TensorBuffer output = arena.take(ElementType::f32, data.initial_output.size(), "probe output");
  backend->copy_to_device(input.data, data.input.data(), in_bytes);
  backend->copy_to_device(output.data, data.initial_output.data(), out_bytes);
  side.run(form, static_cast<const std::uint32_t*>(input.data), static_cast<std::uint32_t*>(output.data));
  std::vector<std::uint32_t> result(data.initial_output.size());
  backend->copy_to_host(result.data(), output.data, out_bytes);
  return result;
}

// ---- comparing ------------------------------------------------------------------------

// ex2.approx.f32's error bound in the PTX ISA ("ex2", as harness/cudasim/
// instructions.hpp cites it): 2^-22 relative to 2^x. The simulator's result
// is 2^x rounded to fp32 (within 2^-24), so the two may lie 2^-22 + 2^-24
// apart; zeros, infinities and NaN must agree exactly.
constexpr double kEx2Bound = 0x1p-22 + 0x1p-24;

bool ex2_within_bound(std::uint32_t got, std::uint32_t reference) {
  const float a = bits_to_float(got), b = bits_to_float(reference);
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (!std::isfinite(a) || !std::isfinite(b) || a == 0.0f || b == 0.0f) return got == reference;
  return std::fabs(static_cast<double>(a) - b) <= kEx2Bound * std::fabs(static_cast<double>(b));
}

// The element of D that accumulator register r of warpgroup thread t holds
// (m64nNk16, kernels/cuda/hopper_primitives.hpp's wgmma_ss).
struct MatrixElement {
  std::size_t row, column;
};
MatrixElement accumulator_element(std::size_t t, std::size_t r) {
  return MatrixElement{16 * (t / 32) + t % 32 / 4 + 8 * ((r >> 1) & 1), 8 * (r >> 2) + 2 * (t % 4) + (r & 1)};
}

// Where output word `i` of a form comes from, in the instruction's terms.
std::string position_of(const ProbeForm& form, std::size_t i) {
  const auto s = [](std::size_t x) { return std::to_string(x); };
  switch (form.probe) {
    case Probe::mma:
      return "lane " + s(i / 4) + " d[" + s(i % 4) + "]";
    case Probe::ldmatrix:
      return "lane " + s(i / 4) + " register " + s(i % 4);
    case Probe::wgmma:
    case Probe::base_offset: {
      const std::size_t registers = static_cast<std::size_t>(form.n / 2), t = i / registers, r = i % registers;
      const MatrixElement at = accumulator_element(t, r);
      return "thread " + s(t) + " d[" + s(r) + "] = D(" + s(at.row) + ", " + s(at.column) + ")";
    }
    case Probe::stmatrix:
    case Probe::cp_async:
      return "shared byte " + s(4 * i);
    case Probe::tma_load:
      return "box byte " + s(4 * i);
    case Probe::tma_store: {
      const std::size_t element = 2 * i;
      return "tensor (" + s(element / differential::kTensorColumns) + ", " +
             s(element % differential::kTensorColumns) + ")";
    }
    case Probe::mbarrier_tx:
      return i < differential::kTxFlags ? "flag " + s(i) : "box byte " + s(4 * (i - differential::kTxFlags));
    default:
      return "word " + s(i);
  }
}

std::string hex(std::uint32_t word) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", word);
  return text;
}

struct Comparison {
  bool same = true;
  std::string verdict;  // the line's last field
};

// `got` (the side under test) against `reference` (the simulator's output, or `whose` else).
Comparison compare(const ProbeForm& form, const std::vector<std::uint32_t>& got,
                   const std::vector<std::uint32_t>& reference, const std::string& whose = "the simulator's") {
  const bool bounded = form.probe == Probe::ex2;
  std::size_t differing = 0, first = 0, exact = 0;
  for (std::size_t i = 0; i < reference.size(); ++i) {
    exact += got[i] == reference[i];
    if (got[i] == reference[i] || (bounded && ex2_within_bound(got[i], reference[i]))) continue;
    if (differing++ == 0) first = i;
  }
  if (differing == 0) {
    if (!bounded || exact == reference.size()) return Comparison{true, "identical"};
    return Comparison{true, "identical within 2^-22 relative (ex2.approx's bound; " + std::to_string(exact) + " of " +
                                std::to_string(reference.size()) + " bit for bit)"};
  }
  return Comparison{false, "differs (first difference at element " + std::to_string(first) + ", " +
                               position_of(form, first) + ": " + hex(got[first]) + " against " + whose + " " +
                               hex(reference[first]) + "; " + std::to_string(differing) + " elements differ)"};
}

std::string line_of(const ProbeForm& form, std::size_t elements, const std::string& verdict) {
  char head[96];
  std::snprintf(head, sizeof head, "%-58s %6zu elements  ", form.name.c_str(), elements);
  return head + verdict;
}

// ---- the base-offset probe's two readings ----------------------------------------------

// Byte offset, in the 1024-byte aligned image, of element (mn, k) of a
// 128-byte-swizzled operand, in the two readings of a descriptor whose start
// lies on line `line` of its pattern with base offset `line`:
//   absolute: the swizzle XORs the 16-byte chunk index with address bits 7-9
//             of the element's own address (start + canonical offset);
//   from the base offset: the pattern starts `line` lines before the start
//             address (the pattern start the base offset names), and the
//             operand's rows are counted from there: element (mn, k) lies at
//             the canonical offset, swizzled, from that pattern start.
std::uint32_t swizzled(std::uint32_t offset) { return offset ^ ((offset >> 7 & 7u) << 4); }
std::uint32_t element_offset(const OperandLayout& o, int mn, int k, int line, bool absolute) {
  const std::uint32_t canonical = differential::operand_offset(o, mn, k);
  if (absolute) return swizzled(o.offset + canonical);
  return o.offset - 128 * static_cast<std::uint32_t>(line) + swizzled(canonical);
}

// D = A·B + C of the base-offset form (fp16) in its output order, with B read in one of the two readings.
std::vector<std::uint32_t> base_offset_reference(const ProbeForm& form, const ProbeData& data, bool absolute) {
  const differential::WgmmaPlacement placement = differential::wgmma_placement(form);
  const auto element = [&](std::uint32_t byte) {
    const std::uint32_t word = data.input[byte / 4];
    return static_cast<double>(half_to_float(static_cast<std::uint16_t>(byte % 4 == 0 ? word & 0xffffu : word >> 16)));
  };
  const std::size_t registers = static_cast<std::size_t>(form.n / 2);
  const std::size_t accumulators = differential::wgmma_accumulator_word(form);
  std::vector<std::uint32_t> d(128 * registers);
  for (std::size_t i = 0; i < d.size(); ++i) {
    const MatrixElement at = accumulator_element(i / registers, i % registers);
    double sum = bits_to_float(data.input[accumulators + i]);
    for (int k = 0; k < 16; ++k) {
      sum += element(element_offset(placement.a, static_cast<int>(at.row), k, 0, true)) *
             element(element_offset(placement.b, static_cast<int>(at.column), k, form.line, absolute));
    }
    d[i] = float_to_bits(static_cast<float>(sum));
  }
  return d;
}

// The GPU's result against the two readings.
std::string base_offset_decision(const ProbeForm& form, const ProbeData& data, const std::vector<std::uint32_t>& got) {
  const bool absolute = got == base_offset_reference(form, data, true);
  const bool from_base = got == base_offset_reference(form, data, false);
  if (absolute && from_base) return "both readings agree here (the operand starts on its pattern)";
  if (absolute) return "decided: absolute address bits";
  if (from_base) return "decided: rows from the base offset";
  return "neither (" + compare(form, got, base_offset_reference(form, data, true), "the absolute reading's").verdict + ")";
}

// The base-offset probe: a GPU decides the reading; the simulator must report
// the operand as unsettled rather than pick one.
Comparison run_base_offset(const Side& device, const ProbeForm& form, const ProbeData& data) {
  if (device.device != "cudasim") {
    const std::string decision = base_offset_decision(form, data, run_on(device, form, data));
    return Comparison{decision.rfind("neither", 0) != 0, decision};
  }
  try {
    run_on(device, form, data);
  } catch (const DeviceError& error) {
    if (std::string(error.what()).find("unsettled matrix descriptor") == std::string::npos) throw;
    return Comparison{true, "decided only on a GPU (the simulator reports an unsettled matrix descriptor)"};
  }
  return Comparison{false, "the simulator ran a mid-pattern operand without reporting it as unsettled"};
}

// ---- the check ------------------------------------------------------------------------

class Differential : public ::testing::Test {
 protected:
  void SetUp() override { cudasim::set_sanitizer_enabled(true); }
};

TEST_F(Differential, EveryFormOnBothSides) {
  const Side device = device_side(), simulator = simulated_side();
  std::string why;
  Backend* backend = BackendRegistry::instance().get(device.device);
  if (!backend) GTEST_SKIP() << "this build has no " << device.device << " backend";
  const Verdict available = backend->availability();
  if (!available.ok) GTEST_SKIP() << "no " << device.device << " device: " << available.reason;
  if (!device.runs_here(why)) GTEST_SKIP() << why;

  std::printf("differential check: %s against %s, seed %u\n", device.device.c_str(), simulator.device.c_str(), kSeed);
  int failures = 0;
  const std::vector<ProbeForm> forms = probe_forms();
  for (std::size_t index = 0; index < forms.size(); ++index) {
    const ProbeForm& form = forms[index];
    std::mt19937 random(kSeed + static_cast<unsigned>(index));
    const ProbeData data = make_data(form, random);
    Comparison result;
    try {
      result = form.probe == Probe::base_offset ? run_base_offset(device, form, data)
                                                : compare(form, run_on(device, form, data), run_on(simulator, form, data));
    } catch (const std::exception& error) {
      const std::string what = error.what();
      result = Comparison{false, "failed: " + what.substr(0, what.find('\n'))};
    }
    failures += !result.same;
    std::printf("%s\n", line_of(form, data.initial_output.size(), result.verdict).c_str());
    std::fflush(stdout);
  }
  EXPECT_EQ(failures, 0) << "forms that differ or failed: see the lines above";
}

// Two simulated runs of one form, one output word changed afterwards.
struct PlantedRun {
  ProbeForm form;
  std::vector<std::uint32_t> got, reference;
};
PlantedRun simulated_twice(const ProbeForm& form) {
  std::mt19937 random(kSeed);
  const ProbeData data = make_data(form, random);
  return PlantedRun{form, run_on(simulated_side(), form, data), run_on(simulated_side(), form, data)};
}

TEST_F(Differential, APlantedDifferenceIsReportedAtItsPosition) {
  PlantedRun run = simulated_twice(transposed(simple_form("ldmatrix.x4.trans", Probe::ldmatrix)));
  ASSERT_TRUE(compare(run.form, run.got, run.reference).same);
  run.got[37] ^= 1u << 9;
  const Comparison planted = compare(run.form, run.got, run.reference);
  EXPECT_FALSE(planted.same);
  EXPECT_EQ(planted.verdict.rfind("differs (first difference at element 37, lane 9 register 1: ", 0), 0)
      << planted.verdict;
  EXPECT_NE(planted.verdict.find("; 1 elements differ)"), std::string::npos) << planted.verdict;

  PlantedRun product = simulated_twice(wgmma_form(64, true, false, false, true, 128));
  product.reference[100] ^= 1u;  // the reference side's lowest bit: an exact form tolerates nothing
  const Comparison wgmma = compare(product.form, product.got, product.reference);
  EXPECT_FALSE(wgmma.same);
  EXPECT_NE(wgmma.verdict.find("element 100, thread 3 d[4] = D(0, 14)"), std::string::npos) << wgmma.verdict;
}

TEST_F(Differential, Ex2IsComparedWithinTheIsaBound) {
  PlantedRun run = simulated_twice(simple_form("ex2.approx.ftz.f32", Probe::ex2));
  ASSERT_EQ(compare(run.form, run.got, run.reference).verdict, "identical");
  const std::size_t normal = 20;  // a softmax input: a normal result in (2^-30, 1]
  ASSERT_TRUE(std::isnormal(bits_to_float(run.reference[normal])));
  run.got[normal] ^= 1u;  // one ulp, 2^-23 relative at most
  EXPECT_TRUE(compare(run.form, run.got, run.reference).same);
  EXPECT_NE(compare(run.form, run.got, run.reference).verdict.find("within 2^-22 relative"), std::string::npos);
  run.got[normal] ^= 1u | 1u << 4;  // 16 ulp
  const Comparison far = compare(run.form, run.got, run.reference);
  EXPECT_FALSE(far.same);
  EXPECT_EQ(far.verdict.rfind("differs (first difference at element 20, word 20: ", 0), 0) << far.verdict;
  run.got[normal] ^= 1u << 4;
  run.got[0] = float_to_bits(0x1p-30f);  // ex2(+0) must be exactly 1
  EXPECT_FALSE(compare(run.form, run.got, run.reference).same);
}

TEST_F(Differential, TheBaseOffsetReadingsDifferOnlyMidPattern) {
  for (int line : {0, 3, 7}) {
    const ProbeForm form = base_offset_form(line);
    std::mt19937 random(kSeed);
    const ProbeData data = make_data(form, random);
    const std::vector<std::uint32_t> absolute = base_offset_reference(form, data, true);
    const std::vector<std::uint32_t> from_base = base_offset_reference(form, data, false);
    if (line == 0) {
      EXPECT_EQ(absolute, from_base);
      // On its pattern's start the operand is settled: the simulator runs it, and agrees with both.
      EXPECT_EQ(base_offset_decision(form, data, run_on(simulated_side(), form, data)),
                "both readings agree here (the operand starts on its pattern)");
    } else {
      EXPECT_NE(absolute, from_base) << "line " << line;
      EXPECT_EQ(base_offset_decision(form, data, absolute), "decided: absolute address bits");
      EXPECT_EQ(base_offset_decision(form, data, from_base), "decided: rows from the base offset");
      std::vector<std::uint32_t> neither = absolute;
      neither[5] ^= 1u << 30;
      EXPECT_EQ(base_offset_decision(form, data, neither).rfind("neither (differs (first difference at element 5", 0), 0);
    }
  }
}

}  // namespace
}  // namespace attnbench
