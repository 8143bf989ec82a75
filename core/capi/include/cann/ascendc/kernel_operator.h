/* kernel_operator.h (shmem-rs): the part of AscendC's programming interface that CANN SHMEM
 * kernels use around SHMEM calls, for kernels compiled as host C++ and run on the simulator's
 * AI cores (launched with ICPU_RUN_KF, tikicpulib.h): block queries, SyncAll, pipe and event
 * synchronisation, the data cache calls, GlobalTensor/LocalTensor, TPipe/TBuf/TQue UB
 * allocation and DataCopy/DataCopyPad between GM and UB. Written by shmem-rs from AscendC's
 * documented interface; not AscendC's implementation.
 *
 * Each simulated core runs its block's instructions in order, so pipe barriers and flags order
 * nothing further and only check their arguments; the data cache calls are full memory fences
 * (and scheduling points), which is what a kernel that reads a peer's store needs on aarch64. */
#ifndef SHMEM_RS_ASCENDC_KERNEL_OPERATOR_H
#define SHMEM_RS_ASCENDC_KERNEL_OPERATOR_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "stub_def.h"

#ifdef __cplusplus
extern "C" {
#endif
/* The simulator's device entries (libshmem.so) that this header builds on. */
void *aclsimd_ub_base(void);
uint32_t aclsimd_block_idx(void);
uint32_t aclsimd_block_num(void);
void aclsimd_sync_all(void);
void aclsimd_yield(void);
void aclsimd_fail(const char *call, const char *detail);
int aclsimd_failed(void);
void *aclsimKernelArg(void *p);
#ifdef __cplusplus
}
#endif

/* The AI core's pipes and event ids, global as the compiler's intrinsics declare them. */
enum pipe_t {
    PIPE_S = 0,
    PIPE_V,
    PIPE_M,
    PIPE_MTE1,
    PIPE_MTE2,
    PIPE_MTE3,
    PIPE_ALL,
    PIPE_MTE4,
    PIPE_MTE5,
    PIPE_V2,
    PIPE_FIX,
};
enum event_t { EVENT_ID0 = 0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };

/* The AI core's own intrinsics of the block queries. */
static inline int64_t get_block_idx(void) { return (int64_t)aclsimd_block_idx(); }
static inline int64_t get_block_num(void) { return (int64_t)aclsimd_block_num(); }

#ifdef __cplusplus
namespace AscendC {

using TEventID = int8_t;

enum class TPosition : uint8_t { GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM = VECCALC, SPM, SHM = SPM, TSCM, MAX };
using QuePosition = TPosition;

enum class HardEvent : uint8_t {
    MTE2_MTE1, MTE1_MTE2, MTE1_M, M_MTE1, MTE2_V, V_MTE2, MTE3_V, V_MTE3, M_V, V_M, V_V, MTE3_MTE1, MTE1_MTE3,
    MTE1_V, MTE2_M, M_MTE2, V_MTE1, M_FIX, FIX_M, MTE3_M, M_MTE3, MTE2_MTE3, MTE3_MTE2, S_V, V_S, S_MTE2,
    MTE2_S, S_MTE3, MTE3_S, MTE2_FIX, FIX_MTE2, FIX_S, M_S, FIX_MTE3, MTE1_FIX, FIX_MTE1, MTE3_FIX, FIX_V, V_FIX,
    S_M, S_MTE1, MTE1_S, MAX
};

enum class CacheLine : uint8_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };
enum class DcciDst : uint8_t { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };

/* The UB's size and the alignment of UB addresses and GM<->UB transfers. */
constexpr uint32_t TOTAL_UB_SIZE = 192 * 1024;
constexpr uint32_t ONE_BLK_SIZE = 32;

inline int64_t GetBlockIdx() { return (int64_t)aclsimd_block_idx(); }
inline int64_t GetBlockNum() { return (int64_t)aclsimd_block_num(); }
/* Sub-blocks (vector cores of one AI core): the simulator's blocks are single vector cores. */
inline int64_t GetSubBlockIdx() { return 0; }
inline int64_t GetSubBlockNum() { return 1; }
inline int64_t GetTaskRation() { return 1; }

