// SHA-256 (FIPS 180-4) of a byte string or a file, as 64 lowercase hex digits:
// the identity of a plug-in's shared library in the results file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace attnbench {

class Sha256 {
 public:
  Sha256();
  void update(std::string_view bytes);
  // The digest of everything given so far, as hex; the object is spent.
  std::string finish_hex();

 private:
  void compress(const unsigned char* block);

  std::uint32_t state_[8];
  unsigned char block_[64];
  std::size_t block_used_ = 0;
  std::uint64_t total_bytes_ = 0;
};

std::string sha256_hex(std::string_view bytes);

// The digest of the file's contents; nullopt with `error` set when it cannot be read.
std::optional<std::string> sha256_file_hex(const std::string& path, std::string& error);

}  // namespace attnbench
