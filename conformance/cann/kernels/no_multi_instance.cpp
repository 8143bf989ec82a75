// no_multi_instance.cpp: without MULTI_INSTANCE the in-kernel instance calls do not compile,
// as CANN's are unavailable. A test compiles this file and requires the compiler's refusal.
#include "kernel_operator.h"
#include "shmem.h"

extern "C" __global__ __aicore__ void k(GM_ADDR) { aclshmemx_instance_ctx_set(1); }
