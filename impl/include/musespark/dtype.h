// Element type tags for the framework-neutral core. The core never includes a
// framework header, so it carries its own tags; adapters map theirs onto these.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "musespark/host_device.h"

namespace musespark {

enum class DType : std::uint8_t {
  kFloat32,
  kBFloat16,
  kFloat16,
  kInt32,
  kInt64,
  kBool,
  kUInt8,
  kFloat8E4M3,
};

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::kFloat32: return 4;
    case DType::kBFloat16: return 2;
    case DType::kFloat16: return 2;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kBool: return 1;
    case DType::kUInt8: return 1;
    case DType::kFloat8E4M3: return 1;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat16: return "float16";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kBool: return "bool";
    case DType::kUInt8: return "uint8";
    case DType::kFloat8E4M3: return "float8_e4m3fn";
  }
  return "unknown";
}

// Exact widening of 16-bit floats to fp32, written on the bit patterns so the
// host (no <cuda_fp16.h>) and the device agree bit for bit.
MS_HOST_DEVICE inline float bits_as_float(std::uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

MS_HOST_DEVICE inline std::uint32_t float_as_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

MS_HOST_DEVICE inline float bf16_bits_to_float(std::uint16_t h) {
  return bits_as_float(static_cast<std::uint32_t>(h) << 16);
}

MS_HOST_DEVICE inline float fp16_bits_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1Fu;
  std::uint32_t man = h & 0x3FFu;
  if (exp == 0x1Fu) return bits_as_float(sign | 0x7F800000u | (man << 13));  // inf / NaN
  if (exp == 0) {
    if (man == 0) return bits_as_float(sign);  // signed zero
    // Subnormal half: value = man * 2^-24, exactly representable in fp32.
    const float mag = static_cast<float>(man) * 5.9604644775390625e-8f;
    return sign ? -mag : mag;
  }
  return bits_as_float(sign | ((exp + 112u) << 23) | (man << 13));
}

// Round-to-nearest-even narrowing, used only to build test inputs on the host.
inline std::uint16_t float_to_bf16_bits(float f) {
  std::uint32_t u = float_as_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7FFFu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

std::uint16_t float_to_fp16_bits(float f);

// Reads one logit of any supported float dtype and widens it exactly.
MS_HOST_DEVICE inline float load_logit(const void* base, DType t, std::int64_t offset) {
  switch (t) {
    case DType::kBFloat16: return bf16_bits_to_float(static_cast<const std::uint16_t*>(base)[offset]);
    case DType::kFloat16: return fp16_bits_to_float(static_cast<const std::uint16_t*>(base)[offset]);
    default: return static_cast<const float*>(base)[offset];
  }
}

}  // namespace musespark
