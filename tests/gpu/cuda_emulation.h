#pragma once
// A CPU emulation of the device primitives of gpu/ops/cuda/mma_primitives.cuh, so that the tensor-core CMDTop kernel
// (gpu/ops/cuda/cmdtop_mma_kernel.cuh) runs unchanged on a machine without a GPU: one std::thread per CUDA thread,
// std::barrier for __syncthreads and for the warp-synchronous operations (shuffles, mma.sync), mma.sync.m16n8k16
// computed from the fragment layouts of the PTX ISA ("Matrix Fragments for mma.m16n8k16 with floating point type",
// accumulated in double). Every shared-memory access is checked: inside the allocation, no read of a byte nothing
// wrote, no two threads touching a byte between two barriers when one of them writes (a missing barrier).
//
// Include this header BEFORE the kernel header (it defines TRACKSCOPE_CUDA_EMULATION and the primitives), then
// call run_blocks() with a lambda that calls the kernel function. Test-only; slow (seconds per block).

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <cstdlib>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "gpu/ops/cuda/cmdtop_mma_layout.h"

#define TRACKSCOPE_CUDA_EMULATION 1
#define TRACKSCOPE_DEVICE_FN inline
#define TRACKSCOPE_KERNEL(threads, blocks) void
#define TRACKSCOPE_UNROLL
#define TRACKSCOPE_UNROLL_BY(n)

namespace trackscope::test::cuda_emulation {

// -- 16-bit floating point (round to nearest even, as __floats2half2_rn / __floats2bfloat162_rn) ----------------
inline uint32_t float_bits(float f) {
  uint32_t u = 0;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f = 0.0f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float bf16_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }
inline uint16_t float_to_bf16(float f) {
  const uint32_t u = float_bits(f);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
inline float fp16_to_float(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1u, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  float magnitude = 0.0f;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 31) {
    magnitude = mantissa == 0 ? INFINITY : NAN;
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400u), static_cast<int>(exponent) - 25);
  }
  return sign ? -magnitude : magnitude;
}
inline uint16_t float_to_fp16(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  if (std::isnan(f)) return static_cast<uint16_t>(sign | 0x7e00u);
  const float a = std::fabs(f);
  if (a >= 65520.0f) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to infinity
  if (a < std::ldexp(1.0f, -14)) {
    // Subnormal: multiples of 2^-24, nearest even (nearbyint under the default rounding mode).
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(a, 24))));
  }
  int exponent = 0;
  const float m = std::frexp(a, &exponent);                // a = m * 2^exponent, m in [0.5, 1)
  const float scaled = std::nearbyint(std::ldexp(m, 11));  // 11 significant bits, nearest even
  uint32_t mantissa = static_cast<uint32_t>(scaled);
  if (mantissa == 2048u) {
    mantissa = 1024u;
    ++exponent;
  }
  const uint32_t biased = static_cast<uint32_t>(exponent - 1 + 15);
  if (biased >= 31u) return static_cast<uint16_t>(sign | 0x7c00u);
  return static_cast<uint16_t>(sign | (biased << 10) | (mantissa & 0x3ffu));
}
/// The storage of an arithmetic tag's elements: 16-bit patterns, or float bit patterns for 3xTF32.
template <class Element>
using RawOf = std::conditional_t<std::is_same_v<Element, gpu::ops::cuda::Tf32x3Tag>, uint32_t, uint16_t>;
template <class Element>
float element_to_float(RawOf<Element> v) {
  if constexpr (std::is_same_v<Element, gpu::ops::cuda::Bf16Tag>) {
    return bf16_to_float(v);
  } else if constexpr (std::is_same_v<Element, gpu::ops::cuda::Fp16Tag>) {
    return fp16_to_float(v);
  } else {
    return bits_float(v);
  }
}
template <class Element>
RawOf<Element> float_to_element(float f) {
  if constexpr (std::is_same_v<Element, gpu::ops::cuda::Bf16Tag>) {
    return float_to_bf16(f);
  } else if constexpr (std::is_same_v<Element, gpu::ops::cuda::Fp16Tag>) {
    return float_to_fp16(f);
  } else {
    return float_bits(f);
  }
}

