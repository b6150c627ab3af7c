"""Tests of minimax_h3_nvfp4.safetensors_io: round trips of every dtype, the real library's
layout, a table of bad files with their exact messages, save's argument errors, a time-bounded
fuzz loop, and files the real `safetensors` package wrote (testdata/safetensors/, made by
make_safetensors_fixtures.py on the H200 machine).

    ./bazelw test //python:safetensors_io_test
    PYTHONPATH=python /usr/bin/python3 python/tests/safetensors_io_test.py
Fuzz: $H3_FUZZ_SECONDS (default 20) and $H3_FUZZ_SEED (default 31); the seed is printed.
"""

import hashlib
import json
import os
import random
import re
import struct
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
if os.environ.get("TEST_SRCDIR"):
    # Under Bazel the package sits in runfiles/<workspace>/python/ (api_test.py says why).
    sys.path.insert(0, os.path.dirname(_HERE))

from minimax_h3_nvfp4 import safetensors_io as st  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


def raw_file(header, data=b"", n=None):
    """A file's bytes: header (an object, JSON text or bytes), then data; n the size field."""
    if isinstance(header, (dict, list)):
        header = json.dumps(header)
    if isinstance(header, str):
        header = header.encode("utf-8")
    return struct.pack("<Q", len(header) if n is None else n) + header + data


def entry(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def sample(dtype, shape, rng):
    """Random data of a safetensors dtype, as save takes it (explicit dtype)."""
    npdtype = np.dtype(st.DTYPES[dtype])
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * npdtype.itemsize, dtype=np.uint8)
    a = raw.view(npdtype).reshape(shape)
    return np.asarray(a != 0) if dtype == "BOOL" else a


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.path = os.path.join(self.dir, "t.safetensors")

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, data, name="t.safetensors"):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def read(self, path=None):
        with open(path or self.path, "rb") as f:
            return f.read()


