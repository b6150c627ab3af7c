// The tuning cache (kernels/tune_cache.h) on the CPU: Python's file read and rewritten byte for
// byte, resolution per M bucket, the heuristic, and corrupt / foreign / truncated caches ignored
// with one warning each. Python's side of the same checks: python/tests/tune_cache_cross_test.py.

#include "kernels/tune_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/json.h"
#include "kernels/tiles.h"

namespace h3 {
namespace {

namespace fs = std::filesystem;

const TuneDevice kH200{"NVIDIA H200", 9, 0, 132, 13000};
const TuneDevice kRtx5090{"NVIDIA GeForce RTX 5090", 12, 0, 170, 13000};
constexpr char kVer[] = "0.1.0";  // the golden file's library version

std::string Runfile(const std::string& rel) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && ws != nullptr) return absl::StrCat(srcdir, "/", ws, "/", rel);
  return rel;
}

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string TmpPath(const std::string& name) {
  const char* t = std::getenv("TEST_TMPDIR");
  const std::string dir = t != nullptr ? t : ::testing::TempDir();
  const std::string path = absl::StrCat(dir, "/", name);
  fs::remove(path);
  return path;
}

const char* Name(OutProjTile t) { return FindOutProjTile(t)->name; }

// The same records, in the same order, as the script that wrote the golden file with Python's
// tuning.Cache.record (python/tests/tune_cache_cross_test.py, GOLDEN_RECORDS).
void WriteGoldenRecords(const std::string& path) {
  ASSERT_TRUE(RecordTuneWinners(path, kH200, 5376, 7168, "faithful",
                                {{1, "128x128", 0.258},
                                 {128, "128x128", 0.243},
                                 {1024, "128x128", 0.564},
                                 {4096, "128x256_lockstep", 1.81}},
                                kVer)
                  .ok());
  ASSERT_TRUE(
      RecordTuneWinners(path, kH200, 5376, 7168, "fast", {{128, "128x256", 0.2}}, kVer).ok());
  ASSERT_TRUE(RecordTuneWinners(path, kRtx5090, 256, 512, "native",
                                {{16384, "128x256_lockstep"}, {1, "128x256"}}, kVer)
                  .ok());
}

TEST(TuneCache, WritesWhatPythonWrites) {
  const std::string path = TmpPath("golden.json");
  WriteGoldenRecords(path);
  EXPECT_EQ(Slurp(path), Slurp(Runfile("testdata/tune_cache/python_written.json")));
}

TEST(TuneCache, ReadsWhatPythonWrites) {
  std::vector<std::string> warnings;
  const TuneCache c =
      TuneCache::FromFile(Runfile("testdata/tune_cache/python_written.json"), &warnings, kVer);
  EXPECT_TRUE(warnings.empty());
  struct Row {
    const TuneDevice* device;
    int64_t m, n, k;
    const char* variant;
    OutProjTile want;
    bool tuned;
  };
  const Row rows[] = {
      {&kH200, 1, 5376, 7168, "faithful", OutProjTile::k128x128, true},
      {&kH200, 11, 5376, 7168, "faithful", OutProjTile::k128x128, true},
      {&kH200, 2048, 5376, 7168, "faithful", OutProjTile::k128x128, true},  // tie 1024/4096
      {&kH200, 2049, 5376, 7168, "faithful", OutProjTile::k128x256Lockstep, true},
      {&kH200, 75856, 5376, 7168, "faithful", OutProjTile::k128x256Lockstep, true},
      {&kH200, 4096, 5376, 7168, "fast", OutProjTile::k128x256, true},
      {&kH200, 4096, 5376, 4096, "faithful", kOutProjTileDefault, false},  // shape not tuned
      {&kRtx5090, 127, 256, 512, "native", OutProjTile::k128x256, true},
      {&kRtx5090, 128, 256, 512, "native", OutProjTile::k128x256, true},  // 2^7: tie -> 1
      {&kRtx5090, 129, 256, 512, "native", OutProjTile::k128x256Lockstep, true},
      {&kRtx5090, 128, 5376, 7168, "native", OutProjTile::k128x128, false},  // heuristic
      {&kRtx5090, 4096, 5376, 7168, "native", kOutProjTileDefault, false},
  };
  for (const Row& r : rows) {
    const TuneCache::Choice got = c.Choose(*r.device, r.m, r.n, r.k, r.variant, &warnings);
    EXPECT_EQ(Name(got.tile), std::string(Name(r.want)))
        << r.device->name << " m=" << r.m << " n=" << r.n << " k=" << r.k << " " << r.variant;
    EXPECT_EQ(got.tuned, r.tuned) << r.device->name << " m=" << r.m;
  }
  EXPECT_TRUE(warnings.empty());
}

