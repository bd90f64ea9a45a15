// Small helpers the op tests share: an f64 tensor from values, and a parameter's tape value.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "autograd/tape.h"

namespace frugal::testing {

// An f64 tensor of shape s holding v (as many values as s has elements).
inline Tensor from(Shape s, const std::vector<double>& v) {
  Tensor t = Tensor::empty(std::move(s), DType::f64);
  REQUIRE(static_cast<size_t>(t.numel()) == v.size());
  for (size_t i = 0; i < v.size(); ++i) t.data<double>()[i] = v[i];
  return t;
}

// The tape value of parameter `name` (a failed check if the tape has none).
inline Value param_value(Tape& tape, const std::string& name) {
  for (size_t v = 0; v < tape.values().size(); ++v)
    if (tape.values()[v].kind == ValueKind::param && tape.values()[v].name == name)
      return Value(&tape, static_cast<int>(v));
  FAIL("no parameter ", name);
  return {};
}

}  // namespace frugal::testing
