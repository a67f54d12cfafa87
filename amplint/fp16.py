"""Facts about float16 and bfloat16 (and float32, the format they are compared with), computed
from the formats' bit layouts.

Nothing here is typed in as a decimal: every limit is derived from the bit patterns (float16 through
``struct``'s ``'e'`` format, float32 through ``'f'``, bfloat16 as the top half of a float32), so the
numbers quoted in rule messages and pages cannot drift from the formats themselves.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from enum import Enum


class Representation(Enum):
    ZERO = "zero"  # rounds to exactly 0: a guard constant is gone
    SUBNORMAL = "subnormal"  # survives with reduced precision
    NORMAL = "normal"
    OVERFLOW = "overflow"  # beyond the largest finite value: inf, or a RuntimeError in masked_fill


def _half_from_bits(bits: int) -> float:
    return struct.unpack("<e", bits.to_bytes(2, "little"))[0]


def _bf16_from_bits(bits: int) -> float:
    # bfloat16 is the upper 16 bits of a float32.
    return struct.unpack("<f", (bits << 16).to_bytes(4, "little"))[0]


def _f32_from_bits(bits: int) -> float:
    return struct.unpack("<f", bits.to_bytes(4, "little"))[0]


def _round_f32(x: float) -> float:
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def _round_bf16(x: float) -> float:
    if math.isnan(x) or math.isinf(x):
        return x
    try:
        (bits,) = struct.unpack("<I", struct.pack("<f", x))
    except OverflowError:
        return math.copysign(math.inf, x)
    # Round to nearest even on the 16 bits that are dropped.
    bits += 0x7FFF + ((bits >> 16) & 1)
    return _bf16_from_bits((bits >> 16) & 0xFFFF)


def _round_half(x: float) -> float:
    try:
        return struct.unpack("<e", struct.pack("<e", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


@dataclass(frozen=True)
class FloatFormat:
    name: str
    exponent_bits: int
    fraction_bits: int

    def _from_bits(self, bits: int) -> float:
        return {"float16": _half_from_bits, "bfloat16": _bf16_from_bits, "float32": _f32_from_bits}[self.name](bits)

    @property
    def max(self) -> float:
        # sign 0, exponent all ones but the last bit, fraction all ones
        bits = (((1 << self.exponent_bits) - 2) << self.fraction_bits) | ((1 << self.fraction_bits) - 1)
        return self._from_bits(bits)

    @property
    def smallest_normal(self) -> float:
        return self._from_bits(1 << self.fraction_bits)

    @property
    def smallest_subnormal(self) -> float:
        return self._from_bits(1)

    @property
    def underflow_threshold(self) -> float:
        """Values of smaller magnitude than this round to zero (half the smallest subnormal;
        the halfway point itself rounds to even, i.e. to zero)."""
        return self.smallest_subnormal / 2

    @property
    def epsilon_below_one(self) -> float:
        """Spacing of representable values just below 1.0."""
        return 2.0 ** -(self.fraction_bits + 1)

    def round(self, x: float) -> float:
        return {"float16": _round_half, "bfloat16": _round_bf16, "float32": _round_f32}[self.name](x)

    def classify(self, x: float) -> Representation:
        r = self.round(float(x))
        if math.isinf(r) and not math.isinf(x):
            return Representation.OVERFLOW
        if r == 0.0 and x != 0.0:
            return Representation.ZERO
        if r != 0.0 and abs(r) < self.smallest_normal:
            return Representation.SUBNORMAL
        return Representation.NORMAL


FLOAT16 = FloatFormat("float16", exponent_bits=5, fraction_bits=10)
BFLOAT16 = FloatFormat("bfloat16", exponent_bits=8, fraction_bits=7)
FLOAT32 = FloatFormat("float32", exponent_bits=8, fraction_bits=23)

# torch's names of these dtypes (torch/_C/_VariableFunctions: torch.half is torch.float16, torch.float
# is torch.float32)
_TORCH_DTYPES = {"torch.float16": FLOAT16, "torch.half": FLOAT16, "torch.bfloat16": BFLOAT16,
                 "torch.float32": FLOAT32, "torch.float": FLOAT32}


def finfo(dtype: str, attribute: str):
    """``torch.finfo(<dtype>).<attribute>`` for a dtype named as torch names it (``torch.float32``):
    ``max``, ``min`` (= -max), ``tiny`` / ``smallest_normal``, ``eps`` (the spacing above 1.0);
    None for another dtype or attribute."""
    f = _TORCH_DTYPES.get(dtype)
    if f is None:
        return None
    values = {"max": f.max, "min": -f.max, "tiny": f.smallest_normal, "smallest_normal": f.smallest_normal,
              "eps": 2.0 * f.epsilon_below_one}
    return values.get(attribute)


def fmt(x: float) -> str:
    """Short human form of a float for messages, as people write them: 6.1e-5, 65504, 1e-8, -1e9."""
    if x == 0 or (1e-3 <= abs(x) < 1e6):
        return f"{x:g}"
    mantissa, _, exponent = f"{x:.3g}".partition("e")
    return f"{mantissa}e{int(exponent)}" if exponent else mantissa


def pow2(x: float) -> str:
    """'2^-24' for an exact power of two."""
    return f"2^{int(math.log2(x))}"


def describe_in_half(x: float) -> str:
    """'1e-08 rounds to 0 in float16 (smallest subnormal 2^-24 ≈ 5.96e-08)' and the like."""
    kind = FLOAT16.classify(x)
    if kind is Representation.ZERO:
        return (f"{fmt(x)} rounds to 0 in float16 (smallest subnormal "
                f"{pow2(FLOAT16.smallest_subnormal)} ≈ {fmt(FLOAT16.smallest_subnormal)})")
    if kind is Representation.SUBNORMAL:
        return (f"{fmt(x)} is subnormal in float16 (below the smallest normal "
                f"{pow2(FLOAT16.smallest_normal)} ≈ {fmt(FLOAT16.smallest_normal)}; "
                f"stored as {fmt(FLOAT16.round(x))})")
    if kind is Representation.OVERFLOW:
        return f"{fmt(x)} is beyond float16's largest finite value ±{fmt(FLOAT16.max)}"
    return f"{fmt(x)} is a normal float16 value"
