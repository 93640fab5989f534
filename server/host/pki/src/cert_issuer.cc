// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
#include "nodefl/host/pki/cert_issuer.h"

#include <mbedtls/asn1write.h>
#include <mbedtls/bignum.h>
#include <mbedtls/ecdsa.h>
#include <mbedtls/oid.h>
#include <mbedtls/pem.h>
#include <mbedtls/x509.h>

#include <cstdio>
#include <ctime>

#include "nodefl/tls/device_identity.h"

namespace nodefl::pki {
namespace {

constexpr int64_t kSecondsPerDay = 86400;
// The latest time X.509 can express (GeneralizedTime, 4-digit year).
constexpr int64_t kLatestTime = 253402300799;  // 9999-12-31T23:59:59Z
constexpr size_t kMaxCertificateBytes = 4096;

// Days since 1970-01-01 of a proleptic Gregorian date, and back (the usual
// era-based civil calendar arithmetic).
int64_t DaysFromCivil(int64_t year, unsigned month, unsigned day) {
  year -= month <= 2 ? 1 : 0;
  const int64_t era = (year >= 0 ? year : year - 399) / 400;
  const int64_t year_of_era = year - era * 400;
  const unsigned shifted_month = month > 2 ? month - 3 : month + 9;
  const int64_t day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
  const int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + day_of_era - 719468;
}

void CivilFromDays(int64_t days, int64_t* year, unsigned* month, unsigned* day) {
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const int64_t day_of_era = days - era * 146097;
  const int64_t year_of_era =
      (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
  const int64_t day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  const int64_t shifted_month = (5 * day_of_year + 2) / 153;
  *day = static_cast<unsigned>(day_of_year - (153 * shifted_month + 2) / 5 + 1);
  *month = static_cast<unsigned>(shifted_month < 10 ? shifted_month + 3 : shifted_month - 9);
  *year = year_of_era + era * 400 + (*month <= 2 ? 1 : 0);
}

// "YYYYMMDDhhmmss", the form mbedtls_x509write_crt_set_validity takes.
std::string X509TimeString(int64_t unix_seconds) {
  if (unix_seconds > kLatestTime) unix_seconds = kLatestTime;
  if (unix_seconds < 0) unix_seconds = 0;
  int64_t year = 0;
  unsigned month = 0;
  unsigned day = 0;
  CivilFromDays(unix_seconds / kSecondsPerDay, &year, &month, &day);
  const int64_t second_of_day = unix_seconds % kSecondsPerDay;
  char text[32];
  std::snprintf(text, sizeof(text), "%04lld%02u%02u%02lld%02lld%02lld",
                static_cast<long long>(year), month, day,
                static_cast<long long>(second_of_day / 3600),
                static_cast<long long>(second_of_day / 60 % 60),
                static_cast<long long>(second_of_day % 60));
  return text;
}

int64_t UnixFromX509Time(const mbedtls_x509_time& t) {
  return DaysFromCivil(t.year, static_cast<unsigned>(t.mon), static_cast<unsigned>(t.day)) *
             kSecondsPerDay +
         t.hour * 3600 + t.min * 60 + t.sec;
}

class WriteContext {
 public:
  WriteContext() { mbedtls_x509write_crt_init(&ctx_); }
  ~WriteContext() { mbedtls_x509write_crt_free(&ctx_); }
  WriteContext(const WriteContext&) = delete;
  WriteContext& operator=(const WriteContext&) = delete;
  mbedtls_x509write_cert* get() { return &ctx_; }

 private:
  mbedtls_x509write_cert ctx_;
};

class Mpi {
 public:
  Mpi() { mbedtls_mpi_init(&mpi_); }
  ~Mpi() { mbedtls_mpi_free(&mpi_); }
  Mpi(const Mpi&) = delete;
  Mpi& operator=(const Mpi&) = delete;
  mbedtls_mpi* get() { return &mpi_; }

 private:
  mbedtls_mpi mpi_;
};

// A random positive 128-bit serial number: unique without a serial
// database (collisions are as likely as guessing a 127-bit value).
int RandomSerial(const Random& random, mbedtls_mpi* serial) {
  unsigned char bytes[16];
  const int rc = random.function(random.context, bytes, sizeof(bytes));
  if (rc != 0) return rc;
  bytes[0] = static_cast<unsigned char>((bytes[0] & 0x7F) | 0x40);  // positive, full length
  return mbedtls_mpi_read_binary(serial, bytes, sizeof(bytes));
}

// DER value of an extendedKeyUsage extension holding one purpose.
std::vector<uint8_t> ExtendedKeyUsage(const char* oid, size_t oid_length) {
  unsigned char buffer[64];
  unsigned char* p = buffer + sizeof(buffer);
  size_t length = 0;
  int rc = mbedtls_asn1_write_oid(&p, buffer, oid, oid_length);
  if (rc < 0) return {};
  length += static_cast<size_t>(rc);
  rc = mbedtls_asn1_write_len(&p, buffer, length);
  if (rc < 0) return {};
  length += static_cast<size_t>(rc);
  rc = mbedtls_asn1_write_tag(&p, buffer, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE);
  if (rc < 0) return {};
  length += static_cast<size_t>(rc);
  return std::vector<uint8_t>(p, p + length);
}

// DER value of a subjectAltName extension holding one dNSName.
std::vector<uint8_t> SubjectAltDnsName(const std::string& name) {
  std::vector<unsigned char> buffer(name.size() + 16);
  unsigned char* start = buffer.data();
  unsigned char* p = start + buffer.size();
  size_t length = 0;
  int rc = mbedtls_asn1_write_raw_buffer(&p, start, reinterpret_cast<const unsigned char*>(name.data()),
                                         name.size());
  if (rc < 0) return {};
  length += static_cast<size_t>(rc);
  rc = mbedtls_asn1_write_len(&p, start, name.size());
  if (rc < 0) return {};
  length += static_cast<size_t>(rc);
  // dNSName is GeneralName choice [2], an implicitly tagged IA5String.
  rc = mbedtls_asn1_write_tag(&p, start, MBEDTLS_ASN1_CONTEXT_SPECIFIC | 2);
  if (rc < 0) return {};
  length += static_cast<size_t>(rc);
  rc = mbedtls_asn1_write_len(&p, start, length);
  if (rc < 0) return {};
  length += static_cast<size_t>(rc);
  rc = mbedtls_asn1_write_tag(&p, start, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE);
  if (rc < 0) return {};
  length += static_cast<size_t>(rc);
  return std::vector<uint8_t>(p, p + length);
}

struct CertificateSpec {
  std::string subject_name;  // MbedTLS name syntax, e.g. "CN=device-7"
  std::string issuer_name;
  mbedtls_pk_context* subject_key = nullptr;
  mbedtls_pk_context* issuer_key = nullptr;
  Validity validity;
  bool is_ca = false;
  unsigned key_usage = 0;
  std::vector<uint8_t> extended_key_usage;  // DER value, empty for none
  std::vector<uint8_t> subject_alt_name;    // DER value, empty for none
};

PkiResult WriteCertificate(const CertificateSpec& spec, const Random& random,
                           std::vector<uint8_t>* der_out) {
  if (random.function == nullptr) return PkiResult::Fail("no random source");
  WriteContext writer;
  mbedtls_x509write_cert* ctx = writer.get();
  mbedtls_x509write_crt_set_version(ctx, MBEDTLS_X509_CRT_VERSION_3);
  mbedtls_x509write_crt_set_md_alg(ctx, MBEDTLS_MD_SHA256);
  mbedtls_x509write_crt_set_subject_key(ctx, spec.subject_key);
  mbedtls_x509write_crt_set_issuer_key(ctx, spec.issuer_key);

  Mpi serial;
  int rc = RandomSerial(random, serial.get());
  if (rc == 0) rc = mbedtls_x509write_crt_set_serial(ctx, serial.get());
  if (rc != 0) return PkiResult::Fail("cannot set the serial number", rc);
  rc = mbedtls_x509write_crt_set_subject_name(ctx, spec.subject_name.c_str());
  if (rc != 0) return PkiResult::Fail("bad subject name '" + spec.subject_name + "'", rc);
  rc = mbedtls_x509write_crt_set_issuer_name(ctx, spec.issuer_name.c_str());
  if (rc != 0) return PkiResult::Fail("bad issuer name '" + spec.issuer_name + "'", rc);
  rc = mbedtls_x509write_crt_set_validity(ctx, X509TimeString(spec.validity.not_before).c_str(),
                                          X509TimeString(spec.validity.not_after).c_str());
  if (rc != 0) return PkiResult::Fail("bad validity period", rc);
  // Path length 0: the deployment CA signs leaves only, never another CA.
  rc = mbedtls_x509write_crt_set_basic_constraints(ctx, spec.is_ca ? 1 : 0, spec.is_ca ? 0 : -1);
  if (rc == 0) rc = mbedtls_x509write_crt_set_key_usage(ctx, spec.key_usage);
  if (rc == 0 && !spec.extended_key_usage.empty()) {
    rc = mbedtls_x509write_crt_set_extension(
        ctx, MBEDTLS_OID_EXTENDED_KEY_USAGE, MBEDTLS_OID_SIZE(MBEDTLS_OID_EXTENDED_KEY_USAGE), 0,
        spec.extended_key_usage.data(), spec.extended_key_usage.size());
  }
  if (rc == 0 && !spec.subject_alt_name.empty()) {
    rc = mbedtls_x509write_crt_set_extension(
        ctx, MBEDTLS_OID_SUBJECT_ALT_NAME, MBEDTLS_OID_SIZE(MBEDTLS_OID_SUBJECT_ALT_NAME), 0,
        spec.subject_alt_name.data(), spec.subject_alt_name.size());
  }
  if (rc != 0) return PkiResult::Fail("cannot add certificate extensions", rc);

  std::vector<unsigned char> buffer(kMaxCertificateBytes);
  // Writes at the end of the buffer and returns the length.
  const int length =
      mbedtls_x509write_crt_der(ctx, buffer.data(), buffer.size(), random.function, random.context);
  if (length <= 0) return PkiResult::Fail("cannot sign the certificate", length);
  der_out->assign(buffer.end() - length, buffer.end());
  return PkiResult::Ok();
}

}  // namespace

Validity ValidityForDays(int64_t now, uint32_t days) {
  Validity validity;
  validity.not_before = now - 3600;
  validity.not_after = validity.not_before + static_cast<int64_t>(days) * kSecondsPerDay;
  if (validity.not_after > kLatestTime) validity.not_after = kLatestTime;
  return validity;
}

int64_t UnixNow() { return static_cast<int64_t>(std::time(nullptr)); }

bool IsPlainName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    if (c < 0x20 || c > 0x7E) return false;
    if (c == ',' || c == '=' || c == '+' || c == '"' || c == '\\' || c == '<' || c == '>' ||
        c == ';' || c == '#') {
      return false;
    }
  }
  return name.front() != ' ' && name.back() != ' ';
}