TEST(TuneCache, RecordKeepsOthersAndReplacesItsShape) {
  const std::string path = TmpPath("keep.json");
  ASSERT_TRUE(RecordTuneWinners(path, kH200, 256, 512, "faithful", {{1, "128x128"}}, kVer).ok());
  ASSERT_TRUE(RecordTuneWinners(path, kH200, 256, 512, "faithful", {{1, "128x256"}}, kVer).ok());
  ASSERT_TRUE(RecordTuneWinners(path, kH200, 512, 512, "faithful", {{1, "128x128"}}, kVer).ok());
  // Another library version's writer drops this version's entries (as Python's does).
  std::vector<std::string> warnings;
  TuneCache c = TuneCache::FromFile(path, &warnings, kVer);
  EXPECT_EQ(c.Choose(kH200, 1, 256, 512, "faithful", &warnings).tile, OutProjTile::k128x256);
  EXPECT_EQ(c.Choose(kH200, 1, 512, 512, "faithful", &warnings).tile, OutProjTile::k128x128);
  EXPECT_TRUE(warnings.empty());
  ASSERT_TRUE(RecordTuneWinners(path, kH200, 256, 512, "faithful", {{1, "128x128"}}, "9.9").ok());
  c = TuneCache::FromFile(path, &warnings, kVer);
  ASSERT_EQ(warnings.size(), 1u);  // only 9.9's entry is left: foreign
  EXPECT_NE(warnings[0].find("minimax_h3_nvfp4 9.9, not this version (0.1.0)"), std::string::npos)
      << warnings[0];
  EXPECT_TRUE(c.empty());
  // A corrupt file is replaced.
  { std::ofstream(path) << "{\"format\": "; }
  ASSERT_TRUE(RecordTuneWinners(path, kH200, 256, 512, "faithful", {{1, "128x128"}}, kVer).ok());
  warnings.clear();
  c = TuneCache::FromFile(path, &warnings, kVer);
  EXPECT_TRUE(warnings.empty());
  EXPECT_TRUE(c.Choose(kH200, 1, 256, 512, "faithful", &warnings).tuned);
  // Refused, nothing written: unknown tile, m out of range, no path.
  const std::string before = Slurp(path);
  EXPECT_FALSE(RecordTuneWinners(path, kH200, 256, 512, "faithful", {{1, "64x64"}}, kVer).ok());
  EXPECT_FALSE(RecordTuneWinners(path, kH200, 256, 512, "faithful", {{0, "128x128"}}, kVer).ok());
  EXPECT_FALSE(RecordTuneWinners("", kH200, 256, 512, "faithful", {{1, "128x128"}}, kVer).ok());
  EXPECT_EQ(Slurp(path), before);
  // The folder is made.
  const std::string nested = TmpPath("a/b/tune.json");
  EXPECT_TRUE(RecordTuneWinners(nested, kH200, 256, 512, "fast", {{1, "128x256"}}, kVer).ok());
  EXPECT_TRUE(fs::exists(nested));
}

