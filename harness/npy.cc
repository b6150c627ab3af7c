#include "harness/npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

// The data is copied byte for byte into host arrays: only correct on a
// little-endian host, which every target of this project is.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "npy.cc assumes a little-endian host");

namespace h3 {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr int64_t kMagicLen = 6;

absl::Status Bad(absl::string_view name, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(name, ": ", what));
}

// A cursor over the header dict text, e.g.
// {'descr': '<u2', 'fortran_order': False, 'shape': (3, 4), }
class DictParser {
 public:
  DictParser(absl::string_view text, absl::string_view name) : text_(text), name_(name) {}

  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Eat(char c) {
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool AtEnd() {
    SkipSpace();
    return pos_ >= text_.size();
  }
  absl::Status Error(absl::string_view what) const {
    return Bad(name_, absl::StrFormat("malformed .npy header (%s at offset %d "
                                      "of the dict %s)",
                                      what, pos_, Quote(text_)));
  }
  absl::StatusOr<std::string> String() {
    SkipSpace();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
      return Error("expected a quoted string");
    }
    const char quote = text_[pos_++];
    const size_t end = text_.find(quote, pos_);
    if (end == absl::string_view::npos) return Error("unterminated string");
    std::string out(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return out;
  }
  absl::StatusOr<bool> Bool() {
    SkipSpace();
    for (const auto& [word, value] :
         {std::pair<absl::string_view, bool>{"True", true}, {"False", false}}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    return Error("expected True or False");
  }
  absl::StatusOr<std::vector<int64_t>> Tuple() {
    if (!Eat('(')) return Error("expected '(' to open the shape tuple");
    std::vector<int64_t> dims;
    while (true) {
      if (Eat(')')) break;
      SkipSpace();
      int64_t v = 0;
      size_t digits = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        const int d = text_[pos_] - '0';
        if (v > (std::numeric_limits<int64_t>::max() - d) / 10) {
          return Error("shape dimension overflows int64");
        }
        v = v * 10 + d;
        ++pos_;
        ++digits;
      }
      if (digits == 0) return Error("expected a non-negative integer in shape");
      if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 long
      dims.push_back(v);
      if (Eat(',')) continue;
      if (Eat(')')) break;
      return Error("expected ',' or ')' in shape");
    }
    return dims;
  }

 private:
  static std::string Quote(absl::string_view s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '\n') {
        out += "\\n";
      } else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
        out += absl::StrFormat("\\x%02x", static_cast<unsigned char>(c));
      } else {
        out += c;
      }
    }
    return out + "\"";
  }
  absl::string_view text_;
  absl::string_view name_;
  size_t pos_ = 0;
};

// How each dtype is called in messages, beside its descr.
const char* PlainName(NpyDtype dtype) {
  switch (dtype) {
    case NpyDtype::kU1:
      return "uint8";
    case NpyDtype::kU2:
      return "uint16";
    case NpyDtype::kI4:
      return "int32";
    case NpyDtype::kF4:
      return "float32";
    case NpyDtype::kF8:
      return "float64";
  }
  return "?";
}

std::string Described(NpyDtype dtype) {
  return absl::StrCat("'", NpyDtypeName(dtype), "' (", PlainName(dtype), ")");
}

absl::StatusOr<NpyDtype> DescrDtype(const std::string& descr) {
  // One-byte types have no byte order; numpy writes '|u1' but accepts these.
  if (descr == "|u1" || descr == "u1" || descr == "<u1" || descr == ">u1" || descr == "=u1") {
    return NpyDtype::kU1;
  }
  if (descr == "<u2") return NpyDtype::kU2;
  if (descr == "<i4") return NpyDtype::kI4;
  if (descr == "<f4") return NpyDtype::kF4;
  if (descr == "<f8") return NpyDtype::kF8;
  return absl::NotFoundError(descr);
}