class RoundTrip(Base):
    SHAPES = [(3, 5), (), (0,), (2, 0, 3), (7,), (1, 1, 1, 2)]

    def test_every_dtype_every_shape(self):
        rng = np.random.default_rng(0)
        tensors = {}
        for dtype in st.DTYPES:
            for i, shape in enumerate(self.SHAPES):
                tensors["%s.%d" % (dtype, i)] = (dtype, sample(dtype, shape, rng))
        st.save(self.path, tensors, {"k": "v", "empty": ""})
        got, meta = st.load(self.path)
        self.assertEqual(meta, {"k": "v", "empty": ""})
        self.assertEqual(set(got), set(tensors))
        for name, (dtype, a) in tensors.items():
            t = got[name]
            self.assertEqual((t.name, t.dtype, t.shape), (name, dtype, a.shape), name)
            self.assertEqual(t.array.dtype, np.dtype(st.DTYPES[dtype]), name)
            self.assertFalse(t.array.flags.writeable, name)
            np.testing.assert_array_equal(t.array, a, name)
            if a.size:
                # A view of the file's map, not a copy.
                base = t.array
                while isinstance(base, np.ndarray) and base.base is not None:
                    base = base.base
                self.assertEqual(type(getattr(base, "obj", base)).__name__, "mmap", name)
        # The file is exactly header + every tensor's bytes.
        n = struct.unpack("<Q", self.read()[:8])[0]
        self.assertEqual(os.path.getsize(self.path),
                         8 + n + sum(a.nbytes for _, a in tensors.values()))
        self.assertEqual(n % 8, 0)

    def test_plain_arrays_say_their_dtype(self):
        arrays = {"b": np.array([True]), "u8": np.arange(3, dtype=np.uint8),
                  "i8": np.arange(3, dtype=np.int8), "i16": np.arange(3, dtype=np.int16),
                  "f16": np.ones(2, np.float16), "i32": np.arange(2, dtype=np.int32),
                  "u32": np.arange(2, dtype=np.uint32), "f32": np.ones(2, np.float32),
                  "f64": np.ones(2), "i64": np.arange(2), "u64": np.arange(2, dtype=np.uint64),
                  "big_endian": np.arange(4, dtype=">i4"),
                  "strided": np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2],
                  "zero_d": np.array(2.5, dtype=np.float32)}
        st.save(self.path, arrays)
        got, meta = st.load(self.path)
        self.assertEqual(meta, {})
        expect = {"b": "BOOL", "u8": "U8", "i8": "I8", "i16": "I16", "f16": "F16", "i32": "I32",
                  "u32": "U32", "f32": "F32", "f64": "F64", "i64": "I64", "u64": "U64",
                  "big_endian": "I32", "strided": "F32", "zero_d": "F32"}
        for name, a in arrays.items():
            self.assertEqual(got[name].dtype, expect[name], name)
            self.assertEqual(got[name].shape, a.shape, name)
            np.testing.assert_array_equal(got[name].array, a, name)
        self.assertEqual(got["big_endian"].array.dtype.str, "<i4")

    def test_names_subset_in_given_order(self):
        st.save(self.path, {"a": np.zeros(2, np.float32), "b": np.ones(3, np.uint8),
                            "c": np.zeros(0, np.int64)})
        got, _ = st.load(self.path, names=["c", "a", "c"])
        self.assertEqual(list(got), ["c", "a"])
        self.assertEqual(got["c"].shape, (0,))
        full, _ = st.load(self.path)
        self.assertEqual(list(full), ["c", "a", "b"])  # file order: I64 (empty), F32, U8
        with self.assertRaisesRegex(ValueError, "^safetensors: %s: names must be tensors in the "
                                    r"file, got 'x', 'y' \(not in the file\)$"
                                    % re.escape(self.path)):
            st.load(self.path, names=["a", "x", "y"])
        with self.assertRaisesRegex(TypeError, "names must be a list of tensor names, got str"):
            st.load(self.path, names="a")
        with self.assertRaisesRegex(TypeError, "names must be a list of str, got an item 3"):
            st.load(self.path, names=["a", 3])
        with self.assertRaisesRegex(TypeError, "path must be a str or os.PathLike, got int"):
            st.load(3)

    def test_layout_is_the_real_librarys(self):
        # Byte vectors of the real library's own tests (safetensors/src/tensor.rs).
        st.save(self.path, {})
        self.assertEqual(self.read(), b"\x08" + b"\0" * 7 + b"{}" + b" " * 6)
        st.save(self.path, {}, {"framework": "pt"})
        self.assertEqual(self.read(), b"\x28" + b"\0" * 7 + b'{"__metadata__":{"framework":"pt"}}'
                         + b" " * 5)
        x = np.arange(6, dtype=np.float32)
        st.save(self.path, {"attn.0": x.reshape(1, 2, 3)})
        self.assertEqual(self.read(), b"\x40" + b"\0" * 7 + b'{"attn.0":{"dtype":"F32","shape":'
                         b'[1,2,3],"data_offsets":[0,24]}}' + x.tobytes())
        st.save(self.path, {"attn0": x.reshape(1, 1, 2, 3)})
        self.assertEqual(self.read(), b"\x48" + b"\0" * 7 + b'{"attn0":{"dtype":"F32","shape":'
                         b'[1,1,2,3],"data_offsets":[0,24]}}' + b" " * 7 + x.tobytes())
        # Sorted by dtype, largest alignment first (the Dtype enum reversed), then by name;
        # metadata first; non-ASCII names as UTF-8, control characters escaped as serde_json.
        st.save(self.path, {"b": np.ones(1, np.uint8), "a": np.ones(1, np.uint8),
                            "h\u00e9\n": ("BF16", np.ones(1, np.uint16)),
                            "z": ("F8_E4M3", np.ones(1, np.uint8)), "d": np.ones(1, np.int64),
                            "c": np.ones(1, np.float64), "e": np.ones(1, np.uint64)},
                {"format": "pt"})
        header = self.read()[8:].split(b"}}")[0].decode("utf-8")
        names = re.findall(r'"((?:[^"\\]|\\.)*)":\{"dtype"', header)
        self.assertEqual(names, ["e", "d", "c", "h\u00e9\\n", "z", "a", "b"])
        self.assertTrue(header.startswith('{"__metadata__":{"format":"pt"},"e":{'))

    def test_torch_tensors(self):
        if torch is None:
            self.skipTest("torch is not importable")
        w = torch.arange(6, dtype=torch.float32).reshape(2, 3) / 4
        st.save(self.path, {"w": w.to(torch.bfloat16), "i": torch.arange(3),
                            "m": torch.tensor([True, False]), "f": w.t()})
        got, _ = st.load(self.path)
        self.assertEqual(got["w"].dtype, "BF16")
        np.testing.assert_array_equal(
            got["w"].array, w.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16))
        self.assertEqual((got["i"].dtype, got["m"].dtype, got["f"].dtype), ("I64", "BOOL", "F32"))
        np.testing.assert_array_equal(got["f"].array, w.t().numpy())
        with self.assertRaisesRegex(TypeError, r"tensors\['c'\] must be a tensor of a safetensors"
                                    " dtype, got torch.complex64"):
            st.save(self.path, {"c": torch.zeros(2, dtype=torch.complex64)})
        with self.assertRaisesRegex(TypeError, r"tensors\['w'\] must be a tensor of F16, got "
                                    "torch.bfloat16"):
            st.save(self.path, {"w": ("F16", w.to(torch.bfloat16))})

    def test_atomic_and_nothing_written_on_error(self):
        st.save(self.path, {"a": np.ones(4, np.float32)})
        before = self.read()
        mode = os.stat(self.path).st_mode & 0o777
        umask = os.umask(0)
        os.umask(umask)
        self.assertEqual(mode, 0o666 & ~umask)  # as a plain open() would make it
        with self.assertRaises(TypeError):
            st.save(self.path, {"a": np.ones(4, np.float32), "b": [1, 2]})
        self.assertEqual(self.read(), before)
        self.assertEqual(os.listdir(self.dir), ["t.safetensors"])  # no temporary file left
        with self.assertRaises(OSError):
            st.save(os.path.join(self.dir, "no", "such", "folder.safetensors"), {})
        self.assertEqual(os.listdir(self.dir), ["t.safetensors"])

    def test_maps_survive_the_file_being_replaced(self):
        st.save(self.path, {"a": np.arange(4, dtype=np.float32)})
        got, _ = st.load(self.path)
        st.save(self.path, {"a": np.zeros(4, np.float32)})  # os.replace: the old inode lives on
        np.testing.assert_array_equal(got["a"].array, np.arange(4, dtype=np.float32))


