"""./bazelw run //python:wheel -- DIR: writes minimax_h3_nvfp4-<version>-<tag>.whl into DIR.

A PEP 427 wheel made with the standard library: the package's sources, py.typed, the selftest's
goldens and libminimax_h3_nvfp4.so beside them, and minimax_h3_nvfp4-<version>.dist-info/
(METADATA, WHEEL, entry_points.txt, top_level.txt, RECORD). DIR is relative to where the
command was typed.

The tag is read off the library: it is loaded with ctypes (no CPython extension ABI), so
py3-none-<platform>, and the platform is manylinux_2_<N>_x86_64 with N the highest GLIBC_2.N
symbol version the library needs (its .gnu.version_r section). The library's other needs are
checked against the few it is known to have (libc, libm, the dynamic loader, libgomp.so.1); a
new one stops the build rather than ship a wheel that claims less than it needs.
"""

import base64
import hashlib
import os
import re
import shlex
import struct
import sys
import tempfile
import zipfile

NAME = "minimax_h3_nvfp4"
LIB = "libminimax_h3_nvfp4.so"
# The shared libraries the .so may need (python/BUILD's link line). libgomp.so.1 (GCC's OpenMP
# runtime) is outside the manylinux policy's list: README says so, and pip users need it.
ALLOWED_NEEDED = {"libc.so.6", "libm.so.6", "ld-linux-x86-64.so.2", "libgomp.so.1",
                  "libpthread.so.0", "libdl.so.2", "librt.so.1"}
ZIP_TIME = (2026, 1, 1, 0, 0, 0)  # fixed: the same inputs give the same wheel

SUMMARY = ("MiniMax-H3's NVFP4 (W4A4) attention out projection with its fused gated residual: "
           "an SM120 CUDA kernel and a bit-exact CPU emulator, FlashInfer's diffusion_ops API")


class WheelError(Exception):
    pass


# ---- ELF: what the library needs -----------------------------------------------------------------

