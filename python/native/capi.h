#ifndef H3_PYTHON_NATIVE_CAPI_H_
#define H3_PYTHON_NATIVE_CAPI_H_

/* The plain C ABI of libminimax_h3_nvfp4.so, loaded by the Python package with ctypes
 * (python/minimax_h3_nvfp4/_native.py mirrors the declarations here: H3OutProjArgs from the
 * operand table it is generated from, checked against h3_args_size / h3_args_offset at load; bump
 * H3_CAPI_BASE_VERSION on any other change of a struct or a signature, capi_tuning.h's included).
 *
 * Two backends behind one argument struct:
 *   h3_out_proj_gpu  the CUDA kernel (kernels/out_proj.h) on a caller's stream: every pointer is
 *                    device memory of `device`; nothing synchronizes, so calls can be captured.
 *   h3_out_proj_cpu  the bit-exact emulator (emulator/op.h): every pointer is host memory.
 * The arrays go to the backend as they are (the dimensions come with every array), which
 * validates them (core/operands.h ValidateOperands with its rules: kernels/out_proj.cc,
 * emulator/op_operands.cc): every rejection happens before anything is written.
 *
 * Errors: every function returning int returns 0 on success, else an absl::StatusCode value
 * (H3_INVALID_ARGUMENT, ...); the message ("minimax_h3_nvfp4_out_proj: <arg> must be <expected>,
 * got <given>") is then h3_last_error(), thread-local, valid until the thread's next call.
 * Element types are not part of the ABI (the caller checks them): bf16 travels as uint16 bit
 * patterns, the block scales as bytes. */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI's version: a base (bumped on any change of a signature, an option, or the operand
 * table other than a row added: a row removed, renamed or moved) times 100, plus the number of
 * rows of core/operands.def, so that a new operand changes it by itself. */
#define H3_CAPI_BASE_VERSION 9
enum {
  H3_CAPI_OPERAND_ROWS = 0
#define H3_OPERAND(...) +1
#include "core/operands.def"
#undef H3_OPERAND
};
#define H3_CAPI_VERSION (H3_CAPI_BASE_VERSION * 100 + H3_CAPI_OPERAND_ROWS)

/* Return codes: absl::StatusCode values. */
enum {
  H3_OK = 0,
  H3_INVALID_ARGUMENT = 3,    /* bad shape, size, value, alignment or aliasing */
  H3_FAILED_PRECONDITION = 9, /* e.g. a call that may not be captured */
  H3_OUT_OF_RANGE = 11,       /* the weight's global scale would overflow */
  H3_UNIMPLEMENTED = 12,      /* unsupported device */
  H3_INTERNAL = 13,           /* a CUDA error (its name and message in h3_last_error) */
  H3_CAPTURING = 1000         /* not an error: H3OutProjArgs.cached_workspace under capture */
};

/* One dense row-major operand: its address and its dimensions (ndim <= 4). data == NULL means
 * "not given" where an operand is optional. */
typedef struct H3Array {
  void* data;
  int64_t ndim;
  int64_t shape[4];
} H3Array;

/* minimax_h3_nvfp4_out_proj (docs/contract.md section 1). One H3Array per operand of
 * core/operands.def, named as there and in its order (dtype, shape over M, N, K, G, optional or
 * required, aliasing: that table says; M, K come from attn_out, N from o_weight_q, G from gate),
 * each followed by `<name>_value` where the operand may be a host float instead
 * (o_weight_global_scale_value), then the options. Element types are the caller's to check. */
#define H3_CAPI_VALUE_REQUIRED(name)
#define H3_CAPI_VALUE_OPTIONAL(name)
#define H3_CAPI_VALUE_IN_PLACE(name)
#define H3_CAPI_VALUE_OR_VALUE(name) float name##_value;
typedef struct H3OutProjArgs {
  int64_t version; /* H3_CAPI_VERSION */
#define H3_OPERAND(name, dtype, shape, d0, d1, presence, ...) \
  H3Array name;                                               \
  H3_CAPI_VALUE_##presence(name)
#include "core/operands.def"
#undef H3_OPERAND
  int32_t cached_workspace; /* GPU: 1 when act_q, act_sf and ready_flags lie in a workspace the
                               caller reuses from call to call (stream-ordered): the call then
                               returns H3_CAPTURING, writing nothing, if the stream is being
                               captured (or its capture status cannot be read), for the caller
                               to call again with a workspace of the capture's own; 0: no check */
  int32_t sm90_emulation;   /* GPU, sm_90 only: 0 faithful, 1 fast */
  int32_t cpu_gemm;         /* CPU: 0 fast f32 (Eigen), 1 exact accumulator */
  int32_t device;           /* GPU: CUDA device ordinal of the operands; -1: the current one */
  int32_t tile;   /* GPU: the SM120 kernel's config: 0 auto, or a code of the registry
                     (kernels/device/tiles.h; h3_tile_count / h3_tile_name / h3_tile_code list it) */
  int32_t ready_flags_zeroed; /* GPU: 1 when ready_flags (given) is all zero on the stream, e.g.
                                 left so by this op's last successful call with M > 0 there (its
                                 kernel leaves the flags zero; M = 0 touches nothing): the call
                                 skips its cudaMemsetAsync; 0: the call zeroes it */
} H3OutProjArgs;

