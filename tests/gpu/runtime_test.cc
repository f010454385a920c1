// The CUDA runtime basics (gpu/runtime.h): row-major GEMM in all four transpose combinations
// and strided-batched GEMM against a naive double host product, the linear layer against
// model::linear_*, column_sum against a double host sum, the split-row weight-gradient product
// gemm_tn_rows against the host product, and fill / broadcast / add / copy.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gpu/gpu_test_util.h"
#include "gpu/runtime.h"
#include "model/ops.h"
#include "model/tensor.h"

namespace fxt::gpu {
namespace {

using testing::expect_close;
using testing::random_vector;
using testing::to_device;
using CIn = model::TensorView<const float>;
using COut = model::TensorView<float>;

// Relative error floor: 10% of the reference's largest magnitude (entries that cancel to ~0 are
// judged on the tensor's scale).
double floor_of(const std::vector<float>& ref) {
  double mx = 0.0;
  for (float v : ref) mx = std::max(mx, static_cast<double>(std::abs(v)));
  return std::max(0.1 * mx, 1e-20);
}
void check(const std::vector<float>& gpu, const std::vector<float>& ref, double tol,
           const std::string& what) {
  expect_close(gpu, ref, tol, what, floor_of(ref));
}

// C = alpha op(A) op(B) + beta C on the host in double, row-major with row strides.
void host_gemm(bool ta, bool tb, int m, int n, int k, float alpha, const std::vector<float>& a,
               int lda, const std::vector<float>& b, int ldb, float beta, std::vector<float>& c,
               int ldc, size_t oa = 0, size_t ob = 0, size_t oc = 0) {
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double s = 0.0;
      for (int p = 0; p < k; ++p) {
        const double av = ta ? a[oa + static_cast<size_t>(p) * lda + i]
                             : a[oa + static_cast<size_t>(i) * lda + p];
        const double bv = tb ? b[ob + static_cast<size_t>(j) * ldb + p]
                             : b[ob + static_cast<size_t>(p) * ldb + j];
        s += av * bv;
      }
      float& cv = c[oc + static_cast<size_t>(i) * ldc + j];
      cv = static_cast<float>(alpha * s + static_cast<double>(beta) * cv);
    }
  }
}

// x rounded to BF16 (8 significant bits, to nearest even; finite x), as __float2bfloat16_rn.
float bf16_round(float x) {
  uint32_t u = 0;
  std::memcpy(&u, &x, sizeof u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  u &= 0xFFFF0000u;
  float r = 0.0f;
  std::memcpy(&r, &u, sizeof r);
  return r;
}
std::vector<float> bf16_rounded(std::vector<float> v) {
  for (float& x : v) x = bf16_round(x);
  return v;
}

void run_gemm(bool ta, bool tb, int m, int n, int k, int pad, uint64_t seed) {
  const std::string what = std::string("gemm ") + (ta ? "T" : "N") + (tb ? "T" : "N") + " " +
                           std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  // Stored shapes: A is [m, k] ([k, m] when ta), B is [k, n] ([n, k] when tb); each row padded.
  const int a_rows = ta ? k : m, a_cols = ta ? m : k;
  const int b_rows = tb ? n : k, b_cols = tb ? k : n;
  const int lda = a_cols + pad, ldb = b_cols + pad, ldc = n + pad;
  const auto a = random_vector(static_cast<size_t>(a_rows) * lda, seed);
  const auto b = random_vector(static_cast<size_t>(b_rows) * ldb, seed + 1);
  const auto c0 = random_vector(static_cast<size_t>(m) * ldc, seed + 2);
  const float alpha = 0.75f, beta = -0.5f;
  std::vector<float> ref = c0;
  host_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, ref, ldc);

  Context ctx;
  auto ga = to_device(a), gb = to_device(b), gc = to_device(c0);
  gemm(ctx, ta, tb, m, n, k, alpha, ga.data(), lda, gb.data(), ldb, beta, gc.data(), ldc);
  ctx.sync();
  const auto out = gc.download();
  check(out, ref, 1e-5, what);
  // The padding columns of C are untouched.
  for (int i = 0; i < m; ++i) {
    for (int j = n; j < ldc; ++j) {
      const size_t e = static_cast<size_t>(i) * ldc + j;
      EXPECT_EQ(out[e], c0[e]) << what << " wrote padding at (" << i << ", " << j << ")";
    }
  }
}

TEST(GpuRuntime, GemmAllTransposes) {
  FXT_SKIP_WITHOUT_GPU();
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      // Up to kSmallGemmRows output rows: the project's small kernel (k across several chunks
      // of 64, n and m not multiples of its 16 x 16 tile); above: cuBLAS.
      run_gemm(ta, tb, 37, 23, 19, 0, 10 + ta * 2 + tb);
      run_gemm(ta, tb, 64, 128, 256, 3, 20 + ta * 2 + tb);
      run_gemm(ta, tb, 1, 5, 7, 1, 30 + ta * 2 + tb);
      run_gemm(ta, tb, 64, 548, 130, 2, 35 + ta * 2 + tb);  // Mamba2's in_proj at B = 1
      run_gemm(ta, tb, kSmallGemmRows + 1, 33, 70, 1, 38 + ta * 2 + tb);
    }
  }
}

