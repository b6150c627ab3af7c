#ifndef H3_KERNELS_UNIT_KERNELS_H_
#define H3_KERNELS_UNIT_KERNELS_H_

// One-warp / one-block launchers exercising the device building blocks directly.

#include <cuda_runtime.h>

#include <cstdint>

namespace h3::kernels {

// All pointers device. a: [32][4], b: [32][2], c/d: [32][4] f32, sfa/sfb: [32].
// d_inst: TargetArch::Mma (native on sm_120f, instruction-level emulation on sm_90a).
// d_emu: the instruction-level emulation (any arch).
// d_frag: the fragment-level emulation (Dequant{A,B}Fragment + bf16 MMAs, scaled back by 2^16).
cudaError_t RunOneMma(const uint32_t* a, const uint32_t* b, const float* c, const uint32_t* sfa,
                      const uint32_t* sfb, float* d_inst, float* d_emu, float* d_frag);

// x: [blocks][16] bf16; codes: [blocks][8]; sf: [blocks]. One thread per block.
cudaError_t RunQuantizeBlocks(const uint16_t* x, int64_t blocks, float gs, uint8_t* codes,
                              uint8_t* sf);

// v: [count] f32 -> [count] e2m1 codes through the arch's conversion (cvt on sm_120f,
// software on sm_90a), one code per byte (converted as the even element of a pair).
cudaError_t RunE2m1(const float* v, int64_t count, uint8_t* codes);

// The epilogue's cvt.rn.bf16x2.f32 against the contract's bf16() written with integers
// (epilogue.cuh), for every f32 pattern u as the low half and u * 2654435761 (mod 2^32, a
// bijection) as the high half. *mismatches: the count; *first: the smallest u that differs.
cudaError_t RunBf16x2CvtCheck(unsigned long long* mismatches, uint32_t* first);

}  // namespace h3::kernels

#endif  // H3_KERNELS_UNIT_KERNELS_H_
