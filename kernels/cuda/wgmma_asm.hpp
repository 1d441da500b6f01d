// The GPU form of wgmma.mma_async.m64nNk16.f32.{f16,bf16} for every N the PTX
// ISA allows (9.7.15.5.2: N = 8, 16, ..., 256), used by
// kernels/cuda/hopper_primitives.hpp: one inline asm statement per N, type and
// operand form. Inline asm names its operands by number, and the N/2 fp32
// accumulators come first, so the numbers of the operands after them depend on
// N: the tables below spell them out (ATTNBENCH_WGMMA_Dn: the accumulator
// operands d[0 .. n/2 - 1]; ATTNBENCH_WGMMA_Rn: "%0, ..., %(n/2 - 1)";
// ATTNBENCH_WGMMA_SHAPE(n, h, h + 1, ..., h + 8) with h = n/2). The immediates
// (imm-scale-a/b, imm-trans-a/b) are "n" operands; scale-d is a predicate set
// from a register. Only compiled by nvcc for sm_90a.
#pragma once

#include <cstdint>

namespace attnbench {

template <int N>
struct WgmmaAsm;

#define ATTNBENCH_WGMMA_D8(d) "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
#define ATTNBENCH_WGMMA_D16(d) ATTNBENCH_WGMMA_D8(d), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
#define ATTNBENCH_WGMMA_D24(d) ATTNBENCH_WGMMA_D16(d), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11])
#define ATTNBENCH_WGMMA_D32(d) ATTNBENCH_WGMMA_D24(d), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define ATTNBENCH_WGMMA_D40(d) ATTNBENCH_WGMMA_D32(d), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19])
#define ATTNBENCH_WGMMA_D48(d) ATTNBENCH_WGMMA_D40(d), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23])
#define ATTNBENCH_WGMMA_D56(d) ATTNBENCH_WGMMA_D48(d), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27])
#define ATTNBENCH_WGMMA_D64(d) ATTNBENCH_WGMMA_D56(d), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define ATTNBENCH_WGMMA_D72(d) ATTNBENCH_WGMMA_D64(d), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35])
#define ATTNBENCH_WGMMA_D80(d) ATTNBENCH_WGMMA_D72(d), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39])
#define ATTNBENCH_WGMMA_D88(d) ATTNBENCH_WGMMA_D80(d), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43])
#define ATTNBENCH_WGMMA_D96(d) ATTNBENCH_WGMMA_D88(d), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
#define ATTNBENCH_WGMMA_D104(d) ATTNBENCH_WGMMA_D96(d), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51])
#define ATTNBENCH_WGMMA_D112(d) ATTNBENCH_WGMMA_D104(d), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55])
#define ATTNBENCH_WGMMA_D120(d) ATTNBENCH_WGMMA_D112(d), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59])
#define ATTNBENCH_WGMMA_D128(d) ATTNBENCH_WGMMA_D120(d), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define ATTNBENCH_WGMMA_D136(d) ATTNBENCH_WGMMA_D128(d), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67])
#define ATTNBENCH_WGMMA_D144(d) ATTNBENCH_WGMMA_D136(d), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71])
#define ATTNBENCH_WGMMA_D152(d) ATTNBENCH_WGMMA_D144(d), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75])
#define ATTNBENCH_WGMMA_D160(d) ATTNBENCH_WGMMA_D152(d), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79])
#define ATTNBENCH_WGMMA_D168(d) ATTNBENCH_WGMMA_D160(d), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83])
#define ATTNBENCH_WGMMA_D176(d) ATTNBENCH_WGMMA_D168(d), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
#define ATTNBENCH_WGMMA_D184(d) ATTNBENCH_WGMMA_D176(d), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91])
#define ATTNBENCH_WGMMA_D192(d) ATTNBENCH_WGMMA_D184(d), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
#define ATTNBENCH_WGMMA_D200(d) ATTNBENCH_WGMMA_D192(d), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99])
#define ATTNBENCH_WGMMA_D208(d) ATTNBENCH_WGMMA_D200(d), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103])
#define ATTNBENCH_WGMMA_D216(d) ATTNBENCH_WGMMA_D208(d), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107])
#define ATTNBENCH_WGMMA_D224(d) ATTNBENCH_WGMMA_D216(d), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111])
#define ATTNBENCH_WGMMA_D232(d) ATTNBENCH_WGMMA_D224(d), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115])
#define ATTNBENCH_WGMMA_D240(d) ATTNBENCH_WGMMA_D232(d), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119])
#define ATTNBENCH_WGMMA_D248(d) ATTNBENCH_WGMMA_D240(d), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123])
#define ATTNBENCH_WGMMA_D256(d) ATTNBENCH_WGMMA_D248(d), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
#define ATTNBENCH_WGMMA_R8 "%0, %1, %2, %3"
#define ATTNBENCH_WGMMA_R16 ATTNBENCH_WGMMA_R8 ", %4, %5, %6, %7"
#define ATTNBENCH_WGMMA_R24 ATTNBENCH_WGMMA_R16 ", %8, %9, %10, %11"
#define ATTNBENCH_WGMMA_R32 ATTNBENCH_WGMMA_R24 ", %12, %13, %14, %15"
#define ATTNBENCH_WGMMA_R40 ATTNBENCH_WGMMA_R32 ", %16, %17, %18, %19"
#define ATTNBENCH_WGMMA_R48 ATTNBENCH_WGMMA_R40 ", %20, %21, %22, %23"
#define ATTNBENCH_WGMMA_R56 ATTNBENCH_WGMMA_R48 ", %24, %25, %26, %27"
#define ATTNBENCH_WGMMA_R64 ATTNBENCH_WGMMA_R56 ", %28, %29, %30, %31"
#define ATTNBENCH_WGMMA_R72 ATTNBENCH_WGMMA_R64 ", %32, %33, %34, %35"
#define ATTNBENCH_WGMMA_R80 ATTNBENCH_WGMMA_R72 ", %36, %37, %38, %39"
#define ATTNBENCH_WGMMA_R88 ATTNBENCH_WGMMA_R80 ", %40, %41, %42, %43"
#define ATTNBENCH_WGMMA_R96 ATTNBENCH_WGMMA_R88 ", %44, %45, %46, %47"
#define ATTNBENCH_WGMMA_R104 ATTNBENCH_WGMMA_R96 ", %48, %49, %50, %51"
#define ATTNBENCH_WGMMA_R112 ATTNBENCH_WGMMA_R104 ", %52, %53, %54, %55"
#define ATTNBENCH_WGMMA_R120 ATTNBENCH_WGMMA_R112 ", %56, %57, %58, %59"
#define ATTNBENCH_WGMMA_R128 ATTNBENCH_WGMMA_R120 ", %60, %61, %62, %63"
#define ATTNBENCH_WGMMA_R136 ATTNBENCH_WGMMA_R128 ", %64, %65, %66, %67"
#define ATTNBENCH_WGMMA_R144 ATTNBENCH_WGMMA_R136 ", %68, %69, %70, %71"
#define ATTNBENCH_WGMMA_R152 ATTNBENCH_WGMMA_R144 ", %72, %73, %74, %75"
#define ATTNBENCH_WGMMA_R160 ATTNBENCH_WGMMA_R152 ", %76, %77, %78, %79"
#define ATTNBENCH_WGMMA_R168 ATTNBENCH_WGMMA_R160 ", %80, %81, %82, %83"
#define ATTNBENCH_WGMMA_R176 ATTNBENCH_WGMMA_R168 ", %84, %85, %86, %87"
#define ATTNBENCH_WGMMA_R184 ATTNBENCH_WGMMA_R176 ", %88, %89, %90, %91"
#define ATTNBENCH_WGMMA_R192 ATTNBENCH_WGMMA_R184 ", %92, %93, %94, %95"
#define ATTNBENCH_WGMMA_R200 ATTNBENCH_WGMMA_R192 ", %96, %97, %98, %99"
#define ATTNBENCH_WGMMA_R208 ATTNBENCH_WGMMA_R200 ", %100, %101, %102, %103"
#define ATTNBENCH_WGMMA_R216 ATTNBENCH_WGMMA_R208 ", %104, %105, %106, %107"
#define ATTNBENCH_WGMMA_R224 ATTNBENCH_WGMMA_R216 ", %108, %109, %110, %111"
#define ATTNBENCH_WGMMA_R232 ATTNBENCH_WGMMA_R224 ", %112, %113, %114, %115"
#define ATTNBENCH_WGMMA_R240 ATTNBENCH_WGMMA_R232 ", %116, %117, %118, %119"
#define ATTNBENCH_WGMMA_R248 ATTNBENCH_WGMMA_R240 ", %120, %121, %122, %123"
#define ATTNBENCH_WGMMA_R256 ATTNBENCH_WGMMA_R248 ", %124, %125, %126, %127"

// SS: A and B from matrix descriptors. RS: A from four registers, B from a descriptor.
#define ATTNBENCH_WGMMA_SS(N, TYPE, H0, H1, H2, H3, H4, H5, H6)                                                   \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #H2 ", 0;\n"                                                \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {" ATTNBENCH_WGMMA_R##N "}, %" #H0 \
               ", %" #H1 ", p, %" #H3 ", %" #H4 ", %" #H5 ", %" #H6 ";\n}\n"                                      \
               : ATTNBENCH_WGMMA_D##N(d)                                                                         \
               : "l"(descriptor_a), "l"(descriptor_b), "r"(scale_d), "n"(kScaleA), "n"(kScaleB), "n"(kTransA),    \
                 "n"(kTransB)                                                                                    \
               : "memory")
