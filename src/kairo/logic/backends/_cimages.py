"""The image path: ``kairo_predict_images``, uint8 images → classes entirely in C.

The fixed C is the template ``images.c`` beside this file; this module generates the parts that
depend on the circuit (threshold compares, the bit-sliced vote counters, the argmax).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from string import Template

from kairo.logic._circuit import Circuit
from kairo.logic.backends._common import class_bits, vbits

VOTE_CHUNK = 128      # outputs per generated vote-counting function (see c_images)


@lru_cache(maxsize=1)
def _template() -> Template:
    text = resources.files("kairo.logic.backends").joinpath("images.c").read_text()
    lines = text.splitlines(keepends=True)
    while lines and lines[0].startswith("//"):
        lines.pop(0)
    return Template("".join(lines))


class _BitSum:
    """C code for a bit-sliced sum of 1-bit words: full adders per bit weight (carry-save).

    Words pushed at weight k count 2^k per set bit; with at most two words pending per weight
    each full adder turns three into two, so a sum of m words costs about 5m operations.
    Only ``n_bits`` weights are kept: the caller guarantees that the total fits, so a carry
    out of the top weight is always zero and is not computed.
    """

    def __init__(self, n_bits: int, lines: list[str], prefix: str = "t"):
        self.levels: list[list[str]] = [[] for _ in range(n_bits)]
        self.lines, self.prefix, self.n = lines, prefix, 0

    def tmp(self, expr: str) -> str:
        name = f"{self.prefix}{self.n}"
        self.n += 1
        self.lines.append(f"    const W {name} = {expr};")
        return name

    def push(self, k: int, word: str) -> None:
        while True:
            lv = self.levels[k]
            lv.append(word)
            if len(lv) < 3:
                return
            a, b, c = lv
            lv.clear()
            x = self.tmp(f"{a} ^ {b}")
            lv.append(self.tmp(f"{x} ^ {c}"))
            if k + 1 == len(self.levels):
                return
            word = self.tmp(f"({a} & {b}) | ({x} & {c})")
            k += 1

    def finish(self) -> list[str]:
        """One word (or ``ZERO``) per weight, least significant first."""
        for k, lv in enumerate(self.levels):
            if len(lv) == 2:
                a, b = lv
                lv.clear()
                lv.append(self.tmp(f"{a} ^ {b}"))
                if k + 1 < len(self.levels):
                    self.push(k + 1, self.tmp(f"{a} & {b}"))
        return [lv[0] if lv else "ZERO" for lv in self.levels]


def c_images(circuit: Circuit, width: int) -> str:
    """``kairo_predict_images``: uint8 images → classes, all in C (appended to c_source).

    Per block of ``width`` images: compare each 64-pixel row chunk with every threshold
    (AVX-512BW ``vpcmpub`` into a mask register, or AVX2 compare + ``movemask``, else a
    loop), transpose the 64 × 64 bit tiles (images × pixels → pixels × images) into the
    block's input words, run ``kairo_block``, count each class's votes bit-sliced (full-adder
    trees over the output words: about five word operations per output for ``width``
    samples at once), take the first argmax bit-sliced, and write one int32 per image.
    """
    c = circuit
    spec = c.image_input
    th, n_px = spec.thresholds, spec.n_pixels
    lanes = width // 64
    no, nc = c.n_outputs, c.n_classes
    grp = no // nc
    kb, cw = vbits(grp), class_bits(nc)

    def ld(o):
        return f"y[{o}]" if lanes == 1 else f"kairo_ld(y + {o * lanes})"

    masks = []
    for k, t in enumerate(th):
        if t < 0:
            masks.append(f"    m[{64 * k}] = ~0ull;                 /* every pixel > {t} */")
        elif t >= 255:
            masks.append(f"    m[{64 * k}] = 0;                     /* no pixel > 255 */")
        else:
            masks.append(f"    m[{64 * k}] = KAIRO_GT({t});")

    # vote counting: one noinline function per class and VOTE_CHUNK outputs, adding into the
    # bit-sliced count acc[class * KAIRO_VOTE_BITS + bit]
    funcs, calls = [], []
    for cls in range(nc):
        for j0 in range(0, grp, VOTE_CHUNK):
            name = f"kairo_votes{cls}_{j0 // VOTE_CHUNK}"
            lines: list[str] = []
            bs = _BitSum(kb, lines)
            if j0:                      # the count so far enters as words of weight 2^k
                for k in range(kb):
                    lines.append(f"    const W a{k} = acc[{cls * kb + k}];")
                    bs.push(k, f"a{k}")
            for o in range(cls * grp + j0, cls * grp + min(grp, j0 + VOTE_CHUNK)):
                lines.append(f"    const W o{o} = {ld(o)};")
                bs.push(0, f"o{o}")
            lines += [f"    acc[{cls * kb + k}] = {w};" for k, w in enumerate(bs.finish())]
            funcs.append(f"static KAIRO_VOTE void {name}(const uint64_t *restrict y, "
                         f"W *restrict acc)\n{{\n" + "\n".join(lines) + "\n}\n")
            calls.append(f"    {name}(y, acc);")

    # first argmax, bit-sliced: scan the classes in order, replace on a strictly larger count
    am: list[str] = []
    bs = _BitSum(1, am, prefix="m")
    best = [f"b{k}" for k in range(kb)]
    am += [f"    const W b{k} = acc[{k}];" for k in range(kb)]
    idx = ["ZERO"] * cw
    for cls in range(1, nc):
        cur = [f"c{cls}_{k}" for k in range(kb)]
        am += [f"    const W c{cls}_{k} = acc[{cls * kb + k}];" for k in range(kb)]
        gt, eq = None, None                         # from the most significant bit down
        for k in reversed(range(kb)):
            here = bs.tmp(f"{cur[k]} & ~{best[k]}")
            gt = here if gt is None else bs.tmp(f"{gt} | ({eq} & {here})")
            if k:
                same = bs.tmp(f"~({cur[k]} ^ {best[k]})")
                eq = same if eq is None else bs.tmp(f"{eq} & {same}")
        if cls < nc - 1:
            best = [bs.tmp(f"({gt} & {cur[k]}) | (~{gt} & {best[k]})") for k in range(kb)]
        idx = [bs.tmp(f"{idx[b]} | {gt}") if (cls >> b) & 1 else
               (bs.tmp(f"{idx[b]} & ~{gt}") if idx[b] != "ZERO" else "ZERO")
               for b in range(cw)]
    am += [f"    idx[{b}] = {w};" for b, w in enumerate(idx)]
    if nc == 1:
        am = ["    (void)acc;"] + [ln for ln in am if not ln.lstrip().startswith("const W b")]
    argmax = ("static void kairo_argmax(const W *restrict acc, W *restrict idx)\n{\n"
              + "\n".join(am) + "\n}\n")

    return _template().substitute(
        n_pixels=n_px, thresholds=", ".join(map(str, th)), width=width, n_thresholds=len(th),
        vote_bits=kb, class_bits=cw, threshold_masks="\n".join(masks),
        vote_functions="\n".join(funcs), vote_calls="\n".join(calls), argmax_function=argmax)