// `expected`: the one dtype the caller takes, named in the error instead of the whole list.
absl::StatusOr<NpyDtype> ParseDescr(const std::string& descr, absl::string_view name,
                                    const std::optional<NpyDtype>& expected) {
  absl::StatusOr<NpyDtype> dtype = DescrDtype(descr);
  const bool big_endian = !descr.empty() && descr[0] == '>';
  if (expected.has_value() && (!dtype.ok() || *dtype != *expected)) {
    return Bad(name, absl::StrCat("dtype is '", descr, "'",
                                  dtype.ok()   ? absl::StrCat(" (", PlainName(*dtype), ")")
                                  : big_endian ? " (big-endian)"
                                               : "",
                                  ", expected ", Described(*expected)));
  }
  if (dtype.ok()) return dtype;
  if (big_endian) {
    return Bad(name, absl::StrCat("big-endian dtype '", descr,
                                  "' is not supported; save the array with "
                                  "a little-endian dtype ('<...')"));
  }
  return Bad(name, absl::StrCat("unsupported dtype '", descr,
                                "'; this reader takes '|u1' (uint8), '<u2' (uint16), '<i4' "
                                "(int32), '<f4' (float32) and '<f8' (float64)"));
}

absl::StatusOr<NpyHeader> ParseHeader(absl::string_view bytes, absl::string_view name,
                                      const std::optional<NpyDtype>& expected);

// Reads the fixed prelude and the header dict from `in`.
absl::StatusOr<NpyHeader> ReadHeader(std::ifstream& in, const std::string& path,
                                     const std::optional<NpyDtype>& expected) {
  char prelude[12];
  in.read(prelude, 10);
  if (in.gcount() < 10) {
    return Bad(path, absl::StrFormat("not a .npy file: %d bytes, shorter than "
                                     "the 10-byte prelude",
                                     in.gcount()));
  }
  if (std::memcmp(prelude, kMagic, kMagicLen) != 0) {
    return Bad(path, "not a .npy file: the magic string \\x93NUMPY is missing");
  }
  const int major = static_cast<unsigned char>(prelude[6]);
  int64_t prelude_len = 10;
  if (major == 2 || major == 3) {
    in.read(prelude + 10, 2);
    if (in.gcount() < 2) return Bad(path, "truncated .npy header length");
    prelude_len = 12;
  } else if (major != 1) {
    return Bad(path, absl::StrFormat("unsupported .npy format version %d.%d "
                                     "(supported: 1.0, 2.0, 3.0)",
                                     major, static_cast<unsigned char>(prelude[7])));
  }
  std::string image(prelude, prelude_len);
  // Real headers are a few hundred bytes; a huge length means a corrupt file.
  constexpr int64_t kMaxHeaderLen = 1 << 24;
  const int64_t header_len =
      major == 1
          ? (static_cast<unsigned char>(prelude[8]) | static_cast<unsigned char>(prelude[9]) << 8)
          : (static_cast<int64_t>(static_cast<unsigned char>(prelude[8])) |
             static_cast<int64_t>(static_cast<unsigned char>(prelude[9])) << 8 |
             static_cast<int64_t>(static_cast<unsigned char>(prelude[10])) << 16 |
             static_cast<int64_t>(static_cast<unsigned char>(prelude[11])) << 24);
  if (header_len > kMaxHeaderLen) {
    return Bad(path, absl::StrFormat("malformed .npy header: length %d is "
                                     "implausible (max %d)",
                                     header_len, kMaxHeaderLen));
  }
  image.resize(prelude_len + header_len);
  in.read(image.data() + prelude_len, header_len);
  if (in.gcount() < header_len) {
    return Bad(path, absl::StrFormat("truncated .npy header: the prelude "
                                     "announces %d bytes, the file has %d",
                                     header_len, in.gcount()));
  }
  return ParseHeader(image, path, expected);
}

}  // namespace

absl::string_view NpyDtypeName(NpyDtype dtype) {
  switch (dtype) {
    case NpyDtype::kU1:
      return "|u1";
    case NpyDtype::kU2:
      return "<u2";
    case NpyDtype::kI4:
      return "<i4";
    case NpyDtype::kF4:
      return "<f4";
    case NpyDtype::kF8:
      return "<f8";
  }
  return "?";
}

