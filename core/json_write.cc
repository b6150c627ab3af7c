// The writer half of core/json.h: values made in code, and Python's json.dump(indent=1,
// sort_keys=True) layout.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "core/json.h"

namespace h3 {

JsonValue JsonValue::String(std::string s) {
  JsonValue v;
  v.kind = Kind::kString;
  v.text = std::move(s);
  return v;
}

JsonValue JsonValue::Integer(int64_t i) {
  JsonValue v;
  v.kind = Kind::kNumber;
  v.number = static_cast<double>(i);
  v.integer = true;
  v.text = std::to_string(i);
  return v;
}

JsonValue JsonValue::Number(double d) {
  JsonValue v;
  v.kind = Kind::kNumber;
  v.number = d;
  // Python's float repr: the shortest digits that read back as d, in scientific notation when
  // the first digit's decimal exponent is below -4 or at least 16 ("1e-05",
  // "1.2345678901234568e+17"), else positional with ".0" on an integral value ("0.0001").
  if (!std::isfinite(d)) {  // Python's json.dump spelling (the reader takes it back)
    v.text = std::isnan(d) ? "NaN" : (d > 0 ? "Infinity" : "-Infinity");
    return v;
  }
  char buf[64];
  std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  const std::string sci(buf, r.ptr);
  const size_t e = sci.find('e');
  const int exp10 = e == std::string::npos ? 0 : std::atoi(sci.c_str() + e + 1);
  if (d != 0 && (exp10 < -4 || exp10 >= 16)) {
    v.text = sci;
  } else {
    r = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::fixed);
    v.text.assign(buf, r.ptr);
    if (v.text.find('.') == std::string::npos) v.text += ".0";
  }
  return v;
}

JsonValue JsonValue::Object() {
  JsonValue v;
  v.kind = Kind::kObject;
  return v;
}

JsonValue JsonValue::Array() {
  JsonValue v;
  v.kind = Kind::kArray;
  return v;
}

namespace {

void WriteString(absl::string_view s, std::string* out) {
  out->push_back('"');
  size_t i = 0;
  const auto* b = reinterpret_cast<const unsigned char*>(s.data());
  auto u_escape = [out](uint32_t unit) { absl::StrAppendFormat(out, "\\u%04x", unit); };
  while (i < s.size()) {
    const unsigned c = b[i];
    if (c < 0x80) {
      switch (c) {
        case '"':
          *out += "\\\"";
          break;
        case '\\':
          *out += "\\\\";
          break;
        case '\n':
          *out += "\\n";
          break;
        case '\r':
          *out += "\\r";
          break;
        case '\t':
          *out += "\\t";
          break;
        case '\b':
          *out += "\\b";
          break;
        case '\f':
          *out += "\\f";
          break;
        default:
          if (c >= 0x20 && c < 0x7F) {
            out->push_back(static_cast<char>(c));
          } else {
            u_escape(c);
          }
      }
      ++i;
      continue;
    }
    // A multi-byte sequence (valid: it came from ParseJson or from our own ASCII keys); a
    // malformed byte is written as U+FFFD rather than passed through.
    int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    if (len == 0 || i + len > s.size()) {
      u_escape(0xFFFD);
      ++i;
      continue;
    }
    uint32_t cp = c & (0x7Fu >> len);
    for (int j = 1; j < len; ++j) cp = (cp << 6) | (b[i + j] & 0x3Fu);
    if (cp >= 0x10000) {
      cp -= 0x10000;
      u_escape(0xD800 + (cp >> 10));
      u_escape(0xDC00 + (cp & 0x3FF));
    } else {
      u_escape(cp);
    }
    i += len;
  }
  out->push_back('"');
}

void Write(const JsonValue& v, int indent, std::string* out) {
  const auto newline = [out](int n) {
    out->push_back('\n');
    out->append(static_cast<size_t>(n), ' ');
  };
  switch (v.kind) {
    case JsonValue::Kind::kNull:
      *out += "null";
      return;
    case JsonValue::Kind::kBool:
      *out += v.boolean ? "true" : "false";
      return;
    case JsonValue::Kind::kNumber:
      *out += v.text;
      return;
    case JsonValue::Kind::kString:
      WriteString(v.text, out);
      return;
    case JsonValue::Kind::kArray:
      if (v.array.empty()) {
        *out += "[]";
        return;
      }
      out->push_back('[');
      for (size_t i = 0; i < v.array.size(); ++i) {
        if (i > 0) out->push_back(',');
        newline(indent + 1);
        Write(v.array[i], indent + 1, out);
      }
      newline(indent);
      out->push_back(']');
      return;
    case JsonValue::Kind::kObject: {
      if (v.object.empty()) {
        *out += "{}";
        return;
      }
      // sort_keys: Python compares code points; UTF-8 byte order is the same order.
      std::vector<const std::pair<std::string, JsonValue>*> members;
      for (const auto& m : v.object) members.push_back(&m);
      std::sort(members.begin(), members.end(),
                [](const auto* a, const auto* b) { return a->first < b->first; });
      out->push_back('{');
      for (size_t i = 0; i < members.size(); ++i) {
        if (i > 0) out->push_back(',');
        newline(indent + 1);
        WriteString(members[i]->first, out);
        *out += ": ";
        Write(members[i]->second, indent + 1, out);
      }
      newline(indent);
      out->push_back('}');
      return;
    }
  }
}

}  // namespace

std::string WriteJson(const JsonValue& value) {
  std::string out;
  Write(value, 0, &out);
  return out;
}

}  // namespace h3
