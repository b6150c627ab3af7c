// core/json.h against texts whose Python json.loads outcome is known (written by hand from
// Python 3.11's behaviour), truncated and garbage texts included.

#include "core/json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"

namespace h3 {
namespace {

struct Case {
  const char* text;
  bool ok;
};

TEST(Json, AcceptsWhatPythonAccepts) {
  const Case cases[] = {
      {"{}", true},
      {" \t\r\n[ ] ", true},
      {"0", true},
      {"-0", true},
      {"1.5e-3", true},
      {"1E+2", true},
      {"NaN", true},
      {"-Infinity", true},
      {"\"\\u00e9\\ud83d\\ude00\"", true},
      {"\"\\ud800\"", true},  // a lone surrogate: Python keeps it
      {"{\"a\": 1, \"a\": 2}", true},
      {"\"caf\xc3\xa9\"", true},
      {"", false},
      {" ", false},
      {"{", false},
      {"{\"a\"", false},
      {"{\"a\":", false},
      {"{\"a\": 1", false},
      {"{\"a\": 1,}", false},
      {"[1,]", false},
      {"[1 2]", false},
      {"01", false},
      {"1.", false},
      {".5", false},
      {"+1", false},
      {"1e", false},
      {"-", false},
      {"nan", false},
      {"infinity", false},
      {"tru", false},
      {"nul", false},
      {"\"abc", false},
      {"\"a\tb\"", false},  // a raw control character
      {"\"\\x\"", false},
      {"\"\\u12\"", false},
      {"\"\\u12g4\"", false},
      {"{1: 2}", false},
      {"{'a': 1}", false},
      {"[] []", false},
      {"\xef\xbb\xbf{}", false},        // a BOM: json.loads refuses it
      {"\"\xff\"", false},              // not UTF-8
      {"\"\xc0\xaf\"", false},          // overlong
      {"\"\xed\xa0\x80\"", false},      // an encoded surrogate
      {"\"\xe2\x82\"", false},          // truncated sequence
      {"\"\xf4\x90\x80\x80\"", false},  // past U+10FFFF
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ParseJson(c.text).ok(), c.ok) << "text: " << c.text;
  }
  // An embedded NUL is a control character inside a string, garbage outside.
  EXPECT_FALSE(ParseJson(std::string("\"a\0b\"", 5)).ok());
  EXPECT_FALSE(ParseJson(std::string("{}\0", 3)).ok());
}

TEST(Json, Values) {
  absl::StatusOr<JsonValue> v = ParseJson(
      "{\"m\": 128, \"x\": -2.5, \"big\": 123456789012345678901234567890, \"s\": \"a\\\"\\n\","
      " \"a\": [true, false, null], \"m\": 7}");
  ASSERT_TRUE(v.ok()) << v.status();
  int64_t m = 0;
  ASSERT_NE(v->Find("m"), nullptr);
  EXPECT_TRUE(v->Find("m")->AsInt64(&m));
  EXPECT_EQ(m, 7);  // the last of a repeated key
  EXPECT_FALSE(v->Find("x")->AsInt64(&m));
  EXPECT_EQ(v->Find("x")->number, -2.5);
  EXPECT_TRUE(v->Find("big")->integer);
  EXPECT_FALSE(v->Find("big")->AsInt64(&m));  // out of range: not an int64
  EXPECT_EQ(v->Find("s")->text, "a\"\n");
  ASSERT_EQ(v->Find("a")->array.size(), 3u);
  EXPECT_TRUE(v->Find("a")->array[0].boolean);
  EXPECT_EQ(v->Find("a")->array[2].kind, JsonValue::Kind::kNull);
  EXPECT_EQ(v->Find("nope"), nullptr);
  EXPECT_EQ(v->Find("a")->Find("m"), nullptr);  // not an object
  EXPECT_EQ(ParseJson("\"\\ud83d\\ude00\"")->text, "\xf0\x9f\x98\x80");
}

TEST(Json, NestingIsBounded) {
  EXPECT_TRUE(ParseJson(std::string(kJsonMaxDepth, '[') + std::string(kJsonMaxDepth, ']')).ok());
  EXPECT_FALSE(
      ParseJson(std::string(kJsonMaxDepth + 1, '[') + std::string(kJsonMaxDepth + 1, ']')).ok());
  // Far deeper than any stack would take: refused, not a crash.
  const absl::StatusOr<JsonValue> deep = ParseJson(std::string(1 << 20, '['));
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("nested deeper"), std::string::npos) << deep.status();
  EXPECT_FALSE(ParseJson(std::string(kJsonMaxBytes + 1, ' ')).ok());
}

