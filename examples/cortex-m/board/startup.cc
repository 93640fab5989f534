// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// Start-up for the mps2-an386 board: the vector table, the reset handler
// (FPU on, .data copied, .bss zeroed, the stack painted, C++ constructors
// run, main() called) and fault handlers that report over UART and end the
// run with a non-zero exit code, so a crash fails the firmware tests
// instead of hanging QEMU.
#include <cstdint>
#include <cstring>

#include "nodefl/cortex_m/board.h"

extern "C" {
extern uint32_t __data_start, __data_end, __data_load, __bss_start, __bss_end;
extern uint32_t __stack_bottom, __stack_top;
void __libc_init_array();
// The application's main(), under another C++ name: ISO C++ forbids
// calling main, which is exactly what start-up code has to do.
int nodefl_board_app_main() __asm__("main");
void Reset_Handler();
void SysTick_Handler();
}

namespace nodefl::cortex_m {
namespace {

inline constexpr uint32_t kStackPaint = 0x5AC3A55Cu;

[[noreturn]] void Fault(const char* what) {
  BoardWrite("\r\n*** ");
  BoardWrite(what);
  BoardWrite(": firmware stopped\r\n");
  BoardExit(3);
}

extern "C" void NMI_Handler() { Fault("NMI"); }
extern "C" void HardFault_Handler() { Fault("HardFault"); }
extern "C" void MemManage_Handler() { Fault("MemManage fault"); }
extern "C" void BusFault_Handler() { Fault("BusFault"); }
extern "C" void UsageFault_Handler() { Fault("UsageFault"); }
extern "C" void Default_Handler() { Fault("unexpected interrupt"); }

}  // namespace

size_t StackHighWater() {
  const uint32_t* p = &__stack_bottom;
  while (p < &__stack_top && *p == kStackPaint) ++p;
  return static_cast<size_t>(reinterpret_cast<const uint8_t*>(&__stack_top) -
                             reinterpret_cast<const uint8_t*>(p));
}

}  // namespace nodefl::cortex_m

// The reset handler runs before the FPU is enabled: it must not touch a
// floating-point register until CPACR grants access (GCC does not use them
// for this integer code; the FPU is switched on first anyway).
extern "C" void Reset_Handler() {
  volatile uint32_t* const cpacr = reinterpret_cast<volatile uint32_t*>(0xE000ED88u);
  *cpacr |= 0xFu << 20;  // CP10 and CP11: full access
  __asm__ volatile("dsb\n\tisb" ::: "memory");

  const uint32_t* src = &__data_load;
  for (uint32_t* dst = &__data_start; dst < &__data_end;) *dst++ = *src++;
  for (uint32_t* dst = &__bss_start; dst < &__bss_end;) *dst++ = 0;
  // Paint the stack below the current frame (a few words of margin).
  uint32_t* sp;
  __asm__ volatile("mov %0, sp" : "=r"(sp));
  for (uint32_t* p = &__stack_bottom; p < sp - 16; ++p) *p = nodefl::cortex_m::kStackPaint;

  __libc_init_array();
  nodefl::cortex_m::BoardExit(nodefl_board_app_main());
}

namespace {

using Handler = void (*)();

// ARMv7-M: initial stack pointer, then the 15 system exceptions; no device
// interrupt is used, so the table ends after SysTick.
__attribute__((section(".isr_vector"), used)) const Handler kVectors[16] = {
    reinterpret_cast<Handler>(&__stack_top),
    Reset_Handler,
    nodefl::cortex_m::NMI_Handler,
    nodefl::cortex_m::HardFault_Handler,
    nodefl::cortex_m::MemManage_Handler,
    nodefl::cortex_m::BusFault_Handler,
    nodefl::cortex_m::UsageFault_Handler,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    nodefl::cortex_m::Default_Handler,  // SVCall
    nodefl::cortex_m::Default_Handler,  // DebugMonitor
    nullptr,
    nodefl::cortex_m::Default_Handler,  // PendSV
    SysTick_Handler,
};

}  // namespace