// Every file here is ignored whole with exactly one warning, and kAuto then runs the heuristic.
TEST(TuneCache, CorruptOrForeignIgnoredWithOneWarning) {
  const std::string good = Slurp(Runfile("testdata/tune_cache/python_written.json"));
  ASSERT_FALSE(good.empty());
  const std::string key = TuneDeviceKey(kH200, kVer);
  auto doc_with_rows = [&](const std::string& rows) {
    return absl::StrCat("{\"format\": \"", kTuneCacheFormat, "\", \"devices\": {\"", key,
                        "\": {\"library_version\": \"0.1.0\", \"shapes\": {\"n=5376 k=7168 "
                        "faithful\": {\"buckets\": ",
                        rows, "}}}}}");
  };
  struct Case {
    std::string what, text, warning;
  };
  const std::vector<Case> cases = {
      {"empty file", "", "not a valid cache (invalid JSON at byte 0"},
      {"truncated", good.substr(0, good.size() / 2), "not a valid cache (invalid JSON"},
      {"truncated by one byte", good.substr(0, good.size() - 2), "invalid JSON"},
      {"binary",
       "\x7f"
       "ELF\x02\x01\x01",
       "invalid JSON at byte 0: expected a value"},
      {"not UTF-8", "{\"format\": \"\xff\xfe\"}", "not UTF-8 (byte 0xff)"},
      {"not an object", "[1, 2]", "format must be"},
      {"other format", "{\"format\": \"minimax_h3_nvfp4 tune cache 2\", \"devices\": {}}",
       "format must be \"minimax_h3_nvfp4 tune cache 1\", got \"minimax_h3_nvfp4 tune cache 2\""},
      {"no devices", absl::StrCat("{\"format\": \"", kTuneCacheFormat, "\"}"),
       "devices must be an object, got none"},
      {"devices a list", absl::StrCat("{\"format\": \"", kTuneCacheFormat, "\", \"devices\": []}"),
       "devices must be an object, got array"},
      {"device without version",
       absl::StrCat("{\"format\": \"", kTuneCacheFormat, "\", \"devices\": {\"x\": {}}}"),
       "library_version string"},
      {"shapes a list",
       absl::StrCat("{\"format\": \"", kTuneCacheFormat,
                    "\", \"devices\": {\"x\": "
                    "{\"library_version\": \"0.1.0\", \"shapes\": []}}}"),
       "shapes must be an object"},
      {"buckets an object", doc_with_rows("{}"), "buckets must be an array"},
      {"m a string", doc_with_rows("[{\"m\": \"128\", \"tile\": \"128x128\"}]"), "integer m"},
      {"m a float", doc_with_rows("[{\"m\": 128.0, \"tile\": \"128x128\"}]"), "integer m"},
      {"m zero", doc_with_rows("[{\"m\": 0, \"tile\": \"128x128\"}]"), "integer m"},
      {"m huge", doc_with_rows("[{\"m\": 99999999999999999999, \"tile\": \"128x128\"}]"),
       "integer m"},
      {"tile missing", doc_with_rows("[{\"m\": 1}]"), "a tile name"},
      {"tile a number", doc_with_rows("[{\"m\": 1, \"tile\": 2}]"), "a tile name"},
      {"row a list", doc_with_rows("[[1, \"128x128\"]]"), "integer m"},
      {"nested too deep", std::string(100, '[') + std::string(100, ']'), "nested deeper"},
      {"other library version",
       absl::StrCat("{\"format\": \"", kTuneCacheFormat, "\", \"devices\": {\"", key,
                    "\": {\"library_version\": \"0.0.9\"}}}"),
       "holds entries of minimax_h3_nvfp4 0.0.9, not this version (0.1.0)"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> warnings;
    const TuneCache cache = TuneCache::FromText(c.text, "/x/tune.json", &warnings, kVer);
    ASSERT_EQ(warnings.size(), 1u) << c.what;
    EXPECT_NE(warnings[0].find(c.warning), std::string::npos) << c.what << ": " << warnings[0];
    EXPECT_NE(warnings[0].find("/x/tune.json"), std::string::npos) << c.what;
    EXPECT_TRUE(cache.empty()) << c.what;
    for (const TuneDevice* d : {&kH200, &kRtx5090}) {
      const TuneCache::Choice got = cache.Choose(*d, 128, 5376, 7168, "faithful", &warnings);
      EXPECT_EQ(got.tile, TuneHeuristic(d->major, 128)) << c.what;
      EXPECT_FALSE(got.tuned) << c.what;
    }
    EXPECT_EQ(warnings.size(), 1u) << c.what;  // an empty cache says nothing more per call
  }
}

TEST(TuneCache, MissingFileIsSilent) {
  std::vector<std::string> warnings;
  const TuneCache c = TuneCache::FromFile(TmpPath("none/tune.json"), &warnings, kVer);
  EXPECT_TRUE(warnings.empty());
  EXPECT_TRUE(c.empty());
}

TEST(TuneCache, UnknownDeviceAndTileWarn) {
  const std::string key = TuneDeviceKey(kH200, kVer);
  const std::string text =
      absl::StrCat("{\"format\": \"", kTuneCacheFormat, "\", \"devices\": {\"", key,
                   "\": {\"library_version\": \"0.1.0\", \"shapes\": {\"n=256 k=512 faithful\": "
                   "{\"buckets\": [{\"m\": 1, \"tile\": \"64x64\"}, {\"m\": 4096, \"tile\": "
                   "\"auto\"}]}}}}}");
  std::vector<std::string> warnings;
  const TuneCache c = TuneCache::FromText(text, "p", &warnings, kVer);
  ASSERT_TRUE(warnings.empty());
  TuneCache::Choice got = c.Choose(kH200, 1, 256, 512, "faithful", &warnings);
  EXPECT_FALSE(got.tuned);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("names tile \"64x64\", which this library does not have (it has: "
                             "auto, 128x256_lockstep, 128x256, 128x128)"),
            std::string::npos)
      << warnings[0];
  got = c.Choose(kH200, 4096, 256, 512, "faithful", &warnings);  // "auto": the default, tuned
  EXPECT_TRUE(got.tuned);
  EXPECT_EQ(got.tile, kOutProjTileDefault);
  TuneDevice other = kH200;
  other.driver_version = 12080;  // a driver update is another key
  got = c.Choose(other, 4096, 256, 512, "faithful", &warnings);
  EXPECT_FALSE(got.tuned);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[1].find("no entry for this device (NVIDIA H200 | sm_90 | 132 SMs | driver "
                             "12080 | minimax_h3_nvfp4 0.1.0; it holds: NVIDIA H200 | sm_90 | "
                             "132 SMs | driver 13000"),
            std::string::npos)
      << warnings[1];
}

