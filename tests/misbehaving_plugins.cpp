// Plug-ins for the tests (tests/test_plugins.cpp, tests/test_plugins.py), one
// source built once per TEST_PLUGIN_VARIANT as a shared library (tests/CMakeLists.txt).
// Built as C++, so the ABI header is also compiled with the project's warnings
// in C++ (the examples compile it as C).
//
//   misbehaving         cpu.test_error (forward fails), cpu.test_crash (forward
//                       aborts the process on head dim 16), cpu.test_hang (forward
//                       never returns on head dim 16), cpu.test_supports_error (supports
//                       fails), cuda.test_stub (a CUDA implementation, for a
//                       machine without a GPU); and forwards that write outside
//                       their buffers (each writes 64 floats, leaving the
//                       outputs unwritten): cpu.test_past_o, cpu.test_past_lse,
//                       cpu.test_before_lse, cpu.test_past_workspace (a 1 KiB
//                       workspace), cpu.test_into_q (one element of Q)
//   builtin_clash       registers cpu.flash, a built-in name
//   bad_name            registers "cpu.Bad Name"
//   duplicate           registers cpu.test_twice twice
//   other_abi           reports ABI version 999
//   no_register         exports the version function only (with TEST_PLUGIN_WITHOUT_REGISTER)
//   register_fails      attnbench_plugin_register reports an error
//   registers_nothing   attnbench_plugin_register adds nothing
//   releases            cpu.test_release_a and _b with release_user_data hooks, and
//                       cpu.test_abi_1_0, registered as a plug-in built against
//                       ABI 1.0 (struct_size without release_user_data, whose
//                       slot holds a hook attnbench must not read); each hook
//                       and the registration write a line to the file named by
//                       ATTNBENCH_TEST_RELEASE_LOG
//   release_refused     cpu.test_release_refused with a hook, then a bad name: the
//                       registration is refused
#include <attnbench/plugin.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#ifndef TEST_PLUGIN_VARIANT
#error "define TEST_PLUGIN_VARIANT"
#endif

namespace {

enum Variant {
  misbehaving,
  builtin_clash,
  bad_name,
  duplicate,
  other_abi,
  no_register,
  register_fails,
  registers_nothing,
  releases,
  release_refused
};
constexpr Variant kVariant = TEST_PLUGIN_VARIANT;

}  // namespace

ATTNBENCH_PLUGIN_EXPORT std::uint32_t attnbench_plugin_abi_version(void) {
  return kVariant == other_abi ? 999u : ATTNBENCH_PLUGIN_ABI_VERSION;
}

#ifndef TEST_PLUGIN_WITHOUT_REGISTER
namespace {

std::int32_t supports_everything(void*, const attnbench_problem*, attnbench_message*) { return ATTNBENCH_STATUS_OK; }

std::int32_t supports_fails(void*, const attnbench_problem*, attnbench_message* message) {
  return attnbench_message_set(message, ATTNBENCH_STATUS_ERROR, "supports() broke on purpose");
}

std::int32_t forward_fails(void*, const attnbench_problem* problem, const attnbench_buffers*, const attnbench_context*,
                           attnbench_message* message) {
  return attnbench_message_set(message, ATTNBENCH_STATUS_ERROR,
                               problem->head_dim > 0 ? "deliberate failure in forward" : "no head dim");
}

// Aborts the process on a head dim of 16; fails with a message on any other.
std::int32_t forward_crashes(void*, const attnbench_problem* problem, const attnbench_buffers*,
                             const attnbench_context*, attnbench_message* message) {
  if (problem->head_dim == 16) std::abort();
  return attnbench_message_set(message, ATTNBENCH_STATUS_ERROR, "did not crash (head dim is not 16)");
}

// Never returns on a head dim of 16; fails with a message on any other.
std::int32_t forward_hangs(void*, const attnbench_problem* problem, const attnbench_buffers*, const attnbench_context*,
                           attnbench_message* message) {
  while (problem->head_dim == 16) sleep(1);
  return attnbench_message_set(message, ATTNBENCH_STATUS_ERROR, "did not hang (head dim is not 16)");
}

// Where the scribbling forwards write.
enum Scribble { past_o, past_lse, before_lse, past_workspace, into_q };

std::int32_t forward_scribbles(void* user_data, const attnbench_problem* problem, const attnbench_buffers* buffers,
                               const attnbench_context*, attnbench_message*) {
  const std::size_t rows = static_cast<std::size_t>(problem->batch * problem->heads * problem->seqlen_q);
  const std::size_t out_bytes = rows * static_cast<std::size_t>(problem->head_dim) *
                                (problem->output_dtype == ATTNBENCH_DTYPE_FP32 ? 4 : 2);
  float* at = nullptr;
  switch (*static_cast<const Scribble*>(user_data)) {
    case past_o: at = reinterpret_cast<float*>(static_cast<char*>(buffers->out) + out_bytes); break;
    case past_lse: at = buffers->lse + rows; break;
    case before_lse: at = buffers->lse - 64; break;
    case past_workspace:
      at = reinterpret_cast<float*>(static_cast<char*>(buffers->workspace) + buffers->workspace_bytes);
      break;
    case into_q:
      *const_cast<unsigned char*>(static_cast<const unsigned char*>(buffers->q) + 6) ^= 1;
      return ATTNBENCH_STATUS_OK;
  }
  for (int i = 0; i < 64; ++i) at[i] = 1.0f;
  return ATTNBENCH_STATUS_OK;
}

std::int32_t one_kib(void*, const attnbench_problem*, const attnbench_context*, std::uint64_t* bytes,
                     attnbench_message*) {
  *bytes = 1024;
  return ATTNBENCH_STATUS_OK;
}

attnbench_implementation implementation(const char* name, std::int32_t device, attnbench_supports_fn supports,
                                        attnbench_call_fn forward) {
  attnbench_implementation result;
  std::memset(&result, 0, sizeof result);
  result.struct_size = sizeof result;
  result.name = name;
  result.device = device;
  result.algorithm = ATTNBENCH_ALGORITHM_MATERIALIZING;
  result.summary = "a test plug-in's implementation";
  result.version = "0.1";
  result.supports = supports;
  result.forward = forward;
  return result;
}

attnbench_implementation scribbler(const char* name, Scribble where) {
  static const Scribble places[] = {past_o, past_lse, before_lse, past_workspace, into_q};
  attnbench_implementation result = implementation(name, ATTNBENCH_DEVICE_CPU, supports_everything, forward_scribbles);
  result.user_data = const_cast<Scribble*>(&places[where]);
  if (where == past_workspace) result.workspace_bytes = one_kib;
  return result;
}

// Appends `line` to the file ATTNBENCH_TEST_RELEASE_LOG names, if it is set.
void log_line(const std::string& line) {
  const char* path = std::getenv("ATTNBENCH_TEST_RELEASE_LOG");
  if (!path) return;
  if (std::FILE* file = std::fopen(path, "a")) {
    std::fprintf(file, "%s\n", line.c_str());
    std::fclose(file);
  }
}

// user_data: the implementation's name on the heap, freed by its hook.
void release_name(void* user_data) {
  auto* name = static_cast<std::string*>(user_data);
  log_line("released " + *name);
  delete name;
}

void release_read_past_struct_size(void*) { log_line("read past struct_size"); }

attnbench_implementation released(const char* name) {
  attnbench_implementation result = implementation(name, ATTNBENCH_DEVICE_CPU, supports_everything, forward_fails);
  result.user_data = new std::string(name);
  result.release_user_data = release_name;
  return result;
}

}  // namespace

