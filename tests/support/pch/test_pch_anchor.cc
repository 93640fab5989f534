// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The translation unit whose compilation produces the tests' precompiled
// header (tests/cmake/nodefl_test_pch.cmake); it defines nothing.
