// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "commands.h"

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "args.h"
#include "files.h"
#include "nodefl/host/pki/cert_issuer.h"
#include "nodefl/host/pki/device_bundle.h"
#include "nodefl/host/pki/ec_key.h"

namespace nodefl::ca {

const char kUsage[] =
    "usage: nodefl-ca <command> [options]\n"
    "\n"
    "Creates the certificate authority of a nodefl deployment and issues the\n"
    "server's and the devices' certificates (P-256 keys, ECDSA-SHA256).\n"
    "\n"
    "commands:\n"
    "  init     create the CA in a directory (ca.key, ca.crt)\n"
    "  server   issue the server certificate\n"
    "  devices  issue device certificates for a range of ids\n"
    "\n"
    "'nodefl-ca <command> --help' describes a command. Files are never\n"
    "overwritten; private keys are written with mode 0600.\n";

const char kInitUsage[] =
    "usage: nodefl-ca init --dir DIR [--name NAME] [--days N]\n"
    "\n"
    "Creates DIR (if needed) with the deployment CA: DIR/ca.key (private\n"
    "key, PEM, mode 0600) and DIR/ca.crt (self-signed certificate, PEM).\n"
    "Refuses if either file exists.\n"
    "\n"
    "  --dir DIR    CA directory\n"
    "  --name NAME  CA common name (default \"nodefl deployment CA\")\n"
    "  --days N     validity in days (default 3650)\n";

const char kServerUsage[] =
    "usage: nodefl-ca server --dir DIR --out PREFIX --name HOST [--days N]\n"
    "\n"
    "Issues the server certificate: PREFIX.crt (CN=HOST and subjectAltName\n"
    "DNS:HOST, PEM) and PREFIX.key (PEM, mode 0600). Devices connect with\n"
    "HOST as the expected server name.\n"
    "\n"
    "  --dir DIR      CA directory made by 'nodefl-ca init'\n"
    "  --out PREFIX   output path prefix, e.g. /etc/nodefl/server\n"
    "  --name HOST    the server's DNS name, e.g. localhost\n"
    "  --days N       validity in days (default 730; never beyond the CA's)\n";

const char kDevicesUsage[] =
    "usage: nodefl-ca devices --dir DIR --out OUTDIR --first-id A --count N\n"
    "                         [--days N] [--jobs J] [--bundle-only]\n"
    "\n"
    "Issues certificates for devices A, A+1, ..., A+N-1 (CN=device-<id>):\n"
    "OUTDIR/device-<id>.crt and OUTDIR/device-<id>.key (PEM, key mode 0600),\n"
    "plus OUTDIR/devices.bundle with the CA and every device's certificate\n"
    "and key in DER, which the emulator loads in one read (format in\n"
    "docs/security.md; mode 0600). Progress goes to stderr.\n"
    "\n"
    "  --dir DIR       CA directory made by 'nodefl-ca init'\n"
    "  --out OUTDIR    output directory (created if missing)\n"
    "  --first-id A    first device id (0 to 4294967295)\n"
    "  --count N       number of devices (1 to 10000000)\n"
    "  --days N        validity in days (default 730; never beyond the CA's)\n"
    "  --jobs J        worker threads (default: the number of cores, at most 16)\n"
    "  --bundle-only   write only devices.bundle, no per-device files\n";

namespace {

constexpr mode_t kPrivateMode = 0600;
constexpr mode_t kPublicMode = 0644;
constexpr mode_t kDirectoryMode = 0700;
constexpr uint64_t kProgressInterval = 1000;

bool WantsHelp(const std::vector<std::string>& args) {
  return std::find(args.begin(), args.end(), "--help") != args.end() ||
         std::find(args.begin(), args.end(), "-h") != args.end();
}

int UsageError(const std::string& message, const char* usage) {
  std::fprintf(stderr, "nodefl-ca: %s\n\n%s", message.c_str(), usage);
  return kExitUsage;
}

int Failure(const std::string& message) {
  std::fprintf(stderr, "nodefl-ca: %s\n", message.c_str());
  return kExitFailure;
}

// A CSPRNG for key generation: CTR_DRBG seeded from the system's entropy.
// One per thread.
class SystemRandom {
 public:
  SystemRandom() {
    mbedtls_entropy_init(&entropy_);
    mbedtls_ctr_drbg_init(&drbg_);
  }
  ~SystemRandom() {
    mbedtls_ctr_drbg_free(&drbg_);
    mbedtls_entropy_free(&entropy_);
  }
  SystemRandom(const SystemRandom&) = delete;
  SystemRandom& operator=(const SystemRandom&) = delete;

