"""Reading and writing safetensors files with NumPy only (torch optional), for users' NVFP4
checkpoints. Named safetensors_io so that it never shadows the real `safetensors`.

    from minimax_h3_nvfp4 import safetensors_io as st
    tensors, metadata = st.load("model.safetensors")           # or names=["a.weight", ...]
    t = tensors["a.weight"]        # Tensor(name, dtype, shape, array)
    t.dtype, t.shape, t.array      # "BF16", (5376, 7168), read-only uint16 view of the file
    st.save("out.safetensors", {"w": w_uint8, "w_sf": ("F8_E4M3", sf), "x": ("BF16", bits)},
            metadata={"format": "pt"})

The format (github.com/huggingface/safetensors, README "Format"): an 8-byte little-endian u64
N, N bytes of UTF-8 JSON (an object: tensor name -> {"dtype", "shape", "data_offsets": [begin,
end]}, offsets relative to the data after the header, and an optional "__metadata__" object of
strings), then the data, little-endian, C order.

load(path, *, names=None) -> ({name: Tensor}, {str: str})
    Validates the whole header (every entry, also with `names`) before it maps anything, so
    that a bad file gives a ValueError and nothing else. Arrays are read-only views over one
    read-only memory map of the file (it stays mapped while any array lives); empty tensors are
    plain empty arrays. The dict is in file order (by offset), or in the order of `names`.
    NumPy has no bf16 or fp8: BF16 comes back as uint16 bit patterns (this package's bf16, see
    minimax_h3_nvfp4.bf16), F8_E4M3 / F8_E5M2 / F8_E8M0 as uint8 bytes; Tensor.dtype keeps the
    file's name. A missing `__metadata__` (or null, which the real library also takes) is {}.

save(path, tensors, metadata=None)
    `tensors`: name -> NumPy array, torch tensor, or (dtype name, array). A plain array needs a
    dtype that says one safetensors dtype: uint16 does not (U16, or BF16 bit patterns here), so
    it must come as ("U16", a) or ("BF16", a); uint8 is U8 (how NVFP4 checkpoints store packed
    FP4 pairs), so fp8 bytes come as ("F8_E4M3", a). ml_dtypes' bfloat16 / float8 arrays and
    torch's bf16 / float8 tensors say their dtype. Errors (TypeError for a wrong type, ValueError
    for a wrong value) come before anything is written; the file is written to a temporary file
    in the same folder, fsynced and renamed over `path`: readers see the old file or the new.

The layout is the real library's (safetensors/src/tensor.rs, `prepare`): tensors sorted by
dtype, largest alignment first (its Dtype enum order, descending), then by name; offsets
contiguous from 0; compact JSON with "__metadata__" first, then the tensors in data order, each
{"dtype","shape","data_offsets"}; the header padded with spaces to a multiple of 8 bytes. The
real library keeps metadata in a hash map, so its key order varies from run to run; we sort the
keys. Files of ours are byte-identical to the real library's when the metadata has at most one
key (either way both read each other's files).

What load refuses (ValueError "safetensors: <file>: <what> must be <expected>, got <given>"),
as the real library does unless noted: a file under 8 bytes; a header size over
MAX_HEADER_BYTES (the real library's 100,000,000) or past the end of the file; a header that is
not UTF-8, not JSON (NaN / Infinity too) or not an object; a key repeated anywhere in it
(ours: a repeated name is ambiguous, and the real library does not say so); more than MAX_TENSORS
tensors or a name over MAX_NAME_BYTES bytes of UTF-8 (our limits); an entry that is not an
object with exactly dtype, shape and data_offsets (extra keys: ours); a dtype not in DTYPES
(F4 / F6_* are sub-byte, C64 and the FNUZ fp8s unneeded for NVFP4: refused, named); a shape not
a list of non-negative integers, over 32 dimensions or over 2**63 bytes (NumPy's limits);
data_offsets not [begin, end] integers with 0 <= begin <= end <= the data's size, or not
itemsize x prod(shape) bytes long; tensors that overlap, leave a gap, or leave bytes after the
last one (the real library requires the tensors, sorted by offset, to cover the data exactly
from 0: "MetadataIncompleteBuffer" / "InvalidOffset"); __metadata__ not an object of strings.
I/O failures (no such file, ...) stay OSError.
"""

