// The .npy writer (harness/npy.h): numpy.save's header, data through a temporary file.

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "harness/npy.h"

namespace h3 {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr int64_t kMagicLen = 6;

}  // namespace

std::string MakeNpyHeader(NpyDtype dtype, absl::Span<const int64_t> shape) {
  std::string shape_text;
  if (shape.size() == 1) {
    shape_text = absl::StrCat("(", shape[0], ",)");
  } else {
    shape_text = absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
  }
  std::string dict = absl::StrCat("{'descr': '", NpyDtypeName(dtype),
                                  "', 'fortran_order': False, 'shape': ", shape_text, ", }");
  // numpy pads with spaces and a final newline so that the data starts on a
  // 64-byte boundary; version 2.0 only when the header exceeds 65535 bytes.
  int64_t prelude = 10;
  int major = 1;
  auto padded = [&](int64_t pre) {
    const int64_t unpadded = pre + static_cast<int64_t>(dict.size()) + 1;
    return (unpadded + 63) / 64 * 64 - pre;
  };
  int64_t header_len = padded(prelude);
  if (header_len > 65535) {
    prelude = 12;
    major = 2;
    header_len = padded(prelude);
  }
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(major);
  out += '\0';
  for (int i = 0; i < prelude - 8; ++i) {
    out += static_cast<char>((header_len >> (8 * i)) & 0xff);
  }
  out += dict;
  out.append(header_len - dict.size() - 1, ' ');
  out += '\n';
  return out;
}

absl::Status WriteNpyRaw(const std::string& path, NpyDtype dtype, absl::Span<const int64_t> shape,
                         absl::Span<const uint8_t> bytes) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": cannot write a negative dimension ", d));
    }
    n *= d;
  }
  if (n * NpyDtypeSize(dtype) != static_cast<int64_t>(bytes.size())) {
    return absl::InternalError(absl::StrFormat("%s: %d data bytes do not match shape (%s) of %s",
                                               path, bytes.size(), absl::StrJoin(shape, ", "),
                                               NpyDtypeName(dtype)));
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      return absl::PermissionDeniedError(
          absl::StrCat(path, ": cannot create '", tmp, "': ", std::strerror(errno)));
    }
    const std::string header = MakeNpyHeader(dtype, shape);
    out.write(header.data(), header.size());
    out.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    out.flush();
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      return absl::DataLossError(absl::StrCat(path, ": write failed"));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": cannot rename the written file into place"));
  }
  return absl::OkStatus();
}

}  // namespace h3
