// ONNX's LSTM, GRU and RNN recorded in frugal's ops (models/onnx_lstm.cpp): what the importer reads
// of the node, and the recording.
#pragma once

#include <cstdint>
#include <source_location>
#include <span>
#include <vector>

#include "autograd/tape.h"

namespace frugal {

struct OnnxLstm {
  enum Direction { forward, reverse, both };
  Direction direction = forward;
  int64_t hidden = 0;
  bool has_bias = false, has_initial_h = false, has_initial_c = false;
  // An LSTM; a GRU (linear_before_reset: PyTorch's form), no cell state; a plain RNN,
  // h = f(x W^T + Wb + h R^T + Rb), no cell state.
  enum Cell { lstm, gru, rnn };
  Cell cell = lstm;
  bool relu[2] = {false, false};  // an RNN's f per direction: ReLU, else tanh
};

// in: X (T, N, I), W (D, 4H, I), R (D, 4H, H)[, B (D, 8H)][, initial_h (D, N, H)][, initial_c]
// (D directions, H hidden; the gates in ONNX's order: input, output, forget, cell; sigmoid and
// tanh); a GRU's W and R have 3H rows (update, reset, hidden) and B 6H, an RNN's H rows and B
// 2H; neither has initial_c or Y_c.
// Returns Y (T, D, N, H), Y_h and, for an LSTM, Y_c (D, N, H). Throws naming a shape that does
// not fit.
std::vector<Value> record_lstm(const OnnxLstm& l, std::span<const Value> in,
                               std::source_location where);

}  // namespace frugal