/* The layout of H3OutProjArgs as this library was compiled: its size, and each field's offset
 * (-1: no such field), for the Python mirror to check its own against at load time. */
int64_t h3_args_size(void);
int64_t h3_args_offset(const char* field);

int32_t h3_capi_version(void);

/* The project's version (core/version.h, e.g. "0.1.0"): the Python package's __version__ and
 * every tool's --version say the same. */
const char* h3_version(void);

/* The message of this thread's last failed call ("" if none). */
const char* h3_last_error(void);

/* Why the current CUDA context's kernel gave up waiting (kernels/device/stall.h: CTA, warp role, tile,
 * barrier or ready flag), "" when it has not. A GPU call runs asynchronously: after a kernel
 * fault shows at the caller's next synchronization, this says which wait timed out.
 * Thread-local, valid until the thread's next call. */
const char* h3_stall_message(void);

/* The fused op on `stream` (a cudaStream_t / CUstream; NULL = the legacy default stream). */
int32_t h3_out_proj_gpu(const H3OutProjArgs* args, void* stream);

/* The emulator (OpenMP threads; calls are serialized on its scratch). */
int32_t h3_out_proj_cpu(const H3OutProjArgs* args);

/* The SM120 kernel's tile-config registry (kernels/device/tiles.h), auto first: entries
 * 0 .. h3_tile_count() - 1, each a name (what Python's tile= accepts) and the code for
 * H3OutProjArgs.tile. Outside that range: NULL / -1. */
int32_t h3_tile_count(void);
const char* h3_tile_name(int32_t index);
int32_t h3_tile_code(int32_t index);

/* Bytes of the GPU op's per-call ready-flag workspace for m rows (a multiple of 16). */
int64_t h3_ready_flag_bytes(int64_t m);

/* Bytes of the 128x4-swizzled weight scales for an [n, k] weight: round_up(n,128) *
 * round_up(k/16,4) (contract section 4). */
int64_t h3_swizzled_scale_bytes(int64_t n, int64_t k);

/* The GPU build that runs on `device` (-1: current) for that sm90_emulation, into buf
 * (NUL-terminated, truncated to buf_len). Fails with H3_UNIMPLEMENTED / H3_INTERNAL where no
 * supported CUDA device is. */
int32_t h3_backend_name(int32_t device, int32_t sm90_emulation, char* buf, int64_t buf_len);

/* One CUDA device as the tuning cache keys it (kernels/tuning/tune_cache.h; capi_tuning.h takes it). */
typedef struct H3DeviceProperties {
  char name[256];         /* cudaDeviceProp::name, NUL-terminated */
  int32_t major, minor;   /* compute capability */
  int32_t sm_count;       /* multiprocessors */
  int32_t driver_version; /* cudaDriverGetVersion: 1000 * major + 10 * minor */
} H3DeviceProperties;

/* The number of CUDA devices into *count. Where none is usable (no driver, a driver older than
 * this build's CUDA runtime, no GPU) it fails with H3_FAILED_PRECONDITION and h3_last_error says
 * why (core/cuda_diagnosis.h); *count is then 0. */
int32_t h3_device_count(int32_t* count);

/* The properties of CUDA device `device` (>= 0). Nothing is enqueued: callable while capturing. */
int32_t h3_device_properties(int32_t device, H3DeviceProperties* props);

/* quantize_minimax_h3_o_weight_nvfp4 (contract section 5) on the CPU: weight [N, K] (bf16 bit
 * patterns, or f32 when weight_is_f32), q [N, K/2], sf h3_swizzled_scale_bytes(N, K) bytes. */
int32_t h3_quantize_weight_cpu(const H3Array* weight, int32_t weight_is_f32, H3Array* q,
                               H3Array* sf, float* global_scale);

/* quantize_minimax_h3_o_weight_nvfp4 on the GPU (kernels/weight_quant/weight_quant.h), the same bytes as
 * h3_quantize_weight_cpu: weight, q and sf are device memory of `device` (-1: the current one),
 * weight 16-byte, q 8-byte, sf 4-byte aligned. Runs on `stream` and synchronizes it once (the
 * global scale comes back to the host, and a non-finite weight or an overflowing scale is an
 * error before anything is written): not capturable. q and sf are complete in stream order. */
int32_t h3_quantize_weight_gpu(const H3Array* weight, int32_t weight_is_f32, H3Array* q,
                               H3Array* sf, float* global_scale, int32_t device, void* stream);

/* The contract's set of admissible `out` values (section 8; emulator/check.h ComputeOutEnvelope)
 * for the rows `rows[0..nrows)` (nrows == 0: all M rows), host memory: lo, hi [rows, N] bf16 bit
 * patterns (the closed interval in the bf16 total order), exact [rows, N] (1 where the bound is
 * 0). args->out, act_q, act_sf and ready_flags are ignored. */
int32_t h3_out_envelope_cpu(const H3OutProjArgs* args, const int64_t* rows, int64_t nrows,
                            uint16_t* lo, uint16_t* hi, uint8_t* exact);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* H3_PYTHON_NATIVE_CAPI_H_ */
