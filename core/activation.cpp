// Activation names, for messages and reports.
#include "core/activation.h"

namespace frugal {

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::sigmoid:
      return "sigmoid";
    case Activation::tanh:
      return "tanh";
    case Activation::silu:
      return "silu";
    case Activation::gelu:
      return "gelu";
    case Activation::gelu_tanh:
      return "gelu_tanh";
    case Activation::erf:
      return "erf";
    case Activation::sqrt:
      return "sqrt";
    case Activation::hardsigmoid:
      return "hardsigmoid";
    case Activation::hardswish:
      return "hardswish";
    case Activation::relu6:
      return "relu6";
    case Activation::abs:
      return "abs";
    case Activation::elu:
      return "elu";
    case Activation::selu:
      return "selu";
    case Activation::softplus:
      return "softplus";
    case Activation::softsign:
      return "softsign";
    case Activation::exp:
      return "exp";
    case Activation::log:
      return "log";
    case Activation::neg:
      return "neg";
    case Activation::reciprocal:
      return "reciprocal";
    case Activation::sign:
      return "sign";
    case Activation::floor:
      return "floor";
    case Activation::ceil:
      return "ceil";
    case Activation::round:
      return "round";
    case Activation::sin:
      return "sin";
    case Activation::cos:
      return "cos";
    case Activation::atan:
      return "atan";
  }
  return "activation";
}

}  // namespace frugal
