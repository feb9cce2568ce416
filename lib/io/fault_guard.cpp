// Faults in mapped bytes turned into errors (fault_guard.hpp): the SIGBUS handler and the guard
// points it jumps to.

#include "io/fault_guard.hpp"

#include <pthread.h>
#include <ucontext.h>

#include <atomic>
#include <csetjmp>
#include <csignal>
#include <cstdint>

namespace onnxmap::detail {

namespace {

// One guard point on a thread's stack: where a fault in [begin, end) jumps to.
struct GuardFrame {
  sigjmp_buf jump;
  std::uintptr_t begin[2];            // NOLINT(modernize-avoid-c-arrays): read in a signal handler
  std::uintptr_t end[2];              // NOLINT(modernize-avoid-c-arrays)
  unsigned depth = 0;                 // 1 for a thread's outermost guard, 2 inside it, ...
  volatile std::uintptr_t fault = 0;  // written by the handler
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

// The slots, in blocks chained by `next`: a block is added (by normal code, at a guard's entry)
// when every slot is taken, and never freed, so the handler walks the chain without a lock and
// there is no limit to the guards running at once.
constexpr std::size_t kBlockSlots = 64;
struct SlotBlock {
  Slot slots[kBlockSlots];  // NOLINT(modernize-avoid-c-arrays): constant-initialized
  std::atomic<SlotBlock*> next{nullptr};
};
SlotBlock first_block;

// Calls fn(slot) for every slot of every block. Async-signal-safe.
template <class Fn>
void for_each_slot(Fn&& fn) {
  for (SlotBlock* block = &first_block; block != nullptr;
       block = block->next.load(std::memory_order_acquire)) {
    for (Slot& slot : block->slots) fn(slot);
  }
}

// How many guards this thread is inside (normal code only, never the handler).
thread_local unsigned depth = 0;

Slot& claim_slot(GuardFrame* frame) {
  const pthread_t self = pthread_self();
  // Threads start at different slots: a claim is one uncontended compare-and-swap.
  const std::size_t start = (static_cast<std::size_t>(self) >> 12U) * 7 + frame->depth;
  for (SlotBlock* block = &first_block;;) {
    for (std::size_t i = 0; i < kBlockSlots; ++i) {
      Slot& slot = block->slots[(start + i) % kBlockSlots];
      pthread_t free = 0;
      if (slot.thread.compare_exchange_strong(free, self, std::memory_order_acquire)) {
        slot.depth.store(frame->depth, std::memory_order_relaxed);
        slot.frame.store(frame, std::memory_order_relaxed);
        return slot;
      }
    }
    SlotBlock* next = block->next.load(std::memory_order_acquire);
    if (next == nullptr) {
      auto* fresh = new SlotBlock();  // every slot taken: the table grows
      if (block->next.compare_exchange_strong(next, fresh, std::memory_order_acq_rel)) {
        next = fresh;
      } else {
        delete fresh;  // another thread added one first: `next` is that one
      }
    }
    block = next;
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
  for_each_slot([&](Slot& slot) {
    if (slot.thread.load(std::memory_order_relaxed) != self) return;
    if (slot.depth.load(std::memory_order_relaxed) > landed) release_slot(slot);
  });
}

// This thread's innermost guard covering `address`, or null. Async-signal-safe.
GuardFrame* guard_of(std::uintptr_t address) {
  const pthread_t self = pthread_self();
  GuardFrame* best = nullptr;
  for_each_slot([&](Slot& slot) {
    if (slot.thread.load(std::memory_order_relaxed) != self) return;
    GuardFrame* frame = slot.frame.load(std::memory_order_relaxed);
    if (frame == nullptr || (best != nullptr && frame->depth < best->depth)) return;
    for (int k = 0; k < 2; ++k) {
      if (address >= frame->begin[k] && address < frame->end[k]) best = frame;
    }
  });
  return best;
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
    if (GuardFrame* frame = guard_of(address)) {
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
  std::atomic_signal_fence(std::memory_order_seq_cst);
  kernel(context);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  release_slot(slot);
  --depth;
  return true;
}

}  // namespace onnxmap::detail
