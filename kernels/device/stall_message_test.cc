// The stall report's wording (kernels/device/stall.h), on the CPU: what a user pastes into a bug report.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>

#include "kernels/device/stall.h"

namespace h3::kernels {
namespace {

using ::testing::HasSubstr;

TEST(StallMessage, NamesTheWait) {
  StallReport r = {};
  r.state = 1;
  r.kind = static_cast<uint32_t>(WaitKind::kChunkReady);
  r.block = 7;
  r.thread = 0;
  r.a = 2;
  r.m_tile = 5;
  r.n_tile = 3;
  r.waited_ns = 200000001;
  r.limit_ns = 200000000;
  EXPECT_EQ(StallMessage(r),
            "the kernel gave up waiting: CTA 7, thread 0 (the load warp) waited 0.200 s (its "
            "limit 0.200 s) for the ready flag of k-chunk 2 of m-tile 5 (quantizer warps publish "
            "it), at tile (m-tile 5, n-tile 3)");
  r.kind = static_cast<uint32_t>(WaitKind::kFullB);
  r.thread = 300;
  EXPECT_THAT(StallMessage(r), HasSubstr("thread 300 (consumer warp 5 (group 1))"));
  EXPECT_THAT(StallMessage(r), HasSubstr("B ring slot 2"));
  r.kind = static_cast<uint32_t>(WaitKind::kBranchReady);
  r.thread = 0;
  r.a = 3;
  r.b = 16;
  EXPECT_THAT(StallMessage(r), HasSubstr("for the low-rank branch's l of m-tile 5 (3 of its 16 "
                                         "row groups written"));
  // A staged config's two waits: consumers for the drain of the previous tile, the draining
  // quantizer warps for the consumers' t.
  r.kind = static_cast<uint32_t>(WaitKind::kTEmpty);
  r.thread = 200;
  r.a = 0;
  r.b = 1;
  EXPECT_THAT(StallMessage(r), HasSubstr("thread 200 (consumer warp 2 (group 0)) waited"));
  EXPECT_THAT(StallMessage(r), HasSubstr("for the staged t tile, phase parity 0, to be drained of "
                                         "the CTA's tile 0 (quantizer warps drain it)"));
  r.kind = static_cast<uint32_t>(WaitKind::kTFull);
  r.thread = 40;
  r.a = 1;
  r.b = 3;
  EXPECT_THAT(StallMessage(r), HasSubstr("thread 40 (quantizer warp 1) waited"));
  EXPECT_THAT(StallMessage(r), HasSubstr("for the staged t tile of the CTA's tile 3, phase parity "
                                         "1, to be written (consumers write it)"));
}

}  // namespace
}  // namespace h3::kernels
