// Uses an installed frugal: records ReLU on a small tape, runs it with the executor and
// prints OK when y = max(x, 0).
#include <cstdio>

#include "layers/relu.h"
#include "run/executor.h"

int main() {
  using namespace frugal;
  ParamStore params;
  Tape tape(params);
  Value x = tape.input("x", {2, 3}, DType::f32);
  Value y = relu(x);
  Executor ex(tape, cpu_backend(), {.mode = Mode::inference, .keep = {y}});
  float* in = ex.input(x).data<float>();
  for (int i = 0; i < 6; ++i) in[i] = float(i) - 2.5f;  // -2.5 .. 2.5
  ex.forward();
  const float* out = ex.value(y).data<float>();
  for (int i = 0; i < 6; ++i) {
    const float want = i < 3 ? 0.0f : float(i) - 2.5f;
    if (out[i] != want) {
      std::printf("FAIL: y[%d] = %g, expected %g\n", i, double(out[i]), double(want));
      return 1;
    }
  }
  std::printf("OK\n");
  return 0;
}
