// The index arithmetic of the cuda.flash backward
// (kernels/cuda/flash_backward_geometry.hpp), checked on the CPU against the
// definitions it must agree with: every ldmatrix operand read from an emulated
// swizzled shared tile at the kernel's lane addresses against the mma.sync
// fragment layouts of the PTX ISA, the C-fragment stores into shared tiles, the
// dQ partition, the query tiles a key tile visits and the tiles that need no
// predicates against the mask predicate, the dropout words each lane ends up with
// against the contract, and the shared-memory and workspace layouts.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "kernels/common/dropout.hpp"
#include "kernels/common/mask.hpp"
#include "kernels/cuda/flash_backward_geometry.hpp"
#include "kernels/cuda/flash_geometry.hpp"
#include "tests/mask_edges.hpp"
#include "tests/mask_kinds.hpp"

namespace attnbench {
namespace {

constexpr int kHeadDims[] = {64, 128};
constexpr int kElementBytes = 2;

// The value stored at (row, column) of an emulated tile: unique per position.
int tile_value(int row, int column) { return 1000 * row + column; }

// Shared memory as 16-bit cells by byte address: a tile of `rows` x `row_elements`
// written at `base` in the swizzled layout, as cp.async or the kernel's stores leave it.
struct SharedMemory {
  std::map<std::uint32_t, int> cells;

  void fill_tile(std::uint32_t base, int rows, int row_elements) {
    for (int row = 0; row < rows; ++row) {
      for (int column = 0; column < row_elements; ++column) {
        const auto address = base + 2u * static_cast<std::uint32_t>(swizzled_offset(row, column, row_elements));
        EXPECT_TRUE(cells.emplace(address, tile_value(row, column)).second) << "two elements at one address";
      }
    }
  }
  int at(std::uint32_t address) const {
    const auto found = cells.find(address);
    EXPECT_NE(found, cells.end()) << "read of an unwritten address " << address;
    return found == cells.end() ? -1 : found->second;
  }