#define ATTNBENCH_WGMMA_RS(N, TYPE, H0, H1, H2, H3, H4, H5, H6, H7, H8)                                           \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #H5 ", 0;\n"                                                \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {" ATTNBENCH_WGMMA_R##N "}, {%" #H0 \
               ", %" #H1 ", %" #H2 ", %" #H3 "}, %" #H4 ", p, %" #H6 ", %" #H7 ", %" #H8 ";\n}\n"                   \
               : ATTNBENCH_WGMMA_D##N(d)                                                                         \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(descriptor_b), "r"(scale_d), "n"(kScaleA),      \
                 "n"(kScaleB), "n"(kTransB)                                                                      \
               : "memory")

#define ATTNBENCH_WGMMA_SHAPE(N, H0, H1, H2, H3, H4, H5, H6, H7, H8)                                              \
  template <>                                                                                                    \
  struct WgmmaAsm<N> {                                                                                           \
    template <bool kBf16, int kTransA, int kTransB, int kScaleA, int kScaleB>                                    \
    __device__ __forceinline__ static void ss(float* d, std::uint64_t descriptor_a, std::uint64_t descriptor_b,   \
                                              int scale_d) {                                                     \
      if constexpr (kBf16) {                                                                                     \
        ATTNBENCH_WGMMA_SS(N, "bf16", H0, H1, H2, H3, H4, H5, H6);                                               \
      } else {                                                                                                   \
        ATTNBENCH_WGMMA_SS(N, "f16", H0, H1, H2, H3, H4, H5, H6);                                                \
      }                                                                                                          \
    }                                                                                                            \
    template <bool kBf16, int kTransB, int kScaleA, int kScaleB>                                                 \
    __device__ __forceinline__ static void rs(float* d, const std::uint32_t* a, std::uint64_t descriptor_b,      \
                                              int scale_d) {                                                     \
      if constexpr (kBf16) {                                                                                     \
        ATTNBENCH_WGMMA_RS(N, "bf16", H0, H1, H2, H3, H4, H5, H6, H7, H8);                                       \
      } else {                                                                                                   \
        ATTNBENCH_WGMMA_RS(N, "f16", H0, H1, H2, H3, H4, H5, H6, H7, H8);                                        \
      }                                                                                                          \
    }                                                                                                            \
  };

