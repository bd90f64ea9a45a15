// ONNX's Einsum of one or two operands in general (torch.einsum as PyTorch exports it): each
// index of the equation is a batch index (in both operands and the output), kept from one
// operand, contracted (in both, not the output) or summed out of one operand alone. The
// operands are summed over their own lone indices, transposed to (batch, kept, contracted),
// reshaped to matrices and multiplied (a broadcast product where nothing is contracted), and
// the result reshaped and transposed to the output's order: transposes, reshapes, reductions,
// a matmul or a mul, each with its own backward. Batched products of the form the importer
// took before ("bhid,bhjd->bhij", either operand's last two axes swapped) keep their one
// matmul (OnnxKind::matmul).
#pragma once

#include <string>
#include <vector>

#include "autograd/tape.h"

namespace frugal {

// The equation without spaces, checked: one or two operands ("A->Y" or "A,B->Y"), letters
// only (no ellipsis), no letter twice in one term (no diagonals), every output letter in an
// operand. Throws frugal::Error naming what is wrong.
struct EinsumEquation {
  std::vector<std::string> operands;
  std::string output;
};
EinsumEquation parse_einsum(const std::string& equation);

// y = einsum(equation, xs) for one or two operands of equal extents wherever they share a
// letter (no broadcasting). Throws naming the equation and the shapes where they disagree.
Value record_einsum(const EinsumEquation& e, const std::vector<Value>& xs);

}  // namespace frugal