SAVE_ERRORS = [
    # (label, args, exception, message after "safetensors: <file>: ")
    ("tensors not a dict", ([("a", np.ones(1))],), TypeError,
     r"tensors must be a dict of name -> array, got list"),
    ("name not a str", ({1: np.ones(1)},), TypeError, r"tensor name 1 must be a str, got int"),
    ("name __metadata__", ({"__metadata__": np.ones(1)},), ValueError,
     r"tensor name must be not '__metadata__' \(the header's metadata key\), got '__metadata__'"),
    ("name too long", ({"n" * 4097: np.ones(1)},), ValueError,
     r"tensor name 'n{72}\.\.\.' must be at most 4096 bytes of UTF-8, got 4097 bytes"),
    ("name lone surrogate", ({"\ud800": np.ones(1)},), ValueError,
     r"tensor name '\\ud800' must be valid Unicode, got a lone surrogate"),
    ("value a list", ({"a": [1, 2]},), TypeError,
     r"tensors\['a'\] must be a NumPy array, a torch tensor or a \(dtype name, array\) pair, "
     r"got list"),
    ("uint16 ambiguous", ({"a": np.ones(1, np.uint16)},), TypeError,
     r"tensors\['a'\] must be an array of a safetensors dtype, got uint16 \(uint16 is U16 or "
     r"BF16 bit patterns: pass \('U16', a\) or \('BF16', a\)\)"),
    ("complex", ({"a": np.ones(1, np.complex64)},), TypeError,
     r"tensors\['a'\] must be an array of a safetensors dtype, got complex64"),
    ("object array", ({"a": np.array([None])},), TypeError,
     r"tensors\['a'\] must be an array of a safetensors dtype, got object"),
    ("unknown dtype name", ({"a": ("Q8", np.ones(1, np.uint8))},), ValueError,
     r"tensors\['a'\] dtype must be one of BOOL, U8, .*, U64, got 'Q8'"),
    ("sub-byte dtype", ({"a": ("F4", np.ones(1, np.uint8))},), ValueError,
     r"tensors\['a'\] dtype must be one of .*, got 'F4' \(sub-byte\)"),
    ("BF16 of float32", ({"a": ("BF16", np.ones(1, np.float32))},), TypeError,
     r"tensors\['a'\] must be a uint16 array for BF16, got float32"),
    ("F8 of int8", ({"a": ("F8_E4M3", np.ones(1, np.int8))},), TypeError,
     r"tensors\['a'\] must be a uint8 array for F8_E4M3, got int8"),
    ("triple", ({"a": ("F32", np.ones(1), 3)},), TypeError,
     r"tensors\['a'\] must be an array or a \(dtype name, array\) pair, got a tuple "
     r"\(str, ndarray, int\)"),
    ("metadata a list", ({}, [("k", "v")]), TypeError,
     r"metadata must be a dict of str -> str or None, got list"),
    ("metadata value not str", ({}, {"k": 1}), TypeError,
     r"metadata\['k'\] must be a str, got int"),
    ("metadata key not str", ({}, {1: "v"}), TypeError, r"metadata key 1 must be a str, got int"),
]


class SaveErrors(Base):
    def test_table(self):
        for label, args, exc, message in SAVE_ERRORS:
            with self.subTest(label):
                with self.assertRaises(exc) as cm:
                    st.save(self.path, *args)
                self.assertRegex(str(cm.exception),
                                 "^safetensors: %s: %s$" % (re.escape(self.path), message))
                self.assertEqual(os.listdir(self.dir), [])
        with self.assertRaisesRegex(TypeError,
                                    "^safetensors: save: path must be a str or os.PathLike"):
            st.save(None, {})

    def test_header_limit(self):
        limit = st.MAX_HEADER_BYTES
        st.MAX_HEADER_BYTES = 64
        try:
            with self.assertRaisesRegex(ValueError, r"the header must be at most 64 bytes \(the "
                                        r"real library's limit\), got 72$"):
                st.save(self.path, {}, {"k": "v" * 40})
        finally:
            st.MAX_HEADER_BYTES = limit