ATTNBENCH_WGMMA_SHAPE(8, 4, 5, 6, 7, 8, 9, 10, 11, 12)
ATTNBENCH_WGMMA_SHAPE(16, 8, 9, 10, 11, 12, 13, 14, 15, 16)
ATTNBENCH_WGMMA_SHAPE(24, 12, 13, 14, 15, 16, 17, 18, 19, 20)
ATTNBENCH_WGMMA_SHAPE(32, 16, 17, 18, 19, 20, 21, 22, 23, 24)
ATTNBENCH_WGMMA_SHAPE(40, 20, 21, 22, 23, 24, 25, 26, 27, 28)
ATTNBENCH_WGMMA_SHAPE(48, 24, 25, 26, 27, 28, 29, 30, 31, 32)
ATTNBENCH_WGMMA_SHAPE(56, 28, 29, 30, 31, 32, 33, 34, 35, 36)
ATTNBENCH_WGMMA_SHAPE(64, 32, 33, 34, 35, 36, 37, 38, 39, 40)
ATTNBENCH_WGMMA_SHAPE(72, 36, 37, 38, 39, 40, 41, 42, 43, 44)
ATTNBENCH_WGMMA_SHAPE(80, 40, 41, 42, 43, 44, 45, 46, 47, 48)
ATTNBENCH_WGMMA_SHAPE(88, 44, 45, 46, 47, 48, 49, 50, 51, 52)
ATTNBENCH_WGMMA_SHAPE(96, 48, 49, 50, 51, 52, 53, 54, 55, 56)
ATTNBENCH_WGMMA_SHAPE(104, 52, 53, 54, 55, 56, 57, 58, 59, 60)
ATTNBENCH_WGMMA_SHAPE(112, 56, 57, 58, 59, 60, 61, 62, 63, 64)
ATTNBENCH_WGMMA_SHAPE(120, 60, 61, 62, 63, 64, 65, 66, 67, 68)
ATTNBENCH_WGMMA_SHAPE(128, 64, 65, 66, 67, 68, 69, 70, 71, 72)
ATTNBENCH_WGMMA_SHAPE(136, 68, 69, 70, 71, 72, 73, 74, 75, 76)
ATTNBENCH_WGMMA_SHAPE(144, 72, 73, 74, 75, 76, 77, 78, 79, 80)
ATTNBENCH_WGMMA_SHAPE(152, 76, 77, 78, 79, 80, 81, 82, 83, 84)
ATTNBENCH_WGMMA_SHAPE(160, 80, 81, 82, 83, 84, 85, 86, 87, 88)
ATTNBENCH_WGMMA_SHAPE(168, 84, 85, 86, 87, 88, 89, 90, 91, 92)
ATTNBENCH_WGMMA_SHAPE(176, 88, 89, 90, 91, 92, 93, 94, 95, 96)
ATTNBENCH_WGMMA_SHAPE(184, 92, 93, 94, 95, 96, 97, 98, 99, 100)
ATTNBENCH_WGMMA_SHAPE(192, 96, 97, 98, 99, 100, 101, 102, 103, 104)
ATTNBENCH_WGMMA_SHAPE(200, 100, 101, 102, 103, 104, 105, 106, 107, 108)
ATTNBENCH_WGMMA_SHAPE(208, 104, 105, 106, 107, 108, 109, 110, 111, 112)
ATTNBENCH_WGMMA_SHAPE(216, 108, 109, 110, 111, 112, 113, 114, 115, 116)
ATTNBENCH_WGMMA_SHAPE(224, 112, 113, 114, 115, 116, 117, 118, 119, 120)
ATTNBENCH_WGMMA_SHAPE(232, 116, 117, 118, 119, 120, 121, 122, 123, 124)
ATTNBENCH_WGMMA_SHAPE(240, 120, 121, 122, 123, 124, 125, 126, 127, 128)
ATTNBENCH_WGMMA_SHAPE(248, 124, 125, 126, 127, 128, 129, 130, 131, 132)
ATTNBENCH_WGMMA_SHAPE(256, 128, 129, 130, 131, 132, 133, 134, 135, 136)

}  // namespace attnbench
