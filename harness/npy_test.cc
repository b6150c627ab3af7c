#include "harness/npy.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace h3 {
namespace {

using ::testing::HasSubstr;

std::string TempDir() {
  const char* t = std::getenv("TEST_TMPDIR");
  std::string dir = t != nullptr ? t : ::testing::TempDir();
  return dir;
}

std::string WriteFile(const std::string& name, const std::string& bytes) {
  const std::string path = TempDir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), bytes.size());
  return path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A hand-made image: prelude of `major`.0 around `dict` (no padding rules).
std::string Image(int major, const std::string& dict, const std::string& data) {
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const size_t len = dict.size();
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (major >= 2) {
    out += static_cast<char>((len >> 16) & 0xff);
    out += static_cast<char>((len >> 24) & 0xff);
  }
  return out + dict + data;
}

TEST(NpyTest, HeaderBytesMatchNumpy) {
  // What numpy 1.24 np.save writes for np.zeros((3, 4), '<u2'): 128 bytes.
  const std::string h = MakeNpyHeader(NpyDtype::kU2, {3, 4});
  const std::string dict = "{'descr': '<u2', 'fortran_order': False, 'shape': (3, 4), }";
  ASSERT_EQ(h.size(), 128u);
  EXPECT_EQ(h.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(static_cast<unsigned char>(h[8]), 118);
  EXPECT_EQ(static_cast<unsigned char>(h[9]), 0);
  EXPECT_EQ(h.substr(10, dict.size()), dict);
  EXPECT_EQ(h.back(), '\n');
  // Shapes as Python writes tuples.
  EXPECT_NE(MakeNpyHeader(NpyDtype::kF4, {1}).find("'shape': (1,), }"), std::string::npos);
  EXPECT_NE(MakeNpyHeader(NpyDtype::kF4, {}).find("'shape': (), }"), std::string::npos);
}

template <typename T>
void RoundTrip(const std::vector<int64_t>& shape, const std::vector<T>& data) {
  const std::string path =
      TempDir() + "/rt_" + std::to_string(sizeof(T)) + "_" + std::to_string(shape.size()) + ".npy";
  ASSERT_TRUE(WriteNpy<T>(path, shape, data).ok());
  absl::StatusOr<TypedArray<T>> a = ReadNpyAs<T>(path);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->shape, shape);
  ASSERT_EQ(a->data.size(), data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    EXPECT_EQ(std::memcmp(&a->data[i], &data[i], sizeof(T)), 0) << i;
  }
  EXPECT_EQ(ReadFile(path).size() % 64, (data.size() * sizeof(T)) % 64);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(NpyTest, RoundTrips) {
  RoundTrip<uint8_t>({2, 3}, {0, 1, 2, 0x7f, 0x80, 0xff});
  RoundTrip<uint16_t>({3}, {0x0000, 0x8000, 0x7fff});
  RoundTrip<uint16_t>({0, 7168}, {});
  RoundTrip<int32_t>(
      {4}, {-1, 9, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()});
  RoundTrip<float>({1}, {-0.0f});
  RoundTrip<float>({}, {std::nanf("")});
  RoundTrip<float>({2, 1, 2}, {1e-45f, -INFINITY, 3.5f, 448.f});
  RoundTrip<double>({2}, {1.0 / 3, -1e300});
}

TEST(NpyTest, ReadsEveryVersionAndSpelling) {
  struct Case {
    int major;
    std::string dict;
    NpyDtype dtype;
    std::vector<int64_t> shape;
  };
  const std::vector<Case> cases = {
      {1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }\n", NpyDtype::kU1, {2}},
      {2, "{'descr': 'u1', 'fortran_order': False, 'shape': (1, 2), }\n", NpyDtype::kU1, {1, 2}},
      {3, "{\"descr\": \"<u1\", \"shape\": (2,), \"fortran_order\": False}\n", NpyDtype::kU1, {2}},
      {1, "{'descr':'<u1','fortran_order':False,'shape':(2L,)}   \n", NpyDtype::kU1, {2}},
      {1,
       "{'shape': (1, 1, 2, ), 'fortran_order': False, 'descr': '|u1'}\n",
       NpyDtype::kU1,
       {1, 1, 2}},
  };
  for (const Case& c : cases) {
    const std::string path = WriteFile("v.npy", Image(c.major, c.dict, "ab"));
    absl::StatusOr<NpyArray> a = ReadNpy(path);
    ASSERT_TRUE(a.ok()) << c.dict << " " << a.status();
    EXPECT_EQ(a->header.dtype, c.dtype);
    EXPECT_EQ(a->header.shape, c.shape);
    EXPECT_EQ(std::string(a->data.begin(), a->data.end()), "ab");
  }
}

TEST(NpyTest, Errors) {
  struct Case {
    std::string what;
    std::string image;
    absl::StatusCode code;
    std::string message;  // substring of the error
  };
  const std::string ok_dict = "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }\n";
  const std::vector<Case> cases = {
      {"empty file", "", absl::StatusCode::kInvalidArgument, "not a .npy file"},
      {"bad magic", "\x93NUMPX\x01\x00\x10\x00" + ok_dict, absl::StatusCode::kInvalidArgument,
       "magic"},
      {"version 4", Image(4, ok_dict, "abcd"), absl::StatusCode::kInvalidArgument, "version 4.0"},
      {"header longer than file", Image(1, ok_dict, "").substr(0, 30),
       absl::StatusCode::kInvalidArgument, "truncated .npy header"},
      {"no newline", Image(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }", "abcd"),
       absl::StatusCode::kInvalidArgument, "newline"},
      {"not a dict", Image(1, "['<u2']\n", "abcd"), absl::StatusCode::kInvalidArgument,
       "expected '{'"},
      {"missing key", Image(1, "{'descr': '<u2', 'shape': (2,), }\n", "abcd"),
       absl::StatusCode::kInvalidArgument, "must have the keys"},
      {"extra key",
       Image(1,
             "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), "
             "'x': 1}\n",
             "abcd"),
       absl::StatusCode::kInvalidArgument, "unexpected key 'x'"},
      {"bad shape",
       Image(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (-2,), }\n", "abcd"),
       absl::StatusCode::kInvalidArgument, "non-negative integer"},
      {"bad bool", Image(1, "{'descr': '<u2', 'fortran_order': false, 'shape': (2,), }\n", "abcd"),
       absl::StatusCode::kInvalidArgument, "True or False"},
      {"fortran", Image(1, "{'descr': '<u2', 'fortran_order': True, 'shape': (2,), }\n", "abcd"),
       absl::StatusCode::kInvalidArgument, "fortran_order is True"},
      {"big endian",
       Image(1, "{'descr': '>u2', 'fortran_order': False, 'shape': (2,), }\n", "abcd"),
       absl::StatusCode::kInvalidArgument, "big-endian dtype '>u2'"},
      {"unsupported dtype",
       Image(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }\n", "abcdefghabcdefgh"),
       absl::StatusCode::kInvalidArgument, "unsupported dtype '<i8'"},
      {"object dtype",
       Image(1, "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }\n", "abcd"),
       absl::StatusCode::kInvalidArgument, "unsupported dtype '|O'"},
      {"truncated data", Image(1, ok_dict, "abc"), absl::StatusCode::kInvalidArgument,
       "truncated data"},
      {"trailing data", Image(1, ok_dict, "abcde"), absl::StatusCode::kInvalidArgument,
       "1 unexpected trailing bytes"},
      {"overflowing shape",
       Image(1,
             "{'descr': '<u2', 'fortran_order': False, 'shape': "
             "(4611686018427387904, 4), }\n",
             "abcd"),
       absl::StatusCode::kInvalidArgument, "too large"},
      {"version 1.1", Image(1, ok_dict, "abcd").replace(7, 1, "\x01"),
       absl::StatusCode::kInvalidArgument, "version 1.1"},
      {"implausible header length", std::string("\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12),
       absl::StatusCode::kInvalidArgument, "is implausible"},
      {"unterminated string", Image(1, "{'descr': '<u2\n", "abcd"),
       absl::StatusCode::kInvalidArgument, "unterminated string"},
      {"dimension overflows int64",
       Image(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (99999999999999999999,), }\n",
             ""),
       absl::StatusCode::kInvalidArgument, "overflows int64"},
      {"non-ASCII in the dict",
       Image(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), \xff}\n", "abcd"),
       absl::StatusCode::kInvalidArgument, "\\xff"},
      {"text after the dict",
       Image(1, "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), } x\n", "abcd"),
       absl::StatusCode::kInvalidArgument, "unexpected text after the dict"},
  };
  for (const Case& c : cases) {
    const std::string path = WriteFile("bad.npy", c.image);
    absl::StatusOr<NpyArray> a = ReadNpy(path);
    ASSERT_FALSE(a.ok()) << c.what;
    EXPECT_EQ(a.status().code(), c.code) << c.what << ": " << a.status();
    EXPECT_THAT(std::string(a.status().message()), HasSubstr(c.message)) << c.what;
    EXPECT_THAT(std::string(a.status().message()), HasSubstr(path)) << c.what;
  }
}