TEST(GpuRuntime, GemmBatched) {
  FXT_SKIP_WITHOUT_GPU();
  // m = 13: the small kernel (batch on its grid's z); m = 70: cuBLAS's strided batch.
  for (const int m : {13, 70}) {
    const int n = 9, k = m == 13 ? 21 : 83, batch = 5;
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        for (bool shared_b : {false, true}) {
          const int lda = ta ? m : k, ldb = tb ? k : n, ldc = n;
          const long long sa = static_cast<long long>(m) * k + 4;  // gaps between matrices
          const long long sb = shared_b ? 0 : static_cast<long long>(k) * n + 2;
          const long long sc = static_cast<long long>(m) * n + 1;
          const auto a = random_vector(static_cast<size_t>(sa) * batch, 40 + ta);
          const auto b = random_vector(
              shared_b ? static_cast<size_t>(k) * n : static_cast<size_t>(sb) * batch, 50 + tb);
          const auto c0 = random_vector(static_cast<size_t>(sc) * batch, 60);
          std::vector<float> ref = c0;
          for (int i = 0; i < batch; ++i) {
            host_gemm(ta, tb, m, n, k, 1.25f, a, lda, b, ldb, 0.5f, ref, ldc,
                      static_cast<size_t>(sa) * i, static_cast<size_t>(sb) * i,
                      static_cast<size_t>(sc) * i);
          }
          Context ctx;
          auto ga = to_device(a), gb = to_device(b), gc = to_device(c0);
          gemm_batched(ctx, ta, tb, m, n, k, 1.25f, ga.data(), lda, sa, gb.data(), ldb, sb, 0.5f,
                       gc.data(), ldc, sc, batch);
          ctx.sync();
          check(gc.download(), ref, 1e-5,
                "gemm_batched m=" + std::to_string(m) + " ta=" + std::to_string(ta) +
                    " tb=" + std::to_string(tb) + (shared_b ? " shared B" : ""));
        }
      }
    }
  }
}

// Small products are the same FP32 sums whatever the context's precision: identical bits.
TEST(GpuRuntime, SmallProductsAreFp32InEveryPrecision) {
  FXT_SKIP_WITHOUT_GPU();
  const int m = kSmallGemmRows, n = 48, k = 200;
  const auto a = random_vector(static_cast<size_t>(m) * k, 301);
  const auto b = random_vector(static_cast<size_t>(n) * k, 302);
  const Precision modes[3] = {Precision::kFp32, Precision::kTf32, Precision::kBf16};
  std::vector<float> out[3];
  for (int q = 0; q < 3; ++q) {
    Context ctx;
    ctx.set_precision(modes[q]);
    auto ga = to_device(a), gb = to_device(b);
    DeviceBuffer<float> gc(static_cast<size_t>(m) * n);
    gemm(ctx, false, true, m, n, k, 1.0f, ga.data(), k, gb.data(), k, 0.0f, gc.data(), n);
    ctx.sync();
    out[q] = gc.download();
  }
  for (int q = 1; q < 3; ++q) {
    ASSERT_EQ(out[0].size(), out[q].size());
    for (size_t i = 0; i < out[0].size(); ++i)
      ASSERT_EQ(out[0][i], out[q][i]) << precision_name(modes[q]) << " element " << i;
  }
  // And they are FP32 sums: within FP32's accumulation bound of the double product.
  double worst = 0.0;
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double s = 0.0, mag = 0.0;
      for (int t = 0; t < k; ++t) {
        const double v = static_cast<double>(a[static_cast<size_t>(i) * k + t]) *
                         b[static_cast<size_t>(j) * k + t];
        s += v;
        mag += std::abs(v);
      }
      worst = std::max(worst, std::abs(out[1][static_cast<size_t>(i) * n + j] - s) / mag);
    }
  }
  EXPECT_LE(worst, (k + 2) * std::ldexp(1.0, -24));
}

