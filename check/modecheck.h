// Planned against baseline: a few SGD steps of a small network in both memory modes, which
// must give the same bits. What the planner does with an op's roles (in place, early death,
// masks instead of outputs, fused updates, outputs rebuilt in backward) may change memory,
// never results.
#pragma once

#include <functional>
#include <vector>

#include "autograd/tape.h"
#include "run/executor.h"

namespace frugal::testing {

// A network body: from the input value to the value the head reads.
using Net = std::function<Value(Value)>;

// Two SGD steps (lr 0.1, momentum 0.9) of softmax cross-entropy over
// linear(flatten(net(x)), 5 classes) for x of `input` shape in f32, seeded inputs and labels,
// in `memory` mode with poisoned buffers: each step's loss and d x, then every parameter and
// running statistic after the steps.
std::vector<Tensor> train_two_steps(const Net& net, MemoryMode memory,
                                    const Shape& input = {4, 4, 6, 6});

// Runs train_two_steps in baseline mode, in planned mode, and in planned mode with every
// rebuildable op's outputs rebuilt in backward (Recompute::all) and with the cheap ones
// (Recompute::cheap), and with ReLU outputs packed (ExecutorOptions::pack), and throws
// frugal::Error
// naming the first result (loss, d x or parameter) that differs bitwise from baseline, or
// that is not finite in either.
void check_planned_equals_baseline(const Net& net, const Shape& input = {4, 4, 6, 6});

}  // namespace frugal::testing
