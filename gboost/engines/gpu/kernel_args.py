"""The screen kernels' arguments, described once, here: their fields in order with their C types.

* The CUDA cores' kernels (kernels/boost_screen.cu) take one struct by value, ``gb_params`` (around
  ``gb_tile_args``, kernels/boost_common.cu). From its description come the NumPy structured dtype
  the host fills (CuPy passes a structured scalar's bytes as the struct: :func:`pack`) and the
  ``static_assert``s of every field's offset and of the struct's size that compile.py appends to the
  source (:func:`layout_asserts`), so the device's layout and this one agree or nothing compiles:
  every offset with nvcc on any host (tests/unit/test_kernel_compile.py), the size on the device too
  (NVRTC's front end has no ``__builtin_offsetof``: "type name is not allowed").
* The tensor cores' kernels (kernels/boost_mma.cu) take the same fields as separate arguments
  (``gm_screen`` below, its nested fields flattened in order): their argument list and its forwarding
  are generated from this description (:func:`arg_macros`, ``GM_SCREEN_ARGS`` / ``GM_SCREEN_PASS``) and
  the host passes :func:`flat` of the same values. As one struct, nvcc 13 allocated their registers
  otherwise and several spilled more (see docs/DESIGN.md §6), so they keep the separate arguments,
  written once.

A field is ``(name, C type)``, or ``(name, fields)`` for a nested struct. A pointer's value is a CuPy
array (its ``data.ptr``), an int or None (0).
"""
from __future__ import annotations

import numpy as np

PARTIALS = (("rp_sig", "int*"), ("rp_tot", "int*"), ("rp_best", "double*"), ("rp_partner", "int*"),
            ("cp_sig", "int*"), ("cp_tot", "int*"), ("cp_best", "double*"), ("cp_partner", "int*"))
TILE = (("planes_r", "const gb_u64*"), ("stride_r", "int"), ("off_r", "int"), ("planes_c", "const gb_u64*"),
        ("stride_c", "int"), ("off_c", "int"), ("counts", "const int*"), ("miss", "const unsigned char*"),
        ("xlx", "const double*"), ("thr", "const double*"), ("n_k", "int"), ("k_ctrl", "int"), ("i0", "int"),
        ("ni", "int"), ("j0", "int"), ("nj", "int"), ("diag", "int"), ("write_empty", "int"), ("n_tab", "int"),
        ("surv_n", "gb_u32*"), ("surv_cap", "int"), ("surv_ij", "int*"), ("surv_ksa", "double*"),
        ("surv_tab", "int*"), ("part", PARTIALS))
STRUCTS = {
    "gm_screen": (("t", TILE), ("bar", "float*"), ("barc", "float*")),
    "gb_params": (("t", TILE), ("one", "int"), ("gt", "const gb_u32*"), ("S", "long long"), ("G", "int"),
                  ("lst", "const unsigned short*"), ("L1", "int")),
}
_SCALARS = {"int": np.int32, "long long": np.int64}


def _is_ptr(ctype) -> bool:
    return isinstance(ctype, str) and ctype.endswith("*")


def dtype_of(fields) -> np.dtype:
    """The structured dtype of ``fields`` with C's alignment (NumPy's ``align=True``)."""
    return np.dtype([(name, dtype_of(c) if isinstance(c, tuple) else np.uint64 if _is_ptr(c) else _SCALARS[c])
                     for name, c in fields], align=True)


DTYPES = {name: dtype_of(fields) for name, fields in STRUCTS.items()}


def leaves(fields, dt: np.dtype | None = None, prefix: str = "", base: int = 0):
    """(C member designator ``a.b``, C type, offset) of every scalar field, in order."""
    dt = dtype_of(fields) if dt is None else dt
    for name, c in fields:
        off = base + dt.fields[name][1]
        if isinstance(c, tuple):
            yield from leaves(c, dt.fields[name][0], f"{prefix}{name}.", off)
        else:
            yield f"{prefix}{name}", c, off


def layout_asserts(struct: str) -> str:
    """CUDA ``static_assert``s that ``struct`` has this description's offsets and size."""
    dt = DTYPES[struct]
    lines = ["#ifndef __CUDACC_RTC__  // (NVRTC cannot take offsets in a constant expression)"]
    lines += [f'static_assert(__builtin_offsetof({struct}, {m}) == {o}, "{struct}.{m}: offset {o} in '
              f'gboost/engines/gpu/kernel_args.py");' for m, _, o in leaves(STRUCTS[struct], dt)]
    lines.append("#endif")
    lines.append(f'static_assert(sizeof({struct}) == {dt.itemsize}, "{struct}: {dt.itemsize} bytes in '
                 f'gboost/engines/gpu/kernel_args.py");')
    return "\n".join(lines) + "\n"


def arg_macros(struct: str, prefix: str) -> str:
    """``#define PREFIX_ARGS`` (the fields as a parameter list, pointers ``__restrict__``, each named by its
    last part) and ``PREFIX_PASS`` (those names, to forward them)."""
    params, names = [], []
    for m, c, _ in leaves(STRUCTS[struct]):
        name = m.rsplit(".", 1)[-1]
        params.append(f"{c[:-1]}* __restrict__ {name}" if _is_ptr(c) else f"{c} {name}")
        names.append(name)
    assert len(set(names)) == len(names), names
    return f"#define {prefix}_ARGS {', '.join(params)}\n#define {prefix}_PASS {', '.join(names)}\n"


def _pointer(v) -> int:
    if v is None:
        return 0
    data = getattr(v, "data", None)
    return int(data.ptr) if data is not None and hasattr(data, "ptr") else int(v)


def _check(fields, values: dict) -> None:
    names = {name for name, _ in fields}
    if names != set(values):
        raise ValueError(f"kernel arguments: missing {sorted(names - set(values))}, "
                         f"unknown {sorted(set(values) - names)}")


def _fill(rec, fields, values: dict) -> None:
    _check(fields, values)
    for name, c in fields:
        if isinstance(c, tuple):
            _fill(rec[name], c, values[name])
        else:
            rec[name] = _pointer(values[name]) if _is_ptr(c) else int(values[name])


def pack(struct: str, values: dict) -> np.void:
    """The structured scalar of ``struct`` with every field given by name (nested structs as dicts)."""
    rec = np.zeros((), dtype=DTYPES[struct])
    _fill(rec, STRUCTS[struct], values)
    return rec[()]


def flat(struct: str, values: dict) -> tuple:
    """The same values as separate kernel arguments, in the order of :func:`arg_macros` (the arrays as
    they are, the ints as the C type's NumPy scalar)."""
    out = []

    def walk(fields, vals):
        _check(fields, vals)
        for name, c in fields:
            v = vals[name]
            if isinstance(c, tuple):
                walk(c, v)
            else:
                out.append(v if _is_ptr(c) else _SCALARS[c](v))

    walk(STRUCTS[struct], values)
    return tuple(out)
