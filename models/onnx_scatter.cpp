// ScatterND into an activation (models/onnx_scatter.h): a gather of [data | updates].
#include "models/onnx_scatter.h"

#include <vector>

#include "core/error.h"
#include "layers/concat.h"
#include "layers/gather.h"
#include "layers/reshape.h"

namespace frugal {

Value record_scatter(const IntTensor& indices, Value data, Value updates) {
  const Shape d = data.shape(), u = updates.shape();  // copies: recorded over below
  const int rank = d.rank();
  FRUGAL_CHECK(!indices.dims.empty() && indices.dims.back() >= 1 && indices.dims.back() <= rank,
               "indices ", Shape(indices.dims), " into ", d,
               ": expected (..., k) with k from 1 to the data's rank");
  const auto k = static_cast<int>(indices.dims.back());
  std::vector<int64_t> want(indices.dims.begin(), indices.dims.end() - 1);
  for (int a = k; a < rank; ++a) want.push_back(d[a]);
  FRUGAL_CHECK(u.dims() == want, "updates ", u, " where indices ", Shape(indices.dims), " into ", d,
               " need ", Shape(want));
  FRUGAL_CHECK(!indices.real, "indices ", Shape(indices.dims), " are not integers");
  int64_t inner = 1;
  for (int a = k; a < rank; ++a) inner *= d[a];
  const int64_t n = d[0], per_sample = d.numel() / n, tuples = indices.size() / k;
  FRUGAL_CHECK(indices.dims.size() > 1 && indices.dims[0] == n, "indices ", Shape(indices.dims),
               " into ", d,
               ": frugal imports indices whose first axis is the batch, each sample's slices "
               "taken from its own updates");
  const int64_t per = tuples / n, updates_per_sample = u.numel() / n;
  // Output column -> source column of [data | updates], sample 0's; every sample the same.
  std::vector<int64_t> cols(static_cast<size_t>(per_sample));
  for (int64_t c = 0; c < per_sample; ++c) cols[static_cast<size_t>(c)] = c;
  std::vector<int64_t> first(static_cast<size_t>(per));  // sample 0's positions in its sample
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t at = 0;
    for (int a = 0; a < k; ++a) {
      int64_t i = indices.values[static_cast<size_t>(t * k + a)];
      FRUGAL_CHECK(i >= -d[a] && i < d[a], "index ", i, " outside axis ", a, " of ", d);
      at = at * d[a] + (i < 0 ? i + d[a] : i);
    }
    const int64_t flat = at * inner, sample = flat / per_sample, within = flat % per_sample;
    const int64_t local = t % per;
    FRUGAL_CHECK(sample == t / per, "index tuple ", t, " of ", Shape(indices.dims),
                 " writes sample ", sample, " from sample ", t / per,
                 "'s updates; frugal imports each sample's slices from its own");
    if (t < per) {
      first[static_cast<size_t>(local)] = within;
      for (int64_t b = 0; b < inner; ++b)
        cols[static_cast<size_t>(within + b)] = per_sample + local * inner + b;
    } else {
      FRUGAL_CHECK(first[static_cast<size_t>(local)] == within, "sample ", sample,
                   "'s slices differ from sample 0's; frugal imports the same positions in "
                   "every sample");
    }
  }
  const Value joined = concat(
      {reshape(data, Shape{n, per_sample}), reshape(updates, Shape{n, updates_per_sample})}, 1);
  return reshape(gather(joined, 1, std::move(cols), {per_sample}), d);
}

}  // namespace frugal
