#ifndef H3_CORE_HOST_DEVICE_H_
#define H3_CORE_HOST_DEVICE_H_

// H3_HD marks a function that the CPU code (g++) and the kernels (nvcc, host and device) share.
#if defined(__CUDACC__)
#define H3_HD __host__ __device__ __forceinline__
#else
#define H3_HD inline
#endif

#endif  // H3_CORE_HOST_DEVICE_H_