_OK = {"a": entry("F32", [2], 0, 8)}
_DTYPES = ", ".join(st.DTYPES)
# (label, file bytes, message after "safetensors: <file>: ", limits patched for the row)
BAD_FILES = [
    ("empty", b"", r"the file must be at least 8 bytes \(the header's size\), got 0 bytes"),
    ("truncated size", b"\x10\0\0\0", r"the file must be at least 8 bytes \(the header's "
     r"size\), got 4 bytes"),
    ("header size past the file", raw_file(_OK, b"\0" * 8, n=1000),
     r"the header size must be at most \d+ \(the bytes after it\), got 1000"),
    ("truncated header", raw_file(_OK)[:30], r"the header size must be at most 22 \(the bytes "
     r"after it\), got \d+"),
    ("header size over the limit", raw_file(_OK, b"\0" * 8, n=100_000_001),
     r"the header size must be at most 100000000 \(the real library's limit\), got 100000001"),
    ("header size 2**64-1", raw_file(_OK, n=2 ** 64 - 1), r"the header size must be at most "
     r"100000000 \(the real library's limit\), got 18446744073709551615"),
    ("not UTF-8", raw_file(b'{"\xff": 1}'), r"header must be UTF-8 JSON, got invalid UTF-8 at "
     r"byte 2"),
    ("not JSON", raw_file("{nope"), r"header must be UTF-8 JSON, got invalid JSON \(Expecting "
     r"property name enclosed in double quotes: line 1 column 2 \(char 1\)\)"),
    ("NaN", raw_file('{"__metadata__": {"k": NaN}}'), r"header must be UTF-8 JSON, got invalid "
     r"JSON \(NaN is not JSON\)"),
    ("empty header", raw_file(""), r"header must be UTF-8 JSON, got invalid JSON \(Expecting "
     r"value: line 1 column 1 \(char 0\)\)"),
    ("deep nesting", raw_file("[" * 200000), r"header must be UTF-8 JSON, got invalid JSON "
     r"\(maximum recursion depth exceeded.*\)"),
    ("not an object", raw_file("[1, 2]"), r"header must be a JSON object, got a list"),
    ("a string", raw_file('"x"'), r"header must be a JSON object, got a string"),
    ("duplicate tensor", raw_file('{"a": %s, "a": %s}' % (json.dumps(_OK["a"]),
                                                           json.dumps(_OK["a"])), b"\0" * 8),
     r"header must be JSON without repeated keys, got 'a' twice"),
    ("duplicate field", raw_file('{"a": {"dtype": "F32", "dtype": "F32", "shape": [2], '
                                 '"data_offsets": [0, 8]}}', b"\0" * 8),
     r"header must be JSON without repeated keys, got 'dtype' twice"),
    ("entry a list", raw_file({"a": [1]}), r"tensor 'a' must be an object with keys dtype, "
     r"shape, data_offsets, got a list"),
    ("missing field", raw_file({"a": {"dtype": "F32", "data_offsets": [0, 8]}}, b"\0" * 8),
     r"tensor 'a' must be an object with keys dtype, shape, data_offsets, got no shape"),
    ("extra field", raw_file({"a": dict(_OK["a"], offsets=[0, 8])}, b"\0" * 8),
     r"tensor 'a' must be an object with keys dtype, shape, data_offsets, got the extra key "
     r"'offsets'"),
    ("unknown dtype", raw_file({"a": entry("Q8", [2], 0, 8)}, b"\0" * 8),
     r"tensor 'a' dtype must be one of %s, got 'Q8'" % _DTYPES),
    ("F4", raw_file({"a": entry("F4", [2], 0, 1)}, b"\0"),
     r"tensor 'a' dtype must be one of %s, got 'F4' \(sub-byte\)" % _DTYPES),
    ("C64", raw_file({"a": entry("C64", [1], 0, 8)}, b"\0" * 8),
     r"tensor 'a' dtype must be one of %s, got 'C64' \(not supported here\)" % _DTYPES),
    ("dtype lower case", raw_file({"a": entry("f32", [2], 0, 8)}, b"\0" * 8),
     r"tensor 'a' dtype must be one of %s, got 'f32'" % _DTYPES),
    ("dtype a number", raw_file({"a": entry(5, [2], 0, 8)}, b"\0" * 8),
     r"tensor 'a' dtype must be one of %s, got 5" % _DTYPES),
    ("negative shape", raw_file({"a": entry("F32", [-2], 0, 8)}, b"\0" * 8),
     r"tensor 'a' shape must be a list of non-negative integers, got \[-2\]"),
    ("float shape", raw_file({"a": entry("F32", [2.0], 0, 8)}, b"\0" * 8),
     r"tensor 'a' shape must be a list of non-negative integers, got \[2\.0\]"),
    ("bool shape", raw_file({"a": entry("F32", [True, 2], 0, 8)}, b"\0" * 8),
     r"tensor 'a' shape must be a list of non-negative integers, got \[True, 2\]"),
    ("shape not a list", raw_file({"a": entry("F32", 2, 0, 8)}, b"\0" * 8),
     r"tensor 'a' shape must be a list of non-negative integers, got 2"),
    ("33 dimensions", raw_file({"a": entry("F32", [1] * 33, 0, 4)}, b"\0" * 4),
     r"tensor 'a' shape must be at most 32 dimensions \(NumPy's limit\), got 33"),
    ("shape overflows", raw_file({"a": entry("I32", [2, 2 ** 64 - 2], 0, 16)}, b"\0" * 16),
     r"tensor 'a' shape must be under 2\*\*63 bytes \(NumPy's limit\), got \[2, 184467.*"),
    ("empty but huge", raw_file({"a": entry("F32", [0, 2 ** 62], 0, 0)}),
     r"tensor 'a' shape must be under 2\*\*63 bytes \(NumPy's limit\), got "
     r"\[0, 4611686018427387904\]"),
    ("offsets reversed", raw_file({"a": entry("F32", [2], 8, 0)}, b"\0" * 8),
     r"tensor 'a' data_offsets must be \[begin, end\] integers with 0 <= begin <= end <= 8 "
     r"\(the data's size\), got \[8, 0\]"),
    ("offsets past the data", raw_file({"a": entry("F32", [4], 0, 16)}, b"\0" * 8),
     r"tensor 'a' data_offsets must be \[begin, end\] integers with 0 <= begin <= end <= 8 "
     r"\(the data's size\), got \[0, 16\]"),
    ("offsets negative", raw_file({"a": entry("F32", [0], -1, -1)}, b""),
     r"tensor 'a' data_offsets must be \[begin, end\] integers .*, got \[-1, -1\]"),
    ("offsets of three", raw_file({"a": dict(_OK["a"], data_offsets=[0, 8, 8])}, b"\0" * 8),
     r"tensor 'a' data_offsets must be \[begin, end\] integers .*, got \[0, 8, 8\]"),
    ("offsets floats", raw_file({"a": dict(_OK["a"], data_offsets=[0, 8.0])}, b"\0" * 8),
     r"tensor 'a' data_offsets must be \[begin, end\] integers .*, got \[0, 8\.0\]"),
    ("byte count", raw_file({"a": entry("F32", [3], 0, 8)}, b"\0" * 8),
     r"tensor 'a' data_offsets must be 12 bytes apart \(F32 \[3\]\), got 8 \(\[0, 8\]\)"),
    ("truncated data", raw_file(_OK, b"\0" * 4), r"tensor 'a' data_offsets must be \[begin, "
     r"end\] integers with 0 <= begin <= end <= 4 \(the data's size\), got \[0, 8\]"),
    ("overlap", raw_file({"a": entry("F32", [2], 0, 8), "b": entry("F32", [2], 4, 12)},
                         b"\0" * 12),
     r"tensor 'b' data_offsets must be \[8, \.\.\.\], where tensor 'a' ends \(the tensors cover "
     r"the data contiguously\), got \[4, 12\] \(overlaps tensor 'a'\)"),
    ("same offsets", raw_file({"b": entry("F32", [2], 0, 8), "a": entry("F32", [2], 0, 8)},
                              b"\0" * 8),
     r"tensor 'b' data_offsets must be \[8, \.\.\.\], where tensor 'a' ends .*, got \[0, 8\] "
     r"\(overlaps tensor 'a'\)"),
    ("empty inside another", raw_file({"a": entry("F32", [2], 0, 8), "e": entry("F32", [0], 4, 4)},
                                      b"\0" * 8),
     r"tensor 'e' data_offsets must be \[8, \.\.\.\], where tensor 'a' ends .*, got \[4, 4\] "
     r"\(overlaps tensor 'a'\)"),
    ("gap", raw_file({"a": entry("F32", [2], 0, 8), "b": entry("F32", [2], 12, 20)}, b"\0" * 20),
     r"tensor 'b' data_offsets must be \[8, \.\.\.\], where tensor 'a' ends .*, got \[12, 20\] "
     r"\(a gap of 4 bytes\)"),
    ("first not at 0", raw_file({"a": entry("F32", [2], 4, 12)}, b"\0" * 12),
     r"tensor 'a' data_offsets must be \[0, \.\.\.\], the data's first byte \(the tensors cover "
     r"the data contiguously\), got \[4, 12\] \(a gap of 4 bytes\)"),
    ("bytes after the last", raw_file(_OK, b"\0" * 12), r"the data after the header must be "
     r"exactly the tensors' 8 bytes, got 12 bytes \(4 in no tensor\)"),
    ("data without tensors", raw_file({}, b"\0" * 4), r"the data after the header must be "
     r"exactly the tensors' 0 bytes, got 4 bytes \(4 in no tensor\)"),
    ("metadata value an int", raw_file({"__metadata__": {"k": 1}}), r"__metadata__\['k'\] must "
     r"be a string, got 1 \(an integer\)"),
    ("metadata value null", raw_file({"__metadata__": {"k": None}}), r"__metadata__\['k'\] must"
     r" be a string, got None \(null\)"),
    ("metadata a list", raw_file({"__metadata__": ["k"]}), r"__metadata__ must be an object of "
     r"strings, got a list"),
    ("metadata lone surrogate", raw_file('{"__metadata__": {"k": "\\ud800"}}'),
     r"__metadata__\['k'\] must be valid Unicode, got a lone surrogate"),
    ("name too long", raw_file({"n" * 4097: entry("F32", [0], 0, 0)}),
     r"tensor name 'n{72}\.\.\.' must be at most 4096 bytes of UTF-8, got 4097 bytes"),
    ("name lone surrogate", raw_file('{"\\udc00": {"dtype": "U8", "shape": [], '
                                     '"data_offsets": [0, 1]}}', b"\0"),
     r"tensor name '\\udc00' must be valid Unicode, got a lone surrogate"),
    ("too many tensors", raw_file({k: entry("U8", [0], 0, 0) for k in "abc"}),
     r"the number of tensors must be at most 2, got 3", {"MAX_TENSORS": 2}),
]


