// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// nodefl-ca end to end: runs the real binary into a temporary directory,
// then checks its output with the SDK that will consume it (TLS
// credentials, a TLS handshake, seal::VerifyPeerCertificate) and with the
// bundle reader.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "nodefl/crypto/rng.h"
#include "nodefl/host/pki/device_bundle.h"
#include "nodefl/random/drbg.h"
#include "nodefl/seal/peer_certificate.h"
#include "nodefl/tls/config.h"
#include "nodefl/tls/credentials.h"
#include "nodefl/tls/endpoint.h"

#ifndef NODEFL_CA_TOOL
#error "NODEFL_CA_TOOL must name the nodefl-ca binary"
#endif

namespace nodefl {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string ReadText(const fs::path& path) {
  const std::vector<uint8_t> bytes = ReadFile(path);
  return std::string(bytes.begin(), bytes.end());
}

unsigned Mode(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & 0777;
}

class CaToolTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string pattern = (fs::temp_directory_path() / "nodefl-ca-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = new fs::path(pattern);
    // One deployment shared by the tests below (issuing is the slow part).
    ASSERT_EQ(Run("init --dir " + (*dir_ / "ca").string() + " --name 'test deployment CA'"), 0);
    ASSERT_EQ(Run("server --dir " + (*dir_ / "ca").string() + " --out " +
                  (*dir_ / "server").string() + " --name localhost"),
              0);
    ASSERT_EQ(Run("devices --dir " + (*dir_ / "ca").string() + " --out " +
                  (*dir_ / "devices").string() + " --first-id 100 --count 25 --jobs 2"),
              0);
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(*dir_, ec);
    delete dir_;
  }