std::string DeviceCommonName(uint32_t device_id) {
  char text[tls::kMaxDeviceCommonNameBytes];
  const Result<size_t> length = tls::FormatDeviceCommonName(device_id, text);
  return length.ok() ? std::string(text, *length) : std::string();
}

PkiResult CreateCaCertificate(const std::string& name, const Validity& validity,
                              const EcKey& key, const Random& random,
                              std::vector<uint8_t>* der_out) {
  if (!IsPlainName(name)) {
    return PkiResult::Fail("the CA name must be 1-64 printable characters without , = + \" \\ < > ; #");
  }
  if (key.empty() || der_out == nullptr) return PkiResult::Fail("no CA key");
  if (validity.not_after <= validity.not_before) return PkiResult::Fail("empty validity period");
  CertificateSpec spec;
  spec.subject_name = "CN=" + name;
  spec.issuer_name = spec.subject_name;
  spec.subject_key = key.get();
  spec.issuer_key = key.get();
  spec.validity = validity;
  spec.is_ca = true;
  spec.key_usage = MBEDTLS_X509_KU_KEY_CERT_SIGN | MBEDTLS_X509_KU_CRL_SIGN;
  return WriteCertificate(spec, random, der_out);
}

CertificateIssuer::CertificateIssuer() {
  mbedtls_x509_crt_init(&ca_);
  mbedtls_pk_init(&signing_key_);
}