/// The run's random seed: fresh each run, or TRACKSCOPE_TEST_SEED's; printed once, as "[tag] random seed N", so that
/// a failing run can be repeated.
inline uint64_t test_seed(const char* tag) {
  static const uint64_t seed = [tag] {
    uint64_t s = std::random_device{}();
    if (const char* text = std::getenv("TRACKSCOPE_TEST_SEED")) s = std::strtoull(text, nullptr, 10);
    std::printf("[%s] random seed %llu (TRACKSCOPE_TEST_SEED=%llu repeats this run)\n", tag,
                static_cast<unsigned long long>(s), static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

/// The bits of one float / Bf16Tag / Fp16Tag array element (what the kernels load and store), and conversions.
template <class Element>
using ElementBits = std::conditional_t<std::is_same_v<Element, float>, uint32_t, uint16_t>;
template <class Element>
float bits_to_value(ElementBits<Element> v) {
  if constexpr (std::is_same_v<Element, float>) {
    return bits_float(v);
  } else {
    return element_to_float<Element>(v);
  }
}
/// f rounded to nearest-even into the element type.
template <class Element>
ElementBits<Element> value_to_bits(float f) {
  if constexpr (std::is_same_v<Element, float>) {
    return float_bits(f);
  } else {
    return float_to_element<Element>(f);
  }
}

/// 16-byte aligned storage (as cudaMalloc gives) for `elements` values of T followed by a tail of kTail, all set to
/// `fill` at first: the tail is the poison whose changes show writes past the end.
template <class T>
struct PoisonedBuffer {
  static constexpr size_t kTail = 64;
  PoisonedBuffer(size_t elements, T fill)
      : size(elements), poison(fill), words((elements + kTail) * sizeof(T) / 16 + 1) {
    std::fill(data(), data() + size + kTail, poison);
  }
  T* data() { return reinterpret_cast<T*>(words.data()); }
  T& operator[](size_t i) { return data()[i]; }
  /// Tail elements whose bits are not the poison's (compared as bits: a NaN poison differs from itself as a float).
  int64_t tail_writes() {
    int64_t writes = 0;
    for (size_t i = size; i < size + kTail; ++i) writes += std::memcmp(&data()[i], &poison, sizeof(T)) != 0 ? 1 : 0;
    return writes;
  }
  size_t size;
  T poison;
  std::vector<gpu::ops::cuda::Words4> words;
};

// -- one emulated thread block -----------------------------------------------------------------------------
// A warp's exchange slots, two sets used alternately, so that one barrier per warp-synchronous operation suffices:
// a lane writes operation k's set before the barrier of k and reads it after; it can write set k % 2 again only at
// operation k + 2, after the barrier of k + 1, which every lane reaches only after its reads of operation k.
struct Warp {
  std::barrier<> barrier{32};
  float values[2][32] = {};
  uint32_t a[2][32][4] = {};
  uint32_t b[2][32][2] = {};
};

class Block {
 public:
  Block(int threads, size_t shared_bytes)
      : threads_(threads),
        barrier(threads),
        storage((shared_bytes + 15) / 16),
        shared_bytes_(shared_bytes),
        pending_(shared_bytes, -1),
        writer_(shared_bytes, -1),
        write_epoch_(shared_bytes, -1),
        reader_(shared_bytes, -1),
        read_epoch_(shared_bytes, -1) {
    for (int w = 0; w < threads / 32; ++w) warps.push_back(std::make_unique<Warp>());
    for (gpu::ops::cuda::Words4& w : storage) w = {0xa5a5a5a5u, 0xa5a5a5a5u, 0xa5a5a5a5u, 0xa5a5a5a5u};  // garbage
  }

  void* shared() { return storage.data(); }

  // Checks an access of `bytes` at p by `thread` in barrier epoch `epoch`.
  void access(const void* p, size_t bytes, bool write, int thread, int epoch) {
    const auto* base = reinterpret_cast<const unsigned char*>(storage.data());
    const auto* at = static_cast<const unsigned char*>(p);
    if (at < base || at + bytes > base + shared_bytes_) {
      fail("shared access outside the allocation at offset " + std::to_string(at - base) + " (" +
           std::to_string(bytes) + " bytes, allocation " + std::to_string(shared_bytes_) + ") by thread " +
           std::to_string(thread));
      return;
    }
    const auto offset = static_cast<size_t>(at - base);
    const std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = offset; i < offset + bytes; ++i) {
      if (pending_[i] >= 0) {
        fail("shared byte " + std::to_string(i) + " accessed by thread " + std::to_string(thread) + " while thread " +
             std::to_string(pending_[i]) + "'s cp.async into it is not waited for");
        return;
      }
      if (write) {
        if (write_epoch_[i] == epoch && writer_[i] != thread) race("write after write", i, thread);
        if (read_epoch_[i] == epoch && reader_[i] != thread) race("write after read", i, thread);
        writer_[i] = thread;
        write_epoch_[i] = epoch;
      } else {
        if (writer_[i] < 0) {
          fail("read of shared byte " + std::to_string(i) + " that nothing wrote, by thread " + std::to_string(thread));
          return;
        }
        if (write_epoch_[i] == epoch && writer_[i] != thread) race("read after write", i, thread);
        if (read_epoch_[i] == epoch && reader_[i] != thread) {
          reader_[i] = -2;  // several readers this epoch
        } else if (read_epoch_[i] != epoch) {
          reader_[i] = thread;
          read_epoch_[i] = epoch;
        }
      }
    }
  }

  /// cp.async bookkeeping: bytes [p, p + bytes) are the destination of `thread`'s copy in flight (set), or landed.
  void set_pending(const void* p, size_t bytes, int thread) {
    const auto offset = static_cast<size_t>(static_cast<const unsigned char*>(p) -
                                            reinterpret_cast<const unsigned char*>(storage.data()));
    const std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = offset; i < offset + bytes && i < shared_bytes_; ++i) pending_[i] = thread;
  }
  void clear_pending(const void* p, size_t bytes) { set_pending(p, bytes, -1); }

  void fail(const std::string& message) {
    const std::lock_guard<std::mutex> lock(errors_mutex_);
    if (errors_.size() < 20) errors_.push_back(message);
  }
  std::vector<std::string> errors() const { return errors_; }

  int threads_;
  std::barrier<> barrier;
  std::vector<std::unique_ptr<Warp>> warps;
  std::vector<gpu::ops::cuda::Words4> storage;

 private:
  void race(const char* kind, size_t byte, int thread) {
    fail(std::string("shared-memory race (") + kind + ") at byte " + std::to_string(byte) + ", thread " +
         std::to_string(thread) + " (a missing barrier)");
  }

  size_t shared_bytes_;
  std::vector<int> pending_;  // thread whose cp.async into the byte is in flight, or -1
  std::vector<int> writer_, write_epoch_, reader_, read_epoch_;
  std::mutex mutex_;
  std::mutex errors_mutex_;
  std::vector<std::string> errors_;
};

struct ThreadContext {
  Block* block = nullptr;
  int thread = 0;
  int64_t block_index = 0;
  int epoch = 0;
  int warp_operations = 0;              // warp-synchronous operations so far: selects the slot set
  std::vector<void*> copies_in_flight;  // this thread's cp.async destinations (16 bytes each) not yet waited for
  bool serial = false;                  // run_blocks_serially: barriers, warp operations and shared memory refused
};
inline thread_local ThreadContext context;

/// Runs blocks [first_block, first_block + count) of a launch with `threads` threads each (sequentially, one block
/// at a time); `kernel` is called once per emulated thread. Returns the errors the checks found.
inline std::vector<std::string> run_blocks(int64_t first_block, int64_t count, int threads, size_t shared_bytes,
                                           const std::function<void()>& kernel) {
  std::vector<std::string> errors;
  for (int64_t b = first_block; b < first_block + count; ++b) {
    Block block(threads, shared_bytes);
    std::vector<std::thread> workers;
    workers.reserve(static_cast<size_t>(threads));
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([&block, &kernel, t, b] {
        context = ThreadContext{&block, t, b, 0, 0, {}};
        kernel();
        if (!context.copies_in_flight.empty())
          block.fail("thread " + std::to_string(t) + " ended with cp.async in flight");
      });
    }
    for (std::thread& w : workers) w.join();
    for (const std::string& e : block.errors()) errors.push_back("block " + std::to_string(b) + ": " + e);
  }
  return errors;
}

