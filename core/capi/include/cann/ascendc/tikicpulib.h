/* tikicpulib.h (shmem-rs): AscendC's CPU-debug launch for the simulator. A kernel compiled as
 * host C++ runs on simulated AI cores of this PE with
 *
 *     ICPU_RUN_KF(kernel, block_dim, arg...);          // as AscendC's CPU-debug mode spells it
 *
 * in place of the NPU's `kernel<<<block_dim, nullptr, stream>>>(arg...)`: every block calls
 * kernel(arg...) on a core of its own (block index, block count, a private 192 KiB UB), on the
 * active instance's default stream, and the call waits for the launch, as AscendC's does. It
 * returns 0, or the failure's code (the failure, naming kernel, block and call, is logged).
 * ACLSHMEM_SIM_LAUNCH(kernel, block_dim, stream, arg...) enqueues the launch on an aclrtStream
 * instead, in stream order with the host calls on it; aclrtSynchronizeStream reports its outcome.
 *
 * Pointer arguments are given to the kernel as it reaches the memory: symmetric and
 * aclrtMalloc'd addresses, which host code cannot touch, become the addresses at which the
 * simulated cores load and store them. A kernel built with MULTI_INSTANCE (defined when the
 * launch line is compiled, as in the kernel's own file) starts on no instance and selects one with
 * aclshmemx_instance_ctx_set; one built without acts on instance 0.
 *
 * GmAlloc/GmFree give memory that host code and kernels share (AscendC's test buffers). Written by
 * shmem-rs from AscendC's documented interface. */
#ifndef SHMEM_RS_ASCENDC_TIKICPULIB_H
#define SHMEM_RS_ASCENDC_TIKICPULIB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include <new>
#include <tuple>
#include <type_traits>
#include <utility>

#include "kernel_operator.h"

extern "C" int aclsimKernelLaunch(const char *name, uint32_t blockDim, void *stream, int multiInstance, int wait,
                                  void (*run)(void *), void *args, void (*release)(void *));

namespace AscendC {

/* Device memory shared by host code and kernels, ending at a guard page (an overrun faults). */
inline void *GmAlloc(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t body = (size + 31) / 32 * 32;
    size_t len = (body + 2 * sizeof(size_t) + page - 1) / page * page + page;
    void *m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return nullptr;
    uint8_t *guard = (uint8_t *)m + len - page;
    mprotect(guard, page, PROT_NONE);
    uint8_t *p = guard - body;
    /* The mapping's start and length, just before the buffer. */
    ((size_t *)p)[-1] = (size_t)m;
    ((size_t *)p)[-2] = len;
    return p;
}

inline void GmFree(void *ptr)
{
    if (ptr == nullptr) return;
    munmap((void *)((size_t *)ptr)[-1], ((size_t *)ptr)[-2]);
}

enum class KernelMode { MIX_MODE = 0, AIC_MODE, AIV_MODE, MIX_AIC_1_1 };
/* The simulator runs vector cores only; the mode is accepted. */
inline void SetKernelMode(KernelMode) {}

namespace aclsim_detail {
template <typename T>
inline T *kernel_arg(T *p)
{
    return (T *)aclsimKernelArg((void *)p);
}
template <typename T>
inline T kernel_arg(T v)
{
    return v;
}

template <typename... P>
struct Launch {
    void (*func)(P...);
    std::tuple<typename std::decay<P>::type...> args;
    template <size_t... I>
    void call(std::index_sequence<I...>)
    {
        func(std::get<I>(args)...);
    }
    static void run(void *self) { static_cast<Launch *>(self)->call(std::index_sequence_for<P...>{}); }
    static void release(void *self) { delete static_cast<Launch *>(self); }
};

template <typename... P, typename... A>
inline int launch(const char *name, void (*func)(P...), uint32_t blockDim, void *stream, int multi, int wait,
                  A &&...args)
{
    static_assert(sizeof...(P) == sizeof...(A), "the launch gives the kernel a different number of arguments");
    auto *l = new Launch<P...>{func, std::tuple<typename std::decay<P>::type...>(
                                         kernel_arg(static_cast<typename std::decay<P>::type>(args))...)};
    return aclsimKernelLaunch(name, blockDim, stream, multi, wait, &Launch<P...>::run, l, &Launch<P...>::release);
}
} // namespace aclsim_detail
} // namespace AscendC

/* Whether MULTI_INSTANCE is defined where the launch line is compiled (defined empty or as 1). */
#define ACLSIM_MI_CAT_(b) ACLSIM_PROBE_MI_##b
#define ACLSIM_MI_CAT(b) ACLSIM_MI_CAT_(b)
#define ACLSIM_SECOND(a, b, ...) b
#define ACLSIM_PROBE(...) ACLSIM_SECOND(__VA_ARGS__, 0, 0)
#define ACLSIM_PROBE_MI_ ~, 1
#define ACLSIM_PROBE_MI_1 ~, 1
#define ACLSIM_MULTI_INSTANCE ACLSIM_PROBE(ACLSIM_MI_CAT(MULTI_INSTANCE))

#define ICPU_RUN_KF(func, blockDim, ...) \
    ::AscendC::aclsim_detail::launch(#func, func, (blockDim), nullptr, ACLSIM_MULTI_INSTANCE, 1, ##__VA_ARGS__)
#define ACLSHMEM_SIM_LAUNCH(func, blockDim, stream, ...) \
    ::AscendC::aclsim_detail::launch(#func, func, (blockDim), (stream), ACLSIM_MULTI_INSTANCE, 0, ##__VA_ARGS__)
/* Tiling keys select a kernel variant on the NPU; the simulator keeps the last one set. */
#define ICPU_SET_TILING_KEY(key) ((void)(key))

#endif /* SHMEM_RS_ASCENDC_TIKICPULIB_H */