import collections
import collections.abc
import json
import mmap
import os
import struct

import numpy as np

__all__ = ["DTYPES", "MAX_HEADER_BYTES", "MAX_NAME_BYTES", "MAX_TENSORS", "Tensor", "load",
           "save"]

# The real library's limit (MAX_HEADER_SIZE in safetensors/src/tensor.rs).
MAX_HEADER_BYTES = 100_000_000
# Ours: far above real checkpoints (MoE ones with per-expert weights have ~10^5 tensors, names
# well under 4096 bytes), low enough that a hostile header cannot make us build millions of arrays.
MAX_TENSORS = 1_000_000
MAX_NAME_BYTES = 4096
_MAX_DIMS = 32  # NumPy 1.x's NPY_MAXDIMS

# safetensors dtype -> NumPy dtype of the view. Listed in the real library's Dtype enum order
# (increasing alignment): save sorts by the reverse of this order, as the real library does.
DTYPES = collections.OrderedDict([
    ("BOOL", "|b1"), ("U8", "|u1"), ("I8", "|i1"),
    ("F8_E5M2", "|u1"), ("F8_E4M3", "|u1"), ("F8_E8M0", "|u1"),
    ("I16", "<i2"), ("U16", "<u2"), ("F16", "<f2"), ("BF16", "<u2"),
    ("I32", "<i4"), ("U32", "<u4"), ("F32", "<f4"),
    ("F64", "<f8"), ("I64", "<i8"), ("U64", "<u8"),
])
_RANK = {name: i for i, name in enumerate(DTYPES)}
# Real safetensors dtypes we refuse by name (sub-byte packing has no NumPy view; the others
# are not in NVFP4 checkpoints).
_REFUSED = {"F4": "sub-byte", "F6_E2M3": "sub-byte", "F6_E3M2": "sub-byte",
            "F8_E4M3FNUZ": "not supported here", "F8_E5M2FNUZ": "not supported here",
            "C64": "not supported here"}
# ml_dtypes' names for the dtypes NumPy lacks (an array of one says its safetensors dtype).
_ML_DTYPES = {"bfloat16": "BF16", "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2",
              "float8_e8m0fnu": "F8_E8M0"}
# Plain NumPy dtypes that name one safetensors dtype (uint16 does not: U16 or BF16 bits).
_FROM_NUMPY = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "float16": "F16",
               "int32": "I32", "uint32": "U32", "float32": "F32", "float64": "F64",
               "int64": "I64", "uint64": "U64"}
# torch dtype name -> (safetensors dtype, NumPy dtype its bytes are read as).
_FROM_TORCH = {"bool": ("BOOL", "|b1"), "uint8": ("U8", "|u1"), "int8": ("I8", "|i1"),
               "int16": ("I16", "<i2"), "uint16": ("U16", "<u2"), "float16": ("F16", "<f2"),
               "bfloat16": ("BF16", "<u2"), "int32": ("I32", "<i4"),
               "uint32": ("U32", "<u4"), "float32": ("F32", "<f4"),
               "float64": ("F64", "<f8"), "int64": ("I64", "<i8"), "uint64": ("U64", "<u8"),
               "float8_e4m3fn": ("F8_E4M3", "|u1"), "float8_e5m2": ("F8_E5M2", "|u1"),
               "float8_e8m0fnu": ("F8_E8M0", "|u1")}
_ENTRY_KEYS = ("dtype", "shape", "data_offsets")

Tensor = collections.namedtuple("Tensor", ["name", "dtype", "shape", "array"])
Tensor.__doc__ = ("One tensor of a safetensors file: name, dtype (the file's name, e.g. 'BF16'), "
                  "shape (a tuple) and array (a read-only NumPy view; BF16 as uint16 bits, "
                  "fp8 as uint8).")


