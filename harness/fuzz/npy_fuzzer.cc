// libFuzzer target for the .npy reader (harness/npy.cc), the one parser of untrusted files in
// the project: the in-memory header parser, and the file reader (header, size checks, data)
// through every typed entry point the tools use. Built and run by harness/fuzz/run.sh with
// AddressSanitizer and UndefinedBehaviorSanitizer; any crash, leak or report fails it.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "harness/npy.h"

namespace {

// One scratch file per process, rewritten for every input: ReadNpy reads paths.
const std::string& ScratchPath() {
  static const std::string* path = [] {
    const char* dir = std::getenv("H3_FUZZ_SCRATCH_DIR");
    std::string tmpl = std::string(dir != nullptr ? dir : "/tmp") + "/npy_fuzz_XXXXXX";
    const int fd = mkstemp(tmpl.data());
    if (fd < 0) std::abort();
    close(fd);
    return new std::string(tmpl);
  }();
  return *path;
}

template <typename T>
void ReadTyped(const std::string& path) {
  absl::StatusOr<h3::TypedArray<T>> a = h3::ReadNpyAs<T>(path);
  if (a.ok() && a->data.size() != static_cast<size_t>([&] {
                  int64_t n = 1;
                  for (int64_t d : a->shape) n *= d;
                  return n;
                }())) {
    std::abort();  // an accepted array whose data disagrees with its shape
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<h3::NpyHeader> header = h3::ParseNpyHeader(bytes, "input");
  if (header.ok()) {
    (void)header->NumElements();
    (void)header->ShapeString();
  }

  const std::string& path = ScratchPath();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  absl::StatusOr<h3::NpyArray> any = h3::ReadNpy(path);
  if (any.ok() && static_cast<int64_t>(any->data.size()) !=
                      any->header.NumElements() * h3::NpyDtypeSize(any->header.dtype)) {
    std::abort();
  }
  // One typed reader per input, chosen by the last byte (data, for a valid file), so that each
  // exec costs two file reads, not six.
  switch (size > 0 ? data[size - 1] % 5 : 0) {
    case 0:
      ReadTyped<uint8_t>(path);
      break;
    case 1:
      ReadTyped<uint16_t>(path);
      break;
    case 2:
      ReadTyped<int32_t>(path);
      break;
    case 3:
      ReadTyped<float>(path);
      break;
    default:
      ReadTyped<double>(path);
      break;
  }
  return 0;
}
