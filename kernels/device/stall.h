#ifndef H3_KERNELS_STALL_H_
#define H3_KERNELS_STALL_H_

// Bounded waits that report (issue: no silent hang on a part nobody has run). Every wait of the
// fused kernel gives up after OutProjParams::wait_limit_ns: the first thread to give up claims
// the call's stall word (ready_flags.h kStallClaim), writes a StallReport where the host can read
// it after the fault (host-mapped pinned memory: the context is lost once the kernel traps), and
// traps. The host API turns the report into an error message (StallMessage). Plain C++: the
// device code (bounded_wait.cuh) and the host read the same layout.

#include <cstdint>
#include <string>

namespace h3::kernels {

// What a thread waited for, for the tile (m-tile, n-tile) it was on; a and b per kind.
enum class WaitKind : uint32_t {
  kNone = 0,
  kChunkReady = 1,  // load warp: the ready flag of k-chunk a of the tile's m-tile
  kSlotA = 2,       // load warp: A ring stage a free (phase b)
  kSlotB = 3,       // load warp: B ring a's stage b free
  kFullA = 4,       // consumer: A ring stage a filled (phase b)
  kFullB = 5,       // consumer: B ring slot a filled (phase b)
  kSkewGate = 6,    // trailing consumer group: skew gate a (phase b)
  kFullStaged = 7,  // fast sm_90 consumer: ring stage a filled (phase b)
  kBranchReady = 8,  // load warp: the l-ready count of the tile's m-tile (a groups of b written)
  kTEmpty = 9,  // staged consumer: the t tile drained of the CTA's tile b - 1 (a: phase parity)
  kTFull = 10,  // quantizer warp (draining): the t tile of the CTA's tile b written (a: parity)
};

// The hand-offs those waits wait for, as the stall test withholds them (variant.cuh
// Variant::Withholds) to make one kind of wait give up: the load warp filling a ring stage
// (kFullA / kFullB), every consumer thread releasing one (kSlotA / kSlotB), the leading group
// arriving on the trailing group's skew gate (kSkewGate), a low-rank branch group's last unit
// publishing its l on the m-tile's l-ready word (the load warp's kBranchReady; Withholds(.., mt,
// 0, 0): every group of m-tile mt), a staged config's consumer thread arriving on t_full after
// writing its t words (kTFill, the drain's kTFull) and a draining quantizer thread arriving on
// t_empty (kTDrain, the consumers' kTEmpty); Withholds(.., mt, nt, 0) for both.
enum class Handoff : uint32_t { kFill, kRelease, kGateArrive, kBranchPublish, kTFill, kTDrain };
// Rings as Withholds names them: the A ring (lockstep: the ring); consumer group g's B ring is
// kRingB0 + g.
inline constexpr int kRingA = 0, kRingB0 = 1;

// Written once per call at most (the stall word decides who), `state` last.
struct StallReport {
  uint32_t state;  // 0: nothing to report; 1: the fields below are written
  uint32_t kind;   // WaitKind
  uint32_t block, thread;
  int32_t a, b, m_tile, n_tile;
  uint64_t waited_ns;
  uint64_t limit_ns;
};

// Waits that depend on another role's waiting get a longer bound, so that the first to give up
// is the one nearest the cause: the load warp waits on the quantizers (x1), the consumers on the
// load warp (x2), the trailing group's skew gate on the leading group (x3); a staged config's
// consumers wait for the drain (x2: the draining warps wait on nothing while units remain), the
// draining quantizer warps for the consumers' t (x3). The drain's wait after the last unit spans a
// whole main loop of its tile (a CTA that claims no unit: from the kernel's start), so with a
// wait limit near one main loop it can give up first; the defaults are far above one.
inline constexpr uint64_t kLoaderBound = 1, kConsumerBound = 2, kGateBound = 3, kDrainBound = 3;

// One sentence for an error message ("CTA 12 thread 300 (consumer warp 4) gave up after ...").
std::string StallMessage(const StallReport& r);

}  // namespace h3::kernels

#endif  // H3_KERNELS_STALL_H_
