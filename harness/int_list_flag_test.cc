#include "harness/int_list_flag.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace h3 {
namespace {

struct Good {
  std::string flag;  // the command line's value, split at commas as absl does
  int64_t min_value;
  std::vector<int64_t> want;
};

TEST(IntListFlagTest, AcceptsIntegersAtLeastTheMinimum) {
  const Good cases[] = {
      {"4096,16384", 1, {4096, 16384}},
      {"128", 1, {128}},
      {"0,7", 0, {0, 7}},
      {"9223372036854775807", 0, {INT64_MAX}},
      {"-3,-2", -3, {-3, -2}},
      {"+5", 1, {5}},     // absl::SimpleAtoi takes a sign
      {" 12 ", 1, {12}},  // and surrounding spaces
      {"1,1,1", 1, {1, 1, 1}},
  };
  for (const Good& c : cases) {
    const std::vector<std::string> tokens = absl::StrSplit(c.flag, ',');
    const absl::StatusOr<std::vector<int64_t>> got = ParseIntListFlag("m", tokens, c.min_value);
    ASSERT_TRUE(got.ok()) << c.flag << ": " << got.status();
    EXPECT_EQ(*got, c.want) << c.flag;
  }
}

TEST(IntListFlagTest, NoTokensIsAnEmptyList) {
  // An absl list flag left at an empty default has no tokens at all.
  const absl::StatusOr<std::vector<int64_t>> got = ParseIntListFlag("extra_m", {}, 0);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->empty());
}

struct Bad {
  std::string flag_name;
  std::string flag;
  int64_t min_value;
  std::string error;  // the whole message: flag, what it expects, the first bad token
};

TEST(IntListFlagTest, RejectsTheFirstBadTokenNamingTheFlag) {
  const Bad cases[] = {
      {"bench_m", "abc", 1, "--bench_m must be comma-separated integers >= 1, got 'abc'"},
      {"bench_m", "4096,0", 1, "--bench_m must be comma-separated integers >= 1, got '0'"},
      {"bench_m", "4096,", 1, "--bench_m must be comma-separated integers >= 1, got ''"},
      {"bench_m", ",4096", 1, "--bench_m must be comma-separated integers >= 1, got ''"},
      {"bench_m", "1.5", 1, "--bench_m must be comma-separated integers >= 1, got '1.5'"},
      {"bench_m", "12abc", 1, "--bench_m must be comma-separated integers >= 1, got '12abc'"},
      {"bench_m", "4k", 1, "--bench_m must be comma-separated integers >= 1, got '4k'"},
      {"extra_m", "-1", 0, "--extra_m must be comma-separated integers >= 0, got '-1'"},
      {"extra_m", "5,x,y", 0, "--extra_m must be comma-separated integers >= 0, got 'x'"},
      {"extra_m", "9223372036854775808", 0,
       "--extra_m must be comma-separated integers >= 0, got '9223372036854775808'"},
      {"k", "8", 16, "--k must be comma-separated integers >= 16, got '8'"},
  };
  for (const Bad& c : cases) {
    const std::vector<std::string> tokens = absl::StrSplit(c.flag, ',');
    const absl::StatusOr<std::vector<int64_t>> got =
        ParseIntListFlag(c.flag_name, tokens, c.min_value);
    ASSERT_FALSE(got.ok()) << c.flag;
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << c.flag;
    EXPECT_EQ(got.status().message(), c.error) << c.flag;
  }
}

}  // namespace
}  // namespace h3
