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
    "flags": ["flag", "parse", "usage", "marshalling"],
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
# against its .dsc; this rule checks it once more against the sha256 pinned here (the version this
# BUILD file was written for) and extracts it into the external repository, never into the
# checkout (the tarball holds BUILD files that `//...` would otherwise pick up).
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

def _benchmark_source_impl(ctx):
    root = ctx.path(Label("@//:WORKSPACE")).dirname
    tarball = root.get_child("third_party").get_child("benchmark_src").get_child(
        "benchmark_%s.orig.tar.gz" % _BENCHMARK_VERSION,
    )
    if not tarball.exists:
        fail(("Google Benchmark's sources are missing: %s. ./bazelw fetches them (Debian's " +
              "'benchmark' source package, once); run the build through ./bazelw on a machine " +
              "that reaches deb.debian.org.") % tarball)
    result = ctx.execute(["sha256sum", str(tarball)])
    got = result.stdout.split(" ")[0] if result.return_code == 0 else "(sha256sum failed: %s)" % result.stderr
    if got != _BENCHMARK_SHA256:
        fail("%s: sha256 %s, expected %s (delete third_party/benchmark_src/ and run ./bazelw again)" %
             (tarball, got, _BENCHMARK_SHA256))
    ctx.extract(tarball, stripPrefix = "benchmark-%s" % _BENCHMARK_VERSION)
    # Upstream's own Bazel files (they need repositories this workspace does not have).
    for f in ["BUILD.bazel", "WORKSPACE", "bindings", "test", "tools"]:
        ctx.delete(f)
    ctx.file("WORKSPACE", 'workspace(name = "%s")\n' % ctx.name)
    ctx.file("BUILD", _BENCHMARK_BUILD)

_benchmark_source_repository = repository_rule(implementation = _benchmark_source_impl, local = True)

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
    _benchmark_source_repository(name = "com_google_benchmark")
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
