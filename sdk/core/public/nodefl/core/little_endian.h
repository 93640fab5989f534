// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Little-endian loads and stores for artefact formats (byte-by-byte, so
// they work at any alignment and on any host byte order).
#pragma once

#include <cstdint>
#include <cstring>

namespace nodefl {

inline void StoreU16Le(uint16_t v, uint8_t* out) {
  out[0] = static_cast<uint8_t>(v);
  out[1] = static_cast<uint8_t>(v >> 8);
}
inline void StoreU32Le(uint32_t v, uint8_t* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void StoreU64Le(uint64_t v, uint8_t* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline uint16_t LoadU16Le(const uint8_t* in) {
  return static_cast<uint16_t>(in[0] | (in[1] << 8));
}
inline uint32_t LoadU32Le(const uint8_t* in) {
  return uint32_t{in[0]} | uint32_t{in[1]} << 8 | uint32_t{in[2]} << 16 | uint32_t{in[3]} << 24;
}
inline uint64_t LoadU64Le(const uint8_t* in) {
  return uint64_t{LoadU32Le(in)} | uint64_t{LoadU32Le(in + 4)} << 32;
}
inline void StoreF32Le(float v, uint8_t* out) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  StoreU32Le(bits, out);
}
inline float LoadF32Le(const uint8_t* in) {
  const uint32_t bits = LoadU32Le(in);
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}
inline void StoreF64Le(double v, uint8_t* out) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  StoreU64Le(bits, out);
}
inline double LoadF64Le(const uint8_t* in) {
  const uint64_t bits = LoadU64Le(in);
  double v;
  std::memcpy(&v, &bits, 8);
  return v;
}
inline void StoreI32Le(int32_t v, uint8_t* out) { StoreU32Le(static_cast<uint32_t>(v), out); }
inline int32_t LoadI32Le(const uint8_t* in) { return static_cast<int32_t>(LoadU32Le(in)); }

}  // namespace nodefl