/* Every block of the launch on this PE; refused in a launch of more than 48 blocks. */
template <bool isAIVOnly = true>
inline void SyncAll()
{
    aclsimd_sync_all();
}

template <pipe_t pipe = PIPE_ALL>
inline void PipeBarrier()
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

namespace aclsim_detail {
inline void check_event(const char *call, int32_t id)
{
    if (id < 0 || id > 7) {
        aclsimd_fail(call, "the event id must be one of EVENT_ID0 to EVENT_ID7");
    }
}
} // namespace aclsim_detail

template <HardEvent event>
inline void SetFlag(int32_t eventID)
{
    aclsim_detail::check_event("SetFlag", eventID);
}

template <HardEvent event>
inline void WaitFlag(int32_t eventID)
{
    aclsim_detail::check_event("WaitFlag", eventID);
}

inline int64_t GetSystemCycle()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    /* A 50 MHz system counter, as the AI core's. */
    return (int64_t)ts.tv_sec * 50000000 + ts.tv_nsec / 20;
}

/* A tensor in global memory: device memory the kernel reaches directly. */
template <typename T>
class GlobalTensor {
public:
    using PrimType = T;
    GlobalTensor() : addr_(nullptr), size_(0) {}
    void SetGlobalBuffer(__gm__ T *buffer, uint64_t bufferSize)
    {
        addr_ = (T *)aclsimKernelArg((void *)buffer);
        size_ = bufferSize;
    }
    void SetGlobalBuffer(__gm__ T *buffer) { SetGlobalBuffer(buffer, 0); }
    __gm__ T *GetPhyAddr() const { return addr_; }
    __gm__ T *GetPhyAddr(uint64_t offset) const { return addr_ + offset; }
    uint64_t GetSize() const { return size_; }
    T GetValue(uint64_t offset) const
    {
        aclsimd_yield();
        T v;
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        memcpy(&v, (const void *)(addr_ + offset), sizeof(T));
        return v;
    }
    void SetValue(uint64_t offset, T value)
    {
        memcpy((void *)(addr_ + offset), &value, sizeof(T));
        __atomic_thread_fence(__ATOMIC_RELEASE);
    }
    GlobalTensor operator[](uint64_t offset) const
    {
        GlobalTensor t;
        t.addr_ = addr_ + offset;
        t.size_ = size_ > offset ? size_ - offset : 0;
        return t;
    }

private:
    T *addr_;
    uint64_t size_;
};

/* A tensor in the block's UB: an offset into it and a length in elements. */
template <typename T>
class LocalTensor {
public:
    using PrimType = T;
    LocalTensor() : offset_(0), len_(0) {}
    LocalTensor(uint32_t offset, uint32_t len) : offset_(offset), len_(len) {}
    /* The UB address (a `__ubuf__` pointer: an offset into the UB). */
    __ubuf__ T *GetPhyAddr() const { return reinterpret_cast<__ubuf__ T *>((uint64_t)offset_); }
    __ubuf__ T *GetPhyAddr(uint32_t offset) const
    {
        return reinterpret_cast<__ubuf__ T *>((uint64_t)offset_ + (uint64_t)offset * sizeof(T));
    }
    uint32_t GetSize() const { return len_; }
    uint32_t GetLength() const { return len_ * sizeof(T); }
    uint32_t UbOffset() const { return offset_; }
    /* Where the thread reaches the tensor. */
    T *HostAddr() const { return (T *)((uint8_t *)aclsimd_ub_base() + offset_); }
    T GetValue(uint32_t index) const
    {
        aclsimd_yield();
        T v;
        memcpy(&v, HostAddr() + index, sizeof(T));
        return v;
    }
    void SetValue(uint32_t index, T value) { memcpy(HostAddr() + index, &value, sizeof(T)); }
    LocalTensor operator[](uint32_t offset) const
    {
        return LocalTensor(offset_ + offset * (uint32_t)sizeof(T), len_ > offset ? len_ - offset : 0);
    }
    template <typename U>
    LocalTensor<U> ReinterpretCast() const
    {
        return LocalTensor<U>(offset_, (uint32_t)((uint64_t)len_ * sizeof(T) / sizeof(U)));
    }
    void SetSize(uint32_t len) { len_ = len; }

private:
    uint32_t offset_;
    uint32_t len_;
};

