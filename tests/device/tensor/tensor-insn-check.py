#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Check the tensor-engine and tile-DMA words clang-14 emitted for
tensor_insn.c (llvm-objdump -d of its object, argv[1]) against the
encodings of Documentation/hw/npu.rst, "Tensor engine and tile DMA".

Each expected instruction is written as its fields, straight from the
spec's tables (R-type: funct7 rs2 rs1 funct3 rd opcode); '*' is an integer
register the compiler chose. A few words are also given whole, worked out
by hand, so the packing itself is checked. Exit 1 on any difference."""
import re
import subprocess
import sys

TENSOR, TDMA = 0x0b, 0x2b
A0, A1, A2, A3 = 10, 11, 12, 13

# (name, opcode, funct3, funct7, rd, rs1, rs2[, the whole word by hand])
EXPECTED = [
    ("TLOAD t0, a0, a1, e8", TENSOR, 0, 0, 0, A0, A1),
    ("TLOAD t1, a0, a1, e16", TENSOR, 0, 1, 1, A0, A1),
    ("TLOAD t2, a0, a1, e32", TENSOR, 0, 2, 2, A0, A1),
    ("TLOAD t3, a0, a1, e16 trans", TENSOR, 0, 5, 3, A0, A1, 0x0ab5018b),
    ("TSTORE t4, a0, a1, e32", TENSOR, 1, 2, 4, A0, A1),
    ("TSTORE t5, a0, a1, e8 trans", TENSOR, 1, 4, 5, A0, A1),
    ("TFILL t6, a2, e16", TENSOR, 2, 1, 6, A2, 0),
    ("TFILL t7, x0, e32", TENSOR, 2, 2, 7, 0, 0),
    ("TMMA f16 t0 += t1 x t2", TENSOR, 3, 0, 0, 1, 2),
    ("TMMA bf16 t1 += t2 x t3", TENSOR, 3, 1, 1, 2, 3),
    ("TMMA f32 t2 += t3 x t4", TENSOR, 3, 2, 2, 3, 4),
    ("TMMA s8 t3 += t4 x t5", TENSOR, 3, 3, 3, 4, 5),
    ("TMMA s32 t4 += t5 x t6", TENSOR, 3, 4, 4, 5, 6, 0x0862b20b),
    ("TEW ADD t5, t6, t7", TENSOR, 4, 0, 5, 6, 7),
    ("TEW SUB t6, t7, t0", TENSOR, 4, 1, 6, 7, 0),
    ("TEW MUL t7, t0, t1", TENSOR, 4, 2, 7, 0, 1),
    ("TEW MAX t0, t1, t2", TENSOR, 4, 3, 0, 1, 2),
    ("TEW ADDROW t1, t2, t3", TENSOR, 4, 4, 1, 2, 3),
    ("TEW RELU t2, t3", TENSOR, 4, 5, 2, 3, 0),
    ("TEW EXP t3, t4", TENSOR, 4, 6, 3, 4, 0),
    ("TEW RCP t4, t5", TENSOR, 4, 7, 4, 5, 0),
    ("TEW ROWMAX t5, t6", TENSOR, 4, 8, 5, 6, 0),
    ("TEW ROWSUM t6, t7", TENSOR, 4, 9, 6, 7, 0),
    ("TEW CVTF16 t7, t0", TENSOR, 4, 10, 7, 0, 0),
    ("TEW CVTBF16 t0, t7", TENSOR, 4, 11, 0, 7, 0),
    ("TDMA.ISSUE desc", TDMA, 0, 0, 0, "*", 0),
    ("TDMA.WAIT rd, a3, target", TDMA, 1, 0, "*", A3, "*"),
    ("TFILL t1, 1.5f, e32", TENSOR, 2, 2, 1, "*", 0),
    ("TDMA.ISSUE (npu_tdma_2d)", TDMA, 0, 0, 0, "*", 0),
]


def fields(w):
    return (w & 0x7f, (w >> 12) & 7, w >> 25, (w >> 7) & 31,
            (w >> 15) & 31, (w >> 20) & 31)


def main():
    out = subprocess.run(["llvm-objdump", "-d", sys.argv[1]], check=True,
                         capture_output=True, text=True).stdout
    words = []
    for line in out.splitlines():
        m = re.match(r"\s*[0-9a-f]+:\s+((?:[0-9a-f]{2} ){4})\s", line)
        if not m:
            continue
        b = m.group(1).split()
        w = int("".join(reversed(b)), 16)
        if w & 0x7f in (TENSOR, TDMA):
            words.append(w)
    bad = 0
    if len(words) != len(EXPECTED):
        print(f"{len(words)} custom-0/custom-1 words, expected "
              f"{len(EXPECTED)}")
        bad += 1
    for e, w in zip(EXPECTED, words):
        name, want = e[0], e[1:7]
        got = fields(w)
        okf = all(x == "*" or x == y for x, y in zip(want, got))
        if len(e) > 7 and e[7] != w:
            okf = False
        print(f"{'ok' if okf else 'MISMATCH'} {w:08x} {name}")
        if not okf:
            print(f"  want opcode/f3/f7/rd/rs1/rs2 {want}"
                  f"{' word %08x' % e[7] if len(e) > 7 else ''}, got {got}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
