"""Every folder README's file table lists every file of its folder, and nothing else.

A folder's README.md documents the folder with one or more tables headed `| file | what it is |`.
The first cell of each row names files in backticks, relative to the README's folder: a plain
name (`out_proj.h`), a file in a subfolder (`corpus/u1_5.npy`), a glob for data files by kind
(`results/*.csv`), or a subfolder with a trailing slash (`sm90/`). The test finds those READMEs
in the source tree and fails, naming them,
  - on a file of a documented folder that no row names (a documented folder is the README's own
    folder and each subfolder some file row reaches into, e.g. `corpus/` above), and
  - on a row naming a file or folder that does not exist, or a glob that matches nothing.
The files of a folder are git's tracked files (`git ls-files`, which includes files added but not
yet committed); without git, every file on disk except bytecode, objects and dot files.
README.md itself and subfolders need no row. FOLDERS must each have such a table.

It reads the live source tree (found through this file's real path, or $H3_SOURCE_ROOT), not
Bazel's inputs, so its BUILD tags it `external`: it runs every time, never from the cache.
Standard library only.
"""

import fnmatch
import os
import re
import subprocess
import unittest

# The folders that must have a README.md with a file table (issue 28 item 5).
FOLDERS = [
    'core',
    'emulator',
    'examples',
    'harness',
    'harness/bench',
    'harness/fuzz',
    'harness/perf_model',
    'harness/probe',
    'harness/sweep',
    'harness/testbed',
    'kernels',
    'kernels/sm90',
    'python',
    'python/minimax_h3_nvfp4',
    'python/native',
    'python/tests',
    'testdata',
    'third_party',
    'tools/build',
    'tools/cuda',
    'tools/device',
    'tools/docs',
]

HEADER = re.compile(r'^\|\s*file\s*\|\s*what it is\s*\|\s*$')
GLOB_CHARS = set('*?[')
# What the fallback listing (no git) leaves out; .gitignore's patterns for the source folders.
IGNORED = ('*.pyc', '*.o', '.*')


def source_root():
    """The repository's source tree: $H3_SOURCE_ROOT, else the folder above this file's real path
    that holds WORKSPACE (Bazel's runfiles link to the source files)."""
    env = os.environ.get('H3_SOURCE_ROOT')
    if env:
        return os.path.abspath(env)
    d = os.path.dirname(os.path.realpath(__file__))
    while True:
        if os.path.isfile(os.path.join(d, 'WORKSPACE')) and os.path.isdir(os.path.join(d, 'tools')):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            raise RuntimeError('no WORKSPACE above %s; set H3_SOURCE_ROOT'
                               % os.path.realpath(__file__))
        d = parent


def list_files(root):
    """Relative paths ('/'-separated) of the files to document: git's tracked files that exist,
    or, without git, every file on disk but bytecode, objects, dot files and Bazel's links."""
    try:
        out = subprocess.run(['git', '-C', root, 'ls-files', '-z'], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, check=True).stdout
        files = [p for p in out.decode('utf-8').split('\0') if p]
        return sorted(p for p in files if os.path.isfile(os.path.join(root, p)))
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        dirnames[:] = [d for d in dirnames
                       if not d.startswith('.') and not d.startswith('bazel-')
                       and d != '__pycache__' and not (rel == '.' and d in ('dist', 'venv'))
                       and not (rel == 'third_party' and d.endswith('_src'))]
        for f in filenames:
            if any(fnmatch.fnmatch(f, pat) for pat in IGNORED):
                continue
            files.append(f if rel == '.' else rel.replace(os.sep, '/') + '/' + f)
    return sorted(files)


def table_rows(text):
    """The first cells of the rows of every `| file | what it is |` table in text, with their
    line numbers: [(line, cell)]."""
    rows = []
    lines = text.split('\n')
    i = 0
    while i < len(lines):
        if HEADER.match(lines[i].strip()):
            i += 2  # header and separator
            while i < len(lines) and lines[i].lstrip().startswith('|'):
                cells = lines[i].strip().split('|')
                rows.append((i + 1, cells[1] if len(cells) > 1 else ''))
                i += 1
        else:
            i += 1
    return rows


def matches(rel, name):
    """Whether the relative path rel is the file that name (a path or a glob) names; a glob's
    `*` stays within its folder."""
    if not GLOB_CHARS & set(name):
        return rel == name
    return (os.path.dirname(rel) == os.path.dirname(name)
            and fnmatch.fnmatchcase(os.path.basename(rel), os.path.basename(name)))


