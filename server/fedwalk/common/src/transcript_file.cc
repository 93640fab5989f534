// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/server/fedwalk/common/transcript_file.h"

#include <cstring>
#include <fstream>
#include <iterator>

#include "nodefl/core/little_endian.h"

namespace nodefl::server::fedwalk {
namespace {

constexpr char kMagic[8] = {'N', 'F', 'H', 'C', 'T', 'T', 'R', '1'};

void PutU32(std::vector<uint8_t>& out, uint32_t v) {
  const size_t at = out.size();
  out.resize(at + 4);
  StoreU32Le(v, out.data() + at);
}

// Reads forward through a byte vector; every read checks the bounds.
class Reader {
 public:
  explicit Reader(const std::vector<uint8_t>& bytes) : bytes_(bytes) {}
  bool Has(size_t n) const { return bytes_.size() - at_ >= n; }
  const uint8_t* Take(size_t n) {
    const uint8_t* p = bytes_.data() + at_;
    at_ += n;
    return p;
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  const std::vector<uint8_t>& bytes_;
  size_t at_ = 0;
};

}  // namespace

std::vector<uint8_t> SerializeTranscript(const HctTranscript& t) {
  std::vector<uint8_t> out(kMagic, kMagic + 8);
  out.push_back(static_cast<uint8_t>(t.mode));
  PutU32(out, t.vertex_count);
  PutU32(out, t.bins);
  PutU32(out, t.buckets);
  out.insert(out.end(), t.bin_plan.begin(), t.bin_plan.end());
  for (float f : t.dictionary) {
    const size_t at = out.size();
    out.resize(at + 4);
    StoreF32Le(f, out.data() + at);
  }
  const bool paper = t.mode == PrivacyMode::kPaper;
  PutU32(out, static_cast<uint32_t>(paper ? t.ordered_matrices.size() : t.histograms.size()));
  auto put_values = [&out](uint32_t device, const auto& values) {
    PutU32(out, device);
    PutU32(out, static_cast<uint32_t>(values.size()));
    for (auto v : values) {
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      PutU32(out, bits);
    }
  };
  if (paper) {
    for (const auto& [device, m] : t.ordered_matrices) put_values(device, m);
  } else {
    for (const auto& [device, h] : t.histograms) put_values(device, h);
  }
  return out;
}

std::optional<HctTranscript> ParseTranscript(const std::vector<uint8_t>& bytes, std::string* error) {
  auto fail = [error](const char* why) -> std::optional<HctTranscript> {
    if (error != nullptr) *error = why;
    return std::nullopt;
  };
  Reader r(bytes);
  if (!r.Has(8 + 1 + 12) || std::memcmp(r.Take(8), kMagic, 8) != 0) return fail("not a transcript file");
  HctTranscript t;
  const uint8_t mode = *r.Take(1);
  if (mode > 1) return fail("unknown mode");
  t.mode = static_cast<PrivacyMode>(mode);
  t.vertex_count = LoadU32Le(r.Take(4));
  t.bins = LoadU32Le(r.Take(4));
  t.buckets = LoadU32Le(r.Take(4));
  if (t.bins == 0 || t.bins > 16 || t.buckets > 24) return fail("bins or buckets out of range");
  const size_t dict = size_t{t.vertex_count} * t.bins;
  if (!r.Has(t.vertex_count) ) return fail("truncated bin plan");
  const uint8_t* plan = r.Take(t.vertex_count);
  t.bin_plan.assign(plan, plan + t.vertex_count);
  if (!r.Has(dict * 4)) return fail("truncated dictionary");
  t.dictionary.resize(dict);
  for (size_t i = 0; i < dict; ++i) t.dictionary[i] = LoadF32Le(r.Take(4));
  if (!r.Has(4)) return fail("truncated upload count");
  const uint32_t uploads = LoadU32Le(r.Take(4));
  for (uint32_t u = 0; u < uploads; ++u) {
    if (!r.Has(8)) return fail("truncated upload header");
    const uint32_t device = LoadU32Le(r.Take(4));
    const uint32_t values = LoadU32Le(r.Take(4));
    if (!r.Has(size_t{values} * 4)) return fail("truncated upload");
    if (t.mode == PrivacyMode::kPaper) {
      std::vector<float>& m = t.ordered_matrices[device];
      m.resize(values);
      for (uint32_t i = 0; i < values; ++i) m[i] = LoadF32Le(r.Take(4));
    } else {
      std::vector<int32_t>& h = t.histograms[device];
      h.resize(values);
      for (uint32_t i = 0; i < values; ++i) h[i] = LoadI32Le(r.Take(4));
    }
  }
  if (!r.done()) return fail("trailing bytes");
  return t;
}

std::optional<HctTranscript> LoadTranscript(const std::filesystem::path& file, std::string* error) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    if (error != nullptr) *error = "cannot open " + file.string();
    return std::nullopt;
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return ParseTranscript(bytes, error);
}

}  // namespace nodefl::server::fedwalk
