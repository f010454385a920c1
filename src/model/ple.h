// Piecewise-linear encoding (PLE) of numeric features (Gorishniy, Rubachev, Babenko 2022, "On
// embeddings for numerical features in tabular deep learning"), the CPU reference.
//
// Feature i has K + 1 non-decreasing edges e[i, 0..K] (quantiles of its training values); its
// K components are
//   enc[r, i K + t] = clip((x[r, i] - e_t) / (e_{t+1} - e_t), 0, 1)   when e_{t+1} > e_t,
//                   = 0                                               otherwise.
// A linear map of the encoding is a continuous piecewise-linear function of each feature with
// knots at the edges, constant outside [e_0, e_K] (as a tree's is): what a logistic on the
// encoding (a GAM) fits, and what the perception model's PLE path adds to its logits
// (PerceptionConfig::ple_bins, docs/MODEL.md). The edges are constants of the model: they get
// no gradient.
//
// The GPU kernels (src/gpu/ple.h) compute the same floats in the same order.
#pragma once

#include <cstdint>
#include <vector>

namespace fxt::model {

// out [rows, f * bins] from x [rows, f] and edges [f, bins + 1].
template <typename T>
void ple_encode(const T* x, const T* edges, int64_t rows, int f, int bins, T* out);

// d_x[r, i] += sum_t d_enc[r, i K + t] * d enc / dx, the derivative 1 / (e_{t+1} - e_t) strictly
// inside an interval and 0 elsewhere (the clip's flat parts; a knot counts as flat).
template <typename T>
void ple_backward(const T* x, const T* edges, const T* d_enc, int64_t rows, int f, int bins,
                  T* d_x);

// The untrained model's edges: K equal intervals of [-3, 3] for every feature (the features are
// standardised). Training replaces them by the training rows' quantiles.
template <typename T>
void ple_default_edges(int f, int bins, T* edges);

// One feature's edges [bins + 1] from a sample of its values (reordered here): the values at
// ranks round(t (n - 1) / K), t = 0..K, repeated values dropped, the rest padded with the last
// (so a feature with few distinct values gets fewer, non-degenerate intervals; a constant one
// encodes to zeros). An empty sample gives all-zero edges.
void ple_edges_from_sample(std::vector<float>& values, int bins, float* edges);

}  // namespace fxt::model