// Every precision's products against the double product, elementwise within the bound of its
// arithmetic: each input rounded with relative error e (precision_input_error: 2^-10 TF32,
// 2^-8 BF16, 0 for FP32), so a product is off by at most (2e + e^2) of |a b|, plus FP32
// accumulation over k terms (k 2^-24 of the sum of |a b|) and the output's rounding:
//   |c - c_ref| <= ((2e + e^2) + (k + 2) 2^-24) (|alpha| sum_p |a_ip b_pj| + |beta| |c0_ij|).
// With `engaged`, a reduced precision's worst error must also exceed FP32's bound, so the test
// fails if an aligned product silently ran in FP32 (cuBLAS may keep FP32 kernels for odd shapes).
// Returns the worst error in units of sum |a b|.
double run_gemm_precision(Precision p, bool ta, bool tb, int m, int n, int k, int batch,
                          bool engaged, uint64_t seed) {
  const int lda = ta ? m : k, ldb = tb ? k : n, ldc = n;
  const long long sa = static_cast<long long>(m) * k, sb = static_cast<long long>(k) * n,
                  sc = static_cast<long long>(m) * n;
  const auto a = random_vector(static_cast<size_t>(sa) * batch, seed);
  const auto b = random_vector(static_cast<size_t>(sb) * batch, seed + 1);
  const auto c0 = random_vector(static_cast<size_t>(sc) * batch, seed + 2);
  const float alpha = 0.75f, beta = -0.5f;
  Context ctx;
  ctx.set_precision(p);
  auto ga = to_device(a), gb = to_device(b), gc = to_device(c0);
  if (batch == 1) {
    gemm(ctx, ta, tb, m, n, k, alpha, ga.data(), lda, gb.data(), ldb, beta, gc.data(), ldc);
  } else {
    gemm_batched(ctx, ta, tb, m, n, k, alpha, ga.data(), lda, sa, gb.data(), ldb, sb, beta,
                 gc.data(), ldc, sc, batch);
  }
  ctx.sync();
  const std::vector<float> out = gc.download();
  const double e = precision_input_error(p), u = std::ldexp(1.0, -24);
  const double per_term = (p == Precision::kFp32 ? 0.0 : 2 * e + e * e) + (k + 2) * u;
  double worst = 0.0;
  for (int q = 0; q < batch; ++q) {
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        double s = 0.0, mag = 0.0;
        for (int t = 0; t < k; ++t) {
          const double av =
              a[static_cast<size_t>(q * sa) +
                (ta ? static_cast<size_t>(t) * lda + i : static_cast<size_t>(i) * lda + t)];
          const double bv =
              b[static_cast<size_t>(q * sb) +
                (tb ? static_cast<size_t>(j) * ldb + t : static_cast<size_t>(t) * ldb + j)];
          s += av * bv;
          mag += std::abs(av * bv);
        }
        const size_t o = static_cast<size_t>(q * sc) + static_cast<size_t>(i) * ldc + j;
        const double ref = alpha * s + beta * static_cast<double>(c0[o]);
        const double scale = std::abs(alpha) * mag + std::abs(beta) * std::abs(c0[o]);
        const double err = std::abs(out[o] - ref);
        worst = std::max(worst, err / scale);
        if (err > per_term * scale) {
          ADD_FAILURE() << precision_name(p) << " gemm " << (ta ? "T" : "N") << (tb ? "T" : "N")
                        << " " << m << "x" << n << "x" << k << " batch " << batch << " at (" << q
                        << ", " << i << ", " << j << "): error " << err << " > bound "
                        << per_term * scale;
          return worst;
        }
      }
    }
  }
  if (engaged && p != Precision::kFp32) {
    EXPECT_GT(worst, (k + 2) * u) << precision_name(p) << ": the products ran in FP32";
  }
  return worst;
}

TEST(GpuRuntime, GemmEveryPrecisionWithinItsRoundingBound) {
  FXT_SKIP_WITHOUT_GPU();
  for (Precision p : {Precision::kFp32, Precision::kTf32, Precision::kBf16}) {
    double worst = 0.0;
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        const uint64_t seed = 70 + 4 * static_cast<uint64_t>(p) + ta * 2 + tb;
        worst = std::max(worst, run_gemm_precision(p, ta, tb, 128, 96, 256, 1, true, seed));
        // Above kSmallGemmRows rows, so cuBLAS's kernels (TF32 must engage there).
        worst = std::max(worst, run_gemm_precision(p, ta, tb, 96, 48, 128, 3, true, seed + 100));
        worst = std::max(worst, run_gemm_precision(p, ta, tb, 37, 23, 19, 1, false, seed + 200));
      }
    }
    std::printf("[gemm precision] %s: worst error %.3e of sum |a b| (input rounding %.3e)\n",
                precision_name(p), worst, precision_input_error(p));
  }
}

// ---- bf16: the products of BF16-rounded operands, accumulated in FP32 -------------------------