ATTNBENCH_PLUGIN_EXPORT std::int32_t attnbench_plugin_register(attnbench_registrar* registrar,
                                                               attnbench_message* message) {
  switch (kVariant) {
    case misbehaving: {
      const attnbench_implementation all[] = {
          implementation("cpu.test_error", ATTNBENCH_DEVICE_CPU, supports_everything, forward_fails),
          implementation("cpu.test_crash", ATTNBENCH_DEVICE_CPU, supports_everything, forward_crashes),
          implementation("cpu.test_hang", ATTNBENCH_DEVICE_CPU, supports_everything, forward_hangs),
          scribbler("cpu.test_past_o", past_o), scribbler("cpu.test_past_lse", past_lse),
          scribbler("cpu.test_before_lse", before_lse), scribbler("cpu.test_past_workspace", past_workspace),
          scribbler("cpu.test_into_q", into_q),
          implementation("cpu.test_supports_error", ATTNBENCH_DEVICE_CPU, supports_fails, forward_fails),
          implementation("cuda.test_stub", ATTNBENCH_DEVICE_CUDA, supports_everything, forward_fails)};
      for (const attnbench_implementation& one : all) {
        if (registrar->add(registrar, &one) != ATTNBENCH_STATUS_OK) return ATTNBENCH_STATUS_ERROR;
      }
      return ATTNBENCH_STATUS_OK;
    }
    case builtin_clash: {
      const attnbench_implementation one =
          implementation("cpu.flash", ATTNBENCH_DEVICE_CPU, supports_everything, forward_fails);
      return registrar->add(registrar, &one);
    }
    case bad_name: {
      const attnbench_implementation one =
          implementation("cpu.Bad Name", ATTNBENCH_DEVICE_CPU, supports_everything, forward_fails);
      return registrar->add(registrar, &one);
    }
    case duplicate: {
      const attnbench_implementation one =
          implementation("cpu.test_twice", ATTNBENCH_DEVICE_CPU, supports_everything, forward_fails);
      registrar->add(registrar, &one);
      return registrar->add(registrar, &one);
    }
    case releases: {
      log_line("minor " + std::to_string(attnbench_registrar_minor_version(registrar)));
      attnbench_implementation abi_1_0 =
          implementation("cpu.test_abi_1_0", ATTNBENCH_DEVICE_CPU, supports_everything, forward_fails);
      abi_1_0.struct_size = offsetof(attnbench_implementation, release_user_data);
      abi_1_0.release_user_data = release_read_past_struct_size;
      const attnbench_implementation all[] = {released("cpu.test_release_a"), released("cpu.test_release_b"), abi_1_0};
      for (const attnbench_implementation& one : all) {
        if (registrar->add(registrar, &one) != ATTNBENCH_STATUS_OK) return ATTNBENCH_STATUS_ERROR;
      }
      return ATTNBENCH_STATUS_OK;
    }
    case release_refused: {
      const attnbench_implementation good = released("cpu.test_release_refused");
      registrar->add(registrar, &good);
      const attnbench_implementation bad =
          implementation("cpu.Bad Name", ATTNBENCH_DEVICE_CPU, supports_everything, forward_fails);
      return registrar->add(registrar, &bad);
    }
    case register_fails:
      return attnbench_message_set(message, ATTNBENCH_STATUS_ERROR, "no license for this machine");
    case registers_nothing:
    case other_abi:
    case no_register:
      return ATTNBENCH_STATUS_OK;
  }
  return ATTNBENCH_STATUS_ERROR;
}
#endif