int64_t NpyDtypeSize(NpyDtype dtype) {
  switch (dtype) {
    case NpyDtype::kU1:
      return 1;
    case NpyDtype::kU2:
      return 2;
    case NpyDtype::kI4:
    case NpyDtype::kF4:
      return 4;
    case NpyDtype::kF8:
      return 8;
  }
  return 0;
}

int64_t NpyHeader::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string NpyHeader::ShapeString() const {
  if (shape.size() == 1) return absl::StrCat("(", shape[0], ",)");
  return absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
}

absl::StatusOr<NpyHeader> ParseNpyHeader(absl::string_view bytes, absl::string_view name) {
  return ParseHeader(bytes, name, std::nullopt);
}

namespace {

absl::StatusOr<NpyHeader> ParseHeader(absl::string_view bytes, absl::string_view name,
                                      const std::optional<NpyDtype>& expected) {
  if (bytes.size() < 10 || bytes.substr(0, kMagicLen) != kMagic) {
    return Bad(name, "not a .npy file: the magic string \\x93NUMPY is missing");
  }
  const int major = static_cast<unsigned char>(bytes[6]);
  const int minor = static_cast<unsigned char>(bytes[7]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    return Bad(name, absl::StrFormat("unsupported .npy format version %d.%d "
                                     "(supported: 1.0, 2.0, 3.0)",
                                     major, minor));
  }
  int64_t prelude_len = 10;
  int64_t header_len = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9])
                                                                  << 8;
  if (major >= 2) {
    if (bytes.size() < 12) return Bad(name, "truncated .npy header length");
    prelude_len = 12;
    header_len |= static_cast<int64_t>(static_cast<unsigned char>(bytes[10])) << 16 |
                  static_cast<int64_t>(static_cast<unsigned char>(bytes[11])) << 24;
  }
  if (static_cast<int64_t>(bytes.size()) < prelude_len + header_len) {
    return Bad(name, absl::StrFormat("truncated .npy header: the prelude "
                                     "announces %d bytes, the file has %d",
                                     header_len, bytes.size() - prelude_len));
  }
  const absl::string_view dict = bytes.substr(prelude_len, header_len);
  // Version 1 and 2 headers are latin-1, version 3 utf-8; the dict we accept
  // is plain ASCII either way, so non-ASCII bytes fail the parse below.
  if (dict.empty() || dict.back() != '\n') {
    return Bad(name, "malformed .npy header: it does not end with a newline");
  }
  DictParser p(dict, name);
  if (!p.Eat('{')) return p.Error("expected '{'");
  bool have_descr = false, have_fortran = false, have_shape = false;
  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
  while (!p.Eat('}')) {
    absl::StatusOr<std::string> key = p.String();
    if (!key.ok()) return key.status();
    if (!p.Eat(':')) return p.Error("expected ':' after a key");
    if (*key == "descr") {
      absl::StatusOr<std::string> v = p.String();
      if (!v.ok()) return v.status();
      descr = *v;
      have_descr = true;
    } else if (*key == "fortran_order") {
      absl::StatusOr<bool> v = p.Bool();
      if (!v.ok()) return v.status();
      fortran = *v;
      have_fortran = true;
    } else if (*key == "shape") {
      absl::StatusOr<std::vector<int64_t>> v = p.Tuple();
      if (!v.ok()) return v.status();
      shape = *std::move(v);
      have_shape = true;
    } else {
      return p.Error(absl::StrCat("unexpected key '", *key, "'"));
    }
    if (p.Eat(',')) continue;
    if (p.Eat('}')) break;
    return p.Error("expected ',' or '}'");
  }
  if (!p.AtEnd()) return p.Error("unexpected text after the dict");
  if (!have_descr || !have_fortran || !have_shape) {
    return Bad(name,
               "malformed .npy header: the dict must have the keys 'descr', "
               "'fortran_order' and 'shape'");
  }
  absl::StatusOr<NpyDtype> dtype = ParseDescr(descr, name, expected);
  if (!dtype.ok()) return dtype.status();
  NpyHeader h;
  h.dtype = *dtype;
  h.shape = std::move(shape);
  h.data_offset = prelude_len + header_len;
  // Overflow check on the byte count: the product must fit in int64.
  int64_t bytes_total = NpyDtypeSize(h.dtype);
  for (int64_t d : h.shape) {
    if (d != 0 && bytes_total > std::numeric_limits<int64_t>::max() / d) {
      return Bad(name,
                 absl::StrCat("shape ", h.ShapeString(), " is too large (byte count overflows)"));
    }
    bytes_total *= d;
  }
  if (fortran) {
    return Bad(name, absl::StrCat("fortran_order is True (shape ", h.ShapeString(),
                                  "); only C-order arrays are supported: save "
                                  "np.ascontiguousarray(a)"));
  }
  return h;
}