// One bf16 product (gemm when batch = 1, else gemm_batched) against the double product of the
// BF16-rounded A and B: what the tensor cores multiply exactly, so what remains is the FP32
// accumulation over k terms and the output's rounding, within
//   2 (k + 2) 2^-24 (|alpha| sum_p |a'_ip b'_pj| + |beta| |c0_ij|)   (a', b': rounded)
// (twice the round-to-nearest bound: tensor cores may truncate inside their sums). Any product
// of unrounded or differently rounded (truncated) operands is off by ~2^-9 per term, far
// outside. A is padded (lda > its row), matrices sit at strides with gaps, B may be shared
// (stride 0): the conversion must read exactly the product's elements. Returns the worst error in
// units of the scale.
double run_bf16_gemm(bool ta, bool tb, int m, int n, int k, int batch, int pad, bool shared_b,
                     uint64_t seed) {
  const int a_rows = ta ? k : m, a_cols = ta ? m : k;
  const int b_rows = tb ? n : k, b_cols = tb ? k : n;
  const int lda = a_cols + pad, ldb = b_cols + pad, ldc = n + pad;
  const long long sa = static_cast<long long>(a_rows) * lda + 4;
  const long long sb = shared_b ? 0 : static_cast<long long>(b_rows) * ldb + 2;
  const long long sc = static_cast<long long>(m) * ldc + 1;
  const auto a = random_vector(static_cast<size_t>(sa) * batch, seed);
  const auto b = random_vector(static_cast<size_t>(shared_b ? b_rows * ldb : sb * batch), seed + 1);
  const auto c0 = random_vector(static_cast<size_t>(sc) * batch, seed + 2);
  const std::vector<float> ar = bf16_rounded(a), br = bf16_rounded(b);
  const float alpha = 0.75f, beta = -0.5f;
  Context ctx;
  ctx.set_precision(Precision::kBf16);
  auto ga = to_device(a), gb = to_device(b), gc = to_device(c0);
  if (batch == 1) {
    gemm(ctx, ta, tb, m, n, k, alpha, ga.data(), lda, gb.data(), ldb, beta, gc.data(), ldc);
  } else {
    gemm_batched(ctx, ta, tb, m, n, k, alpha, ga.data(), lda, sa, gb.data(), ldb, sb, beta,
                 gc.data(), ldc, sc, batch);
  }
  ctx.sync();
  const std::vector<float> out = gc.download();
  const double bound = 2.0 * (k + 2) * std::ldexp(1.0, -24);
  const std::string what = std::string("bf16 gemm ") + (ta ? "T" : "N") + (tb ? "T" : "N") + " " +
                           std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
                           " batch " + std::to_string(batch) + (shared_b ? " shared B" : "");
  double worst = 0.0;
  for (int q = 0; q < batch; ++q) {
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        double sum = 0.0, mag = 0.0;
        for (int t = 0; t < k; ++t) {
          const double av =
              ar[static_cast<size_t>(q * sa) +
                 (ta ? static_cast<size_t>(t) * lda + i : static_cast<size_t>(i) * lda + t)];
          const double bv =
              br[static_cast<size_t>(q * sb) +
                 (tb ? static_cast<size_t>(j) * ldb + t : static_cast<size_t>(t) * ldb + j)];
          sum += av * bv;
          mag += std::abs(av * bv);
        }
        const size_t o = static_cast<size_t>(q * sc) + static_cast<size_t>(i) * ldc + j;
        const double ref = alpha * sum + beta * static_cast<double>(c0[o]);
        const double scale = std::abs(alpha) * mag + std::abs(beta) * std::abs(c0[o]);
        const double err = std::abs(out[o] - ref);
        worst = std::max(worst, err / scale);
        if (err > bound * scale) {
          ADD_FAILURE() << what << " at (" << q << ", " << i << ", " << j << "): " << out[o]
                        << " vs " << ref << ", error " << err / scale << " of the scale > "
                        << bound;
          return worst;
        }
      }
    }
  }
  // The padding columns of C are untouched.
  for (int q = 0; q < batch; ++q) {
    for (int i = 0; i < m; ++i) {
      for (int j = n; j < ldc; ++j) {
        const size_t o = static_cast<size_t>(q * sc) + static_cast<size_t>(i) * ldc + j;
        EXPECT_EQ(out[o], c0[o]) << what << " wrote padding at (" << q << ", " << i << ", " << j
                                 << ")";
      }
    }
  }
  return worst;
}

TEST(GpuRuntime, Bf16GemmIsTheProductOfBf16RoundedInputs) {
  FXT_SKIP_WITHOUT_GPU();
  double worst = 0.0;
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      const uint64_t seed = 500 + 10 * static_cast<uint64_t>(ta * 2 + tb);
      // Above kSmallGemmRows rows (cuBLAS): aligned, padded, odd, batched, batched with B shared.
      worst = std::max(worst, run_bf16_gemm(ta, tb, 128, 96, 256, 1, 0, false, seed));
      worst = std::max(worst, run_bf16_gemm(ta, tb, 96, 48, 128, 1, 3, false, seed + 1));
      worst = std::max(worst, run_bf16_gemm(ta, tb, 67, 23, 19, 1, 1, false, seed + 2));
      worst = std::max(worst, run_bf16_gemm(ta, tb, 96, 48, 128, 3, 2, false, seed + 3));
      worst = std::max(worst, run_bf16_gemm(ta, tb, 70, 9, 83, 5, 1, true, seed + 4));
    }
  }
  std::printf("[bf16 gemm] worst error %.3e of sum |a' b'| against the rounded inputs' product\n",
              worst);
}

