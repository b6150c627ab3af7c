#include "core/json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <system_error>
#include <unordered_map>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace h3 {

const JsonValue* JsonValue::Find(absl::string_view key) const {
  if (kind != Kind::kObject) return nullptr;
  for (const auto& [k, v] : object) {
    if (k == key) return &v;
  }
  return nullptr;
}

JsonValue& JsonValue::Set(absl::string_view key) {
  for (auto& [k, v] : object) {
    if (k == key) return v;
  }
  object.emplace_back(std::string(key), JsonValue());
  return object.back().second;
}

const char* JsonValue::TypeName() const {
  switch (kind) {
    case Kind::kNull:
      return "null";
    case Kind::kBool:
      return "bool";
    case Kind::kNumber:
      return integer ? "int" : "float";
    case Kind::kString:
      return "string";
    case Kind::kArray:
      return "array";
    case Kind::kObject:
      return "object";
  }
  return "?";
}

bool JsonValue::AsInt64(int64_t* out) const {
  if (kind != Kind::kNumber || !integer) return false;
  int64_t v = 0;
  const std::from_chars_result r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size()) return false;
  *out = v;
  return true;
}

namespace {

class Parser {
 public:
  explicit Parser(absl::string_view s) : s_(s) {}

  absl::StatusOr<JsonValue> Document() {
    if (s_.size() > kJsonMaxBytes) {
      return absl::InvalidArgumentError(
          absl::StrFormat("JSON text of %d bytes; at most %d are read", s_.size(), kJsonMaxBytes));
    }
    if (absl::Status u = CheckUtf8(); !u.ok()) return u;
    JsonValue v;
    SkipSpace();
    if (!Value(&v, 0)) return Error();
    SkipSpace();
    if (pos_ != s_.size()) {
      why_ = "extra data after the value";
      return Error();
    }
    return v;
  }

 private:
  absl::Status Error() const {
    return absl::InvalidArgumentError(absl::StrFormat("invalid JSON at byte %d: %s", pos_, why_));
  }

  bool Fail(const char* why) {
    why_ = why;
    return false;
  }

