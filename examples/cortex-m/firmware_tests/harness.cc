// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The firmware's test runner (gtest/gtest.h) and its heap: test code (not
// the SDK) uses std::vector and friends, so the test firmware, unlike a
// product image, gives newlib a heap of its own, and counts every
// allocation so that NODEFL_EXPECT_NO_HEAP (tests/support/heap_counter.h,
// the host's header) checks the SDK on the board as
// tests/support/heap_counter.cc does on the host.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>

#include "heap_counter.h"
#include "nodefl/cortex_m/board.h"

namespace fwtest {
namespace {

struct Entry {
  const char* suite;
  const char* name;
  Factory factory;
};
// Registration runs from static constructors, before main(): a fixed table.
constexpr size_t kMaxTests = 512;
Entry g_tests[kMaxTests];
size_t g_test_count = 0;
bool g_registration_overflow = false;

// Tests compiled in that cannot run on this board, and why. Printed as
// SKIPPED; everything else in their files runs.
struct Skipped {
  const char* suite;
  const char* name;
  const char* why;
};
constexpr Skipped kSkipped[] = {
    {"WireChunkTest", "UnevenAndSmallChunks",
     "its fixtures hold 4,096 chunk structs of 4 KiB at once (over 32 MiB with the vector's growth)"},
    {"FedWalkHctRoleTest", "LargeDegreeMatrixIsStreamedWithoutABuffer",
     "its scripted server cuts a 180 KB dictionary into 3,600 chunk structs of 4 KiB at once (over 16 MiB)"},
    // Time, not memory: five IKNP blocks took 21 of the image's 34 s under
    // QEMU's emulation. The other OT tests run IKNP on the target; this one
    // runs on the host and under qemu-aarch64.
    {"OtTest", "IknpExtensionGivesCorrectKeysOverManyBlocks",
     "five IKNP blocks take 21 s under QEMU (run on the host and under qemu-aarch64)"},
};

const char* SkipReason(const char* suite, const char* name) {
  for (const Skipped& s : kSkipped) {
    if (std::strcmp(s.suite, suite) == 0 && std::strcmp(s.name, name) == 0) return s.why;
  }
  return nullptr;
}

bool g_current_failed = false;
size_t g_failures = 0;     // failed checks in the whole run
size_t g_death_skipped = 0;

constexpr size_t kMaxTrace = 8;
Message g_trace[kMaxTrace];
const char* g_trace_file[kMaxTrace];
int g_trace_line[kMaxTrace];
size_t g_trace_depth = 0;

void Print(const char* text) { nodefl::cortex_m::BoardWrite(text); }

}  // namespace

// The test heap (below): a test's allocations are all released when it
// ends, so each test has the whole heap.
size_t TestHeapMark();
void TestHeapRelease(size_t mark);

namespace {

// newlib-nano's printf has no long long conversions: decimal by hand.
char* Decimal(unsigned long long v, char (&buf)[24]) {
  char* p = buf + sizeof buf;
  *--p = '\0';
  do {
    *--p = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  return p;
}

void PrintNumber(unsigned long long v) {
  char buf[24];
  Print(Decimal(v, buf));
}

}  // namespace

void Message::Append(const char* s) {
  if (s == nullptr) s = "(null)";
  while (*s != '\0' && used_ + 1 < sizeof text_) text_[used_++] = *s++;
  text_[used_] = '\0';
}
void Message::AppendSigned(long long v) {
  if (v < 0) Append("-");
  AppendUnsigned(v < 0 ? 0ull - static_cast<unsigned long long>(v) : static_cast<unsigned long long>(v));
}
void Message::AppendUnsigned(unsigned long long v) {
  char buf[24];
  Append(Decimal(v, buf));
}
void Message::AppendDouble(double v) {
  // newlib-nano formats no floating point without _printf_float; print
  // sign, integer part and nine decimals by hand.
  if (std::isnan(v)) return Append("nan");
  if (std::isinf(v)) return Append(v < 0 ? "-inf" : "inf");
  if (v < 0) {
    Append("-");
    v = -v;
  }
  if (v >= 1e18) return Append("(huge)");
  const unsigned long long whole = static_cast<unsigned long long>(v);
  const unsigned long frac = static_cast<unsigned long>((v - static_cast<double>(whole)) * 1e9);
  AppendUnsigned(whole);
  char buf[16];
  std::snprintf(buf, sizeof buf, ".%09lu", frac);
  Append(buf);
}

Failure::~Failure() {
  g_current_failed = true;
  ++g_failures;
  Print("  FAILED at ");
  Print(file_);
  Print(":");
  PrintNumber(static_cast<unsigned long long>(line_));
  Print(": ");
  Print(expression_);
  if (values_.text()[0] != '\0') {
    Print("\r\n    values: ");
    Print(values_.text());
  }
  if (message_.text()[0] != '\0') {
    Print("\r\n    ");
    Print(message_.text());
  }
  Print("\r\n");
  for (size_t i = g_trace_depth; i-- > 0;) {
    Print("    trace ");
    Print(g_trace_file[i]);
    Print(":");
    PrintNumber(static_cast<unsigned long long>(g_trace_line[i]));
    Print(": ");
    Print(g_trace[i].text());
    Print("\r\n");
  }
}

bool AlmostEqual(double a, double b, int float_precision) {
  if (a == b) return true;
  if (std::isnan(a) || std::isnan(b)) return false;
  // GoogleTest allows 4 units in the last place; relative terms here.
  const double ulp = float_precision ? 1.1920929e-7 : 2.220446049250313e-16;
  return std::fabs(a - b) <= 4 * ulp * std::fmax(std::fabs(a), std::fabs(b));
}

bool StringEqual(const char* a, const char* b) {
  if (a == nullptr || b == nullptr) return a == b;
  return std::strcmp(a, b) == 0;
}

void ScopedTracePush(const char* file, int line, const Message& message) {
  if (g_trace_depth < kMaxTrace) {
    g_trace[g_trace_depth] = message;
    g_trace_file[g_trace_depth] = file;
    g_trace_line[g_trace_depth] = line;
  }
  ++g_trace_depth;
}
void ScopedTracePop() { --g_trace_depth; }

void SkipDeathTest(const char* /*file*/, int /*line*/) { ++g_death_skipped; }

bool Register(const char* suite, const char* name, Factory factory) {
  if (g_test_count == kMaxTests) {
    g_registration_overflow = true;
    return false;
  }
  g_tests[g_test_count++] = Entry{suite, name, factory};
  return true;
}

bool CurrentTestFailed() { return g_current_failed; }

int RunAllTests() {
  size_t failed_tests = 0;
  Print("[==========] ");
  PrintNumber(g_test_count);
  Print(" tests\r\n");
  if (g_registration_overflow) {
    Print("more than kMaxTests tests registered\r\n");
    return 1;
  }
  size_t skipped = 0;
  for (size_t i = 0; i < g_test_count; ++i) {
    const Entry& t = g_tests[i];
    if (const char* why = SkipReason(t.suite, t.name)) {
      Print("[  SKIPPED ] ");
      Print(t.suite);
      Print(".");
      Print(t.name);
      Print(": ");
      Print(why);
      Print("\r\n");
      ++skipped;
      continue;
    }
    Print("[ RUN      ] ");
    Print(t.suite);
    Print(".");
    Print(t.name);
    Print("\r\n");
    g_current_failed = false;
    const uint64_t t0 = nodefl::cortex_m::BoardMicros();
    const size_t heap_mark = TestHeapMark();
    ::testing::Test* test = t.factory();
    test->SetUp();
    if (!g_current_failed) test->TestBody();
    test->TearDown();
    delete test;
    // Nothing of a test outlives it: the files compiled in keep no heap
    // objects in statics.
    TestHeapRelease(heap_mark);
    const uint64_t ms = (nodefl::cortex_m::BoardMicros() - t0) / 1000;
    Print(g_current_failed ? "[  FAILED  ] " : "[       OK ] ");
    Print(t.suite);
    Print(".");
    Print(t.name);
    Print(" (");
    PrintNumber(ms);
    Print(" ms)\r\n");
    failed_tests += g_current_failed ? 1 : 0;
  }
  Print("[==========] ");
  PrintNumber(g_test_count - failed_tests - skipped);
  Print(" passed, ");
  PrintNumber(failed_tests);
  Print(" failed, ");
  PrintNumber(skipped);
  Print(" skipped (");
  PrintNumber(g_failures);
  Print(" failed checks); death tests skipped: ");
  PrintNumber(g_death_skipped);
  Print("\r\n");
  return static_cast<int>(failed_tests);
}

}  // namespace fwtest

// ---- the test heap -------------------------------------------------------------
// An allocator of the test firmware's own, in place of newlib's (whose
// sorted free list makes freeing 100,000 std::set nodes take minutes under
// QEMU): power-of-two size classes with a free list each, blocks cut from
// the board's 16 MiB PSRAM (0x21000000 on every MPS2 image, unused by the
// linker script), and everything a test allocated taken back when it ends.
// Every call is counted: HeapAllocationCount is what NODEFL_EXPECT_NO_HEAP
// compares.
namespace {
uint8_t* const g_test_heap = reinterpret_cast<uint8_t*>(0x21000000u);
constexpr size_t kTestHeapBytes = 16u << 20;
constexpr size_t kHeader = 8;  // the block's size class, before the block
constexpr int kClasses = 25;   // 16 bytes .. 16 MiB
size_t g_test_heap_used = 0;
size_t g_allocations = 0;
void* g_free[kClasses] = {};

int ClassOf(size_t n) {
  int k = 4;
  while (k < kClasses && (size_t{1} << k) < n) ++k;
  return k;
}

void* Allocate(size_t n, size_t alignment) {
  ++g_allocations;
  const int k = ClassOf(n);
  if (k == kClasses || alignment > 8) {
    nodefl::cortex_m::BoardWrite("\r\n*** test heap: unsupported request\r\n");
    return nullptr;
  }
  if (g_free[k] != nullptr) {
    void* p = g_free[k];
    std::memcpy(&g_free[k], p, sizeof(void*));
    return p;
  }
  const size_t block = size_t{1} << k;
  if (block + kHeader > kTestHeapBytes - g_test_heap_used) {
    nodefl::cortex_m::BoardWrite("\r\n*** test heap exhausted (16 MiB)\r\n");
    return nullptr;
  }
  uint8_t* p = g_test_heap + g_test_heap_used + kHeader;
  const uint32_t cls = static_cast<uint32_t>(k);
  std::memcpy(p - kHeader, &cls, sizeof cls);
  g_test_heap_used += block + kHeader;
  return p;
}

int ClassOfBlock(const void* p) {
  uint32_t cls;
  std::memcpy(&cls, static_cast<const uint8_t*>(p) - kHeader, sizeof cls);
  return static_cast<int>(cls);
}

void Release(void* p) {
  if (p == nullptr) return;
  const int k = ClassOfBlock(p);
  std::memcpy(p, &g_free[k], sizeof(void*));
  g_free[k] = p;
}
}  // namespace

size_t nodefl::testing::HeapAllocationCount() { return g_allocations; }
size_t fwtest::TestHeapMark() { return g_test_heap_used; }
void fwtest::TestHeapRelease(size_t mark) {
  g_test_heap_used = mark;
  for (void*& list : g_free) list = nullptr;
}

extern "C" {
void* _malloc_r(struct _reent*, size_t n) { return Allocate(n, 8); }
void* _memalign_r(struct _reent*, size_t alignment, size_t n) { return Allocate(n, alignment); }
void* _calloc_r(struct _reent*, size_t count, size_t size) {
  if (size != 0 && count > SIZE_MAX / size) return nullptr;
  void* p = Allocate(count * size, 8);
  if (p != nullptr) std::memset(p, 0, count * size);
  return p;
}
void* _realloc_r(struct _reent*, void* old, size_t n) {
  if (old != nullptr && n <= (size_t{1} << ClassOfBlock(old))) return old;
  void* p = Allocate(n, 8);
  if (p != nullptr && old != nullptr) {
    std::memcpy(p, old, size_t{1} << ClassOfBlock(old));
    Release(old);
  }
  return p;
}
void _free_r(struct _reent*, void* p) { Release(p); }
void* malloc(size_t n) { return Allocate(n, 8); }
void* memalign(size_t alignment, size_t n) { return Allocate(n, alignment); }
void* calloc(size_t count, size_t size) { return _calloc_r(nullptr, count, size); }
void* realloc(void* old, size_t n) { return _realloc_r(nullptr, old, n); }
void free(void* p) { Release(p); }

// abort() (libstdc++'s answer to a failed allocation or a bad index in
// test code, built without exceptions) raises SIGABRT through these: end the
// run as failed.
int _getpid() { return 1; }
int _kill(int /*pid*/, int /*signal*/) {
  nodefl::cortex_m::BoardWrite("\r\n*** abort() in the firmware tests\r\n");
  nodefl::cortex_m::BoardExit(4);
}

}  // extern "C"