class BadFiles(Base):
    def test_table(self):
        labels = set()
        for row in BAD_FILES:
            label, data, message = row[:3]
            self.assertNotIn(label, labels)
            labels.add(label)
            patch = row[3] if len(row) > 3 else {}
            saved = {k: getattr(st, k) for k in patch}
            with self.subTest(label):
                path = self.write(data)
                try:
                    for k, v in patch.items():
                        setattr(st, k, v)
                    with self.assertRaises(ValueError) as cm:
                        st.load(path)
                finally:
                    for k, v in saved.items():
                        setattr(st, k, v)
                self.assertRegex(str(cm.exception),
                                 "^safetensors: %s: %s$" % (re.escape(path), message))

    def test_what_the_real_library_accepts(self):
        # Leading and trailing JSON whitespace (writers pad to align), "__metadata__": null,
        # tensors in any order in the header, 0-d and empty tensors, an odd header size.
        cases = [
            raw_file(b"\t\n{}\r "),
            raw_file({"__metadata__": None}),
            raw_file('{"b":{"dtype":"U8","shape":[],"data_offsets":[4,5]},'
                     '"a":{"dtype":"I32","shape":[],"data_offsets":[0,4]}}', b"\1\0\0\0\7"),
            raw_file({"t": entry("I32", [2, 0], 0, 0)}),
        ]
        for i, data in enumerate(cases):
            got, meta = st.load(self.write(data, "ok%d.safetensors" % i))
            self.assertEqual(meta, {})
        self.assertEqual(list(got), ["t"])
        got, _ = st.load(os.path.join(self.dir, "ok2.safetensors"))
        self.assertEqual([(t.name, t.dtype, t.shape, t.array.tolist()) for t in got.values()],
                         [("a", "I32", (), 1), ("b", "U8", (), 7)])