/// The same for a kernel without barriers, warp-synchronous operations or shared memory (an elementwise kernel):
/// its threads run one after another on the calling thread, thousands of times faster than a thread each. A
/// barrier, warp operation or shared-memory access in such a kernel is reported as an error.
inline std::vector<std::string> run_blocks_serially(int64_t first_block, int64_t count, int threads,
                                                    const std::function<void()>& kernel) {
  std::vector<std::string> errors;
  for (int64_t b = first_block; b < first_block + count; ++b) {
    Block block(threads, 0);
    for (int t = 0; t < threads; ++t) {
      context = ThreadContext{&block, t, b, 0, 0, {}, true};
      try {
        kernel();
      } catch (const std::logic_error& e) {
        block.fail("thread " + std::to_string(t) + ": " + e.what());
        break;
      }
    }
    context = ThreadContext{};
    for (const std::string& e : block.errors()) errors.push_back("block " + std::to_string(b) + ": " + e);
  }
  return errors;
}

}  // namespace trackscope::test::cuda_emulation

// The primitives the kernel calls (same names and signatures as gpu/ops/cuda/mma_primitives.cuh).
namespace trackscope::gpu::ops::cuda::primitives {

namespace emu = ::trackscope::test::cuda_emulation;

inline int thread_index() { return emu::context.thread; }
inline int64_t block_index() { return emu::context.block_index; }
inline void allow_dependent_launch() {}  // the emulation runs one grid at a time
inline void refuse_when_serial(const char* what) {
  if (emu::context.serial) throw std::logic_error(std::string(what) + " in a kernel run serially");
}
inline void block_sync() {
  refuse_when_serial("a barrier");
  emu::context.block->barrier.arrive_and_wait();
  ++emu::context.epoch;
}
inline emu::Warp& current_warp() {
  refuse_when_serial("a warp-synchronous operation");
  return *emu::context.block->warps[static_cast<size_t>(emu::context.thread / 32)];
}
inline float warp_xor(float v, int offset) {
  emu::Warp& warp = current_warp();
  const int lane = emu::context.thread % 32;
  const int set = emu::context.warp_operations++ & 1;
  warp.values[set][lane] = v;
  warp.barrier.arrive_and_wait();
  return warp.values[set][lane ^ offset];
}
inline float reciprocal_sqrt(float x) { return 1.0f / std::sqrt(x); }
inline void* dynamic_shared() {
  refuse_when_serial("shared memory");
  return emu::context.block->shared();
}

template <class T>
T shared_load(const T* p) {
  emu::context.block->access(p, sizeof(T), false, emu::context.thread, emu::context.epoch);
  T v;
  std::memcpy(static_cast<void*>(&v), static_cast<const void*>(p), sizeof(T));
  return v;
}
template <class T>
void shared_store(T* p, const T& v) {
  emu::context.block->access(p, sizeof(T), true, emu::context.thread, emu::context.epoch);
  std::memcpy(static_cast<void*>(p), static_cast<const void*>(&v), sizeof(T));
}

inline Words4 global_load16(const void* p) {
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0) emu::context.block->fail("misaligned 16-byte global load");
  Words4 w;
  std::memcpy(&w, p, 16);
  return w;
}
inline uint16_t global_load_u16(const uint16_t* p) { return *p; }
inline uint32_t global_load_u32(const uint32_t* p) { return *p; }
inline float global_load_f32(const float* p) { return *p; }
inline void global_store_u32(uint32_t* p, uint32_t v) {
  if (reinterpret_cast<uintptr_t>(p) % 4 != 0) emu::context.block->fail("misaligned 4-byte global store");
  *p = v;
}
inline void global_store_u16(uint16_t* p, uint16_t v) { *p = v; }
inline void global_store16(void* p, const Words4& w) {
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0) emu::context.block->fail("misaligned 16-byte global store");
  std::memcpy(p, &w, 16);
}
// Global memory shared between blocks. run_blocks runs the blocks one after another, and a block's threads are
// joined before the next block starts: every global write of an earlier block is visible to a later one, so the
// fence has nothing to order (a no-op) and the L2 load is a plain load. The threads of one block do run at once:
// the atomic add is an atomic read-modify-write of the word itself (std::atomic_ref).
inline void global_fence() {}
inline uint32_t global_atomic_add_u32(uint32_t* p, uint32_t v) { return std::atomic_ref<uint32_t>(*p).fetch_add(v); }
inline float global_load_f32_coherent(const float* p) { return *p; }
// The build has no FP contraction (ISO C++ mode, no -ffp-contract=fast): each operation is rounded on its own.
inline float mul_rn(float a, float b) { return a * b; }
inline float add_rn(float a, float b) { return a + b; }
inline float round_half_even(float x) { return std::nearbyint(x); }