  bool Seed(const std::string& personalization) {
    return mbedtls_ctr_drbg_seed(&drbg_, mbedtls_entropy_func, &entropy_,
                                 reinterpret_cast<const unsigned char*>(personalization.data()),
                                 personalization.size()) == 0;
  }
  pki::Random random() { return pki::Random{&mbedtls_ctr_drbg_random, &drbg_}; }

 private:
  mbedtls_entropy_context entropy_;
  mbedtls_ctr_drbg_context drbg_;
};

std::string Join(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

// The CA's certificate and key as read from a CA directory.
struct CaFiles {
  std::vector<uint8_t> certificate;
  std::vector<uint8_t> key;
};

std::optional<CaFiles> ReadCa(const std::string& dir, std::string* error) {
  CaFiles files;
  if (!ReadWholeFile(Join(dir, "ca.crt"), &files.certificate, error) ||
      !ReadWholeFile(Join(dir, "ca.key"), &files.key, error)) {
    *error += " (run 'nodefl-ca init --dir " + dir + "' first?)";
    return std::nullopt;
  }
  return files;
}

pki::PkiResult MakeIssuer(const CaFiles& ca, pki::CertificateIssuer* issuer) {
  pki::EcKey key;
  pki::PkiResult result = key.Parse(ca.key.data(), ca.key.size());
  if (!result.ok()) return pki::PkiResult::Fail("ca.key: " + result.message());
  result = issuer->Init(ca.certificate, key);
  if (!result.ok()) return pki::PkiResult::Fail("ca.crt: " + result.message());
  return result;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int RunInit(const std::vector<std::string>& args) {
  if (WantsHelp(args)) {
    std::fputs(kInitUsage, stdout);
    return kExitOk;
  }
  std::string error;
  const auto options = Options::Parse(args, {"dir", "name", "days"}, {}, &error);
  if (!options) return UsageError(error, kInitUsage);
  const auto dir = options->Required("dir", &error);
  if (!dir) return UsageError(error, kInitUsage);
  const std::string name = options->Or("name", "nodefl deployment CA");
  if (!pki::IsPlainName(name)) {
    return UsageError("--name must be 1-64 printable characters without , = + \" \\ < > ; #",
                      kInitUsage);
  }
  const auto days = options->Number("days", 3650, 1, 36500, &error);
  if (!days) return UsageError(error, kInitUsage);

  const std::string key_path = Join(*dir, "ca.key");
  const std::string cert_path = Join(*dir, "ca.crt");
  if (PathExists(key_path) || PathExists(cert_path)) {
    return Failure(*dir + " already holds a CA (ca.key or ca.crt exists); nodefl-ca never "
                          "overwrites");
  }
  if (!EnsureDirectory(*dir, kDirectoryMode, &error)) return Failure(error);

  SystemRandom rng;
  if (!rng.Seed("nodefl-ca init")) return Failure("cannot seed the random generator");
  pki::KeyGenerator generator;
  pki::EcKey key;
  pki::PkiResult result = generator.Generate(rng.random(), &key);
  std::vector<uint8_t> certificate;
  if (result.ok()) {
    result = pki::CreateCaCertificate(
        name, pki::ValidityForDays(pki::UnixNow(), static_cast<uint32_t>(*days)), key,
        rng.random(), &certificate);
  }
  if (!result.ok()) return Failure(result.message());
  const std::string key_pem = key.PrivateKeyPem();
  const std::string cert_pem = pki::CertificatePem(certificate);
  if (key_pem.empty() || cert_pem.empty()) return Failure("cannot encode the CA");
  // The key first: a certificate without its key would be useless.
  if (!WriteNewFile(key_path, key_pem, kPrivateMode, &error)) return Failure(error);
  if (!WriteNewFile(cert_path, cert_pem, kPublicMode, &error)) return Failure(error);
  std::fprintf(stderr, "nodefl-ca: created CA \"%s\" in %s (valid %llu days)\n", name.c_str(),
               dir->c_str(), static_cast<unsigned long long>(*days));
  return kExitOk;
}

int RunServer(const std::vector<std::string>& args) {
  if (WantsHelp(args)) {
    std::fputs(kServerUsage, stdout);
    return kExitOk;
  }
  std::string error;
  const auto options = Options::Parse(args, {"dir", "out", "name", "days"}, {}, &error);
  if (!options) return UsageError(error, kServerUsage);
  const auto dir = options->Required("dir", &error);
  if (!dir) return UsageError(error, kServerUsage);
  const auto out = options->Required("out", &error);
  if (!out) return UsageError(error, kServerUsage);
  const auto name = options->Required("name", &error);
  if (!name) return UsageError(error, kServerUsage);
  if (!pki::IsPlainName(*name)) return UsageError("--name is not a usable host name", kServerUsage);
  const auto days = options->Number("days", 730, 1, 36500, &error);
  if (!days) return UsageError(error, kServerUsage);

  const std::string cert_path = *out + ".crt";
  const std::string key_path = *out + ".key";
  if (PathExists(cert_path) || PathExists(key_path)) {
    return Failure(cert_path + " or " + key_path + " already exists; nodefl-ca never overwrites");
  }
  const auto ca = ReadCa(*dir, &error);
  if (!ca) return Failure(error);
  pki::CertificateIssuer issuer;
  pki::PkiResult result = MakeIssuer(*ca, &issuer);
  if (!result.ok()) return Failure(result.message());

  SystemRandom rng;
  if (!rng.Seed("nodefl-ca server")) return Failure("cannot seed the random generator");
  pki::KeyGenerator generator;
  pki::EcKey key;
  result = generator.Generate(rng.random(), &key);
  pki::LeafRequest request;
  request.kind = pki::LeafKind::kServer;
  request.common_name = *name;
  request.dns_name = *name;
  request.validity = pki::ValidityForDays(pki::UnixNow(), static_cast<uint32_t>(*days));
  std::vector<uint8_t> certificate;
  bool clamped = false;
  if (result.ok()) result = issuer.Issue(request, key, rng.random(), &certificate, &clamped);
  if (!result.ok()) return Failure(result.message());
  if (clamped) std::fprintf(stderr, "nodefl-ca: validity cut to end with the CA's\n");
  const std::string key_pem = key.PrivateKeyPem();
  const std::string cert_pem = pki::CertificatePem(certificate);
  if (key_pem.empty() || cert_pem.empty()) return Failure("cannot encode the certificate");
  if (!WriteNewFile(key_path, key_pem, kPrivateMode, &error)) return Failure(error);
  if (!WriteNewFile(cert_path, cert_pem, kPublicMode, &error)) return Failure(error);
  std::fprintf(stderr, "nodefl-ca: issued server certificate for %s: %s, %s\n", name->c_str(),
               cert_path.c_str(), key_path.c_str());
  return kExitOk;
}

namespace {

// Shared state of the device-issuing workers.
struct DeviceRun {
  const CaFiles* ca = nullptr;
  std::string out_dir;
  uint32_t first_id = 0;
  pki::Validity validity;
  bool write_files = true;
  std::vector<pki::DeviceRecord>* records = nullptr;  // slot i: device first_id + i
  uint64_t total = 0;
  std::chrono::steady_clock::time_point start;

  std::atomic<uint64_t> done{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> clamped{false};
  std::mutex mutex;  // guards first_error and stderr lines
  std::string first_error;

  void Report(const std::string& error) {
    std::lock_guard<std::mutex> lock(mutex);
    if (first_error.empty()) first_error = error;
    stop = true;
  }
};

void IssueDeviceRange(DeviceRun* run, uint64_t begin, uint64_t end, unsigned worker) {
  SystemRandom rng;
  if (!rng.Seed("nodefl-ca devices worker " + std::to_string(worker))) {
    run->Report("cannot seed the random generator");
    return;
  }
  pki::CertificateIssuer issuer;
  pki::PkiResult result = MakeIssuer(*run->ca, &issuer);
  if (!result.ok()) {
    run->Report(result.message());
    return;
  }
  pki::KeyGenerator generator;
  std::string error;
  for (uint64_t slot = begin; slot < end && !run->stop; ++slot) {
    const uint32_t id = static_cast<uint32_t>(run->first_id + slot);
    pki::EcKey key;
    pki::LeafRequest request;
    request.kind = pki::LeafKind::kDevice;
    request.common_name = pki::DeviceCommonName(id);
    request.validity = run->validity;
    pki::DeviceRecord& record = (*run->records)[slot];
    record.device_id = id;
    bool clamped = false;
    result = generator.Generate(rng.random(), &key);
    if (result.ok()) {
      result = issuer.Issue(request, key, rng.random(), &record.certificate_der, &clamped);
    }
    if (!result.ok()) {
      run->Report("device " + std::to_string(id) + ": " + result.message());
      return;
    }
    if (clamped) run->clamped = true;
    record.private_key_der = key.PrivateKeyDer();
    if (record.private_key_der.empty()) {
      run->Report("device " + std::to_string(id) + ": cannot encode the key");
      return;
    }
    if (run->write_files) {
      const std::string base = Join(run->out_dir, request.common_name);
      if (!WriteNewFile(base + ".key", key.PrivateKeyPem(), kPrivateMode, &error) ||
          !WriteNewFile(base + ".crt", pki::CertificatePem(record.certificate_der), kPublicMode,
                        &error)) {
        run->Report(error);
        return;
      }
    }
    const uint64_t done = ++run->done;
    if (done % kProgressInterval == 0 && done != run->total) {
      std::lock_guard<std::mutex> lock(run->mutex);
      std::fprintf(stderr, "nodefl-ca: %llu/%llu devices (%.1f s)\n",
                   static_cast<unsigned long long>(done),
                   static_cast<unsigned long long>(run->total), SecondsSince(run->start));
    }
  }
}

}  // namespace

int RunDevices(const std::vector<std::string>& args) {
  if (WantsHelp(args)) {
    std::fputs(kDevicesUsage, stdout);
    return kExitOk;
  }
  std::string error;
  const auto options = Options::Parse(args, {"dir", "out", "first-id", "count", "days", "jobs"},
                                      {"bundle-only"}, &error);
  if (!options) return UsageError(error, kDevicesUsage);
  const auto dir_option = options->Required("dir", &error);
  if (!dir_option) return UsageError(error, kDevicesUsage);
  const auto out_option = options->Required("out", &error);
  if (!out_option) return UsageError(error, kDevicesUsage);
  if (!options->Has("first-id")) return UsageError("missing --first-id", kDevicesUsage);
  if (!options->Has("count")) return UsageError("missing --count", kDevicesUsage);
  const auto first_id_option = options->Number("first-id", 0, 0, UINT32_MAX, &error);
  if (!first_id_option) return UsageError(error, kDevicesUsage);
  const auto count_option = options->Number("count", 0, 1, 10'000'000, &error);
  if (!count_option) return UsageError(error, kDevicesUsage);
  const auto days_option = options->Number("days", 730, 1, 36500, &error);
  if (!days_option) return UsageError(error, kDevicesUsage);
  const unsigned cores = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  const auto jobs_option = options->Number("jobs", cores, 1, 64, &error);
  if (!jobs_option) return UsageError(error, kDevicesUsage);
  const std::string* const dir = &*dir_option;
  const std::string* const out = &*out_option;
  const uint64_t first_id = *first_id_option;
  const uint64_t count = *count_option;
  const uint64_t days = *days_option;
  const uint64_t jobs = *jobs_option;
  if (first_id + count - 1 > UINT32_MAX) {
    return UsageError("--first-id + --count - 1 exceeds 4294967295", kDevicesUsage);
  }

  const std::string bundle_path = Join(*out, "devices.bundle");
  if (PathExists(bundle_path)) {
    return Failure(bundle_path + " already exists; nodefl-ca never overwrites");
  }
  const auto ca = ReadCa(*dir, &error);
  if (!ca) return Failure(error);
  std::vector<uint8_t> ca_der;
  {
    // Fail on a bad CA before creating anything. (The bundle carries the CA
    // in DER whatever form ca.crt has.)
    pki::CertificateIssuer check;
    const pki::PkiResult result = MakeIssuer(*ca, &check);
    if (!result.ok()) return Failure(result.message());
    ca_der = check.ca_der();
  }
  if (!EnsureDirectory(*out, kDirectoryMode, &error)) return Failure(error);

  std::vector<pki::DeviceRecord> records(count);
  DeviceRun run;
  run.ca = &*ca;
  run.out_dir = *out;
  run.first_id = static_cast<uint32_t>(first_id);
  run.validity = pki::ValidityForDays(pki::UnixNow(), static_cast<uint32_t>(days));
  run.write_files = !options->Has("bundle-only");
  run.records = &records;
  run.total = count;
  run.start = std::chrono::steady_clock::now();

  const uint64_t workers = std::min<uint64_t>(jobs, count);
  std::vector<std::thread> threads;
  threads.reserve(workers);
  for (uint64_t w = 0; w < workers; ++w) {
    const uint64_t begin = count * w / workers;
    const uint64_t end = count * (w + 1) / workers;
    threads.emplace_back(IssueDeviceRange, &run, begin, end, static_cast<unsigned>(w));
  }
  for (std::thread& thread : threads) thread.join();
  if (!run.first_error.empty()) {
    return Failure(run.first_error + " (files written so far remain in " + *out + ")");
  }
  if (run.clamped) std::fprintf(stderr, "nodefl-ca: validity cut to end with the CA's\n");

  pki::DeviceBundle bundle;
  bundle.ca_der = std::move(ca_der);
  bundle.devices = std::move(records);
  std::vector<uint8_t> bytes;
  if (const pki::PkiResult result = pki::SerializeDeviceBundle(bundle, &bytes); !result.ok()) {
    return Failure(result.message());
  }
  if (!WriteNewFile(bundle_path, bytes.data(), bytes.size(), kPrivateMode, &error)) {
    return Failure(error);
  }
  const double seconds = SecondsSince(run.start);
  std::fprintf(stderr,
               "nodefl-ca: issued %llu device certificates (ids %llu..%llu) in %.2f s "
               "(%.0f per second, %llu worker threads) into %s\n",
               static_cast<unsigned long long>(count),
               static_cast<unsigned long long>(first_id),
               static_cast<unsigned long long>(first_id + count - 1), seconds,
               static_cast<double>(count) / (seconds > 0 ? seconds : 1e-9),
               static_cast<unsigned long long>(workers), out->c_str());
  return kExitOk;
}

}  // namespace nodefl::ca
