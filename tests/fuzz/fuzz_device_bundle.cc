// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// ParseDeviceBundle (host/pki/device_bundle.h) on any bytes: the bundle file
// holds every device's private key and the emulator reads it from disk, so a
// damaged or hostile file must give an error, never a crash or a read past
// the input. Whatever parses must be a bundle SerializeDeviceBundle can
// write: serializing it must succeed and reproduce the input byte for byte
// (the layout has exactly one encoding and "readers reject anything that
// does not match exactly"), and those bytes must parse back to a bundle
// that serializes to the same bytes again. An accepted input must also stop
// being accepted when one byte is cut off its end or added to it (no
// trailing bytes, lengths that really cover the data). A refused input must
// say why.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "nodefl/host/pki/device_bundle.h"

namespace {

namespace pki = nodefl::pki;

void Check(bool ok) {
  if (!ok) std::abort();
}

// What the format allows in a parsed bundle; the parser must not hand out
// anything SerializeDeviceBundle would refuse to write.
void CheckShape(const pki::DeviceBundle& bundle) {
  Check(!bundle.ca_der.empty());
  for (const pki::DeviceRecord& device : bundle.devices) {
    Check(!device.certificate_der.empty() && device.certificate_der.size() <= 0xFFFF);
    Check(!device.private_key_der.empty() && device.private_key_der.size() <= 0xFFFF);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A copy the checks below can extend by one byte; like libFuzzer's own
  // buffer it holds exactly `size` bytes, so ASan flags a read past the end.
  std::vector<uint8_t> input(data, data + size);
  pki::DeviceBundle bundle;
  const pki::PkiResult parsed = ParseDeviceBundle(input.data(), input.size(), &bundle);
  if (!parsed.ok()) {
    Check(!parsed.message().empty());
    return 0;
  }
  CheckShape(bundle);

  std::vector<uint8_t> first;
  Check(SerializeDeviceBundle(bundle, &first).ok());
  Check(first == input);

  pki::DeviceBundle again;
  Check(ParseDeviceBundle(first.data(), first.size(), &again).ok());
  Check(again.ca_der == bundle.ca_der && again.devices.size() == bundle.devices.size());
  std::vector<uint8_t> second;
  Check(SerializeDeviceBundle(again, &second).ok());
  Check(second == first);

  // One byte short: the last record (or the CA) no longer fits.
  pki::DeviceBundle scratch;
  Check(!ParseDeviceBundle(input.data(), input.size() - 1, &scratch).ok());
  // One byte more: trailing bytes after the last record.
  input.push_back(0);
  Check(!ParseDeviceBundle(input.data(), input.size(), &scratch).ok());
  return 0;
}
