// RevNets for 32 x 32 images (CIFAR-10), as memcnn builds them (Gomez et al. 2017): a stem,
// three stages of reversible units whose inputs are rebuilt in backward instead of stored,
// and a full-width residual unit that stores its activations wherever width or stride changes.
#pragma once

#include "autograd/tape.h"
#include "models/model_config.h"

namespace frugal {

// RevNet-depth, depth 38, 110 or 164: stem conv 3 -> 32 (k3, no bias), BN, ReLU; three
// stages of n units (38: n = 3, widths 32, 64, 112; 110: n = 9, widths 32, 64, 128; 164:
// n = 9 bottleneck units of planes 32, 64, 128, width planes x 4); head BN, ReLU, global
// average pool, linear. A reversible unit splits its c channels into halves with F and G
// each BN, ReLU, conv 3x3, BN, ReLU, conv 3x3 on c/2 (bottleneck: BN, ReLU, conv 1x1 to
// planes/2, BN, ReLU, conv 3x3, BN, ReLU, conv 1x1 back to c/2); the first unit of a stage
// that changes width or stride is the same body at full width (stride on its 3x3 conv) plus
// a conv 1x1 + BN shortcut. The first unit of the net skips its leading BN-ReLU. Convs have
// no bias. Trainable parameters: 573,994 / 1,854,890 / 1,983,786. With reversible = false
// the reversible units become their stored-activation twins (slice, add, concat) with the
// same parameter names, for memory and time comparisons. With config.fixed_point_range > 0
// (the default) each run of reversible units starts with fixed_point() and the units couple
// on its grid, so reversible and stored runs give the same bits; 0 gives memcnn's
// floating-point coupling. Names: "stem/conv.weight",
// "stage1/reversible0/F/conv1.weight", "stage2/down/shortcut/bn.bias", "head/linear.weight".
Value revnet(Value images, int depth, const ModelConfig& config = {}, bool reversible = true);

}  // namespace frugal