// An object of as many distinct keys as the byte limit allows (~70k) is read whole, and a
// repeated key keeps its first position and its last value, through the parser's key index (a
// linear search per key made reading quadratic in the key count).
TEST(Json, ManyKeysReadLinearly) {
  std::string text = "{";
  int keys = 0;
  while (text.size() + 32 < kJsonMaxBytes) {
    absl::StrAppend(&text, keys ? "," : "", "\"k", keys, "\":", keys);
    ++keys;
  }
  absl::StrAppend(&text, ",\"k0\":-1}");
  const absl::StatusOr<JsonValue> v = ParseJson(text);
  ASSERT_TRUE(v.ok()) << v.status();
  ASSERT_EQ(v->object.size(), static_cast<size_t>(keys));
  EXPECT_EQ(v->object.front().first, "k0");
  EXPECT_EQ(v->object.front().second.text, "-1");
  EXPECT_EQ(v->object.back().first, absl::StrCat("k", keys - 1));
}

// Floats as Python's repr writes them (shortest digits; scientific below 1e-4 and from 1e16).
TEST(Json, NumbersAsPythonsRepr) {
  const struct {
    double v;
    const char* python;
  } kCases[] = {
      {0.0001, "0.0001"},
      {1e-05, "1e-05"},
      {1.2345678901234568e+17, "1.2345678901234568e+17"},
      {1e16, "1e+16"},
      {1234567890123456.0, "1234567890123456.0"},
      {0.1, "0.1"},
      {2.0, "2.0"},
      {0.0, "0.0"},
      {-0.0, "-0.0"},
      {123.456, "123.456"},
      {1e22, "1e+22"},
      {5e-324, "5e-324"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {-2.5e-7, "-2.5e-07"},
      {std::numeric_limits<double>::infinity(), "Infinity"},
      {-std::numeric_limits<double>::infinity(), "-Infinity"},
      {std::numeric_limits<double>::quiet_NaN(), "NaN"},
  };
  for (const auto& c : kCases) EXPECT_EQ(JsonValue::Number(c.v).text, c.python) << c.v;
}

// Python's json.dumps(v, indent=1, sort_keys=True) of the same value, byte for byte.
TEST(Json, WritesPythonsLayout) {
  JsonValue doc = JsonValue::Object();
  doc.Set("z") = JsonValue::Integer(-3);
  doc.Set("a") = JsonValue::Array();
  JsonValue& list = doc.Set("b");
  list = JsonValue::Array();
  list.array.push_back(JsonValue::Number(0.243));
  list.array.push_back(JsonValue::Number(2.0));
  list.array.push_back(JsonValue::String("q\"\\\n\x01\x7f\xc3\xa9\xf0\x9f\x98\x80"));
  doc.Set("c") = JsonValue::Object();
  EXPECT_EQ(WriteJson(doc),
            "{\n \"a\": [],\n \"b\": [\n  0.243,\n  2.0,\n"
            "  \"q\\\"\\\\\\n\\u0001\\u007f\\u00e9\\ud83d\\ude00\"\n ],\n \"c\": {},\n"
            " \"z\": -3\n}");
  // And what it writes reads back as the same value.
  absl::StatusOr<JsonValue> back = ParseJson(WriteJson(doc));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(WriteJson(*back), WriteJson(doc));
}

// Random bytes and random cuts of a valid document: any outcome but a crash (ASan/UBSan in CI).
TEST(Json, GarbageNeverCrashes) {
  const std::string valid =
      "{\"devices\": {\"k\": {\"library_version\": \"0.1.0\", \"shapes\": {\"n=1 k=2 native\": "
      "{\"buckets\": [{\"m\": 1, \"tile\": \"128x128\", \"median_ms\": 1e-3}]}}}}, \"format\": "
      "\"x\\u00e9\"}";
  ASSERT_TRUE(ParseJson(valid).ok());
  for (size_t cut = 0; cut < valid.size(); ++cut) {
    EXPECT_FALSE(ParseJson(valid.substr(0, cut)).ok()) << "cut at " << cut;
  }
  std::mt19937 rng(7);
  const std::string alphabet = "{}[]\":,\\ 0123456789.eE+-tfnulrsaNIy\xc3\xa9\xff";
  for (int i = 0; i < 20000; ++i) {
    std::string s = valid;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      s[rng() % s.size()] = alphabet[rng() % alphabet.size()];
    }
    absl::StatusOr<JsonValue> v = ParseJson(s);
    if (v.ok()) {
      EXPECT_TRUE(ParseJson(WriteJson(*v)).ok()) << s;
    }
  }
}

}  // namespace
}  // namespace h3
