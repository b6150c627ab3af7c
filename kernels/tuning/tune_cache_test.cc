// The tuning cache (kernels/tuning/tune_cache.h) on the CPU, the one source of truth of the tile choice:
// the format's golden file (Python's json.dump layout) read and rewritten byte for byte,
// resolution per M bucket, the heuristic and its rule, corrupt / foreign / truncated caches
// ignored with one warning each, and the process's view (reload, generation, warnings once).
// Python asks this code through the C ABI: python/tests/tuning_binding_test.py checks the binding.

#include "kernels/tuning/tune_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/device/tiles.h"

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

// The records of the golden file, in its writer's order (Python's tuning.Cache.record wrote it
// first; python/tests/tuning_binding_test.py, GOLDEN_RECORDS, records them through the C ABI).
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
      {&kRtx5090, 128, 5376, 7168, "native", kOutProjTileDefault, false},  // heuristic
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
      {"empty file", "",
       "not a valid cache (invalid JSON at byte 0: syntax error while parsing value - unexpected "
       "end of input; expected '[', '{', or a literal)"},
      {"truncated", good.substr(0, good.size() / 2), "not a valid cache (invalid JSON at byte "},
      {"truncated by one byte", good.substr(0, good.size() - 2),
       absl::StrCat("invalid JSON at byte ", good.size() - 2,
                    ": syntax error while parsing object - unexpected end of input")},
      {"binary",
       "\x7f"
       "ELF\x02\x01\x01",
       "invalid JSON at byte 0: syntax error while parsing value - invalid literal)"},
      {"not UTF-8", "{\"format\": \"\xff\xfe\"}",
       "invalid JSON at byte 12: syntax error while parsing value - invalid string: ill-formed "
       "UTF-8 byte)"},
      {"a byte order mark", absl::StrCat("\xef\xbb\xbf", good),
       "invalid JSON at byte 0: a UTF-8 byte order mark"},
      {"trailing data", good + "{}",
       absl::StrCat("invalid JSON at byte ", good.size(),
                    ": syntax error while parsing value - unexpected '{'; expected end of input")},
      {"NaN (json.loads read it; nlohmann does not)",
       good.substr(0, good.rfind('}')) + ", \"x\": NaN}", "invalid literal"},
      {"too large", std::string(kTuneCacheMaxBytes + 1, ' '),
       "invalid JSON: more than 1048576 bytes (the reader's limit)"},
      {"a number past a double", "[1e400]", "number overflow parsing '1e400'"},
      {"not an object", "[1, 2]", "format must be \"minimax_h3_nvfp4 tune cache 1\", got array"},
      {"other format", "{\"format\": \"minimax_h3_nvfp4 tune cache 2\", \"devices\": {}}",
       "format must be \"minimax_h3_nvfp4 tune cache 1\", got \"minimax_h3_nvfp4 tune cache 2\""},
      {"no devices", absl::StrCat("{\"format\": \"", kTuneCacheFormat, "\"}"),
       "devices must be an object, got none"},
      {"devices a list", absl::StrCat("{\"format\": \"", kTuneCacheFormat, "\", \"devices\": []}"),
       "devices must be an object, got array"},
      {"device without version",
       absl::StrCat("{\"format\": \"", kTuneCacheFormat, "\", \"devices\": {\"x\": {}}}"),
       "device \"x\" must be an object with a library_version string"},
      {"device a list",
       absl::StrCat("{\"format\": \"", kTuneCacheFormat, "\", \"devices\": {\"x\": []}}"),
       "library_version string"},
      {"version a number",
       absl::StrCat("{\"format\": \"", kTuneCacheFormat,
                    "\", \"devices\": {\"x\": {\"library_version\": 1}}}"),
       "library_version string"},
      {"shapes a list",
       absl::StrCat("{\"format\": \"", kTuneCacheFormat,
                    "\", \"devices\": {\"x\": "
                    "{\"library_version\": \"0.1.0\", \"shapes\": []}}}"),
       "shapes must be an object"},
      {"buckets an object", doc_with_rows("{}"), "buckets must be an array"},
      {"buckets a string", doc_with_rows("\"128\""), "buckets must be an array"},
      {"m a string", doc_with_rows("[{\"m\": \"128\", \"tile\": \"128x128\"}]"), "integer m"},
      {"m a float", doc_with_rows("[{\"m\": 128.0, \"tile\": \"128x128\"}]"), "integer m"},
      {"m a bool", doc_with_rows("[{\"m\": true, \"tile\": \"128x128\"}]"), "integer m"},
      {"m zero", doc_with_rows("[{\"m\": 0, \"tile\": \"128x128\"}]"),
       "a bucket must have an integer m in [1, 2147483647] and a tile name, got "
       "{\"m\":0,\"tile\":\"128x128\"}"},
      {"m negative", doc_with_rows("[{\"m\": -1, \"tile\": \"128x128\"}]"), "integer m"},
      {"m past 2^31 - 1", doc_with_rows("[{\"m\": 2147483648, \"tile\": \"128x128\"}]"),
       "integer m"},
      {"m past 2^63", doc_with_rows("[{\"m\": 18446744073709551615, \"tile\": \"128x128\"}]"),
       "integer m"},
      {"m huge", doc_with_rows("[{\"m\": 99999999999999999999, \"tile\": \"128x128\"}]"),
       "integer m"},
      {"tile missing", doc_with_rows("[{\"m\": 1}]"), "a tile name"},
      {"tile a number", doc_with_rows("[{\"m\": 1, \"tile\": 2}]"), "a tile name"},
      {"row a list", doc_with_rows("[[1, \"128x128\"]]"), "integer m"},
      {"nested 64 deep: JSON, no cache", std::string(64, '[') + std::string(64, ']'),
       "format must be \"minimax_h3_nvfp4 tune cache 1\", got array"},
      {"nested too deep", std::string(65, '[') + std::string(65, ']'),
       "invalid JSON: nested deeper than 64 levels"},
      {"nested far too deep", std::string(1 << 20, '['), "nested deeper than 64 levels"},
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
                             "auto, 128x256_lockstep, 128x256, 128x128, 128x128_staged)"),
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
    const char* rule;
  };
  const Row rows[] = {
      // SM12x has no small-M rule: its default is a 128x128 config (target_facts.h).
      {12, 0, kOutProjTileDefault, "the default config"},
      {12, 1, kOutProjTileDefault, "the default config"},
      {12, 512, kOutProjTileDefault, "the default config"},
      {12, 513, kOutProjTileDefault, "the default config"},
      {12, 75856, kOutProjTileDefault, "the default config"},
      {9, 1, kOutProjTileDefault, "the default config"},
      {9, 128, kOutProjTileDefault, "the default config"},
      {10, 128, kOutProjTileDefault, "the default config"},
      {13, 128, kOutProjTileDefault, "the default config"},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(TuneHeuristic(r.major, r.m), r.want) << r.major << " " << r.m;
    EXPECT_EQ(TuneHeuristicRule(r.major, r.m), r.rule) << r.major << " " << r.m;
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

TEST(TuneCache, RowsListTheEntries) {
  std::vector<std::string> warnings;
  const std::string key = TuneDeviceKey(kH200, kVer);
  const TuneCache c = TuneCache::FromText(
      absl::StrCat("{\"format\": \"", kTuneCacheFormat, "\", \"devices\": {\"", key,
                   "\": {\"library_version\": \"0.1.0\", \"shapes\": {\"b\": {\"buckets\": "
                   "[{\"m\": 9, \"tile\": \"x\"}, {\"m\": 2, \"tile\": \"128x128\"}]}, \"a\": "
                   "{\"buckets\": [{\"m\": 1, \"tile\": \"auto\"}]}, \"e\": {\"buckets\": []}}}, "
                   "\"z\": {\"library_version\": \"0.1.0\", \"shapes\": {}}}}"),
      "p", &warnings, kVer);
  EXPECT_TRUE(warnings.empty());
  struct Want {
    std::string device_key, shape_key;
    int64_t m;
    std::string tile;
  };
  const std::vector<Want> want = {
      {key, "a", 1, "auto"}, {key, "b", 2, "128x128"}, {key, "b", 9, "x"}, {"z", "", 0, ""}};
  const std::vector<TuneCache::Row> rows = c.Rows();
  ASSERT_EQ(rows.size(), want.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].device_key, want[i].device_key) << i;
    EXPECT_EQ(rows[i].shape_key, want[i].shape_key) << i;
    EXPECT_EQ(rows[i].m, want[i].m) << i;
    EXPECT_EQ(rows[i].tile, want[i].tile) << i;
  }
}

