#include "harness/cudasim/shared_memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <new>

#include "harness/cudasim/cta.hpp"
#include "harness/cudasim/report_text.hpp"

namespace cudasim {
namespace {

std::string who(int linear) {
  return "thread " + std::to_string(linear) + " (warp " + std::to_string(linear / 32) + ", lane " +
         std::to_string(linear % 32) + ")";
}

const char* verb(SharedAccess kind) {
  switch (kind) {
    case SharedAccess::read:
      return "read";
    case SharedAccess::write:
      return "write";
    case SharedAccess::async_issue:
      return "cp.async write";
    case SharedAccess::async_land:
      return "cp.async landing";
    case SharedAccess::atomic:
      return "atomic";
  }
  return "access";
}

// The byte pattern of memory nothing has written yet (a NaN in fp16, bf16 and fp32).
constexpr unsigned char kPoison = 0xff;

}  // namespace

SharedMemory::SharedMemory() {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t window = (kMaxSharedBytesPerBlock + page - 1) / page * page;
  mapping_bytes_ = window + 2 * page;
  void* mapping = mmap(nullptr, mapping_bytes_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) throw std::bad_alloc();
  mapping_ = static_cast<unsigned char*>(mapping);
  base_ = mapping_ + page;
  if (mprotect(base_, window, PROT_READ | PROT_WRITE) != 0) throw std::bad_alloc();
}

SharedMemory::~SharedMemory() { munmap(mapping_, mapping_bytes_); }

void SharedMemory::begin_cta(std::size_t dynamic_bytes, bool sanitize) {
  dynamic_bytes_ = dynamic_bytes;
  static_bytes_ = 0;
  statics_.clear();
  sanitize_ = sanitize;
  interval_ = 1;
  std::memset(base_, kPoison, dynamic_bytes_);
  if (sanitize_) {
    shadow_.assign(dynamic_bytes_, Shadow{});
    sites_.assign(1, nullptr);
    last_pc_ = nullptr;
    last_site_ = 0;
  }
}

void* SharedMemory::static_variable(SimThread& thread, const void* site, std::size_t bytes, std::size_t alignment,
                                    const void* pc) {
  for (const StaticVariable& variable : statics_) {
    if (variable.site == site) return base_ + variable.offset;
  }
  const std::size_t offset = (size() + alignment - 1) / alignment * alignment;
  if (offset + bytes - dynamic_bytes_ > kMaxStaticSharedBytes || offset + bytes > kMaxSharedBytesPerBlock) {
    report_fatal(&thread, "too much shared memory",
                 "a static __shared__ variable of " + std::to_string(bytes) + " bytes does not fit: the CTA has " +
                     std::to_string(dynamic_bytes_) + " bytes of dynamic and " + std::to_string(static_bytes_) +
                     " of static shared memory already (at most " + std::to_string(kMaxStaticSharedBytes) +
                     " static, " + std::to_string(kMaxSharedBytesPerBlock) + " in all)",
                 pc);
  }
  static_bytes_ = offset + bytes - dynamic_bytes_;
  std::memset(base_ + offset, kPoison, bytes);
  if (sanitize_) shadow_.resize(size(), Shadow{});
  statics_.push_back(StaticVariable{site, offset});
  return base_ + offset;
}

std::string SharedMemory::describe_address(std::uint32_t address) const {
  std::string text = "shared address " + hex(address);
  if (address < dynamic_bytes_) return text + " (dynamic shared memory + " + std::to_string(address) + ")";
  for (const StaticVariable& variable : statics_) {
    if (address >= variable.offset) {
      return text + " (a static __shared__ variable + " + std::to_string(address - variable.offset) + ")";
    }
  }
  return text;
}

unsigned char* SharedMemory::access(SimThread& thread, std::uint32_t address, std::size_t bytes,
                                    std::size_t alignment, SharedAccess kind, const void* pc) {
  if (address + std::uint64_t{bytes} > size()) {
    report_fatal(&thread, "out-of-bounds shared access",
                 std::string(verb(kind)) + " of " + std::to_string(bytes) + " bytes at shared address " +
                     hex(address) + "; the CTA has " + std::to_string(size()) + " bytes of shared memory (" +
                     std::to_string(dynamic_bytes_) + " dynamic, " + std::to_string(static_bytes_) + " static)",
                 pc);
  }
  if (alignment > 1 && address % alignment != 0) {
    report_fatal(&thread, "misaligned shared access",
                 std::string(verb(kind)) + " of " + std::to_string(bytes) + " bytes at " + describe_address(address) +
                     ", which is not a multiple of " + std::to_string(alignment),
                 pc);
  }
  if (sanitize_ && kind != SharedAccess::atomic) {
    if (kind == SharedAccess::read) {
      check_read(thread, address, bytes, pc);
    } else {
      check_write(thread, address, bytes, kind, pc);
    }
  }
  return base_ + address;
}

std::uint16_t SharedMemory::site_of(const void* pc) {
  if (pc == last_pc_) return last_site_;
  std::size_t index = 0;
  while (index < sites_.size() && sites_[index] != pc) ++index;
  if (index == sites_.size()) {
    if (sites_.size() == 65535) return 0;  // more places than a kernel has; reports name the first
    sites_.push_back(pc);
  }
  last_pc_ = pc;
  last_site_ = static_cast<std::uint16_t>(index);
  return last_site_;
}

SharedMemory::Accessor SharedMemory::accessor(const SimThread& thread, const void* pc) {
  return {static_cast<std::uint16_t>(thread.linear),
          static_cast<std::uint8_t>(thread.cta->warp(thread.warp).sync_count), site_of(pc), thread.warp};
}

void SharedMemory::check_read(SimThread& thread, std::uint32_t address, std::size_t bytes, const void* pc) {
  const Accessor access = accessor(thread, pc);
  bool reported = false;
  for (std::size_t i = 0; i < bytes; ++i) {
    Shadow& s = shadow_[address + i];
    const bool suspicious =
        s.write_interval == 0 || (s.flags & kPending) ||
        (s.write_interval == interval_ && s.writer != access.me && !access.ordered_after(s.writer, s.write_warp_syncs));
    if (suspicious && !reported) {
      reported = true;
      const std::string what = "read of " + std::to_string(bytes) + " bytes at " + describe_address(address);
      if (s.write_interval == 0) {
        report(&thread, "read of uninitialised shared memory",
               what + ": byte " + std::to_string(i) + " was never written in this CTA", pc, false);
      } else if (s.flags & kPending) {
        report(&thread, "read of shared memory a cp.async is still filling",
               what + ": an asynchronous copy of " + who(s.writer) +
                   " to these bytes has not been waited for (cp.async.wait_group) yet",
               pc, false, sites_[s.write_site], "the cp.async was issued");
      } else {
        report(&thread, "shared memory race (read after write)",
               what + " by " + who(thread.linear) + " while " + who(s.writer) +
                   " wrote them since the last __syncthreads",
               pc, false, sites_[s.write_site], "the write");
      }
    }
    if (s.read_interval != interval_) {
      s.read_interval = interval_;
      s.reader = access.me;
      s.flags = static_cast<std::uint8_t>(s.flags & kPending);
    } else if (s.reader != access.me) {
      s.flags |= kManyReaders;
      if (s.reader / 32 != thread.warp) s.flags |= kReadersMixed;
    }
    s.read_warp_syncs = access.syncs;
    s.read_site = access.site;
  }
}

void SharedMemory::check_write(SimThread& thread, std::uint32_t address, std::size_t bytes, SharedAccess kind,
                               const void* pc) {
  const Accessor access = accessor(thread, pc);
  bool reported = false;
  for (std::size_t i = 0; i < bytes; ++i) {
    Shadow& s = shadow_[address + i];
    if (kind == SharedAccess::async_land) {
      s.flags = static_cast<std::uint8_t>(s.flags & ~kPending);
      s.write_interval = interval_;
      s.writer = access.me;
      s.write_warp_syncs = access.syncs;
      continue;
    }
    const bool many = (s.flags & kManyReaders) != 0;
    const bool pending = (s.flags & kPending) != 0;
    const bool write_conflict =
        s.write_interval == interval_ && s.writer != access.me && !access.ordered_after(s.writer, s.write_warp_syncs);
    const bool read_conflict =
        s.read_interval == interval_ &&
        (many ? ((s.flags & kReadersMixed) || s.reader / 32 != thread.warp || s.read_warp_syncs == access.syncs)
              : (s.reader != access.me && !access.ordered_after(s.reader, s.read_warp_syncs)));
    if (!reported && (pending || write_conflict || read_conflict)) {
      reported = true;
      const std::string what = std::string(verb(kind)) + " of " + std::to_string(bytes) + " bytes at " +
                               describe_address(address) + " by " + who(thread.linear);
      if (pending) {
        report(&thread, "write to shared memory a cp.async is still filling",
               what + ": an asynchronous copy of " + who(s.writer) + " to these bytes has not landed yet", pc,
               false, sites_[s.write_site], "the cp.async was issued");
      } else if (write_conflict) {
        report(&thread, "shared memory race (write after write)",
               what + " while " + who(s.writer) + " wrote them since the last __syncthreads", pc, false,
               sites_[s.write_site], "the other write");
      } else {
        report(&thread, "shared memory race (write after read)",
               what + " while " + who(s.reader) + (many ? " and others" : "") +
                   " read them since the last __syncthreads",
               pc, false, sites_[s.read_site], "the read");
      }
    }
    s.write_interval = interval_;
    s.writer = access.me;
    s.write_warp_syncs = access.syncs;
    s.write_site = access.site;
    s.flags = static_cast<std::uint8_t>(kind == SharedAccess::async_issue ? (s.flags | kPending) : (s.flags & ~kPending));
  }
}

}  // namespace cudasim
