// Eigen views over foxhunt's flat row-major buffers: one set of aliases for every CPU op.
// Maps never own or allocate; dense products go through Eigen's GEMM kernels.
#pragma once

#include <Eigen/Core>

namespace fxt::model {

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using MapMat = Eigen::Map<RowMat<T>>;
template <typename T>
using ConstMapMat = Eigen::Map<const RowMat<T>>;
template <typename T>
using ConstRowVec = Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>;
// The [B, D] slice of position k inside a [B, K, D] array: rows K*D apart.
template <typename T>
using MapStrided = Eigen::Map<RowMat<T>, 0, Eigen::OuterStride<>>;
template <typename T>
using ConstMapStrided = Eigen::Map<const RowMat<T>, 0, Eigen::OuterStride<>>;

}  // namespace fxt::model
