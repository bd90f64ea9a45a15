// Channel slice: y = x[:, begin:end] for x (N,C,H,W) or (N,C). The inverse of concat; used to
// split activations (e.g. the two halves of a reversible unit written with plain ops).
#pragma once

#include <source_location>

#include "autograd/tape.h"

namespace frugal {

class ChannelSliceOp final : public Op {
 public:
  ChannelSliceOp(int64_t begin, int64_t end) : begin_(begin), end_(end) {}
  std::string name() const override { return "channel_slice"; }
  std::vector<TensorMeta> infer(std::span<const TensorMeta> in) override;
  Roles roles(Mode mode, const Backend& backend) const override;
  void forward(const OpContext& ctx) override;
  void backward(const OpContext& ctx) override;

 private:
  // The three channel ranges [0, begin), [begin, end), [end, C) as shapes (empty ranges: C=0).
  std::vector<TensorMeta> parts() const;
  int64_t begin_, end_;
  TensorMeta x_;
};

Value channel_slice(Value x, int64_t begin, int64_t end,
                    std::source_location where = std::source_location::current());

}  // namespace frugal
