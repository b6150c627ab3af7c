// The launch-time register check (register_split.h) as a table: the split the 128 x 256 configs
// use (128 x 56 + 256 x 224 = 64512 registers) against the register counts a toolchain might
// launch the kernel with.

#include "kernels/launch/register_split.h"

#include <gtest/gtest.h>

#include <string>

namespace h3::kernels {
namespace {

TEST(RegisterSplit, RefusesWhatWouldHang) {
  const RegisterSplit split{384, 128, 56, 256, 224};
  ASSERT_EQ(split.Needs(), 64512);
  struct Row {
    int launch_regs;
    bool refused;
  };
  // 166 is allocated as 168 (units of 8 registers per thread): the split fits.
  const Row rows[] = {{168, false}, {166, false}, {161, false}, {160, true}, {128, true},
                      {24, true}};
  for (const Row& r : rows) {
    const std::string why = RegisterSplitRefusal(split, r.launch_regs);
    EXPECT_EQ(!why.empty(), r.refused) << r.launch_regs << ": " << why;
    if (r.refused) {
      EXPECT_NE(why.find(std::to_string(r.launch_regs) + " registers per thread"),
                std::string::npos)
          << why;
      EXPECT_NE(why.find("= 64512"), std::string::npos) << why;
      EXPECT_NE(why.find("refusing to launch"), std::string::npos) << why;
    }
  }
}

}  // namespace
}  // namespace h3::kernels
