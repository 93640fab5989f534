// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// The classes the kcagc job scores its clustering against (the server's
// kcagc_labels=PATH): a labels.tsv of the shared dataset layout, "node<TAB>
// class" per line. Evaluation only: the server reads it to print accuracy,
// NMI and macro-F1 (server/kcagc metrics.h) and never sends it anywhere.
// kCAGC's measures need one class per node, so a node listed twice with
// different classes is an error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nodefl::server::jobs {

struct KcagcLabels {
  std::vector<int32_t> of_node;  // -1: no class; size max node id + 1
  uint32_t classes = 0;          // max class + 1
};

// Empty on success, else "<path>:<line>: <what is wrong>" (or why the file
// cannot be read).
std::string ReadKcagcLabels(const std::string& path, KcagcLabels* out);

}  // namespace nodefl::server::jobs
