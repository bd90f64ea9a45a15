// Training curves: the JSON-lines logs `frugal train --log` writes (one line per epoch), drawn
// side by side as one hand-written SVG: loss, accuracy (train and test) and learning rate
// against training steps, each run in its own colour with its memory in the legend.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace frugal {

struct CurvePoint {
  double step = 0, value = 0;
};

struct RunCurves {
  std::string name;         // for the legend: the log's file name
  std::string memory;       // "planned" or "baseline"
  size_t memory_bytes = 0;  // the training executor's, from the last epoch
  std::vector<CurvePoint> train_loss, train_acc, test_acc, lr;
};

// Reads a log of `frugal train --log`. Errors name the file, the line and the field.
RunCurves read_run_log(const std::string& path);

// The SVG (width x 3 panels). Each point is a circle carrying data-run, data-metric,
// data-step and data-value attributes, so what is drawn can be checked against the logs.
std::string curves_svg(const std::vector<RunCurves>& runs, const std::string& title,
                       int width = 900);

}  // namespace frugal
