"""cuda_library: compiles .cu sources with nvcc 13 and exposes them as a cc_library.

Written here because rules_cuda cannot be downloaded. Each .cu becomes one object holding SASS
for every architecture in `archs` (a fat binary; the CUDA runtime picks the one matching the
device). Headers in `hdrs` and the transitive headers of `deps` are inputs, so editing a .cuh
rebuilds what includes it. Flags: -O3 -lineinfo, never fast-math, no flush-to-zero.

Configuration:
  --define=cuda_archs=sm_120f[,sm_90a]  overrides `archs` for every target (.bazelrc: --config=sm120)
  --define=cuda_ptxas_verbose=1         also prints ptxas' resource report (.bazelrc: --config=ptxas)
The report (registers, shared memory, spills per kernel) is always written beside the object as
<name>_<src>.ptxas.txt in bazel-bin.

Build gates (ptxas_gate.sh), on by default (`ptxas_gate = True`): the compile fails when ptxas
reports spill stores or loads in a function built for one of `gated_archs` (default: the SM12x
family build, sm_120f; the sm_90a validation builds spill, known and accepted), or ignores
setmaxnreg (C7506 and its kin) for any architecture. Host code is compiled by g++ through nvcc
with H3_WARNINGS (tools/build/copts.bzl) as errors, less -Wmissing-declarations (_HOST_WARNINGS).
"""

load("//tools/build:copts.bzl", "H3_WARNINGS")

_NVCC = "/usr/local/cuda/bin/nvcc"

# nvcc passes its own headers to g++ with -I; as a system directory they trip no warning (g++
# drops an -I that repeats an -isystem).
_CUDA_INCLUDE = "/usr/local/cuda/targets/x86_64-linux/include"

# The project's warnings for the host code g++ compiles through nvcc, less -Wmissing-declarations:
# nvcc's front end renames anonymous namespaces (_GLOBAL__N_...), so every function in one would
# trip it.
_HOST_WARNINGS = [w for w in H3_WARNINGS if w != "-Wmissing-declarations"] + ["-Werror"]

# Architecture name -> nvcc -gencode. The `a` variants are needed for wgmma/setmaxnreg (sm_90a);
# the block-scaled mma.sync needs sm_120a or the family target sm_120f (PTX 8.8+), whose SASS runs
# on every SM12x part (RTX 50xx, RTX PRO 6000: sm_120; GB10: sm_121).
_GENCODE = {
    "sm_90a": "-gencode=arch=compute_90a,code=sm_90a",
    "sm_100a": "-gencode=arch=compute_100a,code=sm_100a",
    "sm_120a": "-gencode=arch=compute_120a,code=sm_120a",
    "sm_120f": "-gencode=arch=compute_120f,code=sm_120f",
}

def _archs(ctx):
    override = ctx.var.get("cuda_archs", "")
    archs = override.split(",") if override else ctx.attr.archs
    for a in archs:
        if a not in _GENCODE:
            fail("unknown CUDA architecture '%s' (known: %s)" % (a, ", ".join(_GENCODE.keys())))
    return archs

