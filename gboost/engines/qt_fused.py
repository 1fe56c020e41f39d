"""One fused element-wise kernel from :func:`gboost.engines.qt_screen.linear_screen` itself.

The per-pair statistic as CuPy array operations costs a kernel launch and a pass over memory per
operation (~300 a pair). Here the same Python function runs once on symbolic values (:class:`Trace`
stands in for the array module) and every operation it performs becomes one line of C, in its
order. On the device each arithmetic operation is a round-to-nearest intrinsic (``__dmul_rn``,
``__dadd_rn``, ``__ddiv_rn``, ``__dsqrt_rn``, ...), which the compiler never contracts into an FMA:
so the kernel computes the very doubles the array code does (docs/qt_epistasis.md §4 relies on
that for checks 1-5 and the inverse). The host flavour (plain C operators, compiled with
``-ffp-contract=off``) lets the CPU tests check the transcription bit for bit against numpy;
the ``gpu`` tests check the device's kernel against the CuPy array code bit for bit.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from gboost.engines.qt_screen import linear_screen

MOMENTS = ("N", "sa", "saa", "sb", "sbb", "sab", "saab", "sabb", "saabb", "ys", "ya", "yb", "yab", "yy")
OUTPUTS = (("stat", "double"), ("ok", "bool"), ("margin", "double"), ("unsure", "bool"))

_DEVICE = {"+": "__dadd_rn({a}, {b})", "-": "__dsub_rn({a}, {b})", "*": "__dmul_rn({a}, {b})",
           "/": "__ddiv_rn({a}, {b})", "sqrt": "__dsqrt_rn({a})"}
_HOST = {"+": "({a} + {b})", "-": "({a} - {b})", "*": "({a} * {b})", "/": "({a} / {b})", "sqrt": "sqrt({a})"}


def _literal(v: float) -> str:
    if math.isnan(v):
        return "nan(\"\")"
    if math.isinf(v):
        return "(1.0 / 0.0)" if v > 0 else "(-1.0 / 0.0)"
    return repr(float(v))  # shortest repr: reads back as the same double


class Sym:
    """A symbolic double or bool: each operation appends one assignment to its trace."""

    __array_priority__ = 1000

    def __init__(self, tr: "Trace", name: str, kind: str):
        self.tr, self.name, self.kind = tr, name, kind

    def _bin(self, op, other, swap=False):
        a, b = self.name, self.tr.operand(other)
        if swap:
            a, b = b, a
        return self.tr.emit("double", self.tr.fmt[op].format(a=a, b=b))

    def _cmp(self, op, other):
        return self.tr.emit("bool", f"({self.name} {op} {self.tr.operand(other)})")

    def __add__(self, o): return self._bin("+", o)
    def __radd__(self, o): return self._bin("+", o, True)
    def __sub__(self, o): return self._bin("-", o)
    def __rsub__(self, o): return self._bin("-", o, True)
    def __mul__(self, o): return self._bin("*", o)
    def __rmul__(self, o): return self._bin("*", o, True)
    def __truediv__(self, o): return self._bin("/", o)
    def __rtruediv__(self, o): return self._bin("/", o, True)
    def __neg__(self): return self.tr.emit("double", f"(-{self.name})")
    def __lt__(self, o): return self._cmp("<", o)
    def __le__(self, o): return self._cmp("<=", o)
    def __gt__(self, o): return self._cmp(">", o)
    def __ge__(self, o): return self._cmp(">=", o)

    def __and__(self, o): return self.tr.emit("bool", f"({self.name} && {self.tr.operand(o)})")
    def __rand__(self, o): return self.__and__(o)
    def __or__(self, o): return self.tr.emit("bool", f"({self.name} || {self.tr.operand(o)})")
    def __ror__(self, o): return self.__or__(o)
    def __invert__(self): return self.tr.emit("bool", f"(!{self.name})")

    def __bool__(self):
        raise TypeError("a traced value has no truth value: the array code must not branch on data")


class Trace:
    """Stands in for the array module while :func:`linear_screen` runs once on symbols."""

    float64 = "double"
    nan = math.nan
    inf = math.inf

    def __init__(self, device: bool):
        self.fmt = _DEVICE if device else _HOST
        self.lines: list[str] = []
        self.n = 0

    def operand(self, v) -> str:
        if isinstance(v, Sym):
            return v.name
        if isinstance(v, bool):
            return "true" if v else "false"
        return _literal(float(v))

    def emit(self, kind: str, expr: str) -> Sym:
        name = f"gb_t{self.n}"
        self.n += 1
        self.lines.append(f"{'double' if kind == 'double' else 'bool'} {name} = {expr};")
        return Sym(self, name, kind)

    def sqrt(self, x):
        return self.emit("double", self.fmt["sqrt"].format(a=self.operand(x)))

    def abs(self, x):
        return self.emit("double", f"fabs({self.operand(x)})")

    def isfinite(self, x):
        return self.emit("bool", f"isfinite({self.operand(x)})")

    def maximum(self, a, b):
        # numpy's maximum: NaN if either is NaN
        a, b = self.operand(a), self.operand(b)
        return self.emit("double", f"(isnan({a}) ? {a} : (isnan({b}) ? {b} : ({a} >= {b} ? {a} : {b})))")

    def where(self, c, a, b):
        return self.emit("double", f"({self.operand(c)} ? {self.operand(a)} : {self.operand(b)})")


@dataclass
class _SymErrors:
    y: Sym
    ay: Sym
    yy: Sym


def body(device: bool) -> str:
    """The C statements of one pair: inputs ``q_`` + ``MOMENTS`` and ``q_ey, q_eay, q_eyy``; outputs
    ``o_`` + ``OUTPUTS``' names."""
    tr = Trace(device)
    mom = [Sym(tr, f"q_{m}", "double") for m in MOMENTS]
    errs = _SymErrors(Sym(tr, "q_ey", "double"), Sym(tr, "q_eay", "double"), Sym(tr, "q_eyy", "double"))
    outs = linear_screen(tr, mom, errs)
    tail = [f"o_{name} = {o.name};" for (name, _), o in zip(OUTPUTS, outs)]
    return "\n".join(tr.lines + tail)