def check_folder(root, folder, text, files):
    """The problems of folder's README (text) against the files: a list of messages."""
    problems = []
    where = (folder + '/' if folder else '') + 'README.md'
    prefix = folder + '/' if folder else ''
    tokens = []  # (line, relative name)
    for line, cell in table_rows(text):
        names = re.findall(r'`([^`]+)`', cell)
        if not names:
            problems.append('%s:%d: a table row names no file in backticks' % (where, line))
        tokens.extend((line, n.strip()) for n in names)
    if not tokens:
        return ['%s: no `| file | what it is |` table with rows' % where]

    documented = {''}  # subfolders (relative) whose files must all be named, '' the folder
    patterns = []  # relative names and globs that name files
    folder_rows = set()  # subfolders the table names as a whole (`sub/`)
    for line, name in tokens:
        if name.endswith('/'):
            folder_rows.add(name.rstrip('/'))
            if not os.path.isdir(os.path.join(root, prefix + name)):
                problems.append('%s:%d: `%s` names a folder that does not exist'
                                % (where, line, name))
            continue
        patterns.append((line, name))
        documented.add(os.path.dirname(name))
        if GLOB_CHARS & set(name):
            if not any(matches(f[len(prefix):], name) for f in files if f.startswith(prefix)):
                problems.append('%s:%d: `%s` matches no file' % (where, line, name))
        elif not os.path.isfile(os.path.join(root, prefix + name)):
            problems.append('%s:%d: `%s` names a file that does not exist' % (where, line, name))

    for f in files:
        if not f.startswith(prefix):
            continue
        rel = f[len(prefix):]
        sub = os.path.dirname(rel)
        if rel == 'README.md':
            continue
        if sub not in documented:
            # A subfolder the table does not list file by file: it must be named as a folder
            # (`sub/`, with or above it) or have a README of its own; else a new folder escapes.
            parts = sub.split('/')
            named = any('/'.join(parts[:i]) in folder_rows for i in range(1, len(parts) + 1))
            own = any(os.path.isfile(os.path.join(root, prefix + '/'.join(parts[:i]),
                                                  'README.md'))
                      for i in range(1, len(parts) + 1))
            if not (named or own or any(matches(rel, pat) for _, pat in patterns)):
                problems.append('%s: `%s` is in a subfolder the table names neither as a folder '
                                'nor file by file, and that has no README' % (where, rel))
            continue
        if not any(matches(rel, pat) for _, pat in patterns):
            problems.append('%s: `%s` is in the folder but not in the table' % (where, rel))
    return problems


def readme_folders(root, files):
    """The folders whose README.md (tracked, or on disk for FOLDERS) has a file table."""
    candidates = {os.path.dirname(f) for f in files if os.path.basename(f) == 'README.md'}
    candidates.update(FOLDERS)
    found = []
    for folder in sorted(candidates):
        path = os.path.join(root, folder, 'README.md')
        if not os.path.isfile(path):
            continue
        with open(path, encoding='utf-8') as fh:
            text = fh.read()
        if any(HEADER.match(l.strip()) for l in text.split('\n')):
            found.append((folder, text))
    return found


class ReadmeFilesTest(unittest.TestCase):

    def setUp(self):
        self.root = source_root()
        self.files = list_files(self.root)

    def test_required_folders_have_tables(self):
        have = {folder for folder, _ in readme_folders(self.root, self.files)}
        missing = [f + '/README.md' for f in FOLDERS if f not in have]
        if missing:
            self.fail('no `| file | what it is |` table in: ' + ', '.join(missing))

    def test_tables_match_folders(self):
        problems = []
        for folder, text in readme_folders(self.root, self.files):
            problems.extend(check_folder(self.root, folder, text, self.files))
        if problems:
            self.fail('%d README table problem(s) (source tree %s):\n%s'
                      % (len(problems), self.root, '\n'.join(problems)))

    def test_checker_itself(self):
        """check_folder on a made-up folder: a missing file, a stale row, a stale glob, a new
        subfolder nothing names (one with its own README is that README's)."""
        files = ['d/a.h', 'd/b.cc', 'd/README.md', 'd/data/x.npy', 'd/data/y.npy', 'd/sub/z.h',
                 'd/new/w.h', 'd/own/v.h', 'd/own/README.md']
        text = ('| file | what it is |\n|---|---|\n| `a.h` | x |\n| `gone.h` | x |\n'
                '| `data/*.npy` | x |\n| `data/*.csv` | x |\n| `sub/` | x |\n')
        real_isfile, real_isdir = os.path.isfile, os.path.isdir
        try:
            os.path.isfile = lambda p: os.path.relpath(p, '/r').replace(os.sep, '/') in files
            os.path.isdir = lambda p: os.path.relpath(p, '/r') in ('d/sub', 'd/data')
            problems = check_folder('/r', 'd', text, files)
        finally:
            os.path.isfile, os.path.isdir = real_isfile, real_isdir
        self.assertEqual(sorted(problems), sorted([
            'd/README.md:4: `gone.h` names a file that does not exist',
            'd/README.md:6: `data/*.csv` matches no file',
            'd/README.md: `b.cc` is in the folder but not in the table',
            'd/README.md: `new/w.h` is in a subfolder the table names neither as a folder nor '
            'file by file, and that has no README',
        ]))


if __name__ == '__main__':
    unittest.main()
