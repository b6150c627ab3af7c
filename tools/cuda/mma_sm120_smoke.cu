// Compile-only proof that the toolchain accepts SM120's block-scaled MMA (no SM120 device
// exists here). One warp multiplies one 16x64 E2M1 tile by one 64x8 E2M1 tile with UE4M3
// block-16 scales; fragment layouts are in docs/contract.md section 7.
#include <cstdint>

namespace h3::smoke {

// a: [32 lanes][4] u32, b: [32][2], sfa/sfb: [32] u32, d: [32][4] f32.
__global__ void MmaSm120Smoke(const uint32_t* a, const uint32_t* b, const uint32_t* sfa,
                              const uint32_t* sfb, float* d) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1200
  const int lane = threadIdx.x % 32;
  float acc[4] = {0.f, 0.f, 0.f, 0.f};
  const uint16_t selector = 0;  // byte-id 0, thread-id 0 for both scale operands
  asm volatile(
      "mma.sync.aligned.m16n8k64.row.col.kind::mxf4nvf4.block_scale.scale_vec::4X"
      ".f32.e2m1.e2m1.f32.ue4m3 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3}, "
      "%10, {%12, %12}, %11, {%12, %12};\n"
      : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
      : "r"(a[lane * 4 + 0]), "r"(a[lane * 4 + 1]), "r"(a[lane * 4 + 2]), "r"(a[lane * 4 + 3]),
        "r"(b[lane * 2 + 0]), "r"(b[lane * 2 + 1]), "r"(sfa[lane]), "r"(sfb[lane]), "h"(selector));
  for (int i = 0; i < 4; ++i) d[lane * 4 + i] = acc[i];
#endif
}

}  // namespace h3::smoke