TEST(TuneCache, RecordRefusesWhatTheFileCannotHold) {
  const std::string path = TmpPath("refused.json");
  TuneDevice bad = kH200;
  bad.name = "NVIDIA \xff";
  const absl::Status s = RecordTuneWinners(path, bad, 256, 512, "faithful", {{1, "128x128"}}, kVer);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("the device name and variant must be UTF-8, got \"NVIDIA \\ufffd\""),
            std::string::npos)
      << s;
  EXPECT_EQ(
      RecordTuneWinners(path, kH200, 256, 512, "faithful", {{int64_t{1} << 31, "128x128"}}, kVer)
          .code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(path));
}

// An old file's entries of this version are kept only where the reader takes them: one bad entry
// would make the whole new file unreadable, the new winner included (found by the fuzzer).
TEST(TuneCache, RecordDropsEntriesTheReaderRefuses) {
  const std::string path = TmpPath("drops.json");
  const std::string head = absl::StrCat("{\"format\": \"", kTuneCacheFormat, "\", \"devices\": {");
  struct Case {
    std::string what, old_devices;
    size_t kept;  // the old entries still in the file (beside the recorded one)
  };
  const std::vector<Case> cases = {
      {"a valid other device", "\"x\": {\"library_version\": \"0.1.0\", \"shapes\": {}}", 1},
      {"no shapes", "\"x\": {\"library_version\": \"0.1.0\"}", 0},
      {"shapes a list", "\"x\": {\"library_version\": \"0.1.0\", \"shapes\": []}", 0},
      {"a bad bucket",
       "\"x\": {\"library_version\": \"0.1.0\", \"shapes\": {\"s\": {\"buckets\": [{\"m\": "
       "0, \"tile\": \"128x128\"}]}}}",
       0},
      {"another version", "\"x\": {\"library_version\": \"9.9\"}", 0},
      {"this device, broken",
       absl::StrCat("\"", TuneDeviceKey(kH200, kVer), "\": {\"library_version\": \"0.1.0\"}"), 0},
  };
  for (const Case& c : cases) {
    { std::ofstream(path) << head << c.old_devices << "}}"; }
    ASSERT_TRUE(RecordTuneWinners(path, kH200, 256, 512, "faithful", {{1, "128x256"}}, kVer).ok());
    std::vector<std::string> warnings;
    const TuneCache back = TuneCache::FromFile(path, &warnings, kVer);
    EXPECT_TRUE(warnings.empty()) << c.what << ": " << warnings[0];
    const TuneCache::Choice got = back.Choose(kH200, 1, 256, 512, "faithful", &warnings);
    EXPECT_TRUE(got.tuned) << c.what;
    EXPECT_EQ(got.tile, OutProjTile::k128x256) << c.what;
    std::set<std::string> devices;
    for (const TuneCache::Row& r : back.Rows()) devices.insert(r.device_key);
    EXPECT_EQ(devices.size(), 1 + c.kept) << c.what;
  }
}

