// Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
//
// glibc keeps its allocator reachable under __libc_* names, so these
// replacements only count and forward; memory from either entry point can be
// freed through the other.
#include "heap_counter.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <new>

#if defined(NODEFL_SANITIZED)
// Declared by compiler-rt's sanitizer/allocator_interface.h, which GCC does
// not install; GCC's libasan and libtsan define it.
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*on_malloc)(const volatile void*, size_t),
                                                         void (*on_free)(const volatile void*));
#endif

namespace {
std::atomic<size_t> g_allocations{0};
inline void Count() { g_allocations.fetch_add(1, std::memory_order_relaxed); }
}  // namespace

namespace nodefl::testing {
size_t HeapAllocationCount() { return g_allocations.load(std::memory_order_relaxed); }
}  // namespace nodefl::testing

#if defined(NODEFL_SANITIZED)
// In a sanitizer build (NODEFL_SANITIZED) the sanitizer owns malloc and
// operator new (replacing them would hide the heap from it): count through
// its allocation hook, which sees every allocation of the process, as the
// replacements below do.
namespace {
void OnAllocation(const volatile void*, size_t) { Count(); }
void OnRelease(const volatile void*) {}
const int g_hooks_installed = __sanitizer_install_malloc_and_free_hooks(&OnAllocation, &OnRelease);
}  // namespace
#else
extern "C" {
void* __libc_malloc(size_t size);
void* __libc_calloc(size_t count, size_t size);
void* __libc_realloc(void* ptr, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
void __libc_free(void* ptr);
}

extern "C" {
void* malloc(size_t size) {
  Count();
  return __libc_malloc(size);
}
void* calloc(size_t count, size_t size) {
  Count();
  return __libc_calloc(count, size);
}
void* realloc(void* ptr, size_t size) {
  Count();
  return __libc_realloc(ptr, size);
}
void free(void* ptr) { __libc_free(ptr); }
void* memalign(size_t alignment, size_t size) {
  Count();
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  Count();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  Count();
  void* p = __libc_memalign(alignment, size);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
}

// operator new/delete are forwarded to the counted malloc/free above.
namespace {
void* NewOrThrow(size_t size) {
  void* p = malloc(size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* AlignedNewOrThrow(size_t size, std::align_val_t alignment) {
  void* p = memalign(static_cast<size_t>(alignment), size == 0 ? 1 : size);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(size_t size) { return NewOrThrow(size); }
void* operator new[](size_t size) { return NewOrThrow(size); }
void* operator new(size_t size, const std::nothrow_t&) noexcept { return malloc(size == 0 ? 1 : size); }
void* operator new[](size_t size, const std::nothrow_t&) noexcept { return malloc(size == 0 ? 1 : size); }
void* operator new(size_t size, std::align_val_t a) { return AlignedNewOrThrow(size, a); }
void* operator new[](size_t size, std::align_val_t a) { return AlignedNewOrThrow(size, a); }
void operator delete(void* p) noexcept { free(p); }
void operator delete[](void* p) noexcept { free(p); }
void operator delete(void* p, size_t) noexcept { free(p); }
void operator delete[](void* p, size_t) noexcept { free(p); }
void operator delete(void* p, std::align_val_t) noexcept { free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { free(p); }
#endif  // NODEFL_SANITIZED
