#ifndef H3_HARNESS_PROBE_PROBE_KERNELS_CUH_
#define H3_HARNESS_PROBE_PROBE_KERNELS_CUH_

// Launchers of the probe's device half (host-callable; the kernels are in probe_kernels.cu).
// Each runs exactly the kernels' own device functions: h3::kernels::TargetArch::Mma (the native
// block-scaled mma.sync in the SM12x family build sm_120f, the exact emulation
// kernels/sm90/mma_emulated.cuh on sm_90a) and h3::kernels::TargetArch::E2m1Byte
// (cvt.rn.satfinite.e2m1x2.f32 plus the contract's fix-ups on sm_120f, the software twin on
// sm_90a).

#include <cuda_runtime.h>

#include <cstdint>

#include "harness/probe/litmus.h"

namespace h3::probe {

// All pointers device. One warp per case: a [cases][32][4], b [cases][32][2], c and d
// [cases][32][4] f32, sfa and sfb [cases][32]; lane l of case i uses a[i][l][0..3] etc.
cudaError_t LaunchMmaBatch(const uint32_t* a, const uint32_t* b, const float* c,
                           const uint32_t* sfa, const uint32_t* sfb, int64_t cases, float* d);

// bytes[i] = TargetArch::E2m1Byte(even[i], odd[i]) (even -> low nibble). raw[i] = the bare
// cvt.rn.satfinite.e2m1x2.f32 of the same pair where the sm_120f build runs, else 0xFF.
cudaError_t LaunchE2m1Batch(const float* even, const float* odd, int64_t count, uint8_t* bytes,
                            uint8_t* raw);

// What device code ran: info[0] = __CUDA_ARCH__ of the kernel image the runtime picked,
// info[1] = 1 when TargetArch::Mma is the native instruction, info[2] = 1 when the raw cvt ran.
cudaError_t LaunchBuildInfo(int* info);

// The proxy-fence litmus (litmus.h): 2 x pairs CTAs (pairs <= the SM count / 2, so all are
// resident), `rounds` round trips per pair, each of the four fence variants; synchronous.
cudaError_t RunProxyLitmus(int pairs, int rounds, LitmusCounts* out);

}  // namespace h3::probe

#endif  // H3_HARNESS_PROBE_PROBE_KERNELS_CUH_
