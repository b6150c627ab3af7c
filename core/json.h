// A small JSON reader and writer for the project's own files (the tuning cache,
// kernels/tune_cache.h). It reads what Python's json.loads reads (RFC 8259, plus NaN, Infinity
// and -Infinity), with two limits json.loads does not have: nesting at most kJsonMaxDepth deep
// and no more than kJsonMaxBytes of text. Any byte string gives a value or an error with its
// offset, never a crash (fuzz-friendly: no recursion deeper than kJsonMaxDepth, no exceptions).
// Text that is not valid UTF-8 is refused, as Python's decoder refuses it.
//
// The writer lays values out as Python's json.dump(value, indent=1, sort_keys=True) does
// (ensure_ascii: every byte outside ' '..'~' escaped), so files from either language read alike.

#ifndef H3_CORE_JSON_H_
#define H3_CORE_JSON_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace h3 {

inline constexpr int kJsonMaxDepth = 64;
inline constexpr size_t kJsonMaxBytes = size_t{1} << 20;  // our files: a few KiB

struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;     // kNumber
  bool integer = false;  // kNumber written without fraction or exponent (Python: an int)
  std::string text;      // kString: the UTF-8 value; kNumber: the literal as written
  std::vector<JsonValue> array;
  // kObject: the members, keys unique (a repeated key keeps its last value, as in Python).
  std::vector<std::pair<std::string, JsonValue>> object;

  static JsonValue String(std::string s);
  static JsonValue Integer(int64_t v);
  static JsonValue Number(double v);  // non-finite: NaN, Infinity, -Infinity (as Python)
  static JsonValue Object();
  static JsonValue Array();

  // The member `key` of an object, or nullptr (also when this is not an object).
  const JsonValue* Find(absl::string_view key) const;
  // The member `key` of an object, added (as null) if missing.
  JsonValue& Set(absl::string_view key);
  // A Python-like type name for messages: "object", "array", "string", "number", ...
  const char* TypeName() const;
  // The value as an int64 when it is an integer literal in range, else false.
  bool AsInt64(int64_t* out) const;
};

// Parses `text`; InvalidArgument naming what is wrong and the byte offset where.
absl::StatusOr<JsonValue> ParseJson(absl::string_view text);

// Python's json.dump(value, indent=1, sort_keys=True) layout, without a final newline.
std::string WriteJson(const JsonValue& value);

}  // namespace h3

#endif  // H3_CORE_JSON_H_