def _show(value, limit=80):
    """repr, cut short: messages must stay readable for hostile headers."""
    if isinstance(value, str) and len(value) > limit - 5:
        return repr(value[:limit - 8] + "...")
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _kind(value):
    """A JSON value's type in JSON's words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {dict: "an object", list: "a list", str: "a string", int: "an integer",
            float: "a number"}.get(type(value), type(value).__name__)


def _error(fname, what, expected, given, cls=ValueError):
    return cls("safetensors: %s: %s must be %s, got %s" % (fname, what, expected, given))


def _utf8_len(s):
    """len(s) in UTF-8, or None for a string with lone surrogates (JSON's \\ud800 escapes; the
    real library's parser refuses those)."""
    try:
        return len(s.encode("utf-8"))
    except UnicodeEncodeError:
        return None


def _fname(path, func):
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError("safetensors: %s: path must be a str or os.PathLike, got %s"
                        % (func, type(path).__name__))
    return os.fsdecode(os.fspath(path))


# ---- reading --------------------------------------------------------------------------------

class _Duplicate(Exception):
    """Not a ValueError: told apart from json's own errors."""


def _pairs(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(key)
        out[key] = value
    return out


def _constant(name):
    raise ValueError("%s is not JSON" % name)


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _parse_header(raw, fname, data_size):
    """The header's bytes -> ([(name, dtype, shape, begin, end)] in offset order, metadata)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _error(fname, "header", "UTF-8 JSON", "invalid UTF-8 at byte %d" % e.start) from None
    try:
        doc = json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)
    except _Duplicate as e:
        raise _error(fname, "header", "JSON without repeated keys",
                     "%s twice" % _show(e.args[0])) from None
    except (ValueError, RecursionError) as e:
        # RecursionError: deep nesting ([[[[...); ValueError also for over-long integers.
        raise _error(fname, "header", "UTF-8 JSON", "invalid JSON (%s)" % str(e)[:200]) from None
    if not isinstance(doc, dict):
        raise _error(fname, "header", "a JSON object", _kind(doc))

    metadata = doc.pop("__metadata__", None)
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise _error(fname, "__metadata__", "an object of strings", _kind(metadata))
    for key, value in metadata.items():
        if not isinstance(value, str):
            raise _error(fname, "__metadata__[%s]" % _show(key), "a string",
                         "%s (%s)" % (_show(value), _kind(value)))
        if _utf8_len(key) is None or _utf8_len(value) is None:
            raise _error(fname, "__metadata__[%s]" % _show(key), "valid Unicode",
                         "a lone surrogate")

    if len(doc) > MAX_TENSORS:
        raise _error(fname, "the number of tensors", "at most %d" % MAX_TENSORS,
                     "%d" % len(doc))
    entries = []
    for name, info in doc.items():
        entries.append(_parse_entry(fname, name, info, data_size))

    # Contiguity, as the real library checks it: sorted by (begin, end), each tensor starts
    # where the previous one ends, the first at 0, and the last ends at the data's end.
    entries.sort(key=lambda e: (e[3], e[4], e[0]))
    end, previous = 0, None
    for name, _, _, begin, stop in entries:
        if begin != end:
            where = ("where tensor %s ends" % _show(previous) if previous is not None
                     else "the data's first byte")
            why = ("overlaps tensor %s" % _show(previous) if begin < end
                   else "a gap of %d bytes" % (begin - end))
            raise _error(fname, "tensor %s data_offsets" % _show(name),
                         "[%d, ...], %s (the tensors cover the data contiguously)" % (end, where),
                         "[%d, %d] (%s)" % (begin, stop, why))
        end, previous = stop, name
    if end != data_size:
        raise _error(fname, "the data after the header", "exactly the tensors' %d bytes" % end,
                     "%d bytes (%d in no tensor)" % (data_size, data_size - end))
    return entries, metadata


def _parse_entry(fname, name, info, data_size):
    label = "tensor %s" % _show(name)
    size = _utf8_len(name)
    if size is None:
        raise _error(fname, "tensor name %s" % _show(name), "valid Unicode", "a lone surrogate")
    if size > MAX_NAME_BYTES:
        raise _error(fname, "tensor name %s" % _show(name),
                     "at most %d bytes of UTF-8" % MAX_NAME_BYTES, "%d bytes" % size)
    expected = "an object with keys dtype, shape, data_offsets"
    if not isinstance(info, dict):
        raise _error(fname, label, expected, _kind(info))
    for key in _ENTRY_KEYS:
        if key not in info:
            raise _error(fname, label, expected, "no %s" % key)
    for key in info:
        if key not in _ENTRY_KEYS:
            raise _error(fname, label, expected, "the extra key %s" % _show(key))

    dtype = info["dtype"]
    if not isinstance(dtype, str) or dtype not in DTYPES:
        why = " (%s)" % _REFUSED[dtype] if isinstance(dtype, str) and dtype in _REFUSED else ""
        raise _error(fname, label + " dtype", "one of %s" % ", ".join(DTYPES),
                     _show(dtype) + why)

    shape = info["shape"]
    if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
        raise _error(fname, label + " shape", "a list of non-negative integers", _show(shape))
    if len(shape) > _MAX_DIMS:
        raise _error(fname, label + " shape", "at most %d dimensions (NumPy's limit)"
                     % _MAX_DIMS, "%d" % len(shape))
    itemsize = np.dtype(DTYPES[dtype]).itemsize
    count, extent = 1, itemsize
    for d in shape:
        count *= d
        extent *= max(d, 1)
    if extent >= 2 ** 63:
        # NumPy refuses such a shape even with a zero dimension.
        raise _error(fname, label + " shape", "under 2**63 bytes (NumPy's limit)", _show(shape))

    offsets = info["data_offsets"]
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_int, offsets))
            and 0 <= offsets[0] <= offsets[1] <= data_size):
        raise _error(fname, label + " data_offsets",
                     "[begin, end] integers with 0 <= begin <= end <= %d (the data's size)"
                     % data_size, _show(offsets))
    begin, end = offsets
    if end - begin != count * itemsize:
        raise _error(fname, label + " data_offsets",
                     "%d bytes apart (%s %s)" % (count * itemsize, dtype, _show(shape)),
                     "%d ([%d, %d])" % (end - begin, begin, end))
    return name, dtype, tuple(shape), begin, end


def load(path, *, names=None):
    """Reads the safetensors file `path`: ({name: Tensor(name, dtype, shape, array)},
    metadata). `names`: only these tensors (a ValueError names any the file lacks). See the
    module's docstring for the views, the dtypes and what is refused."""
    fname = _fname(path, "load")
    wanted = None
    if names is not None:
        if isinstance(names, (str, bytes)) or not hasattr(names, "__iter__"):
            raise _error(fname, "names", "a list of tensor names", type(names).__name__,
                         TypeError)
        wanted = list(names)
        for x in wanted:
            if not isinstance(x, str):
                raise _error(fname, "names", "a list of str", "an item %s" % _show(x), TypeError)
        wanted = list(dict.fromkeys(wanted))

    with open(fname, "rb") as f:
        file_size = os.fstat(f.fileno()).st_size
        if file_size < 8:
            raise _error(fname, "the file", "at least 8 bytes (the header's size)",
                         "%d bytes" % file_size)
        (n,) = struct.unpack("<Q", f.read(8))
        if n > MAX_HEADER_BYTES:
            raise _error(fname, "the header size", "at most %d (the real library's limit)"
                         % MAX_HEADER_BYTES, "%d" % n)
        if n > file_size - 8:
            raise _error(fname, "the header size", "at most %d (the bytes after it)"
                         % (file_size - 8), "%d" % n)
        raw = f.read(n)
        if len(raw) != n:
            raise _error(fname, "the header", "%d bytes" % n, "%d (the file shrank)" % len(raw))
        entries, metadata = _parse_header(raw, fname, file_size - 8 - n)

        if wanted is not None:
            present = {e[0] for e in entries}
            missing = [x for x in wanted if x not in present]
            if missing:
                raise _error(fname, "names", "tensors in the file",
                             "%s (not in the file)" % ", ".join(_show(x) for x in missing[:10])
                             + (" and %d more" % (len(missing) - 10) if len(missing) > 10
                                else ""))
            order = {x: i for i, x in enumerate(wanted)}
            entries = sorted((e for e in entries if e[0] in order), key=lambda e: order[e[0]])

        # One read-only map for every array: views keep it alive, and a read-only map gives
        # read-only arrays. The header was validated above; nothing is built before that.
        mapped = None
        if any(stop > begin for _, _, _, begin, stop in entries):
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)

    base = 8 + n
    tensors = {}
    for name, dtype, shape, begin, stop in entries:
        npdtype = np.dtype(DTYPES[dtype])
        if stop > begin:
            array = np.frombuffer(mapped, dtype=npdtype, count=(stop - begin) // npdtype.itemsize,
                                  offset=base + begin).reshape(shape)
        else:
            array = np.empty(shape, dtype=npdtype)
            array.flags.writeable = False
        tensors[name] = Tensor(name, dtype, shape, array)
    return tensors, metadata


# ---- writing --------------------------------------------------------------------------------

def _from_torch(value, what, fname):
    """A torch tensor -> (safetensors dtype, NumPy array of its bytes): a CPU copy if needed."""
    tname = str(value.dtype).replace("torch.", "")
    if tname not in _FROM_TORCH:
        raise _error(fname, what, "a tensor of a safetensors dtype", "torch.%s" % tname,
                     TypeError)
    dtype, npdtype = _FROM_TORCH[tname]
    t = value.detach().cpu().contiguous()
    if t.dtype.is_floating_point and npdtype in ("<u2", "|u1"):
        # NumPy has no bf16 / fp8: reinterpret the bytes through an integer type of the size.
        import torch
        t = t.view(torch.int16 if npdtype == "<u2" else torch.uint8)
    if str(t.dtype) in ("torch.uint16", "torch.uint32", "torch.uint64"):
        import torch
        t = t.view({"torch.uint16": torch.int16, "torch.uint32": torch.int32,
                    "torch.uint64": torch.int64}[str(t.dtype)])
    return dtype, t.numpy().view(npdtype)


def _is_torch(value):
    return type(value).__module__.startswith("torch") and hasattr(value, "dtype") and \
        hasattr(value, "detach")


def _normalize(name, value, fname):
    """One entry of save's `tensors` -> (dtype, C-contiguous little-endian array)."""
    what = "tensors[%s]" % _show(name)
    given = None
    if isinstance(value, tuple):
        if len(value) != 2 or not isinstance(value[0], str):
            raise _error(fname, what, "an array or a (dtype name, array) pair",
                         "a tuple (%s)" % ", ".join(type(v).__name__ for v in value), TypeError)
        given, value = value
        if given not in DTYPES:
            why = " (%s)" % _REFUSED[given] if given in _REFUSED else ""
            raise _error(fname, what + " dtype", "one of %s" % ", ".join(DTYPES),
                         _show(given) + why)
    if _is_torch(value):
        dtype, array = _from_torch(value, what, fname)
        if given is not None and given != dtype:
            raise _error(fname, what, "a tensor of %s" % given, "torch.%s"
                         % str(value.dtype).replace("torch.", ""), TypeError)
        return dtype, array
    if isinstance(value, np.generic):
        value = np.asarray(value)  # a NumPy scalar: a 0-d tensor
    if not isinstance(value, np.ndarray):
        raise _error(fname, what, "a NumPy array, a torch tensor or a (dtype name, array) pair",
                     type(value).__name__, TypeError)
    array = value
    kind = array.dtype.name  # without byte order: fixed below
    if given is None:
        dtype = _ML_DTYPES.get(kind) or _FROM_NUMPY.get(kind)
        if dtype is None:
            hint = (" (uint16 is U16 or BF16 bit patterns: pass ('U16', a) or ('BF16', a))"
                    if kind == "uint16" else "")
            raise _error(fname, what, "an array of a safetensors dtype", kind + hint, TypeError)
    else:
        dtype = given
        if kind != np.dtype(DTYPES[dtype]).name and _ML_DTYPES.get(kind) != dtype:
            raise _error(fname, what, "a %s array for %s" % (np.dtype(DTYPES[dtype]).name, dtype),
                         kind, TypeError)
    if not array.flags.c_contiguous:
        array = array.copy(order="C")  # not ascontiguousarray: it makes a 0-d array 1-d
    little = array.dtype.newbyteorder("<")
    if array.dtype != little:
        array = array.astype(little)
    return dtype, array


def _check_text(fname, what, s):
    if not isinstance(s, str):
        raise _error(fname, what, "a str", type(s).__name__, TypeError)
    if _utf8_len(s) is None:
        raise _error(fname, what, "valid Unicode", "a lone surrogate")


def _header(fname, tensors, metadata):
    """(header bytes padded to a multiple of 8, [(dtype, array)] in data order)."""
    if not isinstance(tensors, collections.abc.Mapping):
        raise _error(fname, "tensors", "a dict of name -> array", type(tensors).__name__,
                     TypeError)
    if metadata is not None and not isinstance(metadata, collections.abc.Mapping):
        raise _error(fname, "metadata", "a dict of str -> str or None",
                     type(metadata).__name__, TypeError)
    if len(tensors) > MAX_TENSORS:
        raise _error(fname, "the number of tensors", "at most %d" % MAX_TENSORS,
                     "%d" % len(tensors))
    items = []
    for name, value in tensors.items():
        _check_text(fname, "tensor name %s" % _show(name), name)
        if name == "__metadata__":
            raise _error(fname, "tensor name", "not '__metadata__' (the header's metadata key)",
                         "'__metadata__'")
        if _utf8_len(name) > MAX_NAME_BYTES:
            raise _error(fname, "tensor name %s" % _show(name), "at most %d bytes of UTF-8"
                         % MAX_NAME_BYTES, "%d bytes" % _utf8_len(name))
        dtype, array = _normalize(name, value, fname)
        items.append((name, dtype, array))
    for key, value in (metadata or {}).items():
        _check_text(fname, "metadata key %s" % _show(key), key)
        _check_text(fname, "metadata[%s]" % _show(key), value)

    # The real library's order: dtype by descending alignment (enum order), then name.
    # Python compares str by code point, which is Rust's byte order of the UTF-8.
    items.sort(key=lambda it: (-_RANK[it[1]], it[0]))
    dumps = lambda v: json.dumps(v, ensure_ascii=False, separators=(",", ":"))  # noqa: E731
    parts = []
    if metadata is not None:
        parts.append('"__metadata__":' + dumps(dict(sorted(metadata.items()))))
    offset = 0
    for name, dtype, array in items:
        parts.append('%s:{"dtype":"%s","shape":[%s],"data_offsets":[%d,%d]}' % (
            dumps(name), dtype, ",".join(str(d) for d in array.shape), offset,
            offset + array.nbytes))
        offset += array.nbytes
    header = ("{" + ",".join(parts) + "}").encode("utf-8")
    header += b" " * (-len(header) % 8)
    if len(header) > MAX_HEADER_BYTES:
        raise _error(fname, "the header", "at most %d bytes (the real library's limit)"
                     % MAX_HEADER_BYTES, "%d" % len(header))
    return header, [(dtype, array) for _, dtype, array in items]


def save(path, tensors, metadata=None):
    """Writes `tensors` (name -> array, torch tensor or (dtype name, array)) and `metadata`
    (str -> str, or None for no "__metadata__") to `path` in safetensors' format, atomically,
    in the real library's layout. See the module's docstring."""
    fname = _fname(path, "save")
    header, data = _header(fname, tensors, metadata)
    folder = os.path.dirname(os.path.abspath(fname))
    # O_EXCL with mode 0666: the umask applies, as for a file the real library creates
    # (mkstemp would leave 0600).
    tmp = os.path.join(folder, ".%s.%s.tmp" % (os.path.basename(fname), os.urandom(6).hex()))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(struct.pack("<Q", len(header)))
            f.write(header)
            for _, array in data:
                if array.size:
                    f.write(array.reshape(-1).view(np.uint8).data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, fname)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
