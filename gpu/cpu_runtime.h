#pragma once
// CPU-side runtime settings for running the model on the CPU (torch-free header: app/ and tests may include it).
//
//   gpu::keep_freed_host_memory();      // once, early in main(), before tracking on the CPU
//   gpu::set_cpu_threads(1);            // LibTorch intra-op threads (Debian's LibTorch starts with 1)
//
// Threads: call from the thread that owns torch work, before that work starts; not concurrently with it.

namespace trackscope::gpu {

/// Stops glibc from returning large freed blocks to the OS (M_MMAP_MAX = 0, trim threshold 2 GiB, mallopt's
/// largest). glibc serves every allocation above 32 MiB with a fresh mmap and unmaps it on free, so each large
/// tensor the model creates is page-faulted in again: measured on the parity inputs, 40-60% of a CPU forward was
/// kernel time zeroing pages. With the former 1 GiB threshold a 47-frame pass of LocoTrack-S still handed its
/// backbone activations back every pass (~300k page faults; backbone 7.7-8.5 s of CPU time on one core against
/// 4.8-5.2 s with 2 GiB, measured back to back). The cost: the process keeps up to 2 GiB of freed heap until
/// release_freed_host_memory(). No effect outside glibc. Returns false if refused.
bool keep_freed_host_memory();

/// Hands the freed heap back to the OS (malloc_trim): call after a CPU job, not during one.
void release_freed_host_memory();

/// Sets LibTorch's intra-op thread count, clamped to [1, core::available_cpu_threads()], and returns the count in
/// effect. More threads than free cores make
/// OpenMP ops slower, not faster (measured: 2 threads on 2 busy cores took 2-4x longer than 1).
int set_cpu_threads(int threads);
int cpu_threads();

}  // namespace trackscope::gpu
