#!/usr/bin/env python3
"""Per-iteration instruction mix of each kernel's MMA main loop, from `cuobjdump -sass` text.

Usage: sass_report.py [--mma REGEX] [SASS_FILE | -]   (tools/device/sass_report.sh runs cuobjdump)

For every function holding MMA instructions (opcode matching REGEX at its start: OMMA for
sm_120, HMMA for the sm_90a emulation), the loop is the smallest range [target, branch] of a
backward BRA that contains an MMA. One iteration is the path through that range that the steady
state executes: unconditional branches taken, conditional ones not taken, except a branch on the
predicate of an mbarrier try-wait (SYNCS...TRYWAIT), which is taken when guarded by the
predicate itself (`@P0 BRA`: the wait succeeded, skip the retry/timeout path) and not taken when
guarded by its negation (`@!P0 BRA`: the retry path lies elsewhere). A loop whose retry path sits
inside its range is thus counted without it; `span` is the range's static size for comparison.
"""

import argparse
import re
import shutil
import subprocess
import sys

# /*addr*/ [guard] OPCODE operands ;
INSTR = re.compile(r'^\s*/\*([0-9a-f]{4,})\*/\s+(@!?U?P[0-9T]+\s+)?'
                   r'([A-Z0-9_][A-Z0-9_.]*)\s*(.*?)\s*;')
FUNC = re.compile(r'Function\s*:\s*(\S+)')
HEX = re.compile(r'0x([0-9a-f]+)')

LEGEND = """\
# One row per kernel: its innermost loop holding MMAs, one steady-state iteration (one warp).
#   total    instructions on the iteration's path (span: the loop range's static size)
#   MMA      opcodes matching the MMA pattern; NOP: NOP
#   uniform  uniform-datapath ops: opcodes starting with U (UIADD3, UMOV, ULEA, ULOP3, USHF, ...);
#            S2UR, LDCU, R2UR, CS2UR and BRA.U are not counted here
#   dead     of all the above, those guarded by @!PT or @!UPT: never executed, ptxas's filler
#            like NOP (e.g. `@!UPT UIADD3 URZ, UPT, UPT, URZ, URZ, URZ`); counted in their column
#   vector   total - MMA - NOP - uniform (includes LDS, LDSM, SYNCS, S2R, branches)
#   S2R, S2UR  those opcodes (special-register reads); LDS: LDS* except LDSM; LDSM: LDSM*;
#            SYNCS: SYNCS* (mbarrier waits and arrives)
#   wait>MMA instructions on the path strictly between the loop's first SYNCS...TRYWAIT (else
#            its first SYNCS) and the next MMA after it (cyclic)
#   fn MMA   MMAs in the whole function (more than `MMA` means MMAs outside this loop)"""


class Instr:
    def __init__(self, addr, guard, opcode, operands):
        self.addr, self.guard, self.opcode, self.operands = addr, guard, opcode, operands
        self.base = opcode.split('.')[0]

    def branch_target(self):
        if self.base != 'BRA':
            return None
        m = HEX.findall(self.operands)
        return int(m[-1], 16) if m else None

    def conditional(self):
        return (self.guard not in ('', '@PT')) or re.match(r'!?U?P[0-6]\b', self.operands)


def parse(text):
    """{function name: [Instr]} in file order."""
    funcs, cur = {}, None
    for line in text.splitlines():
        m = FUNC.search(line)
        if m:
            cur = funcs.setdefault(m.group(1), [])
            continue
        m = INSTR.match(line)
        if m and cur is not None:
            guard = (m.group(2) or '').strip()
            cur.append(Instr(int(m.group(1), 16), guard, m.group(3), m.group(4)))
    return funcs


def innermost_loop(instrs, is_mma):
    """(start index, end index) of the smallest backward-branch range holding an MMA, or None."""
    index = {ins.addr: i for i, ins in enumerate(instrs)}
    mma_idx = [i for i, ins in enumerate(instrs) if is_mma(ins)]
    best = None
    for i, ins in enumerate(instrs):
        t = ins.branch_target()
        if t is None or t > ins.addr or t not in index:
            continue
        s = index[t]
        if any(s <= k <= i for k in mma_idx) and (best is None or i - s < best[1] - best[0]):
            best = (s, i)
    return best


def iteration_path(instrs, start, end):
    """Indices executed by one steady-state iteration (rules in the module doc), and whether the
    path reached the loop's branch."""
    index = {ins.addr: i for i, ins in enumerate(instrs)}
    path, seen, wait_pred, i = [], set(), None, start
    while start <= i <= end and i not in seen:
        seen.add(i)
        path.append(i)
        ins = instrs[i]
        if i == end:
            return path, True
        dest = ins.operands.split(',')[0].strip()
        target = ins.branch_target()
        if target is not None:
            taken = not ins.conditional()
            if wait_pred and ins.guard in ('@' + wait_pred, '@!' + wait_pred):
                taken = not ins.guard.startswith('@!')
            if taken:
                if target not in index:
                    return path, False
                i = index[target]
                continue
        elif 'TRYWAIT' in ins.opcode and re.fullmatch(r'U?P[0-6]', dest):
            wait_pred = dest
        elif wait_pred and dest == wait_pred:
            wait_pred = None  # overwritten (e.g. by an ISETP)
        i += 1
    return path, False