// The process's view: read at the first use, warnings handed out once per reading, a record seen
// at once, a reload reads the file again (and another path), and generation() moves with both.
TEST(TuneCacheFile, ReadOnceWarnOnceReloadAndRecord) {
  const std::string path = TmpPath("file.json");
  { std::ofstream(path) << "not json"; }
  TuneCacheFile file(path);
  EXPECT_EQ(file.path(), path);
  std::vector<std::string> fresh;
  EXPECT_FALSE(file.Choose(kH200, 128, 256, 512, "faithful", &fresh).tuned);
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_NE(fresh[0].find("is not a valid cache"), std::string::npos) << fresh[0];
  fresh.clear();
  file.Choose(kH200, 128, 256, 512, "faithful", &fresh);
  file.Rows(&fresh);
  EXPECT_TRUE(fresh.empty());  // said once
  // The file changes under it: not read again until a reload.
  fs::remove(path);
  ASSERT_TRUE(RecordTuneWinners(path, kH200, 256, 512, "faithful", {{128, "128x256"}}).ok());
  EXPECT_FALSE(file.Choose(kH200, 128, 256, 512, "faithful", &fresh).tuned);
  const int64_t g0 = file.generation();
  file.Reload(path);
  EXPECT_GT(file.generation(), g0);
  TuneCache::Choice c = file.Choose(kH200, 128, 256, 512, "faithful", &fresh);
  EXPECT_TRUE(c.tuned);
  EXPECT_EQ(c.tile, OutProjTile::k128x256);
  EXPECT_TRUE(fresh.empty());
  // A record through it is seen at once.
  const int64_t g1 = file.generation();
  ASSERT_TRUE(file.Record(kH200, 256, 512, "faithful", {{128, "128x128"}}).ok());
  EXPECT_GT(file.generation(), g1);
  c = file.Choose(kH200, 128, 256, 512, "faithful", &fresh);
  EXPECT_EQ(c.tile, OutProjTile::k128x128);
  // The unknown device's warning comes once per reading.
  file.Choose(kRtx5090, 1, 256, 512, "native", &fresh);
  file.Choose(kRtx5090, 1, 256, 512, "native", &fresh);
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_NE(fresh[0].find("has no entry for this device"), std::string::npos) << fresh[0];
  file.Reload(path);
  file.Choose(kRtx5090, 1, 256, 512, "native", &fresh);
  EXPECT_EQ(fresh.size(), 2u);
  // Reload("") follows the environment.
  setenv(kTuneCacheEnv, "/nonexistent/h3/tune.json", 1);
  file.Reload("");
  EXPECT_EQ(file.path(), "/nonexistent/h3/tune.json");
  EXPECT_FALSE(file.Choose(kH200, 128, 256, 512, "faithful", &fresh).tuned);
  unsetenv(kTuneCacheEnv);
  EXPECT_EQ(&ProcessTuneCache(), &ProcessTuneCache());
}

}  // namespace
}  // namespace h3
