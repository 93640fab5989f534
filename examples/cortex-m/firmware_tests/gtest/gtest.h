// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// A minimal stand-in for GoogleTest on the firmware (GoogleTest itself
// needs an OS, iostreams and exceptions), so that selected SDK unit tests of
// tests/sdk compile UNCHANGED into the Cortex-M firmware and run there.
// It implements the subset those files use: TEST, TEST_F, fixtures with
// SetUp/TearDown, EXPECT_/ASSERT_ {TRUE, FALSE, EQ, NE, LT, LE, GT, GE,
// NEAR, DOUBLE_EQ, FLOAT_EQ, STREQ, STRNE}, `<<` messages, SCOPED_TRACE and
// testing::Message. A failing check prints file, line, the expression and,
// for numbers, both values over the UART, and fails the run (the firmware
// exits non-zero through semihosting). Not supported: death tests (counted
// as skipped: a death on the board is a reset, not a testable outcome),
// value-parameterized tests, matchers.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace fwtest {

// Formats one value into a message; numbers, strings and pointers only.
class Message {
 public:
  Message() { text_[0] = '\0'; }
  template <typename T>
  Message& operator<<(const T& value) {
    if constexpr (std::is_same_v<T, bool>) {
      Append(value ? "true" : "false");
    } else if constexpr (std::is_enum_v<T>) {
      AppendSigned(static_cast<long long>(value));
    } else if constexpr (std::is_floating_point_v<T>) {
      AppendDouble(static_cast<double>(value));
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      AppendSigned(static_cast<long long>(value));
    } else if constexpr (std::is_integral_v<T>) {
      AppendUnsigned(static_cast<unsigned long long>(value));
    } else if constexpr (std::is_convertible_v<const T&, const char*>) {
      Append(static_cast<const char*>(value));
    } else if constexpr (HasCStr<T>(0)) {
      Append(value.c_str());
    } else {
      Append("<value>");
    }
    return *this;
  }
  const char* text() const { return text_; }

 private:
  template <typename T>
  static constexpr auto HasCStr(int) -> decltype(std::declval<const T&>().c_str(), bool()) { return true; }
  template <typename T>
  static constexpr bool HasCStr(...) { return false; }
  void Append(const char* s);
  void AppendSigned(long long v);
  void AppendUnsigned(unsigned long long v);
  void AppendDouble(double v);
  char text_[160];
  size_t used_ = 0;
};

// One failed check; reported when the statement ends (destructor), after
// every `<<` has been appended.
class Failure {
 public:
  Failure(const char* file, int line, const char* expression) : file_(file), line_(line), expression_(expression) {}
  Failure(const char* file, int line, const char* expression, const Message& values)
      : file_(file), line_(line), expression_(expression), values_(values) {}
  Failure(const Failure&) = delete;
  ~Failure();
  template <typename T>
  Failure& operator<<(const T& value) {
    message_ << value;
    return *this;
  }

 private:
  const char* file_;
  int line_;
  const char* expression_;
  Message values_;
  Message message_;
};

// `return Fatal() = Failure(...) << ...;` ends a test body after a failed
// ASSERT_ (the assignment binds after every <<, as in GoogleTest).
struct Fatal {
  void operator=(const Failure&) const {}
};

template <typename A, typename B>
bool Equal(const A& a, const B& b) {
  if constexpr (std::is_integral_v<A> && std::is_integral_v<B>) {
    if constexpr (std::is_signed_v<A> != std::is_signed_v<B>) {
      if ((std::is_signed_v<A> && a < A{}) || (std::is_signed_v<B> && b < B{})) return false;
    }
    return static_cast<unsigned long long>(a) == static_cast<unsigned long long>(b);
  } else if constexpr (std::is_pointer_v<A> && std::is_null_pointer_v<B>) {
    return a == nullptr;
  } else {
    return a == b;
  }
}
template <typename A, typename B>
bool Less(const A& a, const B& b) {
  if constexpr (std::is_integral_v<A> && std::is_integral_v<B> && std::is_signed_v<A> != std::is_signed_v<B>) {
    if (std::is_signed_v<A> && a < A{}) return true;
    if (std::is_signed_v<B> && b < B{}) return false;
    return static_cast<unsigned long long>(a) < static_cast<unsigned long long>(b);
  } else {
    return a < b;
  }
}
bool AlmostEqual(double a, double b, int ulps_float_or_double);
bool StringEqual(const char* a, const char* b);