def demangle(mangled):
    """The first demangler on PATH that understands the name (GNU c++filt gives up on CUTLASS's)."""
    for tool in ('llvm-cxxfilt', 'cu++filt', 'c++filt'):
        if shutil.which(tool):
            out = subprocess.run([tool], input=mangled, capture_output=True, text=True).stdout
            out = out.strip()
            if out and out != mangled:
                return out
    return mangled


def short_name(mangled, limit=200):
    """Demangled, without namespaces, parameters and spaces; C<n> as n, tuple<a,b> as (a,b)."""
    name = re.sub(r'^void\s+', '', demangle(mangled))
    if name.endswith(')'):  # drop the parameter list
        depth = 0
        for k in range(len(name) - 1, -1, -1):
            depth += {')': 1, '(': -1}.get(name[k], 0)
            if depth == 0:
                name = name[:k]
                break
    name = re.sub(r'\b[A-Za-z_][A-Za-z0-9_]*::', '', name)  # namespaces
    name = re.sub(r'\s+', '', name)
    name = re.sub(r'\bC<(-?\d+)>', r'\1', name)
    while True:
        shorter = re.sub(r'\btuple<([^<>]*)>', r'(\1)', name)
        if shorter == name:
            break
        name = shorter
    return name if len(name) <= limit else name[:limit] + '...'


def report_rows(funcs, mma_regex):
    pattern = re.compile(mma_regex)
    is_mma = lambda ins: bool(pattern.match(ins.opcode))
    rows = []
    for name, instrs in funcs.items():
        fn_mma = sum(map(is_mma, instrs))
        if not fn_mma:
            continue
        loop = innermost_loop(instrs, is_mma)
        if loop is None:
            rows.append(dict(name=short_name(name), loop='no loop', fn_mma=fn_mma))
            continue
        path, closed = iteration_path(instrs, *loop)
        ops = [instrs[k] for k in path]
        c = lambda pred: sum(1 for ins in ops if pred(ins))
        mma, nop = c(is_mma), c(lambda x: x.base == 'NOP')
        uni = c(lambda x: x.base.startswith('U'))
        dead = c(lambda x: x.guard in ('@!PT', '@!UPT'))
        waits = [k for k, x in enumerate(ops) if x.base == 'SYNCS' and 'TRYWAIT' in x.opcode]
        waits = waits or [k for k, x in enumerate(ops) if x.base == 'SYNCS']
        wait_to_mma = '-'
        if waits and mma:
            n = len(ops)
            wait_to_mma = next(d - 1 for d in range(1, n + 1) if is_mma(ops[(waits[0] + d) % n]))
        rows.append(dict(
            name=short_name(name),
            loop='0x%x-0x%x%s' % (instrs[loop[0]].addr, instrs[loop[1]].addr,
                                  '' if closed else ' OPEN'),
            span=loop[1] - loop[0] + 1, total=len(ops), mma=mma, nop=nop, uniform=uni, dead=dead,
            vector=len(ops) - mma - nop - uni,
            s2r=c(lambda x: x.base == 'S2R'), s2ur=c(lambda x: x.base == 'S2UR'),
            lds=c(lambda x: x.base.startswith('LDS') and not x.base.startswith('LDSM')),
            ldsm=c(lambda x: x.base.startswith('LDSM')),
            syncs=c(lambda x: x.base == 'SYNCS'),
            wait_to_mma=wait_to_mma, fn_mma=fn_mma))
    return rows


COLUMNS = ['total', 'mma', 'nop', 'uniform', 'dead', 'vector', 's2r', 's2ur', 'lds', 'ldsm',
           'syncs', 'wait_to_mma', 'span', 'fn_mma', 'loop', 'name']
HEADER = ['total', 'MMA', 'NOP', 'uniform', 'dead', 'vector', 'S2R', 'S2UR', 'LDS', 'LDSM', 'SYNCS',
          'wait>MMA', 'span', 'fn MMA', 'loop', 'kernel']


def format_table(rows):
    lines = ['| ' + ' | '.join(HEADER) + ' |', '|' + '---|' * len(HEADER)]
    for r in rows:
        lines.append('| ' + ' | '.join(str(r.get(k, '-')) for k in COLUMNS) + ' |')
    return '\n'.join(lines)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--mma', default='OMMA', help='regex matched at the start of MMA opcodes')
    ap.add_argument('sass', nargs='?', default='-', help='cuobjdump -sass output (- for stdin)')
    a = ap.parse_args(argv)
    text = sys.stdin.read() if a.sass == '-' else open(a.sass).read()
    rows = report_rows(parse(text), a.mma)
    print(LEGEND.replace('MMA pattern', 'MMA pattern /%s/' % a.mma))
    print(format_table(rows) if rows else
          '# no function holds an instruction matching /%s/' % a.mma)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