def _cuda_objects_impl(ctx):
    archs = _archs(ctx)
    verbose = ctx.var.get("cuda_ptxas_verbose", "0") == "1"
    dep_headers = []
    includes = []
    system_includes = []  # third-party headers (the CUDA Toolkit's): exempt from the warnings
    for dep in ctx.attr.deps:
        cc = dep[CcInfo].compilation_context
        dep_headers.append(cc.headers)
        includes += cc.includes.to_list() + cc.quote_includes.to_list()
        system_includes += cc.system_includes.to_list()
    headers = depset(ctx.files.hdrs, transitive = dep_headers)

    objs = []
    reports = []
    for src in ctx.files.srcs:
        stem = src.basename[:-len(src.extension) - 1]
        obj = ctx.actions.declare_file("_objs/%s/%s.pic.o" % (ctx.label.name, stem))
        report = ctx.actions.declare_file("%s_%s.ptxas.txt" % (ctx.attr.library_name, stem))
        args = ctx.actions.args()
        args.add_all([report, "1" if verbose else "0"])
        args.add(ctx.file._gate.path if ctx.attr.ptxas_gate else "")
        args.add(",".join(ctx.attr.gated_archs))
        args.add(src.short_path)
        args.add(_NVCC)
        args.add_all(["-c", "-std=c++17", "-O3", "-lineinfo", "-Xptxas=-v"])
        args.add_all(["-Xcompiler=-fPIC", "-Xcompiler=-ffp-contract=off"])
        args.add_all(_HOST_WARNINGS, format_each = "-Xcompiler=%s")
        args.add("-Xcompiler=-isystem," + _CUDA_INCLUDE)
        args.add_all([_GENCODE[a] for a in archs])
        args.add_all(["-I.", "-I" + ctx.bin_dir.path, "-I" + ctx.genfiles_dir.path])
        args.add_all(depset(includes), format_each = "-I%s")
        args.add_all(depset(system_includes), format_each = "--system-include=%s")
        args.add_all(ctx.attr.defines, format_each = "-D%s")
        args.add_all(ctx.attr.copts)
        args.add_all(["-o", obj, src])
        ctx.actions.run(
            executable = ctx.executable._wrapper,
            arguments = [args],
            inputs = depset([src, ctx.file._gate], transitive = [headers]),
            outputs = [obj, report],
            mnemonic = "NvccCompile",
            progress_message = "nvcc %s (%s)" % (src.short_path, ", ".join(archs)),
            use_default_shell_env = True,
        )
        objs.append(obj)
        reports.append(report)
    return [
        DefaultInfo(files = depset(objs)),
        OutputGroupInfo(ptxas_reports = depset(reports)),
    ]

_cuda_objects = rule(
    implementation = _cuda_objects_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = [".cu"]),
        "hdrs": attr.label_list(allow_files = True),
        "deps": attr.label_list(providers = [CcInfo]),
        "archs": attr.string_list(),
        "defines": attr.string_list(),
        "copts": attr.string_list(),
        "library_name": attr.string(),
        "ptxas_gate": attr.bool(),
        "gated_archs": attr.string_list(),
        "_gate": attr.label(default = "//tools/cuda:ptxas_gate.sh", allow_single_file = True),
        "_wrapper": attr.label(
            default = "//tools/cuda:nvcc_wrapper",
            executable = True,
            cfg = "exec",
        ),
    },
)

def cuda_library(
        name,
        srcs,
        hdrs = [],
        deps = [],
        archs = ["sm_90a", "sm_120f"],
        defines = [],
        copts = [],
        ptxas_gate = True,
        gated_archs = ["sm_120f"],
        visibility = None,
        tags = [],
        testonly = False,
        **kwargs):
    """A cc_library made of nvcc-compiled .cu sources (see the module docstring).

    ptxas_gate: fail the build on spills in `gated_archs` or an ignored setmaxnreg (any arch).
    """
    _cuda_objects(
        name = name + "_cuda_objects",
        srcs = srcs,
        hdrs = hdrs,
        deps = deps + ["@cuda//:cuda_headers"],
        archs = archs,
        defines = defines,
        copts = copts,
        library_name = name,
        ptxas_gate = ptxas_gate,
        gated_archs = gated_archs,
        tags = tags,
        testonly = testonly,
        visibility = ["//visibility:private"],
    )
    # Built by `bazel build //...`, so every report is current after a build.
    native.filegroup(
        name = name + "_ptxas",
        srcs = [":" + name + "_cuda_objects"],
        output_group = "ptxas_reports",
        tags = tags,
        testonly = testonly,
        visibility = ["//visibility:private"],
    )
    native.cc_library(
        name = name,
        srcs = [":" + name + "_cuda_objects"],
        hdrs = hdrs,
        deps = deps + ["@cuda//:cudart"],
        alwayslink = True,
        linkstatic = True,
        visibility = visibility,
        tags = tags,
        testonly = testonly,
        **kwargs
    )
