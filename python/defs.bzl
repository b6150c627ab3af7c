"""opt_file: one file of a target built with -c opt, whatever the command line's mode.

The Python package's native library always needs the optimized emulator (fastbuild's -O0 Eigen
GEMM is ~40x slower), also under `./bazelw run //python:install` and `./bazelw test`, which run in
fastbuild. An incoming -c opt transition on the dependency does that (Bazel 4.2.3 Starlark
transition; the dependency then builds in its own k8-opt-ST-<hash> output tree)."""

def _opt_transition_impl(settings, attr):
    return {"//command_line_option:compilation_mode": "opt"}

_opt_transition = transition(
    implementation = _opt_transition_impl,
    inputs = [],
    outputs = ["//command_line_option:compilation_mode"],
)

def _opt_file_impl(ctx):
    files = ctx.files.src
    if len(files) != 1:
        fail("%s: src must produce exactly one file, got %s" % (ctx.label, files))
    out = ctx.actions.declare_file(ctx.attr.out)
    ctx.actions.run_shell(
        inputs = files,
        outputs = [out],
        command = 'cp -f "$1" "$2" && chmod 0555 "$2"',
        arguments = [files[0].path, out.path],
        mnemonic = "CopyOptFile",
        progress_message = "Copying the -c opt build of %s" % files[0].short_path,
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

opt_file = rule(
    implementation = _opt_file_impl,
    attrs = {
        "src": attr.label(cfg = _opt_transition, allow_files = True, mandatory = True),
        "out": attr.string(mandatory = True),
        "_allowlist_function_transition": attr.label(
            default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
        ),
    },
)