CertificateIssuer::~CertificateIssuer() {
  mbedtls_x509_crt_free(&ca_);
  mbedtls_pk_free(&signing_key_);
}

PkiResult CertificateIssuer::Init(const std::vector<uint8_t>& ca_certificate, const EcKey& ca_key) {
  if (ready_) return PkiResult::Fail("issuer already initialised");
  if (ca_certificate.empty()) return PkiResult::Fail("empty CA certificate");
  std::vector<uint8_t> input = ca_certificate;
  if (LooksLikePem(input.data(), input.size()) && input.back() != '\0') input.push_back('\0');
  int rc = mbedtls_x509_crt_parse(&ca_, input.data(), input.size());
  if (rc != 0) return PkiResult::Fail("not a readable CA certificate", rc < 0 ? rc : 0);
  if (ca_.next != nullptr) return PkiResult::Fail("expected one CA certificate, found several");
  if (ca_.ca_istrue == 0) return PkiResult::Fail("the certificate is not a CA certificate");
  if (ca_key.empty() || mbedtls_pk_check_pair(&ca_.pk, ca_key.get()) != 0) {
    return PkiResult::Fail("the CA key does not belong to the CA certificate");
  }
  char name[256];
  rc = mbedtls_x509_dn_gets(name, sizeof(name), &ca_.subject);
  if (rc < 0) return PkiResult::Fail("cannot read the CA's name", rc);
  issuer_name_ = name;

  // An ECDSA-typed copy of the CA key: MbedTLS signs with it directly and
  // keeps the curve's precomputed table between signatures (a generic EC
  // key is copied into a fresh ECDSA context, table and all, per signature:
  // about twice as slow).
  rc = mbedtls_pk_setup(&signing_key_, mbedtls_pk_info_from_type(MBEDTLS_PK_ECDSA));
  if (rc == 0) {
    rc = mbedtls_ecdsa_from_keypair(static_cast<mbedtls_ecdsa_context*>(signing_key_.pk_ctx),
                                    mbedtls_pk_ec(*ca_key.get()));
  }
  if (rc != 0) return PkiResult::Fail("cannot set up the CA key for signing", rc);
  ca_der_.assign(ca_.raw.p, ca_.raw.p + ca_.raw.len);
  ca_not_after_ = UnixFromX509Time(ca_.valid_to);
  ready_ = true;
  return PkiResult::Ok();
}