TEST(NpyTest, MissingFileAndDirectory) {
  const std::string missing = TempDir() + "/does_not_exist.npy";
  absl::StatusOr<NpyArray> a = ReadNpy(missing);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(a.status().message()), HasSubstr(missing));
  absl::StatusOr<NpyArray> d = ReadNpy(TempDir());
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("directory"));
}

// A typed read names the file, the dtype found and the one it must be, whether or not the
// reader supports the dtype found (an int64 gate_index must not read as "use float64").
TEST(NpyTest, WrongDtypeNamesBoth) {
  struct Case {
    std::string descr;
    int64_t item_bytes;
    std::string says;  // after "<path>: "
    std::function<absl::Status(const std::string&)> read;
  };
  auto as = [](auto tag) {
    using T = decltype(tag);
    return [](const std::string& p) { return ReadNpyAs<T>(p).status(); };
  };
  const std::vector<Case> cases = {
      {"<f4", 4, "dtype is '<f4' (float32), expected '<u2' (uint16)", as(uint16_t{})},
      {"<i8", 8, "dtype is '<i8', expected '<i4' (int32)", as(int32_t{})},
      {"<f8", 8, "dtype is '<f8' (float64), expected '<i4' (int32)", as(int32_t{})},
      {">i4", 4, "dtype is '>i4' (big-endian), expected '<i4' (int32)", as(int32_t{})},
      {"|u1", 1, "dtype is '|u1' (uint8), expected '<f4' (float32)", as(float{})},
      {"<f2", 2, "dtype is '<f2', expected '<u2' (uint16)", as(uint16_t{})},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.descr);
    const std::string path = WriteFile(
        "typed.npy",
        Image(1, "{'descr': '" + c.descr + "', 'fortran_order': False, 'shape': (2,), }\n",
              std::string(2 * c.item_bytes, '\0')));
    const absl::Status st = c.read(path);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
    EXPECT_EQ(std::string(st.message()), path + ": " + c.says);
  }
}

TEST(NpyTest, WriteErrors) {
  // Size mismatch and an unwritable folder: errors, no file left behind.
  const std::string path = TempDir() + "/w.npy";
  std::filesystem::remove(path);
  EXPECT_FALSE(WriteNpy<float>(path, {3}, std::vector<float>{1, 2}).ok());
  EXPECT_FALSE(std::filesystem::exists(path));
  absl::Status s = WriteNpy<float>(TempDir() + "/no/such/dir/w.npy", {1}, std::vector<float>{1});
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("no/such/dir/w.npy"));
}

TEST(NpyTest, LargeHeaderUsesVersion2) {
  // 7000 dims of 1: the dict passes 65535 bytes only with long numbers, so
  // use big ones whose product stays 0 (a zero dimension).
  std::vector<int64_t> shape(7000, 1000000000);
  shape[0] = 0;
  const std::string h = MakeNpyHeader(NpyDtype::kU1, shape);
  EXPECT_EQ(h[6], 2);
  EXPECT_EQ(h.size() % 64, 0u);
  absl::StatusOr<NpyHeader> parsed = ParseNpyHeader(h, "big");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->shape, shape);
  EXPECT_EQ(parsed->NumElements(), 0);
}

}  // namespace
}  // namespace h3