  // What ldmatrix.x4 (transposed or not) leaves in register `reg` (two
  // elements) of lane `lane`, given every lane's row address.
  std::array<int, 2> ldmatrix(const std::array<std::uint32_t, 32>& row_addresses, int lane, int reg,
                              bool transposed) const {
    std::array<int, 2> elements{};
    for (int half = 0; half < 2; ++half) {
      // Plain: row lane / 4, column 2(lane % 4) + half of matrix reg.
      // Transposed: row 2(lane % 4) + half, column lane / 4.
      const int matrix_row = transposed ? 2 * (lane % 4) + half : lane / 4;
      const int matrix_column = transposed ? lane / 4 : 2 * (lane % 4) + half;
      const std::uint32_t row_address = row_addresses[static_cast<std::size_t>(8 * reg + matrix_row)];
      elements[static_cast<std::size_t>(half)] = at(row_address + 2u * static_cast<std::uint32_t>(matrix_column));
    }
    return elements;
  }
};

template <typename Address>
std::array<std::uint32_t, 32> lane_addresses(Address address) {
  std::array<std::uint32_t, 32> addresses{};
  for (int lane = 0; lane < 32; ++lane) {
    addresses[static_cast<std::size_t>(lane)] = address(lane);
    EXPECT_EQ(addresses[static_cast<std::size_t>(lane)] % 16, 0u) << "ldmatrix rows are 16-byte aligned";
  }
  return addresses;
}

// Checks that lane l's register reg of an A operand loaded by `addresses` holds
// the A fragment of the 16x16 block whose (row, column) element is `expected`.
template <typename Expected>
void expect_a_fragment(const SharedMemory& memory, const std::array<std::uint32_t, 32>& addresses, bool transposed,
                       Expected expected, const char* what) {
  for (int lane = 0; lane < 32; ++lane) {
    for (int reg = 0; reg < 4; ++reg) {
      const auto loaded = memory.ldmatrix(addresses, lane, reg, transposed);
      for (int half = 0; half < 2; ++half) {
        const FragmentPosition a = mma_a_position(lane, 2 * reg + half);
        ASSERT_EQ(loaded[static_cast<std::size_t>(half)], expected(a.row, a.column))
            << what << ": lane " << lane << " register " << reg;
      }
    }
  }
}

// B operands come as two 16x8 fragments per ldmatrix.x4: registers 0, 1 are the
// fragment of columns (n) 0-7, registers 2, 3 of columns 8-15; `expected(k, n)`
// gives the element at k, n of the 16x16 block.
template <typename Expected>
void expect_b_fragments(const SharedMemory& memory, const std::array<std::uint32_t, 32>& addresses, bool transposed,
                        Expected expected, const char* what) {
  for (int lane = 0; lane < 32; ++lane) {
    for (int reg = 0; reg < 4; ++reg) {
      const auto loaded = memory.ldmatrix(addresses, lane, reg, transposed);
      for (int half = 0; half < 2; ++half) {
        const FragmentPosition b = mma_b_position(lane, 2 * (reg % 2) + half);
        ASSERT_EQ(loaded[static_cast<std::size_t>(half)], expected(b.row, 8 * (reg / 2) + b.column))
            << what << ": lane " << lane << " register " << reg;
      }
    }
  }
}

// ---- Shapes and layouts ---------------------------------------------------------

TEST(FlashBackwardGeometry, ShapeGivesEachWarpSixteenKeysAndWholeSlices) {
  for (int head_dim : kHeadDims) {
    const FlashBackwardShape shape = flash_backward_shape(head_dim);
    EXPECT_EQ(shape.block_n, 16 * shape.warps);
    EXPECT_EQ(shape.block_m % shape.slice_m, 0);
    EXPECT_EQ(shape.slice_m % 16, 0);
    EXPECT_LE(4 * shape.slice_m / 8, 32) << "a slice's dropout bits fit in one 32-bit word";
    EXPECT_EQ(shape.block_m * kElementBytes, 128) << "the dSᵀ tile's rows are 128 bytes, as the swizzle needs";
    EXPECT_EQ(shape.warps % (shape.block_m / 16), 0) << "dQ: whole row blocks per warp group";
    EXPECT_LE(shape.block_n, kFlashBackwardStages * shape.block_m) << "dK, dV tiles fit in the Q, dO stages";
  }
}

TEST(FlashBackwardGeometry, SharedMemoryFitsSm80AndSm90WithAlignedDisjointRegions) {
  for (int head_dim : kHeadDims) {
    const FlashBackwardShape shape = flash_backward_shape(head_dim);
    const FlashBackwardSharedLayout layout = flash_backward_shared_layout(head_dim, kElementBytes);
    EXPECT_LE(layout.total, 163 * 1024) << "sm_80 allows 163 KiB per CTA";
    EXPECT_LE(layout.total, 227 * 1024) << "sm_90 allows 227 KiB per CTA";
    const int key_tile = shape.block_n * head_dim * kElementBytes;
    const std::vector<std::pair<int, int>> regions = {
        {layout.k_tile, key_tile},
        {layout.v_tile, key_tile},
        {layout.q_tiles, kFlashBackwardStages * layout.query_tile_bytes},
        {layout.d_out_tiles, kFlashBackwardStages * layout.query_tile_bytes},
        {layout.lse_rows, kFlashBackwardStages * layout.row_vector_bytes},
        {layout.delta_rows, kFlashBackwardStages * layout.row_vector_bytes},
        {layout.ds_tile, shape.block_n * shape.block_m * kElementBytes}};
    int expected_start = 0;
    for (const auto& [start, bytes] : regions) {
      EXPECT_EQ(start, expected_start) << "regions follow each other";
      EXPECT_EQ(start % 128, 0) << "swizzled_step needs 128-byte aligned tiles";
      EXPECT_EQ(bytes % 128, 0);
      expected_start = start + bytes;
    }
    EXPECT_EQ(layout.total, expected_start);
    EXPECT_EQ(layout.query_tile_bytes, shape.block_m * head_dim * kElementBytes);
    EXPECT_EQ(layout.row_vector_bytes, shape.block_m * 4);
    EXPECT_EQ(layout.row_vector_bytes % 16, 0) << "LSE and D rows arrive in 16-byte cp.async chunks";
  }
}

TEST(FlashBackwardGeometry, WorkspaceIsLinearInTheSequenceAndAligned) {
  for (int head_dim : kHeadDims) {
    const int block_m = flash_backward_shape(head_dim).block_m;
    for (std::int64_t seqlen : {1, 63, 64, 65, 1000, 16384}) {
      const std::int64_t rows = flash_backward_padded_rows(seqlen, head_dim);
      EXPECT_GE(rows, seqlen);
      EXPECT_LT(rows - seqlen, block_m);
      EXPECT_EQ(rows % block_m, 0);
      EXPECT_EQ(rows % kFlashBackwardRowsPerBlock, 0) << "the prepare grid covers the padded rows exactly";
      const FlashBackwardWorkspaceLayout layout = flash_backward_workspace_layout(3, 5, seqlen, head_dim);
      const auto vector_bytes = static_cast<std::size_t>(3 * 5 * rows) * sizeof(float);
      EXPECT_EQ(layout.lse_log2, 0u);
      EXPECT_GE(layout.delta, layout.lse_log2 + vector_bytes);
      EXPECT_GE(layout.dq_accumulator, layout.delta + vector_bytes);
      EXPECT_GE(layout.total, layout.dq_accumulator + vector_bytes * static_cast<std::size_t>(head_dim));
      EXPECT_LT(layout.total, layout.dq_accumulator + vector_bytes * static_cast<std::size_t>(head_dim) + 256);
      for (std::size_t offset : {layout.lse_log2, layout.delta, layout.dq_accumulator, layout.total}) {
        EXPECT_EQ(offset % 256, 0u);
      }
    }
    // O(N): doubling the sequence at most doubles the bytes (plus alignment).
    const std::size_t small = flash_backward_workspace_layout(2, 4, 4096, head_dim).total;
    const std::size_t large = flash_backward_workspace_layout(2, 4, 8192, head_dim).total;
    EXPECT_LE(large, 2 * small + 3 * 256);
  }
}

TEST(FlashBackwardGeometry, RowKernelChunksCoverEachRowOnce) {
  for (int head_dim : kHeadDims) {
    std::set<int> columns;
    for (int pass = 0; pass < head_dim / (8 * kFlashBackwardRowLanes); ++pass) {
      for (int part = 0; part < kFlashBackwardRowLanes; ++part) columns.insert(row_chunk_column(pass, part));
    }
    EXPECT_EQ(static_cast<int>(columns.size()), head_dim / 8);
    EXPECT_EQ(*columns.begin(), 0);
    EXPECT_EQ(*columns.rbegin(), head_dim - 8);
  }
  EXPECT_EQ(kFlashBackwardRowLanes * kFlashBackwardRowsPerBlock, kFlashBackwardRowThreads);
  EXPECT_EQ(32 % kFlashBackwardRowLanes, 0) << "a row's lanes sit in one warp for the shuffle reduction";
}

// The tile copies themselves (copy_tile_async, store_tile) are checked for the
// backward's thread count and tile heights in tests/test_flash_geometry.cpp.
TEST(FlashBackwardGeometry, RowVectorsTakeOneChunkPerThread) {
  for (int head_dim : kHeadDims) {
    const FlashBackwardShape shape = flash_backward_shape(head_dim);
    EXPECT_LE(2 * shape.block_m / 4, 32 * shape.warps) << "the LSE and D chunks of a stage take one chunk per thread";
  }
}

// ---- ldmatrix operands, read from emulated swizzled tiles ---------------------------

// Sᵀ = K_w·Qᵀ and dPᵀ = V_w·dOᵀ, A operand: warp w's keys of the K (V) tile.
TEST(FlashBackwardGeometry, KeyRowsLoadAsTheAFragmentOfTheWarpsKeys) {
  for (int head_dim : kHeadDims) {
    const FlashBackwardShape shape = flash_backward_shape(head_dim);
    const int row_bytes = head_dim * kElementBytes;
    const std::uint32_t tile = 128u * 7;  // any 128-byte aligned base
    SharedMemory memory;
    memory.fill_tile(tile, shape.block_n, head_dim);
    for (int warp = 0; warp < shape.warps; ++warp) {
      for (int dim_step = 0; dim_step < head_dim / 16; ++dim_step) {
        const auto addresses = lane_addresses([&](int lane) {
          return swizzled_step(tile + key_rows_a_lane_bytes(lane, warp, row_bytes), 2 * dim_step, 0, row_bytes);
        });
        expect_a_fragment(
            memory, addresses, false,
            [&](int row, int column) { return tile_value(16 * warp + row, 16 * dim_step + column); }, "K as A");
      }
    }
  }
}

// Sᵀ and dPᵀ, B operand: Q (dO) of the slice, k = dim, n = query.
TEST(FlashBackwardGeometry, QueryRowsLoadAsTheBFragmentsOfSixteenQueries) {
  for (int head_dim : kHeadDims) {
    const FlashBackwardShape shape = flash_backward_shape(head_dim);
    const int row_bytes = head_dim * kElementBytes;
    const std::uint32_t stage = 128u * 40;
    SharedMemory memory;
    memory.fill_tile(stage, shape.block_m, head_dim);
    for (int slice_row = 0; slice_row < shape.block_m; slice_row += shape.slice_m) {
      const std::uint32_t rows = stage + static_cast<std::uint32_t>(slice_row * row_bytes);
      for (int dim_step = 0; dim_step < head_dim / 16; ++dim_step) {
        for (int pair = 0; pair < shape.slice_m / 16; ++pair) {
          const auto addresses = lane_addresses([&](int lane) {
            return swizzled_step(rows + query_rows_b_lane_bytes(lane, row_bytes), 2 * dim_step, 16 * pair, row_bytes);
          });
          expect_b_fragments(
              memory, addresses, false,
              [&](int k, int n) { return tile_value(slice_row + 16 * pair + n, 16 * dim_step + k); }, "Q as B");
        }
      }
    }
  }
}

// dV += P̃ᵀ·dO and dK += dSᵀ·Q, B operand: dO (Q) with k = query, n = dim.
TEST(FlashBackwardGeometry, QueryRowsLoadTransposedAsTheBFragmentsOfSixteenDims) {
  for (int head_dim : kHeadDims) {
    const FlashBackwardShape shape = flash_backward_shape(head_dim);
    const int row_bytes = head_dim * kElementBytes;
    const std::uint32_t stage = 128u * 3;
    SharedMemory memory;
    memory.fill_tile(stage, shape.block_m, head_dim);
    for (int slice_row = 0; slice_row < shape.block_m; slice_row += shape.slice_m) {
      const std::uint32_t rows = stage + static_cast<std::uint32_t>(slice_row * row_bytes);
      for (int query_step = 0; query_step < shape.slice_m / 16; ++query_step) {
        for (int pair = 0; pair < head_dim / 16; ++pair) {
          const auto addresses = lane_addresses([&](int lane) {
            return swizzled_step(rows + rows_as_k_b_lane_bytes(lane, row_bytes), 2 * pair, 16 * query_step, row_bytes);
          });
          expect_b_fragments(
              memory, addresses, true,
              [&](int k, int n) { return tile_value(slice_row + 16 * query_step + k, 16 * pair + n); }, "dO as B");
        }
      }
    }
  }
}

// dQ = dS·K, B operand: K with k = key, n = the warp's dims.
TEST(FlashBackwardGeometry, KeyRowsLoadTransposedAsTheBFragmentsOfTheWarpsDqDims) {
  for (int head_dim : kHeadDims) {
    const FlashBackwardShape shape = flash_backward_shape(head_dim);
    const int row_bytes = head_dim * kElementBytes;
    const std::uint32_t tile = 0;
    SharedMemory memory;
    memory.fill_tile(tile, shape.block_n, head_dim);
    for (int warp = 0; warp < shape.warps; ++warp) {
      const DqWarpTile dq = dq_warp_tile(warp, head_dim);
      for (int key_step = 0; key_step < shape.block_n / 16; ++key_step) {
        for (int pair = 0; pair < dq.dims / 16; ++pair) {
          const auto addresses = lane_addresses([&](int lane) {
            return swizzled_step(tile + dq_key_b_lane_bytes(lane, warp, head_dim, row_bytes), 2 * pair, 16 * key_step,
                                 row_bytes);
          });
          expect_b_fragments(
              memory, addresses, true,
              [&](int k, int n) { return tile_value(16 * key_step + k, dq.first_dim + 16 * pair + n); }, "K as B");
        }
      }
    }
  }
}

// dQ = dS·K, A operand: dS (query rows, key columns) from the dSᵀ tile [key][query].
TEST(FlashBackwardGeometry, DsTransposedTileLoadsAsTheAFragmentOfTheWarpsDqRows) {
  for (int head_dim : kHeadDims) {
    const FlashBackwardShape shape = flash_backward_shape(head_dim);
    const int ds_row_bytes = shape.block_m * kElementBytes;
    const std::uint32_t tile = 128u * 11;
    SharedMemory memory;
    memory.fill_tile(tile, shape.block_n, shape.block_m);  // row = key, column = query
    for (int warp = 0; warp < shape.warps; ++warp) {
      const DqWarpTile dq = dq_warp_tile(warp, head_dim);
      for (int key_step = 0; key_step < shape.block_n / 16; ++key_step) {
        const auto addresses = lane_addresses([&](int lane) {
          return swizzled_step(tile + ds_a_lane_bytes(lane, warp, head_dim, ds_row_bytes), 0, 16 * key_step,
                               ds_row_bytes);
        });
        expect_a_fragment(
            memory, addresses, true,
            [&](int row, int column) { return tile_value(16 * key_step + column, dq.first_row + row); }, "dS as A");
      }
    }
  }
}

// The warps' dQ tiles cover the query tile's block_m x d exactly once.
TEST(FlashBackwardGeometry, DqWarpTilesPartitionTheQueryTile) {
  for (int head_dim : kHeadDims) {
    const FlashBackwardShape shape = flash_backward_shape(head_dim);
    std::set<std::pair<int, int>> covered;
    for (int warp = 0; warp < shape.warps; ++warp) {
      const DqWarpTile dq = dq_warp_tile(warp, head_dim);
      EXPECT_EQ(dq.dims % 16, 0);
      EXPECT_EQ(dq.first_row % 16, 0);
      for (int lane = 0; lane < 32; ++lane) {
        for (int n = 0; n < dq.dims / 8; ++n) {
          for (int e = 0; e < 4; ++e) {
            const FragmentPosition c = mma_c_position(lane, e);
            const int row = dq.first_row + c.row;
            const int dim = dq.first_dim + 8 * n + c.column;
            EXPECT_LT(row, shape.block_m);
            EXPECT_LT(dim, head_dim);
            EXPECT_TRUE(covered.insert({row, dim}).second) << "row " << row << " dim " << dim << " twice";
          }
        }
      }
    }
    EXPECT_EQ(static_cast<int>(covered.size()), shape.block_m * head_dim);
  }
}

// ---- C fragments into shared tiles ---------------------------------------------------

// The dSᵀ pairs (rows = keys of the warp, columns = the tile's queries) and the
// epilogue's dK, dV pairs (rows = keys, columns = dims) land where the swizzle
// puts them, cover their tiles once, and a warp's store hits 32 different banks.
TEST(FlashBackwardGeometry, CFragmentStoresFollowTheSwizzleWithoutBankConflicts) {
  for (int head_dim : kHeadDims) {
    const FlashBackwardShape shape = flash_backward_shape(head_dim);
    for (int row_elements : {shape.block_m, head_dim}) {
      const int row_bytes = row_elements * kElementBytes;
      std::set<int> covered;
      for (int warp = 0; warp < shape.warps; ++warp) {
        for (int n = 0; n < row_elements / 8; ++n) {
          for (int half = 0; half < 2; ++half) {
            std::set<int> banks;
            for (int lane = 0; lane < 32; ++lane) {
              const std::uint32_t address =
                  swizzled_step(c_fragment_store_lane_bytes(lane, 16 * warp, row_bytes), n, 8 * half, row_bytes);
              const FragmentPosition c = mma_c_position(lane, 2 * half);
              const int row = 16 * warp + c.row;
              const int column = 8 * n + c.column;
              ASSERT_EQ(address, 2u * static_cast<std::uint32_t>(swizzled_offset(row, column, row_elements)))
                  << "lane " << lane << " fragment " << n << " half " << half;
              EXPECT_EQ(address % 4, 0u);
              EXPECT_TRUE(covered.insert(static_cast<int>(address) / 2).second);
              EXPECT_TRUE(covered.insert(static_cast<int>(address) / 2 + 1).second);
              banks.insert(static_cast<int>(address / 4) % 32);
            }
            EXPECT_EQ(banks.size(), 32u) << "row elements " << row_elements;
          }
        }
      }
      EXPECT_EQ(static_cast<int>(covered.size()), shape.block_n * row_elements);
    }
  }
}

// The C fragments of Sᵀ (keys along rows, queries along columns): two adjacent
// 8-query fragments are the A fragment of 16 queries (P̃ᵀ and dSᵀ from registers),
// and the lane's keys and queries are the ones the kernel masks with.
TEST(FlashBackwardGeometry, KeyMajorAccumulatorsAreTheAFragmentOfSixteenQueries) {
  for (int lane = 0; lane < 32; ++lane) {
    for (int reg = 0; reg < 4; ++reg) {
      for (int half = 0; half < 2; ++half) {
        const FragmentPosition a = mma_a_position(lane, 2 * reg + half);
        FragmentPosition c = mma_c_position(lane, 2 * (reg % 2) + half);
        c.column += 8 * (reg / 2);
        EXPECT_EQ(a.row, c.row);
        EXPECT_EQ(a.column, c.column);
      }
    }
    for (int e = 0; e < 4; ++e) {
      const FragmentPosition c = mma_c_position(lane, e);
      EXPECT_EQ(c.row, lane / 4 + 8 * (e / 2)) << "key key0 + 8·(e / 2)";
      EXPECT_EQ(c.column, mma_c_position(lane, 0).column + e % 2) << "query lane_column + e % 2";
    }
  }
}

// ---- Masks: the query side -----------------------------------------------------------

// {seqlen_q, seqlen_k, len_q, len_k}
constexpr std::int64_t kShapes[][4] = {{200, 200, 200, 200}, {129, 257, 129, 257}, {257, 129, 257, 129},
                                       {300, 300, 170, 90},  {64, 640, 64, 640},   {640, 64, 600, 50},
                                       {1, 300, 1, 300},     {300, 1, 300, 1},     {77, 77, 0, 77},
                                       {77, 77, 77, 0},      {190, 130, 3, 128}};

TEST(FlashBackwardGeometry, VisibleQueriesAreThePredicatesRows) {
  for (const MaskSpec& mask : every_mask_kind()) {
    for (const auto& shape : kShapes) {
      const std::int64_t seqlen_q = shape[0], seqlen_k = shape[1], len_q = shape[2], len_k = shape[3];
      for (std::int64_t j = -2; j < seqlen_k + 2; ++j) {
        const KeyRange rows = visible_queries(mask, j, len_q, len_k);
        for (std::int64_t i = -2; i < seqlen_q + 2; ++i) {
          ASSERT_EQ(i >= rows.begin && i < rows.end, is_visible(mask, i, j, len_q, len_k))
              << "key " << j << " row " << i << " len " << len_q << "x" << len_k;
        }
      }
    }
  }
}

// For blocks of 16 keys (a warp) and 128 keys (a CTA) at every position: every
// query tile holding a visible pair is visited, no tile outside the range holds
// one, the range's first and last tiles hold one, and the fully visible rows are
// exactly those that see every key of the block.
TEST(FlashBackwardGeometry, QueryTilesHoldEveryVisiblePairAndFullRowsSeeEveryKey) {
  for (const MaskSpec& mask : every_mask_kind()) {
    for (const auto& shape : kShapes) {
      const std::int64_t seqlen_q = shape[0], seqlen_k = shape[1], len_q = shape[2], len_k = shape[3];
      const int block_m = flash_backward_shape(64).block_m;
      const auto query_tiles = static_cast<int>((seqlen_q + block_m - 1) / block_m);
      for (int keys : {16, 128}) {
        for (std::int64_t key_begin = 0; key_begin < seqlen_k; key_begin += keys) {
          const std::int64_t key_end = key_begin + keys;
          const auto sees_block = [&](std::int64_t i) {
            for (std::int64_t j = key_begin; j < key_end; ++j) {
              if (is_visible(mask, i, j, len_q, len_k)) return true;
            }
            return false;
          };
          const auto sees_all = [&](std::int64_t i) {
            for (std::int64_t j = key_begin; j < key_end; ++j) {
              if (!is_visible(mask, i, j, len_q, len_k)) return false;
            }
            return true;
          };
          const QueryTileRange range = flash_backward_query_tiles(mask, key_begin, key_end, len_q, len_k, block_m);
          EXPECT_GE(range.first, 0);
          EXPECT_LE(range.end, query_tiles);
          for (int tile = 0; tile < query_tiles; ++tile) {
            bool any_visible = false;
            for (std::int64_t i = tile * block_m; i < (tile + 1) * block_m; ++i)
              any_visible = any_visible || sees_block(i);
            if (any_visible) {
              EXPECT_TRUE(range.contains(tile)) << "tile " << tile << " keys from " << key_begin;
            }
            if (!range.contains(tile)) {
              EXPECT_FALSE(any_visible);
            }
          }
          if (!range.empty()) {
            for (int tile : {range.first, range.end - 1}) {
              bool any_visible = false;
              for (std::int64_t i = tile * block_m; i < (tile + 1) * block_m; ++i) {
                any_visible = any_visible || sees_block(i);
              }
              EXPECT_TRUE(any_visible) << "tile " << tile << " visited for nothing, keys from " << key_begin;
            }
          }
          const KeyRange full = fully_visible_queries(mask, key_begin, key_end, len_q, len_k);
          for (std::int64_t i = -2; i < seqlen_q + 2; ++i) {
            ASSERT_EQ(i >= full.begin && i < full.end, sees_all(i))
                << "row " << i << " keys from " << key_begin << " len " << len_q << "x" << len_k;
          }
        }
      }
    }
  }
}

// Every mask and length edge at every position of the backward's tiling (its
// traits), exhaustively: each CTA (kBlockN keys) and each warp (kWarpKeys keys)
// visits exactly the query tiles (kBlockM rows) from the first to the last that
// hold a row seeing one of its keys, by is_visible() over every element, and a
// warp takes a query tile without per-element predicates (its fully visible
// rows, as the kernel tests them) exactly when every element of the tile and its
// keys is visible. One key tile and one query tile past the valid lengths are
// checked as well (a padded grid).
template <typename Traits>
void expect_backward_tiles_at_every_edge_position() {
  const test::Tiling tiling = test::tiling_of<Traits>();
  test::FailureLog log;
  test::for_every_edge_position(tiling, [&](const test::MaskedLengths& c, const test::VisibilityGrid& grid,
                                            int query_tiles, int key_tiles) {
    const auto check = [&](std::int64_t key_begin, int keys, const char* who) {
      const QueryTileRange range =
          flash_backward_query_tiles(c.mask, key_begin, key_begin + keys, c.len_q, c.len_k, tiling.block_m);
      const test::TileHull expected = test::tiles_with_visible_elements(query_tiles, [&](int tile) {
        return grid.any(std::int64_t{tile} * tiling.block_m, std::int64_t{tile + 1} * tiling.block_m, key_begin,
                        key_begin + keys);
      });
      if (!expected.is(range.first, range.end) && log.add()) {
        ADD_FAILURE() << who << " keys [" << key_begin << ", " << key_begin + keys << ") of " << c.describe()
                      << ": visits query tiles [" << range.first << ", " << range.end
                      << "), the tiles with a row that sees one are [" << expected.first << ", " << expected.end << ")";
      }
    };
    for (int cta = 0; cta < key_tiles; ++cta) {
      const std::int64_t cta_key = std::int64_t{cta} * tiling.block_n;
      check(cta_key, tiling.block_n, "CTA");
      for (std::int64_t warp_key = cta_key; warp_key < cta_key + tiling.block_n; warp_key += tiling.warp_keys) {
        check(warp_key, tiling.warp_keys, "warp");
        const KeyRange full = fully_visible_queries(c.mask, warp_key, warp_key + tiling.warp_keys, c.len_q, c.len_k);
        for (int tile = 0; tile < query_tiles; ++tile) {
          const std::int64_t first_row = std::int64_t{tile} * tiling.block_m;
          const bool kernel_full = full.begin <= first_row && first_row + tiling.block_m <= full.end;
          if (kernel_full != grid.all(first_row, first_row + tiling.block_m, warp_key, warp_key + tiling.warp_keys) &&
              log.add()) {
            ADD_FAILURE() << "warp keys from " << warp_key << ", query tile " << tile << " of " << c.describe()
                          << ": taken as fully visible " << kernel_full;
          }
        }
      }
    }
  });
  EXPECT_EQ(log.failures(), 0);
}

TEST(FlashBackwardGeometry, EveryCtaAndWarpVisitsExactlyTheQueryTilesThatSeeItsKeysAtEveryEdgePosition) {
  expect_backward_tiles_at_every_edge_position<BackwardTraits<64>>();
  if (test::tiling_of<BackwardTraits<128>>() != test::tiling_of<BackwardTraits<64>>()) {
    expect_backward_tiles_at_every_edge_position<BackwardTraits<128>>();
  }
}

// ---- Dropout ---------------------------------------------------------------------------

// The kernel's exchange emulated for a whole warp: per 8-query fragment each lane
// draws one Philox call, then in rounds 1..3 sends a word to lane ^ 4r, and must
// end up with the contract's word for every element it holds.
TEST(FlashBackwardGeometry, DropoutWordsReachTheLanesThatHoldTheirElements) {
  const DropoutRng rng = make_dropout_rng(0.17, 0xfedcba9876543210ull, 11, 12);
  const std::uint32_t batch = 2, head = 9;
  for (int first_row : {0, 8, 64, 4032}) {
    for (int warp_key : {0, 16, 112, 4080}) {
      std::array<PhiloxBlock, 32> draws{};
      for (int lane = 0; lane < 32; ++lane) {
        const DropoutCall call = backward_dropout_call(lane);
        EXPECT_EQ(call.key % 4, 0);
        draws[static_cast<std::size_t>(lane)] =
            dropout_words(rng, batch, head, static_cast<std::uint32_t>(first_row + call.query),
                          static_cast<std::uint32_t>((warp_key + call.key) / 4));
      }
      for (int lane = 0; lane < 32; ++lane) {
        std::set<int> elements;
        for (int round = 0; round < 4; ++round) {
          const int partner = backward_dropout_partner(lane, round);
          ASSERT_EQ(backward_dropout_partner(partner, round), lane) << "an exchange is symmetric";
          ASSERT_EQ(partner % 4, lane % 4);
          ASSERT_EQ(partner / 16, lane / 16);
          // The partner sends word backward_dropout_sent_word(partner, round) of its own call.
          const std::uint32_t word =
              draws[static_cast<std::size_t>(partner)].word[backward_dropout_sent_word(partner, round)];
          const int element = backward_dropout_element(lane, round);
          elements.insert(element);
          const FragmentPosition c = mma_c_position(lane, element);  // row = key, column = query
          const auto key = static_cast<std::uint32_t>(warp_key + c.row);
          const auto row = static_cast<std::uint32_t>(first_row + c.column);
          EXPECT_EQ(word, dropout_words(rng, batch, head, row, key / 4).word[key % 4])
              << "lane " << lane << " round " << round << " key " << key << " row " << row;
        }
        EXPECT_EQ(elements.size(), 4u) << "each element gets one word";
      }
    }
  }
}

// The kernel's keep bits (bit 4n + e) against dropout_keeps for a slice.
TEST(FlashBackwardGeometry, DropoutKeepBitsMatchTheContract) {
  const DropoutRng rng = make_dropout_rng(0.5, 42, 3, 4);
  const std::uint32_t batch = 1, head = 3;
  const int slice_m = flash_backward_shape(128).slice_m;
  for (int first_row : {0, 32, 96}) {
    for (int warp_key : {0, 48}) {
      for (int lane = 0; lane < 32; ++lane) {
        std::uint32_t bits = 0;
        for (int n = 0; n < slice_m / 8; ++n) {
          for (int round = 0; round < 4; ++round) {
            const int partner = backward_dropout_partner(lane, round);
            const DropoutCall call = backward_dropout_call(partner);
            const PhiloxBlock draw =
                dropout_words(rng, batch, head, static_cast<std::uint32_t>(first_row + 8 * n + call.query),
                              static_cast<std::uint32_t>((warp_key + call.key) / 4));
            const std::uint32_t word = draw.word[backward_dropout_sent_word(partner, round)];
            bits |= static_cast<std::uint32_t>(dropout_word_keeps(rng, word))
                    << (4 * n + backward_dropout_element(lane, round));
          }
        }
        for (int n = 0; n < slice_m / 8; ++n) {
          for (int e = 0; e < 4; ++e) {
            const FragmentPosition c = mma_c_position(lane, e);
            const bool keeps = dropout_keeps(rng, batch, head, static_cast<std::uint32_t>(first_row + 8 * n + c.column),
                                             static_cast<std::uint32_t>(warp_key + c.row));
            EXPECT_EQ(((bits >> (4 * n + e)) & 1u) != 0, keeps) << "lane " << lane << " fragment " << n;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace attnbench