/* A UB buffer for one tensor at a time (TPipe::InitBuffer). */
template <TPosition pos = TPosition::VECCALC>
class TBuf {
public:
    TBuf() : offset_(0), len_(0) {}
    template <typename T>
    LocalTensor<T> Get() const
    {
        return LocalTensor<T>(offset_, len_ / (uint32_t)sizeof(T));
    }
    template <typename T>
    LocalTensor<T> Get(uint32_t len) const
    {
        if (len * sizeof(T) > len_) {
            aclsimd_fail("TBuf::Get", "more elements than the buffer holds");
        }
        return LocalTensor<T>(offset_, len);
    }
    uint32_t offset_;
    uint32_t len_;
};

/* A queue of `depth` UB buffers (TPipe::InitBuffer): tensors are allocated round-robin, and
 * EnQue/DeQue pass them on (one core runs its pipes in order). */
template <TPosition pos, int32_t depth = 1>
class TQue {
public:
    TQue() : offset_(0), num_(0), len_(0), next_(0) {}
    template <typename T>
    LocalTensor<T> AllocTensor()
    {
        if (num_ == 0) {
            aclsimd_fail("TQue::AllocTensor", "the queue has no buffer (TPipe::InitBuffer)");
            return LocalTensor<T>();
        }
        uint32_t at = offset_ + (next_ % num_) * len_;
        next_++;
        return LocalTensor<T>(at, len_ / (uint32_t)sizeof(T));
    }
    template <typename T>
    void FreeTensor(LocalTensor<T> &) {}
    template <typename T>
    bool EnQue(const LocalTensor<T> &t)
    {
        held_ = t.UbOffset();
        held_len_ = t.GetLength();
        return true;
    }
    template <typename T>
    LocalTensor<T> DeQue()
    {
        return LocalTensor<T>(held_, held_len_ / (uint32_t)sizeof(T));
    }
    uint32_t offset_, num_, len_, next_;
    uint32_t held_ = 0, held_len_ = 0;
};

/* The block's UB allocator: buffers in order from the start of the UB. */
class TPipe {
public:
    TPipe() : used_(0) {}
    template <TPosition pos, int32_t depth>
    bool InitBuffer(TQue<pos, depth> &que, uint8_t num, uint32_t len)
    {
        uint32_t l = (len + ONE_BLK_SIZE - 1) / ONE_BLK_SIZE * ONE_BLK_SIZE;
        if (!Reserve("TPipe::InitBuffer", (uint64_t)l * num)) return false;
        que.offset_ = used_ - l * num;
        que.num_ = num;
        que.len_ = l;
        return true;
    }
    template <TPosition pos>
    bool InitBuffer(TBuf<pos> &buf, uint32_t len)
    {
        uint32_t l = (len + ONE_BLK_SIZE - 1) / ONE_BLK_SIZE * ONE_BLK_SIZE;
        if (!Reserve("TPipe::InitBuffer", l)) return false;
        buf.offset_ = used_ - l;
        buf.len_ = len;
        return true;
    }
    void Reset() { used_ = 0; }
    void Destroy() { used_ = 0; }

private:
    bool Reserve(const char *call, uint64_t bytes)
    {
        if (used_ + bytes > TOTAL_UB_SIZE) {
            aclsimd_fail(call, "the buffers exceed the 192 KiB UB");
            return false;
        }
        used_ += (uint32_t)bytes;
        return true;
    }
    uint32_t used_;
};

struct DataCopyParams {
    uint16_t blockCount = 1;
    uint16_t blockLen = 0; /* in 32-byte blocks */
    uint16_t srcStride = 0;
    uint16_t dstStride = 0;
    DataCopyParams() {}
    DataCopyParams(uint16_t count, uint16_t len, uint16_t srcGap, uint16_t dstGap)
        : blockCount(count), blockLen(len), srcStride(srcGap), dstStride(dstGap) {}
};

