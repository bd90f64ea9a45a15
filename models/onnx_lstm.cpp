// ONNX's LSTM, GRU and RNN (nn.LSTM's, nn.GRU's and nn.RNN's exports: Sequencer's row and
// column LSTMs), recorded step by step in frugal's ops: one linear of every step's input by W,
// then per step a linear of the hidden state by R, the gates (split, sigmoid, tanh; an RNN's
// tanh or relu), the cell and hidden state (mul, add, sub). Each op keeps what its own backward
// reads.
#include "models/onnx_lstm.h"

#include "core/error.h"
#include "layers/activation.h"
#include "layers/add.h"
#include "layers/binary.h"
#include "layers/constant.h"
#include "layers/linear.h"
#include "layers/relu.h"
#include "layers/reshape.h"
#include "layers/split.h"
#include "models/onnx_layout.h"

namespace frugal {

std::vector<Value> record_lstm(const OnnxLstm& l, std::span<const Value> in,
                               std::source_location where) {
  const Shape x = in[0].shape(), w = in[1].shape(), r = in[2].shape();  // copies
  const bool gru = l.cell == OnnxLstm::gru, rnn = l.cell == OnnxLstm::rnn;
  const char* what = gru ? "GRU" : rnn ? "RNN" : "LSTM";
  const int64_t hidden = l.hidden, dirs = l.direction == OnnxLstm::both ? 2 : 1;
  const int64_t G = (gru ? 3 : rnn ? 1 : 4) * hidden;  // the gates' rows of W and R
  const bool cell = !gru && !rnn;                      // an LSTM's cell state
  FRUGAL_CHECK(x.rank() == 3, what, " of ", x, ": expected X (sequence, batch, input)");
  const int64_t T = x[0], N = x[1], I = x[2];
  FRUGAL_CHECK(w == Shape({dirs, G, I}), what, " of ", x, ": W is ", w, ", expected ",
               Shape({dirs, G, I}));
  FRUGAL_CHECK(r == Shape({dirs, G, hidden}), what, " of ", x, ": R is ", r, ", expected ",
               Shape({dirs, G, hidden}));
  size_t next = 3;
  const Value* bias = l.has_bias ? &in[next++] : nullptr;
  if (bias != nullptr)
    FRUGAL_CHECK(bias->shape() == Shape({dirs, 2 * G}), what, " of ", x, ": B is ", bias->shape(),
                 ", expected ", Shape({dirs, 2 * G}));
  const Value* initial[2] = {nullptr, nullptr};  // h, c
  for (int k = 0; k < 2; ++k) {
    if (!(k == 0 ? l.has_initial_h : l.has_initial_c)) continue;
    initial[k] = &in[next++];
    FRUGAL_CHECK(initial[k]->shape() == Shape({dirs, N, hidden}), what, " of ", x, ": initial ",
                 k == 0 ? "h" : "c", " is ", initial[k]->shape(), ", expected ",
                 Shape({dirs, N, hidden}));
  }
  Tape& tape = in[0].tape();
  const Value rows = reshape(in[0], Shape{T * N, I});
  const std::vector<Value> ws = split_leading(in[1], Shape{G, I}),
                           rs = split_leading(in[2], Shape{G, hidden});
  const std::vector<Value> bs = bias ? split_leading(*bias, Shape{2 * G}) : std::vector<Value>{};
  std::vector<Value> starts[2];
  for (int k = 0; k < 2; ++k)
    if (initial[k] != nullptr) starts[k] = split_leading(*initial[k], Shape{N, hidden});
  auto linear_of = [&](std::vector<Value> args) {
    return tape.record(std::make_unique<LinearOp>(), std::move(args), where)[0];
  };
  // Y's pieces (t, d) in its byte order, each (1, N * hidden); the last states per direction.
  std::vector<Value> ys(static_cast<size_t>(T * dirs));
  std::vector<Value> last_h, last_c;
  for (int64_t d = 0; d < dirs; ++d) {
    const bool reverse = l.direction == OnnxLstm::reverse || d == 1;
    const auto di = static_cast<size_t>(d);
    std::vector<Value> args{rows, ws[di]};
    Value rb;               // GRU: R's bias, inside the reset gate's product
    if (bias != nullptr) {  // the direction's Wb and Rb
      const std::vector<Value> halves = split(reshape(bs[di], Shape{1, 2 * G}), 1, {G, G});
      if (gru) {
        args.push_back(reshape(halves[0], Shape{G}));
        rb = reshape(halves[1], Shape{G});
      } else {  // LSTM, RNN: Wb + Rb with X's product
        args.push_back(reshape(add(halves[0], halves[1]), Shape{G}));
      }
    }
    // Every step's X W^T (+ B) at once, then one piece per step (N, G).
    const std::vector<Value> xw =
        split_leading(reshape(linear_of(args), Shape{T, N * G}), Shape{N, G});
    auto start = [&](int k) {
      if (initial[k] != nullptr) return starts[k][di];
      return constant(tape, Tensor::zeros(Shape{N, hidden}, in[0].dtype()));
    };
    Value h = start(0), c = cell ? start(1) : Value{};
    for (int64_t s = 0; s < T; ++s) {
      const int64_t t = reverse ? T - 1 - s : s;
      const Value& xt = xw[static_cast<size_t>(t)];
      if (gru) {
        // ONNX's order of the three: update, reset, hidden; linear_before_reset (PyTorch's):
        // n = tanh(x Wh^T + Wbh + r * (h Rh^T + Rbh)), h = n + z * (h - n).
        const std::vector<Value> xg = split(xt, 1, {hidden, hidden, hidden});
        const std::vector<Value> hg = split(linear_of(rb.valid() ? std::vector<Value>{h, rs[di], rb}
                                                                 : std::vector<Value>{h, rs[di]}),
                                            1, {hidden, hidden, hidden});
        const Value z = sigmoid(add(xg[0], hg[0])), rr = sigmoid(add(xg[1], hg[1]));
        const Value n = tanh(add(xg[2], mul(rr, hg[2])));
        h = add(n, mul(z, binary(BinaryKind::sub, h, n)));
      } else if (rnn) {
        const Value a = add(xt, linear_of({h, rs[di]}));
        h = l.relu[di] ? relu(a) : tanh(a);
      } else {
        // ONNX's order of the four: input, output, forget, cell.
        const std::vector<Value> g =
            split(add(xt, linear_of({h, rs[di]})), 1, {hidden, hidden, hidden, hidden});
        const Value i = sigmoid(g[0]), o = sigmoid(g[1]), f = sigmoid(g[2]), z = tanh(g[3]);
        c = add(mul(f, c), mul(i, z));
        h = mul(o, tanh(c));
      }
      ys[static_cast<size_t>(t * dirs + d)] = reshape(h, Shape{1, N * hidden});
    }
    last_h.push_back(reshape(h, Shape{1, N * hidden}));
    if (cell) last_c.push_back(reshape(c, Shape{1, N * hidden}));
  }
  auto joined = [&](const std::vector<Value>& parts, Shape shape) {
    return reshape(join_leading(parts), std::move(shape));
  };
  std::vector<Value> out{joined(ys, Shape{T, dirs, N, hidden}),
                         joined(last_h, Shape{dirs, N, hidden})};
  if (cell) out.push_back(joined(last_c, Shape{dirs, N, hidden}));
  return out;
}

}  // namespace frugal