// BF16 operands are really used: every input is v = 1 + 5 2^-10, exact in TF32 (so FP32 and
// TF32 products are v^2 up to FP32 accumulation) but not in BF16, which rounds it (to nearest
// even) up to 1 + 2^-7. Each BF16 term is then (1 + 2^-7)^2, 5.9e-3 relative above v^2: every
// output is off FP32's by ~3x TF32's whole bound (2 e + e^2 + (k + 2) 2^-24, e = 2^-10), and
// equals k (1 + 2^-7)^2 to FP32 accumulation (truncating to 1 instead would give k).
TEST(GpuRuntime, Bf16ProductsDifferFromFp32BeyondTf32sBound) {
  FXT_SKIP_WITHOUT_GPU();
  const int m = 128, n = 96, k = 256;
  const float v = 1.0f + 5.0f / 1024.0f;
  const std::vector<float> a(static_cast<size_t>(m) * k, v), b(static_cast<size_t>(k) * n, v);
  auto run = [&](Precision p) {
    Context ctx;
    ctx.set_precision(p);
    auto ga = to_device(a), gb = to_device(b);
    DeviceBuffer<float> gc(static_cast<size_t>(m) * n);
    gemm(ctx, false, false, m, n, k, 1.0f, ga.data(), k, gb.data(), n, 0.0f, gc.data(), n);
    ctx.sync();
    return gc.download();
  };
  const std::vector<float> c32 = run(Precision::kFp32), ctf = run(Precision::kTf32),
                           cbf = run(Precision::kBf16);
  const double u = std::ldexp(1.0, -24), e = precision_input_error(Precision::kTf32);
  const double exact = static_cast<double>(k) * v * v;  // sum |a b| too: all terms positive
  const double rounded = static_cast<double>(k) * bf16_round(v) * bf16_round(v);
  ASSERT_EQ(static_cast<double>(bf16_round(v)), 1.0 + 1.0 / 128.0);
  const double tf32_bound = (2 * e + e * e + (k + 2) * u) * exact;
  double least_gap = 1e300;
  for (size_t i = 0; i < cbf.size(); ++i) {
    ASSERT_LE(std::abs(c32[i] - exact), (k + 2) * u * exact) << "fp32 element " << i;
    ASSERT_LE(std::abs(ctf[i] - exact), tf32_bound) << "tf32 element " << i;
    ASSERT_LE(std::abs(cbf[i] - rounded), 2 * (k + 2) * u * rounded) << "bf16 element " << i;
    least_gap = std::min(least_gap, std::abs(static_cast<double>(cbf[i]) - c32[i]));
  }
  std::printf("[bf16 vs fp32] least |bf16 - fp32| %.4f, TF32's bound %.4f (of %.2f)\n", least_gap,
              tf32_bound, exact);
  EXPECT_GT(least_gap, 2.0 * tf32_bound);
}

// A bf16 product captured on a context that never ran one eagerly: the first capture finds the
// BF16 workspace empty, is discarded, and the workspace grows to the product's need before the
// second (no allocation inside a capture, which would abort). The replay equals an eager run,
// bit for bit, and still does after an eager product grew (replaced) the workspace: the graph
// keeps reading the buffer it was captured with.
TEST(GpuRuntime, Bf16CaptureSizesItsWorkspaceFirst) {
  FXT_SKIP_WITHOUT_GPU();
  const int m = 128, n = 96, k = 256;
  const auto a = random_vector(static_cast<size_t>(m) * k, 601);
  const auto b = random_vector(static_cast<size_t>(n) * k, 602);
  auto ga = to_device(a), gb = to_device(b);
  auto product = [&](const Context& ctx, float* c) {
    gemm(ctx, false, true, m, n, k, 1.0f, ga.data(), k, gb.data(), k, 0.0f, c, n);
  };
  Context eager_ctx;
  eager_ctx.set_precision(Precision::kBf16);
  DeviceBuffer<float> eager(static_cast<size_t>(m) * n);
  product(eager_ctx, eager.data());
  eager_ctx.sync();
  const std::vector<float> want = eager.download();

  Context ctx;
  ctx.set_precision(Precision::kBf16);
  EXPECT_EQ(ctx.bf16_workspace_size(), 0u);
  DeviceBuffer<float> c(static_cast<size_t>(m) * n);
  c.zero();
  Graph g;
  g.capture(ctx, [&] { product(ctx, c.data()); });
  // A packed at the start, B after it at a 128-element boundary: exactly this, no more.
  const size_t need = (static_cast<size_t>(m) * k + 127) / 128 * 128 + static_cast<size_t>(n) * k;
  EXPECT_EQ(ctx.bf16_workspace_size(), need);
  EXPECT_GE(g.node_count(), 3u);  // two conversions and the product
  g.launch(ctx);
  ctx.sync();
  EXPECT_EQ(c.download(), want);

  // Capturing again needs no growth; a larger eager product replaces the workspace.
  Graph g2;
  g2.capture(ctx, [&] { product(ctx, c.data()); });
  EXPECT_EQ(ctx.bf16_workspace_size(), need);
  const int big = 4 * m;
  const auto a2 = random_vector(static_cast<size_t>(big) * k, 603);
  auto ga2 = to_device(a2);
  DeviceBuffer<float> c2(static_cast<size_t>(big) * n);
  gemm(ctx, false, true, big, n, k, 1.0f, ga2.data(), k, gb.data(), k, 0.0f, c2.data(), n);
  ctx.sync();
  EXPECT_GT(ctx.bf16_workspace_size(), need);
  c.zero();
  g.launch(ctx);
  ctx.sync();
  EXPECT_EQ(c.download(), want);
}

