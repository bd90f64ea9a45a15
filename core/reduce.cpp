// Reduction names.
#include "core/reduce.h"

namespace frugal {

const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::sum:
      return "reduce_sum";
    case Reduction::mean:
      return "reduce_mean";
    case Reduction::max:
      return "reduce_max";
    case Reduction::min:
      return "reduce_min";
    case Reduction::sum_square:
      return "reduce_sum_square";
    case Reduction::l1:
      return "reduce_l1";
    case Reduction::l2:
      return "reduce_l2";
    case Reduction::log_sum_exp:
      return "reduce_log_sum_exp";
  }
  return "reduce";
}

}  // namespace frugal
