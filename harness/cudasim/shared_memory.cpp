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
// Read sets kept before unreferenced ones are dropped.
constexpr std::size_t kReadEntriesBeforeCompaction = std::size_t{1} << 20;
constexpr std::uint16_t kNoSlot = 0xffff;
constexpr std::uint32_t kInlineResult = 0xffffffffu;
constexpr const char* kUnordered = "and no barrier, mbarrier phase or completed wait orders the two";

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

void SharedMemory::begin_cta(std::size_t dynamic_bytes, bool sanitize, HappensBefore* order) {
  dynamic_bytes_ = dynamic_bytes;
  static_bytes_ = 0;
  statics_.clear();
  sanitize_ = sanitize;
  order_ = order;
  std::memset(base_, kPoison, dynamic_bytes_);
  if (sanitize_) {
    shadow_.assign(dynamic_bytes_, Shadow{});
    sites_.assign(1, nullptr);
    site_index_.clear();
    read_entries_.clear();
    read_sets_.clear();
    transitions_.assign(kTransitionCacheSize, Transition{});
    site_cache_.assign(kSiteCacheSize, SiteCacheEntry{nullptr, 0});
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
  for (auto variable = statics_.rbegin(); variable != statics_.rend(); ++variable) {
    if (address >= variable->offset) {
      return text + " (a static __shared__ variable + " + std::to_string(address - variable->offset) + ")";
    }
  }
  return text;
}

std::string SharedMemory::who(int slot) const {
  if (order_->is_agent(slot)) return order_->agent_name(slot);
  return "thread " + std::to_string(slot) + " (warp " + std::to_string(slot / 32) + ", lane " +
         std::to_string(slot % 32) + ")";
}

void SharedMemory::check_bounds(SimThread& thread, std::uint32_t address, std::size_t bytes, std::size_t alignment,
                                const char* what, const void* pc) {
  if (address + std::uint64_t{bytes} > size()) {
    report_fatal(&thread, "out-of-bounds shared access",
                 std::string(what) + " of " + std::to_string(bytes) + " bytes at shared address " + hex(address) +
                     "; the CTA has " + std::to_string(size()) + " bytes of shared memory (" +
                     std::to_string(dynamic_bytes_) + " dynamic, " + std::to_string(static_bytes_) + " static)",
                 pc);
  }
  if (alignment > 1 && address % alignment != 0) {
    report_fatal(&thread, "misaligned shared access",
                 std::string(what) + " of " + std::to_string(bytes) + " bytes at " + describe_address(address) +
                     ", which is not a multiple of " + std::to_string(alignment),
                 pc);
  }
}

unsigned char* SharedMemory::access(SimThread& thread, std::uint32_t address, std::size_t bytes,
                                    std::size_t alignment, SharedAccess kind, const void* pc) {
  check_bounds(thread, address, bytes, alignment, verb(kind), pc);
  if (sanitize_ && kind != SharedAccess::atomic) {
    const Accessor accessor{order_->clock(thread.linear), order_->now(thread.linear), site_of(pc), &thread, nullptr,
                            pc};
    if (kind == SharedAccess::read) {
      read_bytes(accessor, address, bytes, false);
    } else if (kind == SharedAccess::async_land) {
      land(address, bytes, accessor.epoch);
    } else {
      write_bytes(accessor, address, bytes, kind == SharedAccess::async_issue, false);
    }
  }
  return base_ + address;
}

const unsigned char* SharedMemory::async_read(const AsyncAccess& access, std::uint32_t address, std::size_t bytes) {
  check_bounds(*access.issuer, address, bytes, 1, access.what, access.pc);
  if (sanitize_) {
    read_bytes(Accessor{access.ordered_after, access.epoch, site_of(access.pc), access.issuer, access.what, access.pc},
               address, bytes, true);
  }
  return base_ + address;
}

unsigned char* SharedMemory::async_write_issue(const AsyncAccess& access, std::uint32_t address, std::size_t bytes) {
  check_bounds(*access.issuer, address, bytes, 1, access.what, access.pc);
  if (sanitize_) {
    write_bytes(Accessor{access.ordered_after, access.epoch, site_of(access.pc), access.issuer, access.what, access.pc},
                address, bytes, true, true);
  }
  return base_ + address;
}

unsigned char* SharedMemory::async_write_land(std::uint32_t address, std::size_t bytes, Epoch epoch) {
  if (sanitize_) land(address, bytes, epoch);
  return base_ + address;
}

// An asynchronous write the bytes were reserved for lands (their place stays the issue's).
void SharedMemory::land(std::uint32_t address, std::size_t bytes, Epoch epoch) {
  update_shadow(address, bytes, [&](Shadow& s, std::size_t) {
    s.flags = static_cast<std::uint16_t>(s.flags & ~(kPending | kPendingTma | kReadSet)) & 0xf;
    s.write_clock = epoch.clock;
    s.writer = epoch.slot & 0xfff;
    s.read = 0;
  });
}

void SharedMemory::begin_mbarrier(SimThread& thread, std::uint32_t address, const void* pc) {
  check_bounds(thread, address, 8, 8, "mbarrier.init", pc);
  if (!sanitize_) return;
  const std::uint16_t site = site_of(pc);
  for (std::uint32_t i = 0; i < 8; ++i) {
    Shadow& s = shadow_[address + i];
    s = Shadow{};
    s.write_clock = order_->now(thread.linear).clock;
    s.writer = static_cast<std::uint16_t>(thread.linear) & 0xfff;
    s.write_site = site;
    s.flags = kMbarrier;
  }
}

void SharedMemory::end_mbarrier(std::uint32_t address) {
  if (!sanitize_) return;
  for (std::uint32_t i = 0; i < 8; ++i) shadow_[address + i].flags = shadow_[address + i].flags & ~kMbarrier & 0xf;
}

std::uint16_t SharedMemory::site_of(const void* pc) {
  SiteCacheEntry& cached = site_cache_[(reinterpret_cast<std::uintptr_t>(pc) >> 2) % kSiteCacheSize];
  if (cached.pc == pc) return cached.site;
  std::uint16_t index = 0;
  if (const auto found = site_index_.find(pc); found != site_index_.end()) {
    index = found->second;
  } else if (sites_.size() < 65535) {  // more places than a kernel has: reports name the first
    index = static_cast<std::uint16_t>(sites_.size());
    sites_.push_back(pc);
    site_index_.emplace(pc, index);
  }
  cached = SiteCacheEntry{pc, index};
  return index;
}

bool SharedMemory::unordered_read(const Shadow& s, const Clock* ordered_after, ReadEntry& found) const {
  if (s.read == 0) return false;
  if (!(s.flags & kReadSet)) {
    if (s.read <= ordered_after[s.reader]) return false;
    found = ReadEntry{s.reader, s.read_site, s.read};
    return true;
  }
  const ReadSetRange range = read_sets_[s.read - 1];
  for (std::uint32_t i = 0; i < range.count; ++i) {
    const ReadEntry& entry = read_entries_[range.first + i];
    if (entry.clock > ordered_after[entry.slot]) {
      found = entry;
      return true;
    }
  }
  return false;
}

void SharedMemory::record_read(Shadow& s, const Accessor& access) {
  const std::uint16_t me = access.epoch.slot;
  const Clock now = access.epoch.clock;
  if (s.read == 0 || (!(s.flags & kReadSet) && (s.reader == me || s.read <= access.ordered_after[s.reader]))) {
    s.flags = s.flags & ~kReadSet & 0xf;
    s.reader = me;
    s.read = now;
    s.read_site = access.site;
    return;
  }
  // Several reads that no read orders: a read set, looked up by transition.
  const bool from_set = (s.flags & kReadSet) != 0;
  if (from_set && s.reader == me) {
    const ReadSetRange range = read_sets_[s.read - 1];
    if (read_entries_[range.first + range.count - 1].clock == now) return;  // this very read again
  }
  const TransitionKey key{std::uint64_t{s.read} << 32 | std::uint64_t{from_set ? kNoSlot : s.reader} << 16 |
                              (from_set ? 0 : s.read_site),
                          std::uint64_t{now} << 32 | std::uint64_t{me} << 16 | access.site};
  Transition& cached = transitions_[transition_slot(key)];
  std::uint32_t result;
  if (cached.valid && cached.key == key) {
    result = cached.result;
  } else {
    if (read_entries_.size() > kReadEntriesBeforeCompaction) compact_read_sets();
    kept_.clear();
    const auto keep = [&](const ReadEntry& entry) {
      if (entry.slot != me && entry.clock > access.ordered_after[entry.slot]) kept_.push_back(entry);
    };
    if (from_set) {
      const ReadSetRange range = read_sets_[s.read - 1];
      for (std::uint32_t i = 0; i < range.count; ++i) keep(read_entries_[range.first + i]);
    } else {
      keep(ReadEntry{s.reader, s.read_site, s.read});
    }
    if (kept_.empty()) {
      result = kInlineResult;
    } else {
      kept_.push_back(ReadEntry{me, access.site, now});
      read_sets_.push_back(ReadSetRange{static_cast<std::uint32_t>(read_entries_.size()),
                                        static_cast<std::uint32_t>(kept_.size())});
      read_entries_.insert(read_entries_.end(), kept_.begin(), kept_.end());
      result = static_cast<std::uint32_t>(read_sets_.size());
    }
    cached = Transition{key, result, true};
  }
  s.read_site = access.site;
  if (result == kInlineResult) {
    s.flags = s.flags & ~kReadSet & 0xf;
    s.reader = me;
    s.read = now;
  } else {
    s.flags = s.flags | kReadSet;
    s.reader = me;
    s.read = result;
  }
}

void SharedMemory::compact_read_sets() {
  std::vector<std::uint32_t> renamed(read_sets_.size() + 1, 0);
  std::vector<ReadEntry> entries;
  std::vector<ReadSetRange> sets;
  for (Shadow& s : shadow_) {
    if (!(s.flags & kReadSet)) continue;
    std::uint32_t& name = renamed[s.read];
    if (name == 0) {
      const ReadSetRange range = read_sets_[s.read - 1];
      sets.push_back(ReadSetRange{static_cast<std::uint32_t>(entries.size()), range.count});
      entries.insert(entries.end(), read_entries_.begin() + range.first,
                     read_entries_.begin() + range.first + range.count);
      name = static_cast<std::uint32_t>(sets.size());
    }
    s.read = name;
  }
  read_entries_ = std::move(entries);
  read_sets_ = std::move(sets);
  ++compactions_;
  transitions_.assign(kTransitionCacheSize, Transition{});
}

template <typename Update>
void SharedMemory::update_shadow(std::uint32_t address, std::size_t bytes, Update update) {
  // Neighbouring bytes usually share one state: the first one's update serves them all.
  Shadow before{}, after{};
  bool memo = false;
  for (std::size_t i = 0; i < bytes; ++i) {
    Shadow& s = shadow_[address + i];
    if (memo && same(s, before)) {
      s = after;
      continue;
    }
    before = s;
    const std::uint64_t compactions = compactions_;
    update(s, i);
    after = s;
    memo = compactions == compactions_;  // a compaction renames the sets `before` may name
  }
}

void SharedMemory::read_bytes(const Accessor& access, std::uint32_t address, std::size_t bytes, bool async_proxy) {
  bool reported = false;
  update_shadow(address, bytes, [&](Shadow& s, std::size_t i) {
    if (!reported) {
      const auto what = [&] {
        return std::string(access.what ? access.what : "read") + " of " + std::to_string(bytes) + " bytes at " +
               describe_address(address) + (access.what ? " issued by " : " by ") + who(access.thread->linear);
      };
      const auto finding = [&](const char* kind, const std::string& details, std::uint16_t site, const char* label) {
        report(access.thread, kind, details, access.pc, false, sites_[site], label);
        reported = true;
      };
      if (s.flags & kMbarrier) {
        finding("mbarrier object accessed by an ordinary load or store",
                what() + ": byte " + std::to_string(i) + " belongs to a live mbarrier object", s.write_site,
                "the mbarrier.init");
      } else if (s.write_clock == 0) {
        report(access.thread, "read of uninitialised shared memory",
               what() + ": byte " + std::to_string(i) + " was never written in this CTA", access.pc, false);
        reported = true;
      } else if (s.flags & kPending) {
        const bool tma = (s.flags & kPendingTma) != 0;
        finding(tma ? "read of shared memory a TMA load is still filling"
                    : "read of shared memory a cp.async is still filling",
                what() + (tma ? ": a TMA load issued by " : ": an asynchronous copy of ") + who(s.writer) +
                    (tma ? " to these bytes has not completed: no mbarrier phase it completes was observed first"
                         : " to these bytes has not been waited for (cp.async.wait_group) yet"),
                s.write_site, tma ? "the TMA load was issued" : "the cp.async was issued");
      } else if (s.write_clock > access.ordered_after[s.writer]) {
        finding("shared memory race (read after write)",
                what() + " while " + who(s.writer) + " wrote them, " + kUnordered, s.write_site, "the write");
      } else if (async_proxy && !order_->is_agent(s.writer) &&
                 !order_->proxy_fenced(s.writer, s.write_clock, access.ordered_after)) {
        finding("generic-proxy write not fenced for the async proxy",
                what() + " reads bytes that " + who(s.writer) +
                    " wrote through the generic proxy (an ordinary store or stmatrix) with no fence.proxy.async "
                    "by that thread between the write and the synchronisation that orders it before the read",
                s.write_site, "the write");
      }
    }
    record_read(s, access);
  });
}

void SharedMemory::write_bytes(const Accessor& access, std::uint32_t address, std::size_t bytes, bool reserve,
                               bool tma) {
  bool reported = false;
  update_shadow(address, bytes, [&](Shadow& s, std::size_t i) {
    if (!reported) {
      const auto what = [&] {
        return std::string(access.what ? access.what : reserve ? "cp.async write" : "write") + " of " +
               std::to_string(bytes) + " bytes at " + describe_address(address) +
               (access.what ? " issued by " : " by ") + who(access.thread->linear);
      };
      const auto finding = [&](const char* kind, const std::string& details, std::uint16_t site, const char* label) {
        report(access.thread, kind, details, access.pc, false, sites_[site], label);
        reported = true;
      };
      ReadEntry reader{};
      if (s.flags & kMbarrier) {
        finding("mbarrier object accessed by an ordinary load or store",
                what() + ": byte " + std::to_string(i) + " belongs to a live mbarrier object (mbarrier.inval first)",
                s.write_site, "the mbarrier.init");
      } else if (s.flags & kPending) {
        const bool by_tma = (s.flags & kPendingTma) != 0;
        finding(by_tma ? "write to shared memory a TMA load is still filling"
                       : "write to shared memory a cp.async is still filling",
                what() + (by_tma ? ": a TMA load issued by " : ": an asynchronous copy of ") + who(s.writer) +
                    " to these bytes has not landed yet",
                s.write_site, by_tma ? "the TMA load was issued" : "the cp.async was issued");
      } else if (s.write_clock != 0 && s.write_clock > access.ordered_after[s.writer]) {
        finding("shared memory race (write after write)",
                what() + " while " + who(s.writer) + " wrote them, " + kUnordered, s.write_site, "the other write");
      } else if (unordered_read(s, access.ordered_after, reader)) {
        finding("shared memory race (write after read)",
                what() + " while " + who(reader.slot) + " read them, " + kUnordered, reader.site, "the read");
      }
    }
    s.write_clock = access.epoch.clock;
    s.writer = access.epoch.slot & 0xfff;
    s.write_site = access.site;
    s.read = 0;
    s.flags = static_cast<std::uint16_t>((s.flags & kMbarrier) | (reserve ? kPending : 0) | (tma ? kPendingTma : 0)) & 0xf;
  });
}

}  // namespace cudasim