def elf_needs(path):
    """(DT_NEEDED names, {library: [version names]}) of an x86-64 ELF shared object."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise WheelError("%s must be a 64-bit little-endian ELF file, got %r" % (path, data[:6]))
    machine = struct.unpack_from("<H", data, 18)[0]
    if machine != 62:
        raise WheelError("%s must be an x86-64 library (e_machine 62), got e_machine %d"
                         % (path, machine))
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum = struct.unpack_from("<HH", data, 58)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]

    def cstr(table, offset):
        start = sections[table][4] + offset
        return data[start:data.index(b"\0", start)].decode("ascii")

    needed, versions = [], {}
    for _, sh_type, _, _, off, size, link, info, _, _ in sections:
        if sh_type == 6:  # SHT_DYNAMIC
            for pos in range(off, off + size, 16):
                tag, val = struct.unpack_from("<qQ", data, pos)
                if tag == 0:
                    break
                if tag == 1:  # DT_NEEDED
                    needed.append(cstr(link, val))
        elif sh_type == 0x6FFFFFFE:  # SHT_GNU_verneed: `info` entries
            pos = off
            for _ in range(info):
                _, cnt, file_off, aux, nxt = struct.unpack_from("<HHIII", data, pos)
                lib = cstr(link, file_off)
                apos = pos + aux
                for _ in range(cnt):
                    _, _, _, name_off, anext = struct.unpack_from("<IHHII", data, apos)
                    versions.setdefault(lib, []).append(cstr(link, name_off))
                    apos += anext
                pos += nxt
    return needed, versions


def platform_tag(lib_path):
    """manylinux_2_<N>_x86_64 from the library's GLIBC_2.N needs; WheelError on a need the
    tag cannot express."""
    needed, versions = elf_needs(lib_path)
    extra = sorted(set(needed) - ALLOWED_NEEDED)
    if extra:
        raise WheelError("%s needs %s, which the wheel does not ship and the tag does not "
                         "promise (allowed: %s)" % (lib_path, ", ".join(extra),
                                                    ", ".join(sorted(ALLOWED_NEEDED))))
    glibc = [int(m.group(1)) for names in versions.values() for v in names
             for m in [re.fullmatch(r"GLIBC_2\.(\d+)(?:\.\d+)?", v)] if m]
    if not glibc:
        raise WheelError("%s must need some GLIBC_2.N symbol version, got none" % lib_path)
    return "manylinux_2_%d_x86_64" % max(glibc)


# ---- the wheel ----------------------------------------------------------------------------------

def read_version(version_h, init_py):
    """core/version.h's H3_VERSION, which __init__.py's __version__ must equal."""
    with open(version_h) as f:
        m = re.search(r'^#define H3_VERSION "([^"]+)"$', f.read(), re.M)
    if not m:
        raise WheelError("%s must define H3_VERSION \"x.y.z\", got no such line" % version_h)
    with open(init_py) as f:
        p = re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M)
    if not p or p.group(1) != m.group(1):
        raise WheelError("%s's __version__ must equal core/version.h's %s, got %s"
                         % (init_py, m.group(1), p.group(1) if p else "none"))
    return m.group(1)


def metadata(version):
    return "\n".join([
        "Metadata-Version: 2.1",
        "Name: %s" % NAME,
        "Version: %s" % version,
        "Summary: %s" % SUMMARY,
        "Requires-Python: >=3.8",
        "Requires-Dist: numpy",
        "Provides-Extra: torch",
        'Requires-Dist: torch; extra == "torch"',
        "Description-Content-Type: text/plain",
        "",
        "The fused NVFP4 op of the minimax_h3_nvfp4_out_proj repository (README.md there).",
        "CUDA torch tensors run the GPU kernel (NVIDIA driver R580+, SM12x or sm_90); CPU",
        "torch tensors and NumPy arrays run the bit-exact CPU emulator. The native library is",
        "loaded with ctypes and needs glibc, libgomp.so.1 and an x86-64 CPU with AVX2 + FMA.",
        "Check an installation with: python -m minimax_h3_nvfp4 selftest",
        ""])


def wheel_file(tag):
    return "\n".join(["Wheel-Version: 1.0", "Generator: minimax_h3_nvfp4 python/wheel.py",
                      "Root-Is-Purelib: false", "Tag: %s" % tag, ""])


def _record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def package_files(src):
    """[(path in the wheel, file on disk, mode)] of the package folder `src`."""
    names = sorted(os.listdir(src))
    files = [(n, 0o644) for n in names
             if n.endswith(".py") or n in ("py.typed", "selftest_goldens.npz")]
    for required in ("__init__.py", "__main__.py", "py.typed", "selftest_goldens.npz"):
        if required not in names:
            raise WheelError("the package folder %s must hold %s, got %s"
                             % (src, required, ", ".join(names)))
    return [("%s/%s" % (NAME, n), os.path.join(src, n), mode) for n, mode in files]


def build(package_dir, lib_path, version_h, out_dir):
    """Writes the wheel into out_dir and returns its path."""
    version = read_version(version_h, os.path.join(package_dir, "__init__.py"))
    tag = "py3-none-" + platform_tag(lib_path)
    files = package_files(package_dir) + [("%s/%s" % (NAME, LIB), lib_path, 0o755)]
    info = "%s-%s.dist-info" % (NAME, version)
    generated = [
        ("%s/METADATA" % info, metadata(version).encode()),
        ("%s/WHEEL" % info, wheel_file(tag).encode()),
        ("%s/top_level.txt" % info, (NAME + "\n").encode()),
        ("%s/entry_points.txt" % info,
         b"[console_scripts]\nminimax-h3-nvfp4 = minimax_h3_nvfp4.__main__:main\n"),
    ]
    os.makedirs(out_dir, exist_ok=True)
    name = "%s-%s-%s.whl" % (NAME, version, tag)
    fd, tmp = tempfile.mkstemp(prefix=".%s-" % NAME, suffix=".whl", dir=out_dir)
    os.close(fd)
    try:
        record = []
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
            def add(arcname, data, mode):
                zi = zipfile.ZipInfo(arcname, date_time=ZIP_TIME)
                zi.compress_type = zipfile.ZIP_DEFLATED
                zi.external_attr = (0o100000 | mode) << 16
                z.writestr(zi, data)
                record.append("%s,%s,%d" % (arcname, _record_hash(data), len(data)))

            for arcname, path, mode in files:
                with open(path, "rb") as f:
                    add(arcname, f.read(), mode)
            for arcname, data in generated:
                add(arcname, data, 0o644)
            record.append("%s/RECORD,," % info)
            zi = zipfile.ZipInfo("%s/RECORD" % info, date_time=ZIP_TIME)
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = (0o100644) << 16
            z.writestr(zi, "\n".join(record) + "\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, os.path.join(out_dir, name))
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return os.path.join(out_dir, name)


def runfiles_root():
    """Where the package's files are: Bazel's runfiles of //python:wheel (or //python:*_test)."""
    here = os.path.dirname(os.path.abspath(__file__))
    for root in (os.environ.get("RUNFILES_DIR"), os.path.dirname(here)):
        if root and os.path.exists(os.path.join(root, NAME, "python", LIB)):
            return os.path.join(root, NAME)
        if root and os.path.exists(os.path.join(root, "python", LIB)):
            return root
    raise WheelError("the package's files must be in Bazel's runfiles (run it as ./bazelw run "
                     "//python:wheel -- DIR), got none beside %s" % here)


def build_from_runfiles(out_dir):
    root = runfiles_root()
    return build(os.path.join(root, "python", NAME), os.path.join(root, "python", LIB),
                 os.path.join(root, "core", "version.h"), out_dir)


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print("usage: ./bazelw run //python:wheel -- DIR   (DIR relative to where you run it)",
              file=sys.stderr)
        return 0 if len(argv) == 2 else 2
    out = argv[1]
    if not os.path.isabs(out):
        out = os.path.join(os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd()), out)
    try:
        path = build_from_runfiles(out)
    except (WheelError, OSError) as e:
        print("wheel: error: %s" % e, file=sys.stderr)
        return 1
    print("wheel: wrote %s (%d bytes)" % (path, os.path.getsize(path)))
    print(install_hint(path, os.environ.get("BUILD_WORKING_DIRECTORY", os.getcwd())))
    return 0


def install_hint(path, cwd):
    """README.md's recipe for the wheel at `path`, typed in `cwd`: a venv over Debian's
    python3, whose NumPy an offline pip needs (the first python3 on a PATH may lack it)."""
    rel = os.path.relpath(path, cwd)
    whl = shlex.quote(path if rel.startswith("..") else rel)
    return ("wheel: install it into a venv over Debian's python3 (its NumPy; README.md "
            "\"Python\"):\n"
            "    /usr/bin/python3 -m venv --system-site-packages venv\n"
            "    venv/bin/python -m pip install --no-index %s\n"
            "    venv/bin/python -m minimax_h3_nvfp4 selftest" % whl)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