// The outcome of a comparison: each operand is evaluated once, and both are
// kept for the report when they print as numbers.
struct Comparison {
  bool ok;
  Message values;
  Failure Report(const char* file, int line, const char* text) const { return Failure(file, line, text, values); }
};
template <typename A, typename B>
Comparison Compared(bool ok, const A& a, const B& b) {
  Comparison c{ok, Message()};
  if constexpr ((std::is_arithmetic_v<A> || std::is_enum_v<A>) && (std::is_arithmetic_v<B> || std::is_enum_v<B>)) {
    if (!ok) c.values << a << " vs " << b;
  }
  return c;
}
template <typename A, typename B>
Comparison CompareEq(const A& a, const B& b) { return Compared(Equal(a, b), a, b); }
template <typename A, typename B>
Comparison CompareNe(const A& a, const B& b) { return Compared(!Equal(a, b), a, b); }
template <typename A, typename B>
Comparison CompareLt(const A& a, const B& b) { return Compared(Less(a, b), a, b); }
template <typename A, typename B>
Comparison CompareLe(const A& a, const B& b) { return Compared(!Less(b, a), a, b); }
template <typename A, typename B>
Comparison CompareGt(const A& a, const B& b) { return Compared(Less(b, a), a, b); }
template <typename A, typename B>
Comparison CompareGe(const A& a, const B& b) { return Compared(!Less(a, b), a, b); }
template <typename A, typename B, typename T>
Comparison CompareNear(const A& a, const B& b, const T& tolerance) {
  return Compared(std::fabs(static_cast<double>(a) - static_cast<double>(b)) <= static_cast<double>(tolerance), a, b);
}
template <typename A, typename B>
Comparison CompareDoubleEq(const A& a, const B& b) { return Compared(AlmostEqual(a, b, 0), a, b); }
template <typename A, typename B>
Comparison CompareFloatEq(const A& a, const B& b) { return Compared(AlmostEqual(a, b, 1), a, b); }

void ScopedTracePush(const char* file, int line, const Message& message);
void ScopedTracePop();
struct ScopedTrace {
  template <typename T>
  ScopedTrace(const char* file, int line, const T& what) {
    Message m;
    m << what;
    ScopedTracePush(file, line, m);
  }
  ~ScopedTrace() { ScopedTracePop(); }
};

void SkipDeathTest(const char* file, int line);

}  // namespace fwtest

namespace testing {

using Message = ::fwtest::Message;

class Test {
 public:
  virtual ~Test() = default;
  virtual void SetUp() {}
  virtual void TearDown() {}
  virtual void TestBody() = 0;
  // Printed with the test's result on the host; dropped here.
  template <typename T>
  static void RecordProperty(const char* /*key*/, const T& /*value*/) {}
};

// A predicate's outcome with a reason, as GoogleTest's.
class AssertionResult {
 public:
  explicit AssertionResult(bool ok) : ok_(ok) {}
  explicit operator bool() const { return ok_; }
  template <typename T>
  AssertionResult& operator<<(const T& value) {
    message_ << value;
    return *this;
  }
  const char* message() const { return message_.text(); }

 private:
  bool ok_;
  Message message_;
};
inline AssertionResult AssertionSuccess() { return AssertionResult(true); }
inline AssertionResult AssertionFailure() { return AssertionResult(false); }

}  // namespace testing

namespace fwtest {
using Factory = ::testing::Test* (*)();
bool Register(const char* suite, const char* name, Factory factory);
// Runs every registered test; returns the number that failed.
int RunAllTests();
bool CurrentTestFailed();
}  // namespace fwtest

#define FWTEST_CLASS_(suite, name) suite##_##name##_FwTest
#define FWTEST_DEFINE_(suite, name, base)                                                          \
  class FWTEST_CLASS_(suite, name) : public base {                                                 \
   public:                                                                                         \
    void TestBody() override;                                                                      \
  };                                                                                               \
  [[maybe_unused]] static const bool suite##_##name##_fwtest_registered_ = ::fwtest::Register(     \
      #suite, #name, []() -> ::testing::Test* { return new FWTEST_CLASS_(suite, name)(); });        \
  void FWTEST_CLASS_(suite, name)::TestBody()

#define TEST(suite, name) FWTEST_DEFINE_(suite, name, ::testing::Test)
#define TEST_F(fixture, name) FWTEST_DEFINE_(fixture, name, fixture)

#define FWTEST_CHECK_(ok, text, on_failure) \
  if (ok) {                                 \
  } else                                    \
    on_failure ::fwtest::Failure(__FILE__, __LINE__, text)
#define FWTEST_NONFATAL_
#define FWTEST_FATAL_ return ::fwtest::Fatal() =

#define FWTEST_BOOL_(c, expect, text, kind) FWTEST_CHECK_(static_cast<bool>(c) == (expect), text, kind)
#define FWTEST_CMP_(call, text, kind)                  \
  if (const ::fwtest::Comparison fwtest_c_ = (call); fwtest_c_.ok) { \
  } else                                               \
    kind fwtest_c_.Report(__FILE__, __LINE__, text)

#define EXPECT_TRUE(c) FWTEST_BOOL_(c, true, "EXPECT_TRUE(" #c ")", FWTEST_NONFATAL_)
#define EXPECT_FALSE(c) FWTEST_BOOL_(c, false, "EXPECT_FALSE(" #c ")", FWTEST_NONFATAL_)
#define ASSERT_TRUE(c) FWTEST_BOOL_(c, true, "ASSERT_TRUE(" #c ")", FWTEST_FATAL_)
#define ASSERT_FALSE(c) FWTEST_BOOL_(c, false, "ASSERT_FALSE(" #c ")", FWTEST_FATAL_)