struct DataCopyExtParams {
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;  /* in bytes */
    uint32_t srcStride = 0; /* GM: bytes; UB: 32-byte blocks */
    uint32_t dstStride = 0;
    uint32_t rsv = 0;
    DataCopyExtParams() {}
    DataCopyExtParams(uint16_t count, uint32_t len, uint32_t srcGap, uint32_t dstGap, uint32_t r)
        : blockCount(count), blockLen(len), srcStride(srcGap), dstStride(dstGap), rsv(r) {}
};

template <typename T>
struct DataCopyPadExtParams {
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    T paddingValue = T();
    DataCopyPadExtParams() {}
    DataCopyPadExtParams(bool pad, uint8_t left, uint8_t right, T value)
        : isPad(pad), leftPadding(left), rightPadding(right), paddingValue(value) {}
};

namespace aclsim_detail {
/* Checks a GM<->UB transfer of `bytes` at UB offset `ub` (32-byte aligned and inside the UB). */
inline bool check_ub(const char *call, uint64_t ub, uint64_t bytes, bool aligned_len)
{
    if (ub % ONE_BLK_SIZE != 0) {
        aclsimd_fail(call, "the UB address is not 32-byte aligned");
        return false;
    }
    if (aligned_len && bytes % ONE_BLK_SIZE != 0) {
        aclsimd_fail(call, "DataCopy moves whole 32-byte blocks; use DataCopyPad for other lengths");
        return false;
    }
    if (ub + bytes > TOTAL_UB_SIZE) {
        aclsimd_fail(call, "the transfer runs past the end of the 192 KiB UB");
        return false;
    }
    return true;
}
inline uint8_t *ub_at(uint64_t off) { return (uint8_t *)aclsimd_ub_base() + off; }
} // namespace aclsim_detail

/* GM -> UB, `count` elements (a whole number of 32-byte blocks). */
template <typename T>
inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, uint32_t count)
{
    uint64_t bytes = (uint64_t)count * sizeof(T);
    if (!aclsim_detail::check_ub("DataCopy", dst.UbOffset(), bytes, true)) return;
    aclsimd_yield();
    memcpy(aclsim_detail::ub_at(dst.UbOffset()), (const void *)src.GetPhyAddr(), bytes);
}

/* UB -> GM, `count` elements. */
template <typename T>
inline void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src, uint32_t count)
{
    uint64_t bytes = (uint64_t)count * sizeof(T);
    if (!aclsim_detail::check_ub("DataCopy", src.UbOffset(), bytes, true)) return;
    aclsimd_yield();
    memcpy((void *)dst.GetPhyAddr(), aclsim_detail::ub_at(src.UbOffset()), bytes);
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

/* UB -> UB, `count` elements. */
template <typename T>
inline void DataCopy(const LocalTensor<T> &dst, const LocalTensor<T> &src, uint32_t count)
{
    uint64_t bytes = (uint64_t)count * sizeof(T);
    if (!aclsim_detail::check_ub("DataCopy", dst.UbOffset(), bytes, true) ||
        !aclsim_detail::check_ub("DataCopy", src.UbOffset(), bytes, true))
        return;
    memmove(aclsim_detail::ub_at(dst.UbOffset()), aclsim_detail::ub_at(src.UbOffset()), bytes);
}

/* GM -> UB in `blockCount` rows of `blockLen` 32-byte blocks, gaps in blocks on both sides. */
template <typename T>
inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const DataCopyParams &p)
{
    uint64_t row = (uint64_t)p.blockLen * ONE_BLK_SIZE;
    uint64_t span = (uint64_t)p.blockCount * (row + (uint64_t)p.dstStride * ONE_BLK_SIZE);
    if (!aclsim_detail::check_ub("DataCopy", dst.UbOffset(), span, true)) return;
    aclsimd_yield();
    for (uint16_t i = 0; i < p.blockCount; i++) {
        memcpy(aclsim_detail::ub_at(dst.UbOffset() + i * (row + (uint64_t)p.dstStride * ONE_BLK_SIZE)),
               (const uint8_t *)src.GetPhyAddr() + i * (row + (uint64_t)p.srcStride * ONE_BLK_SIZE), row);
    }
}