  // Python decodes the file as UTF-8 first (strict: no overlongs, no surrogates, <= U+10FFFF).
  absl::Status CheckUtf8() {
    size_t i = 0;
    const auto* b = reinterpret_cast<const unsigned char*>(s_.data());
    while (i < s_.size()) {
      const unsigned c = b[i];
      int len = 0;
      unsigned lo = 0x80, hi = 0xBF;
      if (c < 0x80)
        len = 1;
      else if (c >= 0xC2 && c <= 0xDF)
        len = 2;
      else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
      } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
      }
      bool ok = len > 0 && i + len <= s_.size();
      for (int j = 1; ok && j < len; ++j) {
        const unsigned cc = b[i + j];
        ok = j == 1 ? (cc >= lo && cc <= hi) : (cc >= 0x80 && cc <= 0xBF);
      }
      if (!ok) {
        return absl::InvalidArgumentError(
            absl::StrFormat("invalid JSON at byte %d: not UTF-8 (byte 0x%02x)", i, c));
      }
      i += len;
    }
    return absl::OkStatus();
  }

  void SkipSpace() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool Literal(absl::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  bool Value(JsonValue* v, int depth) {
    if (pos_ >= s_.size()) return Fail("the text ends where a value should be");
    const char c = s_[pos_];
    if (c == '{' || c == '[') {
      if (depth >= kJsonMaxDepth) return Fail("nested deeper than 64 levels");
      return c == '{' ? ObjectValue(v, depth + 1) : ArrayValue(v, depth + 1);
    }
    if (c == '"') {
      v->kind = JsonValue::Kind::kString;
      return StringValue(&v->text);
    }
    if (Literal("null")) {
      v->kind = JsonValue::Kind::kNull;
      return true;
    }
    if (Literal("true") || Literal("false")) {
      v->kind = JsonValue::Kind::kBool;
      v->boolean = c == 't';
      return true;
    }
    return NumberValue(v);
  }

  bool ObjectValue(JsonValue* v, int depth) {
    v->kind = JsonValue::Kind::kObject;
    ++pos_;
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return true;
    }
    std::unordered_map<std::string, size_t> index;
    while (true) {
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != '"') return Fail("expected a string key");
      std::string key;
      if (!StringValue(&key)) return false;
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != ':') return Fail("expected ':' after a key");
      ++pos_;
      SkipSpace();
      JsonValue member;
      if (!Value(&member, depth)) return false;
      // A repeated key keeps its first position and its last value (Python's dict); the index
      // keeps an object of many keys linear to read, not quadratic.
      const auto [at, fresh] = index.try_emplace(key, v->object.size());
      if (fresh) {
        v->object.emplace_back(std::move(key), std::move(member));
      } else {
        v->object[at->second].second = std::move(member);
      }
      SkipSpace();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        return true;
      }
      return Fail("expected ',' or '}' in an object");
    }
  }

  bool ArrayValue(JsonValue* v, int depth) {
    v->kind = JsonValue::Kind::kArray;
    ++pos_;
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      SkipSpace();
      v->array.emplace_back();
      if (!Value(&v->array.back(), depth)) return false;
      SkipSpace();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return true;
      }
      return Fail("expected ',' or ']' in an array");
    }
  }

  static void AppendUtf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {  // a lone surrogate too (Python keeps it in the str)
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  bool Hex4(uint32_t* cp) {
    if (pos_ + 4 > s_.size()) return Fail("a \\u escape needs 4 hex digits");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_ + i];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        v |= static_cast<uint32_t>(c - 'A' + 10);
      else
        return Fail("a \\u escape needs 4 hex digits");
    }
    pos_ += 4;
    *cp = v;
    return true;
  }

  bool StringValue(std::string* out) {
    ++pos_;  // the opening quote
    while (true) {
      if (pos_ >= s_.size()) return Fail("unterminated string");
      const char c = s_[pos_];
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20) return Fail("a control character in a string");
      if (c != '\\') {
        out->push_back(c);
        ++pos_;
        continue;
      }
      ++pos_;
      if (pos_ >= s_.size()) return Fail("unterminated string");
      const char e = s_[pos_++];
      switch (e) {
        case '"':
          out->push_back('"');
          break;
        case '\\':
          out->push_back('\\');
          break;
        case '/':
          out->push_back('/');
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          uint32_t cp = 0;
          if (!Hex4(&cp)) return false;
          // A high surrogate followed by an escaped low one is one code point (as in Python).
          if (cp >= 0xD800 && cp <= 0xDBFF && s_.substr(pos_, 2) == "\\u") {
            const size_t save = pos_;
            pos_ += 2;
            uint32_t lo = 0;
            if (Hex4(&lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else {
              pos_ = save;
            }
          }
          AppendUtf8(cp, out);
          break;
        }
        default:
          --pos_;
          return Fail("an invalid escape in a string");
      }
    }
  }

  bool NumberValue(JsonValue* v) {
    v->kind = JsonValue::Kind::kNumber;
    const size_t start = pos_;
    if (Literal("NaN")) {
      v->number = std::numeric_limits<double>::quiet_NaN();
    } else if (Literal("Infinity")) {
      v->number = std::numeric_limits<double>::infinity();
    } else if (Literal("-Infinity")) {
      v->number = -std::numeric_limits<double>::infinity();
    } else {
      auto digits = [&] {
        const size_t from = pos_;
        while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
        return pos_ - from;
      };
      if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
      if (pos_ < s_.size() && s_[pos_] == '0') {
        ++pos_;
      } else if (digits() == 0) {
        pos_ = start;
        return Fail("expected a value");
      }
      bool integer = true;
      if (pos_ < s_.size() && s_[pos_] == '.') {
        integer = false;
        ++pos_;
        if (digits() == 0) return Fail("expected digits after '.'");
      }
      if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
        integer = false;
        ++pos_;
        if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
        if (digits() == 0) return Fail("expected digits in an exponent");
      }
      v->integer = integer;
      // from_chars: locale-independent. Out of range it leaves the value alone; strtod (whose
      // decimal point is the C locale's unless a caller changed LC_NUMERIC) then gives Python's
      // answer, +-inf or +-0.
      const absl::string_view literal = s_.substr(start, pos_ - start);
      const std::from_chars_result r =
          std::from_chars(literal.data(), literal.data() + literal.size(), v->number);
      if (r.ec != std::errc()) v->number = std::strtod(std::string(literal).c_str(), nullptr);
    }
    v->text = std::string(s_.substr(start, pos_ - start));
    return true;
  }

  absl::string_view s_;
  size_t pos_ = 0;
  const char* why_ = "";
};

}  // namespace

absl::StatusOr<JsonValue> ParseJson(absl::string_view text) { return Parser(text).Document(); }

}  // namespace h3
