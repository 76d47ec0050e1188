#include "musespark/dtype.h"

namespace musespark {

std::uint16_t float_to_fp16_bits(float f) {
  const std::uint32_t u = float_as_bits(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return sign | 0x7E00u;   // NaN
  if (abs >= 0x477FF000u) return sign | 0x7C00u;  // rounds to inf
  if (abs < 0x33000001u) return sign;             // rounds to zero
  const int exp = static_cast<int>(abs >> 23) - 127;
  std::uint32_t man = (abs & 0x7FFFFFu) | 0x800000u;
  int shift;
  std::uint32_t base;
  if (exp < -14) {  // subnormal half
    shift = -exp - 14 + 13;
    base = 0;
  } else {
    shift = 13;
    base = static_cast<std::uint32_t>(exp + 15) << 10;
    man &= 0x7FFFFFu;
  }
  std::uint32_t half_man = man >> shift;
  const std::uint32_t rem = man & ((1u << shift) - 1u);
  const std::uint32_t halfway = 1u << (shift - 1);
  std::uint32_t r = base + half_man;
  if (rem > halfway || (rem == halfway && (half_man & 1u))) r += 1;  // carries into exp
  return static_cast<std::uint16_t>(sign | r);
}

}  // namespace musespark