def host_source() -> str:
    """A C function ``gb_qt_screen(m, in[14], ey, eay, eyy, stat, ok, margin, unsure)`` (the tests)."""
    args = "\n".join(f"    double q_{m} = in[{k}][i];" for k, m in enumerate(MOMENTS))
    decl = "\n".join(f"    {'double' if t == 'double' else 'bool'} o_{n};" for n, t in OUTPUTS)
    outs = "\n".join(f"    {n}_out[i] = o_{n};" for n, _ in OUTPUTS)
    return f"""#include <math.h>
#include <stdbool.h>
void gb_qt_screen(long m, const double **in, double q_ey, double q_eay, double q_eyy, double *stat_out,
                  bool *ok_out, double *margin_out, bool *unsure_out) {{
  for (long i = 0; i < m; i++) {{
{args}
{decl}
{body(False)}
{outs}
  }}
}}
"""


@functools.lru_cache(maxsize=None)
def device_kernel():
    """The CuPy ElementwiseKernel (compiled once per process)."""
    from gboost.engines.cupy_import import import_cupy

    cupy = import_cupy()

    ins = ", ".join(f"float64 q_{m}" for m in MOMENTS) + ", float64 q_ey, float64 q_eay, float64 q_eyy"
    outs = ", ".join(f"{'float64' if t == 'double' else 'bool'} o_{n}" for n, t in OUTPUTS)
    return cupy.ElementwiseKernel(ins, outs, body(True), "gb_qt_screen")


def fused_screen(xp, mom, errs):
    """:func:`gboost.engines.qt_screen.linear_screen` as one kernel on the device (same results)."""
    return device_kernel()(*mom, errs.y, errs.ay, errs.yy)
