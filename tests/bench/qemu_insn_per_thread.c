/* Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
 *
 * A QEMU TCG plugin (user mode) that counts guest instructions per vCPU,
 * which in qemu-user means per guest thread, and prints the counts at
 * exit. nodefl-compare-bench --threaded runs party A and party B on their
 * own threads, so each party's device-side instruction count can be read
 * off separately. Built by tests/bench/compare-insn-count.sh against the
 * plugin header of Debian's qemu source package. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

enum { kMaxThreads = 64 };
static uint64_t instructions[kMaxThreads];

/* Each vCPU only ever adds to its own slot. */
static void on_block(unsigned int cpu, void *count) {
  if (cpu < kMaxThreads) instructions[cpu] += (uint64_t)(uintptr_t)count;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS,
                                       (void *)(uintptr_t)qemu_plugin_tb_n_insns(tb));
}

static void on_exit_report(qemu_plugin_id_t id, void *unused) {
  (void)id;
  (void)unused;
  char line[96];
  for (int i = 0; i < kMaxThreads; ++i) {
    if (instructions[i] == 0) continue;
    snprintf(line, sizeof(line), "insn-count thread %d: %" PRIu64 "\n", i, instructions[i]);
    qemu_plugin_outs(line);
  }
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
  (void)info;
  (void)argc;
  (void)argv;
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, on_exit_report, NULL);
  return 0;
}