// cp.async: the copy happens at once (recorded as this thread's write in the issuing epoch), but the destination is
// marked in flight until this thread's async_wait_all(): any access before that is reported, and the wait records
// the write again in its own epoch, so that a reader not separated from the wait by a barrier is reported as a race.
inline void async_copy16(void* shared_destination, const void* global_source, bool inside) {
  emu::Block& block = *emu::context.block;
  if (reinterpret_cast<uintptr_t>(shared_destination) % 16 != 0 ||
      (inside && reinterpret_cast<uintptr_t>(global_source) % 16 != 0)) {
    block.fail("misaligned cp.async");
  }
  block.access(shared_destination, 16, true, emu::context.thread, emu::context.epoch);
  if (inside) {
    std::memcpy(shared_destination, global_source, 16);
  } else {
    std::memset(shared_destination, 0, 16);
  }
  block.set_pending(shared_destination, 16, emu::context.thread);
  emu::context.copies_in_flight.push_back(shared_destination);
}
inline void async_wait_all() {
  emu::Block& block = *emu::context.block;
  for (void* p : emu::context.copies_in_flight) {
    block.clear_pending(p, 16);
    block.access(p, 16, true, emu::context.thread, emu::context.epoch);
  }
  emu::context.copies_in_flight.clear();
}
inline void global_store_f32(float* p, float v) { *p = v; }