// Opens `path`, parses the header and checks the data size against the shape.
absl::Status OpenNpy(const std::string& path, std::ifstream& in, NpyHeader& header,
                     const std::optional<NpyDtype>& expected) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Bad(path, "is a directory, expected a .npy file");
  }
  in.open(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (!std::filesystem::exists(path, ec)) {
      return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    }
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot open: ", std::strerror(err)));
  }
  absl::StatusOr<NpyHeader> h = ReadHeader(in, path, expected);
  if (!h.ok()) return h.status();
  header = *std::move(h);
  const int64_t file_size = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  if (ec) return Bad(path, absl::StrCat("cannot stat: ", ec.message()));
  const int64_t want = header.NumElements() * NpyDtypeSize(header.dtype);
  const int64_t have = file_size - header.data_offset;
  if (have < want) {
    return Bad(path, absl::StrFormat("truncated data: shape %s of %s needs %d "
                                     "bytes, the file has %d",
                                     header.ShapeString(), NpyDtypeName(header.dtype), want, have));
  }
  if (have > want) {
    return Bad(
        path, absl::StrFormat("%d unexpected trailing bytes after the "
                              "%d bytes of shape %s of %s",
                              have - want, want, header.ShapeString(), NpyDtypeName(header.dtype)));
  }
  return absl::OkStatus();
}

absl::Status ReadData(std::ifstream& in, const std::string& path, void* dst, int64_t bytes) {
  in.read(static_cast<char*>(dst), bytes);
  if (in.gcount() != bytes) {
    return absl::DataLossError(
        absl::StrFormat("%s: read %d of %d data bytes", path, in.gcount(), bytes));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<NpyArray> ReadNpy(const std::string& path) {
  std::ifstream in;
  NpyArray a;
  if (absl::Status s = OpenNpy(path, in, a.header, std::nullopt); !s.ok()) return s;
  a.data.resize(a.header.NumElements() * NpyDtypeSize(a.header.dtype));
  if (absl::Status s = ReadData(in, path, a.data.data(), a.data.size()); !s.ok()) {
    return s;
  }
  return a;
}

template <typename T>
absl::StatusOr<TypedArray<T>> ReadNpyAs(const std::string& path) {
  std::ifstream in;
  NpyHeader h;
  if (absl::Status s = OpenNpy(path, in, h, NpyDtypeOf<T>::kValue); !s.ok()) return s;
  TypedArray<T> a;
  a.shape = h.shape;
  a.data.resize(h.NumElements());
  if (absl::Status s = ReadData(in, path, a.data.data(), a.data.size() * sizeof(T)); !s.ok()) {
    return s;
  }
  return a;
}

template absl::StatusOr<TypedArray<uint8_t>> ReadNpyAs(const std::string&);
template absl::StatusOr<TypedArray<uint16_t>> ReadNpyAs(const std::string&);
template absl::StatusOr<TypedArray<int32_t>> ReadNpyAs(const std::string&);
template absl::StatusOr<TypedArray<float>> ReadNpyAs(const std::string&);
template absl::StatusOr<TypedArray<double>> ReadNpyAs(const std::string&);

}  // namespace h3