# ---- fuzz -------------------------------------------------------------------------------------

def random_json(rng, depth=0):
    r = rng.random()
    if depth > 2 or r < 0.45:
        return rng.choice([
            rng.randint(-3, 40), rng.choice([2 ** 63, 2 ** 64, -2 ** 63, 10 ** 30, 2 ** 31]),
            rng.random() * 100, rng.choice(list(st.DTYPES) + ["F4", "C64", "", "x" * 5000]),
            True, False, None, "\u00e9\u4e2d", rng.randint(0, 200)])
    if r < 0.75:
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(["dtype", "shape", "data_offsets", "__metadata__", "k", "a"]):
            random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def mutate_header(rng, header):
    """A rewrite of a parsed header: a field, a shape or offset element, a key, an entry."""
    names = [k for k in header if k != "__metadata__"]
    op = rng.randrange(9)
    if not names or op == 0:
        header[rng.choice(["__metadata__", "n", "a"])] = random_json(rng)
        return header
    info = header[rng.choice(names)]
    if not isinstance(info, dict):
        return header
    key = rng.choice(["dtype", "shape", "data_offsets"])
    if op == 1:
        info[key] = random_json(rng)
    elif op in (2, 3) and isinstance(info.get(key), list) and info[key]:
        i = rng.randrange(len(info[key]))
        v = info[key][i]
        info[key][i] = (v + rng.choice([-8, -4, -2, -1, 1, 2, 4, 8]) if isinstance(v, int)
                        else random_json(rng))
    elif op == 4:
        info.pop(key, None)
    elif op == 5:
        info["extra"] = random_json(rng)
    elif op == 6:
        info["dtype"] = rng.choice(list(st.DTYPES))  # same size sometimes: a valid file
    elif op == 7 and len(names) > 1:
        other = header[rng.choice(names)]
        if isinstance(other, dict):
            info["data_offsets"], other["data_offsets"] = \
                other.get("data_offsets"), info.get("data_offsets")
    else:
        header[rng.choice(names) + rng.choice(["", "x", "\u00e9"])] = info
    return header