/* UB -> GM in rows, as above. */
template <typename T>
inline void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src, const DataCopyParams &p)
{
    uint64_t row = (uint64_t)p.blockLen * ONE_BLK_SIZE;
    uint64_t span = (uint64_t)p.blockCount * (row + (uint64_t)p.srcStride * ONE_BLK_SIZE);
    if (!aclsim_detail::check_ub("DataCopy", src.UbOffset(), span, true)) return;
    aclsimd_yield();
    for (uint16_t i = 0; i < p.blockCount; i++) {
        memcpy((uint8_t *)dst.GetPhyAddr() + i * (row + (uint64_t)p.dstStride * ONE_BLK_SIZE),
               aclsim_detail::ub_at(src.UbOffset() + i * (row + (uint64_t)p.srcStride * ONE_BLK_SIZE)), row);
    }
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

/* GM -> UB of any length: `blockCount` rows of `blockLen` bytes, GM rows `srcStride` bytes
 * apart (gap), UB rows padded to 32 bytes and `dstStride` blocks apart; the padding gets
 * `paddingValue` when `isPad`. */
template <typename T>
inline void DataCopyPad(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const DataCopyExtParams &p,
                        const DataCopyPadExtParams<T> &pad)
{
    uint64_t ubRow = ((uint64_t)p.blockLen + ONE_BLK_SIZE - 1) / ONE_BLK_SIZE * ONE_BLK_SIZE;
    uint64_t span = (uint64_t)p.blockCount * (ubRow + (uint64_t)p.dstStride * ONE_BLK_SIZE);
    if (!aclsim_detail::check_ub("DataCopyPad", dst.UbOffset(), span, false)) return;
    aclsimd_yield();
    for (uint16_t i = 0; i < p.blockCount; i++) {
        uint8_t *to = aclsim_detail::ub_at(dst.UbOffset() + i * (ubRow + (uint64_t)p.dstStride * ONE_BLK_SIZE));
        memcpy(to, (const uint8_t *)src.GetPhyAddr() + i * ((uint64_t)p.blockLen + p.srcStride), p.blockLen);
        if (pad.isPad) {
            for (uint64_t b = p.blockLen; b + sizeof(T) <= ubRow; b += sizeof(T)) memcpy(to + b, &pad.paddingValue, sizeof(T));
        }
    }
}

template <typename T>
inline void DataCopyPad(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const DataCopyExtParams &p)
{
    DataCopyPad(dst, src, p, DataCopyPadExtParams<T>());
}

/* UB -> GM of any length: UB rows padded to 32 bytes and `srcStride` blocks apart, GM rows
 * `dstStride` bytes apart (gap). */
template <typename T>
inline void DataCopyPad(const GlobalTensor<T> &dst, const LocalTensor<T> &src, const DataCopyExtParams &p)
{
    uint64_t ubRow = ((uint64_t)p.blockLen + ONE_BLK_SIZE - 1) / ONE_BLK_SIZE * ONE_BLK_SIZE;
    uint64_t span = (uint64_t)p.blockCount * (ubRow + (uint64_t)p.srcStride * ONE_BLK_SIZE);
    if (!aclsim_detail::check_ub("DataCopyPad", src.UbOffset(), span, false)) return;
    aclsimd_yield();
    for (uint16_t i = 0; i < p.blockCount; i++) {
        memcpy((uint8_t *)dst.GetPhyAddr() + i * ((uint64_t)p.blockLen + p.dstStride),
               aclsim_detail::ub_at(src.UbOffset() + i * (ubRow + (uint64_t)p.srcStride * ONE_BLK_SIZE)), p.blockLen);
    }
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

/* The data cache: clean and invalidate one line or all of it. The simulated core's loads and
 * stores reach memory directly; the call is a full fence and a scheduling point. */
template <typename T, CacheLine entireType, DcciDst dcciDst>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T> &)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    aclsimd_yield();
}

template <typename T, CacheLine entireType>
inline void DataCacheCleanAndInvalid(const GlobalTensor<T> &)
{
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    aclsimd_yield();
}

} // namespace AscendC
#endif /* __cplusplus */

#endif /* SHMEM_RS_ASCENDC_KERNEL_OPERATOR_H */
