"""Repositories for the libraries the build takes from Debian's packages (installed by ./bazelw).

Target names follow the upstream Bazel builds (abseil, googletest, benchmark, eigen) so that
moving to upstream sources later only touches WORKSPACE. Libraries are linked statically where
Debian ships an archive, so binaries built here also run on the GPU machine (which has none of them);
Google Benchmark, which Debian ships shared only, is compiled from Debian's source package.
"""

_LIBDIR = "/usr/lib/x86_64-linux-gnu"
_CUDA = "/usr/local/cuda"

# Abseil packages and the upstream target names this project may use. Every target links the
# whole static Abseil (in one --start-group, since the archives depend on each other); headers
# come from /usr/include.
_ABSL_TARGETS = {
    "algorithm": ["algorithm", "container"],
    "base": ["base", "core_headers", "log_severity"],
    "cleanup": ["cleanup"],
    "container": ["btree", "fixed_array", "flat_hash_map", "flat_hash_set", "inlined_vector", "node_hash_map"],
    "debugging": ["failure_signal_handler", "stacktrace", "symbolize"],
    "flags": ["commandlineflag", "flag", "marshalling", "parse", "reflection", "usage"],
    "functional": ["any_invocable", "bind_front", "function_ref"],
    "hash": ["hash"],
    "memory": ["memory"],
    "meta": ["type_traits"],
    "numeric": ["bits", "int128"],
    "random": ["bit_gen_ref", "distributions", "random"],
    "status": ["status", "statusor"],
    "strings": ["cord", "str_format", "strings"],
    "synchronization": ["synchronization"],
    "time": ["time"],
    "types": ["optional", "span", "variant"],
    "utility": ["utility"],
}

def _absl_impl(ctx):
    archives = sorted([
        str(p)
        for p in ctx.path(_LIBDIR).readdir()
        if p.basename.startswith("libabsl_") and p.basename.endswith(".a")
    ])
    if not archives:
        fail("Debian's libabsl-dev is not installed (no %s/libabsl_*.a); run ./bazelw" % _LIBDIR)
    ctx.file("WORKSPACE", 'workspace(name = "%s")\n' % ctx.name)
    ctx.file("BUILD", "\n".join([
        'package(default_visibility = ["//visibility:public"])',
        "cc_library(",
        '    name = "absl_all",',
        "    linkopts = %s," % repr(["-Wl,--start-group"] + archives + ["-Wl,--end-group", "-pthread"]),
        ")",
        "",
    ]))
    for pkg, names in _ABSL_TARGETS.items():
        ctx.file("absl/%s/BUILD" % pkg, "\n".join(
            ['package(default_visibility = ["//visibility:public"])'] +
            ['alias(name = "%s", actual = "//:absl_all")' % n for n in names],
        ) + "\n")

_absl_repository = repository_rule(implementation = _absl_impl, local = True)

def _symlinked_repo_impl(ctx):
    for src, dst in ctx.attr.links.items():
        if not ctx.path(src).exists:
            fail("%s is missing: %s (run ./bazelw, which installs the Debian packages)" % (src, ctx.attr.hint))
        ctx.symlink(src, dst)
    ctx.file("WORKSPACE", 'workspace(name = "%s")\n' % ctx.name)
    ctx.file("BUILD", ctx.attr.build)

_symlinked_repository = repository_rule(
    implementation = _symlinked_repo_impl,
    attrs = {
        "links": attr.string_dict(),
        "build": attr.string(),
        "hint": attr.string(),
    },
    local = True,
)

_GTEST_BUILD = """
package(default_visibility = ["//visibility:public"])
cc_library(name = "gtest", linkopts = ["{lib}/libgmock.a", "{lib}/libgtest.a", "-pthread"])
cc_library(name = "gtest_main", linkopts = ["{lib}/libgtest_main.a"], deps = [":gtest"])
alias(name = "gmock", actual = ":gtest")
alias(name = "gmock_main", actual = ":gtest_main")
""".format(lib = _LIBDIR)