PkiResult CertificateIssuer::Issue(const LeafRequest& request, const EcKey& subject_key,
                                   const Random& random, std::vector<uint8_t>* der_out,
                                   bool* clamped) {
  if (!ready_) return PkiResult::Fail("issuer not initialised");
  if (der_out == nullptr || subject_key.empty()) return PkiResult::Fail("no subject key");
  if (!IsPlainName(request.common_name)) {
    return PkiResult::Fail("bad common name '" + request.common_name + "'");
  }
  CertificateSpec spec;
  spec.subject_name = "CN=" + request.common_name;
  spec.issuer_name = issuer_name_;
  spec.subject_key = subject_key.get();
  spec.issuer_key = &signing_key_;
  spec.validity = request.validity;
  if (clamped != nullptr) *clamped = false;
  if (spec.validity.not_after > ca_not_after_) {
    spec.validity.not_after = ca_not_after_;
    if (clamped != nullptr) *clamped = true;
  }
  if (spec.validity.not_after <= spec.validity.not_before) {
    return PkiResult::Fail("empty validity period (has the CA expired?)");
  }
  spec.key_usage = MBEDTLS_X509_KU_DIGITAL_SIGNATURE;
  if (request.kind == LeafKind::kServer) {
    spec.extended_key_usage =
        ExtendedKeyUsage(MBEDTLS_OID_SERVER_AUTH, MBEDTLS_OID_SIZE(MBEDTLS_OID_SERVER_AUTH));
    if (!request.dns_name.empty()) {
      if (!IsPlainName(request.dns_name)) {
        return PkiResult::Fail("bad DNS name '" + request.dns_name + "'");
      }
      spec.subject_alt_name = SubjectAltDnsName(request.dns_name);
    }
  } else {
    // Devices also agree on end-to-end keys with their certified key.
    spec.key_usage |= MBEDTLS_X509_KU_KEY_AGREEMENT;
    spec.extended_key_usage =
        ExtendedKeyUsage(MBEDTLS_OID_CLIENT_AUTH, MBEDTLS_OID_SIZE(MBEDTLS_OID_CLIENT_AUTH));
    if (!request.dns_name.empty()) return PkiResult::Fail("device certificates carry no DNS name");
  }
  if (spec.extended_key_usage.empty() ||
      (!request.dns_name.empty() && spec.subject_alt_name.empty())) {
    return PkiResult::Fail("cannot encode certificate extensions");
  }
  return WriteCertificate(spec, random, der_out);
}

std::string CertificatePem(const std::vector<uint8_t>& der) {
  static constexpr char kHeader[] = "-----BEGIN CERTIFICATE-----\n";
  static constexpr char kFooter[] = "-----END CERTIFICATE-----\n";
  std::vector<unsigned char> buffer(der.size() * 2 + 128);
  size_t written = 0;
  if (mbedtls_pem_write_buffer(kHeader, kFooter, der.data(), der.size(), buffer.data(),
                               buffer.size(), &written) != 0) {
    return {};
  }
  // `written` counts the terminating NUL.
  return std::string(reinterpret_cast<const char*>(buffer.data()), written > 0 ? written - 1 : 0);
}

}  // namespace nodefl::pki
