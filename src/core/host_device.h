// FXT_HD marks a function that nvcc compiles for both host and device (plain C++ elsewhere): the
// one place a rule shared by a CPU reference and its CUDA kernels is written. Headers using it
// stay C++17-clean (nvcc compiles .cu files as C++17). sim/fill_rules.h and the RL lanes use it.
#pragma once

#if defined(__CUDACC__)
#define FXT_HD __host__ __device__
// A host/device function the device code must inline: a lane's whole step in one body, so its
// state's scalars can live in registers instead of behind a pointer.
#define FXT_HD_INLINE __host__ __device__ __forceinline__
#else
#define FXT_HD
#define FXT_HD_INLINE inline
#endif