inline float exp_f32(float x) { return std::exp(x); }
inline float erf_f32(float x) { return std::erf(x); }
inline float sin_f32(float x) { return std::sin(x); }

template <class Element>
float half_to_float(uint16_t bits) {
  return emu::element_to_float<Element>(bits);
}
template <class Element>
uint16_t float_to_half(float x) {
  return emu::float_to_element<Element>(x);
}

template <class Element>
uint32_t pack2(float low, float high) {
  static_assert(!std::is_same_v<Element, Tf32x3Tag>, "pack2 packs 16-bit elements");
  return static_cast<uint32_t>(emu::float_to_element<Element>(low)) |
         (static_cast<uint32_t>(emu::float_to_element<Element>(high)) << 16);
}

// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}: the warp's fragments are exchanged, each lane computes its
// four accumulators from the assembled 16x16 A and 16x8 B.
template <class Element>
void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  emu::Warp& warp = current_warp();
  const int lane = emu::context.thread % 32;
  const int set = emu::context.warp_operations++ & 1;
  for (int r = 0; r < 4; ++r) warp.a[set][lane][r] = a[r];
  warp.b[set][lane][0] = b0;
  warp.b[set][lane][1] = b1;
  warp.barrier.arrive_and_wait();
  auto half = [](uint32_t word, int which) { return static_cast<uint16_t>(which == 0 ? word & 0xffffu : word >> 16); };
  // A (row, col): lane (row % 8) * 4 + (col % 8) / 2, register (row >= 8) + 2 (col >= 8), half col % 2.
  auto a_element = [&](int row, int col) {
    const uint32_t word = warp.a[set][(row % 8) * 4 + (col % 8) / 2][(row >= 8 ? 1 : 0) + (col >= 8 ? 2 : 0)];
    return static_cast<double>(emu::element_to_float<Element>(half(word, col % 2)));
  };
  // B (k, n): lane n * 4 + (k % 8) / 2, register k >= 8, half k % 2.
  auto b_element = [&](int k, int n) {
    const uint32_t word = warp.b[set][n * 4 + (k % 8) / 2][k >= 8 ? 1 : 0];
    return static_cast<double>(emu::element_to_float<Element>(half(word, k % 2)));
  };
  const int g = lane / 4, t = lane % 4;
  for (int i = 0; i < 4; ++i) {
    const int row = g + (i >= 2 ? 8 : 0);
    const int col = 2 * t + (i % 2);
    double sum = d[i];
    for (int k = 0; k < 16; ++k) sum += a_element(row, k) * b_element(k, col);
    d[i] = static_cast<float>(sum);
  }
}

