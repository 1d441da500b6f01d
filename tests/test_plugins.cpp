// Plug-ins in process: SHA-256, the ABI conversions, the name rules, the
// loader's refusal of every kind of bad plug-in, the adapter's errors, the
// verdicts of the CUDA discipline checks (with a fake device), and the plug-in
// builds in a run's identity. The end-to-end runs are tests/test_plugins.py.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "harness/errors.hpp"
#include "harness/plugin/abi.hpp"
#include "harness/plugin/call_audit.hpp"
#include "harness/plugin/loader.hpp"
#include "harness/plugin/plugin_implementation.hpp"
#include "harness/plugin/sha256.hpp"
#include "harness/results/run_identity.hpp"

#ifndef ATTNBENCH_TEST_PLUGINS
#error "ATTNBENCH_TEST_PLUGINS names the test plug-ins: variant=path,..."
#endif

namespace attnbench {
namespace {

using Json = nlohmann::ordered_json;

// A file name in the temporary directory, unique to this process.
std::filesystem::path temporary(const std::string& name) {
  return std::filesystem::temp_directory_path() / (std::to_string(getpid()) + "_" + name);
}

std::string test_plugin(const std::string& variant) {
  std::stringstream list(ATTNBENCH_TEST_PLUGINS);
  for (std::string entry; std::getline(list, entry, ',');) {
    const std::size_t equals = entry.find('=');
    if (entry.substr(0, equals) == variant) return entry.substr(equals + 1);
  }
  ADD_FAILURE() << "no test plug-in " << variant;
  return "";
}

// The message of the InputError that loading `path` throws, or "" if it loads.
std::string load_error(const std::string& path) {
  try {
    load_plugin(path);
  } catch (const InputError& error) {
    EXPECT_EQ(error.diagnostics().front().file, path);
    return error.what();
  }
  return "";
}

TEST(Sha256, KnownAnswers) {
  // FIPS 180-4 examples: one block, two blocks, and a million bytes.
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // In pieces that straddle the 64-byte blocks, as a file is read.
  Sha256 pieces;
  const std::string text(1000, 'x');
  for (std::size_t at = 0; at < text.size(); at += 37) pieces.update(std::string_view(text).substr(at, 37));
  EXPECT_EQ(pieces.finish_hex(), sha256_hex(text));
}

TEST(Sha256, OfAFile) {
  const std::filesystem::path file = temporary("attnbench_sha256_test.bin");
  std::ofstream(file, std::ios::binary) << "abc";
  std::string error;
  EXPECT_EQ(sha256_file_hex(file.string(), error).value_or(""),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::filesystem::remove(file);
  EXPECT_FALSE(sha256_file_hex(file.string(), error).has_value());
  EXPECT_FALSE(error.empty());
}

Problem small_problem() {
  Problem p;
  p.batch = 2;
  p.heads = 4;
  p.kv_heads = 2;
  p.seqlen_q = 5;
  p.seqlen_k = 7;
  p.head_dim = 8;
  return p;
}

TEST(PluginAbi, StridesFollowTheLayout) {
  Problem p = small_problem();
  const AbiProblem bshd(p, ElementType::f16);
  EXPECT_EQ(bshd.get().layout, ATTNBENCH_LAYOUT_BSHD);
  EXPECT_EQ(bshd.get().q.head, 8);
  EXPECT_EQ(bshd.get().q.seq, 4 * 8);
  EXPECT_EQ(bshd.get().q.batch, 5 * 4 * 8);
  EXPECT_EQ(bshd.get().k.seq, 2 * 8);
  EXPECT_EQ(bshd.get().k.batch, 7 * 2 * 8);
  EXPECT_EQ(bshd.get().o.batch, bshd.get().q.batch);
  p.layout = Layout::bhsd;
  const AbiProblem bhsd(p, ElementType::f16);
  EXPECT_EQ(bhsd.get().layout, ATTNBENCH_LAYOUT_BHSD);
  EXPECT_EQ(bhsd.get().q.seq, 8);
  EXPECT_EQ(bhsd.get().q.head, 5 * 8);
  EXPECT_EQ(bhsd.get().v.head, 7 * 8);
  EXPECT_EQ(bhsd.get().v.batch, 2 * 7 * 8);
}

TEST(PluginAbi, MaskLengthsDropoutScaleAndTypes) {
  Problem p = small_problem();
  p.direction = Direction::fwd_bwd;
  p.dtype = InputDType::bf16;
  p.mask = MaskSpec{true, true, 3, -1};
  p.dropout = DropoutSpec{0.25, 0x123456789abcdefULL, 7};
  p.scale = 0.5;
  const AbiProblem full(p, ElementType::f32);
  const attnbench_problem& a = full.get();
  EXPECT_EQ(a.struct_size, sizeof(attnbench_problem));
  EXPECT_EQ(a.direction, ATTNBENCH_DIRECTION_FWD_BWD);
  EXPECT_EQ(a.input_dtype, ATTNBENCH_DTYPE_BF16);
  EXPECT_EQ(a.output_dtype, ATTNBENCH_DTYPE_FP32);
  EXPECT_EQ(a.causal, 1);
  EXPECT_EQ(a.align, ATTNBENCH_ALIGN_BOTTOM_RIGHT);
  EXPECT_EQ(a.window_left, 3);
  EXPECT_EQ(a.window_right, -1);
  EXPECT_EQ(a.padded, 0);
  EXPECT_EQ(a.lengths_q[1], 5);
  EXPECT_EQ(a.lengths_k[1], 7);
  EXPECT_EQ(a.device_lengths_q, nullptr);
  EXPECT_DOUBLE_EQ(a.scale, 0.5);
  EXPECT_DOUBLE_EQ(a.dropout_p, 0.25);
  EXPECT_EQ(a.dropout_seed, 0x123456789abcdefULL);
  EXPECT_EQ(a.dropout_offset, 7u);

  p.padding.kind = PaddingSpec::Kind::explicit_lengths;
  p.lengths_q = {5, 2};
  p.lengths_k = {7, 3};
  p.scale.reset();
  AbiProblem padded(p, ElementType::f16);
  EXPECT_EQ(padded.get().padded, 1);
  EXPECT_EQ(padded.get().lengths_q[1], 2);
  EXPECT_EQ(padded.get().lengths_k[1], 3);
  EXPECT_DOUBLE_EQ(padded.get().scale, 1 / std::sqrt(8.0));
  // Moving keeps the pointers valid: they refer to the arrays, not the object.
  const AbiProblem moved(std::move(padded));
  EXPECT_EQ(moved.get().lengths_k, moved.lengths_k().data());
}

TEST(PluginAbi, NameRules) {
  EXPECT_EQ(implementation_name_problem("cpu.my_kernel-2.v3", ATTNBENCH_DEVICE_CPU), "");
  EXPECT_EQ(implementation_name_problem("cuda.fa", ATTNBENCH_DEVICE_CUDA), "");
  for (const auto& [name, device, expected] :
       std::vector<std::tuple<std::string, std::int32_t, std::string>>{
           {"cuda.fa", ATTNBENCH_DEVICE_CPU, "does not start with \"cpu.\""},
           {"cpu.", ATTNBENCH_DEVICE_CPU, "does not start with"},
           {"cpu.Flash", ATTNBENCH_DEVICE_CPU, "outside the allowed"},
           {"cpu.a b", ATTNBENCH_DEVICE_CPU, "outside the allowed"},
           {"cpu.a..b", ATTNBENCH_DEVICE_CPU, "empty part"},
           {"cpu.a.", ATTNBENCH_DEVICE_CPU, "empty part"},
           {"cpu." + std::string(61, 'a'), ATTNBENCH_DEVICE_CPU, "65 bytes long"},
           {"tpu.x", 7, "device 7 is none of"}}) {
    EXPECT_NE(implementation_name_problem(name, device).find(expected), std::string::npos)
        << name << ": " << implementation_name_problem(name, device);
  }
}

TEST(PluginLoader, RefusesBadPluginsNamingTheFile) {
  const std::filesystem::path text = temporary("attnbench_not_a_library.so");
  std::ofstream(text) << "not a library\n";
  EXPECT_NE(load_error(text.string()).find("is not a shared library"), std::string::npos);
  std::filesystem::remove(text);
  EXPECT_NE(load_error(text.string()).find("no such file"), std::string::npos);
  EXPECT_NE(load_error(std::filesystem::temp_directory_path().string()).find("not a regular file"), std::string::npos);
  for (const auto& [variant, expected] : std::vector<std::pair<std::string, std::string>>{
           {"other_abi", "was built for plug-in ABI version 999; this attnbench loads version 1"},
           {"no_register", "exports no attnbench_plugin_register"},
           {"builtin_clash", "\"cpu.flash\": is already the name of a built-in implementation"},
           {"bad_name", "\"cpu.Bad Name\": holds a character outside the allowed ones"},
           {"duplicate", "\"cpu.test_twice\": is registered twice by this plug-in"},
           {"register_fails", "attnbench_plugin_register() failed: no license for this machine"},
           {"registers_nothing", "added no implementation"}}) {
    const std::string path = test_plugin(variant);
    EXPECT_NE(load_error(path).find(expected), std::string::npos) << variant << ": " << load_error(path);
  }
  EXPECT_EQ(ImplementationRegistry::instance().find("cpu.test_twice"), nullptr);  // nothing of a refused plug-in
}

// The lines the test plug-ins wrote to `log` (tests/misbehaving_plugins.cpp).
std::vector<std::string> log_lines(const std::filesystem::path& log) {
  std::ifstream file(log);
  std::vector<std::string> lines;
  for (std::string line; std::getline(file, line);) lines.push_back(line);
  return lines;
}

TEST(PluginRelease, EachHookRunsOnceAtTheEndAndAPluginBuiltAgainst1_0IsReadNoFurtherThanItsSize) {
  const std::filesystem::path log = temporary("attnbench_release.log");
  std::filesystem::remove(log);
  ASSERT_EQ(setenv("ATTNBENCH_TEST_RELEASE_LOG", log.c_str(), 1), 0);
  const LoadedPlugin& loaded = load_plugin(test_plugin("releases"));
  EXPECT_EQ(loaded.implementations,
            (std::vector<std::string>{"cpu.test_release_a", "cpu.test_release_b", "cpu.test_abi_1_0"}));
  EXPECT_EQ(log_lines(log), std::vector<std::string>{"minor " + std::to_string(ATTNBENCH_PLUGIN_ABI_MINOR_VERSION)});
  release_plugins();
  const std::vector<std::string> released{"minor 1", "released cpu.test_release_a", "released cpu.test_release_b"};
  EXPECT_EQ(log_lines(log), released);
  release_plugins();  // once only
  EXPECT_EQ(log_lines(log), released);
  // A refused registration releases at once what it had added.
  EXPECT_NE(load_error(test_plugin("release_refused")).find("\"cpu.Bad Name\""), std::string::npos);
  EXPECT_EQ(log_lines(log).back(), "released cpu.test_release_refused");
  EXPECT_EQ(ImplementationRegistry::instance().find("cpu.test_release_refused"), nullptr);
  unsetenv("ATTNBENCH_TEST_RELEASE_LOG");
  std::filesystem::remove(log);
}

class MisbehavingPlugin : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { load_plugin(test_plugin("misbehaving")); }
  static PluginImplementation& implementation(const std::string& name) {
    return dynamic_cast<PluginImplementation&>(*ImplementationRegistry::instance().find(name));
  }
};

TEST_F(MisbehavingPlugin, IsRegisteredWithItsIdentity) {
  const std::string path = std::filesystem::canonical(test_plugin("misbehaving")).string();
  const LoadedPlugin& again = load_plugin(test_plugin("misbehaving"));  // loaded once
  EXPECT_EQ(again.path, path);
  EXPECT_EQ(again.implementations,
            (std::vector<std::string>{"cpu.test_error", "cpu.test_crash", "cpu.test_hang", "cpu.test_past_o",
                                      "cpu.test_past_lse", "cpu.test_before_lse", "cpu.test_past_workspace",
                                      "cpu.test_into_q", "cpu.test_supports_error", "cuda.test_stub"}));
  std::string error;
  EXPECT_EQ(again.sha256, sha256_file_hex(path, error).value_or(""));
  const Json identity = implementation("cpu.test_error").plugin_identity();
  EXPECT_EQ(identity, (Json{{"path", path}, {"sha256", again.sha256}, {"version", "0.1"}}));
  EXPECT_EQ(plugins_json({"cpu.flash"}), Json::array());
  EXPECT_EQ(plugins_json({"cpu.flash", "cpu.test_crash"}).size(), 1u);
  // Another plug-in (here a copy of the file) may not take a name this one registered.
  const std::filesystem::path copy = temporary("attnbench_plugin_copy.so");
  std::filesystem::copy_file(path, copy, std::filesystem::copy_options::overwrite_existing);
  EXPECT_NE(load_error(copy.string()).find("\"cpu.test_error\": is already the name of an implementation of the "
                                           "plug-in " + path),
            std::string::npos)
      << load_error(copy.string());
  std::filesystem::remove(copy);
}

TEST_F(MisbehavingPlugin, CallbackErrorsCarryTheirMessage) {
  Problem p = small_problem();
  PluginImplementation& failing = implementation("cpu.test_error");
  EXPECT_TRUE(failing.supports(p).ok);
  p.direction = Direction::bwd;
  const Verdict no_backward = failing.supports(p);
  EXPECT_FALSE(no_backward.ok);
  EXPECT_NE(no_backward.reason.find("forward only"), std::string::npos);
  p.direction = Direction::fwd;
  std::vector<std::byte> memory(4096);
  AttentionBuffers buffers;
  buffers.workspace = TensorBuffer{memory.data(), ElementType::f32, 0};
  ExecutionContext context;
  try {
    failing.forward(p, buffers, context);
    ADD_FAILURE() << "forward() did not throw";
  } catch (const PluginCallError& error) {
    EXPECT_STREQ(error.what(), "cpu.test_error forward() failed: deliberate failure in forward");
  }
  try {
    implementation("cpu.test_supports_error").supports(p);
    ADD_FAILURE() << "supports() did not throw";
  } catch (const PluginCallError& error) {
    EXPECT_STREQ(error.what(), "cpu.test_supports_error supports() failed: supports() broke on purpose");
  }
  const Verdict cuda = implementation("cuda.test_stub").availability();
  if (!cuda.ok) {
    EXPECT_FALSE(cuda.reason.empty());
  }
  EXPECT_EQ(implementation("cuda.test_stub").device(), "cuda");
}

// A device that reports what the test tells it to, and the order of events.
class FakeObserver final : public CallObserver {
 public:
  StreamCapture captured;
  std::vector<std::uint64_t> free_readings;
  std::vector<std::string> events;
  std::uint64_t free_memory() override {
    events.push_back("free");
    const std::uint64_t value = free_readings.front();
    free_readings.erase(free_readings.begin());
    return value;
  }
  StreamCapture capture(const std::function<void()>& call) override {
    events.push_back("capture");
    call();
    return captured;
  }
};

CallAudit audit_with(FakeObserver& observer, std::vector<std::string>& calls) {
  return audit_call(observer, [&] { calls.push_back("call"); }, [&] { observer.events.push_back("sync"); });
}

TEST(CallAudit, ChecksTheStreamThenTheMemoryOfTheRealCall) {
  FakeObserver observer;
  observer.captured.kernels = 3;
  observer.captured.copies = 1;
  observer.free_readings = {100u << 20, 100u << 20};
  std::vector<std::string> calls;
  const CallAudit audit = audit_with(observer, calls);
  EXPECT_EQ(calls.size(), 2u);  // once captured, once for real
  EXPECT_EQ(observer.events, (std::vector<std::string>{"sync", "capture", "sync", "free", "sync", "free"}));
  EXPECT_EQ(audit.stream, "passed");
  EXPECT_NE(audit.stream_detail.find("3 kernels, 1 copy"), std::string::npos) << audit.stream_detail;
  EXPECT_FALSE(audit.allocated);
  EXPECT_TRUE(audit.warnings().empty());
  EXPECT_EQ(audit.to_json()["device_memory"]["status"], "passed");
}

TEST(CallAudit, VerdictsOfEachObservation) {
  CallAudit nothing;
  judge_stream_capture(StreamCapture{}, nothing);
  EXPECT_EQ(nothing.stream, "failed");
  EXPECT_NE(nothing.stream_detail.find("recorded no work"), std::string::npos);

  CallAudit invalidated;
  judge_stream_capture(StreamCapture{"cudaErrorStreamCaptureInvalidated", "", 0, 0, 0, 0, 0}, invalidated);
  EXPECT_EQ(invalidated.stream, "inconclusive");
  EXPECT_EQ(invalidated.warnings().size(), 1u);

  CallAudit call_failed;
  judge_stream_capture(StreamCapture{"", "cudaMalloc refused", 1, 0, 0, 0, 0}, call_failed);
  EXPECT_EQ(call_failed.stream, "inconclusive");
  EXPECT_NE(call_failed.stream_detail.find("cudaMalloc refused"), std::string::npos);

  CallAudit async_allocation;
  judge_stream_capture(StreamCapture{"", "", 1, 0, 0, 2, 0}, async_allocation);
  EXPECT_EQ(async_allocation.stream, "passed");
  EXPECT_TRUE(async_allocation.allocated);
  EXPECT_NE(async_allocation.memory_detail.find("2 times"), std::string::npos);

  CallAudit kept;
  judge_free_memory(std::uint64_t{8} << 30, (std::uint64_t{8} << 30) - (std::uint64_t{64} << 20), kept);
  EXPECT_TRUE(kept.allocated);
  EXPECT_NE(kept.memory_detail.find("64.00 MiB"), std::string::npos) << kept.memory_detail;
  EXPECT_NE(kept.warnings().front().find("peak_bytes is incomplete"), std::string::npos);

  CallAudit noise;  // less than the flag threshold, or more memory free afterwards
  judge_free_memory(kAllocationFlagBytes * 4, kAllocationFlagBytes * 4 - kAllocationFlagBytes / 2, noise);
  judge_free_memory(kAllocationFlagBytes, kAllocationFlagBytes * 4, noise);
  EXPECT_FALSE(noise.allocated);
}

Json document_with_plugin(const std::string& sha256, const std::string& version) {
  return Json{{"plugins", {{{"path", "/x/libk.so"},
                            {"sha256", sha256},
                            {"implementations", {{{"name", "cpu.k"}, {"version", version}}}}}}}};
}

TEST(PluginIdentity, BuildsDifferBySha256OrVersionNotPath) {
  const std::string a(64, 'a'), b(64, 'b');
  EXPECT_TRUE(plugin_build_differences(plugin_builds(document_with_plugin(a, "1")),
                                       plugin_builds(document_with_plugin(a, "1"))).empty());
  Json moved = document_with_plugin(a, "1");
  moved["plugins"][0]["path"] = "/elsewhere/libk.so";
  EXPECT_TRUE(plugin_build_differences(plugin_builds(moved), plugin_builds(document_with_plugin(a, "1"))).empty());
  const std::vector<std::string> rebuilt =
      plugin_build_differences(plugin_builds(document_with_plugin(a, "1")), plugin_builds(document_with_plugin(b, "1")));
  ASSERT_EQ(rebuilt.size(), 1u);
  EXPECT_NE(rebuilt[0].find("cpu.k came from the plug-in /x/libk.so (sha256 aaaaaaaaaaaa…, version 1) vs the "
                            "plug-in /x/libk.so (sha256 bbbbbbbbbbbb…"),
            std::string::npos)
      << rebuilt[0];
  EXPECT_EQ(plugin_build_differences(plugin_builds(document_with_plugin(a, "1")),
                                     plugin_builds(document_with_plugin(a, "2"))).size(), 1u);
  EXPECT_NE(plugin_build_differences(plugin_builds(document_with_plugin(a, "1")), plugin_builds(Json::object()))[0]
                .find("vs a built-in implementation"),
            std::string::npos);
}

}  // namespace
}  // namespace attnbench
