"""sass_report.py on hand-written cuobjdump-style SASS whose loops and counts are known."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sass_report  # noqa: E402


def sass(*functions):
    """cuobjdump -sass text: (name, [instruction text]) at addresses 0x0, 0x10, ..."""
    out = ['\tcode for sm_120', '\t.target\tsm_120', '']
    for name, body in functions:
        out.append('\t\tFunction : ' + name)
        out.append('\t.headerflags\t@"EF_CUDA_SM120"')
        for k, text in enumerate(body):
            out.append('        /*%04x*/                   %-60s /* 0x000000 */' % (16 * k, text))
            out.append('%120s/* 0x000fc00000000000 */' % '')
    return '\n'.join(out) + '\n'


# Ours-style: a spin loop without MMAs (0x20-0x30), then the k-loop 0x40-0x130 whose try-wait
# skips its retry/timeout path when it succeeds (@P0 BRA over 0x70-0x90), a bounds check that is
# not taken, a NOP filler and a tail; an outer loop 0x0-0x140 around it.
OURS = ('_ZN2h37kernels6KernelILi3ELb1EEEvv', [
    'S2R R0, SR_TID.X ;',                                  # 0x00 outer loop top
    'MOV R1, RZ ;',                                        # 0x10
    'SYNCS.EXCH.64 URZ, [UR4], UR6 ;',                     # 0x20 spin loop
    '@P1 BRA 0x20 ;',                                      # 0x30
    'UMOV UR4, 0x400 ;',                                   # 0x40 k-loop top
    'SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R7+URZ+0x800], R2 ;',  # 0x50 the wait
    '@P0 BRA 0xa0 ;',                                      # 0x60 success: skip the retry
    'NANOSLEEP 0x3e8 ;',                                   # 0x70 retry path (not counted)
    'SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R7+URZ+0x800], R2 ;',  # 0x80
    '@!P0 BRA 0x70 ;',                                     # 0x90
    'S2R R5, SR_TID.X ;',                                  # 0xa0
    'ISETP.GE.AND P0, PT, R2, UR10, PT ;',                 # 0xb0 P0 no longer the wait's
    '@P0 BRA 0x100 ;',                                     # 0xc0 bounds: not taken
    'LDSM.16.M88.4 R8, [R72] ;',                           # 0xd0
    'OMMA.SF.16864.F32.E2M1.E2M1.UE4M3.4X R96, R72, R164, R96, R201, R168, URZ ;',  # 0xe0
    'NOP ;',                                               # 0xf0
    'LDS R201, [R200+0x13000] ;',                          # 0x100
    'SYNCS.ARRIVE.TRANS64.A1T0 RZ, [R2+URZ+0x818], RZ ;',  # 0x110
    'UIADD3 UR11, UPT, UPT, UR10, UR11, URZ ;',            # 0x120
    '@P1 BRA 0x40 ;',                                      # 0x130 k-loop branch
    '@P2 BRA 0x0 ;',                                       # 0x140 outer loop branch
    'EXIT ;',                                              # 0x150
])

# CUTLASS-style: the wait at the loop's bottom (wait>MMA wraps around), its retry block after the
# loop (@!P0 BRA forward, out of the range: nothing skipped), two HMMAs, a never-executed uniform
# filler, an LDS.64 and an LDSM.
ROTATED = ('_Z6kernelv', [
    'HMMA.16816.F32.BF16 R4, R8, R12, R4 ;',               # 0x00 loop top
    'ULEA UR4, UR5, UR4, 0x18 ;',                          # 0x10
    'HMMA.16816.F32.BF16 R4, R8, R12, R4 ;',               # 0x20
    '@!UPT UIADD3 URZ, UPT, UPT, URZ, URZ, URZ ;',         # 0x30 dead filler
    'LDS.64 R2, [R73+0x12000] ;',                          # 0x40
    'SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x10], R2 ;',  # 0x50 the wait
    '@!P0 BRA 0xa0 ;',                                     # 0x60 retry after the loop
    'LDSM.16.M88.4 R8, [R72] ;',                           # 0x70
    'S2UR UR5, SR_CgaCtaId ;',                             # 0x80
    '@P1 BRA 0x0 ;',                                       # 0x90 loop branch
    'SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4+0x10], R2 ;',  # 0xa0 retry block
    '@!P0 BRA 0xa0 ;',                                     # 0xb0
    'BRA 0x70 ;',                                          # 0xc0
])

NO_MMA = ('_Z5othervv', ['MOV R1, RZ ;', 'EXIT ;'])

# (name, functions, MMA pattern, expected rows: column -> value)
CASES = [
    ('wait-success path skips the retry', [OURS, NO_MMA], 'OMMA', [dict(
        name='Kernel<3,true>', loop='0x40-0x130', span=16, total=13, mma=1, nop=1, uniform=2,
        dead=0, vector=9, s2r=1, s2ur=0, lds=1, ldsm=1, syncs=2, wait_to_mma=5, fn_mma=1)]),
    ('wait at the bottom, retry outside', [ROTATED], 'HMMA', [dict(
        name='kernel', loop='0x0-0x90', span=10, total=10, mma=2, nop=0, uniform=2, dead=1,
        vector=6,
        s2r=0, s2ur=1, lds=1, ldsm=1, syncs=1, wait_to_mma=4, fn_mma=2)]),
    ('pattern selects the MMA opcode', [ROTATED, OURS], 'OMMA', [dict(name='Kernel<3,true>')]),
    ('no MMA, no row', [NO_MMA], 'OMMA', []),
]


class SassReportTest(unittest.TestCase):
    def test_cases(self):
        for name, funcs, pattern, expected in CASES:
            with self.subTest(name):
                rows = sass_report.report_rows(sass_report.parse(sass(*funcs)), pattern)
                self.assertEqual(len(rows), len(expected))
                for row, want in zip(rows, expected):
                    self.assertEqual({k: row.get(k) for k in want}, want)

    def test_table_has_one_line_per_row(self):
        rows = sass_report.report_rows(sass_report.parse(sass(OURS, ROTATED)), 'OMMA|HMMA')
        table = sass_report.format_table(rows).splitlines()
        self.assertEqual(len(table), 2 + 2)
        self.assertTrue(table[2].startswith('| 13 | 1 | 1 | 2 | 0 | 9 |'), table[2])


if __name__ == '__main__':
    unittest.main()