void run_linear(int rows, int in, int out, bool bias, bool want_dx, bool want_dw, bool want_db,
                uint64_t seed) {
  const std::string what = "linear " + std::to_string(rows) + "x" + std::to_string(in) + "->" +
                           std::to_string(out) + (bias ? " bias" : "");
  const auto x = random_vector(static_cast<size_t>(rows) * in, seed);
  const auto w = random_vector(static_cast<size_t>(out) * in, seed + 1);
  const auto b = random_vector(static_cast<size_t>(out), seed + 2);
  const auto dy = random_vector(static_cast<size_t>(rows) * out, seed + 3);
  const auto dx0 = random_vector(x.size(), seed + 4);
  const auto dw0 = random_vector(w.size(), seed + 5);
  const auto db0 = random_vector(b.size(), seed + 6);

  model::CpuContext cpu(1);
  const model::Shape sx{rows, in}, sw{out, in}, sb{out}, sy{rows, out};
  std::vector<float> y(static_cast<size_t>(rows) * out), dx = dx0, dw = dw0, db = db0;
  model::linear_forward<float>(cpu, CIn(x.data(), sx), CIn(w.data(), sw),
                               bias ? CIn(b.data(), sb) : CIn(), COut(y.data(), sy));
  model::linear_backward<float>(cpu, CIn(x.data(), sx), CIn(w.data(), sw), CIn(dy.data(), sy),
                                want_dx ? COut(dx.data(), sx) : COut(),
                                want_dw ? COut(dw.data(), sw) : COut(),
                                want_db ? COut(db.data(), sb) : COut());

  Context ctx;
  auto gx = to_device(x), gw = to_device(w), gb = to_device(b), gdy = to_device(dy);
  auto gdx = to_device(dx0), gdw = to_device(dw0), gdb = to_device(db0);
  DeviceBuffer<float> gy(y.size());
  linear_forward(ctx, gx.data(), gw.data(), bias ? gb.data() : nullptr, gy.data(), rows, in, out);
  linear_backward(ctx, gx.data(), gw.data(), gdy.data(), want_dx ? gdx.data() : nullptr,
                  want_dw ? gdw.data() : nullptr, want_db ? gdb.data() : nullptr, rows, in, out);
  ctx.sync();
  check(gy.download(), y, 1e-5, what + " y");
  check(gdx.download(), dx, 1e-4, what + " dx");
  check(gdw.download(), dw, 1e-4, what + " dw");
  check(gdb.download(), db, 1e-4, what + " db");
}

TEST(GpuRuntime, LinearMatchesCpu) {
  FXT_SKIP_WITHOUT_GPU();
  run_linear(32 * 64, 128, 256, true, true, true, true, 70);
  run_linear(32 * 64, 40, 128, false, true, true, false, 71);
  run_linear(64, 128, 128, true, true, true, true,
             76);  // one window: the small kernel with its bias
  run_linear(15, 37, 5, true, true, true, true, 72);
  run_linear(3, 7, 11, true, false, true, true, 73);
  run_linear(3, 7, 11, true, true, false, false, 74);
  run_linear(1, 1, 1, true, true, true, true, 75);
}

void run_column_sum(int rows, int cols, int ld, bool accumulate, uint64_t seed) {
  const auto x = random_vector(static_cast<size_t>(rows) * ld, seed);
  const auto out0 = random_vector(static_cast<size_t>(cols), seed + 1);
  std::vector<float> ref(static_cast<size_t>(cols));
  for (int c = 0; c < cols; ++c) {
    double s = accumulate ? out0[c] : 0.0;
    for (int r = 0; r < rows; ++r) s += x[static_cast<size_t>(r) * ld + c];
    ref[c] = static_cast<float>(s);
  }
  Context ctx;
  auto gx = to_device(x), gout = to_device(out0);
  column_sum(ctx, gx.data(), rows, cols, ld, gout.data(), accumulate);
  ctx.sync();
  const auto got = gout.download();
  // A float sum of `rows` terms of magnitude <= 1: error bound ~ rows * 2^-24 in absolute terms.
  for (int c = 0; c < cols; ++c) {
    EXPECT_NEAR(got[c], ref[c], 1e-6 * (rows + 1) + 1e-6 * std::abs(ref[c]))
        << "column_sum " << rows << "x" << cols << " ld " << ld << " col " << c;
  }
  // Deterministic: a second run gives the same bits.
  auto gout2 = to_device(out0);
  column_sum(ctx, gx.data(), rows, cols, ld, gout2.data(), accumulate);
  ctx.sync();
  const auto got2 = gout2.download();
  EXPECT_EQ(0, std::memcmp(got.data(), got2.data(), got.size() * sizeof(float)));
}

