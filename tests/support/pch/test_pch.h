// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The headers nearly every test file includes, compiled once per build and
// language standard (tests/cmake/nodefl_test_pch.cmake) instead of once per
// test file: GoogleTest alone is about 1.5 s of compiler time in each of
// some 150 test files, in each of the test command's five builds.
//
// Only headers from outside the project belong here: a project header
// in a precompiled header would rebuild every test when it changes.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
