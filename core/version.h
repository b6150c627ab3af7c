#ifndef H3_CORE_VERSION_H_
#define H3_CORE_VERSION_H_

// The project's version, printed by every command-line tool's --version. The Python package's
// __version__ (python/minimax_h3_nvfp4/__init__.py) must say the same; //python:api_test
// (DocAndVersionTest) checks that they agree.
#define H3_VERSION "0.1.0"

namespace h3 {
inline constexpr char kVersion[] = H3_VERSION;
}  // namespace h3

#endif  // H3_CORE_VERSION_H_