def mutate(rng, data):
    n = struct.unpack("<Q", data[:8])[0]
    op = rng.randrange(6)
    if op == 0:  # bit flips, mostly in the header
        b = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(min(8 + n, len(b)) if rng.random() < 0.8 else len(b))
            b[i] ^= 1 << rng.randrange(8)
        return bytes(b)
    if op == 1:  # truncation
        return data[:rng.randrange(len(data) + 1)]
    if op == 2:  # the size field
        m = rng.choice([n + rng.randint(-9, 9), rng.randrange(2 ** 64), rng.randrange(2 ** 20)])
        return struct.pack("<Q", max(m, 0)) + data[8:]
    if op == 3:  # a byte inserted or deleted in the header (sizes unchanged)
        i = min(8 + rng.randrange(n + 1), len(data))
        if rng.random() < 0.5:
            return data[:i] + bytes([rng.randrange(256)]) + data[i:]
        return data[:i] + data[i + 1:]
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except ValueError:
        header = None
    if not isinstance(header, dict):  # an earlier mutation broke it: flip a bit instead
        i = rng.randrange(len(data))
        return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1:]
    for _ in range(rng.randint(1, 3)):
        header = mutate_header(rng, header)
    text = json.dumps(header, separators=rng.choice([(",", ":"), (", ", ": ")]))
    text += " " * rng.randrange(9)
    body = data[8 + n:]
    if rng.random() < 0.2:
        body = body[:rng.randrange(len(body) + 1)] if rng.random() < 0.5 else body + b"\0" * 8
    return raw_file(text, body)


class Fuzz(Base):
    def test_mutated_files_load_or_raise_value_error(self):
        seconds = float(os.environ.get("H3_FUZZ_SECONDS", "20"))
        seed = int(os.environ.get("H3_FUZZ_SEED", "31"))
        rng = random.Random(seed)
        nrng = np.random.default_rng(seed)
        seeds = []
        files = [
            ({"w": ("U8", sample("U8", (4, 8), nrng)), "g": ("F32", sample("F32", (), nrng)),
              "s": ("F8_E4M3", sample("U8", (4,), nrng))}, {"format": "pt"}),
            ({d: (d, sample(d, (2, 3), nrng)) for d in st.DTYPES}, None),
            ({"e": ("I64", sample("I64", (0, 5), nrng)), "x": ("BOOL", sample("BOOL", (5,), nrng)),
              "b": ("BF16", sample("BF16", (3,), nrng))}, {"a": "b", "c": "\u00e9"})]
        for i, (tensors, meta) in enumerate(files):
            path = os.path.join(self.dir, "seed%d.safetensors" % i)
            st.save(path, tensors, meta)
            seeds.append(self.read(path))
        prefix = re.compile(r"^safetensors: %s: .+ must be .+, got .+$" % re.escape(self.path),
                            re.S)
        print("\nfuzz: seed %d, %.0f s (H3_FUZZ_SEED, H3_FUZZ_SECONDS)" % (seed, seconds),
              file=sys.stderr)
        counts = {"loaded": 0, "refused": 0}
        start, iterations = time.monotonic(), 0
        while time.monotonic() - start < seconds:
            data = rng.choice(seeds)
            for _ in range(rng.randint(1, 3)):
                if len(data) < 8 or rng.random() < 0.1:
                    break
                data = mutate(rng, data)
            with open(self.path, "wb") as f:
                f.write(data)
            iterations += 1
            try:
                got, meta = st.load(self.path)
            except ValueError as e:
                counts["refused"] += 1
                self.assertRegex(str(e), prefix, "iteration %d" % iterations)
                continue
            except Exception as e:  # noqa: BLE001: exactly what the test is about
                keep = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR")  # Bazel's outputs.zip
                if keep:
                    with open(os.path.join(keep, "fuzz_failure.safetensors"), "wb") as f:
                        f.write(data)
                self.fail("iteration %d (seed %d): %s: %s; file %r"
                          % (iterations, seed, type(e).__name__, e, data[:400]))
            counts["loaded"] += 1
            n = struct.unpack("<Q", data[:8])[0]
            total = sum(t.array.nbytes for t in got.values())
            self.assertLessEqual(total, len(data) - 8 - n)
            self.assertTrue(all(isinstance(v, str) for v in meta.values()))
            for t in got.values():
                t.array.tobytes()  # every byte of the map readable
        elapsed = time.monotonic() - start
        print("fuzz: %d iterations in %.1f s (%d loaded, %d refused)"
              % (iterations, elapsed, counts["loaded"], counts["refused"]), file=sys.stderr)
        # A fuzzer that never reaches one side would test nothing.
        if iterations >= 200:
            self.assertGreater(counts["loaded"], 0)
            self.assertGreater(counts["refused"], 0)