TEST(TuneCache, KeysAndHeuristic) {
  EXPECT_EQ(TuneDeviceKey(kH200, "0.1.0"),
            "NVIDIA H200 | sm_90 | 132 SMs | driver 13000 | minimax_h3_nvfp4 0.1.0");
  EXPECT_EQ(TuneShapeKey(5376, 7168, "fast"), "n=5376 k=7168 fast");
  EXPECT_STREQ(TuneVariant(9, false), "faithful");
  EXPECT_STREQ(TuneVariant(9, true), "fast");
  EXPECT_STREQ(TuneVariant(12, true), "native");
  struct Row {
    int major;
    int64_t m;
    OutProjTile want;
  };
  const Row rows[] = {
      {12, 1, OutProjTile::k128x128}, {12, 512, OutProjTile::k128x128},
      {12, 513, kOutProjTileDefault}, {12, 75856, kOutProjTileDefault},
      {9, 1, kOutProjTileDefault},    {9, 128, kOutProjTileDefault},
      {10, 128, kOutProjTileDefault},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(TuneHeuristic(r.major, r.m), r.want) << r.major << " " << r.m;
  }
  EXPECT_EQ(NearestTuneBucket({1, 16, 128, 512, 1024, 4096, 16384}, 0), 1);
  EXPECT_EQ(NearestTuneBucket({1, 16, 128, 512, 1024, 4096, 16384}, 300), 512);
  EXPECT_EQ(NearestTuneBucket({1, 16, 128, 512, 1024, 4096, 16384}, 255), 128);
  EXPECT_EQ(NearestTuneBucket({1, 16, 128, 512, 1024, 4096, 16384}, 1 << 30), 16384);
  EXPECT_EQ(FindOutProjTileByName("auto")->tile, kOutProjTileDefault);
  EXPECT_EQ(FindOutProjTileByName("128x128")->tile, OutProjTile::k128x128);
  EXPECT_EQ(FindOutProjTileByName("128X128"), nullptr);
}

TEST(TuneCache, PathFromEnvironment) {
  setenv(kTuneCacheEnv, "/a/b.json", 1);
  EXPECT_EQ(TuneCachePath(), "/a/b.json");
  unsetenv(kTuneCacheEnv);
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(TuneCachePath(), "/xdg/minimax_h3_nvfp4/tune.json");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(TuneCachePath(), "/home/u/.cache/minimax_h3_nvfp4/tune.json");
}

}  // namespace
}  // namespace h3
