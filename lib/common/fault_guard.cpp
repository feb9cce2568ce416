// Faults in mapped bytes turned into errors (fault_guard.hpp): the SIGBUS handler, the guard
// points, and the registry of mapped files that names a fault's file.

#include "common/fault_guard.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csetjmp>
#include <csignal>
#include <cstdint>
#include <optional>

#include "common/mapped_files.hpp"

namespace onnxmap::detail {

namespace {

// The pages a stand-in guard put zeros in place of, per mapped file: [begin, end) of each.
constexpr std::size_t kStandInFiles = 4;
struct StandIns {
  std::uintptr_t begin[kStandInFiles]{};  // NOLINT(modernize-avoid-c-arrays): written by a handler
  std::uintptr_t end[kStandInFiles]{};    // NOLINT(modernize-avoid-c-arrays)
};

// One guard point on a thread's stack: where a fault in [begin, end) jumps to, or, for a
// stand-in guard (guard_reads), which covers every address, what the handler put in its place.
struct GuardFrame {
  sigjmp_buf jump;
  std::uintptr_t begin[2];            // NOLINT(modernize-avoid-c-arrays): read in a signal handler
  std::uintptr_t end[2];              // NOLINT(modernize-avoid-c-arrays)
  unsigned depth = 0;                 // 1 for a thread's outermost guard, 2 inside it, ...
  volatile std::uintptr_t fault = 0;  // the first fault, written by the handler
  bool stand_in = false;              // a guard_reads guard: no jump
  StandIns filled;                    // written by the handler of a stand-in guard
  // The error for `fault`, made when its map was unmapped inside the guard (the model closed
  // inside the work): the guard's end can no longer find the file. Normal code only.
  std::optional<Error> unmapped_fault;
  std::uint64_t stood_in_before = 0;  // stand_in_count when a stand-in guard began
};

// The guards running now, one slot each, found by the handler through the thread that owns
// them: no thread_local there, since a module loaded with dlopen (the Python extension) may
// allocate its TLS on first use, and an allocator is no place for a signal handler. A slot is
// claimed by its `thread` (compare-and-swap from 0), then given its `frame`; only that thread
// writes it until it sets `thread` back to 0, so the handler, which runs on the faulting thread,
// reads its own slots only.
struct alignas(64) Slot {
  std::atomic<pthread_t> thread{0};
  std::atomic<GuardFrame*> frame{nullptr};
  // The frame's depth, kept here: after a jump past a guard, its frame is dead stack.
  std::atomic<unsigned> depth{0};
};
constexpr std::size_t kSlots = 512;
Slot slots[kSlots];  // NOLINT(modernize-avoid-c-arrays): constant-initialized, read in a handler

// How many guards this thread is inside (normal code only, never the handler).
thread_local unsigned depth = 0;

Slot& claim_slot(GuardFrame* frame) {
  const pthread_t self = pthread_self();
  // Threads start at different slots: a claim is one uncontended compare-and-swap.
  const std::size_t start = (static_cast<std::size_t>(self) >> 12U) * 7 + frame->depth;
  while (true) {
    for (std::size_t i = 0; i < kSlots; ++i) {
      Slot& slot = slots[(start + i) % kSlots];
      pthread_t free = 0;
      if (slot.thread.compare_exchange_strong(free, self, std::memory_order_acquire)) {
        slot.depth.store(frame->depth, std::memory_order_relaxed);
        slot.frame.store(frame, std::memory_order_relaxed);
        return slot;
      }
    }
    sched_yield();  // more than kSlots guards at once: wait for one to end
  }
}

void release_slot(Slot& slot) {
  slot.frame.store(nullptr, std::memory_order_relaxed);
  slot.thread.store(0, std::memory_order_release);
}

// After a jump to a guard of depth `landed`: the slots of this thread's guards inside it (which
// the jump left without releasing) are released.
void release_inner_slots(unsigned landed) {
  const pthread_t self = pthread_self();
  for (Slot& slot : slots) {
    if (slot.thread.load(std::memory_order_relaxed) != self) continue;
    if (slot.depth.load(std::memory_order_relaxed) > landed) release_slot(slot);
  }
}

// This thread's innermost guard covering `address`, or null. Async-signal-safe.
GuardFrame* guard_of(std::uintptr_t address) {
  const pthread_t self = pthread_self();
  GuardFrame* best = nullptr;
  for (Slot& slot : slots) {
    if (slot.thread.load(std::memory_order_relaxed) != self) continue;
    GuardFrame* frame = slot.frame.load(std::memory_order_relaxed);
    if (frame == nullptr || (best != nullptr && frame->depth < best->depth)) continue;
    for (int k = 0; k < 2; ++k) {
      if (address >= frame->begin[k] && address < frame->end[k]) best = frame;
    }
  }
  return best;
}

// Counts the pages stood in for, by any thread: a guard that saw it change may have read zeros.
std::atomic<std::uint64_t> stand_in_count{0};
std::uintptr_t page_size = 4096;  // set before the handler is installed

// Puts a page of zeros in place of the page of `address` (in a mapped file of onnxmap, past its
// end) and notes it in `frame`, so that the read runs on. Async-signal-safe (mmap is a system
// call). False when the address is in no mapped file of onnxmap, or the frame notes no more files.
bool stand_in(GuardFrame& frame, std::uintptr_t address) {
  const auto [map_begin, map_end] = map_of(address);
  if (map_end == 0) return false;
  StandIns& filled = frame.filled;
  std::size_t k = 0;
  while (k < kStandInFiles && filled.end[k] != 0 &&
         !(filled.begin[k] >= map_begin && filled.begin[k] < map_end)) {
    ++k;
  }
  if (k == kStandInFiles) return false;
  const std::uintptr_t page = address & ~(page_size - 1);
  if (::mmap(reinterpret_cast<void*>(page), page_size, PROT_READ,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
    return false;
  }
  filled.begin[k] = filled.end[k] == 0 ? page : std::min(filled.begin[k], page);
  filled.end[k] = std::max(filled.end[k], page + page_size);
  if (frame.fault == 0) frame.fault = address;
  stand_in_count.fetch_add(1, std::memory_order_relaxed);
  return true;
}

// The handler ours replaced, written once before ours is installed, read only by the handler.
struct sigaction previous {};

// Hands a fault no guard covers to the handler installed before ours.
void chain(int signal, siginfo_t* info, void* context) {
  if ((previous.sa_flags & SA_SIGINFO) != 0U) {
    previous.sa_sigaction(signal, info, context);
    return;
  }
  // A SIGBUS sent by a process (kill, si_code <= 0) that was ignored stays ignored; one raised
  // by a fault cannot be ignored (the kernel forces it), so it kills as the default does.
  if (previous.sa_handler == SIG_IGN && info != nullptr && info->si_code <= 0) return;
  if (previous.sa_handler == SIG_DFL || previous.sa_handler == SIG_IGN) {
    struct sigaction fallback {};
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    (void)sigaction(signal, &fallback, nullptr);
    (void)raise(signal);  // not blocked (SA_NODEFER): the process ends here, as before
    return;
  }
  previous.sa_handler(signal);
}

// Async-signal-safe: reads this thread's guard frames, jumps, or chains.
void on_sigbus(int signal, siginfo_t* info, void* context) {
  // Faults only (si_code > 0): a SIGBUS another process sent is not a fault in our bytes.
  if (info != nullptr && info->si_code > 0) {
    const auto address = reinterpret_cast<std::uintptr_t>(info->si_addr);
    GuardFrame* frame = guard_of(address);
    // A stand-in guard answers a read past the file's end (BUS_ADRERR; not a memory error) with
    // zeros, and returns to the read.
    if (frame != nullptr && frame->stand_in) {
      if (info->si_code == BUS_ADRERR && stand_in(*frame, address)) return;
      frame = nullptr;
    }
    if (frame != nullptr) {
      frame->fault = address;
      // The jump leaves the signal mask as the kernel set it for the handler. Ours blocks nothing
      // more (SA_NODEFER, an empty mask), but the handler the kernel runs may be a wrapper of
      // ours that blocks every signal (ThreadSanitizer's): the mask of the faulting code is put
      // back, so that the next fault is not blocked (a blocked fault kills). Only on a fault.
      if (context != nullptr) {
        (void)pthread_sigmask(SIG_SETMASK, &static_cast<ucontext_t*>(context)->uc_sigmask, nullptr);
      }
      siglongjmp(frame->jump, 1);
    }
  }
  chain(signal, info, context);
}

// Installs on_sigbus once, over whatever handler the process has then (pytest's faulthandler,
// an application's own). SA_NODEFER: SIGBUS stays unblocked in the handler, so the jump out of
// it leaves the signal mask as it was at the fault (no mask to save at the guard point: no
// system call there), and a second fault is caught too. The mask blocks nothing more.
void install_handler() {
  static const bool installed = [] {
    page_size = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    struct sigaction ours {};
    ours.sa_sigaction = on_sigbus;
    ours.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&ours.sa_mask);
    (void)sigaction(SIGBUS, nullptr, &previous);
    return sigaction(SIGBUS, &ours, nullptr) == 0;
  }();
  (void)installed;
}

}  // namespace

void note_unmapped_faults(std::uintptr_t begin, std::size_t size,
                          const std::function<Error(std::uint64_t)>& error_at) noexcept {
  const pthread_t self = pthread_self();
  for (Slot& slot : slots) {
    if (slot.thread.load(std::memory_order_relaxed) != self) continue;
    GuardFrame* frame = slot.frame.load(std::memory_order_relaxed);
    if (frame == nullptr || !frame->stand_in || frame->unmapped_fault) continue;
    const std::uintptr_t fault = frame->fault;
    if (fault < begin || fault - begin >= size) continue;
    try {
      frame->unmapped_fault = error_at(fault - begin);
    } catch (...) {  // out of memory: the guard's end says "no open model holds" it instead
    }
  }
}

bool reads_intact() noexcept {
  const pthread_t self = pthread_self();
  for (Slot& slot : slots) {
    if (slot.thread.load(std::memory_order_relaxed) != self) continue;
    const GuardFrame* frame = slot.frame.load(std::memory_order_relaxed);
    if (frame == nullptr || !frame->stand_in) continue;
    // Its own fault, or another thread's meanwhile (whose zeros this one may have read).
    if (frame->fault != 0 ||
        stand_in_count.load(std::memory_order_relaxed) != frame->stood_in_before) {
      return false;
    }
  }
  return true;
}

void guard_reads(const std::function<void()>& body) {
  install_handler();
  GuardFrame frame;
  frame.stand_in = true;
  frame.begin[0] = 0;
  frame.end[0] = UINTPTR_MAX;
  frame.begin[1] = frame.end[1] = 0;
  frame.depth = ++depth;
  const std::uint64_t stood_in_before = stand_in_count.load(std::memory_order_relaxed);
  frame.stood_in_before = stood_in_before;
  Slot& slot = claim_slot(&frame);
  // Maps the files again, ends the guard, and gives the error of the fault, if any, that
  // body's results met.
  const auto finish = [&]() -> std::optional<Error> {
    std::atomic_signal_fence(std::memory_order_seq_cst);
    for (std::size_t k = 0; k < kStandInFiles && frame.filled.end[k] != 0; ++k) {
      map_file_again(frame.filled.begin[k], frame.filled.end[k]);
    }
    std::optional<Error> error;
    with_registry_locked([&] { error = std::move(frame.unmapped_fault); });  // written under it
    release_slot(slot);
    depth = frame.depth - 1;
    if (error) return error;
    if (frame.fault != 0) return mapped_fault_error(reinterpret_cast<const void*>(frame.fault));
    // Another thread's guard stood in for pages meanwhile: body may have read its zeros.
    if (stand_in_count.load(std::memory_order_relaxed) != stood_in_before) {
      if (const std::uintptr_t lost = first_lost_byte_of_any_map()) {
        return mapped_fault_error(reinterpret_cast<const void*>(lost));
      }
    }
    return std::nullopt;
  };
  std::atomic_signal_fence(std::memory_order_seq_cst);
  try {
    body();
  } catch (...) {
    // What body threw may come of the zeros (a name not found): the fault is the cause.
    if (auto error = finish()) throw std::move(*error);
    throw;
  }
  if (auto error = finish()) throw std::move(*error);
}

bool run_guarded(std::span<const std::byte> first, std::span<const std::byte> second,
                 void (*kernel)(void*), void* context, const void** fault) {
  install_handler();
  GuardFrame frame;
  frame.begin[0] = reinterpret_cast<std::uintptr_t>(first.data());
  frame.end[0] = frame.begin[0] + first.size();
  frame.begin[1] = reinterpret_cast<std::uintptr_t>(second.data());
  frame.end[1] = frame.begin[1] + second.size();
  frame.depth = ++depth;
  Slot& slot = claim_slot(&frame);
  if (sigsetjmp(frame.jump, 0) != 0) {
    release_inner_slots(frame.depth - 1);  // this guard's slot and any inside it
    depth = frame.depth - 1;
    *fault = reinterpret_cast<const void*>(frame.fault);
    return false;
  }
  const std::uint64_t stood_in_before = stand_in_count.load(std::memory_order_relaxed);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  kernel(context);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  release_slot(slot);
  --depth;
  // A guard_reads on another thread put zeros in place of lost pages meanwhile: if they were
  // in these bytes, the kernel read them without a fault.
  if (stand_in_count.load(std::memory_order_relaxed) != stood_in_before) {
    for (const auto bytes : {first, second}) {
      if (const std::uintptr_t lost = first_lost_byte(bytes)) {
        *fault = reinterpret_cast<const void*>(lost);
        return false;
      }
    }
  }
  return true;
}

}  // namespace onnxmap::detail