TEST(GpuRuntime, ColumnSum) {
  FXT_SKIP_WITHOUT_GPU();
  run_column_sum(2048, 128, 128, true, 80);
  run_column_sum(2048, 40, 40, false, 81);
  run_column_sum(1, 7, 7, true, 82);
  run_column_sum(33, 70, 75, false, 83);  // ld > cols, cols not a multiple of the 32-column tile
  run_column_sum(5000, 3, 8, true, 84);
  run_column_sum(0, 9, 9, true, 85);             // no rows: out unchanged (accumulate)
  run_column_sum(0, 9, 9, false, 86);            // no rows: out zeroed
  run_column_sum(16384, 655, 672, false, 87);    // the heads' bias sums at B = 256: 64 chunks
  run_column_sum(16384 + 77, 4, 548, true, 88);  // a short last chunk
}

// gemm_tn_rows: C = beta C + A^T B over k rows, split into chunks with partials in the context's
// scratch. A [k, lda] holds `batch` problems' columns at stride sa, B at stride sb (0: shared),
// C at stride sc with row stride ldc.
// In bf16 the reference is the double product of the BF16-rounded A and B (what the device
// multiplies), so the same FP32 accumulation tolerance applies.
void run_gemm_tn_rows(int m, int n, int k, int batch, long long sa, long long sb, long long sc,
                      int lda, int ldb, int ldc, float beta, uint64_t seed,
                      Precision precision = Precision::kFp32) {
  const std::string what = std::string(precision_name(precision)) + " gemm_tn_rows " +
                           std::to_string(m) + "x" + std::to_string(n) + " k " + std::to_string(k) +
                           " batch " + std::to_string(batch) + " beta " + std::to_string(beta);
  const size_t a_n = static_cast<size_t>(k) * lda;
  const size_t b_n = static_cast<size_t>(k) * ldb + static_cast<size_t>(sb) * (batch - 1);
  const size_t c_n = static_cast<size_t>(m) * ldc + static_cast<size_t>(sc) * (batch - 1);
  const auto a = random_vector(a_n, seed);
  const auto b = random_vector(b_n, seed + 1);
  auto c0 = random_vector(c_n, seed + 2);
  std::vector<float> ref = c0;
  if (beta == 0.0f) {
    // The outputs are overwritten without being read: NaN there must not leak in.
    for (int p = 0; p < batch; ++p)
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j)
          c0[static_cast<size_t>(p * sc) + static_cast<size_t>(i) * ldc + j] = NAN;
  }
  const bool bf16 = precision == Precision::kBf16;
  const std::vector<float> ar = bf16 ? bf16_rounded(a) : a, br = bf16 ? bf16_rounded(b) : b;
  for (int p = 0; p < batch; ++p) {
    host_gemm(true, false, m, n, k, 1.0f, ar, lda, br, ldb, beta, ref, ldc,
              static_cast<size_t>(sa) * p, static_cast<size_t>(sb) * p,
              static_cast<size_t>(sc) * p);
  }
  Context ctx;
  ctx.set_precision(precision);
  auto ga = to_device(a), gb = to_device(b), gc = to_device(c0);
  gemm_tn_rows(ctx, m, n, k, ga.data(), lda, sa, gb.data(), ldb, sb, beta, gc.data(), ldc, sc,
               batch);
  ctx.sync();
  const auto got = gc.download();
  check(got, ref, 1e-5, what);
  // Deterministic: the same call again gives the same bytes.
  auto gc2 = to_device(c0);
  gemm_tn_rows(ctx, m, n, k, ga.data(), lda, sa, gb.data(), ldb, sb, beta, gc2.data(), ldc, sc,
               batch);
  ctx.sync();
  const auto got2 = gc2.download();
  EXPECT_EQ(0, std::memcmp(got.data(), got2.data(), got.size() * sizeof(float))) << what;
}

TEST(GpuRuntime, GemmTnRows) {
  FXT_SKIP_WITHOUT_GPU();
  // One problem: no split (k < 256), an even split, a short last chunk.
  run_gemm_tn_rows(13, 9, 200, 1, 0, 0, 0, 13, 9, 9, 1.0f, 90);
  run_gemm_tn_rows(128, 128, 16384, 1, 0, 0, 0, 128, 128, 128, 1.0f, 91);
  run_gemm_tn_rows(37, 40, 2048 + 45, 1, 0, 0, 0, 40, 41, 45, 0.0f, 92);
  // Batched with its own B per problem (the heads' dW2 layout: A columns at stride m inside a
  // wider matrix, C at a parameter stride), with and without a tail.
  run_gemm_tn_rows(16, 16, 4096, 5, 16, 4096LL * 16, 700, 100, 16, 16, 1.0f, 93);
  run_gemm_tn_rows(2, 24, 999, 3, 2, 999LL * 24, 300, 8, 24, 30, 1.0f, 94);
  // Batched with B shared and A's columns adjacent (one product of batch * m rows per chunk),
  // and shared B with A columns not adjacent (one product per problem).
  run_gemm_tn_rows(24, 32, 8192 + 3, 5, 24, 0, 2000, 130, 32, 32, 1.0f, 95);
  run_gemm_tn_rows(8, 32, 3000, 4, 10, 0, 500, 45, 32, 40, 0.0f, 96);
  // k = 0: C = beta C.
  run_gemm_tn_rows(3, 4, 0, 1, 0, 0, 0, 3, 4, 4, 1.0f, 97);
}