  // Runs nodefl-ca with `args`; returns its exit code. stderr goes to
  // dir_/stderr.txt.
  static int Run(const std::string& args) {
    const std::string command = std::string(NODEFL_CA_TOOL) + " " + args + " >" +
                                (*dir_ / "stdout.txt").string() + " 2>" +
                                (*dir_ / "stderr.txt").string();
    const int status = std::system(command.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  static std::string LastStderr() { return ReadText(*dir_ / "stderr.txt"); }
  static std::string LastStdout() { return ReadText(*dir_ / "stdout.txt"); }

  static fs::path* dir_;
};

fs::path* CaToolTest::dir_ = nullptr;

TEST_F(CaToolTest, WritesTheExpectedFilesWithPrivateKeysProtected) {
  const fs::path& dir = *dir_;
  EXPECT_EQ(Mode(dir / "ca" / "ca.key"), 0600u);
  EXPECT_TRUE(fs::exists(dir / "ca" / "ca.crt"));
  EXPECT_EQ(Mode(dir / "server.key"), 0600u);
  EXPECT_TRUE(fs::exists(dir / "server.crt"));
  for (uint32_t id = 100; id < 125; ++id) {
    const std::string base = "device-" + std::to_string(id);
    EXPECT_TRUE(fs::exists(dir / "devices" / (base + ".crt"))) << base;
    EXPECT_EQ(Mode(dir / "devices" / (base + ".key")), 0600u) << base;
  }
  EXPECT_FALSE(fs::exists(dir / "devices" / "device-125.crt"));
  EXPECT_EQ(Mode(dir / "devices" / "devices.bundle"), 0600u);
  EXPECT_EQ(ReadText(dir / "ca" / "ca.crt").rfind("-----BEGIN CERTIFICATE-----", 0), 0u);
}

TEST_F(CaToolTest, DeviceCertificatesVerifyAgainstTheCaWithTheSealCheck) {
  const std::vector<uint8_t> ca = ReadFile(*dir_ / "ca" / "ca.crt");
  tls::TlsCredentials trust;
  ASSERT_TRUE(trust.LoadCaChain(ca).ok());
  pki::DeviceBundle bundle;
  const pki::PkiResult read = pki::ReadDeviceBundle((*dir_ / "devices" / "devices.bundle").string(), &bundle);
  ASSERT_TRUE(read.ok()) << read.message();
  ASSERT_EQ(bundle.devices.size(), 25u);

  for (size_t i = 0; i < bundle.devices.size(); ++i) {
    const pki::DeviceRecord& record = bundle.devices[i];
    EXPECT_EQ(record.device_id, 100 + i);
    seal::PeerPublicKey key;
    EXPECT_TRUE(seal::VerifyPeerCertificate(trust, record.certificate_der, record.device_id, &key).ok())
        << record.device_id;
    EXPECT_EQ(seal::VerifyPeerCertificate(trust, record.certificate_der, record.device_id + 1, &key),
              Status::Unauthenticated());
    // The bundled key belongs to the bundled certificate.
    tls::TlsCredentials own;
    EXPECT_TRUE(own.LoadOwnIdentity(record.certificate_der, record.private_key_der).ok());
  }
  // The PEM files hold the same credentials as the bundle.
  const std::vector<uint8_t> pem = ReadFile(*dir_ / "devices" / "device-107.crt");
  const std::vector<uint8_t> key_pem = ReadFile(*dir_ / "devices" / "device-107.key");
  tls::TlsCredentials from_files;
  ASSERT_TRUE(from_files.LoadCaChain(bundle.ca_der).ok());
  ASSERT_TRUE(from_files.LoadOwnIdentity(pem, key_pem).ok());
  const std::vector<uint8_t> der(from_files.own_certificate()->raw.p,
                                 from_files.own_certificate()->raw.p +
                                     from_files.own_certificate()->raw.len);
  EXPECT_EQ(der, bundle.devices[7].certificate_der);
}

// Moves pending ciphertext from one endpoint to the other.
void Transfer(tls::TlsEndpoint& from, tls::TlsEndpoint& to) {
  size_t consumed = 0;
  ASSERT_TRUE(to.FeedCiphertext(from.PendingCiphertext(), &consumed).ok());
  from.ConsumeCiphertext(consumed);
}

TEST_F(CaToolTest, ServerAndDeviceCredentialsCompleteATlsHandshake) {
  Drbg server_rng;
  Drbg device_rng;
  ASSERT_TRUE(server_rng.SeedDeterministic(1).ok());
  ASSERT_TRUE(device_rng.SeedDeterministic(2).ok());
  const std::vector<uint8_t> ca = ReadFile(*dir_ / "ca" / "ca.crt");

  tls::TlsCredentials server_credentials;
  ASSERT_TRUE(server_credentials.LoadCaChain(ca).ok());
  const std::vector<uint8_t> server_crt = ReadFile(*dir_ / "server.crt");
  const std::vector<uint8_t> server_key = ReadFile(*dir_ / "server.key");
  ASSERT_TRUE(server_credentials.LoadOwnIdentity(server_crt, server_key).ok());
  tls::TlsCredentials device_credentials;
  ASSERT_TRUE(device_credentials.LoadCaChain(ca).ok());
  const std::vector<uint8_t> device_crt = ReadFile(*dir_ / "devices" / "device-111.crt");
  const std::vector<uint8_t> device_key = ReadFile(*dir_ / "devices" / "device-111.key");
  ASSERT_TRUE(device_credentials.LoadOwnIdentity(device_crt, device_key).ok());
  tls::TlsConfig server_config;
  tls::TlsConfig device_config;
  ASSERT_TRUE(server_config.Init(tls::TlsRole::kServer, server_credentials, &crypto::DrbgRandom, &server_rng).ok());
  ASSERT_TRUE(device_config.Init(tls::TlsRole::kClient, device_credentials, &crypto::DrbgRandom, &device_rng).ok());
  std::vector<uint8_t> buffers[4];
  for (auto& buffer : buffers) buffer.resize(tls::kTlsRecommendedBufferBytes);
  tls::TlsEndpoint server;
  tls::TlsEndpoint device;
  ASSERT_TRUE(server.Init(server_config, buffers[0], buffers[1], nullptr).ok());
  ASSERT_TRUE(device.Init(device_config, buffers[2], buffers[3], "localhost").ok());
  for (int round = 0; round < 20 && !(server.handshake_done() && device.handshake_done()); ++round) {
    ASSERT_TRUE(device.Handshake().ok()) << device.last_error_text();
    Transfer(device, server);
    ASSERT_TRUE(server.Handshake().ok()) << server.last_error_text();
    Transfer(server, device);
  }
  ASSERT_TRUE(server.handshake_done() && device.handshake_done());
  EXPECT_EQ(server.PeerDeviceId().value(), 111u);
}

TEST_F(CaToolTest, NeverOverwritesAndExplainsBadUsage) {
  const std::string ca = (*dir_ / "ca").string();
  const std::vector<uint8_t> key_before = ReadFile(*dir_ / "ca" / "ca.key");
  EXPECT_EQ(Run("init --dir " + ca), 1);
  EXPECT_NE(LastStderr().find("never overwrites"), std::string::npos) << LastStderr();
  EXPECT_EQ(ReadFile(*dir_ / "ca" / "ca.key"), key_before);
  EXPECT_EQ(Run("server --dir " + ca + " --out " + (*dir_ / "server").string() + " --name localhost"), 1);
  EXPECT_EQ(Run("devices --dir " + ca + " --out " + (*dir_ / "devices").string() +
                " --first-id 1 --count 1"),
            1);

  EXPECT_EQ(Run(""), 2);
  EXPECT_EQ(Run("launch"), 2);
  EXPECT_NE(LastStderr().find("unknown command"), std::string::npos);
  EXPECT_EQ(Run("devices --dir " + ca + " --out x --first-id 4294967295 --count 2"), 2);
  EXPECT_NE(LastStderr().find("exceeds"), std::string::npos);
  EXPECT_EQ(Run("devices --dir " + ca + " --out x --first-id abc --count 2"), 2);
  EXPECT_EQ(Run("devices --dir " + ca + " --out x --first-id 1"), 2);
  EXPECT_NE(LastStderr().find("missing --count"), std::string::npos);
  EXPECT_EQ(Run("init --dir " + (*dir_ / "other").string() + " --days 0"), 2);
  EXPECT_EQ(Run("init --dir " + (*dir_ / "other").string() + " --name 'a=b'"), 2);
  EXPECT_EQ(Run("server --dir " + (*dir_ / "missing").string() + " --out y --name localhost"), 1);
  EXPECT_NE(LastStderr().find("cannot open"), std::string::npos);
  EXPECT_FALSE(fs::exists(*dir_ / "other"));

  for (const char* command : {"--help", "init --help", "server --help", "devices --help"}) {
    EXPECT_EQ(Run(command), 0) << command;
    EXPECT_NE(LastStdout().find("usage: nodefl-ca"), std::string::npos) << command;
  }
}

TEST_F(CaToolTest, BundleOnlySkipsTheFilesAndDevicesNeedTheRightCa) {
  const fs::path out = *dir_ / "bundle-only";
  ASSERT_EQ(Run("devices --dir " + (*dir_ / "ca").string() + " --out " + out.string() +
                " --first-id 4294967290 --count 6 --bundle-only --days 30"),
            0);
  EXPECT_FALSE(fs::exists(out / "device-4294967290.crt"));
  pki::DeviceBundle bundle;
  ASSERT_TRUE(pki::ReadDeviceBundle((out / "devices.bundle").string(), &bundle).ok());
  ASSERT_EQ(bundle.devices.size(), 6u);
  EXPECT_EQ(bundle.devices.back().device_id, 4294967295u);

  // A second CA's devices do not verify against the first.
  const std::string other = (*dir_ / "other-ca").string();
  ASSERT_EQ(Run("init --dir " + other), 0);
  ASSERT_EQ(Run("devices --dir " + other + " --out " + (*dir_ / "other-devices").string() +
                " --first-id 100 --count 1 --bundle-only"),
            0);
  pki::DeviceBundle foreign;
  ASSERT_TRUE(pki::ReadDeviceBundle((*dir_ / "other-devices" / "devices.bundle").string(), &foreign).ok());
  const std::vector<uint8_t> ca = ReadFile(*dir_ / "ca" / "ca.crt");
  tls::TlsCredentials trust;
  ASSERT_TRUE(trust.LoadCaChain(ca).ok());
  seal::PeerPublicKey key;
  EXPECT_EQ(seal::VerifyPeerCertificate(trust, foreign.devices[0].certificate_der, 100, &key),
            Status::Unauthenticated());
}

}  // namespace
}  // namespace nodefl
