// Reading and writing NumPy .npy files (format versions 1.0, 2.0 and 3.0), for
// the command-line tools, the sweep and the golden-data tests.
//
// Supported: C-order arrays of dtype '|u1' (also spelled 'u1' or '<u1'), '<u2',
// '<i4', '<f4' and '<f8'. Everything else (big-endian, Fortran order, object
// arrays, structured dtypes) is rejected with an error that names the file.
// Data is little-endian on disk; this code assumes a little-endian host.

#ifndef H3_HARNESS_NPY_H_
#define H3_HARNESS_NPY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace h3 {

enum class NpyDtype { kU1, kU2, kI4, kF4, kF8 };

// The descr string numpy writes for `dtype` ("|u1", "<u2", ...).
absl::string_view NpyDtypeName(NpyDtype dtype);
int64_t NpyDtypeSize(NpyDtype dtype);

// Maps a C++ element type to its dtype.
template <typename T>
struct NpyDtypeOf;
template <>
struct NpyDtypeOf<uint8_t> {
  static constexpr NpyDtype kValue = NpyDtype::kU1;
};
template <>
struct NpyDtypeOf<uint16_t> {
  static constexpr NpyDtype kValue = NpyDtype::kU2;
};
template <>
struct NpyDtypeOf<int32_t> {
  static constexpr NpyDtype kValue = NpyDtype::kI4;
};
template <>
struct NpyDtypeOf<float> {
  static constexpr NpyDtype kValue = NpyDtype::kF4;
};
template <>
struct NpyDtypeOf<double> {
  static constexpr NpyDtype kValue = NpyDtype::kF8;
};

// What the header of a .npy file says.
struct NpyHeader {
  NpyDtype dtype = NpyDtype::kU1;
  std::vector<int64_t> shape;  // empty for a 0-d array
  int64_t data_offset = 0;     // bytes from the start of the file to the data
  int64_t NumElements() const;
  std::string ShapeString() const;  // "(3, 4)", "(5,)", "()"
};

// A whole .npy file in memory. `data` holds the raw little-endian bytes.
struct NpyArray {
  NpyHeader header;
  std::vector<uint8_t> data;
};

// A typed array: shape plus elements in C order.
template <typename T>
struct TypedArray {
  std::vector<int64_t> shape;
  std::vector<T> data;
};

// Parses the header of an in-memory .npy image; `name` is used in messages.
absl::StatusOr<NpyHeader> ParseNpyHeader(absl::string_view bytes, absl::string_view name);

// Reads a whole file of any supported dtype. Fails, naming `path`, when the
// file is missing, the header is malformed or unsupported, or the data is
// shorter or longer than the shape says.
absl::StatusOr<NpyArray> ReadNpy(const std::string& path);

// Reads a file whose dtype must be T's; otherwise an InvalidArgument error
// names the file, the expected and the found dtype.
template <typename T>
absl::StatusOr<TypedArray<T>> ReadNpyAs(const std::string& path);

// Writes `data` (C order) with `shape` to `path`, through a temporary file in
// the same folder renamed into place, so a failed write leaves no partial file.
// The element count must equal the product of `shape`.
absl::Status WriteNpyRaw(const std::string& path, NpyDtype dtype, absl::Span<const int64_t> shape,
                         absl::Span<const uint8_t> bytes);

template <typename T>
absl::Status WriteNpy(const std::string& path, absl::Span<const int64_t> shape,
                      absl::Span<const T> data) {
  return WriteNpyRaw(path, NpyDtypeOf<T>::kValue, shape,
                     absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(data.data()),
                                               data.size() * sizeof(T)));
}

// Serializes a header (magic, version, length, dict, padding to a multiple of
// 64 bytes) as numpy.save would; version 1.0 unless the dict needs 2.0.
std::string MakeNpyHeader(NpyDtype dtype, absl::Span<const int64_t> shape);

}  // namespace h3

#endif  // H3_HARNESS_NPY_H_