# ---- files the real library wrote -----------------------------------------------------------

def check_fixtures(test, folder):
    """Every file of folder/manifest.json: read, as the manifest says, and written back by our
    save with the same bytes."""
    with open(os.path.join(folder, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    test.assertTrue(manifest["files"])
    for fname, want in sorted(manifest["files"].items()):
        path = os.path.join(folder, fname)
        with open(path, "rb") as f:
            data = f.read()
        test.assertEqual(hashlib.sha256(data).hexdigest(), want["sha256"], fname)
        got, meta = st.load(path)
        test.assertEqual(meta, want["metadata"] or {}, fname)
        test.assertEqual(list(got), [t["name"] for t in want["tensors"]], fname)
        for t in want["tensors"]:
            g = got[t["name"]]
            test.assertEqual((g.dtype, g.shape), (t["dtype"], tuple(t["shape"])), t["name"])
            expect = np.array(t["values"], dtype=g.array.dtype).reshape(g.shape)
            np.testing.assert_array_equal(g.array, expect, "%s %s" % (fname, t["name"]))
        out = os.path.join(test.dir, "resaved_" + fname)
        st.save(out, {n: (t.dtype, t.array) for n, t in got.items()}, want["metadata"])
        with open(out, "rb") as f:
            test.assertEqual(f.read(), data, "%s: our save's bytes differ" % fname)


class RealLibraryFiles(Base):
    def test_fixtures(self):
        folder = os.environ.get("H3_SAFETENSORS_FIXTURES") or os.path.join(
            os.path.dirname(os.path.dirname(_HERE)), "testdata", "safetensors")
        # Committed (written by safetensors 0.8.0 with torch 2.11 on the H200 machine): their
        # absence is a broken checkout or BUILD, not a reason to skip.
        self.assertTrue(os.path.exists(os.path.join(folder, "manifest.json")),
                        "%s/manifest.json: the real library's files (testdata/safetensors/, "
                        "//testdata:safetensors in this test's data) are missing" % folder)
        check_fixtures(self, folder)

    def test_fixture_script_with_a_stand_in(self):
        # The script and check_fixtures, end to end, with our save standing in for the real
        # package (the real one is not installed here): the lead's run then has no surprises.
        stub = os.path.join(self.dir, "stub", "safetensors")
        os.makedirs(stub)
        with open(os.path.join(stub, "__init__.py"), "w") as f:
            f.write("__version__ = 'stand-in'\n")
        with open(os.path.join(stub, "numpy.py"), "w") as f:
            # The real numpy.save_file takes uint16 as U16; ours asks.
            f.write("from minimax_h3_nvfp4 import safetensors_io as st\n"
                    "def save_file(t, path, metadata=None):\n"
                    "    t = {k: ('U16', a) if a.dtype == 'uint16' else a for k, a in t.items()}\n"
                    "    st.save(path, t, metadata)\n")
        with open(os.path.join(stub, "torch.py"), "w") as f:
            f.write("import torch\nfrom minimax_h3_nvfp4 import safetensors_io as st\n"
                    "def save_file(t, path, metadata=None):\n    st.save(path, t, metadata)\n")
        out = os.path.join(self.dir, "fixtures")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [os.path.dirname(stub), os.path.dirname(os.path.dirname(st.__file__))]))
        p = subprocess.run([sys.executable, os.path.join(_HERE, "make_safetensors_fixtures.py"),
                            out], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        names = sorted(os.listdir(out))
        self.assertEqual(names, sorted(["manifest.json", "mixed_np.safetensors",
                                        "u8_np.safetensors"]
                                       + (["torch_pt.safetensors"] if torch else [])))
        check_fixtures(self, out)
        with open(os.path.join(out, "manifest.json")) as f:
            order = [t["name"] for t in json.load(f)["files"]["mixed_np.safetensors"]["tensors"]]
        self.assertEqual(order, ["ids", "w", "scale", "u16", "empty", "mask"])


if __name__ == "__main__":
    unittest.main()