inline uint32_t to_tf32(float x) { return emu::float_bits(round_to_tf32(x)); }
inline float bits_to_float(uint32_t bits) { return emu::bits_float(bits); }
inline uint32_t float_to_bits(float x) { return emu::float_bits(x); }

// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32. The operands must be TF32 values (lower 13 bits zero: the
// kernel rounds with cvt.rna.tf32.f32 and the host packer with round_to_tf32); anything else is reported.
inline void mma_1688_tf32(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  emu::Warp& warp = current_warp();
  const int lane = emu::context.thread % 32;
  const int set = emu::context.warp_operations++ & 1;
  for (int r = 0; r < 4; ++r) warp.a[set][lane][r] = a[r];
  warp.b[set][lane][0] = b0;
  warp.b[set][lane][1] = b1;
  for (uint32_t v : {a[0], a[1], a[2], a[3], b0, b1}) {
    if ((v & 0x1fffu) != 0u) emu::context.block->fail("mma.tf32 operand that is not a TF32 value");
  }
  warp.barrier.arrive_and_wait();
  // A (row, col): lane (row % 8) * 4 + col % 4, register (row >= 8) + 2 (col >= 4). B (k, n): lane n * 4 + k % 4,
  // register k >= 4.
  auto a_element = [&](int row, int col) {
    return static_cast<double>(
        emu::bits_float(warp.a[set][(row % 8) * 4 + col % 4][(row >= 8 ? 1 : 0) + (col >= 4 ? 2 : 0)]));
  };
  auto b_element = [&](int k, int n) {
    return static_cast<double>(emu::bits_float(warp.b[set][n * 4 + k % 4][k >= 4]));
  };
  const int g = lane / 4, t = lane % 4;
  for (int i = 0; i < 4; ++i) {
    const int row = g + (i >= 2 ? 8 : 0);
    const int col = 2 * t + (i % 2);
    double sum = d[i];
    for (int k = 0; k < 8; ++k) sum += a_element(row, k) * b_element(k, col);
    d[i] = static_cast<float>(sum);
  }
}

}  // namespace trackscope::gpu::ops::cuda::primitives