# Google Benchmark, compiled from Debian's source package (Debian ships the library shared only, and
# benchmark binaries must run on a GPU machine that has nothing but the NVIDIA driver). ./bazelw
# fetches the package once into third_party/benchmark_src/ (git-ignored) and checks the tarball
# against its .dsc; _debian_source_impl checks it against the sha256 pinned here.
_BENCHMARK_VERSION = "1.7.1"
_BENCHMARK_SHA256 = "6430e4092653380d9dc4ccb45a1e2dc9259d581f4866dc0759713126056bc1d7"

# What upstream's CMake build defines on Linux with GCC: its feature checks find std::regex (the
# first regex backend it tries) and std::chrono::steady_clock; BENCHMARK_STATIC_DEFINE makes the
# export macros empty, as in upstream's own (static-only) Bazel build. -O2: the library's timing
# loop is optimized even in fastbuild.
_BENCHMARK_BUILD = """
package(default_visibility = ["//visibility:public"])
licenses(["notice"])  # Apache 2.0
cc_library(
    name = "benchmark",
    srcs = glob(["src/*.cc", "src/*.h"], exclude = ["src/benchmark_main.cc"]),
    hdrs = ["include/benchmark/benchmark.h", "include/benchmark/export.h"],
    copts = ["-O2", "-DHAVE_STD_REGEX", "-DHAVE_STEADY_CLOCK", "-w"],
    defines = ["BENCHMARK_STATIC_DEFINE"],
    includes = ["include"],
    linkopts = ["-pthread"],
    linkstatic = True,
)
cc_library(
    name = "benchmark_main",
    srcs = ["src/benchmark_main.cc"],
    copts = ["-w"],
    linkstatic = True,
    deps = [":benchmark"],
)
"""

# Abseil's translation units that cannot go into a shared object as Debian compiled them (its
# archives are PIE, not PIC): local-exec TLS (sysinfo.cc GetCachedTID, cordz_functions.cc
# cordz_next_sample), initial-exec TLS (cord.cc: static TLS, which dlopen cannot give beside the
# static CUDA runtime's TLS block), a copy-relocated `stderr` (str_format/parser.cc). The Python
# package's library (python/BUILD) recompiles them as PIC from Debian's source package of the very
# version installed (these four files carry no Debian patch); every other abseil member links
# as it is.
_ABSEIL_VERSION = "20220623.1"
_ABSEIL_SHA256 = "abfe2897f3a30edaa74bc34365afe3c2a3cd012091a97dc7e008f7016adcd5fe"
_ABSEIL_PIC_BUILD = """
package(default_visibility = ["//visibility:public"])
licenses(["notice"])  # Apache 2.0
cc_library(
    name = "absl_pic",
    srcs = [
        "absl/base/internal/sysinfo.cc",
        "absl/strings/cord.cc",
        "absl/strings/internal/cordz_functions.cc",
        "absl/strings/internal/str_format/parser.cc",
    ],
    copts = ["-w"],
    alwayslink = True,
    deps = [
        "@com_google_absl//absl/base",
        "@com_google_absl//absl/strings",
        "@com_google_absl//absl/strings:str_format",
    ],
)
"""

# A Debian source package that ./bazelw fetched into third_party/<folder>/, checked once more
# against the sha256 pinned here and extracted into the external repository (never into the
# checkout: tarballs hold BUILD files that `//...` would otherwise pick up).
def _debian_source_impl(ctx):
    root = ctx.path(Label("@//:WORKSPACE")).dirname
    tarball = root.get_child("third_party").get_child(ctx.attr.folder).get_child(
        "%s_%s.orig.tar.gz" % (ctx.attr.package, ctx.attr.version),
    )
    if not tarball.exists:
        fail(("The sources of '%s' are missing: %s. ./bazelw fetches them (Debian's source " +
              "package, once); run the build through ./bazelw on a machine that reaches " +
              "deb.debian.org.") % (ctx.attr.package, tarball))
    result = ctx.execute(["sha256sum", str(tarball)])
    got = result.stdout.split(" ")[0] if result.return_code == 0 else "(sha256sum failed: %s)" % result.stderr
    if got != ctx.attr.sha256:
        fail("%s: sha256 %s, expected %s (delete third_party/%s/ and run ./bazelw again)" %
             (tarball, got, ctx.attr.sha256, ctx.attr.folder))
    ctx.extract(tarball, stripPrefix = ctx.attr.strip_prefix)
    # Upstream's own Bazel files (they need repositories this workspace does not have, and nested
    # packages would cut the one BUILD file below off from the sources).
    for f in ctx.attr.delete:
        ctx.delete(f)
    ctx.execute(["find", ".", "-mindepth", "2", "(", "-name", "BUILD", "-o", "-name", "BUILD.bazel",
                 ")", "-delete"])
    ctx.file("WORKSPACE", 'workspace(name = "%s")\n' % ctx.name)
    ctx.file("BUILD", ctx.attr.build)