// The split-row weight-gradient products (gemm_tn_rows: chunked strided batches, a tail chunk,
// the adjacent-columns batch and the per-problem loop) read BF16-rounded operands too.
TEST(GpuRuntime, Bf16GemmTnRowsIsTheProductOfBf16RoundedInputs) {
  FXT_SKIP_WITHOUT_GPU();
  const Precision p = Precision::kBf16;
  run_gemm_tn_rows(13, 9, 200, 1, 0, 0, 0, 13, 9, 9, 1.0f, 190, p);
  run_gemm_tn_rows(128, 128, 16384, 1, 0, 0, 0, 128, 128, 128, 1.0f, 191, p);
  run_gemm_tn_rows(37, 40, 2048 + 45, 1, 0, 0, 0, 40, 41, 45, 0.0f, 192, p);
  run_gemm_tn_rows(16, 16, 4096, 5, 16, 4096LL * 16, 700, 100, 16, 16, 1.0f, 193, p);
  run_gemm_tn_rows(24, 32, 8192 + 3, 5, 24, 0, 2000, 130, 32, 32, 1.0f, 195, p);
  run_gemm_tn_rows(8, 32, 3000, 4, 10, 0, 500, 45, 32, 40, 0.0f, 196, p);
  run_gemm_tn_rows(3, 4, 0, 1, 0, 0, 0, 3, 4, 4, 1.0f, 197, p);  // k = 0: C = beta C
}

TEST(GpuRuntime, FillBroadcastAddCopy) {
  FXT_SKIP_WITHOUT_GPU();
  Context ctx;
  const size_t n = 100003;  // not a multiple of any block size
  DeviceBuffer<float> a(n), b(n), c(n);
  fill(ctx, a.data(), 1.5f, n);
  const auto bv = random_vector(n, 90);
  b.upload(bv.data(), n);
  add_inplace(ctx, b.data(), a.data(), n);  // a = 1.5 + b
  copy(ctx, a.data(), c.data(), n);
  ctx.sync();
  const auto av = a.download(), cv = c.download();
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(av[i], 1.5f + bv[i]) << i;
    ASSERT_EQ(cv[i], av[i]) << i;
  }
  // fill with n = 0 is a no-op.
  fill(ctx, a.data(), 7.0f, 0);
  ctx.sync();
  EXPECT_EQ(a.download()[0], av[0]);

  const int rows = 37, cols = 45;
  const auto bias = random_vector(cols, 91);
  auto gbias = to_device(bias);
  DeviceBuffer<float> y(static_cast<size_t>(rows) * cols);
  broadcast_rows(ctx, gbias.data(), y.data(), rows, cols);
  ctx.sync();
  const auto yv = y.download();
  for (int r = 0; r < rows; ++r) {
    for (int cc = 0; cc < cols; ++cc) ASSERT_EQ(yv[static_cast<size_t>(r) * cols + cc], bias[cc]);
  }
}

TEST(GpuRuntime, ContextAndMappedHost) {
  FXT_SKIP_WITHOUT_GPU();
  Context ctx;
  EXPECT_FALSE(ctx.device_name().empty());
  EXPECT_EQ(ctx.precision(), Precision::kFp32);
  ctx.set_precision(Precision::kTf32);
  EXPECT_EQ(ctx.precision(), Precision::kTf32);
  ctx.set_precision(Precision::kFp32);
  EXPECT_EQ(ctx.precision(), Precision::kFp32);
  // The device writes mapped host memory; the host reads it after a sync, without a copy.
  MappedHost<float> mapped(4);
  for (int i = 0; i < 4; ++i) mapped.host()[i] = 0.0f;
  fill(ctx, mapped.device(), 2.5f, 4);
  ctx.sync();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(mapped.host()[i], 2.5f);
}

// An allocation the device cannot hold throws DeviceOutOfMemory (one line: where, and the free
// and total memory), leaves the buffer empty, and the device stays usable.
TEST(GpuRuntime, ExhaustedDeviceThrowsOutOfMemoryAndStaysUsable) {
  FXT_SKIP_WITHOUT_GPU();
  DeviceBuffer<float> huge;
  size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  const size_t too_many = 2 * (total_bytes / sizeof(float));  // twice the device
  try {
    huge.resize(too_many);
    FAIL() << "resize to " << too_many << " floats did not throw";
  } catch (const DeviceOutOfMemory& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("out of GPU memory (cudaMalloc", 0), 0u) << m;
    EXPECT_NE(m.find("src/gpu/runtime.h:"), std::string::npos) << m;
    EXPECT_NE(m.find(" MiB free)"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
  EXPECT_TRUE(huge.empty());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  DeviceBuffer<float> small(8);
  const std::vector<float> host = {1, 2, 3, 4, 5, 6, 7, 8};
  small.upload(host);
  EXPECT_EQ(small.download(), host);
}

}  // namespace
}  // namespace fxt::gpu