#define EXPECT_EQ(a, b) FWTEST_CMP_(::fwtest::CompareEq((a), (b)), "EXPECT_EQ(" #a ", " #b ")", FWTEST_NONFATAL_)
#define EXPECT_NE(a, b) FWTEST_CMP_(::fwtest::CompareNe((a), (b)), "EXPECT_NE(" #a ", " #b ")", FWTEST_NONFATAL_)
#define EXPECT_LT(a, b) FWTEST_CMP_(::fwtest::CompareLt((a), (b)), "EXPECT_LT(" #a ", " #b ")", FWTEST_NONFATAL_)
#define EXPECT_LE(a, b) FWTEST_CMP_(::fwtest::CompareLe((a), (b)), "EXPECT_LE(" #a ", " #b ")", FWTEST_NONFATAL_)
#define EXPECT_GT(a, b) FWTEST_CMP_(::fwtest::CompareGt((a), (b)), "EXPECT_GT(" #a ", " #b ")", FWTEST_NONFATAL_)
#define EXPECT_GE(a, b) FWTEST_CMP_(::fwtest::CompareGe((a), (b)), "EXPECT_GE(" #a ", " #b ")", FWTEST_NONFATAL_)
#define ASSERT_EQ(a, b) FWTEST_CMP_(::fwtest::CompareEq((a), (b)), "ASSERT_EQ(" #a ", " #b ")", FWTEST_FATAL_)
#define ASSERT_NE(a, b) FWTEST_CMP_(::fwtest::CompareNe((a), (b)), "ASSERT_NE(" #a ", " #b ")", FWTEST_FATAL_)
#define ASSERT_LT(a, b) FWTEST_CMP_(::fwtest::CompareLt((a), (b)), "ASSERT_LT(" #a ", " #b ")", FWTEST_FATAL_)
#define ASSERT_LE(a, b) FWTEST_CMP_(::fwtest::CompareLe((a), (b)), "ASSERT_LE(" #a ", " #b ")", FWTEST_FATAL_)
#define ASSERT_GT(a, b) FWTEST_CMP_(::fwtest::CompareGt((a), (b)), "ASSERT_GT(" #a ", " #b ")", FWTEST_FATAL_)
#define ASSERT_GE(a, b) FWTEST_CMP_(::fwtest::CompareGe((a), (b)), "ASSERT_GE(" #a ", " #b ")", FWTEST_FATAL_)
#define EXPECT_NEAR(a, b, tol) \
  FWTEST_CMP_(::fwtest::CompareNear((a), (b), (tol)), "EXPECT_NEAR(" #a ", " #b ", " #tol ")", FWTEST_NONFATAL_)
#define ASSERT_NEAR(a, b, tol) \
  FWTEST_CMP_(::fwtest::CompareNear((a), (b), (tol)), "ASSERT_NEAR(" #a ", " #b ", " #tol ")", FWTEST_FATAL_)
#define EXPECT_DOUBLE_EQ(a, b) \
  FWTEST_CMP_(::fwtest::CompareDoubleEq((a), (b)), "EXPECT_DOUBLE_EQ(" #a ", " #b ")", FWTEST_NONFATAL_)
#define EXPECT_FLOAT_EQ(a, b) \
  FWTEST_CMP_(::fwtest::CompareFloatEq((a), (b)), "EXPECT_FLOAT_EQ(" #a ", " #b ")", FWTEST_NONFATAL_)
#define EXPECT_STREQ(a, b) \
  FWTEST_CHECK_(::fwtest::StringEqual((a), (b)), "EXPECT_STREQ(" #a ", " #b ")", FWTEST_NONFATAL_)
#define EXPECT_STRNE(a, b) \
  FWTEST_CHECK_(!::fwtest::StringEqual((a), (b)), "EXPECT_STRNE(" #a ", " #b ")", FWTEST_NONFATAL_)

#define ADD_FAILURE() ::fwtest::Failure(__FILE__, __LINE__, "ADD_FAILURE()")
#define FAIL() return ::fwtest::Fatal() = ::fwtest::Failure(__FILE__, __LINE__, "FAIL()")
#define SUCCEED() static_cast<void>(0)

#define FWTEST_CAT2_(a, b) a##b
#define FWTEST_CAT_(a, b) FWTEST_CAT2_(a, b)
#define SCOPED_TRACE(what) ::fwtest::ScopedTrace FWTEST_CAT_(fwtest_trace_, __LINE__)(__FILE__, __LINE__, (what))

#define EXPECT_DEATH(statement, regex) ::fwtest::SkipDeathTest(__FILE__, __LINE__)
#define ASSERT_DEATH(statement, regex) ::fwtest::SkipDeathTest(__FILE__, __LINE__)