_debian_source_repository = repository_rule(
    implementation = _debian_source_impl,
    attrs = {
        "package": attr.string(),
        "version": attr.string(),
        "sha256": attr.string(),
        "folder": attr.string(),
        "strip_prefix": attr.string(),
        "delete": attr.string_list(),
        "build": attr.string(),
    },
    local = True,
)

_EIGEN_BUILD = """
package(default_visibility = ["//visibility:public"])
cc_library(
    name = "eigen",
    hdrs = glob(["Eigen/**", "unsupported/Eigen/**"]),
    includes = ["."],
    defines = ["EIGEN_MPL2_ONLY"],
)
"""

_NLOHMANN_JSON_BUILD = """
package(default_visibility = ["//visibility:public"])
cc_library(
    name = "json",
    hdrs = glob(["nlohmann/**"]),
    includes = ["."],
)
"""

_CUDA_BUILD = """
package(default_visibility = ["//visibility:public"])
cc_library(
    name = "cuda_headers",
    hdrs = glob(["include/**"]),
    includes = ["include"],
)
# The CUDA runtime, linked statically: binaries need only the driver where they run.
cc_library(
    name = "cudart",
    linkopts = ["{cuda}/lib64/libcudart_static.a", "-ldl", "-lrt", "-lpthread"],
    deps = [":cuda_headers"],
)
# cuBLAS / cuBLASLt (benchmark baselines only), linked dynamically (the static archives are huge).
cc_library(
    name = "cublas",
    linkopts = ["-L{cuda}/lib64", "-lcublasLt", "-lcublas", "-Wl,-rpath,{cuda}/lib64"],
    deps = [":cudart"],
)
filegroup(name = "nvcc", srcs = ["bin/nvcc"])
""".format(cuda = _CUDA)

def system_library_repositories():
    _absl_repository(name = "com_google_absl")
    _symlinked_repository(
        name = "com_google_googletest",
        links = {_LIBDIR + "/libgtest.a": "libgtest.a"},
        build = _GTEST_BUILD,
        hint = "Debian's libgtest-dev and libgmock-dev",
    )
    _debian_source_repository(
        name = "com_google_benchmark",
        package = "benchmark",
        version = _BENCHMARK_VERSION,
        sha256 = _BENCHMARK_SHA256,
        folder = "benchmark_src",
        strip_prefix = "benchmark-%s" % _BENCHMARK_VERSION,
        delete = ["BUILD.bazel", "WORKSPACE", "bindings", "test", "tools"],
        build = _BENCHMARK_BUILD,
    )
    _debian_source_repository(
        name = "absl_pic",
        package = "abseil",
        version = _ABSEIL_VERSION,
        sha256 = _ABSEIL_SHA256,
        folder = "abseil_src",
        strip_prefix = "abseil-%s" % _ABSEIL_VERSION,
        delete = ["BUILD.bazel", "WORKSPACE", "CMake", "ci"],
        build = _ABSEIL_PIC_BUILD,
    )
    _symlinked_repository(
        name = "eigen",
        links = {
            "/usr/include/eigen3/Eigen": "Eigen",
            "/usr/include/eigen3/unsupported": "unsupported",
        },
        build = _EIGEN_BUILD,
        hint = "Debian's libeigen3-dev",
    )
    _symlinked_repository(
        name = "nlohmann_json",
        links = {"/usr/include/nlohmann": "nlohmann"},
        build = _NLOHMANN_JSON_BUILD,
        hint = "Debian's nlohmann-json3-dev",
    )
    _symlinked_repository(
        name = "cuda",
        links = {
            _CUDA + "/include": "include",
            _CUDA + "/bin": "bin",
        },
        build = _CUDA_BUILD,
        hint = "the CUDA Toolkit 13 at /usr/local/cuda",
    )
